"""HARD_SWISH: x * relu6(x + 3) / 6, rounded as TFLite's x86 build does (float32), and its int16
fixed-point evaluation as a table (uint8 / int8)."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure
from ..common import clip
from ..quant.fixed_point import wrap
from ..quant.lut import every_value, table_kernel
from .common import BYTES, DTYPES, FLOAT, SIX, THREE, ZERO, f32, in_blocks, unary_kernel
from .quantized import Q15, checked_multiplier, per_tensor_quantization

ONE_SIXTH = f32(1.0 / 6.0)


def _hard_swish_block(x, out):
    # x * min(6, max(0, x + 3)) / 6. TFLite's x86 build runs the kernel's NEON loop (through SSE) on
    # blocks of 4, computing (x * (1/6)) * clamp, and its scalar loop on the last size % 4 elements,
    # computing (x * clamp) * (1/6): the two round differently and overflow differently near the top of
    # the float range, so both are reproduced.
    np.add(x, THREE, out=out)
    clip(out, ZERO, SIX, out=out)
    size = out.size
    tail = size % 4
    if tail:
        tail_values = x.flat[size - tail :] * out.flat[size - tail :]
        tail_values *= ONE_SIXTH
    out *= np.multiply(x, ONE_SIXTH)
    if tail:
        out.flat[size - tail :] = tail_values


_hard_swish = in_blocks(_hard_swish_block)


# HARD_SWISH (uint8/int8): TFLite's int16 fixed-point evaluation of x * relu6(x + 3) / 6.
def _int16_multiplier(real) -> tuple[int, int]:
    """QuantizeMultiplier, then the multiplier rounded down to 16 bits (DownScaleInt32ToInt16Multiplier)."""
    multiplier, exponent = checked_multiplier(real, "HARD_SWISH")
    if multiplier >= 2**31 - 1 - (1 << 15):
        return 32767, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


def _rounding_divide_int16(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT on int16 values (its mask is an int16, truncated for large shifts)."""
    mask = int(wrap(np.int64((1 << exponent) - 1), 16))
    threshold = (mask >> 1) + (x < 0)
    return wrap((x >> exponent) + ((x & mask) > threshold), 16)


def _hard_swish_table(source, output) -> np.ndarray:
    in_scale, in_zero = per_tensor_quantization(source, "input", "HARD_SWISH")
    out_scale, out_zero = per_tensor_quantization(output, "output", "HARD_SWISH")
    hires_input_scale = np.float32(1.0 / 128.0) * in_scale
    output_multiplier, output_exponent = _int16_multiplier(hires_input_scale / out_scale)
    ensure(output_exponent <= 0, "params->output_multiplier_exponent <= 0 was not true.")
    reluish_multiplier, reluish_exponent = _int16_multiplier(hires_input_scale / np.float32(3.0 / 32768.0))
    dtype = DTYPES[source.type]
    info = np.iinfo(dtype)
    hires = wrap((every_value(dtype) - in_zero) * 128, 16)
    preshift_output = Q15.mul(hires, output_multiplier)
    reluish = hires
    if reluish_exponent > 0:
        reluish = clip(reluish << (reluish_exponent - 1), -32768, 32767)
    reluish = Q15.mul(reluish, reluish_multiplier)
    if reluish_exponent > 0:
        reluish = clip(reluish << 1, -32768, 32767)
    if reluish_exponent < 0:
        reluish = _rounding_divide_int16(reluish, -reluish_exponent)
    reluish = (reluish + (1 << 15)) >> 1  # relu6(x + 3) / 6 in [0, 1], Q0.15
    product = reluish * preshift_output
    high = np.where(product < 0, -((-product) >> 15), product >> 15)  # doubling high half, truncated
    high = np.where((reluish == -32768) & (preshift_output == -32768), 32767, high)
    result = wrap(_rounding_divide_int16(high, -output_exponent) + out_zero, 16)
    return clip(result, info.min, info.max)


unary_kernel(
    BuiltinOperator.HARD_SWISH,
    (1, 1),
    _hard_swish,
    lambda i, o, _arithmetic: table_kernel(_hard_swish_table(i, o), DTYPES[i.type]),
    FLOAT + BYTES,
    compiled_float=("activations.hard_swish_compiled", "hard_swish"),
)

"""TANH and LOGISTIC: float32 ufuncs; 8-bit tables of TFLite's float LUTs; int16 either the interpolated
sigmoid table or gemmlowp's int16 functions, as the default and BUILTIN_REF kernels pick them."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_eq
from ...fidelity.arithmetic import HostArithmetic
from ..common import clip
from ..kernel_type import REFERENCE, KernelType
from ..quant.fixed_point import round_half_away, wrap
from ..quant.lut import (
    SIGMOID_TABLE_UINT16,
    every_value,
    expf,
    logf,
    populate_8bit,
    table_kernel,
    tanhf,
)
from .common import ALL, BLOCK, BYTES, DTYPES, MINUS_INF, ONE, f32, in_blocks, unary_kernel
from .quantized import F32_ONE, Q15, ensure_zero_points, per_tensor_quantization

# Above this exp(x)/(1 + exp(x)) rounds to 1 (TFLite clamps its exp argument at the same point).
_LOGISTIC_HIGHEST = f32(16.6355324)


def _logistic_into(x, out, scratch):
    """e / (1 + e) with e = exp(x): accurate for negative x down to the denormals, 1 above the clamp;
    `scratch`, an array of out's shape, takes 1 + e."""
    clip(x, MINUS_INF, _LOGISTIC_HIGHEST, out)
    np.exp(out, out)
    np.add(out, ONE, scratch)
    np.divide(out, scratch, out)


def _logistic_block(x, out):
    _logistic_into(x, out, np.empty_like(out))


_logistic = in_blocks(_logistic_block)


def _logistic_calls(x, out):
    """LOGISTIC's float calls, _logistic_into's with its scratch made once (tensors up to one block;
    larger ones run blockwise)."""
    if out.size > BLOCK:
        return None
    scratch = np.empty_like(out)
    return (
        partial(clip, x, MINUS_INF, _LOGISTIC_HIGHEST, out),
        partial(np.exp, out, out),
        partial(np.add, out, ONE, scratch),
        partial(np.divide, out, scratch, out),
    )


def _sigmoid_float(x: np.ndarray) -> np.ndarray:
    return F32_ONE / (F32_ONE + expf(-x))


def _checked_log2(x: np.float32) -> tuple[bool, int]:
    """TFLite's CheckedLog2: (x is a power of two within 1e-3 of log2, rounded log2)."""
    log2 = logf(np.array([x], np.float32))[0] * (np.float32(1) / logf(np.array([2.0], np.float32))[0])
    rounded = np.float32(round_half_away(float(log2)))
    return bool(abs(log2 - rounded) < np.float32(1e-3)), int(rounded)


def _int16_sigmoid_interpolation(values: np.ndarray, multiplier: int, left_shift: int, tanh: bool):
    """TFLite's reference int16 LOGISTIC / TANH: interpolation in its 256-entry sigmoid table."""
    if multiplier == 0:  # power-of-two input scale
        multiplier, left_shift = 3 << left_shift, 0
    rounding = 1 << (left_shift - 1) if left_shift > 0 else 0
    scaled = wrap(values * multiplier + rounding, 32) >> left_shift
    magnitude = np.abs(scaled)
    fraction_bits = 8 if tanh else 9
    high = magnitude >> fraction_bits
    index = np.minimum(high, 254)
    lower, upper = SIGMOID_TABLE_UINT16[index], SIGMOID_TABLE_UINT16[index + 1]
    fraction = magnitude & ((1 << fraction_bits) - 1)
    if tanh:
        result = np.where(high >= 255, 0xFFFF << 8, (lower << 8) + fraction * (upper - lower))
        result = np.where(scaled >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
        return wrap(result >> 8, 16)
    result = np.where(high >= 255, 0x7FFF << 10, (lower << 9) + fraction * (upper - lower))
    result = np.where(scaled >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return wrap((result & 0xFFFFFFFF) >> 10, 16)


def _tanh_logistic_quantized(op: BuiltinOperator, kernel_type: KernelType) -> Callable:
    tanh = op == BuiltinOperator.TANH

    def quantized(source, output, arithmetic: HostArithmetic):
        in_scale, in_zero = per_tensor_quantization(source, "input", op.name)
        out_scale, out_zero = per_tensor_quantization(output, "output", op.name)
        dtype = DTYPES[source.type]
        if source.type in BYTES:
            if not tanh:
                ensure(float(out_scale) == 1.0 / 256, "output->params.scale == 1. / 256 was not true.")
            transform = tanhf if tanh else _sigmoid_float
            return table_kernel(
                populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, dtype), dtype
            )
        if not tanh:
            ensure(float(out_scale) == 1.0 / 32768, "output->params.scale == 1. / 32768 was not true.")
            ensure(out_zero == 0, "output->params.zero_point == 0 was not true.")
        ensure_zero_points(op.name, ("input", in_zero), ("output", out_zero))
        power_of_two, log2 = _checked_log2(in_scale)
        left_shift = 12 + log2
        power_of_two &= left_shift in ((0, 1) if tanh else (0,))
        multiplier = 0
        if not power_of_two:  # rescale the input to 1/(3*4096) units for the table
            real, left_shift = float(in_scale) * 4096.0 * 3.0, 0
            while real <= 32767.0 / 2.0 and left_shift <= 30:
                left_shift += 1
                real *= 2.0
            multiplier = int(arithmetic.float_to_int32(real))  # int32_t(real): past int32, the host's
        exact, out_log2 = _checked_log2(out_scale)
        ensure(exact, f"{op.name} output scale {out_scale} is not a power of two")
        ensure_eq(out_log2, -15, f"{op.name} int16 output scale log2")
        values = every_value(dtype)
        if kernel_type is REFERENCE or multiplier > 0:
            table = _int16_sigmoid_interpolation(values, multiplier, left_shift, tanh)
        else:  # the optimized kernel: gemmlowp's int16 fixed-point functions on Q3.12 inputs
            raw = Q15.multiply_by_pot(values, left_shift)
            table = Q15.tanh(raw, 3) if tanh else Q15.logistic(raw, 3)
        return table_kernel(table, dtype)

    return quantized


# np.tanh takes `out` positionally: it is TANH's compute(x, out) itself. The compiled LOGISTIC is LiteRT's
# Eigen logistic, bit for bit on x86 (the NumPy path's e / (1 + e) is within a few ulps of it).
for _op, _float, _float_calls, _compiled in (
    (BuiltinOperator.TANH, np.tanh, None, None),
    (BuiltinOperator.LOGISTIC, _logistic, _logistic_calls, ("eigen_compiled", "logistic")),
):
    unary_kernel(
        _op,
        (1, 3),
        _float,
        types=ALL,
        float_calls=_float_calls,
        quantized_for=partial(_tanh_logistic_quantized, _op),
        compiled_float=_compiled,
    )

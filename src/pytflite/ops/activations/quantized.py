"""What the quantized (uint8 / int8 / int16) kernels share: per-tensor quantization parameters, TFLite's
rescaling multipliers, and gemmlowp's fixed-point math on 16 and 32 bits."""

from __future__ import annotations

import numpy as np

from ...errors import ensure, ensure_eq
from ..quant.fixed_point import quantize_multiplier, wrap
from ..quant.gemmlowp import FixedPointMath

# Elementwise ops on 8-bit (and most on 16-bit) inputs are a table over every possible input value, made
# in prepare by evaluating TFLite's per-element arithmetic (fixed-point or float) on all of them; invoke
# is one np.take indexed by the input's bits read as unsigned. Scales are float32 and the real
# multipliers derived from them are computed in float32 where TFLite's C++ does (float * float).


def per_tensor_quantization(tensor, what: str, op_name: str) -> tuple[np.float32, int]:
    """(float32 scale, zero point) of a per-tensor quantized tensor."""
    scale, zero_point = np.float32(tensor.params.scale), int(tensor.params.zero_point)
    ensure(
        np.isfinite(scale) and scale > 0,
        f"{op_name} {what} scale {tensor.params.scale} is not a positive number",
    )
    return scale, zero_point


def ensure_zero_points(op_name: str, *pairs) -> None:
    for what, zero_point in pairs:
        ensure_eq(zero_point, 0, f"{op_name} int16 {what} zero point")


def checked_multiplier(real, op_name: str) -> tuple[int, int]:
    """QuantizeMultiplier of a finite real multiplier. A left shift above 31 (a multiplier of 2**31 or
    more) acts as shift % 32 in TFLite's x * (1 << shift) on x86, whose shift instructions take the count
    modulo 32; kept on every host, since AArch64's LSLV on 32-bit registers does the same (armv7's
    register shifts, which give 0 from 32 on, are not reproduced)."""
    ensure(np.isfinite(real), f"{op_name} rescaling multiplier {real} is not finite")
    multiplier, shift = quantize_multiplier(float(real))
    return multiplier, shift % 32 if shift > 31 else shift


def wrap_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C's conversion of int32 results into a narrower integer type (two's-complement wrap)."""
    return wrap(np.asarray(values, np.int64), 8 * dtype.itemsize).astype(dtype)


# gemmlowp's fixed point on int16 (HARD_SWISH, int16 TANH/LOGISTIC) and int32 (integer SOFTMAX/LOG_SOFTMAX)
Q15 = FixedPointMath(16)
Q31 = FixedPointMath(32)
# The float32 one of the table transforms (TANH, LOGISTIC, GELU).
F32_ONE = np.float32(1)

"""RELU, RELU6, RELU_N1_TO_1 and RELU_0_TO_1: clamps in float32, rescaled clamps as tables when quantized."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator
from ...fidelity.arithmetic import HostArithmetic
from ..common import clip
from ..quant.fixed_point import multiply_by_quantized_multiplier, round_half_away, wrap
from ..quant.lut import every_value, table_kernel
from .common import ALL, BYTES, DTYPES, FLOAT, I16, INF, MINUS_ONE, ONE, SIX, ZERO, unary_kernel
from .quantized import checked_multiplier, ensure_zero_points, per_tensor_quantization, wrap_to

# TFLite clamps with comparisons that let NaN through; so does clip.


def _relu(x, out):
    clip(x, ZERO, INF, out=out)


def _relu6(x, out):
    clip(x, ZERO, SIX, out=out)


def _relu_n1_to_1(x, out):
    clip(x, MINUS_ONE, ONE, out=out)


def _relu_0_to_1(x, out):
    clip(x, ZERO, ONE, out=out)


# RELU family: (TFLite's QuantizedReluX) out_zp + rescale(x - in_zp), clamped to the quantized bounds.
_RELU_BOUNDS = {
    BuiltinOperator.RELU: (0.0, math.inf),
    BuiltinOperator.RELU6: (0.0, 6.0),
    BuiltinOperator.RELU_N1_TO_1: (-1.0, 1.0),
    BuiltinOperator.RELU_0_TO_1: (0.0, 1.0),
}


def _relu_quantized(op: BuiltinOperator) -> Callable:
    def quantized(source, output, arithmetic: HostArithmetic):
        in_scale, in_zero = per_tensor_quantization(source, "input", op.name)
        out_scale, out_zero = per_tensor_quantization(output, "output", op.name)
        multiplier, shift = checked_multiplier(in_scale / out_scale, op.name)
        if source.type == I16:
            ensure_zero_points(op.name, ("input", in_zero), ("output", out_zero))
        dtype = DTYPES[source.type]
        info = np.iinfo(dtype)
        low, high = _RELU_BOUNDS[op]

        def bound(value: float) -> int:
            quotient = round_half_away(float(np.float32(value) / out_scale))
            return int(wrap(np.int64(out_zero) + arithmetic.float_to_int32(quotient), 32))

        lowest = max(info.min, bound(low))
        highest = info.max if high == math.inf else min(info.max, bound(high))
        values = every_value(dtype)
        result = wrap(out_zero + multiply_by_quantized_multiplier(values - in_zero, multiplier, shift), 32)
        return table_kernel(wrap_to(np.minimum(np.maximum(result, lowest), highest), dtype), dtype)

    return quantized


for _op, _versions, _compute, _types in (
    (BuiltinOperator.RELU, (1, 3), _relu, ALL),
    (BuiltinOperator.RELU6, (1, 3), _relu6, ALL),
    (BuiltinOperator.RELU_N1_TO_1, (1, 1), _relu_n1_to_1, FLOAT + BYTES),
    (BuiltinOperator.RELU_0_TO_1, (1, 1), _relu_0_to_1, FLOAT + BYTES),
):
    unary_kernel(_op, _versions, _compute, _relu_quantized(_op), _types)

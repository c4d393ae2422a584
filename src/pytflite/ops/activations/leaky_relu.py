"""LEAKY_RELU: x where x > 0, else alpha * x (float32; quantized as a table of TFLite's fixed-point
rescaling)."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ..common import clip
from ..quant.fixed_point import multiply_by_quantized_multiplier, wrap
from ..quant.lut import every_value, table_kernel
from ..registry import register_builtin
from .alpha import AlphaData, alpha_compute, alpha_invoke, select_above
from .common import ALL, DTYPES, FLOAT, I16, QUANTIZED, check_unary, f32
from .quantized import checked_multiplier, ensure_zero_points, per_tensor_quantization


def leaky_relu_prepare(context, node):
    source, output = check_unary(context, node, "LEAKY_RELU", FLOAT + QUANTIZED)
    alpha = f32(node.builtin_data.alpha)
    if source.type == TensorType.FLOAT32:
        node.user_data = AlphaData(alpha, alpha_compute(alpha, select_above))
        return
    table = table_kernel(_leaky_relu_table(source, output, node.builtin_data.alpha), DTYPES[source.type])
    node.user_data = AlphaData(alpha, lambda x, _alpha, out: table(x, out))


def _leaky_relu_table(source, output, alpha: float) -> np.ndarray:
    in_scale, in_zero = per_tensor_quantization(source, "input", "LEAKY_RELU")
    out_scale, out_zero = per_tensor_quantization(output, "output", "LEAKY_RELU")
    alpha_multiplier, alpha_shift = checked_multiplier(in_scale * np.float32(alpha) / out_scale, "LEAKY_RELU")
    identity_multiplier, identity_shift = checked_multiplier(in_scale / out_scale, "LEAKY_RELU")
    if source.type == I16:
        ensure_zero_points("LEAKY_RELU", ("input", in_zero), ("output", out_zero))
    dtype = DTYPES[source.type]
    info = np.iinfo(dtype)
    values = every_value(dtype) - in_zero
    positive = multiply_by_quantized_multiplier(values, identity_multiplier, identity_shift)
    if source.type == I16:  # the optimized int16 kernel applies the signed multiplier directly
        negative = multiply_by_quantized_multiplier(values, alpha_multiplier, alpha_shift)
    else:  # the reference kernel scales by |multiplier| and negates (the same result)
        scaled = multiply_by_quantized_multiplier(values, abs(alpha_multiplier), alpha_shift)
        negative = -scaled if alpha_multiplier < 0 else scaled
    result = wrap(out_zero + np.where(values >= 0, positive, negative), 32)
    return clip(result, info.min, info.max)


register_builtin(
    BuiltinOperator.LEAKY_RELU,
    (1, 2),
    types=ALL,
    op_data=AlphaData,
    prepare=leaky_relu_prepare,
    invoke=alpha_invoke,
)

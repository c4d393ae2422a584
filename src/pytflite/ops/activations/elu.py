"""ELU: x for x >= 0, expm1(x) below (float32; int8 as a table of TFLite's float LUT)."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator
from ..common import clip
from ..quant.lut import expm1f, populate_8bit, table_kernel
from .common import FLOAT, I8, MINUS_INF, ZERO, unary_kernel
from .quantized import per_tensor_quantization


def _elu(x, out):
    # x for x >= 0, expm1(x) below: expm1(min(x, 0)) is 0 where x >= 0 and exceeds x where x < 0
    clip(x, MINUS_INF, ZERO, out=out)
    np.expm1(out, out=out)
    np.maximum(out, x, out=out)


def _elu_quantized(source, output, _arithmetic):
    in_scale, in_zero = per_tensor_quantization(source, "input", "ELU")
    out_scale, out_zero = per_tensor_quantization(output, "output", "ELU")

    def transform(x):
        return np.where(x < 0, expm1f(np.minimum(x, 0)), x)

    return table_kernel(
        populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, np.int8), np.dtype(np.int8)
    )


unary_kernel(BuiltinOperator.ELU, (1, 1), _elu, _elu_quantized, (*FLOAT, I8))

"""L2_NORMALIZATION: float32 with TFLite's sequential sum of squares; 8-bit with the fixed-point inverse
square root of each row's sum."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure, ensure_eq, ensure_type, ensure_types_eq
from ...model.options import ActivationFunctionType
from ..common import check_arity, clip, input_tensor, output_tensor
from ..quant.fixed_point import multiply_by_quantized_multiplier, wrap
from ..quant.gemmlowp import inv_sqrt_multiplier
from ..registry import register_builtin
from .common import BYTES, DTYPES, FLOAT, U8, ActivationData, as_rows, f32, nonempty_invoke
from .quantized import per_tensor_quantization

_L2_EPSILON = f32(1e-6)


def l2_normalization_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure(len(source.shape) >= 1, "L2_NORMALIZATION input must have at least one dimension")
    ensure_type(source, FLOAT + BYTES, "input", "L2_NORMALIZATION")
    ensure_types_eq(source, output, "L2_NORMALIZATION input/output types")
    ensure_eq(
        int(node.builtin_data.fused_activation_function),
        int(ActivationFunctionType.NONE),
        "L2_NORMALIZATION fused activation (only NONE is supported)",
    )
    context.resize_tensor(output, source.shape)
    if source.type == TensorType.FLOAT32:
        node.user_data = ActivationData(_l2_normalization)
    else:
        node.user_data = ActivationData(_l2_normalization_quantized(source, output))


def _l2_normalization(x, out):
    squares = np.multiply(x, x)
    # the squares added one after another in float32, as TFLite's loop does (huge ones overflow to inf)
    np.add.accumulate(squares, axis=-1, out=squares)
    norm = np.sqrt(squares[..., -1:])
    np.maximum(norm, _L2_EPSILON, out=norm)
    np.divide(x, norm, out=out)


def _l2_normalization_quantized(source, output) -> Callable:
    out_scale, out_zero = per_tensor_quantization(output, "output", "L2_NORMALIZATION")
    _, in_zero = per_tensor_quantization(source, "input", "L2_NORMALIZATION")
    ensure(float(out_scale) == 1.0 / 128, f"L2_NORMALIZATION output scale {out_scale} != 1/128")
    ensure_eq(out_zero, 128 if source.type == U8 else 0, "L2_NORMALIZATION output zero point")
    unsigned = source.type == U8
    info = np.iinfo(DTYPES[source.type])

    def compute(x, out):
        differences = as_rows(x).astype(np.int64) - in_zero
        squares = wrap(np.add.reduce(differences * differences, axis=-1), 32)
        multiplier, shift = inv_sqrt_multiplier(squares)
        multiplier, shift = multiplier[:, None], shift[:, None]
        if unsigned:  # 128 + (128 * d) * (1 / norm)
            result = 128 + multiply_by_quantized_multiplier(128 * differences, multiplier, shift)
        else:  # d * (1 / norm) in Q7
            result = multiply_by_quantized_multiplier(differences, multiplier, shift + 7)
        np.copyto(out, clip(result, info.min, info.max).reshape(out.shape), casting="unsafe")

    return compute


register_builtin(
    BuiltinOperator.L2_NORMALIZATION,
    (1, 2),
    types=FLOAT + BYTES,
    op_data=ActivationData,
    prepare=l2_normalization_prepare,
    invoke=nonempty_invoke,
)

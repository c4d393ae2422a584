"""The reductions (MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL): LiteRT 2.3's reduce kernel adds four
temporaries at its first prepare, the same for its optimized and reference kernels: an index over the
input's dimensions, the resolved axes, an accumulator (MEAN, SUM and REDUCE_PROD size it to the output)
and the normalized input dimensions. A temporary it marks dynamic and leaves unsized (the axes and the
accumulator when the axis input is computed, the dimensions unless the input is constant) is listed only
once Eval has sized it: the axes always, the dimensions in the optimized kernels and the reference MEAN,
MEAN's accumulator too.
XNNPACK takes float32 and per-tensor int8/uint8 MEAN, SUM, REDUCE_MAX and REDUCE_MIN with constant axes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...core.types import BuiltinOperator, TensorType
from . import LiteRTKernels, Temporary, emulates, input_tensor
from .xnnpack import MAX_DIMS, float_or_quantized_8bit

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

# the accumulator's type per input type (InitializeTemporaries)
_ACCUMULATOR = {
    TensorType.FLOAT32: TensorType.FLOAT32,
    TensorType.INT32: TensorType.INT64,
    TensorType.INT64: TensorType.INT64,
    TensorType.UINT8: TensorType.INT32,
    TensorType.INT8: TensorType.INT32,
    TensorType.INT16: TensorType.INT32,
    TensorType.BOOL: TensorType.BOOL,
}
_SIZED_ACCUMULATOR = (BuiltinOperator.MEAN, BuiltinOperator.SUM, BuiltinOperator.REDUCE_PROD)


def _xnnpack_takes(context: Context, node: Node) -> bool:
    source, axes = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = context.tensors[node.outputs[0]]
    if source is None or axes is None or axes.type != TensorType.INT32 or not axes.is_constant:
        return False
    count = math.prod(axes.shape)
    if len(axes.shape) > 1 or not 0 < count <= MAX_DIMS:
        return False
    if count == 1 and not source.shape and int(axes.data.flat[0]) == 0:
        return False  # the empty reduction XNNPACK refuses
    return float_or_quantized_8bit(source) and float_or_quantized_8bit(output)


def _after_eval(context: Context, node: Node, op: int, kernels: LiteRTKernels) -> tuple[Temporary, ...]:
    source, axes = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = context.tensors[node.outputs[0]]
    sized = [Temporary("resolved_axis", TensorType.INT32, (math.prod(axes.shape),))]
    if op == BuiltinOperator.MEAN or kernels is not LiteRTKernels.REFERENCE:
        sized.append(Temporary("normalized_dims", TensorType.INT32, (len(source.shape),)))
    if op == BuiltinOperator.MEAN and source.type in _ACCUMULATOR:
        sized.append(Temporary("accumulator", _ACCUMULATOR[source.type], (math.prod(output.shape),)))
    return tuple(sized)


@emulates(
    BuiltinOperator.MEAN,
    BuiltinOperator.SUM,
    BuiltinOperator.REDUCE_MAX,
    BuiltinOperator.REDUCE_MIN,
    xnnpack=_xnnpack_takes,
    evaluated=_after_eval,
)
@emulates(
    BuiltinOperator.REDUCE_PROD, BuiltinOperator.REDUCE_ANY, BuiltinOperator.REDUCE_ALL, evaluated=_after_eval
)
def reduce_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source, axes = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = context.tensors[node.outputs[0]]
    constant_axes = axes.is_constant_or_persistent
    accumulator = _ACCUMULATOR.get(source.type)
    return (
        Temporary("index", TensorType.INT32, (len(source.shape),)),
        Temporary("resolved_axis", TensorType.INT32 if constant_axes else None, (math.prod(axes.shape),)),
        Temporary(
            "accumulator",
            accumulator if constant_axes and op in _SIZED_ACCUMULATOR else None,
            (math.prod(output.shape),),
        ),
        Temporary(
            "normalized_dims",
            TensorType.INT32 if source.is_constant_or_persistent else None,
            (len(source.shape),),
        ),
    )

"""PACK: equally shaped inputs stacked along a new axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import T, ensure_same_quantization

_PACK_TYPES = (T.INT32, T.FLOAT32, T.UINT8, T.UINT32, T.INT8, T.INT16, T.INT64)


@dataclass(frozen=True)
class AxisData:
    axis: int


def pack_prepare(context, node):
    options = node.builtin_data
    ensure_eq(len(node.inputs), options.values_count, "PACK input count vs values_count")
    check_arity(node, len(node.inputs))
    inputs = [input_tensor(context, node, i) for i in range(len(node.inputs))]
    first, output = inputs[0], output_tensor(context, node)
    rank = len(first.shape) + 1
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(len(first.shape) >= axis, "NumDimensions(input0) >= data->axis was not true.")
    ensure(axis >= 0, "data->axis >= 0 was not true.")
    if first.type not in _PACK_TYPES:
        raise KernelError(f"Type '{type_name(first.type)}' is not supported by pack.")
    for t in inputs[1:]:
        ensure(t.shape == first.shape, f"PACK: input shapes {list(first.shape)} and {list(t.shape)} differ")
        ensure_types_eq(first, t, "PACK input types")
    ensure_types_eq(output, first, "PACK output/input types")
    for t in inputs:
        ensure_same_quantization(t, output, "PACK")
    node.user_data = AxisData(axis)
    context.resize_tensor(output, (*first.shape[:axis], len(inputs), *first.shape[axis:]))


def pack_invoke(context, node):
    tensors = context.tensors
    np.stack(
        [tensors[i].data for i in node.inputs], axis=node.user_data.axis, out=tensors[node.outputs[0]].data
    )


register_builtin(
    BuiltinOperator.PACK,
    (1, 5),
    types=_PACK_TYPES,
    op_data=AxisData,
    prepare=pack_prepare,
    invoke=pack_invoke,
)

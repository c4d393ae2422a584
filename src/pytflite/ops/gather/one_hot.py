"""ONE_HOT: indices encoded as one-hot vectors along an axis, with on and off values."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.types import type_name
from ...errors import ensure, ensure_condition_eq, ensure_type_condition, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, unsupported_type

# TFLite's prepare also lets INT16 through, but its invoke has no INT16 case and fails.
_ONE_HOT_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT8, T.UINT8, T.BOOL)


@dataclass(frozen=True)
class OneHotData:
    axis: int
    depth: int | None  # None: the depth tensor is computed at run time


def _one_hot_shape(indices_shape: tuple[int, ...], axis: int, depth: int) -> tuple[int, ...]:
    ensure(depth >= 0, "*op_context.depth->data.i32 >= 0 was not true.")
    return (*indices_shape[:axis], depth, *indices_shape[axis:])


def one_hot_prepare(context, node):
    check_arity(node, 4)
    indices, depth, on_value, off_value = (input_tensor(context, node, i) for i in range(4))
    output = output_tensor(context, node)
    if on_value.type not in _ONE_HOT_TYPES:
        raise unsupported_type(on_value, "Unknown output data type: %s")
    ensure(
        indices.type in (T.INT32, T.INT64),
        "op_context.indices->type == kTfLiteInt32 || op_context.indices->type == kTfLiteInt64 was not true.",
    )
    rank = len(indices.shape)
    axis = rank if node.builtin_data.axis == -1 else node.builtin_data.axis
    ensure(
        0 <= axis <= rank, "op_context.axis >= 0 && op_context.axis < op_context.output_dims was not true."
    )
    ensure(depth.type == T.INT32, f"ONE_HOT depth type {type_name(depth.type)} != INT32")
    ensure_condition_eq(math.prod(depth.shape), 1, "NumElements(op_context.depth) != 1")
    ensure_condition_eq(math.prod(on_value.shape), 1, "NumElements(op_context.on_value) != 1")
    ensure_condition_eq(math.prod(off_value.shape), 1, "NumElements(op_context.off_value) != 1")
    ensure_type_condition(off_value, on_value.type, "op_context.off_value->type != op_context.dtype")
    ensure_types_eq(output, on_value, "ONE_HOT output type")
    if not depth.is_constant_or_persistent:
        node.user_data = OneHotData(axis, None)
        context.set_tensor_to_dynamic(output)
        return
    count = int(depth.data.reshape(-1)[0])
    node.user_data = OneHotData(axis, count)
    context.resize_tensor(output, _one_hot_shape(indices.shape, axis, count))


def one_hot_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    indices = tensors[node.inputs[0]].data
    output = tensors[node.outputs[0]]
    depth = data.depth
    if depth is None:
        depth = int(tensors[node.inputs[1]].data.reshape(-1)[0])
        context.resize_tensor(output, _one_hot_shape(indices.shape, data.axis, depth))
    out = output.data
    if out.size == 0:
        return
    prefix = math.prod(indices.shape[: data.axis])
    suffix = indices.size // prefix
    if indices.dtype == np.int64:  # TFLite compares static_cast<int>(index) with the position
        indices = indices.astype(np.int32)
    hot = indices.reshape(prefix, 1, suffix) == np.arange(depth, dtype=np.int32).reshape(1, depth, 1)
    out3 = out.reshape(prefix, depth, suffix)
    np.copyto(out3, tensors[node.inputs[3]].data.reshape(()))
    np.copyto(out3, tensors[node.inputs[2]].data.reshape(()), where=hot)


register_builtin(
    Op.ONE_HOT,
    (1, 1),
    types=_ONE_HOT_TYPES,
    op_data=OneHotData,
    prepare=one_hot_prepare,
    invoke=one_hot_invoke,
)

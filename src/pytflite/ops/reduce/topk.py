"""TOPK_V2: each last-axis row sorted descending, ties by lower index, NaNs last."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin

_TOPK_TYPES = (
    TensorType.FLOAT32,
    TensorType.UINT8,
    TensorType.INT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
)


_K_TYPES = (TensorType.INT32, TensorType.INT16)


def _topk_shape(shape: tuple[int, ...], k: int) -> tuple[int, ...]:
    if k > 0:
        ensure(k <= shape[-1], "TopK k is higher than the internal dimension.")
    return (*shape[:-1], max(0, k))


@dataclass(frozen=True)
class TopkPlan:
    """What invoke needs for one input shape and k."""

    shape: tuple[int, ...]  # of both outputs
    k: int
    # Descending order as an ascending stable sort of keys: negated floats (NaN stays NaN and sorts last),
    # complemented integers (order-reversing without overflow). Stability keeps ties in index order.
    key: np.ufunc
    starts: np.ndarray  # [..., 1]: where each row starts in the flattened input
    fits: bool  # the row size fits the index type (TFLite checks it only when there is output)


def _topk_plan(source, k: int, index_dtype: np.dtype) -> TopkPlan:
    shape = tuple(source.shape)
    starts = (np.arange(math.prod(shape[:-1])) * shape[-1]).reshape(*shape[:-1], 1)
    key = np.negative if source.dtype.kind == "f" else np.invert
    fits = shape[-1] <= np.iinfo(index_dtype).max
    return TopkPlan(_topk_shape(shape, k), k, key, starts, fits)


def topk_prepare(context, node):
    check_arity(node, 2, outputs=2)
    source, k_tensor = input_tensor(context, node, 0), input_tensor(context, node, 1)
    values, indices = output_tensor(context, node, 0), output_tensor(context, node, 1)
    ensure_type(source, _TOPK_TYPES, "input", "TOPK_V2")
    ensure_types_eq(source, values, "TOPK_V2 input/values types")
    ensure_type(k_tensor, _K_TYPES, "k", "TOPK_V2")
    ensure_eq(math.prod(k_tensor.shape), 1, "TOPK_V2 k element count")
    ensure(
        indices.type in _K_TYPES,
        f"Output index type {type_name(indices.type)} is currently not supported by TopK.",
    )
    ensure(len(source.shape) >= 1, "TopK k input must have 1 or more dimensions.")
    if k_tensor.is_constant_or_persistent and -1 not in source.shape_signature:
        node.user_data = plan = _topk_plan(source, int(k_tensor.data.reshape(-1)[0]), indices.dtype)
        context.resize_tensor(indices, plan.shape)
        context.resize_tensor(values, plan.shape)
        return
    node.user_data = None
    context.set_tensor_to_dynamic(indices)
    context.set_tensor_to_dynamic(values)


def topk_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]]
    values, indices = tensors[node.outputs[0]], tensors[node.outputs[1]]
    plan = node.user_data
    if plan is None:
        plan = _topk_plan(source, int(tensors[node.inputs[1]].data.reshape(-1)[0]), indices.dtype)
        context.resize_tensor(indices, plan.shape)
        context.resize_tensor(values, plan.shape)
    if values.data.size == 0:
        return
    if not plan.fits:
        raise KernelError("TopK row size exceeds output index type range.")
    x = source.data
    order = plan.key(x).argsort(-1, kind="stable")[..., : plan.k]
    indices.data[...] = order
    x.reshape(-1).take(order + plan.starts, out=values.data)


register_builtin(
    BuiltinOperator.TOPK_V2,
    (1, 3),
    types=_TOPK_TYPES,
    op_data=TopkPlan,
    prepare=topk_prepare,
    invoke=topk_invoke,
)

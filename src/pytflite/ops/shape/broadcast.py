"""BROADCAST_TO (the input broadcast to a shape tensor) and BROADCAST_ARGS (the broadcast shape of two
shape tensors)."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX, SIZED, DynamicShapeData, T, int_values

_BROADCAST_TO_TYPES = (*SIZED, T.COMPLEX128)


def _broadcast_to_shape(source_shape: tuple[int, ...], shape_tensor) -> tuple[int, ...]:
    ensure_eq(len(shape_tensor.shape), 1, "BROADCAST_TO shape rank")
    target = int_values(shape_tensor)
    message = "Output shape must be broadcastable from input shape."
    ensure(len(source_shape) <= len(target), message)
    extra = len(target) - len(source_shape)
    for i, d in enumerate(source_shape):
        ensure(d == 1 or d == target[extra + i], message)
    return tuple(target)


def broadcast_to_prepare(context, node):
    check_arity(node, 2)
    source, shape, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(shape, INDEX, "shape", "BROADCAST_TO")
    ensure_types_eq(source, output, "BROADCAST_TO input/output types")
    ensure_type(source, _BROADCAST_TO_TYPES, "input", "BROADCAST_TO")
    if shape.is_constant_or_persistent:
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _broadcast_to_shape(source.shape, shape))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def broadcast_to_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    if node.user_data.dynamic:
        context.resize_tensor(output, _broadcast_to_shape(source.shape, tensors[node.inputs[1]]))
    np.copyto(output.data, source.data)


def broadcast_args_prepare(context, node):
    check_arity(node, 2)
    first, second, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(first, INDEX, "shape1", "BROADCAST_ARGS")
    ensure_types_eq(first, second, "BROADCAST_ARGS shape1/shape2 types")
    ensure_types_eq(first, output, "BROADCAST_ARGS shape1/output types")
    ensure_eq(len(first.shape), 1, "BROADCAST_ARGS shape1 rank")
    ensure_eq(len(second.shape), 1, "BROADCAST_ARGS shape2 rank")
    context.resize_tensor(output, (max(first.shape[0], second.shape[0]),))


def broadcast_args_invoke(context, node):
    tensors = context.tensors
    first, second = (tensors[i].data for i in node.inputs)
    out = tensors[node.outputs[0]].data
    n = out.shape[0]
    a = np.concatenate([np.ones(n - first.shape[0], first.dtype), first])
    b = np.concatenate([np.ones(n - second.shape[0], second.dtype), second])
    if np.any((a != 1) & (b != 1) & (a != b)):
        raise KernelError(
            f"BROADCAST_ARGS: shapes {first.tolist()} and {second.tolist()} are not broadcastable"
        )
    np.copyto(out, np.where(a == 1, b, a))


register_builtin(
    BuiltinOperator.BROADCAST_TO,
    (2, 4),
    types=_BROADCAST_TO_TYPES,
    op_data=DynamicShapeData,
    prepare=broadcast_to_prepare,
    invoke=broadcast_to_invoke,
)
register_builtin(
    BuiltinOperator.BROADCAST_ARGS,
    (1, 1),
    types=INDEX,
    prepare=broadcast_args_prepare,
    invoke=broadcast_args_invoke,
)

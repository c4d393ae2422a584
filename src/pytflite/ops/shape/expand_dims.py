"""EXPAND_DIMS: insert a dimension of size 1 at an axis given by a (constant or computed) tensor."""

from __future__ import annotations

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_eq, ensure_type
from ..common import ANY_TYPE, check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import (
    INDEX,
    DynamicShapeData,
    T,
    copy_invoke,
    ensure_same_quantization,
    int_values,
    scalar_value,
    set_type,
)


def _expanded_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    if axis < 0:
        axis += len(shape) + 1
    ensure(axis <= len(shape), "axis <= input_dims.size was not true.")
    ensure(axis >= 0, "axis >= 0 was not true.")
    return (*shape[:axis], 1, *shape[axis:])


def _expand_dims_axis(axis) -> int:
    ensure_eq(len(int_values(axis)), 1, "EXPAND_DIMS axis element count")
    return scalar_value(axis)


def expand_dims_prepare(context, node):
    check_arity(node, 2)
    source, axis, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, ANY_TYPE, "input", "EXPAND_DIMS")
    ensure_type(axis, INDEX, "axis", "EXPAND_DIMS")
    set_type(output, source.type)
    ensure_same_quantization(source, output, "EXPAND_DIMS")
    if source.type == T.INT16:
        ensure_eq(source.params.zero_point, 0, "EXPAND_DIMS int16 input zero point")
    if axis.is_constant_or_persistent:
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _expanded_shape(source.shape, _expand_dims_axis(axis)))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def expand_dims_invoke(context, node):
    tensors = context.tensors
    if node.user_data.dynamic:
        source = tensors[node.inputs[0]]
        axis = _expand_dims_axis(tensors[node.inputs[1]])
        context.resize_tensor(tensors[node.outputs[0]], _expanded_shape(source.shape, axis))
    copy_invoke(context, node)


register_builtin(
    BuiltinOperator.EXPAND_DIMS,
    (1, 1),
    types=ANY_TYPE,
    op_data=DynamicShapeData,
    prepare=expand_dims_prepare,
    invoke=expand_dims_invoke,
)

"""FILL: an output of the shape a dims tensor gives, every element the scalar value."""

from __future__ import annotations

import numpy as np

from ...core.types import TFLITE_TYPE_NUMBER, BuiltinOperator
from ...errors import KernelError, ensure_eq, ensure_type
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import (
    INDEX,
    SIZED,
    DynamicShapeData,
    T,
    ensure_same_quantization,
    int_values,
    set_type,
)

_FILL_TYPES = (*SIZED, T.STRING)


def _fill_shape(dims) -> tuple[int, ...]:
    shape = int_values(dims)
    if any(d < 0 for d in shape):
        raise KernelError(f"Fill dimensions must be >= 0 got {TFLITE_TYPE_NUMBER[dims.type]}")
    return tuple(shape)


def fill_prepare(context, node):
    check_arity(node, 2)
    dims, value, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_eq(len(dims.shape), 1, "FILL dims rank")
    ensure_type(dims, INDEX, "dims", "FILL")
    ensure_eq(len(value.shape), 0, "FILL value rank")
    ensure_type(value, _FILL_TYPES, "value", "FILL")
    set_type(output, value.type)
    ensure_same_quantization(value, output, "FILL")
    if value.type == T.INT16:
        ensure_eq(value.params.zero_point, 0, "FILL int16 value zero point")
    if dims.is_constant_or_persistent:
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _fill_shape(dims))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def fill_invoke(context, node):
    tensors = context.tensors
    output = tensors[node.outputs[0]]
    if node.user_data.dynamic:
        context.resize_tensor(output, _fill_shape(tensors[node.inputs[0]]))
    np.copyto(output.data, tensors[node.inputs[1]].data)


register_builtin(
    BuiltinOperator.FILL,
    (1, 5),
    types=_FILL_TYPES,
    op_data=DynamicShapeData,
    prepare=fill_prepare,
    invoke=fill_invoke,
)

"""LOGICAL_AND, LOGICAL_OR and LOGICAL_NOT on bool tensors."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .binary import BinaryOp, register_binary
from .common import T, binary_tensors, output_shape
from .widened import widened_ufunc


def _logical_prepare(op_name: str, ufunc: np.ufunc):
    def prepare(context, node):
        first, second, output = binary_tensors(context, node, op_name)
        ensure(first.type == T.BOOL, "Logical ops only support bool type.")
        context.resize_tensor(output, output_shape(first, second, op_name))
        return BinaryOp(widened_ufunc(ufunc, first, second, output.shape))

    return prepare


def _logical_not_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_types_eq(source, output, "LOGICAL_NOT input/output types")
    ensure_type(source, (T.BOOL,), "input", "LOGICAL_NOT")
    context.resize_tensor(output, source.shape)


def _logical_not_invoke(context, node):
    tensors = context.tensors
    np.logical_not(tensors[node.inputs[0]].data, out=tensors[node.outputs[0]].data)


register_binary(
    BuiltinOperator.LOGICAL_AND, (1, 1), (T.BOOL,), _logical_prepare("LOGICAL_AND", np.logical_and)
)
register_binary(BuiltinOperator.LOGICAL_OR, (1, 1), (T.BOOL,), _logical_prepare("LOGICAL_OR", np.logical_or))
register_builtin(
    BuiltinOperator.LOGICAL_NOT,
    (1, 1),
    types=(T.BOOL,),
    prepare=_logical_not_prepare,
    invoke=_logical_not_invoke,
)

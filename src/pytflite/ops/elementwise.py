"""Elementwise binary arithmetic with broadcasting and a fused activation: ADD, SUB, MUL.

Prepare checks types, computes the broadcast output shape and picks the NumPy ufunc and the fused
activation clamp; invoke is one ufunc call into the preallocated output (plus the clamp).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure_type, ensure_types_eq
from .common import activation_clamp, broadcast_shape, check_arity, input_tensor, output_tensor
from .registry import register_builtin

_NUMERIC = (TensorType.FLOAT32, TensorType.INT32, TensorType.INT64)


@dataclass(frozen=True)
class BinaryOpData:
    ufunc: np.ufunc
    clamp: Callable[[np.ndarray], None] | None


def binary_prepare(ufunc: np.ufunc, op_name: str, types: tuple[TensorType, ...] = _NUMERIC):
    """A prepare function for an elementwise binary op computed by `ufunc`."""

    def prepare(context, node):
        check_arity(node, 2)
        first, second = input_tensor(context, node, 0), input_tensor(context, node, 1)
        output = output_tensor(context, node)
        ensure_types_eq(first, second, f"{op_name} input types")
        ensure_types_eq(first, output, f"{op_name} input/output types")
        ensure_type(first, types, "input", op_name)
        context.resize_tensor(output, broadcast_shape(first.shape, second.shape))
        activation = getattr(node.builtin_data, "fused_activation_function", None)
        node.user_data = BinaryOpData(ufunc, activation_clamp(activation))

    return prepare


def binary_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    out = tensors[node.outputs[0]].data
    data.ufunc(tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, out=out)
    if data.clamp is not None:
        data.clamp(out)


for _op, _ufunc, _versions in (
    (BuiltinOperator.ADD, np.add, (1, 6)),
    (BuiltinOperator.SUB, np.subtract, (1, 5)),
    (BuiltinOperator.MUL, np.multiply, (1, 8)),
):
    register_builtin(
        _op, _versions, types=_NUMERIC, prepare=binary_prepare(_ufunc, _op.name), invoke=binary_invoke
    )

"""TRANSPOSE: the input's dimensions permuted by a (constant or computed) perm tensor."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, copy_calls, input_tensor, output_tensor
from ..registry import register_builtin
from .common import SIZED, T, int_values


@dataclass(frozen=True)
class TransposeData:
    perm: tuple[int, ...] | None  # None: the perm tensor is computed at run time


def _resolve_perm(shape: tuple[int, ...], perm_tensor) -> tuple[int, ...]:
    rank = len(shape)
    ensure_eq(len(perm_tensor.shape), 1, "TRANSPOSE perm rank")
    ensure_eq(perm_tensor.shape[0], rank, "TRANSPOSE perm size vs input rank")
    perm = []
    for value in int_values(perm_tensor):
        ensure(-rank <= value < rank, "Transpose op permutations array is out of bounds.")
        perm.append(value + rank if value < 0 else value)
    ensure(len(set(perm)) == rank, f"Transpose op permutations array {perm} repeats a dimension.")
    return tuple(perm)


def transpose_prepare(context, node):
    check_arity(node, 2)
    source, perm, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure(len(source.shape) <= 8, "Transpose op only supports 1D-8D input arrays.")
    ensure_types_eq(source, output, "TRANSPOSE input/output types")
    ensure_type(source, SIZED, "input", "TRANSPOSE")
    ensure_type(perm, T.INT32, "perm", "TRANSPOSE")
    if not perm.is_constant_or_persistent:
        node.user_data = TransposeData(None)
        context.set_tensor_to_dynamic(output)
        return
    resolved = _resolve_perm(source.shape, perm)
    node.user_data = TransposeData(resolved)
    context.resize_tensor(output, tuple(source.shape[p] for p in resolved))


def transpose_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]]
    perm = node.user_data.perm
    output = tensors[node.outputs[0]]
    if perm is None:
        perm = _resolve_perm(source.shape, tensors[node.inputs[1]])
        context.resize_tensor(output, tuple(source.shape[p] for p in perm))
    np.copyto(output.data, source.data.transpose(perm))


def transpose_calls(context, node):
    """With a constant perm: the copy from the input's transposed view."""
    perm = node.user_data.perm
    if perm is None:
        return None
    source, out = context.tensors[node.inputs[0]].data, context.tensors[node.outputs[0]].data
    return copy_calls(out, source.transpose(perm), source)


register_builtin(
    BuiltinOperator.TRANSPOSE,
    (1, 9),
    types=SIZED,
    op_data=TransposeData,
    prepare=transpose_prepare,
    invoke=transpose_invoke,
    calls=transpose_calls,
)

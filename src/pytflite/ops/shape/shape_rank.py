"""SHAPE and RANK: written in prepare, where every shape is known, as persistent read-only outputs."""

from __future__ import annotations

from ...core.types import BuiltinOperator
from ...errors import KernelError, ensure_type
from ..common import ANY_TYPE, check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import _C_TYPE_NUMBER, _INDEX, T, _set_persistent_ro, _set_type


def _noop(context, node) -> None:
    """Invoke for a kernel whose output was written in prepare."""


def shape_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "SHAPE")
    out_type = node.builtin_data.out_type
    if out_type not in _INDEX:
        raise KernelError(f"Unknown shape output data type: {_C_TYPE_NUMBER.get(out_type, 0)}")
    _set_type(output, out_type)
    _set_persistent_ro(context, output, (len(source.shape),))
    output.data[...] = source.shape


def rank_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "RANK")
    _set_type(output, T.INT32)
    _set_persistent_ro(context, output, ())
    output.data[...] = len(source.shape)


register_builtin(BuiltinOperator.SHAPE, (1, 1), types=ANY_TYPE, prepare=shape_prepare, invoke=_noop)
register_builtin(BuiltinOperator.RANK, (1, 1), types=ANY_TYPE, prepare=rank_prepare, invoke=_noop)

"""SHAPE and RANK: shapes are known in prepare, even those of dynamic tensors, so prepare marks the output
persistent read-only and the runtime computes it once, right after prepare (the folding of
core/subgraph.py); downstream kernels read it as a constant."""

from __future__ import annotations

from ...core.types import TFLITE_TYPE_NUMBER, BuiltinOperator
from ...errors import KernelError, ensure_type
from ..common import ANY_TYPE, check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX, T, set_persistent_ro, set_type


def shape_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "SHAPE")
    out_type = node.builtin_data.out_type
    if out_type not in INDEX:
        raise KernelError(f"Unknown shape output data type: {TFLITE_TYPE_NUMBER.get(out_type, 0)}")
    set_type(output, out_type)
    set_persistent_ro(context, output, (len(source.shape),))


def shape_invoke(context, node):
    tensors = context.tensors
    tensors[node.outputs[0]].data[...] = tensors[node.inputs[0]].shape


def rank_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "RANK")
    set_type(output, T.INT32)
    set_persistent_ro(context, output, ())


def rank_invoke(context, node):
    tensors = context.tensors
    tensors[node.outputs[0]].data[...] = len(tensors[node.inputs[0]].shape)


register_builtin(BuiltinOperator.SHAPE, (1, 1), types=ANY_TYPE, prepare=shape_prepare, invoke=shape_invoke)
register_builtin(BuiltinOperator.RANK, (1, 1), types=ANY_TYPE, prepare=rank_prepare, invoke=rank_invoke)

"""DENSIFY: a sparse constant (the converter's sparsified weights) expanded to its dense form.

The input is always a model constant, so the subgraph runs invoke once, right after prepare, into a
persistent output that counts as a constant downstream, and never again.
"""

from __future__ import annotations

from ..core.sparsity import densify
from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure, ensure_type
from .common import check_arity, input_tensor, output_tensor
from .registry import register_builtin

_TYPES = (TensorType.FLOAT32, TensorType.FLOAT16, TensorType.INT8)


def densify_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, _TYPES, "input", "DENSIFY")
    ensure(source.is_constant_or_persistent, "DENSIFY input must be a constant tensor")
    ensure(source.sparsity is not None, "DENSIFY input has no sparsity parameters")
    output.type = source.type
    context.resize_tensor(output, source.shape)


def densify_invoke(context, node):
    source = context.tensors[node.inputs[0]]
    context.tensors[node.outputs[0]].data[...] = densify(
        source.data.reshape(-1), source.shape, source.sparsity
    )


register_builtin(
    BuiltinOperator.DENSIFY, (1, 1), types=_TYPES, prepare=densify_prepare, invoke=densify_invoke
)

"""ADD_N: the sum of two or more same-shape inputs."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import ensure, ensure_types_eq
from ..common import input_tensor, output_tensor
from ..registry import register_builtin
from .common import T


def _add_n_prepare(context, node):
    ensure(len(node.inputs) >= 2, "num_inputs >= 2 was not true.")
    ensure(len(node.outputs) == 1, f"output count {len(node.outputs)} != 1")
    first, output = input_tensor(context, node, 0), output_tensor(context, node)
    for i in range(1, len(node.inputs)):
        other = input_tensor(context, node, i)
        ensure(other.shape == first.shape, "HaveSameShapes(input1, input) was not true.")
        ensure_types_eq(first, other, "ADD_N input types")
    ensure_types_eq(first, output, "ADD_N input/output types")
    ensure(
        first.type in (T.FLOAT32, T.INT32),
        f"AddN only supports FLOAT32|INT32 now, got {type_name(first.type)}.",
    )
    context.resize_tensor(output, first.shape)


def _add_n_invoke(context, node):
    tensors = context.tensors
    inputs = node.inputs
    out = tensors[node.outputs[0]].data
    np.add(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)
    for index in inputs[2:]:
        np.add(out, tensors[index].data, out=out)


register_builtin(
    BuiltinOperator.ADD_N, (1, 1), types=(T.FLOAT32, T.INT32), prepare=_add_n_prepare, invoke=_add_n_invoke
)

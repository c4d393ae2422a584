"""UNPACK: the input sliced along an axis into outputs without it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import T, ensure_same_quantization

_UNPACK_TYPES = (T.INT32, T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.UINT8, T.INT8, T.INT16, T.BOOL)


@dataclass(frozen=True)
class UnpackData:
    slices: tuple[tuple, ...]


def unpack_prepare(context, node):
    options = node.builtin_data
    check_arity(node, 1, len(node.outputs))
    ensure_eq(len(node.outputs), options.num, "UNPACK output count vs num")
    source = input_tensor(context, node, 0)
    shape = source.shape
    ensure(int(np.prod(shape, dtype=np.int64)) > 0, "NumElements(input) > 0 was not true.")
    rank = len(shape)
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(0 <= axis < rank, "0 <= axis && axis < NumDimensions(input) was not true.")
    if source.type not in _UNPACK_TYPES:
        raise KernelError(f"Type '{type_name(source.type)}' is not supported by unpack.")
    ensure_eq(options.num, shape[axis], "UNPACK num vs input dimension")
    out_shape = shape[:axis] + shape[axis + 1 :]
    for i in range(len(node.outputs)):
        output = output_tensor(context, node, i)
        ensure_types_eq(output, source, "UNPACK output/input types")
        ensure_same_quantization(source, output, "UNPACK")
        context.resize_tensor(output, out_shape)
    node.user_data = UnpackData(tuple((slice(None),) * axis + (i,) for i in range(options.num)))


def unpack_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]].data
    for i, where in zip(node.outputs, node.user_data.slices):
        np.copyto(tensors[i].data, source[where])


register_builtin(
    BuiltinOperator.UNPACK,
    (1, 6),
    types=_UNPACK_TYPES,
    op_data=UnpackData,
    prepare=unpack_prepare,
    invoke=unpack_invoke,
)

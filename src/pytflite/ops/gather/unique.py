"""UNIQUE: the distinct values of a vector in order of first occurrence, and each element's index
among them (a dynamic output)."""

from __future__ import annotations

import numpy as np

from ...core.types import type_name
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, unsupported_type

_UNIQUE_TYPES = (T.INT8, T.INT16, T.INT32, T.INT64, T.FLOAT32, T.UINT8)


def unique_prepare(context, node):
    check_arity(node, 1, outputs=2)
    source = input_tensor(context, node, 0)
    values, index = output_tensor(context, node, 0), output_tensor(context, node, 1)
    index_type = node.builtin_data.idx_out_type
    if index_type not in (T.INT32, T.INT64):
        raise KernelError(
            f"Unique index output array can only be Int32 or Int64, requested: {type_name(T(index_type))}"
        )
    if source.type not in _UNIQUE_TYPES:
        raise unsupported_type(source, "Currently Unique doesn't support type: %s")
    ensure_type_condition(values, source.type, "output_unique_tensor->type != input->type")
    ensure_type_condition(index, T(index_type), "output_index_tensor->type != params->index_out_type")
    ensure_condition_eq(len(source.shape), 1, "NumDimensions(input) != 1")
    context.set_tensor_to_dynamic(values)
    context.resize_tensor(index, source.shape)


def unique_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]].data
    values = tensors[node.outputs[0]]
    index = tensors[node.outputs[1]].data
    if source.size == 0:
        context.resize_tensor(values, (0,))
        return
    _, first, inverse = np.unique(source, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # unique values in order of first occurrence
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    context.resize_tensor(values, (len(order),))
    np.take(source, first[order], out=values.data, mode="clip")
    np.copyto(index, rank[inverse.reshape(-1)], casting="unsafe")


register_builtin(Op.UNIQUE, (1, 1), types=_UNIQUE_TYPES, prepare=unique_prepare, invoke=unique_invoke)

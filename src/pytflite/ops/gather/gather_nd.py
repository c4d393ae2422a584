"""GATHER_ND: slices of params addressed by the innermost dimension of an index tensor, as flat rows."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import KernelError, ensure, ensure_types_eq
from ..common import as_indices, check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX_TYPES, Op, T, row_strides, unsupported_type

_GATHER_ND_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.UINT8,
    T.INT8,
    T.INT16,
    T.INT64,
    T.INT32,
    T.BOOL,
    T.STRING,
)


@dataclass(frozen=True)
class GatherNdData:
    slices: int
    depth: int  # indices_nd: how many leading params dimensions an index addresses
    rows_shape: tuple[int, int]  # params as (addressable rows, slice size)
    limits: np.ndarray  # the addressed dimensions, for the bounds check
    strides: np.ndarray  # row stride of each addressed dimension


def gather_nd_prepare(context, node):
    check_arity(node, 2)
    params, indices = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    if params.type not in _GATHER_ND_TYPES:
        raise unsupported_type(params, "Params of type '%s' are not supported by gather_nd.")
    if indices.type not in INDEX_TYPES:
        raise unsupported_type(indices, "Indices of type '%s' are not supported by gather_nd.")
    ensure_types_eq(output, params, "GATHER_ND output type")
    params_rank, indices_rank = len(params.shape), len(indices.shape)
    ensure(params_rank >= 1, "Params must be at least a vector.")
    ensure(indices_rank >= 1, "Indices must be at least a vector.")
    depth = indices.shape[-1]
    ensure(depth <= params_rank, "Index innermost dimension length must be in [0, params rank].")
    shape = indices.shape[:-1] + params.shape[depth:]
    context.resize_tensor(output, shape)
    addressed = params.shape[:depth]
    node.user_data = GatherNdData(
        slices=math.prod(indices.shape[:-1]),
        depth=depth,
        rows_shape=(math.prod(addressed), math.prod(params.shape[depth:])),
        limits=np.array(addressed, np.int64),
        strides=row_strides(addressed),
    )


def gather_nd_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    params = tensors[node.inputs[0]].data
    indices = tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    ensure(
        params.size > 0 or indices.size == 0,
        "(NumElements(params) == 0 && NumElements(indices) == 0) || NumElements(params) > 0 was not true.",
    )
    if indices.size and indices.min() < 0:
        raise KernelError("indices_has_only_positive_elements was not true.")
    if data.slices == 0:
        return
    coords = indices.reshape(data.slices, data.depth)
    if data.depth and (coords >= data.limits).any():
        raise KernelError("gather_nd index out of bounds")
    if out.size == 0:
        return
    rows = as_indices(coords @ data.strides) if data.depth else np.zeros(data.slices, np.intp)
    np.take(params.reshape(data.rows_shape), rows, axis=0, out=out.reshape(data.slices, -1), mode="clip")


register_builtin(
    Op.GATHER_ND,
    (1, 6),
    types=_GATHER_ND_TYPES,
    op_data=GatherNdData,
    prepare=gather_nd_prepare,
    invoke=gather_nd_invoke,
)

"""BUCKETIZE: each value's bucket among sorted boundaries (np.searchsorted)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import type_name
from ...errors import ensure
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, unsupported_type

_BUCKETIZE_TYPES = (T.FLOAT32, T.FLOAT64, T.INT32, T.INT64)


@dataclass(frozen=True)
class BucketizeData:
    boundaries: np.ndarray  # float32, or float64 for a float64 input
    cast: np.dtype | None  # integers compare as float32 against float boundaries (C++ promotion)


def bucketize_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    boundaries = np.array(node.builtin_data.boundaries or (), np.float32)
    ensure(not (boundaries[1:] < boundaries[:-1]).any(), "Expected sorted boundaries")
    if source.type not in _BUCKETIZE_TYPES:
        raise unsupported_type(source, "Type '%s' is not supported by bucketize.")
    ensure(output.type == T.INT32, f"BUCKETIZE output type {type_name(output.type)} != INT32")
    if source.type == T.FLOAT64:
        node.user_data = BucketizeData(boundaries.astype(np.float64), None)
    else:
        cast = None if source.type == T.FLOAT32 else np.dtype(np.float32)
        node.user_data = BucketizeData(boundaries, cast)
    context.resize_tensor(output, source.shape)


def bucketize_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source = tensors[node.inputs[0]].data
    if data.cast is not None:
        source = source.astype(data.cast)
    np.copyto(
        tensors[node.outputs[0]].data,
        np.searchsorted(data.boundaries, source, side="right"),
        casting="unsafe",
    )


register_builtin(
    Op.BUCKETIZE,
    (1, 1),
    types=_BUCKETIZE_TYPES,
    op_data=BucketizeData,
    prepare=bucketize_prepare,
    invoke=bucketize_invoke,
)

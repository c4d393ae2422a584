"""What the gather family shares: the index types, TFLite's check messages and row strides."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError

T = TensorType
Op = BuiltinOperator

INDEX_TYPES = (T.INT16, T.INT32, T.INT64)
# Row copies: every type with whole-byte elements.
EMBEDDING_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.FLOAT64,
    T.INT8,
    T.UINT8,
    T.INT16,
    T.UINT16,
    T.INT32,
    T.UINT32,
    T.INT64,
    T.UINT64,
    T.BOOL,
    T.COMPLEX64,
    T.COMPLEX128,
)


def unsupported_type(tensor, message: str) -> KernelError:
    """TFLite's "... of type 'X' ..." error, `message` holding one %s for the type name."""
    return KernelError(message % type_name(tensor.type))


def row_strides(dims: tuple[int, ...]) -> np.ndarray:
    """Row-major strides (in elements) of an array of shape `dims`, as int64."""
    strides = np.ones(len(dims), np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides

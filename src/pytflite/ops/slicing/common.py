"""What the slicing kernels share: the element types each accepts and the index tensors' reading."""

from __future__ import annotations

from ...core.types import TensorType
from ...errors import ensure_eq
from ..common import ANY_TYPE

_PACKED = (TensorType.INT4, TensorType.UINT4, TensorType.INT2)  # sub-byte types are stored packed
INDEX_TYPES = (TensorType.INT32, TensorType.INT64)

# TFLite copies these by element size (8/16/32/64 bits), strings by reference.
SLICE_TYPES = tuple(t for t in ANY_TYPE if t not in (*_PACKED, TensorType.COMPLEX128))
# Everything with a whole-byte element size.
UPDATE_TYPES = tuple(t for t in ANY_TYPE if t not in (*_PACKED, TensorType.STRING))
MIRROR_PAD_TYPES = tuple(t for t in UPDATE_TYPES if t != TensorType.COMPLEX128)
PAD_TYPES = (
    TensorType.FLOAT32,
    TensorType.FLOAT16,
    TensorType.BFLOAT16,
    TensorType.UINT8,
    TensorType.INT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
    TensorType.BOOL,
)
REVERSE_SEQUENCE_TYPES = (
    TensorType.FLOAT32,
    TensorType.UINT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
)
QUANTIZED = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)


def ints(tensor) -> list[int]:
    return tensor.data.reshape(-1).tolist() if tensor.data is not None else []


def ensure_vector(tensor, what: str, op_name: str) -> None:
    ensure_eq(len(tensor.shape), 1, f"{op_name} {what} rank")

"""Sub-byte tensors (int4, uint4, int2): their elements are stored packed in `Tensor.data`, low bits
first, two int4/uint4 or four int2 per byte, the last byte padded with zero bits (TFLite's layout).
Kernels and the Python API unpack them to one element per int8/uint8.
"""

from __future__ import annotations

import numpy as np

from .types import TensorType

# bits per element and signedness of each packed type
_LAYOUT = {TensorType.INT4: (4, True), TensorType.UINT4: (4, False), TensorType.INT2: (2, True)}
PACKED_TYPES = tuple(_LAYOUT)


def unpack_packed(data: np.ndarray, count: int, tensor_type: TensorType) -> np.ndarray:
    """The `count` elements of a packed buffer, one per int8 (uint8 for UINT4) (UnpackPackedIntToInt8)."""
    bits, signed = _LAYOUT[tensor_type]
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    raw = np.asarray(data).reshape(-1).view(np.uint8)
    values = ((raw[:, None] >> shifts) & np.uint8((1 << bits) - 1)).reshape(-1)[:count]
    if not signed:
        return values
    half = np.int8(1 << (bits - 1))
    return (values.view(np.int8) ^ half) - half  # sign-extend the low `bits` bits


def pack_into(values: np.ndarray, tensor_type: TensorType, out: np.ndarray) -> None:
    """Pack `values` (one per byte, already in the type's range) into the packed buffer `out`
    (PackInt8IntoDenseInt)."""
    bits, _ = _LAYOUT[tensor_type]
    per_byte = 8 // bits
    target = out.reshape(-1).view(np.uint8)
    padded = np.zeros(target.size * per_byte, np.uint8)
    padded[: values.size] = values.reshape(-1).view(np.uint8) & np.uint8((1 << bits) - 1)
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    np.bitwise_or.reduce(padded.reshape(-1, per_byte) << shifts, axis=1, out=target)

"""TFLite's string tensor format, and conversion to and from NumPy arrays of `bytes`.

A string tensor's buffer is: int32 count N, then N+1 int32 offsets from the buffer start, then the
bytes of all strings back to back; string i is buffer[offset[i]:offset[i+1]]. In memory pytflite keeps
string tensors as NumPy object arrays of `bytes`, and converts only at the model boundary.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import ModelError


def decode_string_buffer(raw: bytes, shape: tuple[int, ...], label: str) -> np.ndarray:
    """Split a string buffer into an object array of bytes with the tensor's shape."""
    if len(raw) < 4:
        raise ModelError(f"{label}: string buffer of {len(raw)} bytes has no count")
    (count,) = struct.unpack_from("<i", raw, 0)
    expected = int(np.prod(shape, dtype=np.int64))
    if count != expected or len(raw) < 4 * (count + 2):
        raise ModelError(
            f"{label}: string buffer holds {count} strings, shape {list(shape)} needs {expected}"
        )
    offsets = np.frombuffer(raw, dtype="<i4", count=count + 1, offset=4)
    if np.any(offsets[1:] < offsets[:-1]) or offsets[0] < 4 * (count + 2) or offsets[-1] > len(raw):
        raise ModelError(f"{label}: string buffer offsets are out of order or out of bounds")
    strings = np.empty(count, dtype=object)
    for i in range(count):
        strings[i] = raw[offsets[i] : offsets[i + 1]]
    return strings.reshape(shape)


def encode_string_buffer(strings: np.ndarray) -> bytes:
    """The TFLite string buffer holding these strings (bytes, or str encoded as UTF-8), in C order."""
    items = [
        s.encode("utf-8") if isinstance(s, str) else bytes(s)
        for s in np.asarray(strings, dtype=object).reshape(-1)
    ]
    header = 4 * (len(items) + 2)
    offsets = np.cumsum([header] + [len(s) for s in items], dtype=np.int64)
    return struct.pack(f"<i{len(offsets)}i", len(items), *offsets.tolist()) + b"".join(items)

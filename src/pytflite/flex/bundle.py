"""TensorFlow's V2 checkpoint, a tensor bundle (what SaveV2 writes and RestoreV2 reads): PREFIX.index, a
table (sstable.py) with a BundleHeaderProto under the empty key and a BundleEntryProto per tensor name
(dtype, shape, shard, offset, size, masked CRC32C), and PREFIX.data-00000-of-00001, the tensors' bytes
one after another in the order they were given (the index sorts them by name). A number tensor is its
little-endian elements; a string tensor is each string's length as a varint, the masked CRC32C of the
lengths as 32-bit words, then the strings. Written as TF writes it, byte for byte.
"""

from __future__ import annotations

import os
import struct

import numpy as np

from .checkpoint import read_checkpoint
from .dtypes import DType, dtype_of_code
from .protos import BundleEntryProto, BundleHeaderProto
from .sstable import crc32c, masked, read_table, read_varint, unmasked, varint, write_table

_BUNDLE_VERSION = 1  # the producer version TF records


def _data_path(prefix: str, shard: int, shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{shards:05d}"


def _string_chunk(array: np.ndarray) -> tuple[bytes, int]:
    """A string tensor's bytes in the data file, and the CRC32C its entry records (over the lengths as
    32-bit words, their checksum and the strings)."""
    strings = [bytes(value) for value in array.reshape(-1)]
    if any(len(value) >= 1 << 32 for value in strings):
        raise ValueError("a string of 4 GiB or more cannot be saved")
    words = struct.pack(f"<{len(strings)}I", *map(len, strings))
    checksum = struct.pack("<I", masked(crc32c(words)))
    body = b"".join(strings)
    return b"".join(varint(len(value)) for value in strings) + checksum + body, crc32c(
        words + checksum + body
    )


def _chunk(array: np.ndarray, dtype: DType) -> tuple[bytes, int]:
    if dtype.name == "string":
        return _string_chunk(array)
    data = np.ascontiguousarray(array, dtype=dtype.numpy.newbyteorder("<")).tobytes()
    return data, crc32c(data)


def write_bundle(prefix: str, names: list[str], arrays: list[np.ndarray], dtypes: list[DType]) -> None:
    """Write the bundle of tensors `names` as SaveV2 does (whole tensors, one shard)."""
    if len(set(names)) != len(names):
        raise ValueError("SaveV2: a tensor name is given twice")
    data, entries = bytearray(), []
    for name, array, dtype in zip(names, arrays, dtypes, strict=True):
        chunk, checksum = _chunk(np.asarray(array), dtype)
        entry = BundleEntryProto(dtype=dtype.code, offset=len(data), size=len(chunk), crc32c=masked(checksum))
        entry.shape.SetInParent()
        for size in np.shape(array):
            entry.shape.dim.add(size=int(size))
        entries.append((name.encode(), entry.SerializeToString()))
        data += chunk
    header = BundleHeaderProto(num_shards=1)
    header.version.producer = _BUNDLE_VERSION
    with open(_data_path(prefix, 0, 1), "wb") as file:
        file.write(bytes(data))
    with open(f"{prefix}.index", "wb") as file:
        file.write(write_table([(b"", header.SerializeToString()), *sorted(entries)]))


def bundle_entries(prefix: str) -> tuple[int, dict[str, object]]:
    """The bundle's shard count and its BundleEntryProto per tensor name (PREFIX.index)."""
    with open(f"{prefix}.index", "rb") as file:
        entries = dict(read_table(file.read()))
    header = BundleHeaderProto.FromString(entries.pop(b"", b""))
    named = {
        key.decode(errors="surrogateescape"): BundleEntryProto.FromString(v) for key, v in entries.items()
    }
    return max(header.num_shards, 1), named


def read_bundle(prefix: str, names: list[str]) -> list[tuple[DType, np.ndarray]]:
    """The tensors `names` of the bundle at `prefix`; a V1 checkpoint file there is read as one, as
    RestoreV2 falls back to it."""
    if not os.path.exists(f"{prefix}.index"):
        tensors = read_checkpoint(prefix)
        for name in names:
            if name not in tensors:
                raise ValueError(f"Key {name} not found in checkpoint")
        return [tensors[name] for name in names]
    shard_count, entries = bundle_entries(prefix)
    shards: dict[int, bytes] = {}
    found = []
    for name in names:
        entry = entries.get(name)
        if entry is None:
            raise ValueError(f"Key {name} not found in checkpoint")
        if len(entry.slices):
            raise ValueError(f"{name} is saved in partial slices, which pytflite does not read")
        if entry.shard_id not in shards:
            with open(_data_path(prefix, entry.shard_id, shard_count), "rb") as file:
                shards[entry.shard_id] = file.read()
        chunk = shards[entry.shard_id][entry.offset : entry.offset + entry.size]
        found.append(_tensor(prefix, entry, chunk))
    return found


def _tensor(prefix: str, entry, chunk: bytes) -> tuple[DType, np.ndarray]:
    dtype = dtype_of_code(entry.dtype)
    shape = tuple(int(d.size) for d in entry.shape.dim)
    count = int(np.prod(shape, dtype=np.int64))
    if dtype.name == "string":
        lengths, position = [], 0
        for _ in range(count):
            length, position = read_varint(chunk, position)
            lengths.append(length)
        words = struct.pack(f"<{count}I", *lengths)
        body = chunk[position + 4 :]
        calculated = crc32c(words + chunk[position : position + 4] + body)
        values = np.empty(count, dtype=object)
        bounds = np.cumsum([0, *lengths])
        values[:] = [body[bounds[i] : bounds[i + 1]] for i in range(count)]
    else:
        calculated = crc32c(chunk)
        values = np.frombuffer(chunk, dtype=dtype.numpy.newbyteorder("<")).astype(dtype.numpy)
    if calculated != unmasked(entry.crc32c):
        raise ValueError(
            f"TensorBundle at {prefix} shard {entry.shard_id} ({entry.size} bytes): Checksum does not match: "
            f"stored {unmasked(entry.crc32c)} vs. calculated on the restored bytes {calculated}"
        )
    return dtype, values.reshape(shape)

"""TensorFlow's V1 checkpoint (what tf.raw_ops.Save writes and Restore reads): one table file
(sstable.py) whose entry under the empty key is a SavedTensorSlices holding every tensor's name, shape and
type, followed by one entry per tensor holding its values. An entry's key is TF's OrderedCode encoding of
(0, name, rank, (start, length) per dimension); Save always writes whole tensors, whose extents encode as
(0, -1). Values go in the TensorProto field of their type (float_val, int64_val, ...), as TF writes them.
"""

from __future__ import annotations

import glob

import numpy as np

from .dtypes import DType, dtype_of_code
from .node_def import VALUE_FIELDS, tensor_value
from .protos import SavedTensorSlices, TensorProto
from .sstable import read_table, write_table

_CHECKPOINT_VERSION = 1  # TF_CHECKPOINT_VERSION, the producer version TF records


def _ordered_string(text: bytes) -> bytes:
    """OrderedCode's string: 0x00 and 0xff escaped, then the 0x00 0x01 terminator."""
    escaped = bytearray()
    for byte in text:
        escaped += b"\x00\xff" if byte == 0 else b"\xff\x00" if byte == 0xFF else bytes([byte])
    return bytes(escaped) + b"\x00\x01"


def _ordered_number(value: int) -> bytes:
    """OrderedCode's increasing unsigned number: its byte count, then its big-endian bytes."""
    digits = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(digits)]) + digits


def _key(name: str, rank: int) -> bytes:
    """The key of a whole tensor's slice: (0, name, rank) and (start 0, length -1) per dimension."""
    return _ordered_number(0) + _ordered_string(name.encode()) + _ordered_number(rank) + b"\x80\x7f" * rank


def write_checkpoint(path: str, names: list[str], arrays: list[np.ndarray], dtypes: list[DType]) -> None:
    """Write the V1 checkpoint of tensors `names` (sorted by name, as TF's Save writes them)."""
    if len(set(names)) != len(names):
        raise ValueError("Save: a tensor name is given twice")
    header = SavedTensorSlices()
    header.meta.versions.producer = _CHECKPOINT_VERSION
    entries = []
    for name, array, dtype in sorted(zip(names, arrays, dtypes, strict=True), key=lambda item: item[0]):
        meta = header.meta.tensor.add(name=name, type=dtype.code)
        for size in array.shape:
            meta.shape.dim.add(size=int(size))
        extents = meta.slice.add()
        for _ in array.shape:
            extents.extent.add()
        entry = SavedTensorSlices()
        entry.data.name = name
        for _ in array.shape:
            entry.data.slice.extent.add()
        entry.data.slice.SetInParent()
        _fill(entry.data.data, array, dtype)
        entries.append((_key(name, array.ndim), entry.SerializeToString()))
    table = write_table([(b"", header.SerializeToString()), *entries])
    with open(path, "wb") as file:
        file.write(table)


def _fill(proto: TensorProto, array: np.ndarray, dtype: DType) -> None:
    field = getattr(proto, VALUE_FIELDS[dtype.name][0])
    flat = array.reshape(-1)
    if dtype.name == "string":
        field.extend(bytes(v) for v in flat)
    elif dtype.name in ("complex64", "complex128"):
        field.extend(np.stack([flat.real, flat.imag], axis=-1).reshape(-1).tolist())
    elif dtype.name in ("float16", "bfloat16"):
        field.extend(flat.view(np.uint16).tolist())
    else:
        field.extend(flat.tolist())


def read_checkpoint(pattern: str) -> dict[str, tuple[DType, np.ndarray]]:
    """Every tensor of the V1 checkpoint file(s) matching `pattern`: name -> (dtype, values)."""
    paths = sorted(glob.glob(pattern)) or [pattern]
    tensors: dict[str, tuple[DType, np.ndarray]] = {}
    for path in paths:
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError as error:
            raise ValueError(
                f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files for {pattern}"
            ) from error
        tensors.update(_tensors_of(data, path))
    return tensors


def _tensors_of(data: bytes, path: str) -> dict[str, tuple[DType, np.ndarray]]:
    entries = iter(read_table(data))
    key, value = next(entries, (None, None))
    if key != b"":
        raise ValueError(f"{path}: a checkpoint table without its SavedTensorSliceMeta entry")
    shapes = {}
    for meta in SavedTensorSlices.FromString(value).meta.tensor:
        if any(extent.HasField("length") for extent in _extents(meta)):
            raise ValueError(
                f"{path}: tensor {meta.name} is saved in partial slices, which pytflite does not read"
            )
        shapes[meta.name] = (dtype_of_code(meta.type), tuple(int(d.size) for d in meta.shape.dim))
    tensors = {}
    for _, value in entries:
        saved = SavedTensorSlices.FromString(value).data
        dtype, shape = shapes[saved.name]
        proto = TensorProto()
        proto.CopyFrom(saved.data)
        proto.dtype = dtype.code
        for size in shape:
            proto.tensor_shape.dim.add(size=size)
        tensors[saved.name] = (dtype, tensor_value(proto))
    return tensors


def _extents(meta):
    for sliced in meta.slice:
        yield from sliced.extent

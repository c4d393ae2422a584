"""Bounds-checked reading of an untrusted flatbuffer: the model reader's only way into the file.

flatbuffers' Python runtime follows offsets wherever they point: a read past the end raises a bare
struct.error, a negative position silently reads the file's tail, a NumPy view of a vector past the end
fails with a bare ValueError. Each accessor here checks its target before reading it, as flatbuffers' C++
Verifier checks a model before LiteRT reads it, and raises ModelError naming the table, the field and
the offset. `Table` fields are addressed by slot: members of an IntEnum per schema table, whose names
the messages use (model/reader.py declares them).
"""

from __future__ import annotations

import enum
import struct
from typing import Any

import flatbuffers
import numpy as np
from flatbuffers import number_types

from ..errors import ModelError

NOT_A_FLATBUFFER = "The model is not a valid Flatbuffer buffer"

BOOL, INT8, UINT8, INT32, UINT32, UINT64 = (struct.Struct(f"<{code}") for code in "?bBiIQ")
_I32, _U32, _U16 = struct.Struct("<i"), struct.Struct("<I"), struct.Struct("<H")


class FlatBuffer:
    """The file's bytes, and the layout of each vtable already checked (tables share vtables)."""

    __slots__ = ("data", "size", "vtables")

    def __init__(self, data: Any):
        self.data = data
        self.size = len(data)
        self.vtables: dict[int, tuple[int, tuple[int, ...]]] = {}  # offset -> (table size, field offsets)

    def root(self, what: str) -> Table:
        """The root table (the caller has checked that the file holds its 4-byte offset)."""
        return Table(self, _U32.unpack_from(self.data, 0)[0], what)


class Table:
    """One table whose vtable lies in the file and whose fields lie in the table; `what` names it."""

    __slots__ = ("file", "pos", "fields", "what")

    def __init__(self, file: FlatBuffer, pos: int, what: str):
        size = file.size
        if not 0 <= pos <= size - 4:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {what} table at offset {pos} is outside the {size}-byte file"
            )
        vtable = pos - _I32.unpack_from(file.data, pos)[0]
        layout = file.vtables.get(vtable)
        if layout is None:
            layout = file.vtables[vtable] = _check_vtable(file, vtable, what)
        table_size, self.fields = layout
        if pos + table_size > size:
            raise ModelError(f"{NOT_A_FLATBUFFER}: {what} table of {table_size} bytes runs past the file end")
        self.file, self.pos, self.what = file, pos, what

    def scalar(self, slot: enum.IntEnum, kind: struct.Struct, default: Any = 0) -> Any:
        """A scalar field (`kind` one of BOOL, INT8, ... above), or `default` when absent."""
        position = self._field(slot, kind.size)
        return kind.unpack_from(self.file.data, position)[0] if position else default

    def table(self, slot: enum.IntEnum, what: str) -> Table | None:
        """The table a table or union field points to, or None when absent."""
        target = self._target(slot)
        return Table(self.file, target, what) if target else None

    def tables(self, slot: enum.IntEnum, what: str) -> list[Table] | None:
        """The tables of a vector-of-tables field (None when absent); `what` names each, "{}" its index."""
        span = self.span(slot, 4)
        if span is None:
            return None
        start, length = span
        offsets = struct.unpack_from(f"<{length}I", self.file.data, start)
        return [Table(self.file, start + 4 * i + o, what.format(i)) for i, o in enumerate(offsets)]

    def int32s(self, slot: enum.IntEnum) -> tuple[int, ...] | None:
        """An int vector field as a tuple, or None when absent."""
        span = self.span(slot, 4)
        return None if span is None else struct.unpack_from(f"<{span[1]}i", self.file.data, span[0])

    def array(self, slot: enum.IntEnum, dtype: np.dtype) -> np.ndarray | None:
        """A vector field as a read-only NumPy view on the file (no copy), or None when absent."""
        span = self.span(slot, dtype.itemsize)
        return None if span is None else np.frombuffer(self.file.data, dtype, span[1], span[0])

    def string(self, slot: enum.IntEnum) -> str | None:
        """A string field (invalid UTF-8 replaced, as names are only shown), or None when absent."""
        span = self.span(slot, 1)
        if span is None:
            return None
        start, length = span
        return bytes(self.file.data[start : start + length]).decode("utf-8", errors="replace")

    def span(self, slot: enum.IntEnum, item_size: int = 1) -> tuple[int, int] | None:
        """(start, length) of a vector (or string) field whose elements all lie in the file, or None
        when absent."""
        target = self._target(slot)
        if not target:
            return None
        size = self.file.size
        if target > size - 4:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.what} {slot.name} vector at offset {target} is outside the "
                f"{size}-byte file"
            )
        length, start = _U32.unpack_from(self.file.data, target)[0], target + 4
        if start + length * item_size > size:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.what} {slot.name} vector of {length} elements at offset {start} "
                f"runs past the end of the {size}-byte file"
            )
        return start, length

    def _field(self, slot: enum.IntEnum, width: int) -> int:
        """The file offset of a field's `width` bytes, or 0 when the field is absent."""
        fields = self.fields
        if slot >= len(fields) or not fields[slot]:
            return 0
        position = self.pos + fields[slot]
        if position + width > self.file.size:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.what} {slot.name} field of {width} bytes at offset {position} "
                f"runs past the end of the {self.file.size}-byte file"
            )
        return position

    def _target(self, slot: enum.IntEnum) -> int:
        """Where an offset field points (checked by the reader of the target), or 0 when absent."""
        position = self._field(slot, 4)
        return position + _U32.unpack_from(self.file.data, position)[0] if position else 0


def _check_vtable(file: FlatBuffer, vtable: int, what: str) -> tuple[int, tuple[int, ...]]:
    """A vtable inside the file whose fields lie inside its table: (table size, field offsets)."""
    data, size = file.data, file.size
    if not 0 <= vtable <= size - 4 or vtable % 2:
        raise ModelError(
            f"{NOT_A_FLATBUFFER}: {what} vtable at offset {vtable} is outside the {size}-byte file"
        )
    vtable_size, table_size = _U16.unpack_from(data, vtable)[0], _U16.unpack_from(data, vtable + 2)[0]
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > size:
        raise ModelError(f"{NOT_A_FLATBUFFER}: {what} vtable of {vtable_size} bytes runs past the file end")
    if table_size < 4:
        raise ModelError(f"{NOT_A_FLATBUFFER}: {what} table size {table_size} is below 4 bytes")
    fields = struct.unpack_from(f"<{(vtable_size - 4) // 2}H", data, vtable + 4)
    for slot, field in enumerate(fields):
        if field and not 4 <= field < table_size:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {what} field {slot} at offset {field} is outside its {table_size}-byte table"
            )
    return table_size, fields


class CheckedTable(flatbuffers.table.Table):
    """flatbuffers' own Table API over a checked `Table`, every read checked too: for code written
    against that API, which reads fields the reader does not know (model/options.py's read_options)."""

    __slots__ = ("what",)

    def __init__(self, table: Table):
        super().__init__(table.file.data, table.pos)
        self.what = table.what

    def Get(self, flags: Any, off: int) -> Any:
        self._check(off, flags.bytewidth, "field")
        return super().Get(flags, off)

    def Indirect(self, off: int) -> int:
        return off + self.Get(number_types.UOffsetTFlags, off)

    def String(self, off: int) -> bytes:
        start, length = self._vector(off)
        self._check(start, length, "string")
        return bytes(self.Bytes[start : start + length])

    def VectorLen(self, off: int) -> int:
        return self._vector(self.Pos + off)[1]

    def Vector(self, off: int) -> int:
        return self._vector(self.Pos + off)[0]

    def _vector(self, off: int) -> tuple[int, int]:
        """(start, length) of the vector or string an offset at `off` points to; the elements are
        checked by the caller (NumPy checks a view's size: the element type is the caller's)."""
        target = self.Indirect(off)
        return target + 4, self.Get(number_types.UOffsetTFlags, target)

    def _check(self, position: int, width: int, what: str) -> None:
        if not 0 <= position <= len(self.Bytes) - width:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.what} {what} of {width} bytes at offset {position} is outside the "
                f"{len(self.Bytes)}-byte file"
            )

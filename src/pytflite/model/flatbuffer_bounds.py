"""Bounds-checked reading of an untrusted flatbuffer: the model reader's only way into the file.

flatbuffers' Python runtime follows offsets wherever they point: a read past the end raises a bare
struct.error, a negative position silently reads the file's tail, a NumPy view of a vector past the end
fails with a bare ValueError. Each accessor here checks its target before reading it, as flatbuffers' C++
Verifier checks a model before LiteRT reads it, and raises ModelError naming the table, the field and
the offset. `Table` fields are addressed by slot: members of an IntEnum per schema table, whose names
the messages use (model/reader.py declares them). TableFields reads the fields of the tables a model
has hundreds of (tensors, operators, option tables) in one unpack each.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ModelError

NOT_A_FLATBUFFER = "The model is not a valid Flatbuffer buffer"

BOOL, INT8, UINT8, INT32, UINT32, UINT64 = (struct.Struct(f"<{code}") for code in "?bBiIQ")
_I32, _U32, _U16 = struct.Struct("<i"), struct.Struct("<I"), struct.Struct("<H")


class FlatBuffer:
    """The file's bytes, and the layout of each vtable already checked (tables share vtables)."""

    __slots__ = ("data", "size", "vtables", "plans")

    def __init__(self, data: Any):
        self.data = data
        self.size = len(data)
        self.vtables: dict[int, tuple[int, tuple[int, ...]]] = {}  # offset -> (table size, field offsets)
        self.plans: dict[tuple[TableFields, int], tuple] = {}  # (fields, vtable) -> TableFields' plan

    def root(self, what: str) -> Table:
        """The root table (the caller has checked that the file holds its 4-byte offset)."""
        return Table(self, _U32.unpack_from(self.data, 0)[0], what)


class Table:
    """One table whose vtable lies in the file and whose fields lie in the table. `what` names it in
    messages; with an `index`, `what` is a template whose "{}" the index fills (formatted only for a
    message: a model's tables are many, its errors few)."""

    __slots__ = ("file", "pos", "vtable", "fields", "what", "index")

    def __init__(self, file: FlatBuffer, pos: int, what: str, index: int | None = None):
        self.file, self.pos, self.what, self.index = file, pos, what, index
        size = file.size
        if not 0 <= pos <= size - 4:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.name} table at offset {pos} is outside the {size}-byte file"
            )
        vtable = pos - _I32.unpack_from(file.data, pos)[0]
        layout = file.vtables.get(vtable)
        if layout is None:
            layout = file.vtables[vtable] = _check_vtable(file, vtable, self.name)
        table_size, self.fields = layout
        if pos + table_size > size:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.name} table of {table_size} bytes runs past the file end"
            )
        self.vtable = vtable

    @property
    def name(self) -> str:
        """What the messages call this table."""
        return self.what if self.index is None else self.what.format(self.index)

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
        return [Table(self.file, start + 4 * i + o, what, i) for i, o in enumerate(offsets)]

    def int32s(self, slot: enum.IntEnum) -> tuple[int, ...] | None:
        """An int vector field as a tuple, or None when absent."""
        return int32s_at(self, self._target(slot), slot.name)

    def array(self, slot: enum.IntEnum, dtype: np.dtype) -> np.ndarray | None:
        """A vector field as a read-only NumPy view on the file (no copy), or None when absent."""
        target = self._target(slot)
        return array_at(self, target, dtype, slot.name) if target else None

    def string(self, slot: enum.IntEnum) -> str | None:
        """A string field (invalid UTF-8 replaced, as names are only shown), or None when absent."""
        return string_at(self, self._target(slot), slot.name)

    def span(self, slot: enum.IntEnum, item_size: int = 1) -> tuple[int, int] | None:
        """(start, length) of a vector (or string) field whose elements all lie in the file, or None
        when absent."""
        target = self._target(slot)
        return vector_at(self, target, item_size, slot.name) if target else None

    def _field(self, slot: enum.IntEnum, width: int) -> int:
        """The file offset of a field's `width` bytes, or 0 when the field is absent."""
        fields = self.fields
        if slot >= len(fields) or not fields[slot]:
            return 0
        position = self.pos + fields[slot]
        if position + width > self.file.size:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {self.name} {slot.name} field of {width} bytes at offset {position} "
                f"runs past the end of the {self.file.size}-byte file"
            )
        return position

    def _target(self, slot: enum.IntEnum) -> int:
        """Where an offset field points (checked by the reader of the target), or 0 when absent."""
        position = self._field(slot, 4)
        return position + _U32.unpack_from(self.file.data, position)[0] if position else 0


def vector_at(owner: Table, target: int, item_size: int, field: str) -> tuple[int, int]:
    """(start, length) of the vector (or string) at `target` (where `owner`'s `field` points), all of
    whose elements lie in the file."""
    file = owner.file
    size = file.size
    if not 0 < target <= size - 4:
        raise ModelError(
            f"{NOT_A_FLATBUFFER}: {owner.name} {field} vector at offset {target} is outside the {size}-byte file"
        )
    length, start = _U32.unpack_from(file.data, target)[0], target + 4
    if start + length * item_size > size:
        raise ModelError(
            f"{NOT_A_FLATBUFFER}: {owner.name} {field} vector of {length} elements at offset {start} runs past "
            f"the end of the {size}-byte file"
        )
    return start, length


def int32s_at(owner: Table, target: int, field: str) -> tuple[int, ...] | None:
    """The int vector at `target` as a tuple, or None when `target` is 0 (the field is absent)."""
    if not target:
        return None
    start, length = vector_at(owner, target, 4, field)
    return struct.unpack_from(f"<{length}i", owner.file.data, start)


def array_at(owner: Table, target: int, dtype: np.dtype, field: str) -> np.ndarray:
    """The vector at `target` as a read-only NumPy view on the file (no copy)."""
    start, length = vector_at(owner, target, dtype.itemsize, field)
    return np.frombuffer(owner.file.data, dtype, length, start)


def string_at(owner: Table, target: int, field: str) -> str | None:
    """The string at `target` (invalid UTF-8 replaced), or None when `target` is 0 (absent)."""
    if not target:
        return None
    start, length = vector_at(owner, target, 1, field)
    return bytes(owner.file.data[start : start + length]).decode("utf-8", errors="replace")


OFFSET = "offset"  # a TableFields kind: the field is an offset to a table, vector or string


class TableFields:
    """All the fields of one schema table read at once: one struct unpack per table where `Table`'s
    accessors take a call and a check per field. A model's tables of one kind share a few vtables, so
    the unpacking is planned once per vtable (FlatBuffer.plans) and reading a table is one unpack and
    a bounds check. `fields` are (slot, struct code or OFFSET, default); `read` returns each field's
    value in that order: a scalar (its default when absent), or for OFFSET the file position the field
    points to (0 when absent; the reader of the target checks it, as Table.table and Table.span do)."""

    __slots__ = ("fields", "defaults")

    def __init__(self, fields: Sequence[tuple[enum.IntEnum, str, Any]]):
        self.fields = tuple(fields)
        self.defaults = [0 if code == OFFSET else default for _, code, default in self.fields]

    def read(self, table: Table) -> list[Any]:
        file = table.file
        plan = file.plans.get((self, table.vtable))
        if plan is None:
            plan = file.plans[self, table.vtable] = self._plan(table.fields)
        groups, offsets, end = plan
        pos = table.pos
        if pos + end > file.size:
            self._overrun(table)
        values = self.defaults.copy()
        data = file.data
        for unpack, start, indices in groups:
            for index, value in zip(indices, unpack(data, pos + start), strict=True):
                values[index] = value
        for index, field_offset in offsets:
            values[index] += pos + field_offset
        return values

    def _plan(self, layout: tuple[int, ...]) -> tuple[list, list[tuple[int, int]], int]:
        """For one vtable: groups of fields stored side by side (struct unpack_from, start, field
        indices), the OFFSET fields' (index, offset in the table), and the end of the last field."""
        present = sorted(
            (layout[slot], index, "I" if code == OFFSET else code)
            for index, (slot, code, _) in enumerate(self.fields)
            if slot < len(layout) and layout[slot]
        )
        groups: list[tuple[Any, int, list[int]]] = []
        group_start = group_end = -1
        group_format, group_indices = "", []
        for offset, index, code in present:
            width = struct.calcsize(f"<{code}")
            if offset < group_end or not group_indices:  # overlapping fields (a hostile file) read apart
                if group_indices:
                    groups.append((struct.Struct(group_format).unpack_from, group_start, group_indices))
                group_start, group_end, group_format, group_indices = offset, offset, "<", []
            group_format += "x" * (offset - group_end) + code
            group_end = offset + width
            group_indices.append(index)
        if group_indices:
            groups.append((struct.Struct(group_format).unpack_from, group_start, group_indices))
        offsets = [(index, offset) for offset, index, code in present if self.fields[index][1] == OFFSET]
        end = max((offset + struct.calcsize(f"<{code}") for offset, _, code in present), default=0)
        return groups, offsets, end

    def _overrun(self, table: Table) -> None:
        for slot, code, _ in self.fields:
            table._field(slot, struct.calcsize("<I" if code == OFFSET else f"<{code}"))  # raises the error
        raise AssertionError("a field runs past the file end, yet each lies inside it")


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

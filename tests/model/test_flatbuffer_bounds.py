"""TableFields: every field of a table read at once, as the per-field accessors read them."""

from __future__ import annotations

import enum
import struct

import pytest

from pytflite.errors import ModelError
from pytflite.model.flatbuffer_bounds import OFFSET, FlatBuffer, Table, TableFields

Slot = enum.IntEnum("Slot", "count flag child weight", start=0)
FIELDS = TableFields(
    [(Slot.count, "i", -1), (Slot.flag, "?", False), (Slot.child, OFFSET, None), (Slot.weight, "f", 0.5)]
)


def table_bytes(field_offsets: list[int], body: bytes, tail: bytes = b"") -> tuple[bytes, int]:
    """A file of one vtable (`field_offsets`, 0 for an absent field) and its table (soffset + body)."""
    vtable = struct.pack(
        f"<HH{len(field_offsets)}H", 4 + 2 * len(field_offsets), 4 + len(body), *field_offsets
    )
    table_position = 4 + len(vtable)
    data = struct.pack("<I", table_position) + vtable + struct.pack("<i", len(vtable)) + body + tail
    return data, table_position


def read(data: bytes, position: int) -> list:
    return FIELDS.read(Table(FlatBuffer(data), position, "test table"))


def test_present_fields_are_read_and_absent_ones_take_their_defaults():
    data, position = table_bytes([4, 0, 8, 0], struct.pack("<iI", 7, 4))
    count, flag, child, weight = read(data, position)
    assert (count, flag, weight) == (7, False, 0.5)
    assert child == position + 8 + 4  # where the offset field points: its own position plus its value


def test_a_second_vtable_of_the_same_file_gets_its_own_plan():
    first, position = table_bytes([4, 8], struct.pack("<i?xxx", 3, True))
    file = FlatBuffer(first)
    assert FIELDS.read(Table(file, position, "t"))[:2] == [3, True]
    assert len(file.plans) == 1
    other, other_position = table_bytes([0, 0, 0, 4], struct.pack("<f", 2.0))
    assert read(other, other_position) == [-1, False, 0, 2.0]


def test_overlapping_fields_of_a_hostile_file_are_read_apart():
    data, position = table_bytes([4, 4, 0, 4], struct.pack("<i", 0x3F800001))
    count, flag, _, weight = read(data, position)
    assert count == 0x3F800001 and flag is True and weight == struct.unpack("<f", struct.pack("<i", count))[0]


def test_a_field_running_past_the_file_end_names_the_field():
    data, position = table_bytes([0, 0, 0, 4], b"\0")  # weight's 4 bytes start at the last byte of the file
    with pytest.raises(ModelError, match="test table weight field of 4 bytes at offset"):
        read(data, position)

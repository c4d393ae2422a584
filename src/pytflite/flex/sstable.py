"""The table file format of TensorFlow's V1 checkpoints (LevelDB's, as tensorflow/core/lib/io/table
keeps it): sorted key/value entries in data blocks, an empty metaindex block, an index block and a
footer. Written as TF writes it (blocks of 256 KiB, a restart point every 16 entries, no compression,
masked CRC32C block checksums), so that a file pytflite writes is the one TF would.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

_MAGIC = 0xDB4775248B80FB57
_BLOCK_SIZE = 262144
_RESTART_INTERVAL = 16
_FOOTER_SIZE = 48  # two block handles padded to 40 bytes, then the magic number


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli) of `data`."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    """LevelDB stores checksums rotated and offset, so that a CRC of data holding CRCs stays strong."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def unmasked(stored: int) -> int:
    """The CRC a masked one was made from."""
    rotated = (stored - 0xA282EAD8) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint in a checkpoint table")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


class _Block:
    """One block being written: prefix-compressed entries with a restart point every `interval`."""

    def __init__(self, interval: int):
        self.interval = interval
        self.buffer = bytearray()
        self.restarts = [0]
        self.count = 0
        self.last_key = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count < self.interval:
            limit = min(len(key), len(self.last_key))
            while shared < limit and key[shared] == self.last_key[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buffer))
            self.count = 0
        self.buffer += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self.buffer += key[shared:] + value
        self.last_key = key
        self.count += 1

    def size(self) -> int:
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        restarts = b"".join(struct.pack("<I", r) for r in self.restarts)
        return bytes(self.buffer) + restarts + struct.pack("<I", len(self.restarts))


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    """A short key >= start and < limit (LevelDB's bytewise comparator)."""
    common = 0
    while common < min(len(start), len(limit)) and start[common] == limit[common]:
        common += 1
    if common < min(len(start), len(limit)) and start[common] < 0xFF and start[common] + 1 < limit[common]:
        return start[:common] + bytes([start[common] + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    """A short key >= key: its first byte that is not 0xff, incremented."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


def write_table(entries: list[tuple[bytes, bytes]]) -> bytes:
    """The table of `entries`, which must be sorted by key."""
    out = bytearray()
    index = _Block(1)
    block = _Block(_RESTART_INTERVAL)
    pending: tuple[int, int] | None = None  # the handle of a flushed block awaiting its index entry
    last_key = b""

    def write_block(contents: bytes) -> tuple[int, int]:
        handle = (len(out), len(contents))
        trailer = b"\x00"  # no compression
        out.extend(contents + trailer + struct.pack("<I", masked(crc32c(contents + trailer))))
        return handle

    for key, value in entries:
        if pending is not None:
            index.add(_shortest_separator(last_key, key), varint(pending[0]) + varint(pending[1]))
            pending = None
        block.add(key, value)
        last_key = key
        if block.size() >= _BLOCK_SIZE:
            pending = write_block(block.finish())
            block = _Block(_RESTART_INTERVAL)
    if block.buffer:
        pending = write_block(block.finish())
    if pending is not None:
        index.add(_short_successor(last_key), varint(pending[0]) + varint(pending[1]))
    metaindex = write_block(_Block(_RESTART_INTERVAL).finish())
    index_handle = write_block(index.finish())
    handles = b"".join(varint(v) for v in (*metaindex, *index_handle))
    out += handles.ljust(_FOOTER_SIZE - 8, b"\x00") + struct.pack("<Q", _MAGIC)
    return bytes(out)


def _block_entries(data: bytes, offset: int, size: int) -> Iterator[tuple[bytes, bytes]]:
    if offset + size + 5 > len(data):
        raise ValueError("a checkpoint table block lies past the end of the file")
    contents = data[offset : offset + size]
    if data[offset + size] != 0:
        raise ValueError("a compressed checkpoint table block: TF writes none, pytflite reads none")
    (count,) = struct.unpack_from("<I", contents, size - 4)
    end = size - 4 - 4 * count
    position, key = 0, b""
    while position < end:
        shared, position = read_varint(contents, position)
        unshared, position = read_varint(contents, position)
        length, position = read_varint(contents, position)
        key = key[:shared] + contents[position : position + unshared]
        position += unshared
        yield key, contents[position : position + length]
        position += length


def read_table(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of a table, in order; ValueError for a file that is not one."""
    if len(data) < _FOOTER_SIZE or struct.unpack_from("<Q", data, len(data) - 8)[0] != _MAGIC:
        raise ValueError("not a TensorFlow checkpoint table (no table magic number at its end)")
    footer = data[len(data) - _FOOTER_SIZE :]
    position = 0
    values = []
    for _ in range(4):
        value, position = read_varint(footer, position)
        values.append(value)
    for _, handle in _block_entries(data, values[2], values[3]):
        offset, at = read_varint(handle, 0)
        size, _ = read_varint(handle, at)
        yield from _block_entries(data, offset, size)

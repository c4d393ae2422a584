"""The "model_control_dependencies" metadata: explicit ordering edges between nodes, per subgraph.

Converters that reorder ops for memory (rematerialization) store, for every subgraph, a list of
(from, to) node pairs that delegate partitioning must respect. The encoding is TFLite's: unsigned
integers as little-endian base-128 varints, signed ones zigzag-encoded first; a version (1), then the
number of subgraphs, then per subgraph the number of edges and each edge's two node indices.
"""

from __future__ import annotations

METADATA_KEY = "model_control_dependencies"
VERSION = 1


def parse_control_dependencies(data: bytes) -> list[list[tuple[int, int]]] | None:
    """Edges per subgraph, or None when the bytes are not a valid encoding (TFLite then ignores them)."""
    reader = _VarintReader(data)
    try:
        if reader.unsigned() != VERSION:
            return None
        subgraphs = [
            [(reader.signed(), reader.signed()) for _ in range(reader.unsigned())]
            for _ in range(reader.unsigned())
        ]
    except IndexError:
        return None
    return subgraphs if reader.position == len(data) else None


class _VarintReader:
    def __init__(self, data: bytes):
        self.data = data
        self.position = 0

    def unsigned(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.data[self.position]  # IndexError: truncated
            self.position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value & 0xFFFFFFFF

    def signed(self) -> int:
        value = self.unsigned()
        return -(value // 2) - 1 if value % 2 else value // 2

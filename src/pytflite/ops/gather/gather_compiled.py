"""GATHER's row copies compiled by numba (ops/jit.py): the positions bounds-checked and their rows copied
in one pass, where the NumPy path reduces the positions for their range, then takes. Rows are copied as
bytes, so one signature serves every element type. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba

from ..jit import OPTIONS

_TABLE = numba.types.Array(numba.uint8, 3, "C", readonly=True)


@numba.njit(
    [
        numba.int64(_TABLE, positions[::1], numba.uint8[:, :, ::1])
        for positions in (numba.int16, numba.int32, numba.int64)
    ],
    **OPTIONS,
)
def gather_rows(table, positions, out):
    """out[o, i] = table[o, positions[i]] for a table [outer, rows, bytes] and out [outer, positions,
    bytes]; the index of the first position outside [0, rows), with nothing copied, else -1."""
    outer, rows, width = table.shape
    for i in range(positions.size):
        position = positions[i]
        if position < 0 or position >= rows:
            return i
    for o in range(outer):
        for i in range(positions.size):
            source, target = table[o, positions[i]], out[o, i]
            for j in range(width):
                target[j] = source[j]
    return -1

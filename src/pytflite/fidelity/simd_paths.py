"""Which code path of TFLite's quantized elementwise kernels computes each output element: its broadcast
walk, the SIMD blocks along each row and the scalar code that finishes the row. The blocks round as NEON
(or LiteRT's SSE translation of it) does, the scalar code otherwise (ops/elementwise/quantized.py)."""

from __future__ import annotations

import numpy as np

SCALAR, BLOCK, BROADCAST_BLOCK = "scalar", "block", "broadcast block"


def broadcast_walk(shape1, shape2) -> tuple[str, tuple[int, ...] | None]:
    """TFLite's ProcessBroadcastShapes: ("elementwise", None) when the shapes match (up to leading 1s),
    ("fivefold", (y0, y1, y2, y3, y4)) when the output is the nested loops y0 > y1 > y2 > y3 > y4 with
    contiguous rows of y4 elements (y4 == 1: rows of y3 against one broadcast value), else ("generic",
    None)."""
    rank = max(len(shape1), len(shape2))
    a = (1,) * (rank - len(shape1)) + tuple(shape1)
    b = (1,) * (rank - len(shape2)) + tuple(shape2)
    if a == b:
        return "elementwise", None
    i = rank - 1
    while a[i] == b[i]:
        i -= 1
    if a[i] != 1:  # the second input broadcasts along the innermost differing dimension: swap
        a, b = b, a
    y = [1, 1, 1, 1, 1]
    i = rank - 1
    for slot, same in ((4, True), (3, None), (2, True), (1, False), (0, True)):
        while i >= 0 and (a[i] == b[i] if same else (a[i] == 1 if same is None else b[i] == 1)):
            y[slot] *= max(a[i], b[i])
            i -= 1
    return ("generic", None) if i >= 0 else ("fivefold", tuple(y))


def path_groups(walk, size: int, block: int, broadcast_block: int) -> list[tuple[str, np.ndarray | None]]:
    """Which code path computes each output element: [(path, None)] when one path computes them all, else
    the main path and (path, flat positions) for the others (the scalar tails of the SIMD rows).
    `block` / `broadcast_block`: the SIMD widths of the elementwise and the scalar-broadcast loops (0:
    none)."""
    kind, y = walk
    if kind == "elementwise":
        row, step, simd = size, block, BLOCK
    elif kind == "fivefold" and y[4] > 1:
        row, step, simd = y[4], block, BLOCK
    elif kind == "fivefold":
        row, step, simd = y[3], broadcast_block, BROADCAST_BLOCK
    else:
        return [(SCALAR, None)]
    whole = row - row % step if step else 0
    if whole == 0 or size == 0:
        return [(SCALAR, None)]
    if whole == row:
        return [(simd, None)]
    return [(simd, None), (SCALAR, np.flatnonzero(np.arange(size) % row >= whole))]

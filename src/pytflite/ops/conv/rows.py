"""Per-channel values applied over [..., C] outputs in long rows, so that invoke allocates nothing.

A ufunc whose operands broadcast along an inner dimension of at most half its buffer (np.getbufsize()
values) runs buffered in NumPy 2: `out += bias` over [pixels, C] allocates an iteration buffer at every
call and copies the bias into it, slower than the same sum over longer rows. So prepare tiles each
per-channel constant (a bias, a scale) over a *row* of k pixels, k * C just over np.getbufsize() / 2
(rows are read at every invoke: no longer), or a nearby divisor of the pixels. Invoke views the output
as [rows, k * C] with the row broadcast over it (no buffer: the inner dimension is long) and, when k
does not divide the pixels, the last pixels as a 1-D tail against the row's start.
"""

from __future__ import annotations

from functools import partial

import numpy as np


def row_pixels(pixels: int, channels: int) -> int:
    """How many pixels a row holds: the fewest that fill more than half a buffer, or, where one does not
    exceed _LONGEST values, a divisor of `pixels` (no tail); all of them when there are fewer."""
    channels = max(channels, 1)
    fewest = np.getbufsize() // 2 // channels + 1
    if pixels <= fewest:
        return max(pixels, 1)
    most = min(pixels, max(fewest, _LONGEST // channels))
    return next((k for k in range(fewest, most + 1) if pixels % k == 0), fewest)


# The longest row a divisor of the pixels may make (values): a tail costs a call, a row its memory.
_LONGEST = 32768


def channel_row(values: np.ndarray, pixels: int, dtype=None) -> np.ndarray:
    """`values` [C] (any shape of C values) tiled over a row of `pixels` pixels' outputs."""
    flat = np.asarray(values, dtype).reshape(-1)
    return np.tile(flat, row_pixels(pixels, flat.size))


def fill_row(row: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A channel_row of run-time values, written into the preallocated `row`; returns it."""
    np.copyto(row.reshape(-1, values.size), values.reshape(-1), casting="unsafe")
    return row


def apply_row(ufunc, a: np.ndarray, row: np.ndarray, out: np.ndarray) -> None:
    """out = ufunc(a, the row repeated): `a` and `out` C-contiguous [..., C], as many values, `out` may be
    `a`; `row` from channel_row for their pixels."""
    for x, r, o in _row_operands(a, row, out):
        ufunc(x, r, out=o)


def row_calls(ufunc, a: np.ndarray, row: np.ndarray, out: np.ndarray) -> list:
    """apply_row as calls to make later."""
    return [partial(ufunc, x, r, out=o) for x, r, o in _row_operands(a, row, out)]


def bias_and_clamp_calls(row, constant: bool, values, target: np.ndarray, clamp, out: np.ndarray) -> list:
    """A float convolution's last calls: the bias `row` added to `target` (refilled from the
    run-time `values` first when it is not `constant`; none when `row` is None), then `clamp` on `out`."""
    calls = []
    if row is not None:
        if not constant:
            calls.append(partial(fill_row, row, values))
        calls += row_calls(np.add, target, row, target)
    if clamp is not None:
        calls.append(partial(clamp, out))
    return calls


def _row_operands(a: np.ndarray, row: np.ndarray, out: np.ndarray) -> tuple[tuple, ...]:
    """apply_row's (a, row, out) operands: [rows, length] views against the row, and a 1-D tail against
    the row's start when the row's length does not divide the size."""
    length = row.shape[0]
    size = out.size
    if size == length:  # one row: 1-D
        target = out.reshape(-1)
        return ((target if a is out else a.reshape(-1), row, target),)
    whole = size - size % length
    if whole == size:
        target = out.reshape(-1, length)
        return ((target if a is out else a.reshape(-1, length), row, target),)
    a, out = a.reshape(-1), out.reshape(-1)
    tail = (a[whole:], row[: size - whole], out[whole:])
    if not whole:
        return (tail,)
    return ((a[:whole].reshape(-1, length), row, out[:whole].reshape(-1, length)), tail)

"""widened_ufunc: a per-channel broadcast ([C] against [N,H,W,C]) computed over wide rows, several times faster."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

# Rows this wide keep NumPy's inner loop long when one operand repeats along the leading dimensions.
_WIDE_ROW = 8192


def widened_ufunc(ufunc: np.ufunc, first, second, shape: tuple[int, ...]) -> Callable[..., Any]:
    """`ufunc`, or a faster equivalent for a per-channel broadcast: one operand has the output's shape,
    the other its trailing dimensions (say [C] against [N,H,W,C]). NumPy loops over rows of only C
    elements there; viewing the output as rows of C*k elements against the small operand tiled k times
    (once in prepare when it is constant) computes the same values several times faster."""
    total = math.prod(shape)
    if total < 2 * _WIDE_ROW or first.dtype.kind not in "biufc":
        return ufunc
    if first.shape == shape and _is_trailing(second.shape, shape):
        small, small_first = second, False
    elif second.shape == shape and _is_trailing(first.shape, shape):
        small, small_first = first, True
    else:
        return ufunc
    inner = math.prod(small.shape)
    if inner >= _WIDE_ROW // 4:
        return ufunc
    rows = total // inner
    repeat = max(k for k in range(1, _WIDE_ROW // inner + 1) if rows % k == 0)
    if repeat == 1:
        return ufunc
    wide = (rows // repeat, inner * repeat)
    tiled = np.tile(small.data.reshape(-1), repeat) if small.is_constant_or_persistent else None

    def compute(a, b, out):
        row = tiled if tiled is not None else np.tile((a if small_first else b).reshape(-1), repeat)
        if small_first:
            ufunc(row, b.reshape(wide), out=out.reshape(wide))
        else:
            ufunc(a.reshape(wide), row, out=out.reshape(wide))

    return compute


def _is_trailing(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """`small` without its leading 1s is a proper suffix of `shape` (and so broadcasts along the rest)."""
    start = 0
    while start < len(small) and small[start] == 1:
        start += 1
    core = small[start:]
    return 0 < len(core) < len(shape) and tuple(shape[len(shape) - len(core) :]) == core

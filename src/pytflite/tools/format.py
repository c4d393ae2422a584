"""Short text forms of tensors and arrays shared by the commands' output."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def array_summary(value: np.ndarray) -> str:
    """dtype[shape] and min / max / mean / std (non-finite counts when present), or the values if few."""
    value = np.asarray(value)
    head = f"{value.dtype.name}{shape_text(value.shape)}"
    if value.size == 0:
        return head + " (empty)"
    if value.dtype.kind in "OSUV":
        items = value.reshape(-1)[:3].tolist()
        return head + f" {items}{' ...' if value.size > 3 else ''}"
    if value.dtype.kind == "c":
        value = np.abs(value)
        head += " |z|"
    numbers = value.astype(np.float64)
    finite = np.isfinite(numbers)
    text = head
    if value.size <= 6:
        text += " " + np.array2string(value.reshape(-1), precision=6, separator=", ")
    if finite.any():
        shown = numbers[finite]
        text += f" min {shown.min():.6g} max {shown.max():.6g} mean {shown.mean():.6g} std {shown.std():.6g}"
    bad = value.size - int(finite.sum())
    if bad:
        nans = int(np.isnan(numbers).sum())
        text += f" ({nans} nan, {bad - nans} inf)"
    return text


def table(rows: Sequence[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """Columns padded to their widest cell; numbers right-aligned."""
    cells = [[str(c) for c in row] for row in ([header] if header else []) + list(rows)]
    if not cells:
        return ""
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(max(map(len, cells)))]
    numeric = [
        all(_is_number(row[i]) for row in cells[1 if header else 0 :] if i < len(row))
        for i in range(len(widths))
    ]
    lines = []
    for row in cells:
        lines.append(
            "  ".join(
                cell.rjust(widths[i]) if numeric[i] else cell.ljust(widths[i]) for i, cell in enumerate(row)
            ).rstrip()
        )
    return "\n".join(lines)


def _is_number(text: str) -> bool:
    try:
        float(text.rstrip("%x").replace(",", ""))
    except ValueError:
        return False
    return True


def human_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"

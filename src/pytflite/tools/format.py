"""Text tables and byte counts shared by the commands' output (tensor summaries: pytflite.debug)."""

from __future__ import annotations

from collections.abc import Sequence


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

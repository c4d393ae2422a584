"""A labelled horizontal bar chart rendered to PNG with NumPy, for `pytflite profile --plot`.

matplotlib is not a dependency; a chart of op types against milliseconds needs only bars and short
upper-case labels, so this draws them with a 5x7 bitmap font (lower case is shown as upper case).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .png import encode_png

# 5x7 glyphs, one string of 7 rows per character; '#' is ink.
_GLYPHS = {
    "A": ".###.#...##...#######...##...##...#",
    "B": "####.#...##...#####.#...##...#####.",
    "C": ".###.#...##....#....#....#...#.###.",
    "D": "####.#...##...##...##...##...#####.",
    "E": "######....#....####.#....#....#####",
    "F": "######....#....####.#....#....#....",
    "G": ".###.#...##....#.####...##...#.####",
    "H": "#...##...##...#######...##...##...#",
    "I": ".###...#....#....#....#....#...###.",
    "J": "..###...#....#....#....#.#..#..##..",
    "K": "#...##..#.#.#..##...#.#..#..#.#...#",
    "L": "#....#....#....#....#....#....#####",
    "M": "#...###.###.#.##...##...##...##...#",
    "N": "#...##...###..##.#.##..###...##...#",
    "O": ".###.#...##...##...##...##...#.###.",
    "P": "####.#...##...#####.#....#....#....",
    "Q": ".###.#...##...##...##.#.##..#..##.#",
    "R": "####.#...##...#####.#.#..#..#.#...#",
    "S": ".#####....#.....###.....#....#####.",
    "T": "#####..#....#....#....#....#....#..",
    "U": "#...##...##...##...##...##...#.###.",
    "V": "#...##...##...##...##...#.#.#...#..",
    "W": "#...##...##...##.#.##.#.##.#.#.#.#.",
    "X": "#...##...#.#.#...#...#.#.#...##...#",
    "Y": "#...##...#.#.#...#....#....#....#..",
    "Z": "#####....#...#...#...#...#....#####",
    "0": ".###.#...##..###.#.###..##...#.###.",
    "1": "..#...##....#....#....#....#...###.",
    "2": ".###.#...#....#...#...#...#...#####",
    "3": "#####...#...#.....#.....##...#.###.",
    "4": "...#...##..#.#.#..#.#####...#....#.",
    "5": "#####.....####.....#....##...#.###.",
    "6": "..##..#...#....####.#...##...#.###.",
    "7": "#####....#...#...#...#....#....#...",
    "8": ".###.#...##...#.###.#...##...#.###.",
    "9": ".###.#...##...#.####....#...#..##..",
    " ": "...................................",
    "_": "..............................#####",
    ".": "..........................##...##..",
    ",": ".....................##....#...#...",
    ":": "......##...##........##...##.......",
    "%": "##...##..#...#...#...#...#..##...##",
    "/": ".........#...#...#...#...#.........",
    "-": "...............#####...............",
    "+": ".......#....#..#####..#....#.......",
    "(": "...#...#...#....#....#.....#.....#.",
    ")": ".#.....#.....#....#....#...#...#...",
    "[": ".###..#....#....#....#....#....###.",
    "]": ".###....#....#....#....#....#..###.",
    "#": ".#.#..#.#.#####.#.#.#####.#.#..#.#.",
    "=": "..........#####.....#####..........",
    "*": ".......#..#.#.#.###.#.#.#..#.......",
    "?": ".###.#...#....#...#...#.........#..",
    "'": "..#....#...#.......................",
}
_GLYPH_W, _GLYPH_H = 5, 7
_FONT = {
    char: np.array([c == "#" for c in rows.ljust(35, ".")], dtype=bool).reshape(_GLYPH_H, _GLYPH_W)
    for char, rows in _GLYPHS.items()
}

_BACKGROUND = (255, 255, 255)
_INK = (32, 32, 32)
_GRID = (225, 225, 225)
_BAR = (66, 133, 244)


def _draw_text(canvas: np.ndarray, text: str, x: int, y: int, scale: int, color=_INK) -> int:
    """Draw `text` with its top-left corner at (x, y); returns the x after the last character."""
    for char in text.upper():
        glyph = _FONT.get(char, _FONT["?"])
        block = np.kron(glyph, np.ones((scale, scale), dtype=bool))
        region = canvas[y : y + block.shape[0], x : x + block.shape[1]]
        region[block[: region.shape[0], : region.shape[1]]] = color
        x += (_GLYPH_W + 1) * scale
    return x


def text_width(text: str, scale: int) -> int:
    return len(text) * (_GLYPH_W + 1) * scale


def bar_chart_png(
    labels: Sequence[str], values: Sequence[float], title: str = "", unit: str = "ms", scale: int = 2
) -> bytes:
    """Horizontal bars, largest first as given, each labelled with its name, value and share."""
    values = [max(float(v), 0.0) for v in values]
    total = sum(values) or 1.0
    top = max(values, default=0.0) or 1.0
    line = (_GLYPH_H + 5) * scale
    margin = 8 * scale
    label_width = max((text_width(label, scale) for label in labels), default=0)
    value_texts = [f"{v:.3f} {unit} ({v * 100 / total:.1f}%)" for v in values]
    value_width = max((text_width(t, scale) for t in value_texts), default=0)
    bar_space = 200 * scale
    width = margin + label_width + margin + bar_space + margin + value_width + margin
    title_height = line + margin if title else 0
    height = margin + title_height + line * len(labels) + margin
    canvas = np.empty((height, width, 3), np.uint8)
    canvas[:] = _BACKGROUND
    y = margin
    if title:
        _draw_text(canvas, title, margin, y, scale)
        y += title_height
    bars_x = margin + label_width + margin
    for quarter in range(5):  # light vertical grid at 0, 25, 50, 75 and 100 % of the longest bar
        gx = bars_x + quarter * bar_space // 4
        canvas[y : y + line * len(labels), gx : gx + 1] = _GRID
    for label, value, value_text in zip(labels, values, value_texts):
        text_y = y + 2 * scale
        _draw_text(canvas, label, bars_x - margin - text_width(label, scale), text_y, scale)
        length = max(1, round(bar_space * value / top)) if value > 0 else 0
        canvas[y + scale : y + line - scale, bars_x : bars_x + length] = _BAR
        _draw_text(canvas, value_text, bars_x + bar_space + margin, text_y, scale)
        y += line
    return encode_png(canvas)

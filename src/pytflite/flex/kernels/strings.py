"""TF's string ops on byte strings: case, strip, length, substrings, joins, splits and base64.

A string tensor is an object array of `bytes`; TF's string ops work on bytes (UTF-8 only where an op
has a unit or encoding attr), and so do these: ASCII-only case and whitespace rules, UTF-8 characters
counted by their lead bytes. The other string families: string_numbers.py (to and from numbers),
regex.py (RE2 patterns), string_hashes.py (hash buckets, fingerprints), unicode.py (code points).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence

import numpy as np

from ..node_def import TfNode
from ..registry import register
from .common import shape_text


def string_array(values: Sequence[bytes], shape: tuple[int, ...]) -> np.ndarray:
    """An object array of `values` (bytes) in `shape`: np.array would nest equal-length sequences."""
    flat = np.empty(len(values), dtype=object)
    flat[:] = list(values)
    return flat.reshape(shape)


def map_strings(function: Callable[[bytes], bytes], x: np.ndarray) -> np.ndarray:
    """`function` on every string of `x`, in x's shape."""
    return string_array([function(v) for v in x.reshape(-1)], x.shape)


def shown(value: bytes) -> str:
    """A string as text for an error message."""
    return value.decode("utf-8", "replace")


def _utf8_text(value: bytes) -> str:
    """The UTF-8 text ICU reads from a C string: it ends at a NUL; bad bytes become U+FFFD."""
    return value.split(b"\0", 1)[0].decode("utf-8", "replace")


@register("StringLower")
def _string_lower(node: TfNode, x):
    """StringLower: ASCII lowercase; with encoding "utf-8", Unicode's (full case mapping)."""
    encoding = node.text("encoding", "")
    if encoding == "":
        return map_strings(bytes.lower, x)
    if encoding != "utf-8":
        raise ValueError(f"only utf-8 or '' (no encoding) is supported, received {encoding}")
    return map_strings(lambda v: _utf8_text(v).lower().encode(), x)


@register("StringStrip")
def _string_strip(node: TfNode, x):
    """StringStrip: removes leading and trailing ASCII whitespace (space, \\t \\n \\v \\f \\r)."""
    return map_strings(bytes.strip, x)


_TRAIL_BYTES_ONLY = bytes(b for b in range(256) if b & 0xC0 != 0x80)  # translate() deletes these


def _utf8_length(value: bytes) -> int:
    """Characters as TF counts them: bytes that are not UTF-8 continuation bytes (10xxxxxx)."""
    return len(value) - len(value.translate(None, _TRAIL_BYTES_ONLY))


def _is_trail(value: bytes, index: int) -> bool:
    return value[index] & 0xC0 == 0x80


@register("StringLength")
def _string_length(node: TfNode, x):
    """StringLength: bytes, or UTF-8 characters (unit UTF8_CHAR), as int32."""
    length = _utf8_length if node.text("unit", "BYTE") == "UTF8_CHAR" else len
    return np.array([length(v) for v in x.reshape(-1)], dtype=np.int32).reshape(x.shape)


def _forward(value: bytes, start: int, count: int) -> tuple[int, bool]:
    """The byte position `count` UTF-8 characters after `start` (stopping at the end), and whether
    there were that many."""
    position, moved = start, 0
    while moved < count and position < len(value):
        position += 1
        while position < len(value) and _is_trail(value, position):
            position += 1
        moved += 1
    return position, moved == count


def _backward(value: bytes, start: int, count: int) -> tuple[int, bool]:
    """The byte position `count` UTF-8 characters before `start`, and whether there were that many."""
    position, moved = start, 0
    while moved < count and position > 0:
        position -= 1
        while position > 0 and _is_trail(value, position):
            position -= 1
        moved += 1
    return position, moved == count


def _utf8_span(value: bytes, pos: int, length: int) -> tuple[int, int] | None:
    """The byte span of `length` characters from character `pos` (from the end when negative), None
    when `pos` is past the string. A span running past the end stops there."""
    if pos >= 0:
        start, found = _forward(value, 0, pos)
        if not found:
            return None
        return start, _forward(value, start, length)[0]
    skipped = max(-pos - length, 0)
    end, found = _backward(value, len(value), skipped)
    if not found:
        return None
    start, found = _backward(value, end, -pos - skipped)
    return (start, end) if found else None


def _substring(value: bytes, pos: int, length: int, utf8: bool, index: tuple[int, ...]) -> bytes:
    """One Substr element; `index` (its position) names it in TF's error texts."""
    if utf8:
        span = _utf8_span(value, pos, length)
        if span is None:
            raise ValueError(f"pos {pos} out of range for string at index {index[0]}")
        return value[span[0] : span[1]]
    start = pos + len(value) if pos < 0 else pos
    if not 0 <= start <= len(value):
        where = str(index[0]) if len(index) == 1 else f"({index[0]}, {index[1]})"
        raise ValueError(f"pos {pos} out of range for string b'{shown(value)}' at index {where}")
    return value[start:] if length < 0 else value[start : start + length]  # a negative length: the rest


@register("Substr", types={"T": ["int32", "int64"]})
def _substr(node: TfNode, x, pos, length):
    """Substr: `len` bytes or UTF-8 characters from `pos` (negative: from the end).

    pos and len are scalars, of x's shape, or broadcast against x in one or two dimensions.
    """
    if pos.shape != length.shape:
        raise ValueError(
            f"pos and len should have the same shape, got: {shape_text(pos.shape)} vs. {shape_text(length.shape)}"
        )
    utf8 = node.text("unit", "BYTE") == "UTF8_CHAR"
    if pos.ndim == 0 or pos.shape == x.shape:
        pos, length = np.broadcast_to(pos, x.shape), np.broadcast_to(length, x.shape)
        columns = (x.reshape(-1), pos.reshape(-1), length.reshape(-1))
        values = [
            _substring(v, int(p), int(n), utf8, (i,))
            for i, (v, p, n) in enumerate(zip(*columns, strict=True))
        ]
        return string_array(values, x.shape)
    try:
        shape = np.broadcast_shapes(x.shape, pos.shape)
    except ValueError:
        raise ValueError(f"Incompatible shapes: {shape_text(x.shape)} vs. {shape_text(pos.shape)}") from None
    if len(shape) not in (1, 2):
        raise ValueError(f"Substr broadcast not implemented for {len(shape)} dimensions")
    x, pos, length = (np.broadcast_to(a, shape) for a in (x, pos, length))
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(*shape):
        out[index] = _substring(x[index], int(pos[index]), int(length[index]), utf8, index)
    return out


@register("StringJoin")
def _string_join(node: TfNode, *inputs):
    """StringJoin: elementwise concatenation with `separator`; scalars broadcast.

    All the other inputs must have one shape.
    """
    shape: tuple[int, ...] = ()
    for x in inputs:
        if x.ndim == 0:
            continue
        if shape == ():
            shape = x.shape
        elif x.shape != shape:
            raise ValueError(f"Input shapes do not match: {shape_text(shape)} vs. {shape_text(x.shape)}")
    separator = node.attr("separator", b"")
    columns = [np.broadcast_to(x, shape).reshape(-1) for x in inputs]
    return string_array([separator.join(row) for row in zip(*columns, strict=True)], shape)


@register("ReduceJoin")
def _reduce_join(node: TfNode, x, reduction_indices):
    """ReduceJoin: joins strings with `separator` along the given axes (keep_dims).

    The first axis listed varies fastest in the joined order.
    """
    rank = x.ndim
    axes: list[int] = []
    for axis in (int(a) for a in reduction_indices.reshape(-1)):
        if not -rank <= axis < rank:
            raise ValueError(f"Invalid reduction dimension {axis} for input with {rank} dimension(s)")
        if axis % rank in axes:
            raise ValueError(f"Duplicate reduction dimension {axis}")
        axes.append(axis % rank)
    kept = [d for d in range(rank) if d not in axes]
    rows = int(np.prod([x.shape[d] for d in kept], dtype=np.int64))
    columns = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    table = np.transpose(x, kept + axes[::-1]).reshape(rows, columns)
    separator = node.attr("separator", b"")
    keep_dims = node.attr("keep_dims", False)
    shape = tuple(1 if d in axes else x.shape[d] for d in range(rank) if keep_dims or d not in axes)
    return string_array([separator.join(row) for row in table], shape)


@register("UnsortedSegmentJoin", types={"Tindices": ["int32", "int64"], "Tnumsegments": ["int32", "int64"]})
def _unsorted_segment_join(node: TfNode, x, segment_ids, num_segments):
    """UnsortedSegmentJoin: joins the slices of x that share a segment id.

    Segment ids index x's leading dimensions. As TF, the separator goes only after a non-empty part:
    joining "" and "a" gives "a".
    """
    if num_segments.ndim != 0:
        raise ValueError("Number of segments must be a scalar")
    segments = int(num_segments)
    if segments < 0:
        raise ValueError(f"Number of segments must be non-negative but got {segments}")
    if segment_ids.ndim == 0:
        raise ValueError("Segment_id cannot have rank 0")
    if segment_ids.ndim > x.ndim:
        raise ValueError(f"Invalid segment_id rank {segment_ids.ndim} for input with {x.ndim} dimension(s)")
    for rank, size in enumerate(segment_ids.shape):
        if size != x.shape[rank]:
            raise ValueError(f"Segment dimension is {size} while input dimension is {x.ndim} in rank {rank}")
    ids = segment_ids.reshape(-1)
    if np.any((ids < 0) | (ids >= segments)):
        raise ValueError("segment_ids are not allowed to exceed num_segments or to have negative values.")
    inner = x.shape[segment_ids.ndim :]
    slices = x.reshape(len(ids), int(np.prod(inner, dtype=np.int64)))
    separator = node.attr("separator", b"")
    joined = [[b""] * slices.shape[1] for _ in range(segments)]
    for segment, row in zip(ids.tolist(), slices, strict=True):
        cells = joined[segment]
        for j, part in enumerate(row):
            cells[j] = cells[j] + separator + part if cells[j] else part
    return string_array([cell for cells in joined for cell in cells], (segments, *inner))


def _sparse_tokens(rows: list[list[bytes]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A split's SparseTensor: indices [n, 2] (row, position), values [n], dense shape [2]."""
    indices = [(i, j) for i, row in enumerate(rows) for j in range(len(row))]
    values = [token for row in rows for token in row]
    indices_array = np.array(indices, dtype=np.int64).reshape(-1, 2)
    shape = np.array([len(rows), max((len(row) for row in rows), default=0)], dtype=np.int64)
    return indices_array, string_array(values, (len(values),)), shape


def _split_inputs(x: np.ndarray, separator: np.ndarray, name: str) -> bytes:
    if x.ndim != 1:
        raise ValueError(f"input must be a vector, got shape: {shape_text(x.shape)}")
    if separator.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got shape: {shape_text(separator.shape)}")
    return separator[()]


@register("StringSplit")
def _string_split(node: TfNode, x, delimiter):
    """StringSplit (tf.compat.v1.string_split): splits at any byte of `delimiter` (skip_empty).

    An empty delimiter splits into single bytes.
    """
    delimiter = _split_inputs(x, delimiter, "delimiter")
    skip_empty = node.attr("skip_empty", True)
    rows = []
    for value in x:
        if not value:  # TF's Split gives an empty string no tokens, skip_empty or not
            tokens = []
        elif not delimiter:
            tokens = [value[i : i + 1] for i in range(len(value))]
        else:  # every delimiter byte becomes the first one, then one split
            tokens = value.translate(bytes.maketrans(delimiter, delimiter[:1] * len(delimiter))).split(
                delimiter[:1]
            )
        rows.append([t for t in tokens if t] if skip_empty else tokens)
    return _sparse_tokens(rows)


_ASCII_SPACE = b" \t\n\v\f\r"


def _split_whitespace(value: bytes, maxsplit: int) -> list[bytes]:
    """Python's split() of runs of ASCII whitespace, except TF's maxsplit: once maxsplit tokens are
    cut, the rest after the whitespace is one more token, even empty ("a b".split(None, 2) in TF
    gives a, b, "")."""
    tokens: list[bytes] = []
    position, size = 0, len(value)
    while position < size and value[position] in _ASCII_SPACE:
        position += 1
    while position < size:
        end = position
        while end < size and value[end] not in _ASCII_SPACE:
            end += 1
        tokens.append(value[position:end])
        position = end
        while position < size and value[position] in _ASCII_SPACE:
            position += 1
        if len(tokens) == maxsplit:
            tokens.append(value[position:])
            break
    return tokens


@register("StringSplitV2")
def _string_split_v2(node: TfNode, x, sep):
    """StringSplitV2 (tf.strings.split): Python's str.split on `sep` with maxsplit.

    An empty sep splits at runs of ASCII whitespace; maxsplit 0 keeps each string whole.
    """
    sep = _split_inputs(x, sep, "sep")
    maxsplit = node.attr("maxsplit", -1)
    rows = []
    for value in x:
        if maxsplit == 0:
            rows.append([value])
        elif sep:
            rows.append(value.split(sep, maxsplit))
        else:
            rows.append(_split_whitespace(value, maxsplit))
    return _sparse_tokens(rows)


_BASE64_TEXT = re.compile(rb"[A-Za-z0-9_-]*")  # TF's web-safe alphabet, no '=' inside


def _base64_decode(value: bytes) -> bytes:
    """TF's decoding: the full quads before the last 1 to 4 characters, then those after removing at
    most two '=' from a final 4; anything else outside the alphabet is refused."""
    last = (len(value) - 1) // 4 * 4 if value else 0
    head, tail = value[:last], value[last:]
    if not _BASE64_TEXT.fullmatch(head):
        raise ValueError("Invalid character found in base64.")
    if len(tail) == 4 and tail.endswith(b"="):
        tail = tail[:-2] if tail[2:3] == b"=" else tail[:-1]
    if len(tail) == 1:
        raise ValueError("Base64 string length cannot be 1 modulo 4.")
    if not _BASE64_TEXT.fullmatch(tail):
        raise ValueError("Invalid character found in base64.")
    return base64.urlsafe_b64decode(head + tail + b"=" * (-len(tail) % 4))


@register("EncodeBase64")
def _encode_base64(node: TfNode, x):
    """EncodeBase64: web-safe base64 (- and _), '=' padding with pad."""
    if node.attr("pad", False):
        return map_strings(base64.urlsafe_b64encode, x)
    return map_strings(lambda v: base64.urlsafe_b64encode(v).rstrip(b"="), x)


@register("DecodeBase64")
def _decode_base64(node: TfNode, x):
    """DecodeBase64: web-safe base64, with or without padding."""
    return map_strings(_base64_decode, x)

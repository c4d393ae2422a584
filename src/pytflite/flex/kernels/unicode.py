"""TF's Unicode ops: strings to code points and back (UnicodeDecode, UnicodeDecodeWithOffsets,
UnicodeEncode) and between encodings (UnicodeTranscode), as TF's ICU converters behave.

Decoding cuts malformed input as ICU (and the Unicode standard) does: each maximal prefix of a valid
sequence is one error, at the byte offset where it starts. With errors="replace" an error becomes
replacement_char, "ignore" drops it, "strict" refuses the input. replace_control_characters treats
C0 controls (U+0000-U+001F) as errors too, which a strict decode replaces and a strict transcode
refuses. Encoding refuses surrogates, noncharacters and values outside Unicode in strict mode.
"""

from __future__ import annotations

import numpy as np

from ..node_def import TfNode
from ..registry import register
from .strings import string_array

_MAX_CODE = 0x10FFFF
_REPLACEMENT = 0xFFFD

# Continuation-byte ranges a UTF-8 lead byte allows for its second byte; the rest take 80-BF.
_UTF8_SECOND = {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF), 0xF4: (0x80, 0x8F)}

Decoded = list[tuple[int, int | None]]  # (byte offset, code point or None for a malformed part)


def _utf8_length(lead: int) -> int:
    """Bytes in the sequence a UTF-8 lead byte starts (0: not a lead byte)."""
    if lead < 0x80:
        return 1
    return 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0


def _decode_utf8(data: bytes) -> Decoded:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_utf8_slowly(data)
    out, at = [], 0
    for char in text:
        out.append((at, ord(char)))
        at += _utf8_length(data[at])
    return out


def _decode_utf8_slowly(data: bytes) -> Decoded:
    """UTF-8 with malformed parts: a byte that starts no sequence is one error, and so is the valid
    beginning of a sequence cut short."""
    out, at = [], 0
    while at < len(data):
        lead, size, end = data[at], _utf8_length(data[at]), at + 1
        while end < at + size and end < len(data):
            low, high = _UTF8_SECOND.get(lead, (0x80, 0xBF)) if end == at + 1 else (0x80, 0xBF)
            if not low <= data[end] <= high:
                break
            end += 1
        out.append((at, ord(data[at:end].decode("utf-8")) if size and end == at + size else None))
        at = end
    return out


def _decode_utf16(data: bytes, order: str) -> Decoded:
    units = [int.from_bytes(data[at : at + 2], order) for at in range(0, len(data) - 1, 2)]
    out, i = [], 0
    while i < len(units):
        unit = units[i]
        if 0xD800 <= unit <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
            out.append((2 * i, 0x10000 + ((unit - 0xD800) << 10) + units[i + 1] - 0xDC00))
            i += 2
            continue
        out.append((2 * i, None if 0xD800 <= unit <= 0xDFFF else unit))
        i += 1
    return out + ([(len(data) - 1, None)] if len(data) % 2 else [])


def _decode_utf32(data: bytes, order: str) -> Decoded:
    out = []
    for at in range(0, len(data) - 3, 4):
        value = int.from_bytes(data[at : at + 4], order)
        out.append((at, None if value > _MAX_CODE or 0xD800 <= value <= 0xDFFF else value))
    return out + ([(len(data) - len(data) % 4, None)] if len(data) % 4 else [])


_DECODERS = {
    "UTF8": _decode_utf8,
    "UTF16BE": lambda data: _decode_utf16(data, "big"),
    "UTF16LE": lambda data: _decode_utf16(data, "little"),
    "UTF32BE": lambda data: _decode_utf32(data, "big"),
    "UTF32LE": lambda data: _decode_utf32(data, "little"),
    "ISO88591": lambda data: list(enumerate(data)),
    "USASCII": lambda data: [(at, b if b < 0x80 else None) for at, b in enumerate(data)],
}


def _decoder(encoding: str):
    """The decoder of an ICU converter name pytflite has (names compare without case, '-' and '_')."""
    found = _DECODERS.get(encoding.upper().replace("-", "").replace("_", ""))
    if found is None:
        raise ValueError(
            f"Could not create converter for input encoding: {encoding} (pytflite decodes "
            "UTF-8, UTF-16-BE/LE, UTF-32-BE/LE, ISO-8859-1 and US-ASCII)"
        )
    return found


class _ErrorPolicy:
    """The errors / replacement_char / replace_control_characters attrs of a Unicode op. A strict
    transcode also refuses the control characters it replaces (a strict decode replaces them)."""

    def __init__(self, node: TfNode, control_characters: bool = True, strict_controls: bool = False):
        self.errors = node.text("errors", "replace")
        self.replacement = node.attr("replacement_char", _REPLACEMENT)
        self.controls = control_characters and node.attr("replace_control_characters", False)
        self.strict_controls = strict_controls
        if not 0 <= self.replacement <= _MAX_CODE:
            raise ValueError("replacement_char out of unicode codepoint range")

    def code_points(self, decoded: Decoded) -> tuple[list[int], list[int]]:
        """The code points and their byte offsets that a decoding keeps."""
        values, offsets = [], []
        for offset, value in decoded:
            if value is None or (self.controls and value < 0x20):
                if self.errors == "strict" and (value is None or self.strict_controls):
                    raise ValueError("Invalid formatting on input string")
                if self.errors == "ignore":
                    continue
                value = self.replacement
            values.append(value)
            offsets.append(offset)
        return values, offsets


def _decode_all(
    node: TfNode, x: np.ndarray, transcoding: bool = False
) -> tuple[list[list[int]], list[list[int]]]:
    decode = _decoder(node.text("input_encoding"))
    policy = _ErrorPolicy(node, strict_controls=transcoding)
    rows = [policy.code_points(decode(v)) for v in x.reshape(-1)]
    return [values for values, _ in rows], [offsets for _, offsets in rows]


def _splits(rows: list[list[int]], node: TfNode) -> np.ndarray:
    dtype = node.attrs.get("Tsplits")
    return np.cumsum([0] + [len(row) for row in rows]).astype(dtype.numpy if dtype else np.int64)


def _flat(rows: list[list[int]], dtype) -> np.ndarray:
    return np.array([v for row in rows for v in row], dtype=dtype)


@register("UnicodeDecode", types={"Tsplits": ["int32", "int64"]})
def _unicode_decode(node: TfNode, x):
    """UnicodeDecode (tf.strings.unicode_decode): the code points of the strings and their row splits."""
    values, _ = _decode_all(node, x)
    return _splits(values, node), _flat(values, np.int32)


@register("UnicodeDecodeWithOffsets", types={"Tsplits": ["int32", "int64"]})
def _unicode_decode_with_offsets(node: TfNode, x):
    """UnicodeDecodeWithOffsets: UnicodeDecode and the byte offset where each code point starts."""
    values, offsets = _decode_all(node, x)
    return _splits(values, node), _flat(values, np.int32), _flat(offsets, np.int64)


_ENCODINGS = {"UTF-8": ("utf-8", 1), "UTF-16-BE": ("utf-16-be", 2), "UTF-32-BE": ("utf-32-be", 4)}


def _encode(code_points: list[int], encoding: str) -> bytes:
    """Code points in an output encoding; a lone surrogate (only a replacement_char can be one) is
    U+FFFD in UTF-8 and written as is in UTF-16 and UTF-32, as ICU's UnicodeString does."""
    codec, _ = _ENCODINGS[encoding]
    if codec == "utf-8":
        code_points = [_REPLACEMENT if 0xD800 <= c <= 0xDFFF else c for c in code_points]
    return "".join(map(chr, code_points)).encode(codec, "surrogatepass")


def _output_encoding(node: TfNode) -> str:
    encoding = node.text("output_encoding")
    if encoding not in _ENCODINGS:
        raise ValueError(f"output_encoding must be one of UTF-8, UTF-16-BE, UTF-32-BE, not {encoding}")
    return encoding


@register("UnicodeTranscode")
def _unicode_transcode(node: TfNode, x):
    """UnicodeTranscode (tf.strings.unicode_transcode): strings decoded, then re-encoded.

    The output_encoding is UTF-8, UTF-16-BE or UTF-32-BE.
    """
    encoding = _output_encoding(node)
    values, _ = _decode_all(node, x, transcoding=True)
    return string_array([_encode(row, encoding) for row in values], x.shape)


def _encodable(code_point: int) -> bool:
    """What UnicodeEncode takes: Unicode scalar values that are not noncharacters."""
    noncharacter = 0xFDD0 <= code_point <= 0xFDEF or code_point & 0xFFFE == 0xFFFE
    return 0 <= code_point <= _MAX_CODE and not 0xD800 <= code_point <= 0xDFFF and not noncharacter


@register("UnicodeEncode", types={"Tsplits": ["int32", "int64"]})
def _unicode_encode(node: TfNode, values, splits):
    """UnicodeEncode (tf.strings.unicode_encode): each row of code points as one string.

    Rows lie between consecutive row splits. errors="ignore" keeps surrogates and noncharacters, dropping
    only values outside Unicode.
    """
    encoding = _output_encoding(node)
    policy = _ErrorPolicy(node, control_characters=False)
    if splits.size == 0:
        raise ValueError(
            "Input_splits should contain elements, but given input_values has 0 elements"  # TF's text
        )
    if splits[0] != 0:
        raise ValueError("First value in input_splits must be zero.")
    if splits[-1] != values.size:
        raise ValueError("Last value in input_splits must be equal to length of input_tensor.")
    if np.any(np.diff(splits) < 0):
        raise ValueError("Values in input_splits must be equal or in ascending order.")
    strings = []
    for start, end in zip(splits[:-1].tolist(), splits[1:].tolist(), strict=True):
        row = []
        for code_point in values[start:end].tolist():
            if not _encodable(code_point):
                if policy.errors == "strict":
                    raise ValueError("Code point is out of range for Unicode, or a noncharacter.")
                if policy.errors == "replace":
                    code_point = policy.replacement
            if 0 <= code_point <= _MAX_CODE:
                row.append(code_point)
        strings.append(_encode(row, encoding))
    return string_array(strings, (len(strings),))

"""TF's conversions between numbers and text: AsString (printf formatting), StringToNumber (TF's
strict parsers) and StringFormat (a tensor's summary as tf.print writes it).

Python's % operator is C's printf for these conversions except where C prints inf and nan (padded with
spaces, never zeros; nan keeps its sign) and where %u ignores the sign flags: those are done here.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..dtypes import COMPLEX, FLOATS, INTEGERS, UNSIGNED
from ..node_def import TfNode
from ..registry import register
from .strings import map_strings, shown, string_array

_FLOATING = FLOATS | {"bfloat16"}


def _bfloat16_as_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values (they travel as their uint16 bits) as float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _printf_float(spec: str, flags: str, width: int, value: float) -> str:
    """printf of one float: Python's %, but inf and nan as C writes them (signed, space-padded)."""
    if math.isfinite(value):
        return spec % value
    negative = math.copysign(1.0, value) < 0
    sign = "-" if negative else "+" if "+" in flags else " " if " " in flags else ""
    text = sign + ("nan" if math.isnan(value) else "inf")
    return text.ljust(width) if "-" in flags else text.rjust(width)


@register(
    "AsString",
    types={"T": _FLOATING | COMPLEX | INTEGERS | {"bool", "string"}},
)
def _as_string(node: TfNode, x):
    """AsString: numbers as printf text (%d %u %f %e %g; precision, width, fill); bools true/false.

    The fill is one printf flag: ' ', '+', '-', '0' or '#'.
    """
    dtype = node.attr("T").name
    precision = node.attr("precision", -1)
    scientific, shortest = node.attr("scientific", False), node.attr("shortest", False)
    width = max(node.attr("width", -1), 0)
    flags = node.text("fill", "")
    if dtype not in _FLOATING | COMPLEX | {"string"}:
        type_name = node.attr("T").type_string
        if scientific or shortest:
            raise ValueError(f"scientific and shortest format not supported for datatype {type_name}")
        if precision >= 0:
            raise ValueError(f"precision not supported for datatype {type_name}")
    if len(flags) > 1:
        raise ValueError("Fill string must be one or fewer characters")
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    if flags and flags not in " +-0#":
        raise ValueError(f'Fill argument not supported: "{flags}"')
    if dtype == "bool":
        return map_strings(lambda v: b"true" if v else b"false", x)
    if dtype in UNSIGNED:
        flags = flags.replace("+", "").replace(" ", "")  # %u has no sign
    sizes = (str(width) if width else "") + (f".{precision}" if precision >= 0 else "")
    if dtype == "string":
        spec = f"%{flags}{sizes}s".encode()
        return x.copy() if not width else map_strings(lambda v: spec % v, x)
    if dtype in INTEGERS:
        spec = f"%{flags}{sizes}d"
        texts = [spec % v for v in x.reshape(-1).tolist()]
    else:
        spec = f"%{flags}{sizes}" + ("g" if shortest else "e" if scientific else "f")
        values = _bfloat16_as_float32(x) if dtype == "bfloat16" else x
        if dtype in COMPLEX:
            texts = [
                f"({_printf_float(spec, flags, width, v.real)},{_printf_float(spec, flags, width, v.imag)})"
                for v in values.reshape(-1).tolist()
            ]
        else:
            texts = [_printf_float(spec, flags, width, v) for v in values.reshape(-1).tolist()]
    return string_array([t.encode() for t in texts], x.shape)


_SPACE = b" \t\n\v\f\r"
_DECIMAL = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_HEX = re.compile(rb"([+-]?)0[xX]([0-9a-fA-F]+)")
_SPECIAL = re.compile(rb"([+-]?)(inf|nan)", re.IGNORECASE)
_LONGEST_FLOAT_TEXT = 31  # TF's float parser refuses 32 characters or more, spaces included


def _parse_float(text: bytes) -> float | None:
    """TF's strtod: decimal, hex integer, inf or nan (any case, signed), surrounded by ASCII spaces;
    spaces alone read as 0; None when refused."""
    if not text or len(text) > _LONGEST_FLOAT_TEXT:
        return None
    body = text.strip(_SPACE)
    if not body:
        return 0.0
    if _DECIMAL.fullmatch(body):
        return float(body)
    hex_match = _HEX.fullmatch(body)
    if hex_match:
        sign, digits = hex_match.groups()
        return float(int(digits, 16)) * (-1.0 if sign == b"-" else 1.0)
    special = _SPECIAL.fullmatch(body)
    if special:
        sign, word = special.groups()
        return math.copysign(math.inf if word.lower() == b"inf" else math.nan, -1.0 if sign == b"-" else 1.0)
    return None


def _parse_integer(text: bytes, dtype: np.dtype) -> int | None:
    """TF's strto32/64: decimal digits with a '-' for signed types (no '+'), surrounded by ASCII
    spaces, in the type's range; None when refused."""
    body = text.strip(_SPACE)
    pattern = rb"\d+" if dtype.kind == "u" else rb"-?\d+"
    if not re.fullmatch(pattern, body):
        return None
    value = int(body)
    limits = np.iinfo(dtype)
    return value if limits.min <= value <= limits.max else None


@register("StringToNumber", types={"out_type": ["float32", "float64", "int32", "int64", "uint32", "uint64"]})
def _string_to_number(node: TfNode, x):
    """StringToNumber: TF's strict parsers of numbers (floats: decimal, 0x hex, inf, nan).

    float32 rounds the double value (TF rounds the text once) and, as TF's threads flush denormals, reads
    values below float32's smallest normal as 0.
    """
    dtype = node.attr("out_type", None)
    dtype = np.dtype(np.float32) if dtype is None else dtype.numpy
    out = np.empty(x.size, dtype=dtype)
    for i, text in enumerate(x.reshape(-1)):
        value = _parse_float(text) if dtype.kind == "f" else _parse_integer(text, dtype)
        if value is None:
            raise ValueError(f"StringToNumberOp could not correctly convert string: {shown(text)}")
        with np.errstate(over="ignore"):
            out[i] = value
    if dtype == np.float32:  # TF's kernels run with denormals flushed: the float32 rounding gives 0
        out[np.abs(out) < np.finfo(np.float32).tiny] *= 0
    return out.reshape(x.shape)


def _shortest_float(value: float, digits: int, more_digits: int, as_type: type) -> str:
    """TF's FloatToBuffer / DoubleToBuffer: %.{digits}g, or %.{more_digits}g when that does not read
    back as the same value; nan with its sign."""
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    text = f"{value:.{digits}g}"
    if math.isfinite(value) and as_type(float(text)) != as_type(value):
        text = f"{value:.{more_digits}g}"
    return text


def _escaped(value: bytes) -> str:
    """absl's Utf8SafeCEscape in quotes: C escapes for quotes, backslash, \\n \\r \\t and octal for
    other ASCII controls; bytes from 0x80 pass through (the result is bytes-as-latin-1 text)."""
    named = {10: "\\n", 13: "\\r", 9: "\\t", 34: '\\"', 39: "\\'", 92: "\\\\"}
    out = []
    for b in value:
        if b in named:
            out.append(named[b])
        elif b < 0x20 or b == 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def _element_printer(dtype: str):
    """How StringFormat prints one element of a `dtype` tensor (latin-1 text: bytes pass through)."""
    if dtype == "string":
        return _escaped
    if dtype == "bool":
        return lambda v: "1" if v else "0"
    if dtype in INTEGERS:
        return lambda v: str(int(v))
    if dtype == "float64":
        return lambda v: _shortest_float(float(v), 15, 17, float)
    return lambda v: _shortest_float(float(v), 6, 9, np.float32)


def _spacing(dim: int, rank: int) -> str:
    """Between two entries of dimension `dim`: a space in the last one, else newlines and an indent."""
    return " " if dim == rank - 1 else "\n" * (rank - dim - 1) + " " * (dim + 1)


def _summary(x: np.ndarray, dtype: str, summarize_count: int) -> str:
    """Tensor::SummarizeValue(summarize, print_v2=true): nested brackets; a dimension longer than twice
    the count (the count capped at the element total; -1: all) shows its first and last entries
    around "..."."""
    limit = x.size if summarize_count < 0 else min(summarize_count, x.size)
    if dtype in COMPLEX:  # TF has no printer for these: "?" per element, flat
        text = " ".join(["?"] * limit) + ("..." if limit < x.size else "")
        return f"[{text}]" if x.ndim else text
    printer = _element_printer(dtype)
    values = _bfloat16_as_float32(x) if dtype == "bfloat16" else x
    if x.ndim == 0:
        return printer(values[()]) if limit else "..."

    def dimension(dim: int, index: tuple[int, ...]) -> str:
        if dim == x.ndim:
            return printer(values[index])
        count = x.shape[dim]
        head = [dimension(dim + 1, (*index, i)) for i in range(min(limit, count))]
        tail = [dimension(dim + 1, (*index, i)) for i in range(max(limit, count - limit), count)]
        spacing = _spacing(dim, x.ndim)
        elided = spacing + "..." if count > 2 * limit else ""  # spaced even with no entries before it
        return "[" + spacing.join(head) + elided + "".join(spacing + entry for entry in tail) + "]"

    return dimension(0, ())


@register("StringFormat")
def _string_format(node: TfNode, *inputs):
    """StringFormat (tf.strings.format): the template with each placeholder replaced by a tensor.

    Each tensor is summarized as tf.print shows it.
    """
    template = node.attr("template", b"%s")
    placeholder = node.attr("placeholder", b"%s")
    pieces = (
        template.split(placeholder) if placeholder else [template[i : i + 1] for i in range(len(template))]
    )
    pieces = [piece.split(b"\0", 1)[0] for piece in pieces or [b""]]  # TF appends them as C strings
    if len(pieces) - 1 != len(inputs):
        raise ValueError(
            f"num placeholders in template and num inputs must match: {len(pieces) - 1} vs. {len(inputs)}"
        )
    count = node.attr("summarize", 3)
    types = [t.name for t in node.attr("T")]
    out = bytearray(pieces[0])
    for x, dtype, piece in zip(inputs, types, pieces[1:], strict=True):
        out += _summary(x, dtype, count).encode("latin-1") + piece
    return string_array([bytes(out)], ())

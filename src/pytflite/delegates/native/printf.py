"""`TfLiteContext.ReportError(context, format, ...)`: formatting a C printf call that arrived in Python.

ctypes cannot declare a variadic callback. On the System V x86_64 and Linux AArch64 ABIs a variadic
call passes its arguments exactly as a fixed-argument call would: integers and pointers in the free
integer registers, doubles (floats are promoted) in the vector registers, the rest on the stack in
argument order, one 8-byte slot each. So the callback is declared with every integer register, every
vector register and STACK_SLOTS stack slots as parameters, and the format says which ones the caller set.

Conversions: %d %i %u %ld %lld %zu %x %X %o %c %s %p %f %F %g %G %e %E %% with flags, width and
precision written out (no `*`); length modifiers hh h l ll z j t are accepted (integers are read as
64 bits and cut to the modifier's width). Limits: no %n, no long double (%Lf), and at most
`abi.register_ints()` integer plus 8 double arguments in registers and STACK_SLOTS arguments beyond
them; a format asking for more reports what it could and says so.
"""

from __future__ import annotations

import ctypes
import re
import struct

from . import abi

_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?(hh|h|ll|l|z|j|t|L)?([diouxXcspfFgGeE%])")
_INT_BITS = {"hh": 8, "h": 16, None: 32, "l": 64, "ll": 64, "z": 64, "j": 64, "t": 64}


class _Arguments:
    """The caller's arguments, taken in order from registers first, then from the stack slots."""

    def __init__(self, ints: tuple[int, ...], doubles: tuple[float, ...], stack: tuple[int, ...]):
        self._ints, self._doubles, self._stack = list(ints), list(doubles), list(stack)

    def integer(self) -> int:
        source = self._ints if self._ints else self._stack
        if not source:
            raise IndexError
        return source.pop(0) & 0xFFFFFFFFFFFFFFFF

    def double(self) -> float:
        if self._doubles:
            return self._doubles.pop(0)
        if not self._stack:
            raise IndexError
        return struct.unpack("<d", struct.pack("<Q", self._stack.pop(0) & 0xFFFFFFFFFFFFFFFF))[0]


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def format_printf(
    fmt: bytes, ints: tuple[int, ...], doubles: tuple[float, ...], stack: tuple[int, ...]
) -> str:
    """`fmt` applied to the arguments a variadic call left in `ints`, `doubles` and `stack`."""
    text = fmt.decode("utf-8", errors="replace")
    arguments = _Arguments(ints, doubles, stack)
    pieces: list[str] = []
    position = 0
    for match in _SPEC.finditer(text):
        pieces.append(text[position : match.start()])
        position = match.end()
        flags, width, precision, length, conversion = match.groups()
        if conversion == "%":
            pieces.append("%")
            continue
        if length == "L":  # a long double travels in memory this reading cannot reach
            pieces.append(match.group(0) + " (long double not supported)" + text[position:])
            return "".join(pieces)
        spec = "%" + flags + width + ("" if precision is None else "." + (precision or "0"))
        try:
            pieces.append(_convert(spec, length, conversion, arguments))
        except IndexError:
            pieces.append(match.group(0) + " (argument not readable)")
            pieces.append(text[position:])
            return "".join(pieces)
    pieces.append(text[position:])
    return "".join(pieces)


def _convert(spec: str, length: str | None, conversion: str, arguments: _Arguments) -> str:
    if conversion in "fFgGeE":
        value = arguments.double()
        return (spec + conversion) % value
    raw = arguments.integer()
    if conversion == "s":
        return (spec + "s") % (ctypes.string_at(raw).decode("utf-8", errors="replace") if raw else "(null)")
    if conversion == "p":
        return (spec + "s") % (hex(raw) if raw else "(nil)")
    if conversion == "c":
        return (spec + "c") % chr(raw & 0xFF)
    bits = _INT_BITS.get(length, 64)
    if conversion in "di":
        return (spec + "d") % _signed(raw, bits)
    value = raw & ((1 << bits) - 1)
    return (spec + ("d" if conversion == "u" else conversion)) % value


# The callback type: (context, format, integer registers..., double registers..., stack slots...).
REPORT_ERROR_ARGUMENTS = (
    [ctypes.c_void_p, ctypes.c_char_p]
    + [ctypes.c_uint64] * abi.register_ints()
    + [ctypes.c_double] * abi.REGISTER_DOUBLES
    + [ctypes.c_uint64] * abi.STACK_SLOTS
)
ReportErrorFn = ctypes.CFUNCTYPE(None, *REPORT_ERROR_ARGUMENTS)


def split_arguments(arguments: tuple) -> tuple[tuple[int, ...], tuple[float, ...], tuple[int, ...]]:
    """The callback's parameters after (context, format), as (integer registers, doubles, stack)."""
    n = abi.register_ints()
    return (
        tuple(arguments[:n]),
        tuple(arguments[n : n + abi.REGISTER_DOUBLES]),
        tuple(arguments[n + abi.REGISTER_DOUBLES :]),
    )

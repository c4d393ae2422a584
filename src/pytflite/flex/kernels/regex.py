"""TF's regex ops (RE2 patterns) on Python's `re`: a pattern is translated from RE2's syntax into an
equivalent `re` pattern, then matched on the strings decoded as UTF-8 (a byte that is not UTF-8
becomes a lone surrogate, which, as such bytes in RE2, no character or class of a pattern matches).

Where the two agree the translation is direct; where they differ it is spelled out: \\d \\w \\s \\b and
POSIX classes are ASCII (\\s without \\v), $ is the end of the text (not before a last newline), RE2's
flags may change mid-group, (?i) folds by Unicode's case orbits, (?U) swaps greediness, {,n} and a
stray { are literals, \\1 .. \\7 followed by octal digits are octal, \\p{...} general categories come
from unicodedata. RE2's errors (lookarounds, backreferences, \\Z, ...) are refused with RE2's
message; what Python cannot express (\\p{Script}, \\C) is refused as unsupported. Two differences
remain: RE2 tries empty matches between the bytes of a UTF-8 character (a bare \\B matches there),
here positions are characters; and a repeated group whose body can match empty, as (a*)*, captures
its last non-empty pass in RE2 but a final empty pass in `re`. Replacement follows RE2's
GlobalReplace: an empty match right after a match is skipped.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata

import numpy as np

from ..node_def import TfNode
from ..registry import register
from .common import shape_text
from .strings import map_strings

_MAX_CODE = 0x10FFFF
_INVALID_BYTES = (0xDC80, 0xDCFF)  # surrogateescape's code points for bytes that are not UTF-8
_MAX_REPEAT = 1000

Ranges = list[tuple[int, int]]

_PERL_CLASSES: dict[str, Ranges] = {
    "d": [(0x30, 0x39)],
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "s": [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)],
}
_POSIX_CLASSES: dict[str, Ranges] = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)],
    "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)],
    "blank": [(0x09, 0x09), (0x20, 0x20)],
    "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)],
    "graph": [(0x21, 0x7E)],
    "lower": [(0x61, 0x7A)],
    "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_CONTROL_ESCAPES = {"a": 7, "f": 12, "t": 9, "n": 10, "r": 13, "v": 11}
_OCTAL = "01234567"


class Re2Error(ValueError):
    """A pattern RE2 refuses, or that pytflite cannot translate, with the reason."""


def _complement(ranges: Ranges) -> Ranges:
    """The code points outside `ranges` (bytes that are not UTF-8 stay outside both)."""
    out, start = [], 0
    for lo, hi in sorted([*ranges, _INVALID_BYTES]):
        if lo > start:
            out.append((start, lo - 1))
        start = max(start, hi + 1)
    return out + ([(start, _MAX_CODE)] if start <= _MAX_CODE else [])


def _fold_key(char: str) -> str:
    """A character's simple case folding: casefold() where that is one character, else lower()."""
    for folded in (char.casefold(), char.lower()):
        if len(folded) == 1:
            return folded
    return char


@functools.cache
def _case_orbits() -> tuple[list[int], dict[int, tuple[int, ...]]]:
    """Every cased code point (sorted) and the code points that fold together with it (k, K and the
    Kelvin sign; s, S and long s; ...), RE2's (?i) equivalence."""
    groups: dict[str, list[int]] = {}
    for cp in range(0x1F000):  # no cased letters beyond
        groups.setdefault(_fold_key(chr(cp)), []).append(cp)
    orbits = {cp: tuple(group) for group in groups.values() if len(group) > 1 for cp in group}
    return sorted(orbits), orbits


def _folded(ranges: Ranges) -> Ranges:
    """`ranges` with every case variant of their members."""
    cased, orbits = _case_orbits()
    extra = [
        (other, other)
        for lo, hi in ranges
        for cp in cased[bisect.bisect_left(cased, lo) : bisect.bisect_right(cased, hi)]
        for other in orbits[cp]
    ]
    return ranges + extra


@functools.cache
def _categories() -> dict[str, Ranges]:
    """Every code point's Unicode general category (Lu, Nd, ...) as ranges, from unicodedata."""
    table: dict[str, Ranges] = {}
    for cp in range(_MAX_CODE + 1):
        ranges = table.setdefault(unicodedata.category(chr(cp)), [])
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return table


def _unicode_category(name: str, written: str) -> Ranges:
    """RE2's \\p{name} for a general category (L, Lu, N, ...) or Any; C leaves out unassigned code
    points, as RE2's tables do. Scripts (\\p{Greek}) have no unicodedata table: refused."""
    if name == "Any":
        return [(0, _MAX_CODE)]
    if len(name) == 1 and name not in "CLMNPSZ":
        raise Re2Error(f"invalid character class range: {written}")
    if not re.fullmatch(r"[CLMNPSZ][a-z]?", name):
        raise Re2Error(f"pytflite translates Unicode general categories only, not {written} (a script?)")
    ranges = [
        r
        for category, found in _categories().items()
        if category.startswith(name) and category != "Cn"
        for r in found
    ]
    if not ranges:
        raise Re2Error(f"invalid character class range: {written}")
    return ranges


def _code(cp: int) -> str:
    """A code point as an `re` escape (valid in and out of classes)."""
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def _class_text(ranges: Ranges, negated: bool, fold: bool) -> str:
    """An `re` class of `ranges` (their complement when negated; folded under (?i)) that never
    matches the bytes that are not UTF-8."""
    ranges = _folded(ranges) if fold else ranges
    # a positive class: sorted, merged and without the invalid bytes by complementing twice
    ranges = [*ranges, _INVALID_BYTES] if negated else _complement(_complement(ranges))
    items = "".join(_code(lo) if lo == hi else f"{_code(lo)}-{_code(hi)}" for lo, hi in sorted(ranges))
    if negated:
        return f"[^{items}]"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return items
    return f"[{items}]" if items else "(?!)"


_WORD = "[0-9A-Za-z_]"
_ASSERTIONS = {
    "A": "(?:\\A)",
    "z": "(?:\\Z)",
    "b": f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))",  # ASCII word boundaries; re's \\B
    "B": f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))",  # never matches an empty text
}


class _Translator:
    """One RE2 pattern read left to right into `re` text. `flags` are RE2's active ones (i m s U),
    saved per group; every atom is written with them explicit, so a flag change mid-group (legal in
    RE2, not in `re`) stays local."""

    def __init__(self, pattern: str):
        self.text, self.at = pattern, 0
        self.out: list[str] = []
        self.flags: set[str] = set()
        self.saved: list[set[str]] = []
        self.last = ""  # "atom", "repeat" (with its text in last_repeat) or "" (nothing to repeat)
        self.last_repeat = ""

    def fail(self, reason: str):
        raise Re2Error(reason)

    def translate(self) -> str:
        while self.at < len(self.text):
            c = self.text[self.at]
            if c == "(":
                self._open()
            elif c == ")":
                self._close()
            elif c == "|":
                self.at += 1
                self._emit("|", "")
            elif c in "*+?":
                self._repeat(c, 1)
            elif c == "{" and (size := self._repeat_size()):
                self._repeat(self.text[self.at : self.at + size], size)
            elif c == "[":
                self._class()
            elif c == ".":
                self.at += 1
                self._emit(_class_text([] if "s" in self.flags else [(10, 10)], negated=True, fold=False))
            elif c == "^":
                self.at += 1
                self._emit("(?m:^)" if "m" in self.flags else "(?:\\A)")
            elif c == "$":
                self.at += 1
                self._emit("(?m:$)" if "m" in self.flags else "(?:\\Z)")
            elif c == "\\":
                self._escape()
            else:
                self.at += 1
                self._literal(ord(c))
        if self.saved:
            self.fail(f"missing ): {self.text}")
        return "".join(self.out)

    def _emit(self, text: str, last: str = "atom") -> None:
        self.out.append(text)
        self.last = last

    def _literal(self, cp: int) -> None:
        self._emit(_class_text([(cp, cp)], negated=False, fold="i" in self.flags))

    def _open(self) -> None:
        self.saved.append(set(self.flags))
        if not self.text.startswith("(?", self.at):
            self.at += 1
            self._emit("(", "")
            return
        if self.text.startswith("(?P<", self.at):  # named: RE2's rewrites use numbers only
            end = self.text.find(">", self.at)
            if end < 0 or not re.fullmatch(r"\w+", self.text[self.at + 4 : end], re.ASCII):
                self.fail(
                    f"invalid named capture group: {self.text[self.at : end + 1 if end >= 0 else None]}"
                )
            self.at = end + 1
            self._emit("(", "")
            return
        match = re.compile(r"\(\?([imsU]*)(?:-([imsU]+))?([:)])").match(self.text, self.at)
        if not match:
            self.fail(f"invalid perl operator: {self.text[self.at : self.at + 3]}")
        flags = (self.flags | set(match.group(1))) - set(match.group(2) or "")
        self.at = match.end()
        if match.group(3) == ")":  # (?flags): for the rest of the enclosing group
            self.saved.pop()
            self.flags = flags
            return
        self.flags = flags
        self._emit("(?:", "")

    def _close(self) -> None:
        if not self.saved:
            self.fail(f"unexpected ): {self.text}")
        self.flags = self.saved.pop()
        self.at += 1
        self._emit(")")

    def _repeat_size(self) -> int:
        """The length of a {n}, {n,} or {n,m} at the cursor; 0 where RE2 reads a literal '{'."""
        match = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.text, self.at)
        return match.end() - self.at if match else 0

    def _repeat(self, operator: str, size: int) -> None:
        start = self.at
        self.at += size
        lazy = self.text.startswith("?", self.at)
        self.at += lazy
        written = self.text[start : self.at]
        if self.last == "repeat":
            self.fail(f"bad repetition operator: {self.last_repeat}{written}")
        if self.last != "atom":
            self.fail(f"no argument for repetition operator: {operator}")
        if operator.startswith("{"):
            low, _, high = operator[1:-1].partition(",")
            if int(low) > _MAX_REPEAT or (high and (int(high) > _MAX_REPEAT or int(high) < int(low))):
                self.fail(f"invalid repetition size: {operator}")
        if "U" in self.flags:
            lazy = not lazy
        self._emit(operator + ("?" if lazy else ""), "repeat")
        self.last_repeat = written

    def _escape(self) -> None:
        """An escape outside a class: an assertion, a class, \\Q..\\E, or one character."""
        if self.at + 1 >= len(self.text):
            self.fail("trailing \\")
        c = self.text[self.at + 1]
        if c in _ASSERTIONS:
            self.at += 2
            self._emit(_ASSERTIONS[c])
        elif (escaped := self._escaped_class()) is not None:
            self._emit(_class_text(escaped[0], negated=escaped[1], fold="i" in self.flags))
        elif c == "Q":
            end = self.text.find("\\E", self.at + 2)
            quoted = self.text[self.at + 2 : end if end >= 0 else None]
            self.at = end + 2 if end >= 0 else len(self.text)
            for char in quoted:
                self._literal(ord(char))
        else:
            self._literal(self._character())

    def _escaped_class(self) -> tuple[Ranges, bool] | None:
        """A \\d \\w \\s (negated in capitals) or \\p{Category} escape at the cursor: its
        ranges and whether it is negated; None for another escape."""
        c = self.text[self.at + 1 : self.at + 2]
        if c.lower() in _PERL_CLASSES:
            self.at += 2
            return _PERL_CLASSES[c.lower()], c.isupper()
        if c not in ("p", "P"):
            return None
        match = re.compile(r"\\[pP](?:\{(\^?)(\w+)\}|(\w))").match(self.text, self.at)
        if not match:
            braced = self.text.startswith("{", self.at + 2)
            self.fail(
                f"invalid character class range: {self.text[self.at : None if braced else self.at + 3]}"
            )
        self.at = match.end()
        return _unicode_category(match.group(2) or match.group(3), match.group()), (c == "P") != bool(
            match.group(1)
        )

    def _character(self) -> int:
        """The code point of one character or escape at the cursor (in or out of a class)."""
        c = self.text[self.at]
        if c != "\\":
            self.at += 1
            return ord(c)
        if self.at + 1 >= len(self.text):
            self.fail("trailing \\")
        c = self.text[self.at + 1]
        if c == "C":
            raise Re2Error("RE2's \\C (any byte) has no equivalent in Python's re; pytflite cannot run it")
        if c in _OCTAL and (c == "0" or self.text[self.at + 2 : self.at + 3] in tuple(_OCTAL)):
            match = re.compile(r"[0-7]{1,3}").match(self.text, self.at + 1)
            self.at = match.end()
            return int(match.group(), 8)
        if c == "x":
            match = re.compile(r"x(?:([0-9A-Fa-f]{2})|\{([0-9A-Fa-f]+)\})").match(self.text, self.at + 1)
            if not match or int(match.group(1) or match.group(2), 16) > _MAX_CODE:
                bad = re.compile(r"x(\{[0-9A-Fa-f]*|[0-9A-Fa-f]{0,2})").match(self.text, self.at + 1)
                self.fail(f"invalid escape sequence: \\{bad.group()}")
            self.at = match.end()
            return int(match.group(1) or match.group(2), 16)
        self.at += 2
        if c in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[c]
        if c < "\x80" and not c.isalnum():  # escaped punctuation (and _) is itself
            return ord(c)
        self.fail(f"invalid escape sequence: \\{c}")

    def _class(self) -> None:
        """A bracketed class: ranges, \\d-style and [:posix:] classes; ']' first is a literal."""
        start = self.at
        self.at += 1
        negated = self.text.startswith("^", self.at)
        self.at += negated
        ranges: Ranges = []
        first = True
        while True:
            if self.at >= len(self.text):
                self.fail(f"missing ]: {self.text[start:]}")
            c = self.text[self.at]
            if c == "]" and not first:
                self.at += 1
                break
            first = False
            posix = re.compile(r"\[:(\^?)(\w*):\]").match(self.text, self.at)
            if posix:
                if posix.group(2) not in _POSIX_CLASSES:
                    self.fail(f"invalid character class range: {posix.group()}")
                members = _POSIX_CLASSES[posix.group(2)]
                ranges += _complement(members) if posix.group(1) else members
                self.at = posix.end()
                continue
            if c == "\\" and (escaped := self._escaped_class()) is not None:
                ranges += _complement(escaped[0]) if escaped[1] else escaped[0]
                continue
            low_text = self.at
            low = self._character()
            high = low
            if self.text.startswith("-", self.at) and self.text[self.at + 1 : self.at + 2] not in ("]", ""):
                self.at += 1
                high = self._character()
                if high < low:
                    self.fail(f"invalid character class range: {self.text[low_text : self.at]}")
            ranges.append((low, high))
        self._emit(_class_text(ranges, negated, fold="i" in self.flags))


@functools.lru_cache(maxsize=256)
def compile_re2(pattern: bytes) -> re.Pattern:
    """The `re` pattern of an RE2 pattern; ValueError with TF's "Invalid pattern" text."""
    try:
        try:
            text = pattern.decode("utf-8")
        except UnicodeDecodeError:
            raise Re2Error("invalid UTF-8") from None
        try:
            return re.compile(_Translator(text).translate())
        except re.error as error:
            raise Re2Error(str(error)) from None
    except Re2Error as error:
        raise ValueError(f"Invalid pattern: {pattern.decode('utf-8', 'replace')}, error: {error}") from None


def _decoded(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _highest_group(rewrite: str) -> int:
    """The largest \\N a rewrite names (RE2 replaces nothing when the pattern has fewer groups)."""
    return max((int(n) for n in re.findall(r"\\(?:\\|([0-9]))", rewrite) if n), default=0)


def _rewritten(rewrite: str, match: re.Match) -> tuple[str, bool]:
    """RE2's Rewrite: \\0 .. \\9 are groups (unset ones empty), \\\\ a backslash; another escape
    stops it, returning what it wrote and False."""
    out, at = [], 0
    while at < len(rewrite):
        c = rewrite[at]
        if c != "\\":
            out.append(c)
            at += 1
            continue
        following = rewrite[at + 1 : at + 2]
        if following.isdigit() and following.isascii():
            out.append(match.group(int(following)) or "")
        elif following == "\\":
            out.append("\\")
        else:
            return "".join(out), False
        at += 2
    return "".join(out), True


def _replace_all(pattern: re.Pattern, rewrite: str, text: str) -> str:
    """RE2::GlobalReplace: every match left to right; an empty match where the last one ended is
    not one (the character there is kept and the search moves past it)."""
    out: list[str] = []
    position, last_end, count = 0, -1, 0
    while position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            break
        out.append(text[position : match.start()])
        if match.start() == match.end() == last_end:
            out.append(text[position : position + 1])
            position += 1
            continue
        out.append(_rewritten(rewrite, match)[0])
        position = last_end = match.end()
        count += 1
    return "".join(out) + text[position:] if count else text


def _replace_first(pattern: re.Pattern, rewrite: str, text: str) -> str:
    match = pattern.search(text)
    if match is None:
        return text
    replacement, complete = _rewritten(rewrite, match)
    return text[: match.start()] + replacement + text[match.end() :] if complete else text


def _replace(node: TfNode, x: np.ndarray, pattern: bytes, rewrite: bytes) -> np.ndarray:
    compiled = compile_re2(pattern)
    rewrite_text = _decoded(rewrite)
    if _highest_group(rewrite_text) > compiled.groups:
        return x.copy()
    replace = _replace_all if node.attr("replace_global", True) else _replace_first
    return map_strings(lambda v: _encoded(replace(compiled, rewrite_text, _decoded(v))), x)


def _scalar(value: np.ndarray, what: str) -> bytes:
    if value.ndim != 0:
        raise ValueError(f"{what} must be scalar, but received {shape_text(value.shape)}")
    return value[()]


@register("StaticRegexReplace")
def _static_regex_replace(node: TfNode, x):
    """StaticRegexReplace: RE2 `pattern` replaced by `rewrite` (\\0-\\9: groups), everywhere or once."""
    return _replace(node, x, node.attr("pattern"), node.attr("rewrite"))


@register("RegexReplace")
def _regex_replace(node: TfNode, x, pattern, rewrite):
    """RegexReplace: StaticRegexReplace with pattern and rewrite as scalar inputs."""
    return _replace(node, x, _scalar(pattern, "Pattern"), _scalar(rewrite, "Rewrite"))


def _full_match(x: np.ndarray, pattern: bytes) -> np.ndarray:
    compiled = compile_re2(pattern)
    matched = [compiled.fullmatch(_decoded(v)) is not None for v in x.reshape(-1)]
    return np.array(matched, dtype=np.bool_).reshape(x.shape)


@register("StaticRegexFullMatch")
def _static_regex_full_match(node: TfNode, x):
    """StaticRegexFullMatch: whether RE2 `pattern` matches each whole string."""
    return _full_match(x, node.attr("pattern"))


@register("RegexFullMatch")
def _regex_full_match(node: TfNode, x, pattern):
    """RegexFullMatch: StaticRegexFullMatch with the pattern a scalar input."""
    return _full_match(x, _scalar(pattern, "Pattern"))

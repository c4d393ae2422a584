"""Reading a custom op's flexbuffer options the way TFLite's and MediaPipe's kernels do.

Those kernels look their keys up in the flexbuffer map and read each with `AsInt64()` or `AsBool()`: a
missing key reads as 0 (false), a float is truncated toward zero, a bool is 0 or 1. Kernels that keep no
defaults of their own (AudioSpectrogram, Mfcc) behave as if a missing key were 0. Shared by the audio
ops and the MediaPipe op pack.
"""

from __future__ import annotations

import math
from typing import Any

from ..model.custom_options import decode_custom_options


def read_map(op: str, buffer: bytes | None) -> dict[str, Any]:
    """The op's options map; a model without one is refused (LiteRT would read through a null map)."""
    options = decode_custom_options(buffer)
    if not isinstance(options, dict):
        raise ValueError(f"{op} needs its options as a flexbuffer map, got {type(options).__name__}")
    return options


def as_int64(options: dict[str, Any], key: str) -> int:
    """flexbuffers' AsInt64 of `options[key]` for what converters write (ints, floats, bools). Other
    kinds read as 0 here; flexbuffers would parse a numeric string or count an untyped vector."""
    value = options.get(key)
    if isinstance(value, (bool, int)):
        return int(value)
    if isinstance(value, float) and math.isfinite(value):
        return math.trunc(value)
    return 0


def as_c_int(options: dict[str, Any], key: str) -> int:
    """AsInt64 stored into a C `int` field (wraps to 32 bits), as the kernels' parameter structs do."""
    return (as_int64(options, key) + 2**31) % 2**32 - 2**31


def as_bool(options: dict[str, Any], key: str) -> bool:
    """flexbuffers' AsBool: nonzero is true."""
    return as_int64(options, key) != 0

"""Custom-op options: the flexbuffer map a converter stores in `Operator.custom_options`.

A custom kernel's init receives those raw bytes; `decode_custom_options(buffer)` turns them into Python
values (a dict for the usual flexbuffer map), and `encode_custom_options(dict)` writes them (ModelBuilder
uses it).
"""

from __future__ import annotations

from typing import Any

from flatbuffers import flexbuffers

from ..errors import ModelError


def decode_custom_options(buffer: bytes | None) -> Any:
    """The Python value of a flexbuffer (usually a dict); None for no options. Bytes that are no
    flexbuffer raise a ModelError (a ValueError): they are the model's."""
    if not buffer:
        return None
    try:
        return flexbuffers.Loads(bytes(buffer))
    except Exception as error:  # flexbuffers raises assorted errors on garbage
        raise ModelError(
            f"custom options are not a valid flexbuffer ({type(error).__name__}: {error})"
        ) from None


def encode_custom_options(value: Any) -> bytes:
    """Serialize a Python value (dict of numbers, strings, bools, lists) as a flexbuffer."""
    return bytes(flexbuffers.Dumps(value))

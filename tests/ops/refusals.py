"""Refusals checked on both sides: pytflite fails a model with a message, and LiteRT fails it too."""

from __future__ import annotations

import re

import pytest

import pytflite
from tests.oracle import litert_interpreter, run
from tests.single_op import SingleOpModel


def fails_like_litert(model: SingleOpModel, message: str, litert_says_it: bool = True) -> None:
    """Both interpreters refuse `model` (at allocation or invocation); pytflite's error contains
    `message`, and so does LiteRT's unless `litert_says_it` is False (TFLite fails there without a
    message, or with one pytflite words differently on purpose)."""
    built, feeds = model.build()
    with pytest.raises(RuntimeError, match=re.escape(message)):
        run(pytflite.Interpreter(model_content=built), feeds)
    with pytest.raises((RuntimeError, ValueError)) as theirs:
        run(litert_interpreter(built), feeds)
    if litert_says_it:
        assert message in str(theirs.value), str(theirs.value)

"""Float errors (overflow, division by zero, NaN) are results during invoke, never warnings, and the
caller's NumPy error state is the same afterwards (core/float_errors.py)."""

from __future__ import annotations

import importlib
import sys
import warnings

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core import float_errors
from pytflite.model.builder import ModelBuilder


def _model(op) -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [4])
    y = builder.add_tensor("y", T.FLOAT32, [4])
    builder.add_operator(op, [x], [y])
    builder.add_output(y)
    return builder.build()


@pytest.mark.parametrize("op", [Op.EXP, Op.LOG, Op.RSQRT])
def test_float_errors_are_results_not_warnings(op):
    interpreter = pytflite.Interpreter(model_content=_model(op))
    interpreter.allocate_tensors()
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):  # (walked, then written steps)
            interpreter.set_tensor(0, np.float32([1e3, -1.0, 0.0, np.nan]))
            interpreter.invoke()
    assert np.geterr() == before
    assert not np.isfinite(interpreter.get_tensor(interpreter.get_output_details()[0]["index"])).all()


@pytest.mark.parametrize("numpy_internals", [True, False])
def test_ignore_and_restore(monkeypatch, numpy_internals):
    """Through NumPy 2's error-state variable, and through np.errstate where it is missing."""
    module = float_errors
    if not numpy_internals:
        monkeypatch.setitem(sys.modules, "numpy._core._ufunc_config", None)
        module = importlib.reload(float_errors)
        assert module._extobj_contextvar is None
    try:
        with np.errstate(over="raise", invalid="warn"):
            token = module.ignore()
            assert set(np.geterr().values()) == {"ignore"}
            np.float32([3e38]) * np.float32(10)  # no error
            module.restore(token)
            assert np.geterr()["over"] == "raise"
    finally:
        monkeypatch.undo()
        importlib.reload(float_errors)

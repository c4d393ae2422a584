"""The optional compiled kernels (ops/jit.py): when they run, when they do not, and that a kernel given
one really calls it. Their results against LiteRT are checked where each kernel is tested, with the
`kernels` fixture (NumPy and compiled)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite.ops import jit
from pytflite.ops.recurrent.activations import sigmoid_into, tanh_into
from tests.ops.test_recurrent import _lstm_inputs, _model, _runs
from tests.oracle import run
from tests.single_op import Operand, SingleOpModel

Op = pytflite.BuiltinOperator
T = pytflite.TensorType
needs_numba = pytest.mark.skipif(not jit.available(), reason="numba is not installed")


@pytest.fixture(autouse=True)
def _restore():
    yield
    jit.set_enabled(None)


def _plain_lstm(rng, time_major=True):
    steps, batch, n_input, n_cell = 5, 2, 7, 6
    shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    inputs = _lstm_inputs(rng, shape, n_cell, n_cell, batch)
    options = {"fused_activation_function": "TANH", "time_major": time_major, "cell_clip": 0.5}
    return _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(pytflite.TensorType.FLOAT32, None)], options)


def _outputs(model, runs):
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    results = []
    for feeds in runs:
        for detail, value in zip(interpreter.get_input_details(), feeds):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
    return results


def test_import_leaves_numba_unloaded():
    code = "import sys, pytflite; assert 'numba' not in sys.modules, 'numba imported by import pytflite'"
    subprocess.run([sys.executable, "-c", code], check=True)


_OPS = Path(jit.__file__).parent
COMPILED_MODULES = sorted(
    ".".join(path.relative_to(_OPS).with_suffix("").parts) for path in _OPS.rglob("*_compiled.py")
)


@needs_numba
@pytest.mark.parametrize("module", COMPILED_MODULES)
def test_every_compiled_module_compiles(module):
    """A compiled module that fails to compile would only log a warning and leave its kernel on NumPy:
    here it fails."""
    importlib.import_module(f"pytflite.ops.{module}")


def test_switched_off_by_the_environment_and_by_set_enabled(monkeypatch):
    monkeypatch.setenv(jit.ENV_VAR, "0")
    assert jit.compiled("recurrent.lstm_compiled", "plain_lstm_steps") is None
    monkeypatch.setenv(jit.ENV_VAR, "1")
    jit.set_enabled(False)
    assert jit.compiled("recurrent.lstm_compiled", "plain_lstm_steps") is None


def test_without_numba_the_numpy_kernels_run(monkeypatch):
    """A missing (or broken) numba turns the compiled kernels off; the results are the NumPy path's."""
    model, feeds = _plain_lstm(np.random.default_rng(0))
    runs = _runs(feeds, np.random.default_rng(1))
    jit.set_enabled(False)
    expected = _outputs(model, runs)
    jit.set_enabled(True)
    monkeypatch.setitem(jit._modules, "numba", None)
    assert not jit.available()
    assert jit.compiled("recurrent.lstm_compiled", "plain_lstm_steps") is None
    for actual, wanted in zip(_outputs(model, runs), expected):
        np.testing.assert_array_equal(actual, wanted)


@needs_numba
@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
def test_plain_lstm_calls_its_compiled_steps(monkeypatch, time_major):
    from pytflite.ops.recurrent import lstm_compiled

    calls = []
    steps = lstm_compiled.plain_lstm_steps

    def counted(*arguments):
        calls.append(arguments)
        steps(*arguments)

    monkeypatch.setattr(lstm_compiled, "plain_lstm_steps", counted)
    jit.set_enabled(True)  # (whatever PYTFLITE_JIT says)
    model, feeds = _plain_lstm(np.random.default_rng(2), time_major)
    runs = _runs(feeds, np.random.default_rng(3))
    compiled_results = _outputs(model, runs)
    assert len(calls) == len(runs)
    jit.set_enabled(False)
    for actual, wanted in zip(compiled_results, _outputs(model, runs)):
        np.testing.assert_allclose(actual, wanted, rtol=1e-5, atol=1e-6)


@needs_numba
def test_compiled_tanh_is_eigens_bit_for_bit():
    from pytflite.ops.recurrent.lstm_compiled import eigen_tanh

    rng = np.random.default_rng(4)
    values = np.concatenate(
        [
            np.linspace(-9, 9, 4001, dtype=np.float32),
            (rng.standard_normal(2000) * 3).astype(np.float32),
            np.array([0, -0.0, 1e-30, -1e-30, 7.9, -7.91, 100, -1e30, np.inf, -np.inf], np.float32),
        ]
    )
    expected = np.empty_like(values)
    tanh_into(values, expected)
    actual = np.array([eigen_tanh(v) for v in values], np.float32)
    np.testing.assert_array_equal(actual.view(np.int32), expected.view(np.int32))


@needs_numba
def test_compiled_sigmoid_is_eigens_bit_for_bit():
    """eigen_compiled's per-element logistic (the compiled LSTM's and LOGISTIC's) against
    activations.sigmoid_into on its vector path and on its scalar path (every other element), over the
    finite floats the LSTM kernels give it."""
    from pytflite.ops.eigen_compiled import sigmoid_scalar_path, sigmoid_vector_path

    rng = np.random.default_rng(5)
    values = np.concatenate(
        [
            np.linspace(-110, 20, 26001, dtype=np.float32),
            (rng.standard_normal(4000) * 8).astype(np.float32),
            np.array([0, -0.0, 1e-30, -1e-30, 16.6355324, 16.64, -104, -104.01, 3e38, -3e38], np.float32),
        ]
    )
    scalar = np.arange(values.size) % 2 == 1
    expected = np.empty_like(values)
    with np.errstate(all="ignore"):  # (as in an invoke: -3e38 overflows on the way to 0)
        sigmoid_into(values, expected, scalar)
    actual = np.array(
        [
            sigmoid_scalar_path(v) if on else sigmoid_vector_path(v)
            for v, on in zip(values, scalar, strict=True)
        ],
        np.float32,
    )
    np.testing.assert_array_equal(actual.view(np.int32), expected.view(np.int32))


@needs_numba
@pytest.mark.parametrize("constant", [(), (1,)])
def test_small_clamped_float_arithmetic_binds_its_compiled_kernel(constant):
    """A float ADD with its clamp on a small tensor is one compiled call where compiled kernels run
    (a constant operand copied once into a writable array), the ufunc and the clamp where they do not."""
    from pytflite.ops.elementwise import binary_compiled

    a, b = np.arange(16, dtype=np.float32).reshape(1, 16), np.full((1, 16), -3.5, np.float32)
    operands = [Operand(a), Operand(b, constant=1 in constant)]
    model, feeds = SingleOpModel(
        Op.ADD, operands, [T.FLOAT32], {"fused_activation_function": "RELU6"}
    ).build()
    for enabled, first_call in ((True, binary_compiled.add), (False, np.add)):
        jit.set_enabled(enabled)
        interpreter = pytflite.Interpreter(model_content=model)
        (out,) = run(interpreter, feeds[: 2 - len(constant)])
        np.testing.assert_array_equal(out, np.clip(a + b, 0, 6))
        step = interpreter.subgraphs[0].runner.fast_steps[0][0]
        assert step.calls[0].func is first_call

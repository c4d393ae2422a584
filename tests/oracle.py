"""The reference oracle (ai-edge-litert) and the comparison rules every differential test uses.

LiteRT runs with OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES (its builtin kernels, no XNNPACK), the
numerics pytflite promises to match: floats within 1e-5 relative to the output's magnitude, integers
exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytflite
from pytflite.core.node import Registration
from pytflite.ops.resolver import OpResolver

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CORPUS = SHARED / "corpus" / "public"

try:
    from ai_edge_litert import interpreter as litert
except ImportError:  # the test extra is missing: differential tests skip, visibly
    litert = None

requires_litert = pytest.mark.skipif(
    litert is None, reason="ai-edge-litert (the reference oracle) is not installed"
)


def litert_interpreter(model: bytes | str | Path, **kwargs: Any):
    """A LiteRT interpreter on its builtin kernels (no default delegate)."""
    kwargs.setdefault(
        "experimental_op_resolver_type", litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )
    if isinstance(model, (str, Path)):
        return litert.Interpreter(model_path=str(model), **kwargs)
    return litert.Interpreter(model_content=model, **kwargs)


def run(interpreter, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """allocate, set inputs in get_input_details() order, invoke, return outputs in output order."""
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [_output(interpreter, d) for d in interpreter.get_output_details()]


def _output(interpreter, detail) -> np.ndarray:
    try:
        return interpreter.get_tensor(detail["index"])
    except ValueError as error:  # LiteRT cannot read an empty dynamic tensor: build it from the details
        if "Invalid tensor size" not in str(error) or np.prod(detail["shape"]) != 0:
            raise
        return np.empty(detail["shape"], detail["dtype"])


def assert_matches(
    ours: np.ndarray, reference: np.ndarray, rtol: float = 1e-5, what: str = "", scale: float | None = None
) -> None:
    """Floats within `rtol` of the reference's magnitude, or of `scale` when given (the magnitude of the
    terms a kernel summed: a sum that cancels, or an activation that zeroes the large ones, leaves
    outputs far smaller than their rounding error); everything else bit-exact."""
    assert ours.shape == reference.shape, f"{what} shape {ours.shape} != {reference.shape}"
    assert ours.dtype == reference.dtype, f"{what} dtype {ours.dtype} != {reference.dtype}"
    if np.issubdtype(reference.dtype, np.floating) or np.issubdtype(reference.dtype, np.complexfloating):
        finite = np.isfinite(reference)
        np.testing.assert_array_equal(np.isfinite(ours), finite, err_msg=f"{what} non-finite values differ")
        if scale is None:
            scale = float(np.max(np.abs(reference[finite]), initial=0.0))
        np.testing.assert_allclose(
            ours[finite], reference[finite], rtol=rtol, atol=rtol * max(scale, 1e-30), err_msg=what
        )
    else:
        np.testing.assert_array_equal(ours, reference, err_msg=what)


def compare_with_litert(
    model: bytes,
    inputs: Sequence[np.ndarray],
    rtol: float = 1e-5,
    make: Callable = pytflite.Interpreter,
    scale: float | None = None,
    resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
) -> list[np.ndarray]:
    """Run the model in both interpreters, with the OpResolverType named `resolver`, and assert every
    output matches; returns ours. Ours is invoked three times, each checked: the first invoke runs the
    step lists step by step, later ones run them written out (core/step_program.py)."""
    kind = getattr(litert.OpResolverType, resolver)
    reference = run(litert_interpreter(model, experimental_op_resolver_type=kind), inputs)
    interpreter = make(model_content=model, experimental_op_resolver_type=kind)
    for invoke in range(3):
        ours = run(interpreter, inputs)
        assert len(ours) == len(reference)
        for i, (a, b) in enumerate(zip(ours, reference)):
            assert_matches(a, b, rtol, what=f"invoke {invoke} output {i}", scale=scale)
    return ours


def assert_compiled_as_numpy(
    model: bytes, runs: Sequence[Sequence[np.ndarray]], inspect: Callable | None = None
) -> None:
    """Each run's feeds in turn (state carried over) through an interpreter with the compiled kernels
    and through one with the NumPy kernels alone give the same outputs, bit for bit: for inputs the
    compiled kernels hand to NumPy (values that are not finite), for instance. `inspect(interpreter,
    compiled)` may look at each interpreter after allocation. Skips where numba is missing."""
    from pytflite.ops import jit

    if not jit.available():
        pytest.skip("numba is not installed: no compiled kernels to test")
    outputs = {}
    for compiled in (True, False):
        jit.set_enabled(compiled)
        try:
            interpreter = pytflite.Interpreter(model_content=model)
            interpreter.allocate_tensors()
            if inspect is not None:
                inspect(interpreter, compiled)
            outputs[compiled] = [run(interpreter, feeds) for feeds in runs]
        finally:
            jit.set_enabled(None)
    for ours, numpy_only in zip(outputs[True], outputs[False]):
        for a, b in zip(ours, numpy_only):
            np.testing.assert_array_equal(a, b)


def details_equal(ours: dict, theirs: dict) -> None:
    """Assert two tensor-details dicts are equal, arrays and dtypes included."""
    assert set(ours) == set(theirs), (set(ours), set(theirs))
    for key in theirs:
        a, b = ours[key], theirs[key]
        if key == "quantization_parameters":
            assert set(a) == set(b)
            for k in b:
                if isinstance(b[k], np.ndarray):
                    assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), (key, k, a[k], b[k])
                else:
                    assert a[k] == b[k], (key, k, a[k], b[k])
        elif key == "sparsity_parameters":
            _nested_equal(a, b, key)
        elif isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b), (key, a, b)
        else:
            assert a == b, (key, a, b)


def _nested_equal(a: Any, b: Any, where: str) -> None:
    if isinstance(b, dict):
        assert isinstance(a, dict) and set(a) == set(b), where
        for k in b:
            _nested_equal(a[k], b[k], f"{where}.{k}")
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _nested_equal(x, y, f"{where}[{i}]")
    elif isinstance(b, np.ndarray):
        assert np.array_equal(a, b) and np.asarray(a).dtype == b.dtype, where
    else:
        assert a == b, where


class AnyOpResolver(OpResolver):
    """Gives every builtin and custom op a do-nothing kernel, so any model loads for inspection."""

    def find_builtin(self, op, version):
        return Registration(builtin_code=op, version=version)

    def find_custom(self, name, version):
        return Registration(custom_name=name, version=version)

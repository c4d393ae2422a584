"""Every Flex fixture (tests/fixtures/flex/NAME.tflite + NAME.npz, made by the make_*.py scripts there
with TF 2.18.1's converter and recorded in its interpreter) runs on pytflite with the default resolver
and gives TF's outputs: floats within 1e-5 relative (docs/flex.md says where TF's arithmetic differs),
integers, bools and strings exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytflite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flex"
MODELS = sorted(path.stem for path in FIXTURES.glob("*.tflite"))


def run_fixture(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """pytflite's outputs and TF's recorded ones for fixture `name`."""
    recorded = np.load(FIXTURES / f"{name}.npz", allow_pickle=True)
    inputs = [recorded[f"input_{i}"] for i in range(sum(k.startswith("input_") for k in recorded))]
    expected = [recorded[f"output_{i}"] for i in range(sum(k.startswith("output_") for k in recorded))]
    interpreter = pytflite.Interpreter(model_path=str(FIXTURES / f"{name}.tflite"))
    details = interpreter.get_input_details()
    for detail, value in zip(details, inputs, strict=True):
        if list(detail["shape"]) != list(value.shape):
            interpreter.resize_tensor_input(detail["index"], value.shape)
    interpreter.allocate_tensors()
    for detail, value in zip(details, inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()], expected


def assert_matches_tf(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, TF {expected.shape}"
    if expected.dtype.kind in "fc":
        assert actual.dtype == expected.dtype, f"{what}: {actual.dtype}, TF {expected.dtype}"
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        assert actual.dtype.kind == expected.dtype.kind, f"{what}: {actual.dtype}, TF {expected.dtype}"
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def test_the_corpus_is_there():
    assert len(MODELS) >= 10


@pytest.mark.parametrize("name", MODELS)
def test_flex_model_matches_tensorflow(name):
    actual, expected = run_fixture(name)
    assert len(actual) == len(expected)
    for i, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert_matches_tf(got, want, f"{name} output {i}")

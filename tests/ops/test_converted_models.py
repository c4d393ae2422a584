"""The ops of issue 15 that TensorFlow's converter emits, on the models it makes of them, against LiteRT.

The fixtures are tests/fixtures/converted/*.tflite, written by make_models.py beside them (TF 2.21.0,
builtins only; custom ops only where TFLite has its own). Each file must still hold the ops listed here,
so a conversion that came out differently fails rather than testing something else. Each model runs twice
on the same interpreters: the random ops must continue their seeded streams as LiteRT does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite.model.reader import read_model
from tests.oracle import assert_matches, litert_interpreter, requires_litert

pytestmark = requires_litert

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "converted"

OPERATORS = {  # file -> every operator it holds
    "nms_v4": {"NON_MAX_SUPPRESSION_V4"},
    "nms_v5": {"NON_MAX_SUPPRESSION_V5"},
    "random": {"RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL", "MUL", "ADD"},
    "multinomial": {"MULTINOMIAL"},
    "sparse_to_dense": {"SPARSE_TO_DENSE", "CAST"},
    "bitcast": {"BITCAST", "RESHAPE"},
    "audio": {"AudioSpectrogram", "Mfcc"},
    "detection_postprocess": {"TFLite_Detection_PostProcess", "LOGISTIC"},
}
EXACT = {"random", "multinomial"}  # seeded streams: float outputs bit for bit too


def _boxes(rng: np.random.Generator, count: int) -> np.ndarray:
    """Corner boxes around a few centres, so that many overlap."""
    centres = rng.uniform(0.2, 0.8, (3, 2))[rng.integers(0, 3, count)]
    centres += rng.normal(0, 0.03, (count, 2))
    sizes = rng.uniform(0.1, 0.3, (count, 2))
    return np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1).astype(np.float32)


def _inputs(name: str, rng: np.random.Generator) -> list[np.ndarray]:
    if name in ("nms_v4", "nms_v5"):
        return [_boxes(rng, 10), rng.uniform(0, 1, 10).astype(np.float32)]
    if name == "random":
        return [np.array([3, 4], np.int32)]
    if name == "multinomial":
        return [rng.normal(0, 2, (3, 5)).astype(np.float32)]
    if name == "sparse_to_dense":
        flat = np.sort(rng.choice(30, 4, replace=False))
        indices = np.stack([flat // 5, flat % 5], axis=1).astype(np.int32)
        return [indices, rng.normal(0, 1, 4).astype(np.float32)]
    if name == "bitcast":
        return [rng.normal(0, 100, (2, 3)).astype(np.float32)]
    if name == "audio":
        t = np.arange(4000)[:, None] / 16000
        tone = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal((4000, 1))
        return [tone.astype(np.float32)]
    if name == "detection_postprocess":
        return [
            rng.normal(0, 0.5, (1, 16, 4)).astype(np.float32),
            rng.normal(0, 2, (1, 16, 4)).astype(np.float32),
        ]
    raise AssertionError(f"no inputs for {name}")


def _invoke(interpreter, inputs: list[np.ndarray]) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def test_every_fixture_has_its_expectations():
    assert {path.stem for path in FIXTURES.glob("*.tflite")} == set(OPERATORS)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_converted_model_matches_litert(name):
    model = (FIXTURES / f"{name}.tflite").read_bytes()
    assert {code.name for code in read_model(model).operator_codes} == OPERATORS[name]
    ours = pytflite.Interpreter(model_content=model)
    theirs = litert_interpreter(model)
    ours.allocate_tensors()
    theirs.allocate_tensors()
    rng = np.random.default_rng(15)
    for run in range(2):
        inputs = _inputs(name, rng)
        expected = _invoke(theirs, inputs)
        for i, (a, b) in enumerate(zip(_invoke(ours, inputs), expected, strict=True)):
            assert_matches(a, b, rtol=0.0 if name in EXACT else 1e-5, what=f"{name} run {run} output {i}")

"""Native delegates on the public corpus (issue #19's "Done when"): the same compiled library under
pytflite's and under ai-edge-litert's `load_delegate`, on converter-made models it claims nodes of.

Both runtimes must make the same number of DELEGATE nodes and give the same outputs. Their CPU kernels
agree on float models only within the oracle's tolerance (NumPy's and LiteRT's summation orders differ),
so "the same" is checked in three parts: in each runtime the delegate's outputs are bit-identical to the
runtime's own CPU run (the delegate computes what the CPU kernels compute, on the values it is given);
the two runtimes agree bit for bit wherever their CPU runs do; and within the tolerance elsewhere.
A model the delegate cannot run fails the same way in both."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pytflite
from pytflite.delegates.native import abi
from tests.delegates.native.helpers import delegate_nodes, make_interpreter
from tests.oracle import CORPUS, assert_matches, litert, requires_litert, run

pytestmark = [
    pytest.mark.skipif(abi.check_platform() is not None, reason=str(abi.check_platform())),
    pytest.mark.skipif(
        not (CORPUS / "manifest.json").exists(), reason=f"public corpus not found at {CORPUS}"
    ),
    requires_litert,
]

MODELS = (
    {entry["name"]: entry for entry in json.loads((CORPUS / "manifest.json").read_text())["models"]}
    if (CORPUS / "manifest.json").exists()
    else {}
)
MY_DYNAMIC = {"internal_tensors": "dynamic"}

# (library, options, model): models whose float ADD/SUB/MUL nodes the delegate claims
RUNS = [
    ("arith", {}, "mobilenet_v2_f32"),  # ten residual ADDs between convolutions
    ("arith", {}, "transformer_f32"),  # a MUL -> ADD partition among broadcasting ADDs it leaves alone
    ("arith", {}, "small_cnn"),
    ("arith", {}, "zoo_shape_ops"),  # the CPU parts agree bit for bit: the whole outputs must too
    ("arith", {}, "zoo_int_types"),  # one float MUL among integer ADD/SUB/MUL
    ("my", MY_DYNAMIC, "mobilenet_v2_f32"),
    ("my", MY_DYNAMIC, "zoo_shape_ops"),
]


def inputs(name: str) -> list[np.ndarray]:
    stored = np.load(CORPUS / MODELS[name]["npz"])
    return [stored[f"input_{i}"] for i in range(len(MODELS[name]["inputs"]))]


def identical(first: list[np.ndarray], second: list[np.ndarray]) -> bool:
    return all(a.shape == b.shape and np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second))


@pytest.mark.parametrize(("library", "options", "name"), RUNS)
def test_outputs_are_litert_s(built, library, options, name):
    path, values = CORPUS / MODELS[name]["file"], inputs(name)
    ours = make_interpreter(pytflite, path, [pytflite.load_delegate(built[library], options)])
    theirs = make_interpreter(litert, path, [litert.load_delegate(str(built[library]), options)])
    assert delegate_nodes(ours) == delegate_nodes(theirs) > 0
    ours_out, theirs_out = run(ours, values), run(theirs, values)
    ours_cpu = run(make_interpreter(pytflite, path, []), values)
    theirs_cpu = run(make_interpreter(litert, path, []), values)
    assert identical(ours_out, ours_cpu), "pytflite: the delegate changed values"
    assert identical(theirs_out, theirs_cpu), "LiteRT: the delegate changed values"
    if identical(ours_cpu, theirs_cpu):
        assert identical(ours_out, theirs_out)
    for index, (mine, reference) in enumerate(zip(ours_out, theirs_out)):
        assert_matches(mine, reference, what=f"{name} output {index}")


@pytest.mark.parametrize("name", ["transformer_f32", "control_flow"])
def test_my_delegate_refuses_broadcasting_as_under_litert(built, name):
    """The guide's MyDelegate claims every float ADD/SUB but computes only equal-size ones: its kernel's
    kTfLiteDelegateError gives the same error text in both runtimes (in control_flow, from inside IF)."""
    path, values = CORPUS / MODELS[name]["file"], inputs(name)
    texts = []
    for runtime in (pytflite, litert):
        interpreter = make_interpreter(runtime, path, [runtime.load_delegate(str(built["my"]))])
        with pytest.raises(RuntimeError) as raised:
            run(interpreter, values)
        texts.append(str(raised.value))
    assert texts[0] == texts[1]
    assert "(MyDelegate) failed to invoke." in texts[0]


def test_static_only_delegate_is_refused_by_a_dynamic_graph(built):
    """gru's WHILE makes dynamic tensors; a delegate without kTfLiteDelegateFlagsAllowDynamicTensors is
    refused by both runtimes (LiteRT's exception has no text: it logs it)."""
    path = str(CORPUS / MODELS["gru"]["file"])
    with pytest.raises(RuntimeError):
        make_interpreter(litert, path, [litert.load_delegate(str(built["arith"]))])
    with pytest.raises(RuntimeError, match="only supports static-sized tensors"):
        make_interpreter(pytflite, path, [pytflite.load_delegate(built["arith"])])


def test_a_delegate_allowing_dynamic_tensors_runs_a_dynamic_graph(built):
    """With kTfLiteDelegateFlagsAllowDynamicTensors the same library is applied to gru (a WHILE whose body
    has dynamic tensors and float ADD/SUB/MUL) by both runtimes, and changes no value in either."""
    path, values = CORPUS / MODELS["gru"]["file"], inputs("gru")
    options = {"allow_dynamic": 1}
    interpreter = make_interpreter(pytflite, path, [pytflite.load_delegate(built["arith"], options)])
    ours = run(interpreter, values)
    claimed = [s.nodes[i][0].delegate for s in interpreter.subgraphs for i in s.execution_plan]
    assert sum(d is not None for d in claimed) >= 6  # three in each WHILE body
    theirs = run(make_interpreter(litert, path, [litert.load_delegate(str(built["arith"]), options)]), values)
    assert identical(ours, run(make_interpreter(pytflite, path, []), values))
    assert identical(theirs, run(make_interpreter(litert, path, []), values))
    for index, (mine, reference) in enumerate(zip(ours, theirs)):
        assert_matches(mine, reference, what=f"gru output {index}")

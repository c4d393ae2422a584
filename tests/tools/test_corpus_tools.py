"""Every command on the public corpus (../shared/corpus/public), when it is present.

analyze and visualize must work on every model, run on every model pytflite can run (the others must
fail with TFLite's missing-op or not-supported-yet message, one line, no traceback); benchmark, profile
and compare run on representative models through the installed entry point.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from pytflite.tools.cli import main
from tests.oracle import CORPUS

from .conftest import run_cli

pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(), reason=f"public corpus not found at {CORPUS}"
)
MODELS = (
    {m["name"]: m for m in json.loads((CORPUS / "manifest.json").read_text())["models"]}
    if (CORPUS / "manifest.json").exists()
    else {}
)
_NOT_YET = ("Didn't find op for builtin opcode", "is not supported yet")


def _cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def atan_ops(workdir):
    return workdir / "atan_ops.py"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_analyze_visualize_and_run_every_model(name, capsys, tmp_path, atan_ops):
    model = CORPUS / MODELS[name]["file"]
    code, out, _ = _cli(capsys, "analyze", model, "--custom-ops", atan_ops)
    assert code == 0
    assert re.search(r"Model size: +\d+ bytes", out)
    assert "operator kinds have a kernel" in out

    code, out, _ = _cli(capsys, "visualize", model, "-o", tmp_path / "g.html", "--custom-ops", atan_ops)
    assert code == 0 and "boxes drawn" in out

    keys = MODELS[name].get("npz_keys", [])
    if any(k == "input_0" or k.startswith("input_0__") for k in keys):
        inputs = ["--input", CORPUS / MODELS[name]["npz"]]  # the corpus's inputs: valid indices and the like
    elif MODELS[name].get("signatures"):
        inputs = ["--signature", sorted(MODELS[name]["signatures"])[0]]
    else:
        inputs = []
    code, out, err = _cli(capsys, "run", model, "--custom-ops", atan_ops, *inputs)
    if code == 2 and any(marker in err for marker in _NOT_YET):
        pytest.skip(err.strip().splitlines()[0])
    assert code == 0, err
    assert "output " in out and "time: load" in out


def test_run_matches_the_corpus_outputs(capsys, workdir):
    model = CORPUS / "mobilenet_v2_f32.tflite"
    code, out, _ = _cli(
        capsys, "run", model, "--input", CORPUS / "mobilenet_v2_f32.npz", "--save", workdir / "m.npz"
    )
    assert code == 0
    expected = np.load(CORPUS / "mobilenet_v2_f32.npz")["output_0"]
    np.testing.assert_allclose(np.load(workdir / "m.npz")["output_0"], expected, rtol=1e-4, atol=1e-6)
    top = int(re.search(r"top-5: (\d+)", out).group(1))
    assert top == int(np.argmax(expected))


def test_entry_point_commands_on_corpus_models(workdir):
    checks = [
        (
            ["run", CORPUS / "atan_custom.tflite", "--custom-ops", "atan_ops.py", "--input", "x=zeros"],
            "output Identity",
        ),
        (["run", CORPUS / "multi_signature.tflite", "--signature", "encode"], "signature 'encode'"),
        (
            [
                "benchmark",
                CORPUS / "dynamic_batch.tflite",
                "--num_runs=3",
                "--min_secs=0",
                "--warmup_min_secs=0",
                "--input_layer_shape=4,8,8,3",
            ],
            "count=3 ",
        ),
        (
            ["profile", CORPUS / "control_flow.tflite", "--num_runs", "2"],
            "Subgraph (index: 6, name: while_body)",
        ),
        (
            ["compare", CORPUS / "small_cnn.tflite", "--delegate", "replay:CONV_2D,DEPTHWISE_CONV_2D"],
            "no divergence",
        ),
        (
            ["visualize", CORPUS / "mobilenet_v2_f32.tflite", "-o", "m.html", "--delegate", "replay:CONV_2D"],
            "delegate partition(s)",
        ),
    ]
    for args, expected in checks:
        result = run_cli(*args, cwd=workdir)
        assert result.returncode == 0, f"{args}: {result.stderr}"
        assert expected in result.stdout, f"{args}: {result.stdout}"

"""The `pytflite` command through a subprocess, on ModelBuilder models (no corpus needed)."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from pytflite.tools.png import decode_png

from .conftest import run_cli

try:
    import ai_edge_litert  # noqa: F401

    HAVE_LITERT = True
except ImportError:
    HAVE_LITERT = False


def test_help_lists_every_command():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("run", "benchmark", "profile", "analyze", "visualize", "compare"):
        assert command in result.stdout


def test_console_script_is_declared():
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts")}
    assert scripts.get("pytflite") == "pytflite.tools.cli:main"


# --- run ------------------------------------------------------------------------------------------


def test_run_prints_outputs_top_k_and_time(cli, workdir):
    image = np.random.default_rng(1).standard_normal([1, 8, 8, 3]).astype(np.float32)
    np.save(workdir / "image.npy", image)
    result = cli(
        "run", "classifier.tflite", "--input", "image=image.npy", "--top_k", "3", "--save", "out.npz"
    )
    out = result.stdout
    assert "input  image: float32[1, 8, 8, 3]" in out
    assert re.search(r"output probabilities: float32\[1, 5\] \[.*\] min \S+ max \S+ mean 0\.2 ", out)
    top = re.search(r"top-3: (\d+) \(([\d.e-]+)\), (\d+)", out)
    assert top, out
    assert re.search(r"time: load [\d.]+ ms, allocate [\d.]+ ms, invoke [\d.]+ ms", out)

    import pytflite

    interpreter = pytflite.Interpreter(model_path=str(workdir / "classifier.tflite"))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image)
    interpreter.invoke()
    expected = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    assert int(top.group(1)) == int(np.argmax(expected))
    np.testing.assert_array_equal(np.load(workdir / "out.npz")["output_0"], expected)


def test_run_png_input_with_labels(cli, workdir):
    from pytflite.tools.png import encode_png

    picture = np.zeros([16, 16, 3], np.uint8)
    picture[:, :8] = 255
    (workdir / "picture.png").write_bytes(encode_png(picture))
    (workdir / "labels.txt").write_text("\n".join(f"class{i}" for i in range(5)))
    out = cli("run", "classifier.tflite", "--input", "picture.png", "--labels", "labels.txt").stdout
    assert "input  image: float32[1, 8, 8, 3] min 0 max 1 mean 0.5" in out
    assert re.search(r"top-5: \d+ 'class\d'", out)


def test_run_custom_ops_module(cli):
    out = cli("run", "custom.tflite", "--custom-ops", "atan_ops.py", "--input", "x=zeros").stdout
    # atan(0 + 1) = pi / 4 everywhere
    assert "output y: float32[5] [0.785398, 0.785398, 0.785398, 0.785398, 0.785398]" in out


def test_run_without_the_custom_op_fails_with_tflites_message(cli):
    result = cli("run", "custom.tflite", expect=2)
    assert "Encountered unresolved custom op: Atan." in result.stderr
    assert "Traceback" not in result.stderr


def test_run_signature(cli, workdir):
    np.save(workdir / "x.npy", np.arange(4, dtype=np.float32).reshape(1, 4))
    out = cli("run", "signatures.tflite", "--signature", "shift", "--input", "x=x.npy").stdout
    assert "signature 'shift'" in out
    assert "output y: float32[1, 4] [1., 2., 3., 4.]" in out
    result = cli("run", "signatures.tflite", "--signature", "nope", expect=2)
    assert "no signature 'nope' (signatures: 'double', 'shift')" in result.stderr


def test_run_with_delegate_reports_partitions(cli):
    out = cli("run", "classifier.tflite", "--delegate", "delegates.py:ConvMean").stdout
    assert "after delegation into 2 partition(s)" in out


def test_run_debug_prints_every_node(cli):
    result = cli("run", "classifier.tflite", "--debug")
    lines = [line for line in result.stderr.splitlines() if line.startswith("#")]
    assert [line.split()[1] for line in lines] == [
        "CONV_2D",
        "ADD",
        "CONV_2D",
        "MEAN",
        "FULLY_CONNECTED",
        "SOFTMAX",
    ]
    assert re.search(r"out T#\d+ +probabilities +float32\[1, 5\]", result.stderr)
    assert " in  T#" not in result.stderr  # level 1: outputs only


def test_debug_env_var_level_two_shows_inputs(cli):
    result = cli("run", "classifier.tflite", env={"PYTFLITE_DEBUG": "2"})
    assert re.search(r"in  T#0 +image +float32\[1, 8, 8, 3\]", result.stderr)
    assert "out T#" in result.stderr


def test_bad_input_name_is_one_line_error(cli):
    result = cli("run", "classifier.tflite", "--input", "nope=random", expect=2)
    assert result.stderr.strip() == "pytflite run: error: the model has no input 'nope' (inputs: 'image')"


# --- benchmark ------------------------------------------------------------------------------------


def test_benchmark_flags_progress_memory_and_op_profiling(cli, workdir):
    result = cli(
        "benchmark",
        "classifier.tflite",
        "--num_runs=4",
        "--warmup_runs",
        "2",
        "--min_secs",
        "0",
        "--warmup_min_secs=0",
        "--num_threads",
        "1",
        "--enable_op_profiling=true",
        "--profiling_output_csv_file",
        "bench.csv",
        "--progress",
        "always",
        "--json",
        "bench.json",
    )
    out = result.stdout
    assert "Min num runs: [4]" in out
    assert "Running benchmark for at least 4 iterations and at least 0 seconds" in out
    assert re.search(r"count=4 first=\d+ curr=\d+ min=\d+ max=\d+ avg=\S+ std=\d+", out)
    assert re.search(
        r"Inference timings in us: Init: \d+, First inference: \d+, Warmup \(avg\): \S+, Inference \(avg\): \S+",
        out,
    )
    assert re.search(r"invoke ms +min +median +mean +p90 +max\npytflite( +[\d.]+){5}", out)
    assert re.search(r"Memory: arena [\d.]+ \w+ \(lower bound [\d.]+ \w+\).*peak RSS [\d.]+ \w+", out)
    assert "Operator-wise Profiling Info for Regular Benchmark Runs:" in out
    assert "============================== Summary by node type ==============================" in out
    assert "[runs " not in result.stderr and re.search(r"runs \[#+\] 4 runs", result.stderr)
    table = (workdir / "bench.csv").read_text()
    assert "node type, start, first, avg_ms, %, cdf%, mem KB, times called, name" in table
    data = json.loads((workdir / "bench.json").read_text())
    assert data["runs"] == 4 and data["arena_bytes"] > 0


def test_benchmark_input_layer_shape_and_partition_limits(cli):
    out = cli(
        "benchmark",
        "classifier.tflite",
        "--num_runs=2",
        "--min_secs=0",
        "--warmup_min_secs=0",
        "--delegate",
        "delegates.py:ConvMean",
        "--max_delegated_partitions=1",
        "--input_layer=image",
        "--input_layer_shape=1,8,8,3",
    ).stdout
    assert "Max number of delegated partitions: [1]" in out
    # the largest partition only: CONV_2D + MEAN (2 nodes) out of 6
    assert "2 nodes delegated out of 6 nodes with 1 partitions." in out


@pytest.mark.skipif(not HAVE_LITERT, reason="ai-edge-litert is not installed")
def test_benchmark_compare_litert_prints_ratios(cli):
    out = cli(
        "benchmark",
        "classifier.tflite",
        "--num_runs=3",
        "--min_secs=0",
        "--warmup_min_secs=0",
        "--compare-litert",
    ).stdout
    rows = re.findall(r"^(LiteRT \w+) +([\d.]+) +([\d.]+) +([\d.]+)x +(\S+)$", out, re.M)
    assert [r[0] for r in rows] == ["LiteRT builtin", "LiteRT XNNPACK"]
    assert all(float(r[4]) < 1e-4 for r in rows)  # the same outputs


# --- profile --------------------------------------------------------------------------------------


def test_profile_tables_csv_and_plot(cli, workdir):
    out = cli(
        "profile", "classifier.tflite", "--num_runs", "3", "--csv", "ops.csv", "--plot", "ops.png"
    ).stdout
    for title in ("Run Order", "Top by Computation Time", "Summary by node type"):
        assert f"============================== {title} ==============================" in out
    assert "Timings (microseconds): count=3 " in out
    assert "6 nodes observed" in out
    rows = list(csv.reader(io.StringIO((workdir / "ops.csv").read_text())))
    run_order = [r for r in rows if len(r) == 9 and r[0] != "node type"][:6]
    assert [r[0] for r in run_order] == ["CONV_2D", "ADD", "CONV_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX"]
    assert run_order[-1][8].strip() == "[probabilities]:5"
    image = decode_png((workdir / "ops.png").read_bytes())
    assert image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 300
    assert (image == [66, 133, 244]).all(axis=2).any()  # the bars


def test_profile_per_operator_delegate(cli):
    out = cli(
        "profile",
        "classifier.tflite",
        "--num_runs",
        "2",
        "--delegate",
        "replay:CONV_2D,MEAN",
        "--delegate-option",
        "flags=4",
    ).stdout
    run_order = out.split("Top by Computation Time")[0]
    assert "Delegate/CONV_2D:0" in run_order and "Delegate/MEAN:3" in run_order
    assert "ReplayDelegate" not in run_order  # no macro-node row: the delegate reports its ops


# --- analyze --------------------------------------------------------------------------------------


def test_analyze_lists_ops_tensors_sizes_and_support(cli):
    out = cli("analyze", "custom.tflite").stdout
    assert "Your TFLite model has '1' subgraph(s)." in out
    assert "Subgraph#0 main(T#0) -> [T#3]" in out
    assert "  Op#1 Atan(T#2) -> [T#3]" in out
    assert "  T#1(offset) shape:[1], type:FLOAT32 RO 4 bytes, buffer: 1, data:[1]" in out
    assert re.search(r"Model size: +\d+ bytes", out)
    assert re.search(r"yes ADD v1 +x1 +ops/elementwise/", out)
    assert re.search(r"NO  Atan v1 +x1 +custom op: not registered", out)
    assert "pytflite: the model does not run yet" in out
    with_ops = cli("analyze", "custom.tflite", "--custom-ops", "atan_ops.py").stdout
    assert "2 of 2 operator kinds have a kernel." in with_ops
    assert "pytflite: loads and allocates" in with_ops


def test_analyze_signatures(cli):
    out = cli("analyze", "signatures.tflite").stdout
    assert "Your TFLite model has '2' signature_def(s)." in out
    assert "Signature#1 key: 'shift'\n- Subgraph: Subgraph#1\n- Inputs: \n    'x' : T#1_0\n" in out


def test_analyze_delegate_partition_preview(cli):
    out = cli("analyze", "classifier.tflite", "--delegate", "delegates.py:ConvMean").stdout
    assert "Delegate delegates.py:ConvMean claims 3 of 6 nodes of Subgraph#0 in 2 partition(s):" in out
    assert re.search(r"Partition 0 -> node #\d+ ConvMean: Op#0 CONV_2D\n", out)
    assert re.search(r"Partition 1 -> node #\d+ ConvMean: Op#2 CONV_2D, Op#3 MEAN\n", out)
    assert re.search(
        r"Plan after delegation: #\d+ ConvMean -> #1 ADD -> #\d+ ConvMean -> #4 FULLY_CONNECTED", out
    )


# --- visualize (the page itself is checked in a browser by test_visualize_browser.py) -------------


def test_visualize_writes_self_contained_html(cli, workdir):
    out = cli(
        "visualize", "classifier.tflite", "-o", "graph.html", "--delegate", "delegates.py:ConvMean"
    ).stdout
    assert "wrote graph.html: 1 subgraph(s), 5 nodes, 2 delegate partition(s), 7 boxes drawn" in out
    page = (workdir / "graph.html").read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched from the network
    assert '"delegate":"ConvMean"' in page


def test_visualize_model_the_runtime_cannot_load(cli, workdir):
    out = cli("visualize", "custom.tflite", "-o", "custom.html").stdout
    assert "wrote custom.html" in out


# --- compare --------------------------------------------------------------------------------------


def test_compare_finds_the_first_divergent_tensor(cli):
    result = cli("compare", "classifier.tflite", "--delegate", "delegates.py:BrokenMean", expect=1)
    out = result.stdout
    assert "first divergence: T#" in out and "'pooled' float32[1, 6], output of node #3 MEAN" in out
    assert re.search(r"computed in delegate partition node #\d+ BrokenMean \(nodes #3 MEAN\)", out)
    assert re.search(r"max \|diff\| 1 at \[0, \d\]", out)
    assert "6 of 6 elements differ" in out
    assert "later tensor(s) diverge too" in out


def test_compare_faithful_delegate_matches(cli):
    out = cli("compare", "classifier.tflite", "--delegate", "delegates.py:ConvMean").stdout
    assert "no divergence" in out
    assert "not visible" in out  # CONV_2D -> MEAN's middle tensor lives inside the partition


@pytest.mark.skipif(not HAVE_LITERT, reason="ai-edge-litert is not installed")
def test_compare_against_litert(cli):
    out = cli("compare", "classifier.tflite", "--litert").stdout
    assert "against ai-edge-litert (builtin kernels)" in out
    assert "compared 6 tensors" in out and "no divergence" in out


def test_compare_with_the_onnxruntime_delegate(cli):
    """The accelerating delegate from the command line, by its module path."""
    delegate = "pytflite.delegates.onnxruntime:OnnxRuntimeDelegate"
    assert (
        "1 nodes after delegation into 1 partition(s)"
        in cli("run", "classifier.tflite", "--delegate", delegate).stdout
    )
    assert "no divergence" in cli("compare", "classifier.tflite", "--delegate", delegate).stdout


def test_compare_needs_a_reference(cli):
    result = cli("compare", "classifier.tflite", expect=2)
    assert "compare needs --delegate" in result.stderr


def test_debug_env_var_traces_library_interpreters(workdir):
    code = (
        "import numpy as np, pytflite\n"
        "it = pytflite.Interpreter(model_path='classifier.tflite')\n"
        "it.allocate_tensors()\n"
        "it.invoke()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTFLITE_DEBUG": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert [line.split()[1] for line in result.stderr.splitlines() if line.startswith("#")][:2] == [
        "CONV_2D",
        "ADD",
    ]

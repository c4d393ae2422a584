"""examples/native_delegate works as its README says: the built library (the session's `built["my"]`,
compiled from the example's source) loads into the command line's analyze, run and compare."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytflite.delegates.native import abi
from tests.delegates.native.helpers import EXAMPLE
from tests.oracle import requires_litert

pytestmark = pytest.mark.skipif(abi.check_platform() is not None, reason=str(abi.check_platform()))

DYNAMIC = ["--delegate-option", "internal_tensors=dynamic"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("native_example") / "add_sub.tflite"
    subprocess.run([sys.executable, str(EXAMPLE / "make_model.py"), str(path)], check=True, timeout=120)
    return path


def pytflite_command(*arguments) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytflite", *map(str, arguments)], capture_output=True, text=True, timeout=120
    )


def test_analyze_shows_the_partitions(built, model):
    result = pytflite_command("analyze", model, "--delegate", built["my"])
    assert result.returncode == 0, result.stderr
    assert f"Delegate {built['my']} claims 3 of 4 nodes of Subgraph#0 in 2 partition(s)" in result.stdout
    assert "Plan after delegation: #4 MyDelegate -> #2 MUL -> #5 MyDelegate" in result.stdout


def test_run_needs_memory_for_the_partition_s_own_tensors(built, model):
    inputs = ["--input", "x=ones", "--input", "y=ones"]
    result = pytflite_command("run", model, "--delegate", built["my"], *inputs)
    assert result.returncode != 0
    assert "MyDelegate: tensor t has no memoryNode number 4 (MyDelegate) failed to invoke." in result.stderr
    result = pytflite_command("run", model, "--delegate", built["my"], *DYNAMIC, *inputs)
    assert result.returncode == 0, result.stderr
    assert "output w: float32[2, 3] [0., 0., 0., 0., 0., 0.]" in result.stdout  # (1 + 1 - 1) * 1 - 1


@requires_litert
def test_compare_against_litert(built, model):
    result = pytflite_command("compare", model, "--delegate", built["my"], *DYNAMIC, "--litert")
    assert result.returncode == 0, result.stderr
    assert "no divergence" in result.stdout

"""The examples run as the README says, and print what they claim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_atan_custom_op_example():
    output = run_example("atan_custom_op.py")
    assert "atan_custom.tflite (ADD, Atan)" in output
    assert "without the Python Atan, as TFLite: Encountered unresolved custom op: Atan." in output


def test_my_delegate_example():
    output = run_example("my_delegate.py")
    assert "plan before delegation: 0:CONV_2D -> 1:ADD -> 2:CONV_2D -> 3:MEAN" in output
    assert output.count("6:MyDelegate[0:CONV_2D] -> 1:ADD -> 7:MyDelegate[2:CONV_2D, 3:MEAN]") == 2
    assert output.count("identical to the CPU path") == 2


def test_atan_custom_op_example_loads_into_the_command_line():
    model, ops = EXAMPLES / "models" / "atan_custom.tflite", EXAMPLES / "atan_custom_op.py"
    result = subprocess.run(
        [sys.executable, "-m", "pytflite", "run", str(model), "--custom-ops", str(ops), "--input", "x=zeros"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "output Identity: float32[5] [0.785398, 0.785398" in result.stdout

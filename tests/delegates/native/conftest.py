"""The test delegates, compiled once per session into a temporary directory: with the machine's C++
compiler, else with the one in the `ziglang` test extra (its first build of libc++ takes a minute)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parent


def _compiler() -> list[str]:
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name) is not None:
            return [name]
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang", "c++"]
    pytest.fail("the native test delegates need a C++ compiler: install g++, or the test extra (ziglang)")


def _compile(output: Path, source: str, *flags: str) -> Path:
    command = [
        *_compiler(),
        "-std=c++17",
        "-O2",
        "-Wall",
        "-pthread",
        f"-I{SOURCES}",
        *flags,
        "-o",
        str(output),
        str(SOURCES / source),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed:\n{result.stderr}")
    return output


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Path]:
    """Paths of the compiled test programs: arith (the delegate), no_entry_points, layout."""
    directory = tmp_path_factory.mktemp("native_delegates")
    return {
        "arith": _compile(directory / "libarith_delegate.so", "arith_delegate.cc", "-shared", "-fPIC"),
        "no_entry_points": _compile(
            directory / "libno_entry_points.so", "no_entry_points.cc", "-shared", "-fPIC"
        ),
        "layout": _compile(directory / "layout", "layout.cc"),
    }

"""The test delegates, compiled once per session into a temporary directory: with the machine's C++
compiler, else with the one in the `ziglang` test extra (its first build of libc++ takes a minute).
They include examples/native_delegate/tflite_abi.h, and the guide's MyDelegate is that example's."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.delegates.native.helpers import EXAMPLE

SOURCES = Path(__file__).resolve().parent


def _compiler() -> list[str]:
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name) is not None:
            return [name]
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang", "c++"]
    pytest.fail("the native test delegates need a C++ compiler: install g++, or the test extra (ziglang)")


def compile_cpp(output: Path, source: Path, *flags: str) -> Path:
    """`source` compiled to `output` (against examples/native_delegate's tflite_abi.h); fails the test
    with the compiler's messages."""
    command = [
        *_compiler(),
        "-std=c++17",
        "-O2",
        "-Wall",
        "-pthread",
        f"-I{EXAMPLE}",
        *flags,
        "-o",
        str(output),
        str(source),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(command)} failed:\n{result.stderr}")
    return output


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, Path]:
    """Paths of the compiled test programs: the delegates arith, my (the delegate guide's MyDelegate) and
    counting, the library no_entry_points, and the program layout."""
    directory = tmp_path_factory.mktemp("native_delegates")
    libraries = {
        "arith": SOURCES / "arith_delegate.cc",
        "my": EXAMPLE / "my_delegate.cc",
        "counting": SOURCES / "counting_delegate.cc",
        "no_entry_points": SOURCES / "no_entry_points.cc",
    }
    built = {
        name: compile_cpp(directory / f"lib{source.stem}.so", source, "-shared", "-fPIC")
        for name, source in libraries.items()
    }
    built["layout"] = compile_cpp(directory / "layout", SOURCES / "layout.cc")
    return built

"""The wheel a plain `pip install .` builds: it requires numba exactly where numba has a binary wheel, and
is tagged so that no interpreter without one takes it (setup.py). The rule is checked on a table of
platforms; the wheels are built here, with pip, for this interpreter and as the portable one.
tests/install_check.py shows the installs themselves (fresh venv, emulated ARM userlands, Pyodide)."""

from __future__ import annotations

import sys
import sysconfig
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.provisioning import build_pytflite_wheel, setup_rules

REPO = Path(__file__).resolve().parents[1]


setup_py = setup_rules()
GLIBC = ("glibc", "2.36")


@pytest.mark.parametrize(
    ("interpreter", "expected"),
    [
        (("CPython", (3, 12), False, "Linux", "x86_64", GLIBC), ("numba>=0.60", "manylinux_2_28_x86_64")),
        (("CPython", (3, 11), False, "Linux", "aarch64", GLIBC), ("numba>=0.60", "manylinux_2_28_aarch64")),
        (("CPython", (3, 14), True, "Linux", "x86_64", GLIBC), ("numba>=0.60", "manylinux_2_28_x86_64")),
        (("CPython", (3, 13), False, "Windows", "AMD64", ("", "")), ("numba>=0.60", "win_amd64")),
        (("CPython", (3, 13), False, "Windows", "ARM64", ("", "")), ("numba>=0.60", "win_arm64")),
        (("CPython", (3, 10), False, "Darwin", "arm64", ("", "")), ("numba>=0.60", "macosx_11_0_arm64")),
        (
            ("CPython", (3, 13), False, "Darwin", "x86_64", ("", "")),
            ("numba>=0.60,<0.63", "macosx_10_15_x86_64"),
        ),
        (("CPython", (3, 14), False, "Darwin", "x86_64", ("", "")), None),  # no numba release for it
        (("CPython", (3, 13), True, "Linux", "x86_64", GLIBC), None),  # 3.13t: no numba wheel
        (("CPython", (3, 12), False, "Linux", "x86_64", ("", "")), None),  # musl: libc_ver finds no glibc
        (
            ("CPython", (3, 12), False, "Linux", "x86_64", ("glibc", "2.17")),
            None,
        ),  # older than manylinux_2_28
        (("CPython", (3, 11), False, "Linux", "armv7l", GLIBC), None),  # 32-bit Raspberry Pi OS
        (("CPython", (3, 12), False, "Linux", "i686", GLIBC), None),
        (("CPython", (3, 12), False, "Emscripten", "wasm32", ("", "")), None),  # Pyodide
        (("CPython", (3, 15), False, "WASI", "wasm32", ("", "")), None),
        (("CPython", (3, 16), False, "Linux", "x86_64", GLIBC), None),  # newer than numba's wheels
        (("CPython", (3, 9), False, "Linux", "x86_64", GLIBC), None),
        (("PyPy", (3, 11), False, "Linux", "x86_64", GLIBC), None),
    ],
)
def test_numba_is_required_only_where_it_has_a_binary_wheel(interpreter, expected):
    assert setup_py.numba_wheel_target(*interpreter) == expected


def _build_wheel(folder: Path, portable: bool) -> tuple[str, list[str]]:
    """(the wheel's file name, its unconditional Requires-Dist) as pip builds it from the working tree."""
    wheel = build_pytflite_wheel(folder, portable)
    with zipfile.ZipFile(wheel) as archive:
        metadata_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    requirements = [r for r in metadata.get_all("Requires-Dist") if "extra ==" not in r]
    return wheel.name, requirements


def test_the_wheel_built_here_requires_numba_exactly_when_the_rule_says(tmp_path):
    name, requirements = _build_wheel(tmp_path, portable=False)
    target = setup_py.this_interpreter_target()
    assert requirements[: len(setup_py.RUNTIME_REQUIREMENTS)] == setup_py.RUNTIME_REQUIREMENTS
    if target is None:
        assert name == "pytflite-0.1.0-py3-none-any.whl" and not any("numba" in r for r in requirements)
    else:
        python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
        free_threaded = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
        assert name == f"pytflite-0.1.0-{python}-{python}{free_threaded}-{target[1]}.whl"
        assert requirements[-1] == target[0]


def test_the_portable_wheel_is_pure_python_without_numba(tmp_path):
    name, requirements = _build_wheel(tmp_path, portable=True)
    assert name == "pytflite-0.1.0-py3-none-any.whl"
    assert requirements == setup_py.RUNTIME_REQUIREMENTS
    with zipfile.ZipFile(tmp_path / name) as archive:
        packaged = {n for n in archive.namelist() if n.endswith(".py")}
    sources = {str(p.relative_to(REPO / "src")) for p in (REPO / "src" / "pytflite").rglob("*.py")}
    assert packaged == sources  # every module, and none that src/ no longer has

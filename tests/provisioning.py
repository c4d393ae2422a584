"""What the emulated-platform checks (tests/arm, tests/pyodide) share to provision what they run in:
a setup command run with its output kept, and wheels downloaded, both failing with Unavailable where
this machine cannot; and pytflite's own wheel, built as `pip install .` builds it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]


class Unavailable(RuntimeError):
    """A tool (apt, dpkg, qemu, Node, npm) or a download is missing: the check cannot run on this machine."""


def call(command: list[str], what: str, cwd: Path | None = None, timeout: float = 1800) -> str:
    """Run a setup command; its standard output, or Unavailable saying what failed and why."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except FileNotFoundError as error:
        raise Unavailable(f"{what}: {command[0]} not found ({error})") from error
    except subprocess.TimeoutExpired as error:
        raise Unavailable(f"{what} took over {timeout:.0f} s ({' '.join(command)})") from error
    if result.returncode != 0:
        raise Unavailable(f"{what} failed ({' '.join(command)}):\n{result.stdout}{result.stderr}")
    return result.stdout


def pip_download(folder: Path, requirements: list[str], what: str, platform: str | None = None) -> None:
    """Download binary wheels (no dependencies) into `folder`; for `platform` (and CPython 3.11) when
    given, else for this interpreter's."""
    folder.mkdir(parents=True, exist_ok=True)
    platform_options = ["--platform", platform, "--python-version", "3.11"] if platform else []
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
    call([*command, *platform_options, "--dest", str(folder), *requirements], f"pip download of {what}")


def setup_rules():
    """setup.py as a module, without running setup(): its rule of which wheels require numba."""
    spec = importlib.util.spec_from_file_location("pytflite_setup", REPOSITORY / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE_FILES = ("pyproject.toml", "setup.py", "README.md")  # with src/: what building the wheel reads


def build_pytflite_wheel(folder: Path, portable: bool) -> Path:
    """pytflite's wheel built by pip from a copy of the working tree's sources, as `pip install .` builds
    it (setup.py); `portable`: the py3-none-any one without numba that platforms without numba wheels
    install. (A copy: setuptools' build/ folder in the tree would keep modules deleted from src/.)"""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("pytflite-*.whl"):
        old.unlink()
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    environment = {**os.environ, "PYTFLITE_PORTABLE_WHEEL": "1" if portable else "0"}
    with tempfile.TemporaryDirectory(prefix="pytflite-source-") as source:
        for name in SOURCE_FILES:
            shutil.copy2(REPOSITORY / name, source)
        ignored = shutil.ignore_patterns("__pycache__", "*.egg-info")
        shutil.copytree(REPOSITORY / "src", Path(source) / "src", ignore=ignored)
        result = subprocess.run(  # a failure here is pytflite's (setup.py), never a missing tool
            [*command, "--wheel-dir", str(folder), source],
            capture_output=True,
            text=True,
            env=environment,
            timeout=600,
        )
    if result.returncode != 0:
        raise RuntimeError(f"building pytflite's wheel failed:\n{result.stdout}{result.stderr}")
    (wheel,) = folder.glob("pytflite-*.whl")
    return wheel

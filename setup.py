"""Which dependencies a built pytflite wheel carries, and the tag that makes it install only where they do.

The compiled kernels need numba, which has binary wheels for some interpreters only. Environment markers
cannot tell a free-threaded 3.13 or a musl CPython apart from a regular one, so a marker-guarded numba
requirement would make pip build numba and llvmlite from source there. Instead the wheel built on an
interpreter numba has wheels for requires numba and is tagged for that interpreter and platform; on any
other interpreter (armv7, musl, Pyodide, 3.13t, PyPy), or with PYTFLITE_PORTABLE_WHEEL=1, the wheel is
py3-none-any without numba and pytflite runs its NumPy kernels. The table below is numba 0.60-0.68's
wheels on PyPI (`pip install --dry-run --only-binary=:all: --platform ... numba`).
"""

from __future__ import annotations

import os
import platform
import sys
import sysconfig

RUNTIME_REQUIREMENTS = [
    "numpy>=1.24",
    "flatbuffers>=24.3",
    "tflite>=2.18",
    "threadpoolctl>=3",  # num_threads sizes NumPy's BLAS pool
    "protobuf>=4.22",  # Select TF ops: the NodeDef in a Flex node (pytflite/flex)
]
NUMBA = "numba>=0.60"
INTEL_MAC_NUMBA = "numba>=0.60,<0.63"  # 0.62.1 is the last release with macOS x86_64 wheels
OLDEST_PYTHON, NEWEST_PYTHON = (3, 10), (3, 15)
OLDEST_FREE_THREADED = (3, 14)  # 3.13t has no numba wheel
OLDEST_GLIBC = (2, 28)  # numba 0.68's manylinux_2_28 wheels; pip would build 0.68 from source on older
LINUX_MACHINES = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
WINDOWS_MACHINES = {"amd64": "win_amd64", "x86_64": "win_amd64", "arm64": "win_arm64"}


def numba_wheel_target(
    implementation: str,
    version: tuple[int, int],
    free_threaded: bool,
    system: str,
    machine: str,
    libc: tuple[str, str],
) -> tuple[str, str] | None:
    """(numba requirement, wheel platform tag) when numba has a binary wheel for this interpreter, else None."""
    if implementation != "CPython" or not OLDEST_PYTHON <= version <= NEWEST_PYTHON:
        return None
    if free_threaded and version < OLDEST_FREE_THREADED:
        return None
    machine = machine.lower()
    if system == "Linux":
        glibc = _version(libc[1]) if libc[0] == "glibc" else None
        if machine not in LINUX_MACHINES or glibc is None or glibc < OLDEST_GLIBC:
            return None
        return NUMBA, f"manylinux_{OLDEST_GLIBC[0]}_{OLDEST_GLIBC[1]}_{LINUX_MACHINES[machine]}"
    if system == "Windows" and machine in WINDOWS_MACHINES:
        return NUMBA, WINDOWS_MACHINES[machine]
    if system == "Darwin" and machine == "arm64":
        return NUMBA, "macosx_11_0_arm64"
    if system == "Darwin" and machine == "x86_64" and version <= (3, 13):
        return INTEL_MAC_NUMBA, "macosx_10_15_x86_64"
    return None


def _version(text: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return None


def this_interpreter_target() -> tuple[str, str] | None:
    """numba_wheel_target for the interpreter running the build, None when a portable wheel is asked for."""
    if os.environ.get("PYTFLITE_PORTABLE_WHEEL", "") not in ("", "0"):
        return None
    return numba_wheel_target(
        platform.python_implementation(),
        sys.version_info[:2],
        bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        platform.system(),
        platform.machine(),
        platform.libc_ver(),
    )


def tagged_wheel_command():
    """setuptools' bdist_wheel tagging the wheel cpXY-cpXY[t]-PLATFORM when it requires numba, so no other
    interpreter takes it (imported here: the rule above runs where setuptools is missing or old)."""
    from setuptools.command.bdist_wheel import bdist_wheel

    class InterpreterTaggedWheel(bdist_wheel):
        def get_tag(self) -> tuple[str, str, str]:
            target = this_interpreter_target()
            if target is None:
                return "py3", "none", "any"
            python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
            abi = python + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
            return python, abi, target[1]

    return InterpreterTaggedWheel


if __name__ == "__main__":
    from setuptools import setup

    target = this_interpreter_target()
    setup(
        install_requires=RUNTIME_REQUIREMENTS + ([target[0]] if target else []),
        cmdclass={"bdist_wheel": tagged_wheel_command()},
    )

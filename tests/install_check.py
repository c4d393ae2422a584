"""The README's install as users make it, on each kind of machine reachable here: a fresh virtual
environment, `pip install` of the working tree, the Atan example run with what was installed.

- native: this machine's Python (x86_64 here), a fresh venv;
- aarch64, armv7: pip itself running under the emulated Debian bookworm python3.11 of tests/arm
  (qemu-user), in a venv made with --system-site-packages over Debian's NumPy, as Raspberry Pi OS users
  make one. The venv's python is a shell script starting qemu, with argv[0] kept, so that pip's own
  subprocesses (the wheel build) run emulated too.

Each install is checked from pip's --report: numba is installed exactly where setup.py's rule says it has
a wheel (then the example must say it runs the compiled kernels), and every package came as a wheel (no
numba or llvmlite, nor anything else, built from source). Pyodide installs pytflite's portable wheel in
tests/pyodide's check on every run.

    .venv/bin/python -m tests.install_check [native] [aarch64] [armv7]    # exit status 1 on a failure
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.arm import environment as arm
from tests.provisioning import setup_rules

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "atan_custom_op.py"
EXPECTS_NUMBA = {"aarch64": True, "armv7": False}  # bookworm's Python 3.11, glibc 2.36 (setup.py's rule)


def _emulated_python(arch: str, folder: Path) -> Path:
    """A python3.11 for pip to run: a script starting the arch's interpreter under qemu. Its folder's
    lib/ is the userland's, so Python finds its standard library through host paths (qemu-arm 7.2 does
    not apply -L to every stat call) and a venv made from it runs emulated as well."""
    setup = arm.prepare(arch)
    (folder / "bin").mkdir(parents=True)
    (folder / "lib").symlink_to(setup.root / "usr" / "lib")
    script = folder / "bin" / "python3.11"
    script.write_text(
        f'#!/bin/sh\nexec {setup.qemu} -cpu {setup.arch.cpu} -L {setup.root} -0 "$0" {setup.python} "$@"\n'
    )
    script.chmod(0o755)
    return script


def install(kind: str, folder: Path) -> list[str]:
    """Make the venv, install the working tree, run the example; the problems found (empty: it worked)."""
    if kind == "native":
        base, venv_options, expects_numba = (
            Path(sys.executable),
            [],
            setup_rules().this_interpreter_target() is not None,
        )
    else:
        base = _emulated_python(kind, folder / "python")
        venv_options, expects_numba = ["--without-pip", "--system-site-packages"], EXPECTS_NUMBA[kind]
    venv = folder / "venv"
    subprocess.run([str(base), "-m", "venv", *venv_options, str(venv)], check=True, timeout=600)
    python = venv / "bin" / "python"
    report = folder / "report.json"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--report",
        str(report),
        str(REPO),
    ]
    started = time.perf_counter()
    result = subprocess.run(pip, capture_output=True, text=True, timeout=3600)
    took = time.perf_counter() - started
    if result.returncode != 0:
        return [f"pip install failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"]
    installed = json.loads(report.read_text())["install"]
    names = {item["metadata"]["name"].lower(): item for item in installed}
    problems = []
    built = [
        name
        for name, item in names.items()
        if name != "pytflite" and not item["download_info"]["url"].endswith(".whl")
    ]
    if built:
        problems.append(f"built from source: {', '.join(built)}")
    if ("numba" in names) != expects_numba:
        problems.append(f"numba {'missing' if expects_numba else 'installed'} ({sorted(names)})")
    run = subprocess.run([str(python), str(EXAMPLE)], capture_output=True, text=True, timeout=1200)
    kernels = next((line for line in run.stdout.splitlines() if line.startswith("kernels:")), "")
    if run.returncode != 0:
        problems.append(f"the example failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    elif ("compiled" in kernels) != expects_numba:
        problems.append(f"the example ran {kernels!r}")
    versions = ", ".join(f"{name} {item['metadata']['version']}" for name, item in sorted(names.items()))
    print(
        f"{kind}: pip install {took:.0f} s; installed {versions}; example {kernels.split(':', 1)[-1].strip()}"
    )
    return problems


def main(kinds: list[str]) -> int:
    failures = 0
    for kind in kinds or ["native", *EXPECTS_NUMBA]:
        with tempfile.TemporaryDirectory(prefix=f"install-{kind}-") as folder:
            problems = install(kind, Path(folder))
        for problem in problems:
            print(f"{kind}: FAILED: {problem}")
        failures += bool(problems)
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.pop("PYTFLITE_PORTABLE_WHEEL", None)  # the wheel a user's pip builds
    sys.exit(main(sys.argv[1:]))

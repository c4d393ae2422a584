"""32-bit NumPy: every public corpus model, tests/pyodide/index_ops.py's one-operator models, the Select
TF op fixtures and on-device training models (tests/pyodide/flex_models.py), the Atan example and
`pytflite analyze` give under Pyodide 0.27.7 (wasm32, where np.intp is int32) what they give natively,
and BUILTIN_REF's integer outputs their golden hashes (tests/pyodide/check.py compares).

np.take, np.put, np.repeat and np.choose refuse int64 indices there, which 64-bit NumPy accepts, so
only a 32-bit run guards pytflite's index types. It needs node and npm: without them the test skips,
saying so. The first run downloads about 90 MB and keeps 18 MB in tests/pyodide/.cache (ignored by
git); a failed download skips locally and fails with CI=true.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tests.fidelity.builtin_ref_golden import integer_hashes
from tests.oracle import CORPUS
from tests.pyodide import check, environment, flex_models, index_ops

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
MANIFEST = CORPUS / "manifest.json"
CORPUS_MODELS = [m["name"] for m in json.loads(MANIFEST.read_text())["models"]] if MANIFEST.exists() else []
MODELS_IN_ORDER = [*CORPUS_MODELS, *index_ops.models(), *flex_models.names()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[check.Results, check.Results]:
    """The native and the Pyodide collections, made once for the module."""
    if not CORPUS_MODELS:
        pytest.skip(f"public corpus not found at {CORPUS}")
    reason = environment.missing_tools()
    if reason:
        pytest.skip(reason)
    try:
        setup = environment.prepare()
    except environment.Unavailable as error:
        if CI:
            pytest.fail(f"CI=true: the Pyodide check could not start: {error}")
        pytest.skip(f"the Pyodide check could not fetch what it needs: {error}")
    folder = tmp_path_factory.mktemp("pyodide")
    job = check.make_job(folder)
    return check.run_native(job), check.run_pyodide(setup, job, folder)


@pytest.fixture(scope="module")
def rows(runs) -> dict[str, check.Row]:
    return {row.name: row for row in check.compare(*runs)}


def test_pyodide_numpy_is_32_bit_and_ran_every_model(runs):
    native, pyodide = runs
    assert pyodide.texts["intp"] == "int32", "the Pyodide run did not use 32-bit NumPy"
    assert pyodide.texts["models"] == native.texts["models"] == MODELS_IN_ORDER


@pytest.mark.parametrize("name", [*MODELS_IN_ORDER, check.EXAMPLE])
def test_same_results_as_native_under_pyodide(rows, name):
    row = rows[name]
    assert not row.problems, f"{name} under Pyodide: " + "; ".join(row.problems)
    assert row.outputs > 0


# --- the comparison itself (no Pyodide needed) ------------------------------------------------------


def _results(arrays: dict, analyze: str = "text", error: str | None = None) -> check.Results:
    texts = {
        "models": ["m"],
        "errors": {"m": error} if error else {},
        "analyze": {"m": analyze},
        "atan_example": "model: x\natan(x) by pytflite: [1.0]\n",
    }
    return check.Results({**arrays, "atan_example/y": np.float32([1.0])}, texts)


def _problems(native: check.Results, pyodide: check.Results, golden: dict | None = None) -> list[str]:
    rows = {row.name: row for row in check.compare(native, pyodide, golden or {})}
    return rows["m"].problems


def test_compare_flags_each_kind_of_difference():
    ints, floats = np.int8([1, 2, 3]), np.float32([1.0, -2.0, 4.0])
    native = _results({"m/output_0": ints, "m/output_1": floats})
    assert _problems(native, native) == []
    assert _problems(native, _results({"m/output_0": ints, "m/output_1": floats * (1 + 2e-6)})) == []
    off_by_one = _results({"m/output_0": ints + np.int8(1), "m/output_1": floats})
    assert "m/output_0" in _problems(native, off_by_one)[0]
    assert _problems(native, _results({"m/output_0": ints, "m/output_1": floats + 1e-4}))
    assert "outputs differ" in _problems(native, _results({"m/output_0": ints}))[0]
    assert "analyze output differs, line 1" in _problems(native, _results(native.arrays, "other"))[0]
    failed = _problems(native, _results({}, error="Traceback\nTypeError: Cannot cast"))
    assert failed[0] == "pyodide failed: TypeError: Cannot cast"


def test_compare_checks_the_builtin_ref_golden_hashes():
    reference = np.int8([5, 6])
    runs = _results({"m/output_0": reference, "builtin_ref/m/output_0": reference})
    assert _problems(runs, runs, {"m": integer_hashes({"output_0": reference})}) == []
    wrong = {"m": integer_hashes({"output_0": reference + np.int8(1)})}
    assert _problems(runs, runs, wrong)[0].startswith("BUILTIN_REF output_0: int8[2]:")
    missing = {"m": integer_hashes({"output_0": reference, "output_1": reference})}
    assert _problems(runs, runs, missing) == [
        "BUILTIN_REF output_1: absent != golden " + missing["m"]["output_1"]
    ]

"""The 32-bit check: under Pyodide (wasm32 NumPy, where np.intp is int32) every public corpus model,
index_ops.py's one-operator models, the Select TF op fixtures with on-device training (flex_models.py),
the Atan example and `pytflite analyze` give what they give natively.

driver.py collects the outputs twice, natively in this process and in Pyodide; `compare` is the one
place they are compared: integers exactly, floats within 1e-5 of the output's magnitude (tests.oracle's
rule), analyze's text exactly. The models tests/fixtures/builtin_ref_golden.json lists (model -> corpus
.npz output key -> dtype, shape and sha256 of each integer output under OpResolverType.BUILTIN_REF, see
tests/fidelity/builtin_ref_golden.py) also run with BUILTIN_REF in both places, and the Pyodide run's
integer outputs must hash to exactly those values.

    .venv/bin/python -m tests.pyodide.check        # the per-model table; exit status 1 on a difference
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import pytflite
from pytflite.ops import jit
from tests.fidelity.builtin_ref_golden import GOLDEN, integer_hashes
from tests.oracle import CORPUS, assert_matches
from tests.pyodide import driver, environment, flex_models, index_ops

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = "atan_example"
_VALUE_LINES = ("by pytflite:", "numpy reference:")  # the example's printed floats: compared as arrays


@dataclass
class Results:
    arrays: dict[str, np.ndarray]
    texts: dict


@dataclass
class Row:
    name: str
    outputs: int = 0
    max_float_diff: float = 0.0  # |pyodide - native| / the output's magnitude, over float outputs
    problems: list[str] = field(default_factory=list)


def make_job(folder: Path, flex: bool = True) -> dict:
    """The job both runs do; `folder` receives index_ops.py's models and the results. `flex`: with the
    Select TF op fixtures (their .npz files hold NumPy 2 pickles, which NumPy 1 cannot load)."""
    corpora = [CORPUS, index_ops.write_corpus(folder / "index_ops")]
    if flex:
        corpora.append(flex_models.write_corpus(folder / "flex"))
    return {
        "corpora": [str(corpus) for corpus in corpora],
        "examples": str(REPO / "examples"),
        "builtin_ref": sorted(golden_hashes()),
        "host": driver.host_fields(pytflite.HostProfile.detect()),
        "output": str(folder / "native"),
    }


def run_native(job: dict) -> Results:
    """The native collection on the NumPy kernels alone, as Pyodide runs them (it has no numba; the
    compiled kernels plan other scratch, which the analyze text's arena size shows)."""
    jit.set_enabled(False)
    try:
        return Results(*driver.collect(job))
    finally:
        jit.set_enabled(None)


def read_results(output: Path) -> Results:
    """What driver.py wrote for a job whose "output" is `output` (OUTPUT.npz and OUTPUT.json)."""
    with np.load(f"{output}.npz", allow_pickle=True) as data:  # string outputs: object arrays
        arrays = {key: data[key] for key in data.files}
    return Results(arrays, json.loads(Path(f"{output}.json").read_text()))


def run_pyodide(setup: environment.Setup, job: dict, folder: Path) -> Results:
    job = {**job, "output": str(folder / "pyodide")}
    environment.run_driver(setup, job, folder, mounts=[*map(Path, job["corpora"]), Path(job["examples"])])
    return read_results(folder / "pyodide")


def _compare_arrays(row: Row, prefix: str, native: Results, pyodide: Results) -> None:
    native_keys, pyodide_keys = (
        sorted(k for k in r.arrays if k.startswith(prefix)) for r in (native, pyodide)
    )
    if native_keys != pyodide_keys:
        row.problems.append(f"outputs differ: native {native_keys}, pyodide {pyodide_keys}")
    for key in sorted(set(native_keys) & set(pyodide_keys)):
        ours, reference = pyodide.arrays[key], native.arrays[key]
        row.outputs += 1
        try:
            assert_matches(ours, reference, what=key)
        except AssertionError as error:
            message = " ".join(line.strip() for line in str(error).splitlines() if line.strip() != key)
            row.problems.append(f"{key}: {message.strip()[:300]}")
            continue
        if np.issubdtype(reference.dtype, np.floating) and reference.size:
            finite = np.isfinite(reference)
            scale = max(float(np.max(np.abs(reference[finite]), initial=0.0)), 1e-30)
            diff = np.abs(ours[finite].astype(np.float64) - reference[finite]).max(initial=0.0) / scale
            row.max_float_diff = max(row.max_float_diff, float(diff))


def _first_difference(native: str, pyodide: str) -> str:
    for number, (a, b) in enumerate(zip(native.splitlines(), pyodide.splitlines()), 1):
        if a != b:
            return f"line {number}: native {a!r}, pyodide {b!r}"
    return f"native has {len(native.splitlines())} lines, pyodide {len(pyodide.splitlines())}"


def compare_model(name: str, native: Results, pyodide: Results, golden: dict) -> Row:
    row = Row(name)
    for prefix in ("", "builtin_ref/"):
        for side, results in (("native", native), ("pyodide", pyodide)):
            error = results.texts["errors"].get(prefix + name)
            if error:
                row.problems.append(f"{prefix}{side} failed: {error.strip().splitlines()[-1]}")
        _compare_arrays(row, f"{prefix}{name}/", native, pyodide)
    if name in golden:
        start = f"builtin_ref/{name}/"
        hashes = integer_hashes(
            {k[len(start) :]: v for k, v in pyodide.arrays.items() if k.startswith(start)}
        )
        for label in sorted(set(hashes) | set(golden[name])):
            if hashes.get(label) != golden[name].get(label):
                row.problems.append(
                    f"BUILTIN_REF {label}: {hashes.get(label, 'absent')} != golden {golden[name].get(label, 'absent')}"
                )
    analyze = native.texts["analyze"].get(name), pyodide.texts["analyze"].get(name)
    if None in analyze and analyze[0] != analyze[1]:
        row.problems.append("pytflite analyze ran on one side only")
    elif analyze[0] != analyze[1]:
        row.problems.append(f"analyze output differs, {_first_difference(*analyze)}")
    return row


def compare_example(native: Results, pyodide: Results) -> Row:
    row = Row(EXAMPLE)
    _compare_arrays(row, f"{EXAMPLE}/", native, pyodide)
    native_text, pyodide_text = (
        "\n".join(line for line in r.texts[EXAMPLE].splitlines() if not any(v in line for v in _VALUE_LINES))
        for r in (native, pyodide)
    )
    if native_text != pyodide_text:
        row.problems.append(f"the example printed otherwise, {_first_difference(native_text, pyodide_text)}")
    return row


def golden_hashes() -> dict:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def compare(native: Results, pyodide: Results, golden: dict | None = None) -> list[Row]:
    """One row per model (its outputs, BUILTIN_REF hashes, analyze text) and one for the example."""
    golden = golden_hashes() if golden is None else golden
    rows = [compare_model(name, native, pyodide, golden) for name in native.texts["models"]]
    missing = set(native.texts["models"]) ^ set(pyodide.texts["models"])
    if missing:
        rows.append(Row("(corpus)", problems=[f"models run on one side only: {sorted(missing)}"]))
    return [*rows, compare_example(native, pyodide)]


def table(rows: list[Row]) -> str:
    width = max(len(row.name) for row in rows)
    lines = [f"{'model':{width}} {'outputs':>7} {'max float diff':>14}  result"]
    for row in rows:
        verdict = "equal" if not row.problems else "DIFFERS: " + "; ".join(row.problems)
        lines.append(f"{row.name:{width}} {row.outputs:7} {row.max_float_diff:14.2e}  {verdict}")
    failed = sum(1 for row in rows if row.problems)
    lines.append(f"{len(rows) - failed}/{len(rows)} equal to the native run")
    return "\n".join(lines)


def main() -> int:
    reason = environment.missing_tools()
    if reason:
        print(f"pyodide check: {reason}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    setup = environment.prepare()
    prepared = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        job = make_job(Path(folder))
        native = run_native(job)
        native_done = time.perf_counter()
        pyodide = run_pyodide(setup, job, Path(folder))
        done = time.perf_counter()
    rows = compare(native, pyodide)
    print(table(rows))
    print(
        f"Pyodide {environment.PYODIDE_VERSION}, NumPy {pyodide.texts['numpy']} (np.intp {pyodide.texts['intp']}, "
        f"host {pyodide.texts['host']}; emulating {native.texts['host']}); "
        f"prepare {prepared - started:.1f} s, native {native_done - prepared:.1f} s, "
        f"pyodide {done - native_done:.1f} s"
    )
    return 1 if any(row.problems for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

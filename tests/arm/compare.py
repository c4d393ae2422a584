"""pytflite against the recorded ARM builds of TFLite (tests/fixtures/record_litert_arm.py): every public
corpus model and every one-op probe, under BUILTIN_WITHOUT_DEFAULT_DELEGATES and BUILTIN_REF, run as
tests/pyodide/driver.py runs them, with the arch's HostProfile: natively (the profile given), and with
--emulated also under qemu in the arch's Debian userland (tests/arm/environment.py: Debian's Python 3.11
and NumPy 1.24; pytflite detects the host itself there), where the Atan example and `pytflite analyze`
run too and everything must equal the native run (tests/pyodide/check.py's comparison). Integers must be
exact, floats within 1e-5 of the output's magnitude (tests.oracle's rule); where the oracle refused a
model, pytflite is not compared, and KNOWN_DIFFERENCES lists the outputs where the oracle's TFLite
version computes something else than LiteRT 2.3 (pytflite keeps LiteRT 2.3's semantics).

    .venv/bin/python -m tests.arm.compare [--arch aarch64|armv7] [--emulated]   # exit status 1 on a difference
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import pytflite
from tests.fixtures.record_litert_arm import OUTPUTS, PROBES, write_corpus
from tests.oracle import CORPUS, assert_matches
from tests.pyodide import check, driver

REPO = Path(__file__).resolve().parents[2]
PROFILES = {"aarch64": "aarch64", "armv7": "armv7"}  # the KNOWN_PROFILES entry of each recorded arch

# [builtin_ref/]MODEL/LABEL -> why the oracle's answer is not LiteRT 2.3's, per arch
_REFERENCE_FC = (
    "TFLite 2.14's reference FULLY_CONNECTED rounds with MultiplyByQuantizedMultiplier (two roundings); "
    "LiteRT 2.3's reference kernel rounds once"
)
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    "aarch64": {},
    "armv7": {
        **{
            f"{prefix}zoo_shape_ops/output_8": "TFLite 2.14's REVERSE_V2 reverses the first of two axes only"
            for prefix in ("", "builtin_ref/")
        },
        **{
            f"{prefix}index_cast_saturating_int64/output_0": "TFLite 2.14's CAST float -> int64 is a plain C "
            "conversion (out of range: wraps on armv7, NaN 0); LiteRT 2.3 saturates, NaN to the maximum"
            for prefix in ("", "builtin_ref/")
        },
        **{
            f"{prefix}index_arg_max_nan_rows/output_0": "TFLite 2.14's armv7 ARG_MAX into int64 over rows "
            "holding NaN writes 2147483647 for every row, no index of it"
            for prefix in ("", "builtin_ref/")
        },
        **{
            f"builtin_ref/{name}/output_0": _REFERENCE_FC
            for name in (
                "fc_int8__v4",
                "fc_int8_shift6__v4",
                "fc_int8_per_channel__v4",
                "fc_int8_batch1_gemv__v4",
                "fc_int8_batch1_depth4__v4",
                "fc_uint8__v1",
                "fc_int16__v7",
            )
        },
    },
}


@dataclass
class Recording:
    """One oracle's fixture: outputs keyed [builtin_ref/]MODEL/LABEL, the probe models, the texts."""

    arrays: dict[str, np.ndarray]
    texts: dict

    @classmethod
    def load(cls, arch: str) -> Recording:
        path = OUTPUTS[arch]
        with np.load(path.with_suffix(".npz")) as data:
            arrays = {key: data[key] for key in data.files}
        return cls(arrays, json.loads(path.with_suffix(".json").read_text()))

    def probes(self) -> dict[str, tuple[bytes, list[np.ndarray]]]:
        """The one-op models as recorded: name -> (flatbuffer, inputs)."""
        made = {}
        for key, value in self.arrays.items():
            if key.startswith("models/"):
                name = key[len("models/") :]
                count = sum(k.startswith(f"inputs/{name}/") for k in self.arrays)
                made[name] = (
                    value.tobytes(),
                    [self.arrays[f"inputs/{name}/input_{j}"] for j in range(count)],
                )
        return made

    def outputs(self, prefix: str) -> dict[str, np.ndarray]:
        return {k: v for k, v in self.arrays.items() if k.startswith(prefix)}


@dataclass
class Row:
    name: str
    outputs: int = 0
    max_float_diff: float = 0.0  # |pytflite - oracle| / the output's magnitude, over float outputs
    problems: list[str] = field(default_factory=list)


def make_job(arch: str, recording: Recording, folder: Path, host: pytflite.HostProfile | None) -> dict:
    """driver.py's job over the public corpus and the recorded probes (written into `folder`); `host`:
    the profile to reproduce, None for the host's own detection."""
    probes = write_corpus(folder / PROBES, recording.probes())
    corpora = [CORPUS] if (CORPUS / "manifest.json").exists() else []  # the public corpus where present
    models = recording.texts["models"]
    return {
        "corpora": [*map(str, corpora), str(probes)],
        "examples": str(REPO / "examples"),
        "builtin_ref": list(models),
        # the corpus's models: a probe's arena holds np.intp temporaries, smaller on 32-bit NumPy
        "analyze": [name for name, about in models.items() if about["corpus"] == "public"],
        "host": None if host is None else driver.host_fields(host),
        "output": str(folder / f"pytflite_{arch}"),
    }


def compare_model(name: str, ours: dict, texts: dict, recording: Recording, known: dict[str, str]) -> Row:
    """`known`: the outputs not compared (KNOWN_DIFFERENCES)."""
    row = Row(name)
    for prefix in ("", "builtin_ref/"):
        refused = recording.texts["errors"].get(prefix + name)
        if refused:
            continue  # nothing recorded to compare with
        error = texts["errors"].get(prefix + name)
        if error:
            row.problems.append(f"{prefix}pytflite failed: {error.strip().splitlines()[-1]}")
            continue
        start = f"{prefix}{name}/"
        expected = recording.outputs(start)
        got = {k: v for k, v in ours.items() if k.startswith(start)}
        if sorted(expected) != sorted(got):
            row.problems.append(
                f"{prefix}outputs differ: recorded {sorted(expected)}, pytflite {sorted(got)}"
            )
        for key in sorted(set(expected) & set(got) - set(known)):
            row.outputs += 1
            reference, value = expected[key], got[key]
            try:
                assert_matches(value, reference, what=key)
            except AssertionError as error:
                if reference.dtype.kind in "iu" and value.shape == reference.shape:
                    steps = np.abs(value.astype(np.int64) - reference.astype(np.int64))
                    message = (
                        f"{int((steps > 0).sum())} of {steps.size} values differ, up to {steps.max()} steps"
                    )
                else:
                    message = " ".join(line.strip() for line in str(error).splitlines() if line.strip())[:300]
                row.problems.append(f"{key}: {message}")
                continue
            if reference.dtype.kind == "f" and reference.size:
                finite = np.isfinite(reference)
                scale = max(float(np.max(np.abs(reference[finite]), initial=0.0)), 1e-30)
                diff = np.abs(value[finite].astype(np.float64) - reference[finite]).max(initial=0.0) / scale
                row.max_float_diff = max(row.max_float_diff, float(diff))
    return row


def compare(ours: dict, texts: dict, recording: Recording, arch: str) -> list[Row]:
    """One row per recorded model that pytflite ran (the public corpus may be absent)."""
    known = KNOWN_DIFFERENCES[arch]
    ran = set(texts["models"])
    return [
        compare_model(name, ours, texts, recording, known)
        for name in recording.texts["models"]
        if name in ran
    ]


def profile(arch: str) -> pytflite.HostProfile:
    return pytflite.KNOWN_PROFILES[PROFILES[arch]]


def run_native(job: dict, jit: bool = True) -> tuple[dict, dict]:
    """driver.py's collection here (the job names the profile); `jit` False: on the NumPy kernels
    alone, as the emulated userland (no numba) runs them."""
    if jit:
        return driver.collect(job)
    results = check.run_native(job)
    return results.arrays, results.texts


def run_emulated(arch: str, job: dict) -> tuple[dict, dict]:
    """driver.py's collection under qemu (the job's host None: pytflite detects the emulated one)."""
    from tests.arm import environment

    output = Path(job["output"])
    job_path = output.with_suffix(".job.json")
    job_path.write_text(json.dumps(job, indent=1))
    result = environment.run(arch, REPO / "tests" / "pyodide" / "driver.py", job_path,
                             capture_output=True, text=True)  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(
            f"driver.py under qemu-{arch} failed ({result.returncode}):\n{result.stderr[-4000:]}"
        )
    with np.load(output.with_suffix(".npz")) as data:
        arrays = {key: data[key] for key in data.files}
    return arrays, json.loads(output.with_suffix(".json").read_text())


def emulated_runs(arch: str, recording: Recording, folder: Path) -> tuple[tuple, tuple]:
    """(under qemu, natively under the profile without the compiled kernels): the same job, so that
    paths, and the text `pytflite analyze` prints, are the same."""
    job = make_job(arch, recording, folder, None)
    emulated = run_emulated(arch, {**job, "output": str(folder / "emulated")})
    plain = run_native(
        {**job, "host": driver.host_fields(profile(arch)), "output": str(folder / "plain")}, jit=False
    )
    return emulated, plain


def report(arch: str, rows: list[Row]) -> int:
    bad = [row for row in rows if row.problems]
    for row in rows:
        status = "ok" if not row.problems else "DIFFERS"
        print(f"{arch} {row.name:40s} {row.outputs:3d} outputs  float {row.max_float_diff:.1e}  {status}")
        for problem in row.problems:
            print(f"    {problem}")
    print(f"{arch}: {len(rows) - len(bad)} of {len(rows)} models match the recording")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(OUTPUTS), action="append", help="default: both")
    parser.add_argument("--emulated", action="store_true", help="also run pytflite under qemu")
    options = parser.parse_args(argv)
    status = 0
    for arch in options.arch or sorted(OUTPUTS):
        recording = Recording.load(arch)
        with tempfile.TemporaryDirectory() as folder:
            native = run_native(make_job(arch, recording, Path(folder), profile(arch)))
            status |= report(f"{arch} native", compare(*native, recording, arch))
            if options.emulated:
                emulated, plain = emulated_runs(arch, recording, Path(folder))
                status |= report(f"{arch} under qemu", compare(*emulated, recording, arch))
                rows = check.compare(check.Results(*plain), check.Results(*emulated))
                print(check.table(rows).replace("native run", f"native run (under qemu-{arch})"))
                status |= 1 if any(row.problems for row in rows) else 0
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

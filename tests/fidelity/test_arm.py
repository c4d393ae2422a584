"""LiteRT's answers on ARM, reproduced: the aarch64 profile against LiteRT 2.3.0's aarch64 build, the
armv7 profile against tflite-runtime 2.14.0's armv7l one (the last TFLite for 32-bit Raspberry Pi OS),
both recorded under qemu (tests/fixtures/record_litert_arm.py) on every public corpus model and the
one-op probes, under BUILTIN_WITHOUT_DEFAULT_DELEGATES and BUILTIN_REF (tests/arm/compare.py compares:
integers exact, floats within 1e-5 of the output's magnitude).

Natively on any machine, with the profile given; and under qemu in Debian bookworm's arm64 and armhf
userlands (Debian's Python 3.11 and NumPy 1.24, pytflite detecting the emulated host), where the Atan
example and `pytflite analyze` run too and everything must equal the native run. The emulated userlands
are built by tests/arm/environment.py from Debian's archive and PyPI on the first run (91 s here, 313 MB
kept in tests/arm/.cache, ignored by git); without apt-get, dpkg or the network the emulated tests skip,
saying so, and fail with CI=true.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite.fidelity.ruy import gemm_rounding
from tests.arm import compare, environment
from tests.oracle import CORPUS
from tests.pyodide import check

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
ARCHES = ("aarch64", "armv7")
RECORDINGS = {arch: compare.Recording.load(arch) for arch in ARCHES}
HAVE_CORPUS = (CORPUS / "manifest.json").exists()


def _cases() -> list:
    cases = []
    for arch, recording in RECORDINGS.items():
        for name, about in recording.texts["models"].items():
            marks = () if HAVE_CORPUS or about["corpus"] != "public" else pytest.mark.skip("no public corpus")
            cases.append(pytest.param(arch, name, id=f"{arch}-{name}", marks=marks))
    return cases


@functools.cache
def _native_rows(arch: str) -> dict[str, compare.Row]:
    recording = RECORDINGS[arch]
    with tempfile.TemporaryDirectory() as folder:
        ours, texts = compare.run_native(
            compare.make_job(arch, recording, Path(folder), compare.profile(arch))
        )
    return {row.name: row for row in compare.compare(ours, texts, recording, arch)}


@pytest.mark.parametrize(("arch", "name"), _cases())
def test_profile_reproduces_the_recording(arch, name):
    row = _native_rows(arch)[name]
    assert not row.problems, f"{name} under the {arch} profile: " + "; ".join(row.problems)


def test_every_model_was_recorded_and_compared():
    for arch, recording in RECORDINGS.items():
        assert (
            recording.texts["oracle"]
            == {"aarch64": "ai-edge-litert 2.3.0", "armv7": "tflite-runtime 2.14.0"}[arch]
        )
        rows = _native_rows(arch)
        compared = sum(row.outputs for row in rows.values())
        recorded = sum(1 for key in recording.arrays if not key.startswith(("models/", "inputs/")))
        skipped = sum(1 for key in recording.arrays if key in compare.KNOWN_DIFFERENCES[arch])
        if HAVE_CORPUS:
            assert compared == recorded - skipped, f"{arch}: {compared} outputs compared of {recorded}"


def test_known_differences_are_recorded_outputs():
    """Each output left out is one the oracle recorded (a typo would leave out nothing)."""
    for arch, known in compare.KNOWN_DIFFERENCES.items():
        for key in known:
            assert key in RECORDINGS[arch].arrays, f"{arch}: {key} is not a recorded output"


@pytest.mark.parametrize(
    ("arch", "int16", "one_column", "expected"),
    [
        ("aarch64", False, False, "neon"),  # ruy's NEON kernel
        ("aarch64", True, False, "single"),  # ruy has no NEON int16 kernel: its portable one
        ("aarch64", False, True, "simd"),  # TFLite's custom GEMV
        ("armv7", False, False, "scalar"),  # tflite-runtime 2.14's armv7 build: gemmlowp, no ruy
        ("armv7", True, False, "single"),
        ("armv7", False, True, "simd"),
    ],
)
def test_arm_gemm_routes(arch, int16, one_column, expected):
    host = compare.profile(arch)
    assert gemm_rounding(host, int16=int16, uint8=False, one_column=one_column, rows=64, depth=32) == expected


def test_dot_product_cores_requantize_as_the_others():
    """ruy's dot-product kernels (Cortex-A76 and later) split the exponent as its NEON ones do."""
    host = dataclasses.replace(compare.profile("aarch64"), features=frozenset({"asimd", "asimddp"}))
    assert host.ruy_path == "neon_dotprod"
    assert gemm_rounding(host, int16=False, uint8=True, one_column=False, rows=64, depth=32) == "neon"


# --- under qemu -------------------------------------------------------------------------------------


@functools.cache
def _emulated(arch: str) -> tuple[dict[str, compare.Row], list[check.Row], dict]:
    """(rows against the recording, rows against the native run, the run's texts) of pytflite under
    qemu."""
    try:
        environment.prepare(arch)
    except environment.Unavailable as error:
        if CI:
            pytest.fail(f"CI=true: the emulated {arch} check could not start: {error}")
        pytest.skip(f"the emulated {arch} check could not build its userland: {error}")
    recording = RECORDINGS[arch]
    with tempfile.TemporaryDirectory() as folder:
        emulated, plain = compare.emulated_runs(arch, recording, Path(folder))
    rows = {row.name: row for row in compare.compare(*emulated, recording, arch)}
    return rows, check.compare(check.Results(*plain), check.Results(*emulated)), emulated[1]


@pytest.mark.parametrize("arch", ARCHES)
def test_under_qemu_pytflite_detects_arm_and_matches_the_recording(arch):
    rows, _, texts = _emulated(arch)
    assert texts["host"].startswith(f"detected: {compare.profile(arch).arch} "), texts["host"]
    assert rows, f"nothing ran under qemu-{arch}"
    problems = [f"{row.name}: {'; '.join(row.problems)}" for row in rows.values() if row.problems]
    assert not problems, f"under qemu-{arch}: " + " | ".join(problems)


@pytest.mark.parametrize("arch", ARCHES)
def test_under_qemu_everything_equals_the_native_run(arch):
    """Every output, the Atan example's and `pytflite analyze`'s text, as natively under the profile."""
    _, rows, _ = _emulated(arch)
    names = {row.name for row in rows}
    assert check.EXAMPLE in names
    problems = [f"{row.name}: {'; '.join(row.problems)}" for row in rows if row.problems]
    assert not problems, f"under qemu-{arch}: " + " | ".join(problems)


@pytest.mark.parametrize(
    ("arch", "cpu", "features", "path"),
    [
        ("aarch64", "cortex-a72", "asimd", "neon"),
        ("aarch64", "cortex-a76", "asimd asimddp", "neon_dotprod"),  # a Raspberry Pi 5's core
        ("armv7", "max", "asimd", "neon"),
    ],
)
def test_under_qemu_detection_reads_the_cores_capabilities(arch, cpu, features, path):
    _emulated(arch)  # skips or fails as the other emulated tests do when the userland cannot be built
    code = "import pytflite; print(pytflite.HostProfile.detect().describe())"
    result = environment.run(arch, "-c", code, cpu=cpu, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    described = result.stdout.strip()
    assert f"ruy path {path};" in described and f"features {features} (from os)" in described, described


def test_the_3x3_depthwise_kernel_is_aarch64_only_and_taken_as_tflite_decides():
    from pytflite.fidelity.depthwise import fast_3x3_kernel

    shape = {"input_shape": (1, 11, 13, 16), "kernel_hw": (3, 3), "strides": (1, 1), "dilation": (1, 1),
             "pads_before": (0, 0), "depth_multiplier": 1, "output_hw": (9, 11), "shift": -8}  # fmt: skip
    aarch64 = compare.profile("aarch64")
    assert fast_3x3_kernel(aarch64, **shape)
    for host in (compare.profile("armv7"), pytflite.KNOWN_PROFILES["amd_zen4"]):
        assert not fast_3x3_kernel(host, **shape)
    for change in ({"input_shape": (1, 11, 13, 12)}, {"shift": 1}, {"strides": (1, 2)}, {"kernel_hw": (5, 5)},
                   {"depth_multiplier": 2}, {"dilation": (2, 2)}, {"pads_before": (1, 0)}):  # fmt: skip
        assert not fast_3x3_kernel(aarch64, **{**shape, **change}), change


def test_int16_pairs_of_lowest_values():
    """ARM's int8 kernels add products of depths k and k + 8 of 16-deep blocks in int16 (neon_pairs.py):
    the pairs found, the depth padded with the zero point, the hosts where they wrap."""
    from pytflite.fidelity.neon_pairs import WRAP, lowest_pairs, pairs_wrap, weight_pairs

    values = np.zeros((1, 20), np.int8)
    values[0, [1, 9, 2, 12, 16]] = -128  # (1, 9) pairs; 2 and 12 are not a pair; 16 pairs with padding
    assert np.flatnonzero(lowest_pairs(values, 0, pad=0)[0]).tolist() == [1]
    assert np.flatnonzero(lowest_pairs(values, 0, pad=-128)[0]).tolist() == [1, 8, 12, 13, 14, 15]
    assert lowest_pairs(np.zeros((1, 16), np.uint8), -128, pad=0).sum() == 8  # uint8 0 is int8 -128
    dotprod = dataclasses.replace(compare.profile("aarch64"), features=frozenset({"asimd", "asimddp"}))
    assert pairs_wrap(compare.profile("aarch64")) and pairs_wrap(compare.profile("armv7"))
    assert not pairs_wrap(dotprod) and not pairs_wrap(pytflite.KNOWN_PROFILES["amd_zen4"])
    pairs = weight_pairs(compare.profile("aarch64"), values.astype(np.int64), False, 0, 0)
    assert pairs.correction(values).tolist() == [[WRAP]]
    assert weight_pairs(dotprod, values.astype(np.int64), False, 0, 0) is None

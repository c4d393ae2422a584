"""LiteRT's float CONV_2D summation order on each recorded machine kind, checked on any machine.

Eigen blocks long sums by the L1 cache size it reads with CPUID, so LiteRT's exact float32 outputs
depend on the CPU. Its outputs were recorded on each kind (tests/fixtures/record_litert_exact_summation.py)
and pytflite, given that kind's HostProfile, must reproduce them bit for bit, whatever CPU runs the test.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite import KNOWN_PROFILES
from pytflite.fidelity.eigen_order import (
    eigen_blocking,
    eigen_product,
    eigen_product_is_sequential,
    sequential_products,
)
from tests.oracle import SHARED, run

RECORDINGS = {
    "intel_sapphire_rapids": SHARED
    / "fixtures"
    / "litert-x86"
    / "intel_sapphire_rapids_exact_summation_conv.npz",
    "amd_zen4": Path(__file__).resolve().parents[1] / "fixtures" / "litert_amd_zen4_exact_summation_conv.npz",
}
RESOLVERS = ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")


def _recording(kind: str) -> np.lib.npyio.NpzFile:
    path = RECORDINGS[kind]
    if not path.exists():
        pytest.skip(f"LiteRT's outputs on {kind} are not at {path}")
    return np.load(path)


def _cases(data) -> list[int]:
    return sorted({int(key.split("__")[0][4:]) for key in data.files})


def _run(data, case: int, resolver: str, profile) -> list[np.ndarray]:
    interpreter = pytflite.Interpreter(
        model_content=data[f"case{case}__model"].tobytes(),
        experimental_op_resolver_type=getattr(pytflite.OpResolverType, resolver),
        experimental_exact_float_summation=True,
        experimental_host_profile=profile,
    )
    inputs = [data[key] for key in sorted(k for k in data.files if k.startswith(f"case{case}__input_"))]
    return run(interpreter, inputs)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("kind", sorted(RECORDINGS))
def test_exact_summation_reproduces_litert_on_each_machine_kind(kind, resolver):
    data = _recording(kind)
    for case in _cases(data):
        for k, value in enumerate(_run(data, case, resolver, KNOWN_PROFILES[kind])):
            expected = data[f"case{case}__{resolver}__output_{k}"]
            np.testing.assert_array_equal(value, expected, err_msg=f"{kind} case {case} output {k}")


def test_the_recordings_tell_the_cache_sizes_apart():
    """On the K = 810 case (Eigen blocks it with a 32 KiB L1, not with 48 KiB) the two kinds' LiteRT
    outputs differ, and each profile reproduces only its own: the test above can fail."""
    intel = _recording("intel_sapphire_rapids")
    case = next(c for c in _cases(intel) if intel[f"case{c}__input_0"].shape[-1] == 90)
    expected = intel[f"case{case}__BUILTIN_WITHOUT_DEFAULT_DELEGATES__output_0"]
    as_intel = _run(intel, case, RESOLVERS[0], KNOWN_PROFILES["intel_sapphire_rapids"])[0]
    as_amd = _run(intel, case, RESOLVERS[0], KNOWN_PROFILES["amd_zen4"])[0]
    np.testing.assert_array_equal(as_intel, expected)
    assert not np.array_equal(as_amd, expected)


@pytest.mark.parametrize(
    "depth, rows, cols, l1, expected_kc",
    [
        (810, 12, 20, 32 * 1024, 408),  # two blocks, the last as large as possible
        (810, 12, 20, 48 * 1024, 810),  # fits: one block
        (1500, 9, 10, 32 * 1024, 504),
        (1500, 9, 10, 48 * 1024, 752),
        (40, 13, 1, 32 * 1024, 40),  # a small product is never blocked
    ],
)
def test_depth_blocks_follow_the_l1_size(depth, rows, cols, l1, expected_kc):
    kc, _, _ = eigen_blocking(depth, rows, cols, (l1, 1 << 20, 32 << 20))
    assert kc == expected_kc
    assert depth // kc == depth // min(depth, ((l1 - 128) // 48) & ~7)  # as many sweeps as Eigen's bound


def test_row_and_column_blocks_keep_whole_register_panels():
    """Row blocks stay multiples of 8 and column blocks of 4, on every known kind: so only the depth
    blocks change the order (the row panel tail is the same as without blocking)."""
    for profile in KNOWN_PROFILES.values():
        for depth, rows, cols in ((64, 2000, 3000), (8, 5000, 30), (300, 700, 90), (100, 64, 10000)):
            _, mc, nc = eigen_blocking(depth, rows, cols, profile.caches_for_eigen)
            assert mc == rows or mc % 8 == 0
            assert nc == cols or nc % 4 == 0


@pytest.mark.parametrize("profile", list(KNOWN_PROFILES), ids=str)
def test_products_called_sequential_are_sums_in_order(profile):
    """Where eigen_product_is_sequential holds (it lets the compiled CONV_2D sum each window in order),
    eigen_product gives sequential_products' bits, zeros' signs included; it is conservative (a short
    window can make the other kernels' orders coincide), and elsewhere the orders do differ."""
    caches = KNOWN_PROFILES[profile].caches_for_eigen
    rng = np.random.default_rng(5)
    seen, differing = set(), set()
    for depth, units, pixels in [
        (8, 48, 2304), (27, 16, 9216), (48, 8, 576), (1100, 64, 9), (5, 8, 16), (30, 40, 7), (3, 12, 50),
        (16, 96, 144), (700, 32, 36), (13, 2, 4),
    ]:  # fmt: skip
        x = rng.standard_normal((depth, pixels)).astype(np.float32)
        x[:, : pixels // 3] = -0.0  # products of zeros: the signs of the sums tell an extra 0.0 +
        w = rng.standard_normal((depth, units)).astype(np.float32)
        eigen, ordered = (np.empty((units, pixels), np.float32) for _ in range(2))
        eigen_product(x, w, eigen, caches)
        sequential_products(x[None], w[None], ordered[None])
        sequential = eigen_product_is_sequential(depth, units, pixels, caches)
        seen.add(sequential)
        if sequential:
            assert eigen.tobytes() == ordered.tobytes(), (depth, units, pixels)
        else:
            differing.add(not np.array_equal(eigen, ordered))
    assert seen == {True, False} and True in differing

"""HostProfile: CPUID decoded as Eigen and ruy decode it, and the profile reaching the kernels."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite import KNOWN_PROFILES, HostProfile
from pytflite.fidelity import cpuid, host
from pytflite.fidelity.host import (
    EIGEN_DEFAULT_CACHES,
    eigen_caches_from_cpuid,
    x86_features_from_cpuid,
)


def _vendor_registers(vendor: str, top: int) -> tuple[int, int, int, int]:
    words = [int.from_bytes(vendor.encode()[i : i + 4], "little") for i in (0, 4, 8)]
    return top, words[0], words[2], words[1]  # CPUID returns the vendor in ebx, edx, ecx


def _leaf4(level: int, kind: int, ways: int, line: int, sets: int) -> tuple[int, int, int, int]:
    eax = kind | (level << 5)
    ebx = (ways - 1) << 22 | (line - 1)
    return eax, ebx, sets - 1, 0


def _reader(table: dict):
    return lambda leaf, subleaf: table.get((leaf, subleaf), table.get(leaf, (0, 0, 0, 0)))


def test_intel_caches_come_from_leaf_4():
    """The Sapphire Rapids kind's caches as its sysfs reported them: 48 KiB L1d (12 ways x 64 sets of
    64 bytes), 2 MiB L2, 480 MiB L3; the instruction cache is not a data cache."""
    table = {
        0: _vendor_registers("GenuineIntel", 0x20),
        (4, 0): _leaf4(1, 1, 12, 64, 64),
        (4, 1): _leaf4(1, 2, 16, 64, 64),
        (4, 2): _leaf4(2, 3, 16, 64, 2048),
        (4, 3): _leaf4(3, 3, 16, 64, 491520),
        (4, 4): (0, 0, 0, 0),
    }
    assert eigen_caches_from_cpuid(_reader(table)) == (48 << 10, 2 << 20, 480 << 20)


def test_amd_caches_come_from_the_extended_leaves():
    """This repository's AMD kind: 0x80000005/6 as it reports them, Eigen's L3 mask included."""
    table = {
        0: _vendor_registers("AuthenticAMD", 0x1C),
        0x80000000: (0x80000021, 0, 0, 0),
        0x80000005: (0xFF48FF40, 0xFF48FF40, 0x20080140, 0x20080140),
        0x80000006: (0x5C002200, 0x6C004200, 0x04006140, 0x0A009140),
    }
    assert eigen_caches_from_cpuid(_reader(table)) == (32 << 10, 1 << 20, 320 << 20)


def test_unreported_caches_take_eigens_defaults():
    table = {0: _vendor_registers("AuthenticAMD", 1), 0x80000000: (0x80000004, 0, 0, 0)}
    assert eigen_caches_from_cpuid(_reader(table)) == EIGEN_DEFAULT_CACHES


def test_features_need_the_operating_systems_register_state():
    """AVX-512 bits count only when XCR0 says the OS saves ZMM and opmask state (as cpuinfo checks)."""
    avx512 = (1 << 16) | (1 << 17) | (1 << 28) | (1 << 30) | (1 << 31) | (1 << 5)
    table = {
        0: (7, 0, 0, 0),
        1: (0, 0, (1 << 27) | (1 << 28) | (1 << 12) | (1 << 19), 0),
        7: (0, avx512, 0, 0),
    }
    full = x86_features_from_cpuid(_reader(table), 0xE7)
    assert {"avx512f", "avx512bw", "avx2", "fma", "avx"} <= full
    without_zmm = x86_features_from_cpuid(_reader(table), 0x7)
    assert "avx512f" not in without_zmm and "avx2" in without_zmm
    assert x86_features_from_cpuid(_reader(table), None) == {"sse4_1"}


@pytest.mark.parametrize(
    "features, path",
    [
        ({"avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx2", "fma", "avx"}, "avx512"),
        ({"avx512f", "avx2", "fma", "avx"}, "avx2_fma"),  # AVX-512 without BW/VL: not ruy's AVX-512 path
        ({"avx"}, "avx"),
        (set(), "standard_cpp"),
    ],
)
def test_ruy_path_follows_the_features(features, path):
    assert HostProfile("x", "x86_64", features=frozenset(features)).ruy_path == path


def test_arm_and_wasm_profiles_are_not_x86():
    assert not KNOWN_PROFILES["aarch64"].x86 and KNOWN_PROFILES["aarch64"].ruy_path == "neon"
    assert KNOWN_PROFILES["wasm32"].ruy_path == "standard_cpp"
    assert KNOWN_PROFILES["aarch64"].caches_for_eigen == EIGEN_DEFAULT_CACHES


def test_detect_reads_this_machine_once():
    profile = HostProfile.detect()
    assert profile is HostProfile.detect()
    if cpuid.available():
        assert profile.source == "cpuid" and profile.vendor and profile.eigen_caches is not None
        assert profile.eigen_caches[0] >= 8 * 1024


@pytest.fixture
def fresh_detection():
    """HostProfile.detect() reads the machine anew in the test, and again (for real) after it."""
    host._detected.cache_clear()
    yield
    host._detected.cache_clear()


def test_an_unreadable_x86_cpu_is_assumed_and_said_so_once(monkeypatch, fresh_detection):
    monkeypatch.setattr(host, "_arch", lambda: "x86")
    monkeypatch.setattr(cpuid, "available", lambda: False)  # a 32-bit process runs no CPUID here
    monkeypatch.setattr(host, "_os_features", lambda: None)  # and there is no /proc/cpuinfo
    with pytest.warns(
        RuntimeWarning, match=r"could not read this x86 CPU.*assumes: none.*experimental_host_profile"
    ):
        profile = HostProfile.detect()
    assert profile.source == "assumed" and profile.features == frozenset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert HostProfile.detect() is profile  # once per process: read (and said) once


def test_an_operating_systems_report_is_no_assumption(monkeypatch, fresh_detection):
    monkeypatch.setattr(host, "_arch", lambda: "x86")
    monkeypatch.setattr(cpuid, "available", lambda: False)
    monkeypatch.setattr(host, "_os_features", lambda: frozenset({"sse4_1"}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profile = HostProfile.detect()
    assert profile.source == "os" and profile.features == {"sse4_1"}


def test_pytflite_runs_on_a_python_without_ctypes(tmp_path):
    """CPUID, the C math library's LUT functions and BLAS's thread pinning need ctypes; a Python
    built without it (no libffi) imports pytflite and runs a quantized model on the OS's CPU report."""
    script = tmp_path / "no_ctypes.py"
    script.write_text(
        textwrap.dedent(
            """
            import builtins, sys
            real_import = builtins.__import__
            def no_ctypes(name, *args, **kwargs):
                if name.split(".")[0] in ("ctypes", "_ctypes"):
                    raise ImportError("No module named '_ctypes'")
                return real_import(name, *args, **kwargs)
            builtins.__import__ = no_ctypes
            import numpy as np
            import pytflite
            from pytflite import BuiltinOperator as Op, TensorType as T
            from pytflite.core.quantization import AffineQuantization
            assert "ctypes" not in sys.modules
            q = AffineQuantization(np.array([0.1], np.float32), np.array([3], np.int64))
            b = pytflite.ModelBuilder()
            x = b.add_input("x", T.INT8, [4], quantization=q)
            y = b.add_tensor("y", T.INT8, [4], quantization=q)
            b.add_operator(Op.TANH, [x], [y])
            b.add_output(y)
            interpreter = pytflite.Interpreter(model_content=b.build())
            interpreter.allocate_tensors()
            interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array([-100, 0, 3, 90], np.int8))
            interpreter.invoke()
            print(pytflite.HostProfile.detect().source, interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist())
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(Path(pytflite.__file__).parents[1]), "PYTFLITE_JIT": "0"}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    source, values = result.stdout.split(maxsplit=1)
    assert source in ("os", "assumed") and len(eval(values)) == 4


def _hybrid_model() -> bytes:
    """A float CONV_2D feeding a hybrid FULLY_CONNECTED (int8 weights)."""
    from pytflite import BuiltinOperator as Op
    from pytflite import TensorType as T
    from pytflite.core.quantization import AffineQuantization

    rng = np.random.default_rng(0)
    builder = pytflite.ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 4, 4, 3])
    w = builder.add_constant("w", rng.standard_normal([2, 1, 1, 3]).astype(np.float32))
    conv = builder.add_tensor("conv", T.FLOAT32, [1, 4, 4, 2])
    builder.add_operator(Op.CONV_2D, [x, w, -1], [conv], options=pytflite.options.Conv2DOptions(), version=1)
    flat = builder.add_constant("flat", np.array([1, 32], np.int32))
    reshaped = builder.add_tensor("reshaped", T.FLOAT32, [1, 32])
    builder.add_operator(Op.RESHAPE, [conv, flat], [reshaped])
    q = AffineQuantization(scale=np.array([0.02], np.float32), zero_point=np.array([0], np.int64))
    fc_w = builder.add_constant("fc_w", rng.integers(-127, 128, [3, 32]).astype(np.int8), quantization=q)
    y = builder.add_tensor("y", T.FLOAT32, [1, 3])
    builder.add_operator(
        Op.FULLY_CONNECTED,
        [reshaped, fc_w, -1],
        [y],
        options=pytflite.options.FullyConnectedOptions(),
        version=3,
    )
    builder.add_output(y)
    return builder.build()


def test_the_profile_reaches_the_kernels_and_exact_mode_precedes_hybrid_ops_on_every_host():
    """Exact float summation turns itself on in subgraphs with hybrid ops whatever the profile (BLAS's
    order would change with the BLAS build, a quantization step downstream), and only there; the
    profile given is what every subgraph's context holds."""
    from pytflite import BuiltinOperator as Op
    from pytflite import TensorType as T

    builder = pytflite.ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 4])
    y = builder.add_tensor("y", T.FLOAT32, [1, 2])
    w = builder.add_constant("w", np.ones((2, 4), np.float32))
    options = pytflite.options.FullyConnectedOptions()
    builder.add_operator(Op.FULLY_CONNECTED, [x, w, -1], [y], options=options)
    builder.add_output(y)
    float_model = builder.build()
    for name, profile in KNOWN_PROFILES.items():
        for model, exact in ((_hybrid_model(), True), (float_model, False)):
            interpreter = pytflite.Interpreter(model_content=model, experimental_host_profile=profile)
            context = interpreter.subgraphs[0].context
            assert context.host is profile
            assert context.exact_float_summation is exact, name


def test_a_profile_must_be_a_host_profile():
    with pytest.raises(ValueError, match="experimental_host_profile must be a HostProfile"):
        pytflite.Interpreter(model_content=_hybrid_model(), experimental_host_profile="intel")


def test_arm_features_as_linux_reports_them():
    """getauxval's capability bits and /proc/cpuinfo's Features line, on 64- and 32-bit ARM."""
    from pytflite.fidelity.host import arm_features_from_cpuinfo, arm_features_from_hwcaps

    hwcaps = {16: (1 << 1) | (1 << 20), 26: 1 << 13}  # AT_HWCAP: asimd, asimddp; AT_HWCAP2: i8mm
    assert arm_features_from_hwcaps("aarch64", hwcaps.get) == {"asimd", "asimddp", "i8mm"}
    assert arm_features_from_hwcaps("arm", {16: 1 << 12, 26: 0}.get) == {"asimd"}  # HWCAP_NEON
    a76 = (
        "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull crc32 atomics asimdrdm lrcpc dcpop asimddp\n"
    )
    assert arm_features_from_cpuinfo(a76) == {"asimd", "asimddp"}
    assert arm_features_from_cpuinfo("Features\t: half thumb fastmult vfp edsp neon vfpv3 tls") == {"asimd"}
    assert arm_features_from_cpuinfo("processor\t: 0\n") == frozenset()


@pytest.mark.parametrize(
    ("arch", "features", "ruy_paths", "path"),
    [
        ("aarch64", {"asimd"}, None, "neon"),
        ("aarch64", {"asimd", "asimddp"}, None, "neon_dotprod"),
        ("aarch64", {"asimd", "asimddp"}, 0x10, "neon"),  # RUY_PATHS as ruy reads it
        ("arm", {"asimd", "asimddp"}, None, "neon"),  # 32-bit ruy compiles NEON only
        ("aarch64", set(), None, "neon"),  # a profile given without features: NEON assumed
    ],
)
def test_ruy_path_on_arm(arch, features, ruy_paths, path):
    assert HostProfile("p", arch, features=frozenset(features), ruy_paths=ruy_paths).ruy_path == path


def test_each_profile_has_its_hosts_arithmetic():
    """Kernels call the profile's HostArithmetic instead of branching on the host: x86's conversions and
    SSE hybrid quirks on the x86 kinds, the portable ones on ARM and wasm32."""
    import numpy as np

    from pytflite.fidelity.arithmetic import PORTABLE, X86

    for name, profile in KNOWN_PROFILES.items():
        assert profile.arithmetic is (X86 if profile.x86 else PORTABLE), name
    values = np.array([3e9, -3e9, np.nan, -2.7])
    assert X86.float_to_int32(values).tolist() == [-(2**31), -(2**31), -(2**31), -2]
    assert PORTABLE.float_to_int32(values).tolist() == [2**31 - 1, -(2**31), 0, -2]
    weights = np.full((1, 32), 127, np.int8)
    assert PORTABLE.hybrid_row_sums(weights).tolist() == [127 * 32]
    assert X86.sign_lost_columns(37) == 32 and PORTABLE.sign_lost_columns(37) == 0

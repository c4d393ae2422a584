"""HostProfile: the facts about the CPU that change what LiteRT computes, detected as LiteRT detects them.

LiteRT's results depend on the machine in a few known places (docs/fidelity.md lists them):
- Eigen, behind the float CONV_2D, splits long sums into depth blocks sized from the L1 data cache it
  reads with CPUID (its blocking heuristic also reads L2 and L3);
- ruy, behind the int8/int16 matrix products, picks a kernel per instruction set (AVX-512, AVX2+FMA,
  AVX, NEON with or without dot products, or portable C++), and the kernels round their requantization
  differently;
- LiteRT's x86 build runs TFLite's NEON code through an SSE translation and has SSE-only kernels whose
  integer quirks do not exist on ARM, where real NEON runs.

A HostProfile holds those facts as plain values. `HostProfile.detect()` reads them once per process;
any other profile can be built (or taken from `KNOWN_PROFILES`) and passed to an Interpreter
(`experimental_host_profile=`), so what LiteRT computes on another machine can be reproduced, and tested,
on this one.
"""

from __future__ import annotations

import functools
import os
import platform
import sys
import warnings
from dataclasses import dataclass, field

from . import cpuid as _cpuid
from .arithmetic import PORTABLE, X86, HostArithmetic

_INT32 = 1 << 32

# Eigen's fallback cache sizes on x86 when CPUID reports nothing (GeneralBlockPanelKernel.h)
EIGEN_DEFAULT_CACHES = (32 * 1024, 256 * 1024, 2 * 1024 * 1024)

# the instruction-set features LiteRT's choices depend on, under the names Linux's /proc/cpuinfo uses
X86_FEATURES = ("sse4_1", "avx", "fma", "avx2", "avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl")
# on ARM: NEON (Linux's "asimd"; 32-bit Linux says "neon"), its dot product and int8 matrix multiply
ARM_FEATURES = ("asimd", "asimddp", "i8mm")
_RUY_AVX512 = frozenset(("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl"))
# ruy's Path bits (RUY_PATHS), most significant first; the x86 and ARM builds reuse 0x10 and up
_RUY_PATH_BITS = {
    "avx512": 0x40,
    "avx2_fma": 0x20,
    "avx": 0x10,
    "neon_dotprod": 0x20,
    "neon": 0x10,
    "standard_cpp": 0x1,
}
# Linux's hardware capability bits (getauxval's AT_HWCAP, AT_HWCAP2) of ARM_FEATURES, per arch
_AT_HWCAP, _AT_HWCAP2 = 16, 26
_HWCAP_BITS = {
    "aarch64": {"asimd": (_AT_HWCAP, 1 << 1), "asimddp": (_AT_HWCAP, 1 << 20), "i8mm": (_AT_HWCAP2, 1 << 13)},
    "arm": {"asimd": (_AT_HWCAP, 1 << 12), "asimddp": (_AT_HWCAP, 1 << 24), "i8mm": (_AT_HWCAP, 1 << 27)},
}


@dataclass(frozen=True)
class HostProfile:
    """What LiteRT would see of the CPU pytflite runs on (or of one it emulates).

    `arch`: "x86_64", "x86", "aarch64", "arm", "wasm32" or another platform.machine() name.
    `vendor`: CPUID's vendor string ("GenuineIntel", "AuthenticAMD"), "" when unknown.
    `features`: the usable instruction-set extensions of X86_FEATURES (the CPU has them and the
    operating system saves their registers), or on ARM of ARM_FEATURES (NEON is assumed on ARM when
    none is given: every ARMv8 core and every ARM build of TFLite has it).
    `eigen_caches`: (L1, L2, L3) data cache bytes as Eigen reads them, its defaults in place of the
    sizes CPUID does not report; None off x86.
    `source`: where the facts came from: "cpuid", "os" (the operating system's report: close to what
    CPUID says, not guaranteed equal), "assumed" (nothing could be read) or "given".
    `ruy_paths`: the RUY_PATHS bit mask ruy was restricted to (the environment variable it reads at
    startup, hexadecimal), or None: every path the CPU supports.
    """

    name: str
    arch: str
    vendor: str = ""
    features: frozenset[str] = field(default_factory=frozenset)
    eigen_caches: tuple[int, int, int] | None = None
    source: str = "given"
    ruy_paths: int | None = None

    @property
    def x86(self) -> bool:
        """LiteRT's x86 build: NEON code through an SSE translation, SSE kernels, Eigen's SSE packets."""
        return self.arch in ("x86_64", "x86")

    @property
    def arithmetic(self) -> HostArithmetic:
        """The host's arithmetic where TFLite's C++ differs by CPU (fidelity/arithmetic.py)."""
        return X86 if self.x86 else PORTABLE

    @property
    def ruy_path(self) -> str:
        """The ruy kernel LiteRT's int8/int16 matrix products run on this host: "avx512", "avx2_fma",
        "avx" or "standard_cpp" on x86 (ruy's own selection), "neon_dotprod" on aarch64 with dot
        products, "neon" on other ARM (32-bit ruy has no dot-product path), "standard_cpp" elsewhere."""
        if self.x86:
            supported = {
                "avx512": self.features >= _RUY_AVX512,
                "avx2_fma": {"avx2", "fma"} <= self.features,
                "avx": "avx" in self.features,
            }
        elif self.arch in ("aarch64", "arm"):
            supported = {"neon": True, "neon_dotprod": self.arch == "aarch64" and "asimddp" in self.features}
        else:
            supported = {}
        for path, bit in _RUY_PATH_BITS.items():  # the most significant path enabled, as ruy picks
            enabled = supported.get(path, False) if self.ruy_paths is None else bool(self.ruy_paths & bit)
            if enabled and (path in supported or path == "standard_cpp"):
                return path
        return "standard_cpp"

    @property
    def caches_for_eigen(self) -> tuple[int, int, int]:
        """The cache sizes Eigen's blocking uses here: its x86 defaults where the profile has none."""
        return self.eigen_caches or EIGEN_DEFAULT_CACHES

    def describe(self) -> str:
        caches = "-" if self.eigen_caches is None else "/".join(f"{c // 1024} KiB" for c in self.eigen_caches)
        features = " ".join(f for f in (*X86_FEATURES, *ARM_FEATURES) if f in self.features) or "-"
        return (
            f"{self.name}: {self.arch} {self.vendor or ''} ruy path {self.ruy_path}; Eigen caches {caches}; "
            f"features {features} (from {self.source})"
        )

    @staticmethod
    def detect() -> HostProfile:
        """This machine, read once per process (see the module's docstring)."""
        return _detected()


def _wrap_int(value: int) -> int:
    """Eigen keeps cache sizes in a C int: a size of 2 GiB or more wraps (and then counts as absent)."""
    value %= _INT32
    return value - _INT32 if value >= 1 << 31 else value


def eigen_caches_from_cpuid(read) -> tuple[int, int, int]:
    """(L1, L2, L3) bytes as Eigen's queryCacheSizes decodes CPUID, with its x86 defaults for sizes it
    gets as zero or less. `read(leaf, subleaf)` returns CPUID's (eax, ebx, ecx, edx)."""
    top, *vendor_words = read(0, 0)
    vendor = _vendor_string(vendor_words)
    if vendor in ("AuthenticAMD", "AMDisbetter!"):
        sizes = _amd_caches(read)
    elif top >= 4:
        sizes = _intel_deterministic_caches(read)
    else:
        sizes = (0, 0, 0)  # leaf 2's descriptor bytes: CPUs without leaf 4 are not met any more
    return tuple(s if s > 0 else d for s, d in zip(sizes, EIGEN_DEFAULT_CACHES))  # type: ignore[return-value]


def _vendor_string(words) -> str:
    ebx, ecx, edx = words
    return b"".join(w.to_bytes(4, "little") for w in (ebx, edx, ecx)).decode("latin-1")


def _amd_caches(read) -> tuple[int, int, int]:
    """AMD's extended leaves: L1 from 0x80000005, L2 and L3 from 0x80000006 (Eigen's field masks,
    including the one that drops bits 28-31 of the L3 size)."""
    if read(0x80000000, 0)[0] < 0x80000006:
        return (0, 0, 0)
    l1 = (read(0x80000005, 0)[2] >> 24) * 1024
    _, _, ecx, edx = read(0x80000006, 0)
    return _wrap_int(l1), _wrap_int((ecx >> 16) * 1024), _wrap_int(((edx & 0xFFFC000) >> 18) * 512 * 1024)


def _intel_deterministic_caches(read) -> tuple[int, int, int]:
    """Leaf 4, one subleaf per cache until a null one (16 at most): ways x partitions x line x sets of
    each data or unified cache, by level."""
    sizes = [0, 0, 0]
    for subleaf in range(16):
        eax, ebx, ecx, _ = read(4, subleaf)
        kind = eax & 0x0F
        if kind in (1, 3):
            level = (eax >> 5) & 0x7
            size = (((ebx >> 22) & 0x3FF) + 1) * (((ebx >> 12) & 0x3FF) + 1) * ((ebx & 0xFFF) + 1) * (ecx + 1)
            if 1 <= level <= 3:
                sizes[level - 1] = _wrap_int(size)
        if kind == 0:
            break
    return sizes[0], sizes[1], sizes[2]


def x86_features_from_cpuid(read, xcr0: int | None) -> frozenset[str]:
    """The usable features as the cpuinfo library (ruy's source) decides them: the CPUID bit, and for
    AVX and AVX-512 the operating system saving the YMM (and ZMM, opmask) state in XCR0."""
    top = read(0, 0)[0]
    _, _, ecx1, _ = read(1, 0)
    ebx7 = read(7, 0)[1] if top >= 7 else 0
    osxsave = bool(ecx1 & (1 << 27)) and xcr0 is not None
    avx_state = osxsave and (xcr0 & 0x6) == 0x6
    avx512_state = osxsave and (xcr0 & 0xE6) == 0xE6
    bits = {
        "sse4_1": bool(ecx1 & (1 << 19)),
        "avx": avx_state and bool(ecx1 & (1 << 28)),
        "fma": avx_state and bool(ecx1 & (1 << 12)),
        "avx2": avx_state and bool(ebx7 & (1 << 5)),
        "avx512f": avx512_state and bool(ebx7 & (1 << 16)),
        "avx512dq": avx512_state and bool(ebx7 & (1 << 17)),
        "avx512cd": avx512_state and bool(ebx7 & (1 << 28)),
        "avx512bw": avx512_state and bool(ebx7 & (1 << 30)),
        "avx512vl": avx512_state and bool(ebx7 & (1 << 31)),
    }
    return frozenset(name for name, present in bits.items() if present)


def _arch() -> str:
    if sys.platform == "emscripten":
        return "wasm32"
    machine = platform.machine().lower()
    aliases = {
        "amd64": "x86_64",
        "i386": "x86",
        "i486": "x86",
        "i586": "x86",
        "i686": "x86",
        "arm64": "aarch64",
    }
    machine = aliases.get(machine, machine)
    if machine.startswith("armv"):
        return "arm"
    if machine == "x86_64" and sys.maxsize <= 2**32:
        return "x86"  # a 32-bit process on a 64-bit CPU
    return machine


def _os_caches() -> tuple[int, int, int] | None:
    """Linux's report of cpu0's data caches (sysfs), Eigen's defaults for what it lacks."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    sizes = [0, 0, 0]
    try:
        entries = os.listdir(base)
    except OSError:
        return None
    for entry in entries:
        try:
            with open(os.path.join(base, entry, "level")) as f:
                level = int(f.read())
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and 1 <= level <= 3 and text[:-1].isdigit():
            scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1], 1)
            sizes[level - 1] = int(text[:-1]) * scale
    if not any(sizes):
        return None
    return tuple(s if s > 0 else d for s, d in zip(sizes, EIGEN_DEFAULT_CACHES))  # type: ignore[return-value]


def _os_features() -> frozenset[str] | None:
    """The x86 feature flags Linux reports (it leaves out those whose registers it does not save);
    None where there is no report to read (no /proc, another OS)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return frozenset(name for name in X86_FEATURES if name in flags)
    except OSError:
        pass
    return None


def arm_features_from_hwcaps(arch: str, read) -> frozenset[str]:
    """ARM_FEATURES from Linux's hardware capabilities, as the cpuinfo library (ruy's source) reads
    them; `read(kind)` returns getauxval(kind)."""
    return frozenset(name for name, (kind, bit) in _HWCAP_BITS[arch].items() if read(kind) & bit)


def arm_features_from_cpuinfo(text: str) -> frozenset[str]:
    """ARM_FEATURES from /proc/cpuinfo's first Features line (32-bit Linux names NEON "neon")."""
    for line in text.splitlines():
        if line.startswith("Features"):
            flags = set(line.split(":", 1)[1].split())
            if "neon" in flags:
                flags.add("asimd")
            return frozenset(name for name in ARM_FEATURES if name in flags)
    return frozenset()


def _arm_features(arch: str) -> tuple[frozenset[str], str]:
    """(features, source) of this ARM Linux host: getauxval's capabilities, else /proc/cpuinfo's; where
    neither can be read (another OS), NEON alone, assumed."""
    try:
        import ctypes

        getauxval = ctypes.CDLL(None).getauxval
        getauxval.restype, getauxval.argtypes = ctypes.c_ulong, [ctypes.c_ulong]
        return arm_features_from_hwcaps(arch, getauxval), "os"
    except (OSError, AttributeError, ImportError):
        pass
    try:
        with open("/proc/cpuinfo") as f:
            features = arm_features_from_cpuinfo(f.read())
        if features:
            return features, "os"
    except OSError:
        pass
    return frozenset({"asimd"}), "assumed"


def _ruy_paths_from_environment() -> int | None:
    """RUY_PATHS as ruy reads it: a hexadecimal mask; absent, empty, zero or unreadable means none."""
    try:
        value = int(os.environ.get("RUY_PATHS", "0"), 16)
    except ValueError:
        return None
    return value or None


@functools.cache
def _detected() -> HostProfile:
    profile = _read_host()
    if profile.source == "assumed":
        _warn_assumed(profile)
    return profile


def _warn_assumed(profile: HostProfile) -> None:
    """Say once per process that the CPU could not be read, what was assumed, and how to pin a host:
    LiteRT's host-dependent kernels (int8 rounding, float summation order) follow these facts."""
    features = ", ".join(sorted(profile.features)) or "none"
    warnings.warn(
        f"pytflite could not read this {profile.arch} CPU's features (neither CPUID nor the operating "
        f"system's report could be read); it assumes: {features}. Where LiteRT's results depend on the CPU, "
        "pytflite may then reproduce another machine's: pass Interpreter(..., experimental_host_profile=...) with a "
        "pytflite.HostProfile of this machine or one of pytflite.KNOWN_PROFILES "
        f"({', '.join(KNOWN_PROFILES)}) to choose.",
        RuntimeWarning,
        stacklevel=3,
    )


def _read_host() -> HostProfile:
    arch = _arch()
    ruy_paths = _ruy_paths_from_environment()
    if arch in _HWCAP_BITS:
        features, source = _arm_features(arch)
        return HostProfile("detected", arch, features=features, source=source, ruy_paths=ruy_paths)
    if arch not in ("x86_64", "x86"):
        return HostProfile("detected", arch, source="os", ruy_paths=ruy_paths)
    if _cpuid.available():
        read = _cpuid.cpuid
        ecx1 = read(1, 0)[2]
        xcr0 = _cpuid.xgetbv(0) if ecx1 & (1 << 27) else None
        return HostProfile(
            "detected",
            arch,
            _vendor_string(read(0, 0)[1:]),
            x86_features_from_cpuid(read, xcr0),
            eigen_caches_from_cpuid(read),
            "cpuid",
            ruy_paths,
        )
    caches, features = _os_caches(), _os_features()
    return HostProfile(
        "detected",
        arch,
        "",
        features or frozenset(),
        caches or EIGEN_DEFAULT_CACHES,
        "os" if features is not None else "assumed",
        ruy_paths,
    )


# Profiles of machine kinds LiteRT has been observed on (tests/fixtures hold LiteRT's outputs there).
KNOWN_PROFILES: dict[str, HostProfile] = {
    profile.name: profile
    for profile in (
        HostProfile(
            "intel_sapphire_rapids",
            "x86_64",
            "GenuineIntel",
            frozenset(X86_FEATURES),
            (48 * 1024, 2048 * 1024, 480 * 1024 * 1024),
        ),
        HostProfile(
            "amd_zen4",
            "x86_64",
            "AuthenticAMD",
            frozenset(X86_FEATURES),
            (32 * 1024, 1024 * 1024, 320 * 1024 * 1024),
        ),
        HostProfile(
            "amd_zen3",
            "x86_64",
            "AuthenticAMD",
            frozenset(f for f in X86_FEATURES if not f.startswith("avx512")),
            (32 * 1024, 512 * 1024, 32 * 1024 * 1024),
        ),
        HostProfile("aarch64", "aarch64", features=frozenset({"asimd"})),  # a Cortex-A72
        HostProfile("armv7", "arm", features=frozenset({"asimd"})),
        HostProfile("wasm32", "wasm32"),
    )
}

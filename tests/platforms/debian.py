"""Debian trixie's archive through a private apt configuration (its own lists in the cache, the system's
sources and dpkg state untouched): source tarballs and binary packages the platform builds start from."""

from __future__ import annotations

import re
import shutil
import urllib.request
from pathlib import Path

from tests.provisioning import Unavailable, call

_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
_ARCHIVE = "http://deb.debian.org/debian trixie main"


def _options(cache: Path) -> list[str]:
    """apt-get's options for trixie (binaries for amd64 and sources), its lists fetched once."""
    if shutil.which("apt-get") is None:
        raise Unavailable("apt-get not found: the platform builds start from Debian's archive")
    apt = cache / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "status").touch()
    sources = apt / "sources.list"
    sources.write_text(f"deb [signed-by={_KEYRING}] {_ARCHIVE}\ndeb-src [signed-by={_KEYRING}] {_ARCHIVE}\n")
    options = [
        f"-oDir::Etc::SourceList={sources}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::State::status={apt / 'status'}",
        "-oAPT::Architecture=amd64",
        "-oAPT::Architectures=amd64",
        "-oAPT::Sandbox::User=root",
        "-oDebug::NoLocking=true",
    ]
    if not (apt / "lists" / ".updated").exists():
        call(["apt-get", *options, "update", "-qq"], "apt-get update (Debian trixie)")
        (apt / "lists" / ".updated").write_text("")
    return options


def orig_tarball(cache: Path, package: str) -> Path:
    """The upstream tarball of trixie's source package `package` (the .orig.tar.*), downloaded once."""
    folder = cache / "src"
    found = sorted(folder.glob(f"{package}_*.orig.tar.*"))
    if found:
        return found[-1]
    listing = call(
        ["apt-get", *_options(cache), "source", "--print-uris", package], f"apt-get source {package}"
    )
    uris = re.findall(r"'(\S+\.orig\.tar\.[a-z0-9]+)' (\S+)", listing)
    if not uris:
        raise Unavailable(f"trixie's {package} source package lists no .orig tarball")
    uri, name = uris[0]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(uri, timeout=300) as response:
            (folder / name).write_bytes(response.read())
    except OSError as error:
        raise Unavailable(f"downloading {uri}: {error}") from error
    return folder / name


def unpacked_packages(cache: Path, packages: tuple[str, ...]) -> Path:
    """cache/root: trixie's amd64 `packages` (no dependencies) unpacked with dpkg -x, once."""
    root = cache / "root"
    marker = root / ".packages"
    if marker.exists() and marker.read_text().split() == list(packages):
        return root
    debs = cache / "debs"
    shutil.rmtree(debs, ignore_errors=True)
    debs.mkdir(parents=True)
    call(
        ["apt-get", *_options(cache), "download", *packages],
        "apt-get download " + " ".join(packages),
        cwd=debs,
    )
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for deb in sorted(debs.glob("*.deb")):
        call(["dpkg", "-x", str(deb), str(root)], f"dpkg -x {deb.name}")
    marker.write_text(" ".join(packages))
    return root

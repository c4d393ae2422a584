"""The visualize page in a real headless Chromium: it draws every node and the delegate partitions.

Chromium is found on PATH (chromium, chromium-browser, google-chrome) or at $PYTFLITE_CHROMIUM. On a
fresh Debian/Ubuntu machine without it, the session fixture installs the `chromium` package with
apt-get when it can (root, or passwordless sudo); otherwise the test fails and says how to install it,
rather than skipping silently.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from pytflite.tools.png import decode_png
from pytflite.tools.visualize import drawn_node_count, graph_from_interpreter
from tests.oracle import CORPUS

from .conftest import run_cli

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
_DELEGATE_COLOUR = (251, 188, 4)  # the first partition colour of the page's palette (#fbbc04)


def _find_chromium() -> str | None:
    configured = os.environ.get("PYTFLITE_CHROMIUM")
    if configured:
        return configured
    return next((path for path in map(shutil.which, _NAMES) if path), None)


def _apt_install_chromium() -> str:
    """Install Debian's chromium package; returns what apt said (for the failure message)."""
    apt = shutil.which("apt-get")
    if apt is None:
        return "apt-get is not available"
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"] if shutil.which("sudo") else None
    if prefix is None:
        return "not root and no sudo"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log = []
    for command in (
        ["install", "-y", "--no-install-recommends", "chromium"],
        ["update"],
        ["install", "-y", "--no-install-recommends", "chromium"],
    ):
        result = subprocess.run(
            [*prefix, apt, *command], capture_output=True, text=True, env=env, timeout=1200
        )
        log.append(result.stdout[-400:] + result.stderr[-400:])
        if command[0] == "install" and result.returncode == 0:
            break
    return "\n".join(log)


@pytest.fixture(scope="session")
def chromium() -> str:
    path = _find_chromium()
    if path is None:
        log = _apt_install_chromium()
        path = _find_chromium()
        if path is None:
            pytest.fail(
                "the visualize browser test needs headless Chromium: `apt-get install -y chromium` (Debian) "
                f"or set PYTFLITE_CHROMIUM=/path/to/chrome. Automatic install failed: {log}",
                pytrace=False,
            )
    return path


def _browser(chromium: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )


def _rendered(chromium: str, page: Path) -> str:
    result = _browser(chromium, "--dump-dom", page.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _attribute(dom: str, name: str) -> int:
    match = re.search(rf'{name}="(\d+)"', dom)
    assert match, f"{name} not set: the page's script did not run"
    return int(match.group(1))


def test_page_draws_every_node_and_partition(chromium, workdir):
    result = run_cli(
        "visualize",
        "classifier.tflite",
        "-o",
        "browser.html",
        "--delegate",
        "delegates.py:ConvMean",
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr
    dom = _rendered(chromium, workdir / "browser.html")
    # plan: ConvMean[CONV_2D], ADD, ConvMean[CONV_2D, MEAN], FULLY_CONNECTED, SOFTMAX + input + output
    assert _attribute(dom, "data-drawn-nodes") == 7
    assert _attribute(dom, "data-delegate-partitions") == 2
    assert len(re.findall(r'<g class="node (op|io)', dom)) == 7
    assert len(re.findall(r'<g class="edge"', dom)) == 7  # the image also feeds ADD
    assert "runs 2 nodes:" in dom and "MEAN #3" in dom  # the macro node lists what it runs
    assert "[1\u00d78\u00d78\u00d73]" in dom  # shapes on the edges

    shot = workdir / "browser.png"
    result = _browser(
        chromium, f"--screenshot={shot}", "--window-size=1200,900", (workdir / "browser.html").as_uri()
    )
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    image = decode_png(shot.read_bytes())
    assert image.shape[:2] == (900, 1200)
    assert (image[:, :, :3] == _DELEGATE_COLOUR).all(axis=2).sum() > 500  # the coloured partitions are drawn


@pytest.mark.skipif(not (CORPUS / "manifest.json").exists(), reason=f"public corpus not found at {CORPUS}")
def test_page_draws_a_corpus_model_with_control_flow(chromium, tmp_path):
    import pytflite

    model = CORPUS / "control_flow.tflite"
    result = run_cli("visualize", model, "-o", tmp_path / "flow.html")
    assert result.returncode == 0, result.stderr
    expected = drawn_node_count(graph_from_interpreter(pytflite.Interpreter(model_path=str(model))))
    dom = _rendered(chromium, tmp_path / "flow.html")
    assert _attribute(dom, "data-drawn-nodes") == expected
    assert dom.count("<svg") == 7  # one drawing per subgraph

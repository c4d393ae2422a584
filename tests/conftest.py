"""Suite-wide rules: in CI nothing the differential tests rely on may be missing silently.

Locally, a missing oracle (ai-edge-litert), a missing ../shared (corpus, recorded fixtures) or a missing
numba (the compiled kernels' half of the `kernels` fixture) skips the tests that need it, with the reason
shown. With CI=true (how CI runs .ci/run) any of them is an error that stops the run before any test: a
green CI must mean the comparisons ran.
"""

from __future__ import annotations

import os

import pytest

from pytflite.ops import jit
from tests.oracle import CORPUS, SHARED, litert


def pytest_sessionstart(session):
    if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
        return
    missing = []
    if litert is None:
        missing.append("ai-edge-litert (the reference oracle; the 'test' extra installs it)")
    if not (CORPUS / "manifest.json").exists():
        missing.append(f"the public corpus at {CORPUS}")
    if not SHARED.joinpath("fixtures").is_dir():
        missing.append(f"the recorded fixtures at {SHARED / 'fixtures'}")
    if not jit.available():
        missing.append("numba (the compiled kernels; the 'test' extra installs it)")
    if missing:
        raise pytest.UsageError(
            "CI=true, but the suite would skip its comparisons: missing " + "; ".join(missing)
        )


def pytest_configure(config):
    # every builtin prepare the suite runs is checked against the kernel convention
    from tests import kernel_conventions

    kernel_conventions.install()


@pytest.fixture(params=["numpy", "compiled"])
def kernels(request):
    """Run the test once with the NumPy kernels only and once with the compiled ones (ops/jit.py) where
    a kernel has them: both paths must give LiteRT's results."""
    compiled = request.param == "compiled"
    if compiled and not jit.available():
        pytest.skip("numba is not installed: no compiled kernels to test")
    jit.set_enabled(compiled)
    yield request.param
    jit.set_enabled(None)

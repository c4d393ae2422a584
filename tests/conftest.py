"""Suite-wide rules: in CI nothing the differential tests rely on may be missing silently.

Locally, a missing oracle (ai-edge-litert) or a missing ../shared (corpus, recorded fixtures) skips the
tests that need it, with the reason shown. With CI=true (how CI runs .ci/run) either is an error that
stops the run before any test: a green CI must mean the comparisons ran.
"""

from __future__ import annotations

import os

import pytest

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
    if missing:
        raise pytest.UsageError(
            "CI=true, but the suite would skip its comparisons: missing " + "; ".join(missing)
        )


def pytest_configure(config):
    # every builtin prepare the suite runs is checked against the kernel convention
    from tests import kernel_conventions

    kernel_conventions.install()

"""BUILTIN_REF's integer outputs of the public corpus as sha256 hashes: the same on every platform.

LiteRT's reference kernels agree on every CPU, and so must pytflite's BUILTIN_REF: its integer outputs
are recorded once, as hashes of their raw bytes (tests/fixtures/builtin_ref_golden.json: model -> output
label -> sha256, every corpus model listed, with no entry for its float outputs), and checked natively
(tests/fidelity/test_builtin_ref_golden.py) and under Pyodide's 32-bit NumPy (tests/pyodide/).

    .venv/bin/python -m tests.fidelity.builtin_ref_golden     # rewrite the file (after a reviewed change)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from tests.oracle import CORPUS
from tests.pyodide.driver import run_model

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "builtin_ref_golden.json"


def digest(value: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()


def integer_hashes(outputs: dict[str, np.ndarray]) -> dict[str, str]:
    """The hashes of the integer (and boolean) outputs, with their dtype and shape in the label's value."""
    return {
        label: f"{value.dtype.name}{list(value.shape)}:{digest(value)}"
        for label, value in sorted(outputs.items())
        if value.dtype.kind in "iub"
    }


def corpus_hashes() -> dict[str, dict[str, str]]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    return {
        entry["name"]: integer_hashes(run_model(CORPUS, entry, reference=True))
        for entry in manifest["models"]
    }


if __name__ == "__main__":
    hashes = corpus_hashes()
    GOLDEN.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}: {sum(map(len, hashes.values()))} outputs of {len(hashes)} models")

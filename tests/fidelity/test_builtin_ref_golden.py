"""BUILTIN_REF integer outputs of every public corpus model equal their recorded hashes on this machine
(tests/fidelity/builtin_ref_golden.py); tests/pyodide/ checks the same hashes under 32-bit NumPy."""

from __future__ import annotations

import json

import pytest

from tests.fidelity.builtin_ref_golden import GOLDEN, integer_hashes
from tests.oracle import CORPUS
from tests.pyodide.driver import run_model

pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(), reason=f"public corpus not found at {CORPUS}"
)

EXPECTED = json.loads(GOLDEN.read_text())
MANIFEST = json.loads((CORPUS / "manifest.json").read_text()) if (CORPUS / "manifest.json").exists() else {}
ENTRIES = {entry["name"]: entry for entry in MANIFEST.get("models", [])}


def test_every_corpus_model_is_recorded():
    assert sorted(EXPECTED) == sorted(ENTRIES)
    assert sum(map(len, EXPECTED.values())) >= 10  # the quantized models' and integer zoo's outputs


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_builtin_ref_integer_outputs_match_their_hashes(name):
    assert integer_hashes(run_model(CORPUS, ENTRIES[name], reference=True)) == EXPECTED[name]

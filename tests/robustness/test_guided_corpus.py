"""The coverage-guided fuzzer's corpus (fuzz/corpus/SURFACE/, kept in the repository) replayed through its
surfaces (fuzz/surfaces.py) without atheris: every input that once reached new code must still end in a
deliberate refusal or a result, never a crash."""

from __future__ import annotations

import pytest
from fuzz import surfaces


@pytest.mark.parametrize("surface", surfaces.SURFACES)
def test_the_committed_corpus_replays_without_a_crash(surface):
    folder = surfaces.CORPUS / surface
    inputs = sorted(folder.iterdir()) if folder.is_dir() else []
    assert inputs, f"no corpus for {surface} at {folder} (fuzz/guided.py {surface} --seed-corpus)"
    target = surfaces.target(surface)
    crashed = []
    for path in inputs:
        try:
            target(path.read_bytes())
        except surfaces.Crash as crash:
            crashed.append(f"{path.name}: {crash}")
    assert not crashed, f"{len(crashed)} of {len(inputs)} inputs crash: {crashed[:3]}"

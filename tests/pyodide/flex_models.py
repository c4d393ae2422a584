"""The Select TF op fixtures (tests/fixtures/flex/) as a corpus driver.py runs: every Flex model in
plain mode, the on-device training models (training/) in training mode and the lookup-table models
(tables/) replaying their signature calls, so that Flex models, training with its checkpoints and
resources shared across signatures are checked under Pyodide's pure-Python protobuf too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flex"
_FOLDERS = (
    ("plain", FIXTURES),
    ("training", FIXTURES / "training"),
    ("signature_calls", FIXTURES / "tables"),
)


def names() -> list[str]:
    """The models in the corpus's order."""
    return [path.stem for _, folder in _FOLDERS for path in sorted(folder.glob("*.tflite"))]


def write_corpus(folder: Path) -> Path:
    """A copy of the fixtures with their manifest (they are small: about 200 KB in all)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for mode, source in _FOLDERS:
        for model in sorted(source.glob("*.tflite")):
            for path in source.glob(f"{model.stem}.*"):  # the model, its .npz, its checkpoint's files
                shutil.copyfile(path, folder / path.name)
            entries.append({"name": model.stem, "file": model.name, "npz": f"{model.stem}.npz", "mode": mode})
    (folder / "manifest.json").write_text(json.dumps({"models": entries}, indent=1))
    return folder

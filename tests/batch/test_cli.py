"""`pytflite batch` through a subprocess: a folder of .npy files, resuming, bad items, a custom-op model
into Parquet with the progress bar."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from pytflite.batch import Predictor
from tests.tools.conftest import run_cli

from .conftest import EXAMPLES, corpus_model, dense_model


def test_npy_folder_then_resume_then_a_bad_item(tmp_path):
    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model())
    rows = np.random.default_rng(0).standard_normal([5, 6]).astype(np.float32)
    (tmp_path / "in").mkdir()
    for i, row in enumerate(rows):
        np.save(tmp_path / "in" / f"{i}.npy", row)
    first = run_cli("batch", model, tmp_path / "in", tmp_path / "out", "--batch-size", "8")
    assert first.returncode == 0, first.stderr
    assert "5 items written" in first.stdout and first.stderr == ""  # no bar: stderr is not a terminal
    expected = Predictor(str(model))({"x": rows})
    for i in range(5):
        with np.load(tmp_path / "out" / f"{i}.npz") as saved:
            np.testing.assert_array_equal(saved["s"], expected["s"][i])

    (tmp_path / "in" / "5.npy").write_bytes(b"broken")
    stopped = run_cli("batch", model, tmp_path / "in", tmp_path / "out")
    assert stopped.returncode == 2
    assert f"pytflite batch: error: {tmp_path / 'in' / '5.npy'}: cannot read it" in stopped.stderr
    skipped = run_cli("batch", model, tmp_path / "in", tmp_path / "out", "--on-error", "skip")
    assert skipped.returncode == 1
    assert "0 items written to" in skipped.stdout and "5 already there, 1 skipped" in skipped.stdout
    assert f"skipped {tmp_path / 'in' / '5.npy'}: cannot read it" in skipped.stderr


def test_custom_op_model_into_parquet_with_progress(tmp_path):
    model = corpus_model("atan_custom")
    x = np.random.default_rng(1).standard_normal([3, 5]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    spec = f"{EXAMPLES / 'atan_custom_op.py'}:register"
    args = ("batch", model, tmp_path / "x.npy", tmp_path / "out.parquet", "--custom-ops", spec)
    result = run_cli(*args, "--progress")
    assert result.returncode == 0, result.stderr
    assert "3/3 100%" in result.stderr
    table = pq.read_table(tmp_path / "out.parquet")
    expected = Predictor(model, custom_ops=[spec])({"x": x})["Identity"]
    np.testing.assert_array_equal(table.column("Identity").combine_chunks().to_numpy_ndarray(), expected)


def test_usage_errors(tmp_path):
    missing = run_cli("batch", tmp_path / "none.tflite", tmp_path, tmp_path / "out")
    assert missing.returncode == 2 and "none.tflite" in missing.stderr
    address = run_cli("batch", tmp_path / "none.tflite", tmp_path, tmp_path / "out", "--address", "x:1")
    assert address.returncode == 2 and "use it with --ray" in address.stderr
    assert "batch" in run_cli("--help").stdout

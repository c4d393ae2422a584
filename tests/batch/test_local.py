"""run_local and the readers/writers: folders of .npy/.npz/images/.wav, .npy/.npz/.parquet files, .npy and
Parquet outputs, unreadable items (stop or skip), resuming, the progress bar."""

from __future__ import annotations

import io
import sys
import wave

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pytflite.batch import BatchError, Predictor, run_local
from pytflite.batch.io import ItemError, read_wav
from pytflite.batch.local import Progress

from .conftest import dense_model


def reference(path, x: np.ndarray, batch_size: int) -> dict[str, np.ndarray]:
    """The outputs for rows `x` run in batches of `batch_size` (float sums depend on the batch size)."""
    predictor = Predictor(str(path))
    parts = [predictor({"x": x[i : i + batch_size]}) for i in range(0, len(x), batch_size)]
    return {name: np.concatenate([p[name] for p in parts]) for name in predictor.output_names}


@pytest.fixture
def dense(tmp_path):
    path = tmp_path / "dense.tflite"
    path.write_bytes(dense_model())
    return Predictor(str(path)), path


def write_npy_folder(folder, rows: np.ndarray) -> None:
    folder.mkdir()
    for i, row in enumerate(rows):
        np.save(folder / f"item{i:02d}.npy", row)


def test_npy_folder_to_npz_folder_in_ragged_batches_then_resume(dense, tmp_path):
    predictor, path = dense
    rows = np.random.default_rng(0).standard_normal([10, 6]).astype(np.float32)
    write_npy_folder(tmp_path / "in", rows)
    report = run_local(predictor, tmp_path / "in", tmp_path / "out", batch_size=4)
    assert (report.written, report.already_done, report.failed) == (10, 0, [])
    expected = reference(path, rows, 4)
    for i in range(10):
        with np.load(tmp_path / "out" / f"item{i:02d}.npz") as saved:
            np.testing.assert_array_equal(saved["y"], expected["y"][i])
            np.testing.assert_array_equal(saved["s"], expected["s"][i])
    (tmp_path / "out" / "item03.npz").unlink()
    again = run_local(predictor, tmp_path / "in", tmp_path / "out", batch_size=4)
    assert (again.written, again.already_done) == (1, 9)


def test_unreadable_item_stops_the_job_keeping_written_batches_or_is_skipped(dense, tmp_path):
    predictor, _ = dense
    write_npy_folder(tmp_path / "in", np.ones([6, 6], np.float32))
    (tmp_path / "in" / "item04.npy").write_bytes(b"not numpy")
    np.save(tmp_path / "in" / "item05.npy", np.ones([5], np.float32))  # wrong shape
    with pytest.raises(ItemError, match=r"item04\.npy: cannot read it"):
        run_local(predictor, tmp_path / "in", tmp_path / "out", batch_size=2)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"item0{i}.npz" for i in range(4)]
    report = run_local(predictor, tmp_path / "in", tmp_path / "out", batch_size=2, on_error="skip")
    assert report.written == 0 and report.already_done == 4
    assert len(report.failed) == 2
    assert "item04.npy: cannot read it" in report.failed[0]
    assert "item05.npy: input x has shape [5], the model takes [6] per item" in report.failed[1]


def test_npz_file_to_parquet_parts_and_resume(dense, tmp_path):
    predictor, path = dense
    rows = np.random.default_rng(1).standard_normal([9, 6]).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=rows)
    out = tmp_path / "out.parquet"
    assert run_local(predictor, tmp_path / "in.npz", out, batch_size=4).written == 9
    table = pq.read_table(out)
    assert table.column("key").to_pylist() == [str(i) for i in range(9)]
    expected = reference(path, rows, 4)
    np.testing.assert_array_equal(table.column("y").combine_chunks().to_numpy_ndarray(), expected["y"])
    assert len(list(out.glob("part-*.parquet"))) == 3
    assert run_local(predictor, tmp_path / "in.npz", out).already_done == 9


def test_parquet_and_npy_file_inputs(dense, tmp_path):
    predictor, path = dense
    rows = np.random.default_rng(2).standard_normal([5, 6]).astype(np.float32)
    import pyarrow as pa

    pq.write_table(pa.table({"x": [list(map(float, r)) for r in rows]}), tmp_path / "in.parquet")
    np.save(tmp_path / "in.npy", rows)
    run_local(predictor, tmp_path / "in.parquet", tmp_path / "a")
    run_local(predictor, tmp_path / "in.npy", tmp_path / "b")
    expected = reference(path, rows, 32)
    for folder in ("a", "b"):
        with np.load(tmp_path / folder / "3.npz") as saved:
            np.testing.assert_array_equal(saved["y"], expected["y"][3])


def test_images_must_match_the_input_shape(tmp_path):
    from tests.tools.conftest import classifier_model

    model = tmp_path / "classifier.tflite"
    model.write_bytes(classifier_model())
    predictor = Predictor(str(model))
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, [3, 8, 8, 3], dtype=np.uint8)
    Image.fromarray(pixels[0]).save(folder / "a.png")
    Image.fromarray(pixels[1]).save(folder / "b.png")
    Image.fromarray(rng.integers(0, 256, [9, 8, 3], dtype=np.uint8)).save(folder / "c.jpg")
    with pytest.raises(
        ItemError, match=r"c\.jpg: input image has shape \[9, 8, 3\], the model takes \[8, 8, 3\]"
    ):
        run_local(predictor, folder, tmp_path / "out")
    out = Predictor(str(model))({"image": pixels[:2]})["probabilities"]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "b.npy"), out[1])


def test_wav_samples_as_float(tmp_path):
    samples = np.array([0, 16384, -32768, 32767], np.int16)
    with wave.open(str(tmp_path / "a.wav"), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(samples.tobytes())
    np.testing.assert_array_equal(read_wav(tmp_path / "a.wav"), samples / np.float32(32768))


def test_bad_paths_and_options(dense, tmp_path):
    predictor, _ = dense
    with pytest.raises(BatchError, match="no such input"):
        run_local(predictor, tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BatchError, match="holds no"):
        run_local(predictor, tmp_path / "empty", tmp_path / "out")
    with pytest.raises(BatchError, match="on_error"):
        run_local(predictor, tmp_path / "empty", tmp_path / "out", on_error="ignore")


def test_progress_bar_draws_only_when_enabled():
    stream = io.StringIO()
    bar = Progress(4, enabled=True, stream=stream)
    bar.advance(4)
    bar.close()
    assert "4/4 100%" in stream.getvalue() and stream.getvalue().endswith("\n")
    quiet = io.StringIO()
    silent = Progress(4, enabled=False, stream=quiet)
    silent.advance(4)
    silent.close()
    assert quiet.getvalue() == ""


def test_a_missing_optional_package_names_the_extra(dense, tmp_path, monkeypatch):
    predictor, _ = dense
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails as if not installed
    with pytest.raises(BatchError, match=r"writing Parquet needs pyarrow: pip install 'pytflite\[batch\]'"):
        np.save(tmp_path / "x.npy", np.ones([2, 6], np.float32))
        run_local(predictor, tmp_path / "x.npy", tmp_path / "out.parquet")

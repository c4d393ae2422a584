"""map_dataset on a real local Ray cluster (2 CPUs): outputs equal one in-process Predictor exactly, the
actor pool cannot hang a small cluster, and Ray leaves no process behind.

Without Ray installed the module is skipped locally; with CI=true that is an error, as for the oracle.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from pytflite.batch import BatchError, Predictor
from tests.batch.conftest import corpus_model, dense_model

try:
    import ray
except ImportError:
    ray = None
if ray is None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise ImportError("CI=true, but ray is not installed: the Ray tests would not run (the 'ray' extra)")
    pytest.skip("ray is not installed (pip install -e '.[ray]')", allow_module_level=True)

from pytflite.batch.ray_data import actor_pool, map_dataset

REPO = Path(__file__).resolve().parents[2]
ROWS, BATCH = 203, 16  # the last batch has 11 rows


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (gcs_server, raylet and the workers a local ray.init starts)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = set(), [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.add(child)
            stack.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        started = _descendants(os.getpid())
        ray.shutdown()
        deadline = 30
        while deadline and any(_alive(pid) for pid in started):
            time.sleep(0.5)
            deadline -= 1
        left = [pid for pid in started if _alive(pid)]
        assert started, "found no Ray processes to watch: the check would prove nothing"
        assert not left, f"Ray processes left after ray.shutdown(): {left}"


def _by_id(ds, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The dataset's columns as arrays in id order (Ray Data does not keep row order)."""
    batches = list(ds.iter_batches(batch_size=None, batch_format="numpy"))
    columns = {name: np.concatenate([b[name] for b in batches]) for name in (*names, "id")}
    order = np.argsort(columns["id"])
    np.testing.assert_array_equal(columns["id"][order], np.arange(len(order)))
    return {name: columns[name][order] for name in names}


def _assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(got) == set(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_dynamic_batch_model_from_one_block(cluster, tmp_path):
    """One block (as from_numpy makes) is cut into batch-size blocks for both actors; ragged tail; ids pass through."""
    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model())
    x = np.random.default_rng(0).standard_normal((ROWS, 6)).astype(np.float32)
    ds = ray.data.from_items([{"id": i, "x": x[i]} for i in range(ROWS)], override_num_blocks=1)
    assert ds.materialize().num_blocks() == 1

    out = map_dataset(ds, str(model), batch_size=BATCH).materialize()

    assert out.num_blocks() == math.ceil(ROWS / BATCH)
    predictor = Predictor(str(model))
    _assert_same(_by_id(out, predictor.output_names), predictor({"x": x}))


def test_signature_model(cluster):
    """multi_signature's 'encode' (two inputs, batch fixed to 1: run row by row in the actors)."""
    model = corpus_model("multi_signature")
    rng = np.random.default_rng(1)
    batch = {
        "x": rng.standard_normal((ROWS, 8)).astype(np.float32),
        "scale": rng.uniform(0.5, 2, ROWS).astype(np.float32),
    }
    ds = ray.data.from_items([{"id": i, "x": batch["x"][i], "scale": batch["scale"][i]} for i in range(ROWS)])

    out = map_dataset(ds, model, batch_size=BATCH, signature="encode")

    predictor = Predictor(model, signature="encode")
    _assert_same(_by_id(out, predictor.output_names), predictor(batch))


def test_custom_op_by_relative_file_path(cluster, monkeypatch):
    """The Atan example's register(), named by a path relative to the driver's cwd, runs in the workers."""
    monkeypatch.chdir(REPO)
    model, ops = "examples/models/atan_custom.tflite", ("examples/atan_custom_op.py",)
    x = np.random.default_rng(2).uniform(-10, 10, (37, 5)).astype(np.float32)
    ds = ray.data.from_items([{"id": i, "x": x[i]} for i in range(len(x))])

    out = map_dataset(ds, model, batch_size=8, actors=2, custom_ops=ops)

    predictor = Predictor(model, custom_ops=ops)
    _assert_same(_by_id(out, predictor.output_names), predictor({"x": x}))


def test_missing_column_names_the_inputs(cluster, tmp_path):
    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model())
    ds = ray.data.from_numpy(np.zeros((4, 6), np.float32))
    with pytest.raises(Exception, match=r"the model takes \['x'\] \(missing: x\)"):
        map_dataset(ds, str(model), batch_size=2).take_all()


@pytest.mark.parametrize(
    ("cpus", "actors", "per_actor", "expected"),
    [
        (2, None, None, (2, 0.5)),  # the cluster: 0.5 each leaves a CPU for repartition tasks
        (2, 1, None, (1, 1.0)),
        (8, None, None, (8, 7 / 8)),
        (8, None, 2.0, (3, 2.0)),
        (2, 4, None, (4, 0.25)),
    ],
)
def test_actor_pool_leaves_a_cpu_for_tasks(cpus, actors, per_actor, expected):
    assert actor_pool(cpus, actors, per_actor) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("cpus", "actors", "per_actor", "message"),
    [
        (2, 2, 1.0, "would hang"),  # the configuration that hung for 8 minutes in the issue
        (1, None, None, "needs more than 1"),
        (4, 0, None, "actors must be at least 1"),
        (4, None, 0.0, "must be positive"),
    ],
)
def test_actor_pool_refuses_what_cannot_run(cpus, actors, per_actor, message):
    with pytest.raises(BatchError, match=message):
        actor_pool(cpus, actors, per_actor)


@pytest.mark.parametrize("corpus", [False, True], ids=["dynamic_batch", "corpus_mlp"])
def test_run_ray_writes_what_run_local_writes_and_resumes(cluster, tmp_path, corpus):
    """The CLI's --ray job: the same folder in, the same files out as the in-process job, then a rerun
    skips them; on a dynamic-batch model and on the corpus's mlp (batch fixed to 2: run in chunks)."""
    from pytflite.batch import run_local
    from pytflite.batch.ray_data import run_ray

    if corpus:
        model = Path(corpus_model("mlp"))
    else:
        model = tmp_path / "dense.tflite"
        model.write_bytes(dense_model())
    width = Predictor(str(model))._inputs[0].signature[-1]
    rows = np.random.default_rng(1).standard_normal([37, width]).astype(np.float32)
    (tmp_path / "in").mkdir()
    for i, row in enumerate(rows):
        np.save(tmp_path / "in" / f"item{i:02d}.npy", row)
    predictor = Predictor(str(model))
    local = run_local(predictor, tmp_path / "in", tmp_path / "local", batch_size=BATCH)
    remote = run_ray(predictor, str(tmp_path / "in"), str(tmp_path / "ray"), batch_size=BATCH)
    assert (remote.written, remote.already_done, remote.failed) == (local.written, 0, []) == (37, 0, [])
    written = sorted(path.name for path in (tmp_path / "local").iterdir())
    assert len(written) == 37 and written == sorted(path.name for path in (tmp_path / "ray").iterdir())
    for name in written:  # .npz for several outputs, .npy for one
        want, got = np.load(tmp_path / "local" / name), np.load(tmp_path / "ray" / name)
        if name.endswith(".npz"):
            assert sorted(want.files) == sorted(got.files)
            for key in want.files:
                np.testing.assert_array_equal(got[key], want[key])
        else:
            np.testing.assert_array_equal(got, want)
    (tmp_path / "ray" / written[5]).unlink()
    again = run_ray(predictor, str(tmp_path / "in"), str(tmp_path / "ray"), batch_size=BATCH)
    assert (again.written, again.already_done) == (1, 36)


def test_cli_ray_flag_runs_the_job_on_the_cluster(cluster, tmp_path, capsys):
    from pytflite.tools.cli import main

    model = tmp_path / "dense.tflite"
    model.write_bytes(dense_model())
    (tmp_path / "in").mkdir()
    for i in range(5):
        np.save(tmp_path / "in" / f"item{i}.npy", np.full(6, i, np.float32))
    assert main(["batch", str(model), str(tmp_path / "in"), str(tmp_path / "out"), "--ray"]) == 0
    assert "5 items written" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [f"item{i}.npz" for i in range(5)]

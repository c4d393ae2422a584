"""A Predictor over a Ray Data `Dataset`: one Predictor per actor of an actor pool, sized so it cannot hang.

The traps this handles for the user (issue 16):
- current APIs only: `compute=ActorPoolStrategy(size=n)`, not the deprecated `concurrency=`;
- actors reserve a fraction of a CPU so that one CPU stays free for Ray Data's own tasks (reads,
  repartitions): two actors at `num_cpus=1` on a 2-CPU cluster leave none and the job hangs;
- blocks are cut to `batch_size` rows (a streaming repartition, no shuffle), so one big block (as
  `from_numpy` makes) feeds every actor, and batches, which never span blocks, keep one size;
- the model, custom ops and delegates travel as paths and importable references, never as allocated
  interpreters: each actor builds its own Predictor.

This module imports Ray; `pytflite.batch` loads it only when `map_dataset` is first used.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import ray

from .local import JobReport, run_job, same_shape_runs
from .predictor import BatchError, Predictor

__all__ = ["actor_pool", "map_dataset", "run_ray"]

# CPUs left to Ray Data's tasks (reads, repartitions) next to the actor pool.
RESERVED_CPUS = 1.0


class _PredictBatches:
    """The callable class `map_batches` runs: Ray builds one per actor, so the interpreter is allocated in
    the worker. Columns that are not model inputs (ids, paths) pass through next to the outputs."""

    def __init__(self, model_path: str, predictor_kwargs: dict[str, Any]):
        self._predictor = Predictor(model_path, **predictor_kwargs)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        names = self._predictor.input_names
        missing = [name for name in names if name not in batch]
        if missing:
            raise BatchError(
                f"the dataset has columns {sorted(batch)}, the model takes {list(names)} "
                f"(missing: {', '.join(missing)})"
            )
        outputs = self._predictor({name: batch[name] for name in names})
        for name, column in batch.items():
            if name in names:
                continue
            if name in outputs:
                raise BatchError(f"the dataset column {name!r} has the name of a model output")
            outputs[name] = column
        return outputs


def actor_pool(
    cluster_cpus: float, actors: int | None, num_cpus_per_actor: float | None
) -> tuple[int, float]:
    """(actors, CPUs each) that leave RESERVED_CPUS free: by default one actor per CPU, each reserving an
    equal share of the rest (0.5 each for two actors on 2 CPUs)."""
    spare = cluster_cpus - RESERVED_CPUS
    if spare <= 0:
        raise BatchError(
            f"the Ray cluster has {cluster_cpus:g} CPUs: an actor pool needs more than {RESERVED_CPUS:g}, "
            "which Ray Data's own tasks take"
        )
    if actors is not None and actors < 1:
        raise BatchError(f"actors must be at least 1, not {actors}")
    if num_cpus_per_actor is not None and num_cpus_per_actor <= 0:
        raise BatchError(f"num_cpus_per_actor must be positive, not {num_cpus_per_actor}")
    if actors is None:
        actors = (
            max(1, math.floor(spare / num_cpus_per_actor))
            if num_cpus_per_actor
            else max(1, int(cluster_cpus))
        )
    if num_cpus_per_actor is None:
        num_cpus_per_actor = min(1.0, spare / actors)
    if actors * num_cpus_per_actor > spare + 1e-9:
        raise BatchError(
            f"{actors} actors x {num_cpus_per_actor:g} CPUs need more than the {spare:g} of the cluster's "
            f"{cluster_cpus:g} CPUs left after Ray Data's tasks: the job would hang waiting for them"
        )
    return actors, num_cpus_per_actor


def _absolute(spec: str) -> str:
    """An importable reference with a .py file path made absolute (a Ray worker's cwd is not the driver's)."""
    module, sep, attribute = spec.rpartition(":")
    if not sep:
        module, attribute = spec, ""
    if module.endswith(".py") and Path(module).is_file():
        module = str(Path(module).resolve())
    return f"{module}{sep}{attribute}"


def map_dataset(
    ds: ray.data.Dataset,
    model_path: str,
    *,
    batch_size: int = 64,
    actors: int | None = None,
    num_cpus_per_actor: float | None = None,
    **predictor_kwargs: Any,
) -> ray.data.Dataset:
    """`ds` with the model's outputs as columns (input columns dropped, other columns kept), computed by an
    actor pool of Predictors. Columns are named by the model's inputs (its signature's, with `signature=`);
    `predictor_kwargs` are Predictor's (signature, custom_ops, delegates, num_threads, batching, ...).

    On a multi-node cluster, `model_path` and any .py files named in custom_ops/delegates must exist at
    the same path on every node (or be shipped with a runtime_env)."""
    if batch_size < 1:
        raise BatchError(f"batch_size must be at least 1, not {batch_size}")
    model_path = str(Path(model_path).resolve())
    for key in ("custom_ops", "delegates"):
        if key in predictor_kwargs:
            predictor_kwargs[key] = tuple(_absolute(spec) for spec in predictor_kwargs[key])
    Predictor(model_path, **predictor_kwargs)  # bad arguments fail here, not inside every actor
    if not ray.is_initialized():
        ray.init()
    size, cpus = actor_pool(ray.cluster_resources().get("CPU", 0.0), actors, num_cpus_per_actor)
    return ds.repartition(target_num_rows_per_block=batch_size).map_batches(
        _PredictBatches,
        fn_constructor_args=(model_path, predictor_kwargs),
        batch_format="numpy",
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=size),
        num_cpus=cpus,
    )


_KEY = "__pytflite_key"
_BATCHES_PER_CHUNK = 16  # items read in the driver per Ray job: enough to keep every actor busy


def run_ray(
    predictor: Predictor,
    inputs: str,
    output: str,
    *,
    address: str | None = None,
    batch_size: int = 32,
    on_error: str = "stop",
    progress: bool | None = None,
) -> JobReport:
    """run_local's job (same inputs, outputs, resume and error handling) with the predictions made by
    map_dataset on Ray Data: a local cluster, or the one at `address`. Items are read in the driver, a
    chunk at a time, and travel to the actors as rows keyed by their name."""
    if not ray.is_initialized():
        ray.init(address=address) if address else ray.init()
    arguments = predictor.arguments
    model_path = arguments.pop("model_path")

    def score(keys, items, sink, report) -> None:
        for run_keys, run_items in same_shape_runs(keys, items):
            rows = [{_KEY: key, **item} for key, item in zip(run_keys, run_items)]
            scored = map_dataset(ray.data.from_items(rows), model_path, batch_size=batch_size, **arguments)
            for batch in scored.iter_batches(batch_format="numpy", batch_size=None):
                names = [str(k) for k in batch.pop(_KEY)]
                sink.write(names, batch)
                report.written += len(names)

    chunk = batch_size * _BATCHES_PER_CHUNK
    return run_job(predictor, inputs, output, score, batch_size, chunk, on_error, progress)

"""Items per second of batch scoring: one in-process Predictor vs map_dataset on a local Ray cluster with 1
and 2 actors, on a model where compute dominates and on a tiny one, with the ratios.

The heavy model is the corpus's heaviest per item, mobilenet_v2_dynamic (hybrid int8 weights, about 4-6 ms
an item on one thread); the tiny one is mlp (tens of microseconds). Every run uses num_threads=1 (Ray's
workers run with OMP_NUM_THREADS=1), the same items and batch size; Ray times are end to end (actor
start-up included, ray.init excluded), so use enough items for the start-up to be small.

    .venv/bin/python benchmarks/bench_batch.py [--cpus 2] [--heavy-items 1500] [--tiny-items 200000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import ray

from pytflite.batch import Predictor
from pytflite.batch.ray_data import map_dataset

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "public"


def items(predictor: Predictor, count: int) -> dict[str, np.ndarray]:
    """`count` random rows for each input, shaped as the model's input without its batch axis."""
    rng = np.random.default_rng(0)
    batch = {}
    for spec in predictor.inputs:
        shape = (count, *(max(d, 1) for d in spec.signature[1:]))
        batch[spec.name] = rng.uniform(-1, 1, shape).astype(spec.dtype)
    return batch


def in_process(model: str, batch: dict[str, np.ndarray], batch_size: int) -> float:
    predictor = Predictor(model, num_threads=1)
    count = len(next(iter(batch.values())))
    started = time.perf_counter()
    for start in range(0, count, batch_size):
        predictor({name: a[start : start + batch_size] for name, a in batch.items()})
    return count / (time.perf_counter() - started)


def on_ray(model: str, batch: dict[str, np.ndarray], batch_size: int, actors: int) -> float:
    count = len(next(iter(batch.values())))
    started = time.perf_counter()
    ds = ray.data.from_numpy(batch[next(iter(batch))]).rename_columns({"data": next(iter(batch))})
    if len(batch) > 1:
        raise SystemExit("the benchmark models have one input")
    out = map_dataset(ds, model, batch_size=batch_size, actors=actors, num_threads=1).materialize()
    assert out.count() == count
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--heavy-items", type=int, default=1500)
    parser.add_argument("--tiny-items", type=int, default=200_000)
    args = parser.parse_args()

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        for name, count in (("mobilenet_v2_dynamic", args.heavy_items), ("mlp", args.tiny_items)):
            model = str(CORPUS / f"{name}.tflite")
            batch = items(Predictor(model), count)
            local = in_process(model, batch, args.batch_size)
            one = on_ray(model, batch, args.batch_size, 1)
            two = on_ray(model, batch, args.batch_size, 2)
            print(
                f"{name:22s} {count:7d} items  in-process {local:9.1f}/s  ray x1 {one:9.1f}/s  "
                f"ray x2 {two:9.1f}/s  | x1/in-process {one / local:.2f}  x2/in-process {two / local:.2f}  "
                f"x2/x1 {two / one:.2f}  ({local and 1e3 / local:.3f} ms/item in-process)",
                flush=True,
            )
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()

"""Run inside the Python under test (free-threaded CPython, or any): how N interpreters of one model in N
threads scale, against the machine's own ceiling measured in the same run, and a stress run of many
threads creating, invoking and dropping interpreters. Prints one JSON object.

- ceiling: N threads each counting a pure-Python loop for the same time, their total against one
  thread's: what N cores give this Python here (a VM's second core may come and go);
- per plain corpus model (corpus/manifest.json mode "plain", its .npz inputs): one thread alone, then N
  threads each with its own Interpreter of one shared bytes object, invoking for the same time; the
  speed-up is their total invokes per second against the lone thread's. Every thread's outputs (of an
  invoke after reset_all_variables, for models with state) must equal the lone interpreter's bit for
  bit, and a second interpreter's constants must share memory with the first's (no copy of the weights);
- stress: `stress_threads` threads each making, invoking and dropping interpreters of two models in
  turn for `stress_seconds`, every output compared with its model's reference.

    python tests/platforms/thread_scaling.py CORPUS [--threads 2] [--seconds 1.0] [--models a,b]

It imports only the standard library, NumPy and pytflite.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

import pytflite


def _run_threads(count: int, work) -> list:
    """work(barrier) in `count` threads started together; their results."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(i: int) -> None:
        try:
            results[i] = work(barrier)
        except BaseException as error:  # reported, not lost in the thread
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise errors[0]
    return results


def _counting_loop(seconds: float):
    def work(barrier) -> float:
        barrier.wait()
        count, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(1000):
                count += 1
        return count / seconds

    return work


def ceiling(threads: int, seconds: float) -> float:
    alone = _run_threads(1, _counting_loop(seconds))[0]
    return sum(_run_threads(threads, _counting_loop(seconds))) / alone


def _ready(content: bytes, inputs: list[np.ndarray]) -> pytflite.Interpreter:
    interpreter = pytflite.Interpreter(model_content=content)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    return interpreter


def _outputs(interpreter: pytflite.Interpreter) -> list[np.ndarray]:
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def _invoking(content: bytes, inputs: list[np.ndarray], seconds: float):
    def work(barrier) -> tuple[float, list[np.ndarray]]:
        interpreter = _ready(content, inputs)
        interpreter.invoke()  # the first invoke binds the steps
        barrier.wait()
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            interpreter.invoke()
            count += 1
        rate = count / (time.perf_counter() - start)
        interpreter.reset_all_variables()  # a model with state (lstm): outputs compared after one invoke
        interpreter.invoke()
        return rate, _outputs(interpreter)

    return work


def _shares_constants(first: pytflite.Interpreter, second: pytflite.Interpreter) -> bool:
    pairs = [
        (a.data, b.data)
        for a, b in zip(first.subgraphs[0].tensors, second.subgraphs[0].tensors, strict=False)
        if a.is_constant and a.data is not None and a.data.size
    ]
    return all(np.shares_memory(a, b) for a, b in pairs)


def scale_model(content: bytes, inputs: list[np.ndarray], threads: int, seconds: float) -> dict:
    (alone, reference), *_ = _run_threads(1, _invoking(content, inputs, seconds))
    results = _run_threads(threads, _invoking(content, inputs, seconds))
    identical = all(
        len(outputs) == len(reference)
        and all(np.array_equal(a, b) for a, b in zip(outputs, reference, strict=True))
        for _, outputs in results
    )
    return {
        "invoke_ms": 1e3 / alone,
        "speedup": sum(rate for rate, _ in results) / alone,
        "identical": identical,
        "shared_weights": _shares_constants(_ready(content, inputs), _ready(content, inputs)),
    }


def stress(models: list[tuple[bytes, list[np.ndarray]]], threads: int, seconds: float) -> dict:
    references = [_outputs(_invoked(content, inputs)) for content, inputs in models]

    def work(barrier) -> tuple[int, int]:
        barrier.wait()
        made, wrong, end = 0, 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            k = made % len(models)
            outputs = _outputs(_invoked(*models[k]))
            wrong += not all(np.array_equal(a, b) for a, b in zip(outputs, references[k], strict=True))
            made += 1
        return made, wrong

    results = _run_threads(threads, work)
    return {
        "threads": threads,
        "interpreters": sum(m for m, _ in results),
        "wrong_outputs": sum(w for _, w in results),
    }


def _invoked(content: bytes, inputs: list[np.ndarray]) -> pytflite.Interpreter:
    interpreter = _ready(content, inputs)
    interpreter.invoke()
    return interpreter


def plain_models(corpus: Path, names: list[str] | None) -> dict[str, tuple[bytes, list[np.ndarray]]]:
    found = {}
    for entry in json.loads((corpus / "manifest.json").read_text())["models"]:
        if entry["mode"] != "plain" or (names and entry["name"] not in names):
            continue
        with np.load(corpus / entry["npz"]) as data:
            count = sum(1 for key in data.files if key.startswith("input_") and "__" not in key)
            inputs = [data[f"input_{i}"] for i in range(count)]
        found[entry["name"]] = ((corpus / entry["file"]).read_bytes(), inputs)
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--models", default="")
    parser.add_argument("--stress-threads", type=int, default=8)
    parser.add_argument("--stress-seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    models = plain_models(args.corpus, [m for m in args.models.split(",") if m])
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    report = {
        "python": sys.version.split()[0],
        "gil_enabled_after_import": gil,
        "ceiling": ceiling(args.threads, args.seconds),
        "models": {name: scale_model(*model, args.threads, args.seconds) for name, model in models.items()},
        "stress": stress(
            [models[name] for name in sorted(models, key=lambda n: len(models[n][0]))[:2]],
            args.stress_threads,
            args.stress_seconds,
        ),
        "ceiling_after": ceiling(args.threads, args.seconds),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()

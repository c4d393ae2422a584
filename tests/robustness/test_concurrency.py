"""One model shared by many interpreters, one per thread (TFLite's contract: an Interpreter is not
thread-safe, separate interpreters are). The model bytes and the file mapping are read-only and kernels
keep their state in their own node, so N threads x M invokes give exactly the sequential outputs."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pytflite
from tests.oracle import CORPUS
from tests.test_interpreter_api import mlp_model

THREADS, INVOKES = 6, 12


def _inputs(interpreter: pytflite.Interpreter, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(d["shape"]).astype(d["dtype"]) for d in interpreter.get_input_details()]


def _run(interpreter: pytflite.Interpreter, inputs: list[np.ndarray]) -> list[np.ndarray]:
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def _check_threads(make_interpreter) -> None:
    """Each thread runs its own order of inputs; a stateful model's outputs depend on that order, so
    each thread is compared with a sequential run of the same order."""
    probe = make_interpreter()
    probe.allocate_tensors()
    feeds = [_inputs(probe, seed) for seed in range(INVOKES)]
    orders = [[(i + thread) % INVOKES for i in range(INVOKES)] for thread in range(THREADS)]

    def sequential(order: list[int]) -> list[list[np.ndarray]]:
        interpreter = make_interpreter()
        interpreter.allocate_tensors()
        return [_run(interpreter, feeds[k]) for k in order]

    expected = [sequential(order) for order in orders]
    start = threading.Barrier(THREADS)

    def worker(thread: int) -> int:
        interpreter = make_interpreter()  # built in the thread, from the shared model
        interpreter.allocate_tensors()
        start.wait()
        for step, k in enumerate(orders[thread]):  # threads run different inputs at the same moment
            for got, want in zip(_run(interpreter, feeds[k]), expected[thread][step]):
                np.testing.assert_array_equal(got, want)
        return INVOKES

    with ThreadPoolExecutor(THREADS) as pool:
        assert sum(pool.map(worker, range(THREADS))) == THREADS * INVOKES


def test_threads_share_one_model_bytes_object():
    model = mlp_model()
    _check_threads(lambda: pytflite.Interpreter(model_content=model))


@pytest.mark.parametrize("name", ["small_cnn", "control_flow", "stateful"])
def test_threads_share_one_mapped_corpus_file(name):
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} is not there")
    _check_threads(lambda: pytflite.Interpreter(model_path=str(path)))


def test_interpreters_share_the_constants_read_only():
    model = mlp_model()
    first, second = (pytflite.Interpreter(model_content=model) for _ in range(2))
    weights = [i.subgraphs[0].tensors[1].data for i in (first, second)]
    assert not any(w.flags.writeable for w in weights)
    assert np.shares_memory(weights[0], weights[1])  # views on the same immutable bytes, never copies

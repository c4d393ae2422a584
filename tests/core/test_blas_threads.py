"""num_threads is the BLAS pool's size during invoke, and the pool's own size comes back afterwards."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import threadpoolctl

import pytflite
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder


def _blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


def _interpreter(num_threads, seen: list):
    def invoke(context, node):
        seen.append(_blas_threads())
        np.copyto(context.tensors[node.outputs[0]].data, context.tensors[node.inputs[0]].data)

    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("Spy", pytflite.Registration(prepare=prepare, invoke=invoke, custom_name="Spy"))
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator("Spy", [x], [y])
    builder.add_output(y)
    interpreter = pytflite.Interpreter(
        model_content=builder.build(), num_threads=num_threads, op_resolver=resolver
    )
    interpreter.allocate_tensors()
    return interpreter


@pytest.mark.parametrize("pool", [1, 2])
@pytest.mark.parametrize("num_threads", [1, 2])
def test_invoke_runs_with_num_threads_and_restores_the_pool(pool, num_threads):
    if not _blas_threads():
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")
    seen: list = []
    interpreter = _interpreter(num_threads, seen)
    with threadpoolctl.threadpool_limits(pool, user_api="blas"):
        for _ in range(2):
            interpreter.invoke()
            assert _blas_threads() == [pool] * len(seen[-1])
    assert seen == [[num_threads] * len(seen[0])] * 2


def test_without_num_threads_the_pool_is_left_alone():
    if not _blas_threads():
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")
    seen: list = []
    interpreter = _interpreter(None, seen)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        interpreter.invoke()
    assert seen == [[2] * len(seen[0])]


def test_only_the_thread_threadpoolctl_lets_size_the_pool_sizes_it():
    """An OpenBLAS on its own threads is sized by one thread only (threadpoolctl's rule: two threads
    resizing it at once can break it). Once the main thread has sized it for an invoke, and reads and
    sizes it directly from then on, another thread's invoke still leaves it alone."""
    if not _blas_threads():
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")
    seen: list = []
    interpreter = _interpreter(1, seen)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        interpreter.invoke()
        interpreter.invoke()
        assert seen[-1] == [1] * len(seen[-1])
        pools = [info for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]
        openblas_threads = all(
            info["internal_api"] == "openblas" and info.get("threading_layer") != "openmp" for info in pools
        )
        worker = threading.Thread(target=interpreter.invoke)
        worker.start()
        worker.join()
        if openblas_threads:  # threadpoolctl ignores the other thread's sizing
            assert seen[-1] == [2] * len(seen[-1])
        assert _blas_threads() == [2] * len(seen[-1])
        interpreter.invoke()
        assert seen[-1] == [1] * len(seen[-1])
    assert seen

"""BLAS runs on one thread during every invoke, whatever num_threads, the pool's own size or the invoking
thread, and the pool's own size comes back afterwards (core/blas_threads.py): a multithreaded BLAS gives
results that change with its pool's size."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import threadpoolctl

import pytflite
from pytflite import TensorType as T
from pytflite.core import blas_threads
from pytflite.model.builder import ModelBuilder


def _blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


@pytest.fixture
def pools() -> None:
    if not _blas_threads():
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")


def _spy_model(num_threads, seen: list, during=None):
    """An interpreter of one custom op that records the BLAS pools' sizes during its invoke (and calls
    `during`, if given, there)."""

    def invoke(context, node):
        seen.append(_blas_threads())
        if during is not None:
            during()
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
@pytest.mark.parametrize("num_threads", [None, 1, 2, 4])
def test_invoke_runs_blas_on_one_thread_and_restores_the_pool(pools, pool, num_threads):
    seen: list = []
    interpreter = _spy_model(num_threads, seen)
    with threadpoolctl.threadpool_limits(pool, user_api="blas"):
        for _ in range(2):
            interpreter.invoke()
            assert _blas_threads() == [pool] * len(seen[-1])
    assert seen == [[1] * len(seen[0])] * 2


def test_another_threads_invoke_is_pinned_too(pools):
    """threadpoolctl lets one thread size an OpenBLAS on its own threads; an invoke from another thread
    must still run on one BLAS thread (else its float results would differ from the same invoke's on the
    main thread)."""
    seen: list = []
    interpreter = _spy_model(1, seen)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        interpreter.invoke()  # the main thread sizes the pool first
        worker = threading.Thread(target=interpreter.invoke)
        worker.start()
        worker.join()
        assert seen[-1] == [1] * len(seen[-1])
        assert _blas_threads() == [2] * len(seen[-1])


def test_concurrent_invokes_restore_the_pool_when_the_last_ends(pools):
    """An invoke that ends while another is running leaves the pool at one thread; the last one restores
    it."""
    seen: list = []
    inner_seen: list = []
    inner = _spy_model(None, inner_seen)
    started, release = threading.Event(), threading.Event()

    def hold():
        started.set()
        release.wait(10)

    outer = _spy_model(None, seen, during=hold)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        worker = threading.Thread(target=outer.invoke)
        worker.start()
        assert started.wait(10)
        inner.invoke()  # begins and ends inside the worker's invoke
        after_inner = _blas_threads()
        release.set()
        worker.join()
        assert after_inner == [1] * len(after_inner)
        assert _blas_threads() == [2] * len(after_inner)
    assert inner_seen == [[1] * len(after_inner)]


def test_an_invoke_inside_an_invoke_keeps_the_outer_pinned(pools):
    """A custom op may invoke another interpreter: the pool stays pinned until the outer invoke ends."""
    seen: list = []
    inner = _spy_model(None, [])
    outer = _spy_model(None, seen, during=lambda: (inner.invoke(), seen.append(_blas_threads())))
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        outer.invoke()
        assert _blas_threads() == [2] * len(seen[0])
    assert seen == [[1] * len(seen[0])] * 2


def test_no_visible_blas_means_nothing_to_pin(monkeypatch):
    """Pyodide: threadpoolctl sees no BLAS library; invokes run as usual."""
    monkeypatch.setattr(pytflite.interpreter, "ONE_BLAS_THREAD", blas_threads._Pinning([]))
    seen: list = []
    interpreter = _spy_model(3, seen)
    interpreter.invoke()
    assert len(seen) == 1


@pytest.mark.parametrize("batch", [1, 64])
def test_float_products_do_not_change_with_threads(pools, batch):
    """A product whose result OpenBLAS's threads change (a 1x1280x1000 SGEMV and a 64x513x64 SGEMM were
    seen to): the same bits for num_threads None, 1, 2, 4 and BLAS pools of 1 and 2 threads."""
    from tests.single_op import Operand, SingleOpModel

    rng = np.random.default_rng(5)
    depth, units = (1280, 1000) if batch == 1 else (513, 64)
    model, feeds = SingleOpModel(
        pytflite.BuiltinOperator.FULLY_CONNECTED,
        [
            Operand(rng.standard_normal((batch, depth), dtype=np.float32)),
            Operand(rng.standard_normal((units, depth), dtype=np.float32), constant=True),
        ],
        [T.FLOAT32],
    ).build()
    results = []
    for pool in (1, 2):
        with threadpoolctl.threadpool_limits(pool, user_api="blas"):
            for num_threads in (None, 1, 2, 4):
                interpreter = pytflite.Interpreter(model_content=model, num_threads=num_threads)
                interpreter.allocate_tensors()
                interpreter.set_tensor(interpreter.get_input_details()[0]["index"], feeds[0])
                interpreter.invoke()
                results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])

"""Derived constants (core/derived.py): computed once per model, shared read-only by its interpreters."""

from __future__ import annotations

import threading
import time

import numpy as np

import pytflite
from pytflite import ModelBuilder
from pytflite.core.derived import DerivedConstants, derived_constant
from pytflite.core.types import AllocationType
from pytflite.core.types import BuiltinOperator as Op
from pytflite.core.types import TensorType as T

WEIGHTS = np.linspace(-2, 2, 64 * 32, dtype=np.float32).reshape(64, 32)


def fp16_model() -> tuple[bytes, int, int]:
    """fp16 weights -> DEQUANTIZE -> TRANSPOSE -> FULLY_CONNECTED; returns the model and the indices of
    the dequantized and of the transposed weights."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 64])
    half = builder.add_constant("w_fp16", WEIGHTS.astype(np.float16))
    dequantized = builder.add_tensor("w", T.FLOAT32, [64, 32])
    builder.add_operator(Op.DEQUANTIZE, [half], [dequantized])
    perm = builder.add_constant("perm", np.array([1, 0], np.int32))
    transposed = builder.add_tensor("w_t", T.FLOAT32, [32, 64])
    builder.add_operator(Op.TRANSPOSE, [dequantized, perm], [transposed])
    y = builder.add_tensor("y", T.FLOAT32, [1, 32])
    builder.add_operator(Op.FULLY_CONNECTED, [x, transposed, -1], [y])
    builder.add_output(y)
    return builder.build(), dequantized, transposed


def run(interpreter: pytflite.Interpreter, batch: int = 1) -> np.ndarray:
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.ones((batch, 64), np.float32))
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_interpreters_of_one_model_share_its_dequantized_weights():
    model, dequantized, transposed = fp16_model()
    first, second = pytflite.Interpreter(model_content=model), pytflite.Interpreter(model_content=model)
    np.testing.assert_array_equal(run(first), run(second))
    for index in (dequantized, transposed):  # DEQUANTIZE, and the TRANSPOSE of its result
        ours, theirs = (i.subgraphs[0].tensors[index] for i in (first, second))
        assert ours.allocation_type == AllocationType.PERSISTENT_RO
        assert ours.data is theirs.data  # computed once, not per interpreter
        assert not ours.data.flags.writeable
    np.testing.assert_array_equal(first.subgraphs[0].tensors[dequantized].data, WEIGHTS.astype(np.float16))
    assert len(first.model.derived_constants) == 2


def test_shared_constants_survive_reallocation():
    model, dequantized, _ = fp16_model()
    interpreter = pytflite.Interpreter(model_content=model)
    run(interpreter)
    shared = interpreter.subgraphs[0].tensors[dequantized].data
    interpreter.resize_tensor_input(0, [2, 64])  # every node is prepared (and folded) again
    # against a fresh interpreter at the same batch: the same BLAS product (a batch of 2 is another
    # product than two of 1, which some BLAS kernels sum in another order)
    fresh = pytflite.Interpreter(model_content=model)
    fresh.resize_tensor_input(0, [2, 64])
    np.testing.assert_array_equal(run(interpreter, batch=2), run(fresh, batch=2))
    assert interpreter.subgraphs[0].tensors[dequantized].data is shared


def test_another_kernel_or_config_computes_its_own():
    """The key holds the kernel and the config: BUILTIN_REF's DEQUANTIZE or other interpreter options never
    get a constant another computed; an overridden kernel is not folded at all (it may keep state), so
    it runs at invoke (its output read here with every tensor preserved)."""
    model, dequantized, _ = fp16_model()
    builtin = pytflite.Interpreter(model_content=model)
    run(builtin)
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())

    def doubled(context, node):
        source = context.tensors[node.inputs[0]].data
        np.multiply(source, 2, out=context.tensors[node.outputs[0]].data, casting="unsafe")

    base = pytflite.BuiltinOpResolver().find_builtin(Op.DEQUANTIZE, 1)
    resolver.add_builtin(Op.DEQUANTIZE, pytflite.Registration(prepare=base.prepare, invoke=doubled))
    others = [
        pytflite.Interpreter(
            model_content=model, op_resolver=resolver, experimental_preserve_all_tensors=True
        ),
        pytflite.Interpreter(model_content=model, num_threads=2),
        pytflite.Interpreter(
            model_content=model, experimental_op_resolver_type=pytflite.OpResolverType.BUILTIN_REF
        ),
    ]
    for other in others:
        run(other)
        assert (
            other.subgraphs[0].tensors[dequantized].data is not builtin.subgraphs[0].tensors[dequantized].data
        )
    overridden = others[0].subgraphs[0].tensors[dequantized]
    assert overridden.allocation_type == AllocationType.ARENA_RW
    np.testing.assert_array_equal(overridden.data, 2 * WEIGHTS.astype(np.float16).astype(np.float32))


def test_densified_weights_are_shared():
    dense = np.zeros((8, 8), np.float32)
    dense[::3, 1::2] = 5
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [8, 8])
    sparse = builder.add_sparse_constant("s", dense, ["DENSE", "SPARSE_CSR"])
    expanded = builder.add_tensor("e", T.FLOAT32, [8, 8])
    builder.add_operator(Op.DENSIFY, [sparse], [expanded])
    y = builder.add_tensor("y", T.FLOAT32, [8, 8])
    builder.add_operator(Op.ADD, [x, expanded], [y])
    builder.add_output(y)
    model = builder.build()
    first, second = (pytflite.Interpreter(model_content=model) for _ in range(2))
    first.allocate_tensors()
    second.allocate_tensors()
    assert first.subgraphs[0].tensors[expanded].data is second.subgraphs[0].tensors[expanded].data
    np.testing.assert_array_equal(first.subgraphs[0].tensors[expanded].data, dense)


def test_a_kernel_derives_a_constant_once_per_model():
    """derived_constant, the API a kernel calls in prepare, computes once for all interpreters."""
    computed = []

    def prepare(context, node):
        def compute():
            computed.append(1)
            return context.tensors[node.inputs[0]].data * 2

        node.user_data = derived_constant(context, node, "doubled", compute)

    def invoke(context, node):
        context.tensors[node.outputs[0]].data[...] = node.user_data + context.tensors[node.inputs[1]].data

    builder = ModelBuilder()
    c = builder.add_constant("c", np.array([1, 2], np.float32))
    x = builder.add_input("x", T.FLOAT32, [2])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator("AddDoubled", [c, x], [y])
    builder.add_output(y)
    model = builder.build()
    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("AddDoubled", pytflite.Registration(prepare=prepare, invoke=invoke))
    interpreters = [pytflite.Interpreter(model_content=model, op_resolver=resolver) for _ in range(3)]
    for interpreter in interpreters:
        interpreter.allocate_tensors()
        interpreter.set_tensor(x, np.array([10, 20], np.float32))
        interpreter.invoke()
        np.testing.assert_array_equal(interpreter.get_tensor(y), [12, 24])
    assert computed == [1]
    assert not interpreters[0].subgraphs[0].nodes[0][0].user_data.flags.writeable


def test_threads_asking_together_compute_once():
    cache, calls, results = DerivedConstants(), [], []

    def compute():
        calls.append(1)
        time.sleep(0.01)
        return np.arange(3)

    threads = [threading.Thread(target=lambda: results.append(cache.get("k", compute))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [1]
    assert all(result is results[0] for result in results)
    assert cache.holds(results[0]) and not cache.holds(np.arange(3))

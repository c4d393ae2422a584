"""Which nodes the subgraph computes once in prepare (core/folding.py), and that it then skips them."""

from __future__ import annotations

import numpy as np

import pytflite
from pytflite import ModelBuilder
from pytflite.core.types import AllocationType
from pytflite.core.types import BuiltinOperator as Op
from pytflite.core.types import TensorType as T


def _run(model: bytes, inputs: dict[int, np.ndarray]) -> pytflite.Interpreter:
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for index, value in inputs.items():
        interpreter.set_tensor(index, value)
    interpreter.invoke()
    return interpreter


def test_a_node_of_constants_is_computed_in_prepare_and_skipped_at_invoke():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    a = builder.add_constant("a", np.array([1, 2], np.float32))
    b = builder.add_constant("b", np.array([3, 4], np.float32))
    ab = builder.add_tensor("ab", T.FLOAT32, [2])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator(Op.ADD, [a, b], [ab])
    builder.add_operator(Op.MUL, [x, ab], [y])
    builder.add_output(y)
    interpreter = _run(builder.build(), {x: np.array([1, 10], np.float32)})
    subgraph = interpreter.subgraphs[0]
    assert subgraph.folded_nodes == {0}
    assert subgraph.tensors[ab].allocation_type == AllocationType.PERSISTENT_RO
    assert [node.index for _, node in subgraph._runner.fast_steps] == [1]
    np.testing.assert_array_equal(interpreter.get_tensor(y), [4, 60])


def test_an_output_marked_persistent_in_prepare_is_folded_though_its_input_is_not_constant():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3, 5])
    shape = builder.add_tensor("shape", T.INT32, [2])
    builder.add_operator(Op.SHAPE, [x], [shape], options={"out_type": T.INT32})
    builder.add_output(shape)
    interpreter = _run(builder.build(), {x: np.zeros((3, 5), np.float32)})
    subgraph = interpreter.subgraphs[0]
    assert subgraph.folded_nodes == {0}
    assert subgraph._runner.fast_steps == []
    np.testing.assert_array_equal(interpreter.get_tensor(shape), [3, 5])
    interpreter.resize_tensor_input(x, [7, 2])  # folded again for the new shape
    interpreter.allocate_tensors()
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(shape), [7, 2])


def test_custom_ops_and_stateful_ops_are_never_folded():
    calls = []
    builder = ModelBuilder()
    c = builder.add_constant("c", np.array([1.0], np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [1])
    builder.add_operator("Count", [c], [y])
    builder.add_output(y)

    def invoke(context, node):
        calls.append(1)
        context.tensors[node.outputs[0]].data[...] = len(calls)

    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("Count", pytflite.Registration(invoke=invoke))
    interpreter = pytflite.Interpreter(model_content=builder.build(), op_resolver=resolver)
    interpreter.allocate_tensors()
    interpreter.invoke()
    interpreter.invoke()
    assert calls == [1, 1]
    assert interpreter.subgraphs[0].folded_nodes == set()

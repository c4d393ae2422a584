"""Lazy prepare inside invoke, after a node resized a dynamic output: builtin nodes whose inputs are as
their last prepare saw them are not prepared again (same result), Python custom ops are (as TFLite), and
a lazy allocation that grows the arena leaves no stale memory behind."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.subgraph import Subgraph
from pytflite.model.builder import ModelBuilder
from tests.core.test_lifecycle import NonZero, Recorder


def _model() -> bytes:
    """x -> ADD 1 -> NonZero (dynamic) -> MUL 2 -> y; and after it RELU(w) -> r, Scale(w) -> s (custom)."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [6])
    w = builder.add_input("w", T.FLOAT32, [3])
    one = builder.add_constant("one", np.array([1.0], np.float32))
    a = builder.add_tensor("a", T.FLOAT32, [6])
    builder.add_operator(Op.ADD, [x, one], [a])
    positive = builder.add_tensor("positive", T.FLOAT32, [6])
    builder.add_operator("NonZero", [a], [positive])
    two = builder.add_constant("two", np.array([2.0], np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [6])
    builder.add_operator(Op.MUL, [positive, two], [y])
    r = builder.add_tensor("r", T.FLOAT32, [3])
    builder.add_operator(Op.RELU, [w], [r])
    s = builder.add_tensor("s", T.FLOAT32, [3])
    builder.add_operator("Scale", [w], [s], custom_options={"scale": 2.5})
    for output in (y, r, s):
        builder.add_output(output)
    return builder.build()


@pytest.fixture
def prepared(monkeypatch):
    """The op names prepared, in order, while the test runs."""
    names: list[str] = []
    prepare_node = Subgraph._prepare_node

    def recording(self, node, registration):
        names.append(registration.op_name)
        return prepare_node(self, node, registration)

    monkeypatch.setattr(Subgraph, "_prepare_node", recording)
    return names


def test_unchanged_builtin_nodes_are_not_prepared_again_custom_ops_are(prepared):
    recorder = Recorder()
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_custom("NonZero", NonZero)
    resolver.add_custom("Scale", recorder)
    interpreter = pytflite.Interpreter(model_content=_model(), op_resolver=resolver)
    interpreter.allocate_tensors()
    w = np.array([-1.0, 0.5, 2.0], np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[1]["index"], w)
    outputs = [d["index"] for d in interpreter.get_output_details()]
    # the count of positive entries changes at every invoke but the last; allocate_tensors stopped at
    # NonZero, so the nodes after it are prepared for the first time in the first invoke
    runs = ([0, -3, 1, -3, 2, -3], [-3, -3, -3, 4, -3, -3], [5, 6, 7, 8, 9, 10], [1, 2, 3, 4, 5, 6])
    for count, values in enumerate(runs):
        prepared.clear()
        recorder.calls.clear()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array(values, np.float32))
        interpreter.invoke()
        a = np.array(values, np.float32) + 1
        np.testing.assert_array_equal(interpreter.get_tensor(outputs[0]), a[a > 0] * 2)
        np.testing.assert_array_equal(interpreter.get_tensor(outputs[1]), np.maximum(w, 0))
        np.testing.assert_array_equal(interpreter.get_tensor(outputs[2]), w * 2.5)
        resized = values != [1, 2, 3, 4, 5, 6]  # the last invoke keeps the previous one's shape
        # MUL's input changed shape: prepared again; RELU's did not: not; the Python custom op always
        assert prepared == (["MUL", "RELU", "Scale"] if count == 0 else ["MUL", "Scale"] if resized else [])
        assert recorder.names() == (["prepare", "invoke"] if resized else ["invoke"])


def test_a_lazy_allocation_that_grows_the_arena_rebinds_the_static_prefix():
    """The first invoke leaves y one element long; the second grows it, the arena moves, and the third
    must still see the ADD before the dynamic node write into the tensor's new memory."""
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_custom("NonZero", NonZero)
    resolver.add_custom("Scale", Recorder())
    interpreter = pytflite.Interpreter(model_content=_model(), op_resolver=resolver)
    interpreter.allocate_tensors()
    x_index, w_index = (d["index"] for d in interpreter.get_input_details())
    interpreter.set_tensor(w_index, np.ones(3, np.float32))
    y_index = interpreter.get_output_details()[0]["index"]
    for values in ([0, -3, -3, -3, -3, -3], [1, 2, 3, 4, 5, 6], [-3, 2, -3, 4, -3, 6], [9, 8, 7, 6, 5, 4]):
        interpreter.set_tensor(x_index, np.array(values, np.float32))
        interpreter.invoke()
        a = np.array(values, np.float32) + 1
        np.testing.assert_array_equal(interpreter.get_tensor(y_index), a[a > 0] * 2)

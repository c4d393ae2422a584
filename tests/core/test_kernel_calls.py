"""Registration.calls: the check-free step list makes the calls a kernel returns after each allocation,
on the arrays of that allocation. The careful loop (profilers, dynamic graphs, delegates) makes them too
for a kernel with a pure prepare, bound again when its node is prepared again or its arrays change;
any other kernel it invokes."""

from __future__ import annotations

import numpy as np

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.profiling import ProfilerHooks
from pytflite.model.builder import ModelBuilder


def _doubling_op(calls: list, stateless: bool = False):
    """A custom op computing 2 * x, whose invoke and bound calls record themselves in `calls`."""

    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(context, node):
        calls.append("invoke")
        tensors = context.tensors
        np.multiply(tensors[node.inputs[0]].data, 2, out=tensors[node.outputs[0]].data)

    def bound_calls(context, node):
        source, out = context.tensors[node.inputs[0]].data, context.tensors[node.outputs[0]].data
        calls.append(("bind", source.shape))

        def step():
            calls.append("step")
            np.multiply(source, 2, out=out)

        return (step,)

    return pytflite.Registration(
        prepare=prepare, invoke=invoke, calls=bound_calls, custom_name="Double", stateless=stateless
    )


def _interpreter(calls: list, stateless: bool = False) -> pytflite.Interpreter:
    return add_then_custom_op(_doubling_op(calls, stateless))


def add_then_custom_op(registration: pytflite.Registration) -> pytflite.Interpreter:
    """An interpreter of y = custom(x + 1) on [2] floats, the custom op given by `registration`."""
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_custom(registration.custom_name, registration)
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    one = builder.add_constant("one", np.ones([1], np.float32))
    added = builder.add_tensor("added", T.FLOAT32, [2])
    builder.add_operator(Op.ADD, [x, one], [added])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator(registration.custom_name, [added], [y])
    builder.add_output(y)
    return pytflite.Interpreter(model_content=builder.build(), op_resolver=resolver)


def _run(interpreter, x: np.ndarray) -> np.ndarray:
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_bound_steps_run_and_follow_reallocation():
    calls: list = []
    interpreter = _interpreter(calls)
    interpreter.allocate_tensors()
    assert calls == [("bind", (2,))]
    np.testing.assert_array_equal(_run(interpreter, np.array([1, 2], np.float32)), [4, 6])
    np.testing.assert_array_equal(_run(interpreter, np.array([3, 4], np.float32)), [8, 10])
    assert calls[1:] == ["step", "step"]
    interpreter.resize_tensor_input(0, [3])
    interpreter.allocate_tensors()  # new memory: bound again
    assert calls[3] == ("bind", (3,))
    np.testing.assert_array_equal(_run(interpreter, np.array([0, 1, 2], np.float32)), [2, 4, 6])
    assert calls[4:] == ["step"]


class _Events(ProfilerHooks):
    def __init__(self):
        self.count = 0

    def begin_event(self, tag, event_type, metadata1=0, metadata2=0):
        self.count += 1
        return self.count

    def end_event(self, handle):
        pass


def test_a_profiler_sees_invoke_of_a_kernel_prepared_again():
    """A custom op is prepared again at every lazy prepare (as TFLite does): the careful loop invokes it."""
    calls: list = []
    interpreter = _interpreter(calls)
    interpreter.allocate_tensors()
    interpreter.subgraphs[0].context.profiler = _Events()
    np.testing.assert_array_equal(_run(interpreter, np.array([1, 2], np.float32)), [4, 6])
    assert calls[1:] == ["invoke"]


def test_the_careful_loop_binds_a_pure_kernel_once_and_again_for_new_arrays():
    calls: list = []
    interpreter = _interpreter(calls, stateless=True)
    interpreter.allocate_tensors()
    interpreter.subgraphs[0].context.profiler = _Events()
    np.testing.assert_array_equal(_run(interpreter, np.array([1, 2], np.float32)), [4, 6])
    np.testing.assert_array_equal(_run(interpreter, np.array([3, 4], np.float32)), [8, 10])
    assert calls[1:] == [("bind", (2,)), "step", "step"]
    subgraph = interpreter.subgraphs[0]
    added = subgraph.tensors[subgraph.nodes[1][0].inputs[0]]
    added.data = np.zeros(2, np.float32)  # as a delegate's copy back may give it a new array
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array([5, 6], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(
        interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), [12, 14]
    )
    assert calls[4:] == [("bind", (2,)), "step"]


def test_builtin_binary_steps_match_invoke_after_resizes():
    """ADD's bound step (ops/elementwise/binary.py) on one element and on broadcast shapes."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1])
    y = builder.add_input("y", T.FLOAT32, [1])
    out = builder.add_tensor("out", T.FLOAT32, [1])
    builder.add_operator(Op.MUL, [x, y], [out], {"fused_activation_function": "RELU6"})
    builder.add_output(out)
    interpreter = pytflite.Interpreter(model_content=builder.build())
    rng = np.random.default_rng(0)
    for shapes in ([1], [1]), ([3, 1], [4]), ([1], [1]), ([2, 5], [2, 5]):
        for i, shape in enumerate(shapes):
            interpreter.resize_tensor_input(i, shape)
        interpreter.allocate_tensors()
        a, b = (rng.standard_normal(s).astype(np.float32) * 4 for s in shapes)
        for i, value in enumerate((a, b)):
            interpreter.set_tensor(interpreter.get_input_details()[i]["index"], value)
        interpreter.invoke()
        result = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        np.testing.assert_array_equal(result, np.clip(a * b, 0, 6))


def test_string_tensors_are_not_bound():
    """set_tensor gives a string tensor a new array: an EQUAL of string inputs keeps up with it."""
    builder = ModelBuilder()
    first = builder.add_input("first", T.STRING, [3])
    second = builder.add_input("second", T.STRING, [3])
    same = builder.add_tensor("same", T.BOOL, [3])
    builder.add_operator(Op.EQUAL, [first, second], [same])
    builder.add_output(same)
    interpreter = pytflite.Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    first_index, second_index = (d["index"] for d in interpreter.get_input_details())
    interpreter.set_tensor(second_index, np.array([b"a", b"y", b"c"], dtype=object))
    interpreter.set_tensor(first_index, np.array([b"a", b"b", b"c"], dtype=object))
    interpreter.allocate_tensors()  # string inputs are dynamic: prepared again, a new step list
    for values, expected in (
        ([b"a", b"b", b"c"], [True, False, True]),
        ([b"x", b"y", b"z"], [False, True, False]),
    ):
        interpreter.set_tensor(first_index, np.array(values, dtype=object))
        interpreter.invoke()
        assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == expected

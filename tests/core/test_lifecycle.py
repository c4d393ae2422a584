"""The node lifecycle as TFLite runs it: init once at load, prepare on allocate and after resize, invoke per
inference, free at teardown; temporaries, dynamic outputs with lazy prepare, variables, error texts."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import KernelError, Status
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import compare_with_litert, requires_litert


class Recorder:
    """A custom op y = x * scale that logs every lifecycle call."""

    def __init__(self):
        self.calls = []

    def init(self, context, buffer, length):
        options = pytflite.decode_custom_options(buffer)
        self.calls.append(("init", options, length))
        return {"scale": options["scale"]}

    def prepare(self, context, node):
        self.calls.append(("prepare", context.tensors[node.inputs[0]].shape))
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(self, context, node):
        self.calls.append(("invoke",))
        x = context.tensors[node.inputs[0]].data
        np.multiply(x, node.user_data["scale"], out=context.tensors[node.outputs[0]].data)

    def free(self, context, user_data):
        self.calls.append(("free", user_data))

    def names(self):
        return [call[0] for call in self.calls]


def scale_model(shape=(2, 3)) -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, shape)
    y = builder.add_tensor("y", T.FLOAT32, shape)
    builder.add_operator("Scale", [x], [y], custom_options={"scale": 2.5})
    builder.add_output(y)
    return builder.build()


def interpreter_with(model: bytes, name: str, kernel, **kwargs) -> pytflite.Interpreter:
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_custom(name, kernel)
    return pytflite.Interpreter(model_content=model, op_resolver=resolver, **kwargs)


def test_init_once_prepare_on_allocate_and_resize_invoke_per_call_free_at_teardown():
    recorder = Recorder()
    interpreter = interpreter_with(scale_model(), "Scale", recorder)
    assert recorder.calls == [
        ("init", {"scale": 2.5}, len(interpreter.model.subgraphs[0].operators[0].custom_options))
    ]
    interpreter.allocate_tensors()
    interpreter.allocate_tensors()  # nothing changed: no second prepare
    assert recorder.names() == ["init", "prepare"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    interpreter.set_tensor(0, x)
    interpreter.invoke()
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(1), x * 2.5)
    interpreter.resize_tensor_input(0, [4, 3])
    interpreter.allocate_tensors()
    assert recorder.calls[-1] == ("prepare", (4, 3))
    assert recorder.names() == ["init", "prepare", "invoke", "invoke", "prepare"]
    assert interpreter.get_output_details()[0]["shape"].tolist() == [4, 3]
    del interpreter
    gc.collect()
    assert recorder.calls[-1] == ("free", {"scale": 2.5})


def test_teardown_names_no_module_global(monkeypatch):
    """At interpreter shutdown a module's globals may already be None when a live Interpreter is
    collected: its __del__ frees the kernels without them."""
    recorder = Recorder()
    interpreter = interpreter_with(scale_model(), "Scale", recorder)
    module_globals = vars(sys.modules[pytflite.Interpreter.__module__])
    for name in [name for name in module_globals if not name.startswith("__")]:
        monkeypatch.setitem(module_globals, name, None)
    interpreter.__del__()
    assert recorder.calls[-1] == ("free", {"scale": 2.5})


def test_an_interpreter_alive_at_exit_tears_down_silently(tmp_path):
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3])
    y = builder.add_tensor("y", T.FLOAT32, [3])
    builder.add_operator(Op.LOGISTIC, [x], [y])
    builder.add_output(y)
    model = tmp_path / "logistic.tflite"
    model.write_bytes(builder.build())
    script = tmp_path / "alive_at_exit.py"
    script.write_text(
        "import pytflite\n"
        f"interpreter = pytflite.Interpreter(model_path={str(model)!r})\n"
        "interpreter.allocate_tensors()\n"
        "cycle = [interpreter]\n"
        "cycle.append(cycle)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(pytflite.__file__).parents[1])}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr


def test_builtin_init_receives_typed_options_and_node_sees_builtin_data():
    seen = []

    def init(context, buffer, length):
        seen.append((buffer, length))
        return "state"

    def prepare(context, node):
        seen.append((node.builtin_data, node.user_data))
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(context, node):
        tensors = context.tensors
        np.subtract(
            tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, out=tensors[node.outputs[0]].data
        )

    builder = ModelBuilder()
    a = builder.add_input("a", T.FLOAT32, [3])
    b = builder.add_input("b", T.FLOAT32, [3])
    y = builder.add_tensor("y", T.FLOAT32, [3])
    builder.add_operator(Op.ADD, [a, b], [y], {"fused_activation_function": "RELU6"}, version=2)
    builder.add_output(y)
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_builtin(Op.ADD, pytflite.Registration(init=init, prepare=prepare, invoke=invoke), 1, 3)
    interpreter = pytflite.Interpreter(model_content=builder.build(), op_resolver=resolver)
    options, length = seen[0]
    assert isinstance(options, pytflite.options.AddOptions) and length == 0
    assert options.fused_activation_function == pytflite.options.ActivationFunctionType.RELU6
    interpreter.allocate_tensors()
    assert seen[1] == (options, "state")
    interpreter.set_tensor(0, np.array([5, 5, 5], np.float32))
    interpreter.set_tensor(1, np.array([1, 2, 3], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(
        interpreter.get_tensor(2), [4, 3, 2]
    )  # the override ran, not the builtin ADD


def test_temporaries_from_add_tensors_get_arena_memory():
    observed = {}

    def init(context, buffer, length):
        return context.add_tensors(1)[0]

    def prepare(context, node):
        node.temporaries = (node.user_data,)
        scratch = context.tensors[node.user_data]
        scratch.type = T.FLOAT32
        scratch.allocation_type = pytflite.AllocationType.ARENA_RW
        context.resize_tensor(scratch, context.tensors[node.inputs[0]].shape)
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(context, node):
        scratch = context.tensors[node.temporaries[0]].data
        observed["scratch"] = (scratch.shape, scratch.dtype)
        np.square(context.tensors[node.inputs[0]].data, out=scratch)
        np.add(scratch, 1, out=context.tensors[node.outputs[0]].data)

    interpreter = interpreter_with(
        scale_model((2, 2)), "Scale", pytflite.Registration(init=init, prepare=prepare, invoke=invoke)
    )
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([[1, 2], [3, 4]], np.float32))
    interpreter.invoke()
    assert observed["scratch"] == ((2, 2), np.float32)
    np.testing.assert_array_equal(interpreter.get_tensor(1), [[2, 5], [10, 17]])
    assert len(interpreter.subgraphs[0].tensors) == 3
    assert 2 in [d["index"] for d in interpreter.get_tensor_details()]  # a typed temporary is listed


class NonZero:
    """Dynamic output: the positive entries of x, so the output size depends on the values."""

    @staticmethod
    def prepare(context, node):
        context.set_tensor_to_dynamic(context.tensors[node.outputs[0]])

    @staticmethod
    def invoke(context, node):
        x = context.tensors[node.inputs[0]].data
        positive = x[x > 0]
        out = context.tensors[node.outputs[0]]
        context.resize_tensor(out, positive.shape)
        out.data[...] = positive


def test_dynamic_output_prepares_downstream_nodes_lazily():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [6])
    positive = builder.add_tensor("positive", T.FLOAT32, [6])
    builder.add_operator("NonZero", [x], [positive])
    two = builder.add_constant("two", np.array([2.0], np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [6])
    builder.add_operator(Op.MUL, [positive, two], [y])
    builder.add_output(y)
    interpreter = interpreter_with(builder.build(), "NonZero", NonZero)
    interpreter.allocate_tensors()
    assert interpreter.subgraphs[0].has_dynamic_tensors
    for values in ([1, -1, 2, -2, 3, -3], [-1, -1, -1, 4, -1, -1], [5, 6, 7, 8, 9, 10]):
        interpreter.set_tensor(0, np.array(values, np.float32))
        interpreter.invoke()
        expected = np.array([v for v in values if v > 0], np.float32) * 2
        output = interpreter.get_output_details()[0]
        np.testing.assert_array_equal(interpreter.get_tensor(output["index"]), expected)
        assert output["shape"].tolist() == [len(expected)]


@requires_litert
def test_reshape_with_a_runtime_shape_is_dynamic_and_matches_litert():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 6])
    shape = builder.add_input("shape", T.INT32, [3])
    y = builder.add_tensor("y", T.FLOAT32, [1, 1, 1])
    builder.add_operator(Op.RESHAPE, [x, shape], [y])
    z = builder.add_tensor("z", T.FLOAT32, [1, 1, 1])
    builder.add_operator(Op.RELU, [y], [z])
    builder.add_output(z)
    model = builder.build()
    data = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    for target in ([3, 2, 2], [-1, 4, 1], [12, 1, 1]):
        out = compare_with_litert(model, [data, np.array(target, np.int32)])
        assert out[0].shape == np.maximum(data, 0).reshape(target).shape


def test_a_runtime_reshape_after_static_nodes_reshapes_again_at_every_invoke():
    """The static nodes before the reshape run check-free; the reshape and what follows are prepared
    again whenever its output shape changes, on the same interpreter."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 6])
    shape = builder.add_input("shape", T.INT32, [3])
    a = builder.add_tensor("a", T.FLOAT32, [2, 6])
    builder.add_operator(Op.RELU, [x], [a])
    y = builder.add_tensor("y", T.FLOAT32, [1, 1, 1])
    builder.add_operator(Op.RESHAPE, [a, shape], [y])
    z = builder.add_tensor("z", T.FLOAT32, [1, 1, 1])
    builder.add_operator(Op.RELU, [y], [z])
    builder.add_output(z)
    interpreter = pytflite.Interpreter(model_content=builder.build())
    interpreter.allocate_tensors()
    data = np.linspace(-3, 3, 12, dtype=np.float32).reshape(2, 6)
    for target in ([3, 2, 2], [-1, 4, 1], [12, 1, 1], [3, 2, 2], [1, 1, 12]):
        interpreter.set_tensor(0, data)
        interpreter.set_tensor(1, np.array(target, np.int32))
        interpreter.invoke()
        out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        np.testing.assert_array_equal(out, np.maximum(data, 0).reshape(target))
        assert out.shape == np.maximum(data, 0).reshape(target).shape


class Accumulate:
    """y = (v += x): reads and writes a variable tensor (x broadcasts against it)."""

    @staticmethod
    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[1]].shape)

    @staticmethod
    def invoke(context, node):
        variable = context.tensors[node.inputs[1]].data
        variable += context.tensors[node.inputs[0]].data
        context.tensors[node.outputs[0]].data[...] = variable


def accumulate_model(tensor_type=T.FLOAT32, quantization=None) -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", tensor_type, [3], quantization=quantization)
    v = builder.add_tensor("state", tensor_type, [3], is_variable=True, quantization=quantization)
    y = builder.add_tensor("y", tensor_type, [3], quantization=quantization)
    builder.add_operator("Accumulate", [x, v], [y])
    builder.add_output(y)
    return builder.build()


def test_variables_persist_across_invokes_and_reset():
    interpreter = interpreter_with(accumulate_model(), "Accumulate", Accumulate)
    interpreter.allocate_tensors()
    state = interpreter.subgraphs[0].tensors[1]
    assert state.allocation_type == pytflite.AllocationType.ARENA_RW_PERSISTENT
    for expected in ([1, 2, 3], [2, 4, 6], [3, 6, 9]):
        interpreter.set_tensor(0, np.array([1, 2, 3], np.float32))
        interpreter.invoke()
        np.testing.assert_array_equal(interpreter.get_tensor(2), expected)
    interpreter.reset_all_variables()
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(2), [1, 2, 3])
    interpreter.invoke()
    interpreter.allocate_tensors()  # nothing changed: variables keep their values
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(2), [3, 6, 9])
    interpreter.resize_tensor_input(0, [3])  # the same shape: a no-op
    interpreter.allocate_tensors()
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(2), [4, 8, 12])
    interpreter.resize_tensor_input(0, [1])  # a new shape: the next allocate re-plans and zeroes variables
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([5], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(2), [5, 5, 5])


def test_int8_variables_reset_to_their_zero_point():
    interpreter = interpreter_with(accumulate_model(T.INT8, (0.5, 5)), "Accumulate", Accumulate)
    interpreter.allocate_tensors()
    np.testing.assert_array_equal(interpreter.subgraphs[0].tensors[1].data, [5, 5, 5])
    interpreter.set_tensor(0, np.array([1, 1, 1], np.int8))
    interpreter.invoke()
    interpreter.reset_all_variables()
    np.testing.assert_array_equal(interpreter.subgraphs[0].tensors[1].data, [5, 5, 5])


def failing_op(where: str, how: str):
    def fail(context, node):
        if how == "kernel_error":
            raise KernelError("input must be positive")
        if how == "status":
            context.report_error("reported %d problem(s)", 1)
            return Status.ERROR
        return {}["missing"]  # a bug: KeyError

    def ok(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    return pytflite.Registration(
        prepare=fail if where == "prepare" else ok, invoke=fail if where == "invoke" else ok
    )


@pytest.mark.parametrize("where", ["prepare", "invoke"])
@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("kernel_error", "input must be positive"),
        ("status", "reported 1 problem(s)"),
        ("bug", "KeyError: 'missing'"),
    ],
)
def test_kernel_failures_are_reported_with_the_node(where, how, message):
    interpreter = interpreter_with(scale_model(), "Scale", failing_op(where, how))
    with pytest.raises(RuntimeError) as error:
        interpreter.allocate_tensors()
        interpreter.invoke()
    assert str(error.value) == f"{message}Node number 0 (Scale) failed to {where}."
    if how == "bug":
        assert isinstance(error.value.__cause__, KeyError)


def test_kernel_init_failure_fails_the_load():
    def init(context, buffer, length):
        raise ValueError("bad options")

    with pytest.raises(
        ValueError, match="Scale init raised ValueError: bad options.*Failed to initialize kernel."
    ):
        interpreter_with(scale_model(), "Scale", pytflite.Registration(init=init, invoke=lambda c, n: None))


def test_delegate_only_context_functions_are_forbidden_in_kernels():
    def prepare(context, node):
        context.get_execution_plan()

    interpreter = interpreter_with(
        scale_model(), "Scale", pytflite.Registration(prepare=prepare, invoke=lambda c, n: None)
    )
    with pytest.raises(
        RuntimeError, match="The function is forbidden if not calling in delegate.Node number 0"
    ):
        interpreter.allocate_tensors()


def test_input_without_data_is_reported():
    builder = ModelBuilder()
    x = builder.add_input("x", T.STRING, [2])
    y = builder.add_tensor("y", T.STRING, [2])
    builder.add_operator("Echo", [x], [y])
    builder.add_output(y)

    def invoke(context, node):
        context.tensors[node.outputs[0]].data = context.tensors[node.inputs[0]].data.copy()

    interpreter = interpreter_with(builder.build(), "Echo", pytflite.Registration(invoke=invoke))
    interpreter.allocate_tensors()
    with pytest.raises(RuntimeError, match="Input tensor 0 lacks data"):
        interpreter.invoke()
    interpreter.set_tensor(0, np.array([b"ab", "cd"], dtype=object))
    interpreter.invoke()
    assert interpreter.get_tensor(1).tolist() == [b"ab", b"cd"]


def test_context_configuration_and_metadata():
    seen = {}

    def init(context, buffer, length):  # the configuration is there before any init runs
        seen["init"] = (context.recommended_num_threads, context.host.name)

    def prepare(context, node):
        seen["threads"] = context.recommended_num_threads
        seen["metadata"] = context.get_model_metadata("owner")
        context.set_external_context("cpu", "pool")
        seen["external"] = context.get_external_context("cpu")
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1])
    y = builder.add_tensor("y", T.FLOAT32, [1])
    builder.add_operator("Meta", [x], [y])
    builder.add_output(y)
    builder.add_metadata("owner", b"pytflite")
    interpreter = interpreter_with(
        builder.build(),
        "Meta",
        pytflite.Registration(init=init, prepare=prepare, invoke=lambda c, n: None),
        num_threads=3,
        experimental_host_profile=pytflite.KNOWN_PROFILES["aarch64"],
    )
    interpreter.allocate_tensors()
    assert seen == {
        "init": (3, pytflite.KNOWN_PROFILES["aarch64"].name),
        "threads": 3,
        "metadata": b"pytflite",
        "external": "pool",
    }


def test_resizing_a_constant_fails():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    c = builder.add_constant("c", np.ones(2, np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator(Op.ADD, [x, c], [y])
    builder.add_output(y)
    interpreter = pytflite.Interpreter(model_content=builder.build())
    with pytest.raises(RuntimeError, match="Attempting to resize a fixed-size tensor."):
        interpreter.resize_tensor_input(1, [3])


def test_nodes_of_constants_are_computed_once_in_prepare():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 3])
    dims = builder.add_constant("dims", np.array([3, 2], np.int32))
    shape = builder.add_tensor("shape", T.INT32, [2])
    builder.add_operator(Op.ADD, [dims, builder.add_constant("zero", np.zeros(2, np.int32))], [shape])
    y = builder.add_tensor("y", T.FLOAT32, [3, 2])
    builder.add_operator(Op.RESHAPE, [x, shape], [y])
    counted = builder.add_tensor("counted", T.FLOAT32, [1])
    builder.add_operator("Count", [builder.add_constant("one", np.ones(1, np.float32))], [counted])
    builder.add_output(y)
    builder.add_output(counted)
    calls = []

    def count(context, node):
        calls.append(1)
        context.tensors[node.outputs[0]].data[...] = len(calls)

    interpreter = interpreter_with(builder.build(), "Count", pytflite.Registration(invoke=count))
    interpreter.allocate_tensors()
    subgraph = interpreter.subgraphs[0]
    assert subgraph.tensors[shape].allocation_type == pytflite.AllocationType.PERSISTENT_RO
    assert not subgraph.has_dynamic_tensors  # the reshape's shape became a constant: no lazy prepare
    assert [node.index for _, node in subgraph._runner.fast_steps] == [
        1,
        2,
    ]  # the ADD of constants is not invoked
    interpreter.set_tensor(0, np.arange(6, dtype=np.float32).reshape(2, 3))
    interpreter.invoke()
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(y), np.arange(6, dtype=np.float32).reshape(3, 2))
    assert len(calls) == 2  # custom ops run at every invoke, constant inputs or not

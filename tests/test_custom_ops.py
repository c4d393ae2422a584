"""Custom ops in Python, as the custom-operator guide's Atan example: register, load, run."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import CORPUS, litert, requires_litert


def atan_prepare(context, node):
    x = context.tensors[node.inputs[0]]
    context.resize_tensor(context.tensors[node.outputs[0]], x.shape)


def atan_invoke(context, node):
    np.arctan(context.tensors[node.inputs[0]].data, out=context.tensors[node.outputs[0]].data)


ATAN = pytflite.Registration(
    prepare=atan_prepare, invoke=atan_invoke, builtin_code=Op.CUSTOM, custom_name="Atan", version=1
)


def atan_resolver():
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_custom("Atan", ATAN)
    return resolver


def tutorial_model(offset: float = 1.0) -> bytes:
    """The guide's atan(x + offset), built with ModelBuilder."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [5])
    c = builder.add_constant("offset", np.array(offset, np.float32))
    added = builder.add_tensor("add", T.FLOAT32, [5])
    builder.add_operator(Op.ADD, [x, c], [added])
    y = builder.add_tensor("Identity", T.FLOAT32, [5])
    builder.add_operator("Atan", [added], [y])
    builder.add_output(y)
    return builder.build()


@pytest.mark.skipif(not (CORPUS / "atan_custom.tflite").exists(), reason="public corpus not found")
def test_the_tutorial_model_from_the_converter_runs_with_a_python_atan():
    interpreter = pytflite.Interpreter(
        model_path=str(CORPUS / "atan_custom.tflite"), op_resolver=atan_resolver()
    )
    interpreter.allocate_tensors()
    reference = np.load(CORPUS / "atan_custom.npz")
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], reference["input_0"])
    interpreter.invoke()
    output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_allclose(output, reference["output_0"], rtol=1e-6)


def test_a_builder_made_atan_model_runs():
    interpreter = pytflite.Interpreter(model_content=tutorial_model(), op_resolver=atan_resolver())
    interpreter.allocate_tensors()
    x = np.array([-8, 0.5, 2, 2.2, 201], np.float32)
    interpreter.set_tensor(0, x)
    interpreter.invoke()
    np.testing.assert_allclose(interpreter.get_tensor(3), np.arctan(x + 1), rtol=1e-6)


def test_missing_custom_op_loads_but_fails_to_prepare():
    interpreter = pytflite.Interpreter(model_content=tutorial_model())
    with pytest.raises(RuntimeError, match=r"^Encountered unresolved custom op: Atan\.\nSee instructions: "):
        interpreter.allocate_tensors()


@requires_litert
def test_litert_fails_the_same_way_on_the_builder_model():
    model = tutorial_model()
    interpreters = [
        pytflite.Interpreter(model_content=model),
        litert.Interpreter(
            model_content=model,
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        ),
    ]
    messages = []
    for interpreter in interpreters:
        with pytest.raises(RuntimeError) as error:
            interpreter.allocate_tensors()
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_custom_options_reach_init_as_flexbuffer_bytes():
    seen = {}

    def init(context, buffer, length):
        seen["options"] = pytflite.decode_custom_options(buffer)
        seen["length"] = length
        return seen["options"]["gain"]

    def prepare(context, node):
        seen["initial_data"] = node.custom_initial_data
        atan_prepare(context, node)

    def invoke(context, node):
        np.multiply(
            context.tensors[node.inputs[0]].data, node.user_data, out=context.tensors[node.outputs[0]].data
        )

    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3])
    y = builder.add_tensor("y", T.FLOAT32, [3])
    options = {"gain": 3.0, "name": "amp", "taps": [1, 2, 3], "enabled": True}
    builder.add_operator("Gain", [x], [y], custom_options=options)
    builder.add_output(y)
    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("Gain", pytflite.Registration(init=init, prepare=prepare, invoke=invoke))
    interpreter = pytflite.Interpreter(model_content=builder.build(), op_resolver=resolver)
    assert seen["options"] == options and seen["length"] > 0
    interpreter.allocate_tensors()
    assert pytflite.decode_custom_options(seen["initial_data"]) == options
    interpreter.set_tensor(0, np.array([1, 2, 3], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(1), [3, 6, 9])


def test_decode_custom_options_rejects_garbage():
    assert pytflite.decode_custom_options(None) is None
    with pytest.raises(ValueError, match="not a valid flexbuffer"):
        pytflite.decode_custom_options(b"\xff\xff\xff")

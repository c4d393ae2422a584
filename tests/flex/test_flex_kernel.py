"""The Flex mechanism: a node whose custom code starts with "Flex" runs its TF op's kernel with the
default resolver; what cannot run is refused at allocate, naming every such op; users add kernels."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pytflite
from pytflite import TensorType as T
from pytflite.flex.dtypes import BY_NAME
from pytflite.flex.node_def import decode_flex_options, encode_flex_options
from pytflite.model.builder import ModelBuilder

F64, I64 = BY_NAME["float64"], BY_NAME["int64"]


def _binary_model(op: str, tensor_type: T, attrs: dict, shape=(3,)) -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", tensor_type, list(shape))
    y = builder.add_input("y", tensor_type, list(shape))
    out = builder.add_tensor("out", tensor_type, list(shape))
    builder.add_operator(f"Flex{op}", [x, y], [out], custom_options=encode_flex_options(op, attrs))
    builder.add_output(out)
    return builder.build()


def _run(model: bytes, *inputs: np.ndarray) -> np.ndarray:
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_options_round_trip_through_the_node_def():
    options = encode_flex_options(
        "Foo", {"T": F64, "n": 3, "alpha": 0.5, "flag": True, "s": "x", "l": [1, 2]}
    )
    node = decode_flex_options(options)
    assert (node.op, node.name) == ("Foo", "Foo")
    assert node.attrs == {"T": F64, "n": 3, "alpha": 0.5, "flag": True, "s": b"x", "l": [1, 2]}
    assert node.text("s") == "x"
    with pytest.raises(ValueError, match="Foo's NodeDef has no attr 'missing'"):
        node.attr("missing")


def test_a_tensor_attr_decodes_to_its_array():
    value = np.arange(6, dtype=np.int64).reshape(2, 3)
    node = decode_flex_options(
        encode_flex_options("Const", {"value": value, "words": np.array([b"a", b""], object)})
    )
    np.testing.assert_array_equal(node.attr("value"), value)
    assert node.attr("words").tolist() == [b"a", b""]


@pytest.mark.parametrize(
    ("tensor_type", "dtype"),
    [(T.FLOAT64, np.float64), (T.INT64, np.int64), (T.COMPLEX128, np.complex128), (T.INT32, np.int32)],
)
def test_a_flex_op_runs_with_the_default_resolver(tensor_type, dtype):
    model = _binary_model("Mul", tensor_type, {"T": BY_NAME[np.dtype(dtype).name]})
    x = np.array([1.5, -2, 3], dtype) if dtype != np.int64 else np.array([2**40, -3, 7], dtype)
    y = np.array([2, 4, -1], dtype)
    result = _run(model, x, y)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, x * y)


def test_string_tensors_reach_a_flex_op():
    model = _binary_model("Add", T.STRING, {"T": BY_NAME["string"]}, shape=(2,))
    result = _run(model, np.array([b"ab", b""], object), np.array([b"c", "\u00e9".encode()], object))
    assert result.tolist() == [b"abc", "\u00e9".encode()]


def test_every_op_without_a_kernel_is_named_at_allocate():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT64, [2])
    mid = builder.add_tensor("mid", T.FLOAT64, [2])
    out = builder.add_tensor("out", T.FLOAT64, [2])
    builder.add_operator(
        "FlexNoSuchOp", [x], [mid], custom_options=encode_flex_options("NoSuchOp", {"T": F64})
    )
    bits = BY_NAME["uint8"]
    builder.add_operator("FlexSqrt", [mid], [out], custom_options=encode_flex_options("Sqrt", {"T": bits}))
    builder.add_output(out)
    interpreter = pytflite.Interpreter(model_content=builder.build())
    with pytest.raises(RuntimeError) as error:
        interpreter.allocate_tensors()
    message = str(error.value)
    assert "FlexNoSuchOp (T=float64); FlexSqrt (T=uint8)" in message
    assert 'pytflite.flex.register("OpName", compute)' in message


def test_malformed_options_are_refused_by_name():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1])
    y = builder.add_tensor("y", T.FLOAT32, [1])
    builder.add_operator("FlexAtan", [x], [y])
    builder.add_output(y)
    interpreter = pytflite.Interpreter(model_content=builder.build())
    with pytest.raises(
        RuntimeError, match=r"Flex custom options are not a \[op, NodeDef\] flexbuffer vector"
    ):
        interpreter.allocate_tensors()


def test_a_tf_error_names_the_op():
    model = _binary_model("FloorDiv", T.INT64, {"T": I64})
    with pytest.raises(RuntimeError, match=r"Integer division by zero\n\t \(while executing 'FloorDiv'"):
        _run(model, np.array([1, 2, 3], np.int64), np.array([1, 0, 3], np.int64))


def test_users_add_a_kernel_and_it_runs():
    calls = []

    @pytflite.flex.register("ScaledSum", types={"T": ["float64"]})
    def scaled_sum(node, x, y):
        """ScaledSum: (x + y) * scale."""
        calls.append(node.attr("scale"))
        return (x + y) * node.attr("scale")

    try:
        model = _binary_model("ScaledSum", T.FLOAT64, {"T": F64, "scale": 0.5})
        np.testing.assert_array_equal(_run(model, np.ones(3), np.full(3, 3.0)), [2.0, 2.0, 2.0])
        assert calls == [0.5]
        assert pytflite.flex.kernel_for("ScaledSum").doc == "ScaledSum: (x + y) * scale."
    finally:
        pytflite.flex.unregister("ScaledSum")


def test_a_resolvers_own_flex_kernel_wins():
    def invoke(context, node):
        context.tensors[node.outputs[0]].data[...] = 7

    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_custom(
        "FlexMul", pytflite.Registration(prepare=prepare, invoke=invoke, custom_name="FlexMul")
    )
    interpreter = pytflite.Interpreter(
        model_content=_binary_model("Mul", T.FLOAT64, {"T": F64}), op_resolver=resolver
    )
    interpreter.allocate_tensors()
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == [7, 7, 7]


def test_a_kernel_giving_the_wrong_dtype_is_refused():
    @pytflite.flex.register("Wrong")
    def wrong(node, x, y):
        return x.astype(np.float32)

    try:
        model = _binary_model("Wrong", T.FLOAT64, {"T": F64})
        with pytest.raises(
            RuntimeError, match=r"Wrong produced float32 for output 0; its tensor 2 \('out'\) is FLOAT64"
        ):
            _run(model, np.ones(3), np.ones(3))
    finally:
        pytflite.flex.unregister("Wrong")


def test_analyze_lists_flex_ops_and_their_kernels():
    from pytflite.model.reader import read_model
    from pytflite.tools.analyze import support_text

    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT64, [2])
    mid = builder.add_tensor("mid", T.FLOAT64, [2])
    out = builder.add_tensor("out", T.FLOAT64, [2])
    builder.add_operator("FlexMul", [x, x], [mid], custom_options=encode_flex_options("Mul", {"T": F64}))
    builder.add_operator(
        "FlexNoSuchOp", [mid], [out], custom_options=encode_flex_options("NoSuchOp", {"T": F64})
    )
    builder.add_output(out)
    text = support_text(read_model(builder.build()), [])
    assert re.search(r"yes FlexMul v1 +x1 +Select TF op: flex/kernels/math.py", text)
    assert re.search(r"NO  FlexNoSuchOp v1 +x1 +Select TF op: no kernel for FlexNoSuchOp \(T=float64\)", text)
    assert "1 of 2 operator kinds have a kernel; 1 missing." in text


def test_pytflite_imports_protobuf_only_for_flex():
    """A model without Flex ops needs no protobuf: `import pytflite` leaves it out, `pytflite.flex`
    brings it."""
    import subprocess
    import sys

    code = (
        "import sys, pytflite; assert 'google.protobuf' not in sys.modules; "
        "pytflite.flex.register; assert 'google.protobuf' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

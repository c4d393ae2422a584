"""ModelBuilder output loads in ai-edge-litert exactly as in pytflite."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import AffineQuantization
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from pytflite.model.reader import read_model
from tests.oracle import AnyOpResolver, details_equal, litert_interpreter, requires_litert


def feature_model() -> bytes:
    """Quantization (per-tensor and per-channel), shape signatures, strings, variables, two subgraphs,
    custom ops with options, signatures and metadata."""
    builder = ModelBuilder("feature test")
    main = builder.main
    x = main.add_input("image", T.INT8, [1, 8, 8, 3], shape_signature=[-1, 8, 8, 3], quantization=(0.02, -3))
    weights = main.add_constant(
        "weights",
        np.arange(4 * 3 * 3 * 3, dtype=np.int8).reshape(4, 3, 3, 3),
        quantization=AffineQuantization([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], 0),
    )
    bias = main.add_constant(
        "bias",
        np.array([1, 2, 3, 4], np.int32),
        quantization=AffineQuantization([0.002, 0.004, 0.006, 0.008], [0] * 4),
    )
    conv = main.add_tensor(
        "conv", T.INT8, [1, 8, 8, 4], shape_signature=[-1, 8, 8, 4], quantization=(0.05, 2)
    )
    main.add_operator(
        Op.CONV_2D, [x, weights, bias], [conv], {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    )
    labels = main.add_constant("labels", np.array([b"cat", b"dog", "ému"], dtype=object), T.STRING)
    state = main.add_tensor("state", T.FLOAT32, [2, 5], is_variable=True)
    half = main.add_tensor("half", T.FLOAT16, [4])
    main.add_operator("Custom", [conv, labels, state], [half], custom_options={"k": 1})
    main.add_output(conv)
    main.add_output(half)
    body = builder.add_subgraph("body")
    a = body.add_input("a", T.INT64, [3])
    b = body.add_tensor("b", T.INT64, [3])
    body.add_operator(Op.NEG, [a], [b])
    body.add_output(b)
    builder.add_signature("serve", {"input": x}, {"out": conv, "aux": half})
    builder.add_metadata("notes", b"\x01\x02")
    return builder.build()


@requires_litert
def test_litert_sees_the_same_model():
    model = feature_model()
    ours = pytflite.Interpreter(model_content=model, op_resolver=AnyOpResolver())
    theirs = litert_interpreter(model)
    assert ours.num_subgraphs() == theirs.num_subgraphs() == 2
    for subgraph in range(2):
        mine, reference = ours.get_tensor_details(subgraph), theirs.get_tensor_details(subgraph)
        assert len(mine) == len(reference)
        for a, b in zip(mine, reference):
            details_equal(a, b)
    assert ours.get_signature_list() == theirs.get_signature_list()
    assert [o["op_name"] for o in ours._get_ops_details()] == [
        o["op_name"] for o in theirs._get_ops_details()
    ]
    np.testing.assert_array_equal(ours.get_tensor(1), theirs.get_tensor(1))  # constants read back
    assert ours.get_tensor(4).tolist() == theirs.get_tensor(4).tolist() == [b"cat", b"dog", "ému".encode()]


def test_reader_round_trip():
    info = read_model(feature_model())
    assert info.description == "feature test"
    assert info.metadata == {"notes": b"\x01\x02"}
    assert [s.name for s in info.subgraphs] == ["main", "body"]
    main = info.subgraphs[0]
    assert main.tensors[0].shape_signature == (-1, 8, 8, 3)
    assert main.tensors[1].quantization.scale.tolist() == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert main.tensors[5].is_variable
    assert main.operators[1].custom_options == pytflite.model.custom_options.encode_custom_options({"k": 1})
    assert info.signatures[0].inputs == {"input": 0}
    assert [c.version for c in info.operator_codes] == [1, 1, 1]


def test_options_by_dict_and_enum_names():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 4])
    y = builder.add_tensor("y", T.FLOAT32, [1, 4])
    builder.add_operator(Op.ADD, [x, x], [y], {"fused_activation_function": "RELU6"})
    with pytest.raises(ValueError, match="AddOptions has no field 'beta'"):
        builder.add_operator(Op.ADD, [x, x], [y], {"beta": 1.0})
    with pytest.raises(ValueError, match="RELU takes no builtin options"):
        builder.add_operator(Op.RELU, [x], [y], {"beta": 1.0})
    options = read_model(builder.build()).subgraphs[0].operators[0].builtin_options
    assert options == pytflite.options.AddOptions(
        fused_activation_function=pytflite.options.ActivationFunctionType.RELU6
    )


def test_builtin_codes_above_127_use_the_extended_field():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator(Op.GELU, [x], [y])
    builder.add_output(y)
    assert read_model(builder.build()).operator_codes[0].builtin_code == Op.GELU


@pytest.mark.parametrize("external", [False, True])
def test_buffers_stored_after_the_flatbuffer(external):
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3])
    c = builder.add_constant("c", np.array([1.5, -2.0, 4.0], np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [3])
    builder.add_operator(Op.MUL, [x, c], [y])
    builder.add_output(y)
    model = builder.build(buffers_after_flatbuffer=external)
    info = read_model(model)
    np.testing.assert_array_equal(info.subgraphs[0].tensors[1].data, [1.5, -2.0, 4.0])
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([2, 2, 2], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(2), [3, -4, 8])


@requires_litert
def test_litert_reads_buffers_stored_after_the_flatbuffer():
    from tests.oracle import compare_with_litert

    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 3])
    w = builder.add_constant("w", np.arange(12, dtype=np.float32).reshape(4, 3))
    y = builder.add_tensor("y", T.FLOAT32, [2, 4])
    builder.add_operator(Op.FULLY_CONNECTED, [x, w, -1], [y])
    builder.add_output(y)
    compare_with_litert(builder.build(buffers_after_flatbuffer=True), [np.ones([2, 3], np.float32)])


def test_out_of_range_buffer_offset_is_rejected():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3])
    c = builder.add_constant("c", np.ones(3, np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [3])
    builder.add_operator(Op.MUL, [x, c], [y])
    builder.add_output(y)
    model = builder.build(buffers_after_flatbuffer=True)
    with pytest.raises(pytflite.ModelError, match="Constant buffer 1 specified an out of range offset."):
        read_model(model[:-4])

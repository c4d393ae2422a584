"""Loading: zero-copy constants, and clear ModelErrors (ValueErrors) for malformed models."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from tflite.Model import Model

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import ModelError
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from pytflite.model.reader import read_model
from tests.oracle import CORPUS


def add_model(**mutate) -> ModelBuilder:
    """x + c -> y, with hooks for breaking it."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 3])
    c = builder.add_constant("c", np.arange(6, dtype=np.float32).reshape(2, 3))
    y = builder.add_tensor("y", T.FLOAT32, [2, 3])
    builder.add_operator(Op.ADD, [x, c], [y])
    builder.add_output(y)
    return builder


def load(model: bytes) -> pytflite.Interpreter:
    return pytflite.Interpreter(model_content=model)


def test_constants_are_read_only_views_on_the_model_bytes(tmp_path):
    path = tmp_path / "add.tflite"
    add_model().save(str(path))
    interpreter = pytflite.Interpreter(model_path=str(path))
    constant = interpreter.subgraphs[0].tensors[1]
    assert constant.allocation_type == pytflite.AllocationType.MMAP_RO
    assert not constant.data.flags.writeable
    assert not constant.data.flags.owndata  # a view, not a copy
    np.testing.assert_array_equal(constant.data, np.arange(6, dtype=np.float32).reshape(2, 3))
    base = constant.data
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    assert isinstance(base, memoryview) and type(base.obj).__name__ == "mmap"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"hello world, this is not a model at all" * 3, "The model is not a valid Flatbuffer buffer"),
        (b"\x00" * 7, "The model is not a valid Flatbuffer buffer"),
    ],
)
def test_garbage_is_not_a_flatbuffer(content, message):
    with pytest.raises(ValueError, match=message):
        load(content)


def test_wrong_file_identifier():
    model = bytearray(add_model().build())
    model[4:8] = b"XXXX"
    with pytest.raises(ModelError, match="not a valid Flatbuffer buffer.*TFL3"):
        load(bytes(model))


def test_every_truncation_fails_cleanly():
    model = add_model().build()
    for length in range(0, len(model), 7):
        with pytest.raises(ValueError):
            pytflite.Interpreter(model_content=model[:length] or b"x")


def test_byte_flips_never_escape_as_other_exceptions():
    model = (CORPUS / "mlp.tflite").read_bytes() if (CORPUS / "mlp.tflite").exists() else add_model().build()
    rng = np.random.default_rng(0)
    for _ in range(300):
        mutated = bytearray(model)
        for position in rng.integers(0, len(model), size=int(rng.integers(1, 8))):
            mutated[position] = int(rng.integers(0, 256))
        with contextlib.suppress(ValueError):  # ModelError: the only acceptable way to fail at load
            pytflite.Interpreter(model_content=bytes(mutated))


def test_schema_version_must_be_3():
    builder = add_model()
    model = bytearray(builder.build())
    model_info = read_model(bytes(model))
    assert model_info.version == 3
    from pytflite.model import builder as builder_module

    original = builder_module.SCHEMA_VERSION
    builder_module.SCHEMA_VERSION = 2
    try:
        with pytest.raises(ModelError, match="schema version 2 not equal to supported version 3"):
            load(add_model().build())
    finally:
        builder_module.SCHEMA_VERSION = original


def test_operator_input_index_out_of_range():
    builder = add_model()
    builder.main.operators[0].inputs = (0, 9)
    with pytest.raises(ModelError, match=r"Invalid tensor index 9 in inputs of operator 0 \(ADD\)"):
        load(builder.build())


def test_subgraph_output_index_out_of_range():
    builder = add_model()
    builder.main.outputs = [5]
    with pytest.raises(ModelError, match="Invalid tensor index 5 in outputs of subgraph 0"):
        load(builder.build())


def test_opcode_index_out_of_range():
    builder = add_model()
    builder.main.operators[0].opcode_index = 4
    with pytest.raises(ModelError, match="opcode_index 4"):
        load(builder.build())


def test_buffer_index_out_of_range():
    builder = add_model()
    builder.main.tensors[1].buffer = 40
    with pytest.raises(ModelError, match="specifies out of range buffer 40"):
        load(builder.build())


def test_buffer_smaller_than_tensor():
    builder = add_model()
    builder.main.tensors[1].shape = (4, 3)
    with pytest.raises(
        ModelError, match="Tensor 1 of subgraph 0 is invalidly specified.*holds 24 bytes.*needs 48"
    ):
        load(builder.build())


def test_negative_dimension():
    builder = add_model()
    builder.main.tensors[0].shape = (2, -3)
    with pytest.raises(ModelError, match="negative dimension"):
        load(builder.build())


def test_unknown_tensor_type():
    builder = add_model()
    builder.main.tensors[2].type = 99
    with pytest.raises(ModelError, match="Tensor 2 of subgraph 0 .* unknown type 99"):
        load(builder.build())


def test_builtin_code_is_the_larger_of_its_two_fields():
    """LiteRT's GetBuiltinCode takes max(builtin_code, deprecated_builtin_code); a file whose
    deprecated_builtin_code disagrees below 127 still runs the op builtin_code names."""
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [2])
    y = b.add_tensor("y", T.FLOAT32, [2])
    b.add_operator(Op.MUL, [x, x], [y])
    b.add_output(y)
    data = bytearray(b.build())
    code = Model.GetRootAs(bytes(data), 0).OperatorCodes(0)._tab
    data[code.Pos + code.Offset(4)] = Op.ADD  # deprecated_builtin_code, slot 0
    assert read_model(bytes(data)).operator_codes[0].builtin_code == Op.MUL


def test_builtin_code_out_of_range():
    builder = add_model()
    builder._opcodes = {(250, None, 1): 0}
    with pytest.raises(ModelError, match="Op builtin_code out of range: 250"):
        load(builder.build())


def test_invalid_enum_in_options():
    builder = add_model()
    builder.main.operators[0].options = pytflite.options.AddOptions(fused_activation_function=77)
    with pytest.raises(
        ModelError, match="fused_activation_function has invalid ActivationFunctionType value 77"
    ):
        load(builder.build())


def test_quantization_scale_and_zero_point_counts_must_match():
    builder = add_model()
    builder.main.tensors[0].quantization = pytflite.AffineQuantization([0.1, 0.2], [0], 0)
    with pytest.raises(ModelError, match="QuantizationParam has 1 zero_point values and 2 scale values"):
        load(builder.build())


def test_quantized_dimension_out_of_range():
    builder = add_model()
    builder.main.tensors[0].quantization = pytflite.AffineQuantization([0.1], [0], 5)
    with pytest.raises(ModelError, match=r"quantized_dimension must be in range \[0, 2\). Was 5."):
        load(builder.build())


def test_per_channel_scale_count_must_match_the_dimension():
    builder = add_model()
    builder.main.tensors[0].quantization = pytflite.AffineQuantization([0.1] * 4, [0] * 4, 1)
    with pytest.raises(ModelError, match="or 3 for per-axis quantization, but got 4"):
        load(builder.build())


def test_signature_pointing_at_missing_subgraph_or_tensor():
    builder = add_model()
    builder.add_signature("serve", {"x": 0}, {"y": 2}, subgraph_index=3)
    with pytest.raises(ModelError, match="refers to subgraph 3"):
        load(builder.build())
    builder = add_model()
    builder.add_signature("serve", {"x": 0}, {"y": 12})
    with pytest.raises(ModelError, match="maps 'y' to tensor 12"):
        load(builder.build())


def test_custom_op_without_name():
    builder = add_model()
    builder._opcodes = {(int(Op.CUSTOM), None, 1): 0}
    with pytest.raises(ModelError, match="Operator with CUSTOM builtin_code has no custom_code."):
        load(builder.build())


def test_builtin_operator_may_not_alias_input_and_output():
    builder = add_model()
    builder.main.operators[0].outputs = (0,)
    with pytest.raises(ModelError, match="Tensor 0 is both input 0 and output 0"):
        load(builder.build())


def test_missing_file_and_directory_and_empty_file(tmp_path):
    with pytest.raises(
        ValueError, match="Could not open '.*missing.tflite'.The model allocation is null/empty"
    ):
        pytflite.Interpreter(model_path=str(tmp_path / "missing.tflite"))
    with pytest.raises(ValueError, match="Could not open"):
        pytflite.Interpreter(model_path=str(tmp_path))
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="mmap of size 0 requested.The model allocation is null/empty"):
        pytflite.Interpreter(model_path=str(empty))


def test_metadata_and_description_are_read():
    builder = add_model()
    builder.add_metadata("min_runtime_version", b"1.5.0\x00")
    info = read_model(builder.build())
    assert info.metadata == {"min_runtime_version": b"1.5.0\x00"}
    assert info.description == "pytflite.ModelBuilder"

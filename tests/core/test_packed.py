"""Sub-byte (int4/uint4/int2) tensors: packing, and the Python API's get_tensor/set_tensor, which unpack
and pack them exactly as LiteRT's do (one int8/uint8 per element, same checks and messages)."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.packed import pack_into, unpack_packed
from pytflite.model.builder import ModelBuilder
from tests.oracle import litert_interpreter, requires_litert

RANGES = {T.INT4: (-8, 7), T.UINT4: (0, 15), T.INT2: (-2, 1)}
DTYPES = {T.INT4: np.int8, T.UINT4: np.uint8, T.INT2: np.int8}


@pytest.mark.parametrize("tensor_type", [T.INT4, T.UINT4, T.INT2], ids=lambda t: t.name)
def test_pack_unpack_round_trip(tensor_type):
    low, high = RANGES[tensor_type]
    values = np.arange(low, high + 1, dtype=DTYPES[tensor_type]).repeat(3)[:-1]  # an odd count
    per_byte = 4 if tensor_type == T.INT2 else 2
    packed = np.zeros(-(-values.size // per_byte), np.uint8)
    pack_into(values, tensor_type, packed)
    unpacked = unpack_packed(packed, values.size, tensor_type)
    assert unpacked.dtype == DTYPES[tensor_type]
    assert np.array_equal(unpacked, values)


def packed_input_model(tensor_type, shape):
    """A packed runtime input, dequantized to a float32 output."""
    builder = ModelBuilder()
    x = builder.add_input("x", tensor_type, shape, quantization=(0.5, 1))
    out = builder.add_tensor("out", T.FLOAT32, shape)
    builder.add_output(out)
    builder.add_operator(Op.DEQUANTIZE, [x], [out], version=6)
    return builder.build()


def both(model):
    ours, theirs = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
    return ours, theirs


def error_text(interpreter, value) -> str:
    with pytest.raises(ValueError) as error:
        interpreter.set_tensor(0, value)
    return str(error.value)


@requires_litert
@pytest.mark.parametrize("tensor_type", [T.INT4, T.UINT4], ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(5,), (2, 3)], ids=str)
def test_set_and_get_4bit_tensors_like_litert(tensor_type, shape):
    low, high = RANGES[tensor_type]
    value = np.random.default_rng(0).integers(low, high + 1, shape).astype(DTYPES[tensor_type])
    ours, theirs = both(packed_input_model(tensor_type, shape))
    for interpreter in (ours, theirs):
        interpreter.set_tensor(0, value)
        interpreter.invoke()
    for index in (0, ours.get_output_details()[0]["index"]):
        mine, reference = ours.get_tensor(index), theirs.get_tensor(index)
        assert mine.dtype == reference.dtype and mine.shape == reference.shape
        assert np.array_equal(mine, reference)
    assert np.array_equal(ours.get_tensor(0), value)


@requires_litert
@pytest.mark.parametrize(
    "tensor_type, value",
    [
        (T.INT4, np.zeros(4, np.uint8)),  # wrong dtype
        (T.INT4, np.zeros(3, np.int8)),  # wrong element count
        (T.INT4, np.array([0, 8, 0, 0], np.int8)),  # out of range
        (T.UINT4, np.array([0, 16, 0, 0], np.uint8)),
        (T.UINT4, np.zeros(4, np.float32)),
        (T.INT2, np.zeros(4, np.int8)),  # LiteRT cannot set INT2 tensors at all
    ],
)
def test_set_packed_tensor_errors_match_litert(tensor_type, value):
    ours, theirs = both(packed_input_model(tensor_type, (4,)))
    assert error_text(ours, value) == error_text(theirs, value)

"""ADD, SUB, MUL against LiteRT: broadcasting, fused activations, float32 / int32 / int64, constants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


@st.composite
def broadcastable_pair(draw, dtype):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=5))
    elements = st.floats(-10, 10, width=32) if dtype == np.float32 else st.integers(-1000, 1000)
    a = draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elements))
    b = draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elements))
    return a, b


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_float_broadcasting_with_activations(op, data):
    a, b = data.draw(broadcastable_pair(np.float32))
    activation = data.draw(st.sampled_from(ACTIVATIONS))
    constant = data.draw(st.booleans())
    SingleOpModel(
        op,
        [Operand(a), Operand(b, constant=constant)],
        [T.FLOAT32],
        {"fused_activation_function": activation},
    ).check()


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_integer_types(op, dtype, data):
    a, b = data.draw(broadcastable_pair(dtype))
    version = {(Op.ADD, np.int64): 4, (Op.SUB, np.int64): 4, (Op.MUL, np.int64): 6}.get((op, dtype), 1)
    tensor_type = T.INT32 if dtype == np.int32 else T.INT64
    SingleOpModel(op, [Operand(a), Operand(b)], [tensor_type], version=version).check()


def test_mismatched_types_are_rejected():
    import pytflite

    model, _ = SingleOpModel(
        Op.ADD, [Operand(np.zeros(2, np.float32)), Operand(np.zeros(2, np.int32))], [T.FLOAT32]
    ).build()
    with pytest.raises(
        RuntimeError, match=r"ADD input types: FLOAT32 != INT32Node number 0 \(ADD\) failed to prepare."
    ):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_unbroadcastable_shapes_are_rejected():
    import pytflite

    model, _ = SingleOpModel(
        Op.MUL, [Operand(np.zeros([2, 3], np.float32)), Operand(np.zeros([4], np.float32))], [T.FLOAT32]
    ).build()
    with pytest.raises(RuntimeError, match=r"Given shapes, \[2,3\] and \[4\], are not broadcastable."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_quantized_inputs_are_not_yet_supported():
    import pytflite

    operand = Operand(np.zeros(2, np.int8), quantization=(0.1, 0))
    model, _ = SingleOpModel(
        Op.ADD, [operand, operand], [T.INT8], version=2, output_quantization=[(0.1, 0)]
    ).build()
    with pytest.raises(RuntimeError, match="Type INT8 \\(input\\) is unsupported by op ADD."):
        pytflite.Interpreter(model_content=model).allocate_tensors()

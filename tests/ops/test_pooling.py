"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D against LiteRT: filter sizes, strides, padding (padded
positions excluded), fused activations, every evaluation path, quantized MAX_POOL_2D, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
POOLS = [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D]


def _options(filter_hw, strides, padding, activation="NONE"):
    return {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "filter_height": filter_hw[0],
        "filter_width": filter_hw[1],
        "fused_activation_function": activation,
    }


def _state(model: bytes):
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    subgraph = interpreter.subgraphs[0]
    return subgraph.nodes[subgraph.execution_plan[0]][0].user_data


@settings(max_examples=200, deadline=None)
@given(
    op=st.sampled_from(POOLS),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 12), st.integers(1, 12)),
    channels=st.integers(1, 5),
    filter_hw=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    seed=st.integers(0, 2**16),
)
def test_pooling(op, batch, size, channels, filter_hw, strides, padding, activation, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal([batch, *size, channels]) * 3).astype(np.float32)
    # a VALID filter larger than the input gives an empty output (pooling's output size is unchecked)
    SingleOpModel(op, [Operand(x)], [T.FLOAT32], _options(filter_hw, strides, padding, activation)).check()


@pytest.mark.parametrize("op", POOLS)
@pytest.mark.parametrize(
    "shape, filter_hw, strides, padding, mode, staged",
    [
        ((1, 48, 50, 16), (2, 2), (2, 2), "VALID", "separable", False),
        ((2, 47, 49, 16), (3, 3), (2, 2), "SAME", "separable", True),  # overlapping windows
        ((1, 40, 40, 8), (3, 2), (1, 1), "SAME", "separable", True),
        ((1, 9, 9, 64), (5, 5), (2, 2), "SAME", "separable", True),
        ((1, 9, 11, 3), (1, 4), (2, 3), "VALID", "separable", False),  # one window row: no row fold
        ((1, 9, 11, 3), (4, 1), (3, 2), "SAME", "separable", True),  # one window column
        ((1, 9, 11, 3), (1, 1), (2, 2), "SAME", "separable", False),  # a strided copy
        ((1, 6, 7, 32), (6, 7), (1, 1), "VALID", "global", False),
        ((2, 5, 5, 3), (5, 5), (2, 2), "SAME", "separable", True),
        ((1, 3, 3, 2), (5, 5), (1, 1), "VALID", "empty", False),  # a window larger than the input
    ],
)
def test_pooling_paths(op, shape, filter_hw, strides, padding, mode, staged):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    model = SingleOpModel(op, [Operand(x)], [T.FLOAT32], _options(filter_hw, strides, padding, "RELU6"))
    model.check()
    state = _state(model.build()[0])
    assert (state.mode, state.staging is not None) == (mode, staged)


@pytest.mark.parametrize(
    "tensor_type, zero_point, version",
    [(T.INT8, -3, 2), (T.UINT8, 130, 1), (T.INT16, 0, 3)],
)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_quantized_max_pool(tensor_type, zero_point, version, activation, padding):
    dtype = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16}[tensor_type]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    x = rng.integers(info.min, info.max, [2, 9, 10, 3], endpoint=True).astype(dtype)
    quantization = AffineQuantization(np.array([0.037], np.float32), np.array([zero_point]))
    SingleOpModel(
        Op.MAX_POOL_2D,
        [Operand(x, type=tensor_type, quantization=quantization)],
        [tensor_type],
        _options((3, 3), (2, 2), padding, activation),
        version=version,
        output_quantization=[quantization],
    ).check()


@pytest.mark.parametrize(
    "op, tensor_type, message",
    [
        (Op.AVERAGE_POOL_2D, T.INT8, "AVERAGE_POOL_2D of a quantized INT8 input is not supported yet"),
        (Op.L2_POOL_2D, T.INT8, "L2_POOL_2D of a quantized INT8 input is not supported yet"),
        (Op.MAX_POOL_2D, T.INT32, "Type INT32 \\(input\\) is unsupported by op MAX_POOL_2D"),
    ],
)
def test_unsupported_types(op, tensor_type, message):
    dtype = np.int8 if tensor_type == T.INT8 else np.int32
    quantization = AffineQuantization(np.array([0.1], np.float32), np.array([0]))
    model, _ = SingleOpModel(
        op,
        [Operand(np.zeros([1, 4, 4, 2], dtype), type=tensor_type, quantization=quantization)],
        [tensor_type],
        _options((2, 2), (2, 2), "VALID"),
        output_quantization=[quantization],
    ).build()
    with pytest.raises(RuntimeError, match=message):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_rank_must_be_4():
    model, _ = SingleOpModel(
        Op.MAX_POOL_2D,
        [Operand(np.zeros([4, 4, 2], np.float32))],
        [T.FLOAT32],
        _options((2, 2), (2, 2), "VALID"),
    ).build()
    with pytest.raises(RuntimeError, match="MAX_POOL_2D input rank 3 != 4"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("op", POOLS)
def test_resizing_switches_paths(op):
    from tests.oracle import assert_matches, litert_interpreter, run

    rng = np.random.default_rng(3)
    x = rng.standard_normal([1, 8, 8, 4]).astype(np.float32)
    model, _ = SingleOpModel(
        op, [Operand(x, shape_signature=[-1, -1, -1, 4])], [T.FLOAT32], _options((8, 8), (1, 1), "VALID")
    ).build()
    ours, theirs = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    for shape, mode in (((1, 8, 8, 4), "global"), ((2, 10, 11, 4), "separable"), ((1, 8, 8, 4), "global")):
        feed = rng.standard_normal(shape).astype(np.float32)
        for interpreter in (ours, theirs):
            interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], feed.shape)
        assert_matches(run(ours, [feed])[0], run(theirs, [feed])[0])
        subgraph = ours.subgraphs[0]
        node = subgraph.nodes[subgraph.execution_plan[0]][0]
        assert node.user_data.mode == mode
        if mode == "global":  # the row fold's temporary of the previous shape is released
            assert node.user_data.rows not in node.temporaries
            assert subgraph.tensors[node.user_data.rows].bytes in (0, None)

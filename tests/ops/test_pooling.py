"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D against LiteRT: filter sizes, strides, padding (padded
positions excluded), fused activations, every evaluation path, quantized MAX_POOL_2D and AVERAGE_POOL_2D
(int8, uint8, int16; BUILTIN_REF too), the corpus's quantized pooling layers, and errors."""

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
from tests.single_op import Operand, SingleOpModel, check_ref

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
    # a VALID filter larger than the input gives an empty output (pooling's output size is unchecked).
    # Float sums in another order than LiteRT's differ by rounding relative to the inputs' magnitude, not
    # the outputs' (an average can cancel to near 0): the tolerance is scaled to the inputs.
    model = SingleOpModel(op, [Operand(x)], [T.FLOAT32], _options(filter_hw, strides, padding, activation))
    model.check(scale=float(np.abs(x).max()) if x.size else None)


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


QUANTIZED = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16}


def _quantized_pool(op, x, tensor_type, options, in_q, out_q=None):
    return SingleOpModel(
        op,
        [Operand(x, type=tensor_type, quantization=in_q)],
        [tensor_type],
        options,
        version=3 if tensor_type == T.INT16 else 2,
        output_quantization=[out_q or in_q],
    )


@settings(max_examples=150, deadline=None)
@given(
    op=st.sampled_from([Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D]),
    tensor_type=st.sampled_from(list(QUANTIZED)),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 11), st.integers(1, 11)),
    channels=st.sampled_from([1, 3, 8, 13, 16, 21, 40]),  # around the 8/16-channel NEON blocks
    filter_hw=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    scale=st.floats(0.001, 0.2),
    seed=st.integers(0, 2**16),
)
def test_quantized_pooling(
    op, tensor_type, batch, size, channels, filter_hw, strides, padding, activation, scale, seed
):
    """Integer sums rounded half away from zero by the valid-tap count, then the activation's clamp."""
    rng = np.random.default_rng(seed)
    dtype = QUANTIZED[tensor_type]
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, [batch, *size, channels], endpoint=True).astype(dtype)
    zero_point = 0 if tensor_type == T.INT16 else int(rng.integers(info.min, info.max, endpoint=True))
    quantization = AffineQuantization([scale], [zero_point])
    options = _options(filter_hw, strides, padding, activation)
    _quantized_pool(op, x, tensor_type, options, quantization).check()


@pytest.mark.parametrize("tensor_type", list(QUANTIZED), ids=lambda t: t.name)
@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D])
def test_quantized_pooling_extremes_and_reference(op, tensor_type):
    """Saturated inputs, ties (sums of odd multiples of count/2), a global window, channels past the
    256-channel tranche, and BUILTIN_REF's kernels, which round the same way."""
    dtype = QUANTIZED[tensor_type]
    info = np.iinfo(dtype)
    rng = np.random.default_rng(9)
    zero_point = 0 if tensor_type == T.INT16 else 3
    quantization = AffineQuantization([0.05], [zero_point])

    def random(rng, shape):
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)

    ties = np.array([info.min, info.max, -1 if info.min else 1, 2, 3, 0]).astype(dtype)
    cases = [
        (np.full([1, 4, 4, 8], info.max, dtype), (2, 2), (2, 2), "VALID"),
        (np.full([1, 4, 4, 8], info.min, dtype), (3, 3), (1, 1), "SAME"),
        (np.resize(ties, [2, 6, 6, 18]), (2, 2), (1, 1), "SAME"),  # two taps: every odd sum is a tie
        (np.resize(ties[::-1], [1, 5, 7, 24]), (2, 3), (2, 1), "SAME"),
        (
            rng.integers(info.min, info.max, [2, 7, 9, 300], endpoint=True).astype(dtype),
            (7, 9),
            (1, 1),
            "VALID",
        ),
        (
            rng.integers(info.min, info.max, [1, 6, 6, 260], endpoint=True).astype(dtype),
            (3, 3),
            (2, 2),
            "SAME",
        ),
        # 529 and 576 taps: int16 sums need float64 to stay exact
        (np.resize(ties, [1, 24, 24, 3]), (24, 24), (1, 1), "VALID"),
        (random(rng, [1, 25, 26, 2]), (23, 23), (2, 3), "SAME"),
        (np.full([1, 23, 23, 2], info.min, dtype), (23, 23), (5, 5), "SAME"),
    ]
    for x, filter_hw, strides, padding in cases:
        for activation in ("NONE", "RELU6"):
            model = _quantized_pool(
                op, x, tensor_type, _options(filter_hw, strides, padding, activation), quantization
            )
            model.check()
            check_ref(model)


@pytest.mark.parametrize("tensor_type", list(QUANTIZED), ids=lambda t: t.name)
@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D])
def test_quantized_pooling_ignores_the_output_quantization(op, tensor_type):
    """TFLite only DCHECKs equal input/output quantization: a release build pools the stored integers and
    clamps to the output's activation range."""
    dtype = QUANTIZED[tensor_type]
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max, [1, 6, 7, 5], endpoint=True).astype(dtype)
    zero_points = (0, 0) if tensor_type == T.INT16 else (7, -2 if tensor_type == T.INT8 else 100)
    in_q = AffineQuantization([0.02], [zero_points[0]])
    out_q = AffineQuantization([0.07], [zero_points[1]])
    _quantized_pool(op, x, tensor_type, _options((3, 2), (2, 2), "SAME", "RELU_N1_TO_1"), in_q, out_q).check()


@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D])
def test_quantized_corpus_layers(op):
    from tests.ops.test_shape import check_corpus_layer, corpus_layers

    layers = corpus_layers(op)
    for name, index in layers:
        check_corpus_layer(name, index)


@pytest.mark.parametrize(
    "op, tensor_type, message",
    [
        (Op.L2_POOL_2D, T.INT8, r"Type INT8 \(input\) is unsupported by op L2_POOL_2D"),  # float32 only
        (Op.L2_POOL_2D, T.INT16, r"Type INT16 \(input\) is unsupported by op L2_POOL_2D"),
        (Op.AVERAGE_POOL_2D, T.INT32, r"Type INT32 \(input\) is unsupported by op AVERAGE_POOL_2D"),
        (Op.MAX_POOL_2D, T.INT32, r"Type INT32 \(input\) is unsupported by op MAX_POOL_2D"),
    ],
)
def test_unsupported_types(op, tensor_type, message):
    dtype = {T.INT8: np.int8, T.INT16: np.int16, T.INT32: np.int32}[tensor_type]
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

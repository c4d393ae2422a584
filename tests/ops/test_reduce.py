"""MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL, ARG_MAX/ARG_MIN, CUMSUM, TOPK_V2 against LiteRT: axes
(negative, repeated, computed), keep_dims, types, ties and NaNs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import tensor_type_for_dtype

# outputs declared [], empty dynamic results read safely
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

CASES = [
    (Op.MEAN, np.float32),
    (Op.MEAN, np.int32),
    (Op.MEAN, np.int64),
    (Op.SUM, np.float32),
    (Op.SUM, np.int32),
    (Op.SUM, np.int64),
    (Op.REDUCE_PROD, np.float32),
    (Op.REDUCE_PROD, np.int32),
    (Op.REDUCE_MAX, np.float32),
    (Op.REDUCE_MAX, np.int32),
    (Op.REDUCE_MIN, np.float32),
    (Op.REDUCE_MIN, np.int64),
    (Op.REDUCE_ANY, np.bool_),
    (Op.REDUCE_ALL, np.bool_),
]
VERSION = {(Op.MEAN, np.int64): 1, (Op.SUM, np.int64): 1}


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o.name}-{np.dtype(d).name}" for o, d in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_reduce(op, dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    if dtype == np.bool_:
        elements = st.booleans()
    elif dtype == np.float32:
        elements = st.floats(-4, 4, width=32)
    else:
        elements = st.integers(-3 if op == Op.REDUCE_PROD else -1000, 3 if op == Op.REDUCE_PROD else 1000)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
    keep_dims = data.draw(st.booleans())
    constant_axis = data.draw(st.booleans())
    SingleOpModel(
        op,
        [Operand(x), Operand(np.array(axes, np.int32), constant=constant_axis)],
        [tensor_type_for_dtype(np.dtype(dtype))],
        {"keep_dims": keep_dims},
    ).check()


def test_invalid_axis():
    model, _ = SingleOpModel(
        Op.MEAN,
        [Operand(np.zeros([2, 3], np.float32)), Operand(np.array([2], np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32],
        {"keep_dims": False},
    ).build()
    with pytest.raises(RuntimeError, match="Invalid axis index."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- quantized REDUCE_MAX / REDUCE_MIN ------------------------------------------------------------


@pytest.mark.parametrize("op", [Op.REDUCE_MAX, Op.REDUCE_MIN])
@pytest.mark.parametrize(("dtype", "zero_point"), [(np.int8, -5), (np.uint8, 128), (np.int16, 0)])
def test_reduce_max_min_quantized(op, dtype, zero_point):
    """The result is one of the inputs: quantized values pass through when input and output share
    their quantization."""
    quantization = AffineQuantization([0.125], [zero_point])
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max, size=(3, 4, 5), endpoint=True).astype(dtype)
    for axes, keep_dims in (([1], False), ([0, -1], True)):
        SingleOpModel(
            op,
            [Operand(x, quantization=quantization), Operand(np.array(axes, np.int32), constant=True)],
            [tensor_type_for_dtype(np.dtype(dtype))],
            {"keep_dims": keep_dims},
            output_quantization=[quantization],
            version=2,
        ).check()


def test_reduce_max_requantization_refused():
    model, _ = SingleOpModel(
        Op.REDUCE_MAX,
        [
            Operand(np.zeros([2, 3], np.int8), quantization=AffineQuantization([0.5], [1])),
            Operand(np.array([1], np.int32), constant=True),
        ],
        [pytflite.TensorType.INT8],
        {"keep_dims": False},
        output_quantization=[AffineQuantization([0.25], [1])],
        version=2,
    ).build()
    with pytest.raises(RuntimeError, match="input scale 0.5 != output scale 0.25"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- ARG_MAX / ARG_MIN ----------------------------------------------------------------------------


def _arg_elements(dtype, data):
    if dtype == np.bool_:
        return st.booleans()
    if dtype == np.float32:  # few distinct values: ties; sometimes NaN and infinities
        return st.sampled_from(
            [-1.5, 0.0, -0.0, 2.0, 2.0, np.inf, -np.inf, np.nan]
            if data.draw(st.booleans())
            else [-1.5, 0.0, 2.0, 3.25]
        )
    info = np.iinfo(dtype)
    return st.integers(max(info.min, -3), min(info.max, 3)) | st.sampled_from([int(info.min), int(info.max)])


@pytest.mark.parametrize("op", [Op.ARG_MAX, Op.ARG_MIN])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint8, np.bool_])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_arg_min_max(op, dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    x = data.draw(hnp.arrays(dtype, shape, elements=_arg_elements(dtype, data)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    axis_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    index_type = data.draw(st.sampled_from([pytflite.TensorType.INT32, pytflite.TensorType.INT64]))
    SingleOpModel(
        op,
        [Operand(x), Operand(np.array([axis], axis_dtype), constant=data.draw(st.booleans()))],
        [index_type],
        {"output_type": index_type},
        version=2,
    ).check()


def test_arg_max_nan_rows():
    """TFLite skips NaNs, except that along the innermost axis a NaN first element is kept."""
    x = np.array(
        [[1, np.nan, 3, 3], [np.nan] * 4, [np.nan, -np.inf, -np.inf, 2], [0.0, -0.0, np.nan, 1]], np.float32
    )
    for op in (Op.ARG_MAX, Op.ARG_MIN):
        for axis in (0, 1):
            SingleOpModel(
                op,
                [Operand(x), Operand(np.array([axis], np.int32), constant=True)],
                [pytflite.TensorType.INT32],
                {"output_type": pytflite.TensorType.INT32},
            ).check()


def test_arg_max_invalid():
    x = np.zeros([2, 3], np.float32)
    model, _ = SingleOpModel(
        Op.ARG_MAX,
        [Operand(x), Operand(np.array([0], np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32],
        {"output_type": pytflite.TensorType.FLOAT32},
    ).build()
    with pytest.raises(RuntimeError, match="Unknown index output data type: 0"):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    model, _ = SingleOpModel(
        Op.ARG_MIN,
        [Operand(x), Operand(np.array([2], np.int32), constant=True)],
        [pytflite.TensorType.INT64],
        {"output_type": pytflite.TensorType.INT64},
    ).build()
    with pytest.raises(RuntimeError, match="Invalid axis value."):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    # An empty reduced axis has no answer (checked on pytflite alone: LiteRT's message differs by build).
    model, _ = SingleOpModel(
        Op.ARG_MAX,
        [Operand(np.zeros([2, 0], np.float32)), Operand(np.array([1], np.int32), constant=True)],
        [pytflite.TensorType.INT32],
        {"output_type": pytflite.TensorType.INT32},
    ).build()
    with pytest.raises(RuntimeError, match="Cannot compute ArgMin/ArgMax over an empty axis."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- CUMSUM ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_cumsum(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    elements = st.floats(-4, 4, width=32) if dtype == np.float32 else st.integers(-1000, 1000)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    SingleOpModel(
        Op.CUMSUM,
        [Operand(x), Operand(np.array(axis, np.int32), constant=data.draw(st.booleans()))],
        [tensor_type_for_dtype(np.dtype(dtype))],
        {"exclusive": data.draw(st.booleans()), "reverse": data.draw(st.booleans())},
    ).check()


@pytest.mark.parametrize("length", [1, 2, 3])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(("exclusive", "reverse"), [(False, True), (True, False), (True, True)])
def test_cumsum_exclusive_and_reverse_of_short_axes(length, axis, exclusive, reverse):
    shape = [length, 4] if axis == 0 else [4, length]
    x = np.random.default_rng(length).standard_normal(shape).astype(np.float32)
    SingleOpModel(
        Op.CUMSUM,
        [Operand(x), Operand(np.array(axis, np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32],
        {"exclusive": exclusive, "reverse": reverse},
    ).check()


def test_cumsum_int32_wraps():
    x = np.array([2**31 - 1, 1, 5], np.int32)
    SingleOpModel(
        Op.CUMSUM,
        [Operand(x), Operand(np.array(0, np.int32), constant=True)],
        [pytflite.TensorType.INT32],
        {"exclusive": False, "reverse": False},
    ).check()


# --- TOPK_V2 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_topk(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=8))
    if dtype == np.float32:
        elements = st.sampled_from([-2.0, 0.0, -0.0, 1.5, 1.5, 7.0, np.nan, -np.inf])
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(info.min, -4), min(info.max, 4)) | st.sampled_from(
            [int(info.min), int(info.max)]
        )
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    k = data.draw(st.integers(0, shape[-1]))
    k_dtype = data.draw(st.sampled_from([np.int32, np.int16]))
    SingleOpModel(
        Op.TOPK_V2,
        [Operand(x), Operand(np.array(k, k_dtype), constant=data.draw(st.booleans()))],
        [tensor_type_for_dtype(np.dtype(dtype)), pytflite.TensorType.INT32],
        version=2,
    ).check()


def test_topk_k_too_large():
    model, _ = SingleOpModel(
        Op.TOPK_V2,
        [Operand(np.zeros([2, 3], np.float32)), Operand(np.array(4, np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32, pytflite.TensorType.INT32],
    ).build()
    with pytest.raises(RuntimeError, match="TopK k is higher than the internal dimension."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int32])
@pytest.mark.parametrize("length", [4, 16, 17, 37])
def test_arg_min_max_long_rows(dtype, length):
    """Rows long enough for TFLite's blocked row kernels, with repeated extremes (and NaNs for floats)."""
    rng = np.random.default_rng(length)
    if dtype == np.float32:
        pool = np.array([np.nan, -1.0, 0.0, 2.5, 2.5, -np.inf, np.inf, 7.0], np.float32)
        x = rng.choice(pool, size=(5, length))
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(5, length), endpoint=True).astype(dtype)
        x[:, length // 2 :: 5] = info.max
        x[:, length // 3 :: 7] = info.min
    for op in (Op.ARG_MAX, Op.ARG_MIN):
        for axis in (-1, 0):
            SingleOpModel(
                op,
                [Operand(x), Operand(np.array([axis], np.int32), constant=True)],
                [pytflite.TensorType.INT64],
                {"output_type": pytflite.TensorType.INT64},
            ).check()


def test_topk_int16_indices():
    x = np.random.default_rng(3).integers(-5, 5, size=(3, 50)).astype(np.float32)
    SingleOpModel(
        Op.TOPK_V2,
        [Operand(x), Operand(np.array(7, np.int32))],
        [pytflite.TensorType.FLOAT32, pytflite.TensorType.INT16],
        version=3,
    ).check()

"""REDUCE_WINDOW against LiteRT: every reduction and type, windows with strides and dilations over
ranks 1 to 6 (float sums and products bit-exact: TFLite's accumulation order), and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model.options import ReduceWindowFunction as F
from pytflite.model.options import ReduceWindowOptions
from tests.ops.refusals import fails_like_litert
from tests.oracle import litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert


def reduce_window(value, init, window, strides, dilations, function, constant=True) -> SingleOpModel:
    value = np.asarray(value)
    attributes = [Operand(np.asarray(a, np.int64), constant=constant) for a in (window, strides, dilations)]
    return SingleOpModel(
        Op.REDUCE_WINDOW,
        [Operand(value), Operand(np.asarray(init, value.dtype)), *attributes],
        [tensor_type_for_dtype(value.dtype)],
        options=ReduceWindowOptions(reduce_function=function),
    )


def sample(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.6
    if dtype.kind == "f":
        value = rng.standard_normal(shape).astype(dtype)
        value.reshape(-1)[::3] = np.round(value.reshape(-1)[::3])  # ties (and -0.0) for min and max
        return value
    return rng.integers(-3 if dtype.kind == "i" else 0, 4, shape).astype(dtype)


@pytest.mark.parametrize("function", [F.ADD, F.MUL, F.MINIMUM, F.MAXIMUM, F.ALL, F.ANY])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_reductions_over_strided_dilated_windows(function, dtype):
    rng = np.random.default_rng(int(function))
    value = sample(rng, (2, 40, 30, 3), dtype)
    init = {F.MUL: 1, F.ALL: 1}.get(function, 0)
    reduce_window(value, init, (1, 3, 4, 2), (1, 2, 3, 1), (1, 2, 1, 1), function).check(rtol=0)


@pytest.mark.parametrize("function", [F.MINIMUM, F.MAXIMUM, F.ALL, F.ANY])
def test_bool_inputs(function):
    value = sample(np.random.default_rng(0), (30, 20), np.bool_)
    reduce_window(value, function != F.ANY, (3, 2), (2, 1), (1, 3), function).check()


def test_nan_and_signed_zeros_follow_tflites_comparisons():
    value = np.array([[np.nan, 1.0, -0.0, 0.0, np.nan, -2.0, 0.0, -0.0]], np.float32)
    for function in (F.MINIMUM, F.MAXIMUM):
        model = reduce_window(value, np.float32(0), (1, 2), (1, 1), (1, 1), function)
        built, feeds = model.build()
        (theirs,) = run(litert_interpreter(built), feeds)
        (ours,) = model.check(rtol=0)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


@pytest.mark.parametrize("rank", [1, 2, 3, 5, 6])
def test_ranks(rank):
    shape = (7, 6, 5, 4, 3, 3)[:rank]
    value = sample(np.random.default_rng(rank), shape, np.float32)
    window, strides, dilations = [2] * rank, [1, 2] * 3, [2, 1] * 3
    reduce_window(value, 0, window, strides[:rank], dilations[:rank], F.ADD).check(rtol=0)


def test_a_window_larger_than_the_input_gives_an_empty_output():
    value = np.ones((3, 4), np.float32)
    (out,) = reduce_window(value, 0, (4, 1), (1, 1), (1, 1), F.ADD).check()
    assert out.shape == (0, 4)


def test_refusals_in_tflites_words():
    value = np.ones((4, 4), np.float32)
    fails_like_litert(
        reduce_window(value, 0, (2, 2), (1, 1), (1, 1), F.ADD, constant=False),
        "IsConstantTensor(window_dimensions_tensor) was not true.",
    )
    model = reduce_window(value, 0, (2, 2), (1, 1), (1, 1), F.ADD)
    model.inputs[2] = Operand(np.array([2, 2], np.int32), constant=True)
    fails_like_litert(model, "window_dimensions_tensor->type != kTfLiteInt64 (2 != 4)")
    model = reduce_window(value, 0, (2, 2), (1, 1), (1, 1), F.ADD)
    model.inputs[1] = Operand(np.int32(0))
    fails_like_litert(model, "input_tensor->type != init_value_tensor->type (1 != 2)")
    fails_like_litert(
        reduce_window(np.ones((2,) * 7, np.float32), 0, [1] * 7, [1] * 7, [1] * 7, F.ADD),
        "input_tensor->dims->size <= kMaxReduceWindowRank was not true.",
    )
    # TFLite divides by the strides unchecked (a zero stride crashes it): pytflite refuses, as its
    # STABLEHLO_REDUCE_WINDOW does
    reduce_window(value, 0, (2, 2), (0, 1), (1, 1), F.ADD).fails(
        r"AllGtThanZero\(window_strides\) was not true"
    )

"""SPARSE_TO_DENSE against LiteRT: every value and index type, 0-D/1-D/2-D indices (ranks 1 to 4),
scalar and per-index values, repeated positions, constant and run-time shapes, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model import options as O
from tests.ops.refusals import fails_like_litert
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

VALUE_TYPES = [np.float32, np.int32, np.int64, np.int8, np.uint8]


def model(indices, shape, values, default, constant_shape=True, version=1) -> SingleOpModel:
    return SingleOpModel(
        Op.SPARSE_TO_DENSE,
        [Operand(indices), Operand(shape, constant=constant_shape), Operand(values), Operand(default)],
        [tensor_type_for_dtype(np.asarray(values).dtype)],
        options=O.SparseToDenseOptions(),
        version=version,
    )


def sample(rng, dtype, count):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(count).astype(dtype)
    return rng.integers(0, 100, count).astype(dtype)


@pytest.mark.parametrize("dtype", VALUE_TYPES)
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("dims", [(40,), (30, 20), (8, 9, 10), (5, 6, 7, 8)])
@pytest.mark.parametrize("constant_shape", [True, False])
def test_positions_are_set_last_write_winning(dtype, index_type, dims, constant_shape):
    rng = np.random.default_rng(len(dims) * 7 + VALUE_TYPES.index(dtype))
    count = 600  # more than some outputs hold: positions repeat
    coordinates = np.stack([rng.integers(0, n, count) for n in dims], axis=1).astype(index_type)
    indices = coordinates[:, 0] if len(dims) == 1 and constant_shape else coordinates
    shape = np.array(dims, index_type)
    model(indices, shape, sample(rng, dtype, count), sample(rng, dtype, 1)[0], constant_shape).check(rtol=0)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_scalar_value_fills_every_listed_position(version):
    indices = np.array([[0, 1], [2, 3], [2, 3], [4, 0]], np.int32)
    out = model(indices, np.array([5, 4], np.int32), np.float32(2.5), np.float32(-1), version=version).check(
        rtol=0
    )
    assert out[0][2, 3] == 2.5 and out[0][0, 0] == -1


def test_a_scalar_index_sets_one_position():
    model(np.int32(3), np.array([6], np.int32), np.int64(9), np.int64(1)).check(rtol=0)


def test_no_indices_give_the_default_everywhere():
    model(np.zeros((0, 2), np.int64), np.array([3, 4], np.int64), np.zeros(0, np.uint8), np.uint8(7)).check()


@pytest.mark.parametrize("bad", [[0, 5], [-1, 0]])
def test_an_index_outside_the_output_fails_the_invoke(bad):
    indices = np.array([[1, 1], bad], np.int32)
    fails_like_litert(
        model(indices, np.array([3, 5], np.int32), np.ones(2, np.float32), np.float32(0)),
        "outside the output shape",
        litert_says_it=False,
    )


def test_refusals_in_tflites_words():
    shape2 = np.array([3, 3], np.int32)
    fails_like_litert(
        model(np.zeros((1, 1, 2), np.int32), shape2, np.float32(1), np.float32(0)),
        "NumDimensions(indices) < 3 was not true.",
    )
    fails_like_litert(
        model(np.zeros((2, 2), np.int32), shape2, np.ones((2, 1), np.float32), np.float32(0)),
        "NumDimensions(values) < 2 was not true.",
    )
    fails_like_litert(
        model(np.zeros((2, 2), np.int32), shape2, np.ones(3, np.float32), np.float32(0)),
        "SizeOfDimension(indices, 0) != NumElements(values) (2 != 3)",
    )
    fails_like_litert(
        model(np.zeros((2, 3), np.int32), shape2, np.ones(2, np.float32), np.float32(0)),
        "SizeOfDimension(indices, 1) != NumElements(output_shape) (3 != 2)",
    )
    fails_like_litert(
        model(np.zeros(2, np.int32), np.array([4], np.int32), np.ones(3, np.int32), np.int32(0)),
        "NumElements(indices) != NumElements(values) (2 != 3)",
    )
    fails_like_litert(
        model(np.zeros(2, np.int32), np.array([4], np.int32), np.ones(2, np.int16), np.int16(0)),
        "values->type == kTfLiteInt32 || values->type == kTfLiteInt64 || values->type == kTfLiteInt8",
    )
    fails_like_litert(
        model(np.zeros(2, np.int32), np.array([4], np.int32), np.ones(2, np.int32), np.int64(0)),
        "values->type != default_value->type (INT32 != INT64)",
    )
    fails_like_litert(
        model(np.zeros(2, np.int32), np.array([4], np.int32), np.ones(2, np.int32), np.zeros(2, np.int32)),
        "NumElements(default_value) != 1 (2 != 1)",
    )
    fails_like_litert(
        model(np.zeros((1, 5), np.int32), np.full(5, 2, np.int32), np.int32(1), np.int32(0)),
        "true_dimensions <= kMaxDimensions was not true.",
    )

"""BITCAST against LiteRT: every pair of element sizes (wider, narrower, equal), and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.types import tensor_type_for_dtype
from tests.ops.refusals import fails_like_litert
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

DTYPES = [
    np.uint8,
    np.int8,
    np.bool_,
    np.int16,
    np.uint16,
    np.float16,
    np.int32,
    np.uint32,
    np.float32,
    np.int64,
    np.uint64,
    np.float64,
    np.complex64,
    np.complex128,
]


def bitcast(value: np.ndarray, to) -> SingleOpModel:
    return SingleOpModel(Op.BITCAST, [Operand(value)], [tensor_type_for_dtype(np.dtype(to))])


@pytest.mark.parametrize("source", DTYPES)
@pytest.mark.parametrize("target", DTYPES)
def test_bytes_are_reinterpreted(source, target):
    rng = np.random.default_rng(3)
    wide, narrow = np.dtype(source).itemsize, np.dtype(target).itemsize
    shape = (6, 10, max(narrow // wide, 1))
    raw = rng.integers(0, 256, int(np.prod(shape)) * wide, dtype=np.uint8)
    if source == np.bool_:
        raw &= 1
    value = raw.view(source).reshape(shape)
    (out,) = bitcast(value, target).check(rtol=0)
    np.testing.assert_array_equal(out.reshape(-1).view(np.uint8), raw)


def test_a_narrower_input_needs_the_matching_last_dimension():
    fails_like_litert(
        bitcast(np.zeros((4, 3), np.int16), np.int64),
        "input->dims->data[dims - 1] != output_type_size / input_type_size (3 != 4)",
    )


def test_string_tensors_have_no_element_size():
    model = SingleOpModel(
        Op.BITCAST, [Operand(np.array([b"ab", b"cd"], dtype=object), type=T.STRING)], [T.INT32]
    )
    fails_like_litert(model, "Type 5 is unsupported. Only float16, float32, float64")

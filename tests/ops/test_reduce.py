"""MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL against LiteRT: axes (negative, repeated), keep_dims, types."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite.core.types import tensor_type_for_dtype
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

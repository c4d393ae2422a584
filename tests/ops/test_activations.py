"""RELU, LOGISTIC, SOFTMAX (float32) against LiteRT."""

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

FLOATS = st.floats(-50, 50, width=32)


@pytest.mark.parametrize("op", [Op.RELU, Op.LOGISTIC])
@settings(max_examples=20, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=6), elements=FLOATS))
def test_unary(op, x):
    SingleOpModel(op, [Operand(x)], [T.FLOAT32]).check()


def test_logistic_over_its_whole_range():
    x = np.linspace(-100, 100, 20001, dtype=np.float32)
    SingleOpModel(Op.LOGISTIC, [Operand(x)], [T.FLOAT32]).check()


@settings(max_examples=25, deadline=None)
@given(
    x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=7), elements=FLOATS),
    beta=st.sampled_from([1.0, 0.5, 2.0, 0.01]),
)
def test_softmax(x, beta):
    SingleOpModel(Op.SOFTMAX, [Operand(x)], [T.FLOAT32], {"beta": beta}).check()


def test_softmax_of_an_empty_row():
    # LiteRT itself crashes (segfault) on this model, so pytflite runs it alone
    import pytflite
    from tests.oracle import run

    model, feeds = SingleOpModel(
        Op.SOFTMAX, [Operand(np.zeros([2, 0], np.float32))], [T.FLOAT32], {"beta": 1.0}
    ).build()
    (out,) = run(pytflite.Interpreter(model_content=model), feeds)
    assert out.shape == (2, 0)

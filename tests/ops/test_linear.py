"""FULLY_CONNECTED (float32) against LiteRT: batching, bias, keep_num_dims, activations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert


@settings(max_examples=30, deadline=None)
@given(
    leading=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    depth=st.integers(1, 40),
    units=st.integers(1, 30),
    bias=st.sampled_from(["const", "absent", "input"]),
    keep_num_dims=st.booleans(),
    activation=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]),
    constant_weights=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fully_connected(leading, depth, units, bias, keep_num_dims, activation, constant_weights, seed):
    rng = np.random.default_rng(seed)
    shape = [*leading, depth] if leading or keep_num_dims else [depth]
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal([units, depth]).astype(np.float32)
    b = rng.standard_normal([units]).astype(np.float32)
    bias_operand = None if bias == "absent" else Operand(b, constant=bias == "const")
    options = {"fused_activation_function": activation, "keep_num_dims": keep_num_dims}
    SingleOpModel(
        Op.FULLY_CONNECTED,
        [Operand(x), Operand(w, constant=constant_weights), bias_operand],
        [T.FLOAT32],
        options,
        version=5 if keep_num_dims else 1,
    ).check()


def test_input_flattens_to_the_weights_depth():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    w = np.ones([5, 6], np.float32)
    (out,) = SingleOpModel(Op.FULLY_CONNECTED, [Operand(x), Operand(w, constant=True)], [T.FLOAT32]).check()
    assert out.shape == (4, 5)


def test_bad_depth_is_rejected():
    import pytflite

    model, _ = SingleOpModel(
        Op.FULLY_CONNECTED,
        [Operand(np.zeros([2, 5], np.float32)), Operand(np.zeros([3, 4], np.float32), constant=True)],
        [T.FLOAT32],
    ).build()
    with pytest.raises(RuntimeError, match="not a multiple of depth 4"):
        pytflite.Interpreter(model_content=model).allocate_tensors()

"""FULLY_CONNECTED and BATCH_MATMUL (float32) against LiteRT: batching and broadcasting, bias,
keep_num_dims, adjoints, activations, and the errors TFLite reports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
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
    model, _ = SingleOpModel(
        Op.FULLY_CONNECTED,
        [Operand(np.zeros([2, 5], np.float32)), Operand(np.zeros([3, 4], np.float32), constant=True)],
        [T.FLOAT32],
    ).build()
    with pytest.raises(RuntimeError, match="not a multiple of depth 4"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- BATCH_MATMUL --------------------------------------------------------------------------------------


@st.composite
def matmul_shapes(draw):
    """Two shapes whose batch dimensions broadcast (ranks 2..5, each side possibly shorter)."""
    rank = draw(st.integers(2, 5))
    batch = draw(st.lists(st.integers(1, 3), min_size=rank - 2, max_size=rank - 2))
    rows, depth, cols = draw(st.integers(1, 6)), draw(st.integers(0, 6)), draw(st.integers(1, 6))
    lhs_batch = [d if draw(st.booleans()) else 1 for d in batch]
    rhs_batch = [d if draw(st.booleans()) else 1 for d in batch]
    lhs_batch = lhs_batch[draw(st.integers(0, len(lhs_batch))) :]
    rhs_batch = rhs_batch[draw(st.integers(0, len(rhs_batch))) :]
    return [*lhs_batch, rows, depth], [*rhs_batch, depth, cols]


@settings(max_examples=100, deadline=None)
@given(
    shapes=matmul_shapes(),
    adj_x=st.booleans(),
    adj_y=st.booleans(),
    constant_rhs=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_batch_matmul(shapes, adj_x, adj_y, constant_rhs, seed):
    rng = np.random.default_rng(seed)
    lhs_shape, rhs_shape = shapes
    if adj_x:
        lhs_shape[-1], lhs_shape[-2] = lhs_shape[-2], lhs_shape[-1]
    if adj_y:
        rhs_shape[-1], rhs_shape[-2] = rhs_shape[-2], rhs_shape[-1]
    lhs = rng.standard_normal(lhs_shape).astype(np.float32)
    rhs = rng.standard_normal(rhs_shape).astype(np.float32)
    (out,) = SingleOpModel(
        Op.BATCH_MATMUL,
        [Operand(lhs), Operand(rhs, constant=constant_rhs)],
        [T.FLOAT32],
        {"adj_x": adj_x, "adj_y": adj_y},
    ).check()
    expected = np.matmul(
        np.swapaxes(lhs, -1, -2) if adj_x else lhs, np.swapaxes(rhs, -1, -2) if adj_y else rhs
    )
    assert out.shape == expected.shape


def test_batch_matmul_empty_depth_gives_zeros():
    (out,) = SingleOpModel(
        Op.BATCH_MATMUL,
        [Operand(np.zeros([2, 3, 0], np.float32)), Operand(np.zeros([2, 0, 4], np.float32))],
        [T.FLOAT32],
        {"adj_x": False, "adj_y": False},
    ).check()
    np.testing.assert_array_equal(out, np.zeros([2, 3, 4], np.float32))


@pytest.mark.parametrize(
    "lhs_shape, rhs_shape, types, message",
    [
        ([2, 3, 4], [3, 4, 5], (T.FLOAT32, T.FLOAT32), "batch dimensions do not broadcast"),
        ([3, 4], [5, 6], (T.FLOAT32, T.FLOAT32), "accumulation dimension of lhs vs rhs 4 != 5"),
        ([1, 1, 1, 1, 3, 4], [4, 5], (T.FLOAT32, T.FLOAT32), "lhs must have rank 2 to 5, got 6"),
        ([3, 4], [4, 5], (T.FLOAT32, T.INT8), "hybrid quantization\\) is not supported yet"),
        ([3, 4], [4, 5], (T.INT32, T.INT32), "Type INT32 \\(lhs\\) is unsupported by op BATCH_MATMUL"),
    ],
)
def test_batch_matmul_errors(lhs_shape, rhs_shape, types, message):
    import pytflite.core.types as core_types

    operands = [
        Operand(np.zeros(shape, core_types.storage_dtype(t)), type=t)
        for shape, t in zip((lhs_shape, rhs_shape), types)
    ]
    model, _ = SingleOpModel(Op.BATCH_MATMUL, operands, [types[0]], {"adj_x": False, "adj_y": False}).build()
    with pytest.raises(RuntimeError, match=message):
        pytflite.Interpreter(model_content=model).allocate_tensors()

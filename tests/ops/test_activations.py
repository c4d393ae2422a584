"""Activations and normalizations against LiteRT: RELU family, TANH, LOGISTIC, HARD_SWISH, ELU, LEAKY_RELU,
PRELU, GELU, SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION (float32)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from tests.oracle import requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

FLOATS = st.floats(-50, 50, width=32)
UNARY = [Op.RELU, Op.RELU6, Op.RELU_N1_TO_1, Op.RELU_0_TO_1, Op.TANH, Op.LOGISTIC, Op.HARD_SWISH, Op.ELU]
# Everything at the edges of float32: infinities, NaN, FLT_MAX-sized values (x^3 and x*6 overflow),
# denormals, signed zeros, and the points where TFLite's approximations saturate.
EXTREMES = np.float32(
    [np.inf, -np.inf, np.nan, 3e38, -3e38, 1e20, -1e20, 1e-45, -1e-45, 1e-39, -1e-39, 0.0, -0.0, 16.6]
)
SATURATION_POINTS = np.float32([16.7, -88.5, -104.0, 7.9, -7.9, 3.0, -3.0, 6.0, 1.0, -1.0])
# 200003 points over [-100, 100] plus the extremes: not a multiple of 4 (HARD_SWISH's scalar tail).
WIDE = np.concatenate([np.linspace(-100, 100, 200003, dtype=np.float32), EXTREMES, SATURATION_POINTS])
ONE_OP_OPTIONS = [
    (Op.LEAKY_RELU, {"alpha": 0.2}),
    (Op.LEAKY_RELU, {"alpha": 1.0}),
    (Op.LEAKY_RELU, {"alpha": 3.5}),
    (Op.LEAKY_RELU, {"alpha": -0.5}),
    (Op.LEAKY_RELU, {"alpha": 0.0}),
    (Op.LEAKY_RELU, {"alpha": float("nan")}),
    (Op.GELU, {"approximate": True}),
    (Op.GELU, {"approximate": False}),
]


def _ids(value):
    return value.name if isinstance(value, Op) else str(value)


def _pytflite_only(model: bytes, feeds) -> list[np.ndarray]:
    return run(pytflite.Interpreter(model_content=model), feeds)


# ---- elementwise activations ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", UNARY, ids=_ids)
@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=6), elements=FLOATS))
def test_unary(op, x):
    SingleOpModel(op, [Operand(x)], [T.FLOAT32]).check()


@pytest.mark.parametrize("op, options", [(op, None) for op in UNARY] + ONE_OP_OPTIONS, ids=_ids)
def test_over_a_wide_range_with_extremes(op, options):
    SingleOpModel(op, [Operand(WIDE)], [T.FLOAT32], options).check()


@pytest.mark.parametrize("op, options", [(op, None) for op in UNARY] + ONE_OP_OPTIONS, ids=_ids)
def test_scalar_and_empty_inputs(op, options):
    SingleOpModel(op, [Operand(np.array(-1.25, np.float32))], [T.FLOAT32], options).check()
    SingleOpModel(op, [Operand(np.zeros([2, 0, 3], np.float32))], [T.FLOAT32], options).check()


def test_logistic_over_its_whole_range():
    x = np.linspace(-100, 100, 20001, dtype=np.float32)
    SingleOpModel(Op.LOGISTIC, [Operand(x)], [T.FLOAT32]).check()


@pytest.mark.parametrize("low, high", [(-110.0, -80.0), (-30.0, -10.0)])
def test_logistic_of_negative_inputs_alone(low, high):
    # the whole tensor is tiny: the comparison's tolerance scales down with it
    SingleOpModel(Op.LOGISTIC, [Operand(np.linspace(low, high, 4001, dtype=np.float32))], [T.FLOAT32]).check()


@pytest.mark.parametrize("approximate", [True, False])
@pytest.mark.parametrize("low, high", [(-12.0, -3.0), (-6.0, -2.0), (-2.0, 2.0)])
def test_gelu_of_a_narrow_range(approximate, low, high):
    # Negative inputs alone make GELU's outputs tiny, so the tolerance shrinks with them: the approximate
    # form's 1 + tanh(...) cancellation has to round exactly as TFLite's does.
    x = np.linspace(low, high, 30001, dtype=np.float32)
    SingleOpModel(Op.GELU, [Operand(x)], [T.FLOAT32], {"approximate": approximate}).check()


@pytest.mark.parametrize("approximate", [True, False])
@settings(max_examples=15, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=8), elements=FLOATS))
def test_gelu(approximate, x):
    SingleOpModel(Op.GELU, [Operand(x)], [T.FLOAT32], {"approximate": approximate}).check()


@pytest.mark.parametrize("op", [Op.GELU, Op.HARD_SWISH, Op.LOGISTIC])
def test_large_tensors_run_block_by_block(op):
    # more elements than one block, and a size that is not a multiple of the block or of 4
    x = (np.random.default_rng(3).standard_normal([3, 70001]) * 8).astype(np.float32)
    SingleOpModel(op, [Operand(x)], [T.FLOAT32]).check()


@settings(max_examples=20, deadline=None)
@given(
    x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=6), elements=FLOATS),
    alpha=st.sampled_from([0.2, 1.0, 3.0, -0.5, 0.0, -2.0]),
)
def test_leaky_relu(x, alpha):
    SingleOpModel(Op.LEAKY_RELU, [Operand(x)], [T.FLOAT32], {"alpha": alpha}).check()


# ---- PRELU ---------------------------------------------------------------------------------------------

ALPHAS = {
    "mixed": lambda rng, shape: rng.uniform(-2, 2, shape),
    "in_0_1": lambda rng, shape: rng.uniform(0.01, 1, shape),
    "above_1": lambda rng, shape: rng.uniform(1, 3, shape),
    "non_finite": lambda rng, shape: np.resize(np.array([np.inf, -np.inf, np.nan, 0.5]), shape),
}


@pytest.mark.parametrize(
    "x_shape, alpha_shape",
    [
        ([1, 16, 16, 8], [1, 1, 8]),
        ([2, 3, 4], [2, 3, 4]),
        ([2, 3, 2, 2, 4], [2, 1, 4]),
        ([5, 7], []),
        ([5, 7], [7]),
        ([3, 1, 5], [3, 1, 1]),
        ([], []),
        ([0, 3], [3]),
    ],
)
@pytest.mark.parametrize("kind", list(ALPHAS))
@pytest.mark.parametrize("constant", [True, False])
def test_prelu(x_shape, alpha_shape, kind, constant):
    rng = np.random.default_rng(len(x_shape) * 10 + len(alpha_shape))
    x = (rng.standard_normal(x_shape) * 10).astype(np.float32).reshape(-1)
    if x.size >= 3:
        x[:3] = [np.inf, -np.inf, 0.0]
    alpha = ALPHAS[kind](rng, alpha_shape).astype(np.float32)
    SingleOpModel(
        Op.PRELU, [Operand(x.reshape(x_shape)), Operand(alpha, constant=constant)], [T.FLOAT32]
    ).check()


def test_prelu_alpha_must_broadcast_to_the_input():
    model, _ = SingleOpModel(
        Op.PRELU,
        [Operand(np.zeros([2, 4], np.float32)), Operand(np.ones([3, 2, 4], np.float32), constant=True)],
        [T.FLOAT32],
    ).build()
    with pytest.raises(RuntimeError, match=r"PRELU alpha of shape \[3, 2, 4\] does not broadcast"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- SOFTMAX, LOG_SOFTMAX ------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=7), elements=FLOATS),
    beta=st.sampled_from([1.0, 0.5, 2.0, 0.01]),
)
def test_softmax(x, beta):
    SingleOpModel(Op.SOFTMAX, [Operand(x)], [T.FLOAT32], {"beta": beta}).check()


@settings(max_examples=25, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=7), elements=FLOATS))
def test_log_softmax(x):
    SingleOpModel(Op.LOG_SOFTMAX, [Operand(x)], [T.FLOAT32]).check()


@pytest.mark.parametrize("op, options", [(Op.SOFTMAX, {"beta": 1.0}), (Op.LOG_SOFTMAX, None)], ids=_ids)
def test_softmax_of_long_rows_and_extremes(op, options):
    rng = np.random.default_rng(4)
    SingleOpModel(
        op, [Operand((rng.standard_normal([8, 5000]) * 30).astype(np.float32))], [T.FLOAT32], options
    ).check()
    rows = np.float32([[1e30, 0, -1e30], [-1e-45, 1e-45, 0], [88, 89, 90], [-200, -100, 0]])
    SingleOpModel(op, [Operand(rows)], [T.FLOAT32], options).check()


def test_softmax_of_an_empty_row():
    # LiteRT itself crashes (segfault) on this model, so pytflite runs it alone
    model, feeds = SingleOpModel(
        Op.SOFTMAX, [Operand(np.zeros([2, 0], np.float32))], [T.FLOAT32], {"beta": 1.0}
    ).build()
    (out,) = _pytflite_only(model, feeds)
    assert out.shape == (2, 0)


def test_log_softmax_of_an_empty_row_and_a_scalar():
    # LiteRT crashes on the empty row and reads past the shape of a scalar: pytflite runs them alone
    model, feeds = SingleOpModel(Op.LOG_SOFTMAX, [Operand(np.zeros([2, 0], np.float32))], [T.FLOAT32]).build()
    assert _pytflite_only(model, feeds)[0].shape == (2, 0)
    model, feeds = SingleOpModel(Op.LOG_SOFTMAX, [Operand(np.array(3.5, np.float32))], [T.FLOAT32]).build()
    (out,) = _pytflite_only(model, feeds)
    assert out.shape == () and out == 0


def test_softmax_needs_a_dimension():
    model, _ = SingleOpModel(
        Op.SOFTMAX, [Operand(np.array(1.0, np.float32))], [T.FLOAT32], {"beta": 1.0}
    ).build()
    with pytest.raises(RuntimeError, match="SOFTMAX input must have at least one dimension"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- L2_NORMALIZATION ----------------------------------------------------------------------------------

L2_OPTIONS = {"fused_activation_function": 0}


@settings(max_examples=25, deadline=None)
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=4, max_side=7), elements=FLOATS))
def test_l2_normalization(x):
    SingleOpModel(Op.L2_NORMALIZATION, [Operand(x)], [T.FLOAT32], L2_OPTIONS).check()


@pytest.mark.parametrize(
    "x",
    [
        # one long row of equal values: a float32 sum in another order than TFLite's drifts by ~1e-4
        np.full([1, 300000], 0.1, np.float32),
        (np.random.default_rng(5).standard_normal([16, 3000]) * np.exp(np.linspace(-20, 20, 3000))).astype(
            np.float32
        ),
        np.float32([[1e-30, 1e-31], [0, 0], [3e38, 3e38], [1e-7, -1e-7], [1e20, 1], [np.inf, 1]]),
    ],
    ids=["long-row", "wild-magnitudes", "extremes"],
)
def test_l2_normalization_rounds_as_tflite(x):
    SingleOpModel(Op.L2_NORMALIZATION, [Operand(x)], [T.FLOAT32], L2_OPTIONS).check()


@pytest.mark.parametrize(
    "x, options, message",
    [
        (np.ones([2, 3], np.float32), {"fused_activation_function": 1}, "fused activation"),
        (np.array(1.0, np.float32), L2_OPTIONS, "L2_NORMALIZATION input must have at least one dimension"),
    ],
)
def test_l2_normalization_rejects(x, options, message):
    model, _ = SingleOpModel(Op.L2_NORMALIZATION, [Operand(x)], [T.FLOAT32], options).build()
    with pytest.raises(RuntimeError, match=message):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- LOCAL_RESPONSE_NORMALIZATION ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "radius, bias, alpha, beta",
    [(2, 1.0, 1e-4, 0.75), (1, 1.0, 1.0, 1.0), (3, 2.0, 0.5, 0.5), (0, 1.0, 1.0, 0.3), (9, 0.5, 2.0, 1.5)],
)
@pytest.mark.parametrize("shape", [[2, 5, 6, 37], [1, 1, 1, 3], [1, 2, 3, 8]])
def test_local_response_normalization(radius, bias, alpha, beta, shape):
    x = (np.random.default_rng(6).standard_normal(shape) * 10).astype(np.float32)
    options = {"radius": radius, "bias": bias, "alpha": alpha, "beta": beta}
    SingleOpModel(Op.LOCAL_RESPONSE_NORMALIZATION, [Operand(x)], [T.FLOAT32], options).check()


def test_local_response_normalization_running_sum_rounds_as_tflite():
    # a huge square entering and leaving the window leaves TFLite's running float32 sum inexact by far
    # more than the small squares around it: the same roundings must happen here
    rng = np.random.default_rng(7)
    x = (rng.standard_normal([1, 4, 4, 64]) * np.exp(rng.uniform(-8, 8, [1, 4, 4, 64]))).astype(np.float32)
    x[0, 0, 0, 10] = 3000.0
    options = {"radius": 3, "bias": 1.0, "alpha": 1.0, "beta": 1.0}
    SingleOpModel(Op.LOCAL_RESPONSE_NORMALIZATION, [Operand(x)], [T.FLOAT32], options).check()


@pytest.mark.parametrize("shape", [[1, 0, 3, 8], [1, 2, 3, 0]])
def test_local_response_normalization_of_an_empty_input(shape):
    # pytflite alone: an empty tensor is a degenerate model for LiteRT
    options = {"radius": 2, "bias": 1.0, "alpha": 1.0, "beta": 0.5}
    model, feeds = SingleOpModel(
        Op.LOCAL_RESPONSE_NORMALIZATION, [Operand(np.zeros(shape, np.float32))], [T.FLOAT32], options
    ).build()
    assert _pytflite_only(model, feeds)[0].shape == tuple(shape)


@pytest.mark.parametrize(
    "shape, radius, message",
    [([2, 3, 4], 1, "NumDimensions\\(input\\) 3 != 4"), ([1, 2, 2, 5], -1, "radius -1 is negative")],
)
def test_local_response_normalization_rejects(shape, radius, message):
    # (LiteRT corrupts its heap on the negative radius: pytflite alone)
    options = {"radius": radius, "bias": 1.0, "alpha": 1.0, "beta": 0.5}
    model, _ = SingleOpModel(
        Op.LOCAL_RESPONSE_NORMALIZATION, [Operand(np.ones(shape, np.float32))], [T.FLOAT32], options
    ).build()
    with pytest.raises(RuntimeError, match=message):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- types and versions --------------------------------------------------------------------------------

VERSIONS = {
    Op.RELU: 3,
    Op.RELU6: 3,
    Op.RELU_N1_TO_1: 1,
    Op.RELU_0_TO_1: 1,
    Op.TANH: 3,
    Op.LOGISTIC: 3,
    Op.HARD_SWISH: 1,
    Op.ELU: 1,
    Op.LEAKY_RELU: 2,
    Op.PRELU: 1,
    Op.GELU: 3,
    Op.SOFTMAX: 4,
    Op.LOG_SOFTMAX: 2,
    Op.L2_NORMALIZATION: 2,
    Op.LOCAL_RESPONSE_NORMALIZATION: 1,
}


@pytest.mark.parametrize("op", list(VERSIONS), ids=_ids)
def test_registered_versions_match_tflite(op):
    resolver = pytflite.BuiltinOpResolver()
    last = VERSIONS[op]
    assert all(resolver.find_builtin(op, v) is not None for v in range(1, last + 1))
    assert resolver.find_builtin(op, last + 1) is None


@pytest.mark.parametrize("op, version", [(Op.RELU, 3), (Op.GELU, 2), (Op.SOFTMAX, 4), (Op.LEAKY_RELU, 2)])
def test_later_versions_compute_the_same(op, version):
    options = {Op.GELU: {"approximate": False}, Op.SOFTMAX: {"beta": 1.0}, Op.LEAKY_RELU: {"alpha": 0.3}}
    x = np.linspace(-5, 5, 101, dtype=np.float32)
    SingleOpModel(op, [Operand(x)], [T.FLOAT32], options.get(op), version=version).check()


@pytest.mark.parametrize(
    "op, options",
    [
        (Op.RELU, None),
        (Op.TANH, None),
        (Op.GELU, {"approximate": True}),
        (Op.SOFTMAX, {"beta": 1.0}),
        (Op.L2_NORMALIZATION, L2_OPTIONS),
    ],
    ids=_ids,
)
@pytest.mark.parametrize("tensor_type", [T.INT8, T.UINT8, T.INT16, T.INT32])
def test_non_float_inputs_fail_in_prepare(op, options, tensor_type):
    dtype = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.INT32: np.int32}[tensor_type]
    quantization = (
        AffineQuantization(np.array([0.1], np.float32), np.array([0])) if tensor_type != T.INT32 else None
    )
    model, _ = SingleOpModel(
        op,
        [Operand(np.ones([2, 3], dtype), type=tensor_type, quantization=quantization)],
        [tensor_type],
        options,
        output_quantization=[quantization],
    ).build()
    name = tensor_type.name
    message = (
        f"Type {name} \\(input\\) is unsupported by op {op.name}"
        if tensor_type == T.INT32
        else f"{op.name} of a quantized {name} input is not supported yet"
    )
    with pytest.raises(RuntimeError, match=message):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_output_type_must_match():
    model, _ = SingleOpModel(Op.RELU, [Operand(np.ones([2, 3], np.float32))], [T.INT32]).build()
    with pytest.raises(RuntimeError, match="RELU input/output types: FLOAT32 != INT32"):
        pytflite.Interpreter(model_content=model).allocate_tensors()

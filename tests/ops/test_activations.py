"""Activations and normalizations against LiteRT: RELU family, TANH, LOGISTIC, HARD_SWISH, ELU, LEAKY_RELU,
PRELU, GELU, SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION.

float32 within 1e-5; the quantized (uint8/int8/int16) kernels bit-exact, with LiteRT's default kernels
and, where TFLite's reference kernels compute differently (int16 TANH/LOGISTIC of power-of-two scales,
8-bit SOFTMAX and LOG_SOFTMAX), with BUILTIN_REF's. Elementwise ops are checked on every input value."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.fidelity.host import HostProfile
from tests.oracle import CORPUS, AnyOpResolver, litert, litert_interpreter, requires_litert, run
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
def test_gelu_of_a_narrow_range(approximate, low, high, kernels):
    # Negative inputs alone make GELU's outputs tiny, so the tolerance shrinks with them: the approximate
    # form's 1 + tanh(...) cancellation has to round exactly as TFLite's does.
    x = np.linspace(low, high, 30001, dtype=np.float32)
    SingleOpModel(Op.GELU, [Operand(x)], [T.FLOAT32], {"approximate": approximate}).check()


@pytest.mark.parametrize("approximate", [True, False])
def test_gelu_of_non_finite_values(approximate, kernels):
    """NaN gives NaN and -inf NaN, as TFLite's 0.5 * x * erfc(...) does; the compiled kernel keeps its
    table lookups in range for them."""
    x = np.float32([np.nan, -np.nan, np.inf, -np.inf, 40, -40, 0, -0.0] * 3)
    SingleOpModel(Op.GELU, [Operand(x)], [T.FLOAT32], {"approximate": approximate}).check()


@pytest.mark.parametrize("approximate", [True, False])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(x=hnp.arrays(np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=8), elements=FLOATS))
def test_gelu(approximate, x, kernels):
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


@pytest.mark.parametrize("rows, size", [(1, 1), (7, 3), (33, 5), (64, 13), (32, 16), (20, 37), (9, 200)])
@pytest.mark.parametrize("threads", [1, 4])
def test_compiled_float_softmax_is_bit_exact(rows, size, threads, kernels):
    """The compiled float SOFTMAX computes what LiteRT's x86 Eigen kernel does, element by element: its
    exp of packets and of the elements left outside them (which move with the rows each of LiteRT's
    threads takes), its column sums. The NumPy path stays within float tolerance, as does the compiled
    one against LiteRT's ARM build (NEON's fused multiply-adds in its exp)."""
    rng = np.random.default_rng(rows * size + threads)
    x = (rng.standard_normal((rows, size)) * rng.choice([1, 3, 10, 100], (rows, 1))).astype(np.float32)
    for beta in (1.0, 0.7):
        model, feeds = SingleOpModel(Op.SOFTMAX, [Operand(x)], [T.FLOAT32], {"beta": beta}).build()
        (expected,) = run(litert_interpreter(model, num_threads=threads), feeds)
        (ours,) = run(pytflite.Interpreter(model_content=model, num_threads=threads), feeds)
        if kernels == "compiled" and HostProfile.detect().x86:
            np.testing.assert_array_equal(ours, expected)
        else:
            np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-7)


def test_compiled_float_softmax_leaves_infinities_to_numpy(kernels):
    x = np.float32([[np.inf, 0, 1], [np.nan, 1, 2], [-np.inf, 0, 1], [1, 2, 3]])
    SingleOpModel(Op.SOFTMAX, [Operand(x)], [T.FLOAT32], {"beta": 1.0}).check()


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
def test_int32_inputs_fail_in_prepare(op, options):
    model, _ = SingleOpModel(op, [Operand(np.ones([2, 3], np.int32))], [T.INT32], options).build()
    with pytest.raises(RuntimeError, match=f"Type INT32 \\(input\\) is unsupported by op {op.name}"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_output_type_must_match():
    model, _ = SingleOpModel(Op.RELU, [Operand(np.ones([2, 3], np.float32))], [T.INT32]).build()
    with pytest.raises(RuntimeError, match="RELU input/output types: FLOAT32 != INT32"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- quantized kernels -----------------------------------------------------------------------------------

DTYPES = {T.UINT8: np.uint8, T.INT8: np.int8, T.INT16: np.int16}
REF = litert.OpResolverType.BUILTIN_REF if litert is not None else None
# (op, options, types): the quantized types TFLite's kernel takes
ELEMENTWISE = [
    (Op.RELU, None, (T.UINT8, T.INT8, T.INT16)),
    (Op.RELU6, None, (T.UINT8, T.INT8, T.INT16)),
    (Op.RELU_N1_TO_1, None, (T.UINT8, T.INT8)),
    (Op.RELU_0_TO_1, None, (T.UINT8, T.INT8)),
    (Op.TANH, None, (T.UINT8, T.INT8)),
    (Op.LOGISTIC, None, (T.UINT8, T.INT8)),
    (Op.HARD_SWISH, None, (T.UINT8, T.INT8)),
    (Op.ELU, None, (T.INT8,)),
    (Op.GELU, {"approximate": True}, (T.UINT8, T.INT8, T.INT16)),
    (Op.GELU, {"approximate": False}, (T.UINT8, T.INT8, T.INT16)),
    (Op.LEAKY_RELU, {"alpha": 0.2}, (T.UINT8, T.INT8, T.INT16)),
    (Op.LEAKY_RELU, {"alpha": -1.5}, (T.UINT8, T.INT8, T.INT16)),
    (Op.LEAKY_RELU, {"alpha": 3.0}, (T.UINT8, T.INT8, T.INT16)),
]
LOG_SCALES = st.floats(np.log(1e-3), np.log(1.0))


def every_value(tensor_type: T, tail: int = 13) -> np.ndarray:
    """Each value of the type once, then a few more (sizes off the SIMD block multiples)."""
    info = np.iinfo(DTYPES[tensor_type])
    values = np.arange(info.min, info.max + 1)
    return np.concatenate([values, values[:tail]]).astype(DTYPES[tensor_type])


def check_quantized(op, inputs, output_type, output_quantization, options=None, reference=False, version=1):
    """pytflite and LiteRT (BUILTIN_REF's kernels with `reference`) give identical integers."""
    model, feeds = SingleOpModel(
        op, inputs, [output_type], options, version=version, output_quantization=[output_quantization]
    ).build()
    kwargs = {"experimental_op_resolver_type": REF} if reference else {}
    theirs = run(litert_interpreter(model, **kwargs), feeds)[0]
    ours = run(pytflite.Interpreter(model_content=model, **kwargs), feeds)[0]
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    different = np.nonzero(ours.reshape(-1) != theirs.reshape(-1))[0]
    assert different.size == 0, (
        different[:8],
        ours.reshape(-1)[different[:8]],
        theirs.reshape(-1)[different[:8]],
    )
    return ours


def _fixed_output(op, tensor_type):
    """The output quantization TFLite's kernel requires, if any."""
    if op == Op.LOGISTIC:
        return (1 / 256, 0 if tensor_type == T.UINT8 else -128)
    return None


@pytest.mark.parametrize(
    "op, options, types", ELEMENTWISE, ids=lambda v: "" if isinstance(v, tuple) else _ids(v)
)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_quantized_elementwise_on_every_value(op, options, types, data):
    tensor_type = data.draw(st.sampled_from(types))
    info = np.iinfo(DTYPES[tensor_type])
    symmetric = tensor_type == T.INT16 and op != Op.GELU  # TFLite requires zero points of 0 there
    zero_points = st.just(0) if symmetric else st.integers(int(info.min), int(info.max))
    if tensor_type == T.INT16 and op == Op.GELU:
        zero_points = st.integers(-300, 300)
    divisor = 256.0 if tensor_type == T.INT16 else 1.0
    in_q = (float(np.exp(data.draw(LOG_SCALES))) / divisor, data.draw(zero_points))
    out_q = _fixed_output(op, tensor_type) or (
        float(np.exp(data.draw(LOG_SCALES))) / divisor,
        data.draw(zero_points),
    )
    if op == Op.HARD_SWISH:  # TFLite refuses an output scale below input_scale / 128
        out_q = (max(out_q[0], in_q[0] / 100), out_q[1])
    x = every_value(tensor_type)
    check_quantized(op, [Operand(x, quantization=in_q)], tensor_type, out_q, options)


@pytest.mark.parametrize(
    "op, in_q, out_q",
    [
        # the activation layers of small_cnn_int8 / mobilenet_v2_int8 (and a uint8 twin)
        (Op.LEAKY_RELU, (0.025765899568796158, 0), (0.014122314751148224, -105)),
        (Op.HARD_SWISH, (0.0155558492988348, 17), (0.006633452605456114, -39)),
        (Op.TANH, (0.005199950188398361, 3), (0.0078125, 0)),
        (Op.LOGISTIC, (0.020878329873085022, -48), (0.00390625, -128)),
    ],
    ids=_ids,
)
def test_corpus_int8_layer_quantizations(op, in_q, out_q):
    options = {"alpha": 0.10000000149011612} if op == Op.LEAKY_RELU else None
    x = every_value(T.INT8).reshape(1, 1, -1, 1)
    version = 1 if op == Op.HARD_SWISH else 2
    check_quantized(op, [Operand(x, quantization=in_q)], T.INT8, out_q, options, version=version)


@pytest.mark.parametrize("op", [Op.TANH, Op.LOGISTIC], ids=_ids)
@pytest.mark.parametrize(
    "scale",
    # power-of-two scales take the gemmlowp fixed-point path (the reference kernel interpolates a table);
    # the others (small_cnn_int16x8's among them) interpolate in both
    [
        2**-12,
        2**-11,
        2**-13,
        2**-15,
        3.0517578125e-05,
        2.0768340618815273e-05,
        0.00011172502127010375,
        1e-3,
        0.02,
    ],
)
@pytest.mark.parametrize("reference", [False, True], ids=["default", "ref"])
def test_int16_tanh_logistic(op, scale, reference):
    x = every_value(T.INT16)
    check_quantized(op, [Operand(x, quantization=(scale, 0))], T.INT16, (2**-15, 0), reference=reference)


@pytest.mark.parametrize("reference", [False, True], ids=["default", "ref"])
def test_int8_tanh_logistic_reference_kernels_use_the_same_tables(reference):
    x = every_value(T.INT8)
    check_quantized(Op.TANH, [Operand(x, quantization=(0.03, -7))], T.INT8, (1 / 128, 0), reference=reference)
    check_quantized(
        Op.LOGISTIC, [Operand(x, quantization=(0.07, 9))], T.INT8, (1 / 256, -128), reference=reference
    )


@pytest.mark.parametrize(
    "op, tensor_type, in_q, out_q, options",
    [
        # results beyond int32 (tiny output scales), huge input scales, multipliers of 2**32 and more
        (Op.TANH, T.INT8, (0.05, 3), (1e-12, 5), None),
        (Op.ELU, T.INT8, (0.05, 3), (3e-10, 5), None),
        (Op.RELU6, T.INT8, (0.05, 3), (1e-12, 5), None),
        (Op.RELU_N1_TO_1, T.UINT8, (0.05, 3), (1e-9, 5), None),
        (Op.LEAKY_RELU, T.INT8, (0.05, 3), (1e-12, 5), {"alpha": 0.3}),
        (Op.TANH, T.INT8, (1e4, 3), (1 / 128, 0), None),
        (Op.LOGISTIC, T.UINT8, (100.0, 3), (1 / 256, 0), None),
        (Op.HARD_SWISH, T.INT8, (1e4, 3), (1e4, 0), None),
        (Op.GELU, T.INT8, (1e36, 0), (0.1, 0), {"approximate": False}),
    ],
    ids=str,
)
def test_quantized_extreme_scales(op, tensor_type, in_q, out_q, options):
    check_quantized(op, [Operand(every_value(tensor_type), quantization=in_q)], tensor_type, out_q, options)


@pytest.mark.parametrize(
    "op, tensor_type, in_q, out_q, options",
    [
        (Op.HARD_SWISH, T.INT8, (0.0155558492988348, 17), (0.006633452605456114, -39), None),
        (Op.LEAKY_RELU, T.INT16, (1e-4, 0), (3e-5, 0), {"alpha": -1.5}),
        (Op.LEAKY_RELU, T.UINT8, (0.02, 100), (0.01, 30), {"alpha": 0.1}),
        (Op.RELU6, T.INT16, (3e-4, 0), (2e-4, 0), None),
        (Op.GELU, T.INT16, (2e-4, 5), (1e-4, -3), {"approximate": False}),
    ],
    ids=str,
)
def test_reference_resolver_runs_the_same_elementwise_kernels(op, tensor_type, in_q, out_q, options):
    # TFLite's reference and optimized kernels compute these alike on x86: one kernel serves both.
    # (LiteRT's BUILTIN_REF has no ELU at all.)
    x = every_value(tensor_type)
    check_quantized(op, [Operand(x, quantization=in_q)], tensor_type, out_q, options, reference=True)


# ---- quantized PRELU ---------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_quantized_prelu(data):
    tensor_type = data.draw(st.sampled_from([T.UINT8, T.INT8, T.INT16]))
    alpha_type = T.UINT8 if tensor_type == T.UINT8 else T.INT8
    info, alpha_info = np.iinfo(DTYPES[tensor_type]), np.iinfo(DTYPES[alpha_type])
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=9))
    alpha_shape = shape[data.draw(st.integers(0, len(shape))) :]
    x = data.draw(hnp.arrays(DTYPES[tensor_type], shape))
    alpha = data.draw(hnp.arrays(DTYPES[alpha_type], alpha_shape))
    zero_points = (
        st.integers(-300, 300) if tensor_type == T.INT16 else st.integers(int(info.min), int(info.max))
    )
    divisor = 128.0 if tensor_type == T.INT16 else 1.0
    in_q = (float(np.exp(data.draw(LOG_SCALES))), data.draw(zero_points))
    alpha_q = (
        float(np.exp(data.draw(LOG_SCALES))) / 10,
        data.draw(st.integers(int(alpha_info.min), int(alpha_info.max))),
    )
    out_q = (float(np.exp(data.draw(LOG_SCALES))) / divisor, data.draw(zero_points))
    constant = data.draw(st.booleans())
    inputs = [Operand(x, quantization=in_q), Operand(alpha, constant=constant, quantization=alpha_q)]
    check_quantized(Op.PRELU, inputs, tensor_type, out_q)


def test_quantized_prelu_every_pair_and_the_corpus_layer():
    # every (input, alpha) pair of int8 and uint8
    for tensor_type in (T.INT8, T.UINT8):
        x = np.repeat(every_value(tensor_type, 0), 256).reshape(256, 256)
        alpha = every_value(tensor_type, 0)
        for constant in (True, False):
            inputs = [
                Operand(x, quantization=(0.05, 10)),
                Operand(alpha, constant=constant, quantization=(0.01, -3)),
            ]
            check_quantized(Op.PRELU, inputs, tensor_type, (0.03, 7))
    # small_cnn_int8's PRELU: a tiny alpha scale (its multiplier flushes to zero)
    x = every_value(T.INT8, 0).reshape(1, 4, 8, 8)
    alpha = np.arange(-4, 4, dtype=np.int8).reshape(1, 1, 8) * 30
    inputs = [
        Operand(x, quantization=(0.034072209149599075, -5)),
        Operand(alpha, constant=True, quantization=(3.937008052901092e-09, 0)),
    ]
    check_quantized(Op.PRELU, inputs, T.INT8, (0.01769723743200302, -128))
    # int16 with many distinct alpha values (computed per invoke rather than tabled)
    x16 = every_value(T.INT16, 0).reshape(-1, 64)
    alpha16 = np.arange(-32, 32, dtype=np.int8) * 3
    inputs = [Operand(x16, quantization=(1e-4, 7)), Operand(alpha16, constant=True, quantization=(0.01, 3))]
    check_quantized(Op.PRELU, inputs, T.INT16, (2e-4, -5))


def test_quantized_prelu_alpha_type_must_match():
    model, _ = SingleOpModel(
        Op.PRELU,
        [
            Operand(np.zeros([2, 4], np.int8), quantization=(0.1, 0)),
            Operand(np.ones([4], np.uint8), constant=True, quantization=(0.1, 0)),
        ],
        [T.INT8],
        output_quantization=[(0.1, 0)],
    ).build()
    with pytest.raises(RuntimeError, match=r"Type UINT8 \(alpha\) is unsupported by op PRELU"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- quantized SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION --------------------------------------------------------

ROWS = hnp.array_shapes(min_dims=1, max_dims=3, max_side=6).flatmap(
    lambda outer: st.sampled_from([1, 3, 10, 17, 40, 300]).map(lambda depth: (*outer, depth))
)
SOFTMAX_TYPES = [
    (T.INT8, T.INT8),
    (T.UINT8, T.UINT8),
    (T.INT8, T.INT16),
    (T.UINT8, T.INT16),
    (T.INT16, T.INT16),
]


def _draw_rows(data, tensor_type):
    x = data.draw(hnp.arrays(DTYPES[tensor_type], data.draw(ROWS)))
    if data.draw(st.booleans()):  # ties at the maximum, and rows of one value
        x.reshape(-1, x.shape[-1])[:, ::2] = x.reshape(-1)[0]
    return x


@pytest.mark.parametrize("reference", [False, True], ids=["default", "ref"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_quantized_softmax(reference, data):
    in_type, out_type = data.draw(st.sampled_from(SOFTMAX_TYPES))
    info = np.iinfo(DTYPES[in_type])
    x = _draw_rows(data, in_type)
    beta = data.draw(st.sampled_from([1.0, 0.5, 2.0, 0.1]))
    scale = float(np.exp(data.draw(st.floats(np.log(2e-3), np.log(0.3)))))
    in_q = (
        (scale / 128, 0)
        if in_type == T.INT16
        else (scale, data.draw(st.integers(int(info.min), int(info.max))))
    )
    if out_type == T.INT8:
        out_q = (1 / 256, -128)
    elif in_type == T.INT16:
        out_q = (1 / 32768, 0)
    elif out_type == T.INT16:
        out_q = (data.draw(st.sampled_from([1 / 32768, 1 / 65536, 3e-5])), data.draw(st.integers(-100, 100)))
    else:  # uint8 outputs: the optimized kernel ignores the zero point
        out_q = (data.draw(st.sampled_from([1 / 256, 1 / 255, 0.005])), data.draw(st.integers(0, 50)))
    check_quantized(Op.SOFTMAX, [Operand(x, quantization=in_q)], out_type, out_q, {"beta": beta}, reference)


@pytest.mark.parametrize("reference", [False, True], ids=["default", "ref"])
def test_int16_softmax_input_rescale_is_divided_in_double(reference):
    """TFLite divides input scale * beta (a float product) by 10 / 65535 in double; in float32 the
    multiplier's last bits differ, and this row's two small probabilities come out one higher."""
    x = np.array([[0, -2044, -2044]], np.int16)
    in_q = (float(np.exp(-2.0)) / 128, 0)
    check_quantized(
        Op.SOFTMAX, [Operand(x, quantization=in_q)], T.INT16, (1 / 32768, 0), {"beta": 0.5}, reference
    )


@pytest.mark.parametrize("reference", [False, True], ids=["default", "ref"])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_quantized_log_softmax(reference, data):
    tensor_type = data.draw(st.sampled_from([T.INT8, T.UINT8]))
    info = np.iinfo(DTYPES[tensor_type])
    x = _draw_rows(data, tensor_type)
    in_q = (
        float(np.exp(data.draw(st.floats(np.log(2e-3), np.log(0.5))))),
        data.draw(st.integers(int(info.min), int(info.max))),
    )
    out_q = (16 / 256, 127 if tensor_type == T.INT8 else 255)
    check_quantized(Op.LOG_SOFTMAX, [Operand(x, quantization=in_q)], tensor_type, out_q, reference=reference)


@pytest.mark.parametrize(
    "op, tensor_type, shape, in_q, out_q",
    [
        # the corpus layers: small_cnn_int8 and mobilenet_v2_int8 (int8), small_cnn_int16x8 (int16)
        (Op.SOFTMAX, T.INT8, (64, 10), (0.029211852699518204, -20), (1 / 256, -128)),
        (Op.SOFTMAX, T.INT8, (64, 10), (0.01645263470709324, 33), (1 / 256, -128)),
        (Op.SOFTMAX, T.INT16, (64, 10), (0.00013061138452030718, 0), (1 / 32768, 0)),
        # long rows (float sums in TFLite's order) and many rows (LOG_SOFTMAX's two log paths)
        (Op.SOFTMAX, T.INT8, (3, 5000), (0.01, 0), (1 / 256, -128)),
        (Op.SOFTMAX, T.UINT8, (3, 5000), (0.03, 0), (1 / 256, 0)),
        (Op.SOFTMAX, T.INT16, (3, 5000), (1e-4, 0), (1 / 32768, 0)),
        (Op.LOG_SOFTMAX, T.INT8, (3, 5000), (0.01, 0), (16 / 256, 127)),
        (Op.LOG_SOFTMAX, T.INT8, (2000, 7), (0.37, 0), (16 / 256, 127)),
        (Op.LOG_SOFTMAX, T.UINT8, (65, 7), (0.1, 0), (16 / 256, 255)),
        # probabilities past int32 (tiny output scales), huge log-probabilities
        (Op.SOFTMAX, T.INT8, (4, 10), (0.05, 0), (1e-12, 7)),
        (Op.LOG_SOFTMAX, T.INT8, (4, 10), (1e9, 0), (16 / 256, 127)),
    ],
    ids=str,
)
def test_quantized_softmax_cases(op, tensor_type, shape, in_q, out_q):
    x = np.random.default_rng(8).integers(-128, 128, shape)
    x = x.astype(DTYPES[tensor_type]) if tensor_type != T.INT16 else (x * 256).astype(np.int16)
    out_type = T.INT16 if out_q[0] == 1e-12 else tensor_type
    options = {"beta": 1.0} if op == Op.SOFTMAX else None
    check_quantized(op, [Operand(x, quantization=in_q)], out_type, out_q, options, version=2)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_quantized_l2_normalization(data):
    tensor_type = data.draw(st.sampled_from([T.INT8, T.UINT8]))
    info = np.iinfo(DTYPES[tensor_type])
    x = _draw_rows(data, tensor_type)
    in_q = (float(np.exp(data.draw(LOG_SCALES))), data.draw(st.integers(int(info.min), int(info.max))))
    out_q = (1 / 128, 0 if tensor_type == T.INT8 else 128)
    check_quantized(Op.L2_NORMALIZATION, [Operand(x, quantization=in_q)], tensor_type, out_q, L2_OPTIONS)


def test_quantized_empty_tensors():
    # pytflite alone: empty tensors are degenerate models for LiteRT
    for op, tensor_type, out_q, options in [
        (Op.TANH, T.INT8, (1 / 128, 0), None),
        (Op.SOFTMAX, T.INT8, (1 / 256, -128), {"beta": 1.0}),
        (Op.LOG_SOFTMAX, T.UINT8, (16 / 256, 255), None),
        (Op.L2_NORMALIZATION, T.INT8, (1 / 128, 0), L2_OPTIONS),
    ]:
        model, feeds = SingleOpModel(
            op,
            [Operand(np.zeros([2, 0], DTYPES[tensor_type]), quantization=(0.1, 0))],
            [tensor_type],
            options,
            output_quantization=[out_q],
        ).build()
        assert _pytflite_only(model, feeds)[0].shape == (2, 0)


@pytest.mark.parametrize(
    "op, tensor_type, in_q, out_type, out_q, options, message",
    [
        (Op.LOGISTIC, T.INT8, (0.1, 0), T.INT8, (1 / 128, -128), None, "output->params.scale == 1. / 256"),
        (Op.LOGISTIC, T.INT16, (2**-12, 0), T.INT16, (2**-14, 0), None, "output->params.scale == 1. / 32768"),
        (Op.TANH, T.INT16, (2**-12, 3), T.INT16, (2**-15, 0), None, "TANH int16 input zero point 3 != 0"),
        (
            Op.TANH,
            T.INT16,
            (2**-12, 0),
            T.INT16,
            (2**-14, 0),
            None,
            "TANH int16 output scale log2 -14 != -15",
        ),
        (Op.RELU, T.INT16, (0.1, 0), T.INT16, (0.1, 4), None, "RELU int16 output zero point 4 != 0"),
        (
            Op.LEAKY_RELU,
            T.INT16,
            (0.1, 2),
            T.INT16,
            (0.1, 0),
            {"alpha": 0.1},
            "int16 input zero point 2 != 0",
        ),
        (Op.HARD_SWISH, T.INT8, (0.1, 0), T.INT8, (1e-4, 0), None, "output_multiplier_exponent <= 0"),
        (
            Op.SOFTMAX,
            T.INT8,
            (0.1, 0),
            T.INT8,
            (1 / 256, 0),
            {"beta": 1.0},
            "SOFTMAX int8 output zero point 0 != -128",
        ),
        (Op.SOFTMAX, T.INT8, (0.1, 0), T.INT8, (1 / 128, -128), {"beta": 1.0}, "SOFTMAX int8 output scale"),
        (
            Op.SOFTMAX,
            T.INT8,
            (0.1, 0),
            T.UINT8,
            (1 / 256, 0),
            {"beta": 1.0},
            "supports INT8 and INT16 outputs, got UINT8",
        ),
        (
            Op.SOFTMAX,
            T.INT16,
            (0.1, 1),
            T.INT16,
            (1 / 32768, 0),
            {"beta": 1.0},
            "SOFTMAX int16 input zero point 1 != 0",
        ),
        (
            Op.LOG_SOFTMAX,
            T.INT8,
            (0.1, 0),
            T.INT8,
            (1 / 16, 0),
            None,
            "LOG_SOFTMAX output zero point 0 != 127",
        ),
        (Op.LOG_SOFTMAX, T.INT8, (0.1, 0), T.INT8, (1 / 8, 127), None, "LOG_SOFTMAX output scale"),
        (
            Op.L2_NORMALIZATION,
            T.UINT8,
            (0.1, 0),
            T.UINT8,
            (1 / 128, 0),
            L2_OPTIONS,
            "output zero point 0 != 128",
        ),
        (
            Op.ELU,
            T.UINT8,
            (0.1, 0),
            T.UINT8,
            (0.1, 0),
            None,
            r"Type UINT8 \(input\) is unsupported by op ELU",
        ),
        (Op.RELU_N1_TO_1, T.INT16, (0.1, 0), T.INT16, (0.1, 0), None, "Type INT16 .input. is unsupported"),
        (Op.TANH, T.INT8, (0.0, 0), T.INT8, (0.1, 0), None, "TANH input scale 0.0 is not a positive number"),
    ],
    ids=str,
)
def test_quantized_invalid_models_fail_in_prepare(op, tensor_type, in_q, out_type, out_q, options, message):
    model, _ = SingleOpModel(
        op,
        [Operand(np.zeros([2, 3], DTYPES[tensor_type]), quantization=in_q)],
        [out_type],
        options,
        output_quantization=[out_q],
    ).build()
    with pytest.raises(RuntimeError, match=message):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def _activation_layers(name: str):
    """(op, options, input/alpha quantizations, output quantization, input type) of each activation node."""
    interpreter = pytflite.Interpreter(model_path=str(CORPUS / f"{name}.tflite"), op_resolver=AnyOpResolver())
    details = {d["index"]: d for d in interpreter.get_tensor_details()}
    layers = []
    for node, registration in interpreter.subgraphs[0].nodes:
        op = Op(registration.builtin_code)
        source = details[node.inputs[0]]
        if op in CORPUS_OPS and source["dtype"] != np.float32:
            quantizations = [details[i]["quantization"] for i in node.inputs]
            layers.append(
                (op, node.builtin_data, quantizations, details[node.outputs[0]]["quantization"], source)
            )
    return layers


CORPUS_OPS = {Op.HARD_SWISH, Op.LEAKY_RELU, Op.LOGISTIC, Op.PRELU, Op.SOFTMAX, Op.TANH}


@pytest.mark.parametrize("name", ["small_cnn_int8", "small_cnn_int16x8", "mobilenet_v2_int8"])
def test_corpus_activation_layers(name):
    if not (CORPUS / f"{name}.tflite").exists():
        pytest.skip(f"corpus model {name} is missing")
    layers = _activation_layers(name)
    assert layers
    for op, options, quantizations, out_q, source in layers:
        tensor_type = {np.dtype(v): k for k, v in DTYPES.items()}[np.dtype(source["dtype"])]
        options = (
            {"alpha": options.alpha}
            if op == Op.LEAKY_RELU
            else {"beta": options.beta}
            if op == Op.SOFTMAX
            else None
        )
        x = every_value(tensor_type, 0)
        depth = source["shape"][-1]
        x = np.resize(x, (x.size // depth + 1) * depth).reshape(-1, depth)
        inputs = [Operand(x, quantization=quantizations[0])]
        if op == Op.PRELU:
            alpha = np.random.default_rng(9).integers(-128, 128, depth).astype(np.int8)
            inputs.append(Operand(alpha, constant=True, quantization=quantizations[1]))
        check_quantized(
            op, inputs, tensor_type, out_q, options, version=1 if op in (Op.PRELU, Op.HARD_SWISH) else 2
        )


@pytest.mark.parametrize("shape", [[], [3], [4], [7, 5], [3, 70001]])
def test_float_logistic_is_eigens_in_the_compiled_kernel(shape, kernels):
    """The compiled LOGISTIC is LiteRT's Eigen logistic (its own exp on the whole packets of 4, std::exp
    on the last size % 4 elements), bit for bit on x86 (the extremes included: NaN, infinities, the
    saturation points); the NumPy path's e / (1 + e) is within a few ulps of it."""
    size = int(np.prod(shape))
    x = np.resize(np.concatenate([EXTREMES, SATURATION_POINTS, WIDE[::97]]), size).astype(np.float32)
    model, feeds = SingleOpModel(Op.LOGISTIC, [Operand(x.reshape(shape))], [T.FLOAT32]).build()
    (expected,) = run(litert_interpreter(model), feeds)
    (ours,) = run(pytflite.Interpreter(model_content=model), feeds)
    if kernels == "compiled" and HostProfile.detect().x86:
        np.testing.assert_array_equal(ours, expected)
    else:
        np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("shape", [[], [3], [4], [7, 5], [3, 70001]])
def test_float_hard_swish_rounds_as_litert_x86_on_both_paths(shape, kernels):
    """HARD_SWISH's blocks of 4 and its scalar tail round as LiteRT's x86 build does, on the NumPy path
    and in the compiled one-pass loop alike (the extremes included: overflow near FLT_MAX, NaN, -0)."""
    size = int(np.prod(shape))
    x = np.resize(np.concatenate([EXTREMES, SATURATION_POINTS, WIDE[::97]]), size).astype(np.float32)
    model, feeds = SingleOpModel(Op.HARD_SWISH, [Operand(x.reshape(shape))], [T.FLOAT32]).build()
    (expected,) = run(litert_interpreter(model), feeds)
    (ours,) = run(pytflite.Interpreter(model_content=model), feeds)
    if HostProfile.detect().x86:
        np.testing.assert_array_equal(ours, expected)
    else:
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-7)

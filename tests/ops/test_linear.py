"""FULLY_CONNECTED and BATCH_MATMUL against LiteRT.

float32: batching and broadcasting, bias, keep_num_dims, adjoints, activations, sparse weights.
Quantized (uint8, int8, int16x8, int16x16; int4/int2 weights; per-tensor and per-channel): integers
identical to LiteRT's optimized kernels and, where they round differently, to BUILTIN_REF's.
Hybrid (float32 activations, int8/uint8/int4/int2 weights; symmetric and asymmetric input
quantization): within 1e-5, the per-row input quantization reproducing TFLite's rounding exactly.
And the errors TFLite reports.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.packed import pack_into
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from tests.oracle import (
    CORPUS,
    AnyOpResolver,
    assert_compiled_as_numpy,
    assert_matches,
    compare_with_litert,
    litert,
    litert_interpreter,
    requires_litert,
    run,
)
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


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
@example(  # a sum that cancels to 0.0013 from terms of about 1: 3e-4 relative off LiteRT's order
    leading=[],
    depth=29,
    units=1,
    bias="absent",
    keep_num_dims=False,
    activation="NONE",
    constant_weights=False,
    seed=400,
)
def test_fully_connected(leading, depth, units, bias, keep_num_dims, activation, constant_weights, seed):
    """Within float tolerance of the summed terms' magnitude (a sum in another order than LiteRT's)."""
    rng = np.random.default_rng(seed)
    shape = [*leading, depth] if leading or keep_num_dims else [depth]
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal([units, depth]).astype(np.float32)
    b = rng.standard_normal([units]).astype(np.float32)
    bias_operand = None if bias == "absent" else Operand(b, constant=bias == "const")
    options = {"fused_activation_function": activation, "keep_num_dims": keep_num_dims}
    terms = np.abs(x.reshape(-1, depth)) @ np.abs(w).T + (0 if bias == "absent" else np.abs(b))
    SingleOpModel(
        Op.FULLY_CONNECTED,
        [Operand(x), Operand(w, constant=constant_weights), bias_operand],
        [T.FLOAT32],
        options,
        version=5 if keep_num_dims else 1,
    ).check(scale=float(terms.max()))


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


# --- quantized FULLY_CONNECTED ------------------------------------------------------------------------

INT_RANGES = {T.INT8: (-128, 127), T.UINT8: (0, 255), T.INT16: (-32768, 32767)}
STORAGE = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.INT4: np.int8, T.INT2: np.int8}
REF = {"experimental_op_resolver_type": litert.OpResolverType.BUILTIN_REF} if litert else {}


def compare(model: bytes, feeds, rtol: float = 1e-5, **kwargs) -> np.ndarray:
    """Run in LiteRT and pytflite (with the same resolver type); integers must be identical."""
    theirs = run(litert_interpreter(model, **kwargs), feeds)[0]
    ours = run(pytflite.Interpreter(model_content=model, **kwargs), feeds)[0]
    assert_matches(ours, theirs, rtol)
    return ours


def fc_model(
    x, x_q, w, w_type, w_q, bias, bias_q, out_type, out_q, options, constant_w=True, constant_b=True
):
    """A FULLY_CONNECTED model; int4/int2 weights are given one value per element and packed here."""
    builder = ModelBuilder()
    inputs = [builder.add_input("x", tensor_type_for_dtype(x.dtype), x.shape, quantization=x_q)]
    feeds = [x]
    if w_type in (T.INT4, T.INT2):
        per_byte = 2 if w_type == T.INT4 else 4
        packed = np.zeros(-(-w.size // per_byte), np.int8)
        pack_into(w.reshape(-1).astype(np.int8), w_type, packed)
        inputs.append(builder.add_tensor("w", w_type, w.shape, data=packed, quantization=w_q))
    elif constant_w:
        inputs.append(builder.add_tensor("w", w_type, w.shape, data=w, quantization=w_q))
    else:
        inputs.append(builder.add_input("w", w_type, w.shape, quantization=w_q))
        feeds.append(w)
    if bias is not None:
        bias_type = tensor_type_for_dtype(bias.dtype)
        if constant_b:
            inputs.append(builder.add_tensor("b", bias_type, bias.shape, data=bias, quantization=bias_q))
        else:
            inputs.append(builder.add_input("b", bias_type, bias.shape, quantization=bias_q))
            feeds.append(bias)
    output = builder.add_tensor("out", out_type, [], quantization=out_q)
    builder.add_output(output)
    builder.add_operator(Op.FULLY_CONNECTED, inputs, [output], options, version=12)
    return builder.build(), feeds


COMBINATIONS = [  # input, weights, output
    (T.INT8, T.INT8, T.INT8),
    (T.UINT8, T.UINT8, T.UINT8),
    (T.UINT8, T.UINT8, T.INT16),
    (T.INT16, T.INT8, T.INT16),
    (T.INT8, T.INT4, T.INT8),
    (T.INT16, T.INT4, T.INT16),
    (T.INT8, T.INT2, T.INT8),
    (T.INT16, T.INT16, T.INT16),
]


@settings(max_examples=400, deadline=None)
@given(
    combination=st.sampled_from(COMBINATIONS),
    reference=st.booleans(),
    leading=st.lists(st.integers(1, 4), min_size=1, max_size=2),
    depth=st.integers(1, 40),
    units=st.integers(1, 12),
    per_channel=st.booleans(),
    small_values=st.booleans(),
    bias=st.sampled_from([None, "int32", "int64"]),
    activation=st.sampled_from(ACTIVATIONS),
    keep_num_dims=st.booleans(),
    log_rescale=st.floats(-12, 3),
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_quantized_fully_connected(
    combination,
    reference,
    leading,
    depth,
    units,
    per_channel,
    small_values,
    bias,
    activation,
    keep_num_dims,
    log_rescale,
    constant,
    seed,
):
    """Exact int32/int64 accumulators; LiteRT's optimized requantization rounds half up twice, its
    reference kernels round(double(acc) * scale) half away. Small values make ties (and so rounding
    differences) frequent; log_rescale spans saturated outputs and multipliers above one."""
    in_type, w_type, out_type = combination
    rng = np.random.default_rng(seed)
    low, high = INT_RANGES[in_type]
    in_zero = 0 if in_type == T.INT16 else int(rng.integers(low, high + 1))
    span = 5 if small_values else high
    x = np.clip(in_zero + rng.integers(-span, span + 1, size=(*leading, depth)), low, high)
    x = x.astype(STORAGE[in_type])
    w_low, w_high = {T.INT4: (-8, 7), T.INT2: (-2, 1)}.get(w_type, INT_RANGES.get(w_type))
    per_channel = per_channel and in_type != T.UINT8 and units > 1 and w_type != T.UINT8
    if w_type == T.UINT8:
        w_zero = int(rng.integers(w_low, w_high + 1))
    elif w_type == T.INT8 and not per_channel and rng.integers(0, 3) == 0:
        w_zero = int(rng.integers(-10, 11))  # asymmetric int8 weights: TFLite subtracts the zero point
    else:
        w_zero = 0
    w_span = 5 if small_values else w_high
    w = np.clip(w_zero + rng.integers(-w_span, w_span + 1, size=(units, depth)), w_low, w_high)
    w = w.astype(STORAGE[w_type])
    in_scale = float(np.float32(2 ** rng.uniform(-8, 0)))
    w_scales = np.float32(2 ** rng.uniform(-8, -2, size=units if per_channel else 1))
    w_q = AffineQuantization(w_scales, [0] * units, 0) if per_channel else (float(w_scales[0]), w_zero)
    typical = in_scale * float(w_scales.max()) * np.sqrt(depth) * span * w_span
    out_scale = float(np.float32(typical * 2.0**log_rescale / 8))
    out_low, out_high = INT_RANGES[out_type]
    out_zero = 0 if out_type == T.INT16 else int(rng.integers(out_low, out_high + 1))
    options = {"fused_activation_function": activation, "keep_num_dims": keep_num_dims}
    if bias == "int64" and in_type != T.INT16:
        bias = "int32"
    if reference and in_type == T.UINT8 and out_type == T.INT16:
        bias = "int32"  # TFLite's reference uint8 -> int16 kernel reads the bias unconditionally
    bias_values = bias_q = None
    if bias is not None:
        bias_values = rng.integers(-3000, 3000, size=units).astype(np.int32 if bias == "int32" else np.int64)
        bias_scales = np.float32(in_scale) * w_scales
        bias_q = AffineQuantization(bias_scales, [0] * bias_scales.size, 0)
        if in_type == T.INT16:
            # TFLite's int16 reference kernel reads the bias as int64 unless told it is int32
            options["quantized_bias_type"] = "INT32" if bias == "int32" else "INT64"
    model, feeds = fc_model(
        x,
        (in_scale, in_zero),
        w,
        w_type,
        w_q,
        bias_values,
        bias_q,
        out_type,
        (out_scale, out_zero),
        options,
        constant_w=constant,
        constant_b=not constant,
    )
    out = compare(model, feeds, **(REF if reference else {}))
    assert out.shape == ((*leading[:-1], leading[-1], units) if keep_num_dims else (np.prod(leading), units))


def test_quantized_rounding_differs_between_kernels():
    """x * 0.25: LiteRT's optimized kernel rounds twice, halves up (x / 2, then / 2: 1 -> 1, -3 -> 0,
    -2 -> -1 + 1 -> 0), its reference kernel once, half away from zero."""
    x = np.array([[2, -2, 6, -6, 1, -1, 3, -3]], np.int8).T.copy()  # batch 8, depth 1
    w = np.ones([1, 1], np.int8)
    model, feeds = fc_model(x, (1.0, 0), w, T.INT8, (0.25, 0), None, None, T.INT8, (1.0, 0), {})
    optimized = compare(model, feeds)
    reference = compare(model, feeds, **REF)
    np.testing.assert_array_equal(optimized.ravel(), [1, 0, 2, -1, 1, 0, 1, 0])
    np.testing.assert_array_equal(reference.ravel(), [1, -1, 2, -2, 0, 0, 1, -1])


def test_int16_accumulator_wraps_like_tflite():
    """Optimized 16x8 with an int32 bias sums in int32 (wrapping); an int64 bias selects an int64 sum."""
    depth = 600
    x = np.full([1, depth], 32767, np.int16)
    w = np.full([3, depth], 127, np.int8)
    for bias_type in (np.int32, np.int64):
        bias = np.array([0, 1000, -1000], bias_type)
        options = {"quantized_bias_type": "INT32" if bias_type == np.int32 else "INT64"}
        model, feeds = fc_model(
            x, (1.0, 0), w, T.INT8, (1.0, 0), bias, (1.0, 0), T.INT16, (2.0**20, 0), options
        )
        compare(model, feeds)


# --- hybrid FULLY_CONNECTED --------------------------------------------------------------------------

FLOAT_ACTIVATIONS = [*ACTIVATIONS, "TANH", "SIGN_BIT"]
# Values whose product with an inverse scale of 1 rounds differently in TFLite's NEON blocks of 8
# (truncate(p + 0.5) in float32: 0.49999997 + 0.5 rounds to 1) and in its scalar tail (std::round).
TIES = np.array([0.49999997, -0.49999997, 2.5, -2.5, 1.4999999, 0.5, -0.5, 126.5], np.float32)


def hybrid_input(rng, shape, crafted: bool, asymmetric: bool) -> np.ndarray:
    x = (rng.standard_normal(shape) * 2 ** rng.uniform(-3, 3)).astype(np.float32)
    flat = x.reshape(-1, shape[-1])
    if crafted:
        # inverse scale exactly 1: symmetric max |x| = 127; asymmetric range [-128, 127]
        flat[:, 0] = 127
        if asymmetric and shape[-1] > 1:
            flat[:, -1] = -128
        for row in flat:
            positions = rng.permutation(np.arange(1, shape[-1] - int(asymmetric)))[: TIES.size]
            row[positions] = TIES[: positions.size]
    if rng.integers(0, 4) == 0:
        flat[0] = 0  # an all-zero row: scale 1
    elif rng.integers(0, 4) == 0:
        flat[-1] = np.abs(flat[-1])  # asymmetric ranges are widened to include 0
    return x


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    weights_type=st.sampled_from([T.INT8, T.INT8, T.UINT8, T.INT4, T.INT2]),
    reference=st.booleans(),
    leading=st.lists(st.integers(1, 5), min_size=1, max_size=2),
    depth=st.integers(1, 40),
    units=st.integers(1, 12),
    per_channel=st.booleans(),
    asymmetric=st.booleans(),
    crafted=st.booleans(),
    bias=st.sampled_from([None, "const", "input"]),
    activation=st.sampled_from(FLOAT_ACTIVATIONS),
    keep_num_dims=st.booleans(),
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(  # one product of depth 1 that is -0.0 in float: TFLite's integer sum is 0, SIGN_BIT shows it
    weights_type=T.INT8,
    reference=False,
    leading=[1],
    depth=1,
    units=1,
    per_channel=False,
    asymmetric=False,
    crafted=False,
    bias=None,
    activation="SIGN_BIT",
    keep_num_dims=False,
    constant=False,
    seed=1,
)
def test_hybrid_fully_connected(
    weights_type,
    reference,
    leading,
    depth,
    units,
    per_channel,
    asymmetric,
    crafted,
    bias,
    activation,
    keep_num_dims,
    constant,
    seed,
    kernels,
):
    """float32 input quantized per row to int8 (TFLite's NEON rounding), exact integer products; with
    the NumPy kernels and with the compiled ones (the centered kernel's quantization and scaling back)."""
    rng = np.random.default_rng(seed)
    if weights_type == T.INT4 and not reference and units >= 4 and depth >= 32 and depth % 2 == 0:
        depth -= 1  # TFLite's 4-bit kernel: test_hybrid_four_bit_kernel
    x = hybrid_input(rng, (*leading, depth), crafted and depth > 2, asymmetric)
    w_low, w_high = {T.INT4: (-8, 7), T.INT2: (-2, 1), T.UINT8: (0, 255)}.get(weights_type, (-127, 127))
    w = rng.integers(w_low, w_high + 1, size=(units, depth)).astype(STORAGE[weights_type])
    per_channel = per_channel and units > 1
    scales = np.float32(2 ** rng.uniform(-8, -2, size=units if per_channel else 1))
    w_q = AffineQuantization(scales, [0] * scales.size, 0)
    bias_values = None if bias is None else rng.standard_normal(units).astype(np.float32)
    options = {
        "fused_activation_function": activation,
        "keep_num_dims": keep_num_dims,
        "asymmetric_quantize_inputs": asymmetric,
    }
    model, feeds = fc_model(
        x,
        None,
        w,
        weights_type,
        w_q,
        bias_values,
        None,
        T.FLOAT32,
        None,
        options,
        constant_w=constant,
        constant_b=bias == "const",
    )
    compare(model, feeds, **(REF if reference else {}))


@pytest.mark.parametrize("depth", [100, 2056, 4100])
@pytest.mark.parametrize("weights", ["max", "min", "random"])
def test_hybrid_x86_integer_quirks(depth, weights):
    """TFLite's SSE kernels: a weight of -128 times a negative input is summed with the wrong sign in
    16-value blocks, and asymmetric row sums wrap in int16 lanes (long rows of extreme weights)."""
    rng = np.random.default_rng(depth)
    x = (rng.standard_normal((3, depth)) + 0.3).astype(np.float32)
    w = {"max": np.full((4, depth), 127), "min": np.full((4, depth), -128)}.get(weights)
    w = (rng.integers(-128, 128, size=(4, depth)) if w is None else w).astype(np.int8)
    w[1, ::3] = -128
    for asymmetric in (False, True):
        options = {"asymmetric_quantize_inputs": asymmetric}
        for constant in (True, False):
            model, feeds = fc_model(
                x, None, w, T.INT8, (0.01, 0), None, None, T.FLOAT32, None, options, constant_w=constant
            )
            compare(model, feeds)


@pytest.mark.parametrize("op", [Op.FULLY_CONNECTED, Op.BATCH_MATMUL])
def test_hybrid_row_sums_are_computed_once(op):
    """With runtime weights and asymmetric inputs TFLite sums the weight rows on the first invoke after
    prepare only, and keeps using those sums: so does pytflite."""
    rng = np.random.default_rng(5)
    x_shape, w_shape = ((3, 20), (4, 20)) if op == Op.FULLY_CONNECTED else ((2, 3, 20), (2, 20, 4))
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, x_shape)
    w = builder.add_input("w", T.INT8, w_shape, quantization=(0.01, 0))
    output = builder.add_tensor("out", T.FLOAT32, [])
    builder.add_output(output)
    builder.add_operator(op, [x, w], [output], {"asymmetric_quantize_inputs": True}, version=4)
    model = builder.build()
    interpreters = [litert_interpreter(model), pytflite.Interpreter(model_content=model)]
    for interpreter in interpreters:
        interpreter.allocate_tensors()
    for _ in range(3):
        feeds = [
            (rng.standard_normal(x_shape) + 0.5).astype(np.float32),
            rng.integers(-127, 128, size=w_shape).astype(np.int8),
        ]
        outputs = []
        for interpreter in interpreters:
            for detail, value in zip(interpreter.get_input_details(), feeds):
                interpreter.set_tensor(detail["index"], value)
            interpreter.invoke()
            outputs.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
        assert_matches(outputs[1], outputs[0])


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_hybrid_four_bit_kernel(asymmetric, per_channel):
    """Constant int4 weights (>= 4 units, even depth >= 32): TFLite's 4-bit kernel quantizes the input
    symmetrically whatever asymmetric_quantize_inputs says, with std::round and no clamp."""
    rng = np.random.default_rng(int(asymmetric) * 2 + int(per_channel))
    x = hybrid_input(rng, (5, 64), crafted=True, asymmetric=False)
    w = rng.integers(-7, 8, size=(6, 64)).astype(np.int8)
    scales = np.float32(2 ** rng.uniform(-8, -2, size=6 if per_channel else 1))
    bias = rng.standard_normal(6).astype(np.float32)
    options = {"asymmetric_quantize_inputs": asymmetric}
    args = (x, None, w, T.INT4, AffineQuantization(scales, [0] * scales.size, 0), bias, None, T.FLOAT32)
    model, feeds = fc_model(*args, None, options)
    compare(model, feeds)
    compare(model, feeds, **REF)
    w[0, 0] = -8  # stored as v + 7 in four bits by TFLite: it returns garbage
    model, _ = fc_model(*args, None, options)
    with pytest.raises(RuntimeError, match="INT4 weights holding -8 are not supported"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- sparse FULLY_CONNECTED weights -----------------------------------------------------------------


def sparse_model(
    x,
    w,
    formats,
    block_size=None,
    w_type=T.FLOAT32,
    w_q=None,
    x_q=None,
    out_type=T.FLOAT32,
    out_q=None,
    options=None,
    order=None,
):
    builder = ModelBuilder()
    source = builder.add_input("x", tensor_type_for_dtype(x.dtype), x.shape, quantization=x_q)
    blocks = {"block_map": [1], "block_size": [block_size]} if block_size else {}
    weights = builder.add_sparse_constant(
        "w", w, formats, traversal_order=order, tensor_type=w_type, quantization=w_q, **blocks
    )
    output = builder.add_tensor("out", out_type, [], quantization=out_q)
    builder.add_output(output)
    builder.add_operator(Op.FULLY_CONNECTED, [source, weights, -1], [output], options or {}, version=8)
    return builder.build()


def sparse_weights(rng, shape, block, dtype=np.float32):
    w = rng.standard_normal(shape) if dtype == np.float32 else rng.integers(-127, 128, size=shape)
    keep = rng.random((shape[0], shape[1] // block)) < 0.4
    return (w * np.repeat(keep, block, axis=1)).astype(dtype)


@pytest.mark.parametrize("block", [None, 4])
def test_sparse_float_weights(block):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 16)).astype(np.float32)
    w = sparse_weights(rng, (5, 16), block or 1)
    model = sparse_model(x, w, ["DENSE", "SPARSE_CSR"], block, options={"fused_activation_function": "RELU"})
    out = compare(model, [x])
    np.testing.assert_allclose(out, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "formats, block, order",
    [
        (["DENSE", "SPARSE_CSR"], 2, None),
        (["DENSE", "SPARSE_CSR"], 16, None),
        (["SPARSE_CSR", "DENSE"], None, None),
        (["DENSE", "SPARSE_CSR"], None, [1, 0]),
    ],
)
def test_sparse_float_weights_other_layouts(formats, block, order):
    """TFLite's optimized kernel takes only random or 1x4 sparsity (and fails at invoke with this
    message; pytflite in prepare); its reference kernel densifies any layout."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 16)).astype(np.float32)
    model = sparse_model(x, sparse_weights(rng, (4, 16), block or 1), formats, block, order=order)
    with pytest.raises(RuntimeError, match=r"^Unsupported sparse fully-connected weight format\."):
        run(pytflite.Interpreter(model_content=model), [x])
    with pytest.raises(RuntimeError, match=r"Unsupported sparse fully-connected weight format\."):
        run(litert_interpreter(model), [x])
    compare(model, [x], **REF)


@pytest.mark.parametrize("per_channel", [False, True])
def test_sparse_int8_weights(per_channel):
    """1x16 blocks, requantized by TFLite's scalar fixed-point multiply (half away from zero)."""
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, size=(3, 48)).astype(np.int8)
    w = sparse_weights(rng, (6, 48), 16, np.int8)
    w_q = (
        AffineQuantization(np.float32(2 ** rng.uniform(-9, -6, 6)), [0] * 6, 0) if per_channel else (0.004, 0)
    )
    for out_scale in (0.05, 0.3, 2.0):
        model = sparse_model(
            x, w, ["DENSE", "SPARSE_CSR"], 16, T.INT8, w_q, (0.05, 3), T.INT8, (out_scale, -2)
        )
        compare(model, [x])
        compare(model, [x], **REF)
    for block, message in ((4, "Unsupported sparse"), (None, "Unsupported sparse")):
        model = sparse_model(x, w, ["DENSE", "SPARSE_CSR"], block, T.INT8, w_q, (0.05, 3), T.INT8, (1.0, 0))
        with pytest.raises(RuntimeError, match=message):
            pytflite.Interpreter(model_content=model).allocate_tensors()
    model = sparse_model(x, w, ["SPARSE_CSR", "DENSE"], None, T.INT8, w_q, (0.05, 3), T.INT8, (1.0, 0))
    with pytest.raises(RuntimeError, match="Invalid quantized and sparse fully-connected format"):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    model = sparse_model(x, w, ["DENSE", "SPARSE_CSR"], 16, T.INT8, (0.004, 1), (0.05, 3), T.INT8, (1.0, 0))
    with pytest.raises(RuntimeError, match="supports symmetric weight quantization only"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("asymmetric", [False, True])
def test_sparse_hybrid_weights(asymmetric):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 32)).astype(np.float32)
    w = sparse_weights(rng, (5, 32), 16, np.int8)
    options = {"asymmetric_quantize_inputs": asymmetric}
    compare(sparse_model(x, w, ["DENSE", "SPARSE_CSR"], 16, T.INT8, (0.01, 0), options=options), [x])
    # TFLite's ledger kernel reads any other layout as 1x16 blocks, giving garbage: refused here
    model = sparse_model(x, w, ["DENSE", "SPARSE_CSR"], None, T.INT8, (0.01, 0), options=options)
    with pytest.raises(RuntimeError, match="Unsupported sparse fully-connected weight format"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- FULLY_CONNECTED errors -------------------------------------------------------------------------


def test_fully_connected_rejections():
    rng = np.random.default_rng(4)
    x8 = rng.integers(-128, 128, size=(2, 4)).astype(np.int8)
    w8 = rng.integers(-127, 128, size=(3, 4)).astype(np.int8)

    def refused(model, message):
        with pytest.raises(RuntimeError, match=message):
            pytflite.Interpreter(model_content=model).allocate_tensors()
        with pytest.raises(RuntimeError, match="failed to prepare"):
            litert_interpreter(model).allocate_tensors()

    # the bias scale must be close to input scale * weights scale
    bias = np.zeros(3, np.int32)
    model, _ = fc_model(x8, (0.5, 0), w8, T.INT8, (0.5, 0), bias, (1.0, 0), T.INT8, (0.1, 0), {})
    refused(model, r"scale_diff / output_scale <= 0\.02 was not true\.")
    # per-channel weights need int8/int16 activations
    w_q = AffineQuantization([0.1, 0.2, 0.3], [0, 0, 0], 0)
    model, _ = fc_model(
        x8.view(np.uint8), (0.5, 0), w8.view(np.uint8), T.UINT8, w_q, None, None, T.UINT8, (1.0, 0), {}
    )
    refused(model, r"input->type == kTfLiteInt8 \|\| input->type == kTfLiteInt16 was not true\.")
    # int16 activations need zero points of 0
    x16 = x8.astype(np.int16)
    model, _ = fc_model(x16, (0.5, 3), w8, T.INT8, (0.5, 0), None, None, T.INT16, (1.0, 0), {})
    refused(model, "int16 input zero point 3 != 0")
    # only clamping activations outside the hybrid kernel
    model, _ = fc_model(
        x8,
        (0.5, 0),
        w8,
        T.INT8,
        (0.5, 0),
        None,
        None,
        T.INT8,
        (1.0, 0),
        {"fused_activation_function": "TANH"},
    )
    refused(model, r"params->activation == kTfLiteActNone")
    xf = x8.astype(np.float32)
    model, _ = fc_model(
        xf, None, xf[:3], T.FLOAT32, None, None, None, T.FLOAT32, None, {"fused_activation_function": "TANH"}
    )
    refused(model, r"params->activation == kTfLiteActNone")
    # the shuffled uint8 weights format
    model, _ = fc_model(
        x8.view(np.uint8),
        (0.5, 0),
        w8.view(np.uint8),
        T.UINT8,
        (0.5, 0),
        None,
        None,
        T.INT16,
        (1.0, 0),
        {"weights_format": "SHUFFLED4x16INT8"},
    )
    with pytest.raises(RuntimeError, match="weights format SHUFFLED4x16INT8 is not supported"):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    # input / weights / output combinations TFLite's kernels would read as other types
    model, _ = fc_model(x8, (0.5, 0), w8, T.INT8, (0.5, 0), None, None, T.INT16, (1.0, 0), {})
    with pytest.raises(RuntimeError, match="INT8 input, INT8 weights and INT16 output is not supported"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_corpus_fully_connected_layers():
    """Every FULLY_CONNECTED of the quantized and hybrid corpus models as a single-op model, fed the
    activations LiteRT computed for it in the whole model."""
    names = [
        "mobilenet_v2_int8",
        "small_cnn_int8",
        "small_cnn_int16x8",
        "mobilenet_v2_dynamic",
        "transformer_dynamic",
    ]
    if not all((CORPUS / f"{name}.tflite").exists() for name in names):
        pytest.skip("public corpus not found")
    checked = 0
    for name in names:
        path = CORPUS / f"{name}.tflite"
        stored = np.load(CORPUS / f"{name}.npz")
        whole = litert_interpreter(path, experimental_preserve_all_tensors=True)
        whole.allocate_tensors()
        for i, detail in enumerate(whole.get_input_details()):
            whole.set_tensor(detail["index"], stored[f"input_{i}"])
        whole.invoke()
        details = {d["index"]: d for d in whole.get_tensor_details()}
        ours = pytflite.Interpreter(model_path=str(path), op_resolver=AnyOpResolver())
        for op in ours._get_ops_details():
            if op["op_name"] != "FULLY_CONNECTED":
                continue
            options = ours.subgraphs[0].nodes[op["index"]][0].builtin_data
            builder = ModelBuilder()
            x = whole.get_tensor(op["inputs"][0])
            inputs = [
                builder.add_input(
                    "x",
                    tensor_type_for_dtype(x.dtype),
                    x.shape,
                    quantization=per_tensor_quantization(details[op["inputs"][0]]),
                )
            ]
            for k, index in enumerate(op["inputs"][1:]):
                if index < 0:
                    inputs.append(-1)
                    continue
                value = whole.get_tensor(index)
                inputs.append(
                    builder.add_tensor(
                        f"c{k}",
                        tensor_type_for_dtype(value.dtype),
                        value.shape,
                        data=value,
                        quantization=per_tensor_quantization(details[index]),
                    )
                )
            out_detail = details[op["outputs"][0]]
            output = builder.add_tensor(
                "out",
                tensor_type_for_dtype(out_detail["dtype"]),
                [],
                quantization=per_tensor_quantization(out_detail),
            )
            builder.add_output(output)
            builder.add_operator(Op.FULLY_CONNECTED, inputs, [output], options, version=12)
            mine = compare(builder.build(), [x])
            assert_matches(mine.reshape(out_detail["shape"]), whole.get_tensor(op["outputs"][0]))
            checked += 1
    assert checked == 13


def per_tensor_quantization(detail):
    parameters = detail["quantization_parameters"]
    if not len(parameters["scales"]):
        return None
    return AffineQuantization(
        parameters["scales"], parameters["zero_points"], parameters["quantized_dimension"]
    )


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
        ([3, 4], [4, 5], (T.INT8, T.FLOAT32), "BATCH_MATMUL of INT8 lhs and FLOAT32 rhs is not supported"),
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


# --- quantized and hybrid BATCH_MATMUL ----------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["int8", "int8_to_int32", "int16", "int16x8"]),
    shapes=matmul_shapes(),
    adj_x=st.booleans(),
    adj_y=st.booleans(),
    log_rescale=st.floats(-6, 3),
    constant_rhs=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_quantized_batch_matmul(kind, shapes, adj_x, adj_y, log_rescale, constant_rhs, seed):
    """TFLite's reference kernel: int8 requantizes an int32 sum with the double-rounding multiply,
    int16 an int64 sum with the int64 multiply; int8 -> int32 gives raw products of stored values."""
    rng = np.random.default_rng(seed)
    lhs_shape, rhs_shape = shapes
    depth = lhs_shape[-1]
    if adj_x:
        lhs_shape[-1], lhs_shape[-2] = lhs_shape[-2], lhs_shape[-1]
    if adj_y:
        rhs_shape[-1], rhs_shape[-2] = rhs_shape[-2], rhs_shape[-1]
    lhs_type = T.INT8 if kind.startswith("int8") else T.INT16
    rhs_type = T.INT16 if kind == "int16" else T.INT8
    lhs_zero = int(rng.integers(-20, 20)) if lhs_type == T.INT8 else 0
    rhs_zero = int(rng.integers(-20, 20)) if lhs_type == T.INT8 else 0
    lhs = rng.integers(*INT_RANGES[lhs_type], size=lhs_shape, endpoint=True).astype(STORAGE[lhs_type])
    rhs = rng.integers(*INT_RANGES[rhs_type], size=rhs_shape, endpoint=True).astype(STORAGE[rhs_type])
    lhs_scale, rhs_scale = 2 ** rng.uniform(-8, 0), 2 ** rng.uniform(-8, 0)
    typical = (
        lhs_scale * rhs_scale * INT_RANGES[lhs_type][1] * INT_RANGES[rhs_type][1] * np.sqrt(max(depth, 1))
    )
    out_type = {"int8": T.INT8, "int8_to_int32": T.INT32}.get(kind, T.INT16)
    out_zero = int(rng.integers(-128, 128)) if out_type == T.INT8 else 0
    out_scale = typical * 2.0**log_rescale / INT_RANGES.get(out_type, (0, 1))[1]
    operands = [
        Operand(lhs, quantization=(lhs_scale, lhs_zero)),
        Operand(rhs, constant=constant_rhs, quantization=(rhs_scale, rhs_zero)),
    ]
    SingleOpModel(
        Op.BATCH_MATMUL,
        operands,
        [out_type],
        {"adj_x": adj_x, "adj_y": adj_y},
        version=4,
        output_quantization=[(out_scale, out_zero)],
    ).check()


@settings(max_examples=200, deadline=None)
@given(
    shapes=matmul_shapes(),
    adj_x=st.booleans(),
    adj_y=st.booleans(),
    per_channel=st.booleans(),
    asymmetric=st.booleans(),
    crafted=st.booleans(),
    constant_rhs=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_hybrid_batch_matmul(shapes, adj_x, adj_y, per_channel, asymmetric, crafted, constant_rhs, seed):
    """float32 lhs rows quantized to int8 as in FULLY_CONNECTED; with several batch dimensions TFLite
    looks the row scales up with its own strides, reproduced."""
    rng = np.random.default_rng(seed)
    lhs_shape, rhs_shape = shapes
    if asymmetric and len(rhs_shape) == 5 and rhs_shape[0] > 1:
        rhs_shape[0] = 1  # TFLite reads unset row sums there (see ops/linear/batch_matmul.py)
    if adj_x:
        lhs_shape[-1], lhs_shape[-2] = lhs_shape[-2], lhs_shape[-1]
    if adj_y:
        rhs_shape[-1], rhs_shape[-2] = rhs_shape[-2], rhs_shape[-1]
    depth = lhs_shape[-2] if adj_x else lhs_shape[-1]
    if depth == 0:
        return
    lhs = hybrid_input(rng, lhs_shape, crafted and depth > 2 and not adj_x, asymmetric)
    rhs = rng.integers(-127, 128, size=rhs_shape).astype(np.int8)
    columns_axis = len(rhs_shape) - 2 if adj_y else len(rhs_shape) - 1
    per_channel = per_channel and rhs_shape[columns_axis] > 1
    scales = np.float32(2 ** rng.uniform(-8, -2, size=rhs_shape[columns_axis] if per_channel else 1))
    quantization = AffineQuantization(scales, [0] * scales.size, columns_axis if per_channel else 0)
    SingleOpModel(
        Op.BATCH_MATMUL,
        [Operand(lhs), Operand(rhs, constant=constant_rhs, quantization=quantization)],
        [T.FLOAT32],
        {"adj_x": adj_x, "adj_y": adj_y, "asymmetric_quantize_inputs": asymmetric},
        version=4,
    ).check()


def _centered_hybrid_model(rng, batch: int, depth: int, units: int):
    """A hybrid FULLY_CONNECTED the centered kernel takes (asymmetric inputs, int8 weights without -128,
    per-channel scales, a bias, RELU): (model, feeds)."""
    x = rng.standard_normal((batch, depth)).astype(np.float32)
    w = rng.integers(-127, 128, size=(units, depth)).astype(np.int8)
    w_q = AffineQuantization(np.float32(2 ** rng.uniform(-8, -2, size=units)), [0] * units, 0)
    bias = rng.standard_normal(units).astype(np.float32)
    options = {"fused_activation_function": "RELU", "asymmetric_quantize_inputs": True}
    return fc_model(x, None, w, T.INT8, w_q, bias, None, T.FLOAT32, None, options)


def _centered_kernel(interpreter, compiled: bool):
    """The node's kernel, asserted to be the compiled centered one exactly when `compiled`."""
    from pytflite.ops.linear.hybrid import CompiledCentered

    kernel = interpreter.subgraphs[0].nodes[0][0].user_data.kernel
    assert isinstance(kernel, CompiledCentered) == compiled
    return kernel


def test_compiled_hybrid_kernel_hands_refused_rows_to_numpy():
    """The centered hybrid kernel with compiled quantization: a row the compiled quantizer refuses (a
    NaN, an infinity) takes the NumPy kernel, for that invoke only; outputs equal the NumPy kernels'."""
    rng = np.random.default_rng(21)
    model, _ = _centered_hybrid_model(rng, 4, 24, 10)
    feeds = [rng.standard_normal((4, 24)).astype(np.float32) for _ in range(4)]
    feeds[1][2, 5], feeds[2][0, 0] = np.nan, -np.inf
    assert_compiled_as_numpy(model, [[feed] for feed in feeds], _centered_kernel)


def test_compiled_hybrid_kernel_of_long_rows(kernels):
    """The centered hybrid kernel on rows of 1100: its exact sums pass float32's integers and are kept in
    float64, scaled back in float64 and rounded once, as LiteRT's (walked and written steps)."""
    model, feeds = _centered_hybrid_model(np.random.default_rng(1100), 3, 1100, 5)
    compare_with_litert(model, feeds)
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    kernel = _centered_kernel(interpreter, kernels == "compiled")
    if kernels == "compiled":
        assert kernel.acc.dtype == np.float64


def test_float_fully_connected_of_one_element_sums_from_zero():
    """A one-row product of depth 1 is still a sum from zero in LiteRT: a -0.0 product (0 times a
    negative weight) gives +0.0 there, and here (np.dot would keep the -0.0 of a single pair)."""
    x = np.zeros((1, 1), np.float32)
    w = np.array([[-2.0], [3.0]], np.float32)
    model, feeds = SingleOpModel(
        Op.FULLY_CONNECTED, [Operand(x), Operand(w, constant=True)], [T.FLOAT32]
    ).build()
    (theirs,) = run(litert_interpreter(model), feeds)
    ours = pytflite.Interpreter(model_content=model)
    for _ in range(3):  # (walked, then written step lists)
        (out,) = run(ours, feeds)
        np.testing.assert_array_equal(np.signbit(out), np.signbit(theirs))

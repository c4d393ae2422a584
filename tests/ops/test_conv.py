"""Convolutions against LiteRT: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and CONV_3D_TRANSPOSE
— strides, dilation, padding, groups / depth multiplier, bias, activations, constant and runtime filters,
runtime output shapes, resizing, and the errors TFLite reports; then the quantized (uint8, int8,
int16x8: bit-exact) and hybrid (float32 input, int8 filter) variants of the first three, with LiteRT's
optimized kernels and its reference ones (BUILTIN_REF)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.core.step_program import Direct
from pytflite.model.builder import ModelBuilder
from tests.ops.refusals import fails_like_litert
from tests.oracle import (
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


def _valid_out(size: int, kernel: int, stride: int, dilation: int) -> int:
    """TFLite's VALID output size, C++ division included (negative: the op fails to prepare)."""
    numerator = size + stride - ((kernel - 1) * dilation + 1)
    return -((-numerator) // stride) if numerator < 0 else numerator // stride


def _fails_to_prepare(model: bytes, op: str, message: str = "") -> None:
    with pytest.raises(RuntimeError, match=f"{message}.*Node number 0 \\({op}\\) failed to prepare"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def _kernel_state(model: bytes):
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    subgraph = interpreter.subgraphs[0]
    return subgraph.nodes[subgraph.execution_plan[0]][0].user_data


# --- CONV_2D ---------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    groups=st.sampled_from([1, 1, 2, 3]),
    in_per_group=st.integers(1, 12),
    out_per_group=st.integers(1, 3),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    constant_filter=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv2d(
    batch,
    size,
    kernel,
    groups,
    in_per_group,
    out_per_group,
    strides,
    dilation,
    padding,
    activation,
    constant_filter,
    seed,
):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([batch, *size, groups * in_per_group]).astype(np.float32)
    w = rng.standard_normal([groups * out_per_group, *kernel, in_per_group]).astype(np.float32)
    b = rng.standard_normal([groups * out_per_group]).astype(np.float32)
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "fused_activation_function": activation,
    }
    operands = [Operand(x), Operand(w, constant=constant_filter), Operand(b, constant=True)]
    model = SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], options, version=6 if groups > 1 else 2)
    if padding == "VALID" and any(
        _valid_out(size[i], kernel[i], strides[i], dilation[i]) < 0 for i in range(2)
    ):
        _fails_to_prepare(model.build()[0], "CONV_2D", "too small for a filter")
        return
    # each output sums kernel taps * in_per_group products and the bias: its rounding error scales with
    # them, not with an output they cancelled to near 0
    terms = float(np.abs(x).max() * np.abs(w).max() * kernel[0] * kernel[1] * in_per_group)
    model.check(scale=terms + float(np.abs(b).max()))


@pytest.mark.parametrize(
    "shape, kernel, stride, padding, out_channels, mode, staged",
    [
        ((2, 5, 6, 16), 1, 1, "SAME", 5, "direct", False),  # 1x1 stride 1: the input is the matmul operand
        ((1, 7, 6, 16), 1, 2, "VALID", 5, "im2col", False),
        ((1, 9, 9, 3), 3, 2, "SAME", 5, "im2col_t", True),  # short window rows: [K, pixels] im2col
        ((1, 8, 8, 3), 3, 2, "SAME", 5, "im2col_t", True),  # padding after the input only
        ((1, 8, 7, 24), 3, 1, "SAME", 5, "im2col", True),
        ((1, 4, 4, 8), 4, 1, "VALID", 5, "im2col", False),  # one window covers the input
        ((1, 4, 5, 3), 4, 1, "VALID", 5, "im2col_t", False),
        ((1, 8, 10, 4), 3, 2, "VALID", 5, "im2col_t", False),  # the last row and column go unread
        # 1x1, with many more outputs than inputs: copied to im2col to fold the bias into the product
        ((1, 48, 48, 2), 1, 1, "SAME", 24, "im2col_t", False),
        ((1, 40, 40, 16), 1, 1, "VALID", 48, "im2col", False),
    ],
)
def test_conv2d_paths(shape, kernel, stride, padding, out_channels, mode, staged):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal([out_channels, kernel, kernel, shape[3]]).astype(np.float32)
    b = rng.standard_normal([out_channels]).astype(np.float32)
    options = {
        "padding": padding,
        "stride_h": stride,
        "stride_w": stride,
        "fused_activation_function": "RELU",
    }
    model = SingleOpModel(
        Op.CONV_2D, [Operand(x), Operand(w, constant=True), Operand(b, constant=True)], [T.FLOAT32], options
    )
    model.check()
    state = _kernel_state(model.build()[0])
    assert (state.mode, state.staging is not None) == (mode, staged)
    assert state.folded == (mode != "direct")  # a constant bias with a constant filter rides in the product


def test_conv2d_runtime_bias_is_added_after_the_product():
    rng = np.random.default_rng(7)
    x = rng.standard_normal([1, 48, 48, 2]).astype(np.float32)
    w = rng.standard_normal([24, 1, 1, 2]).astype(np.float32)
    b = rng.standard_normal([24]).astype(np.float32)
    model = SingleOpModel(
        Op.CONV_2D,
        [Operand(x), Operand(w, constant=True), Operand(b)],
        [T.FLOAT32],
        {"stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU6"},
    )
    model.check()
    state = _kernel_state(model.build()[0])
    assert (state.mode, state.folded) == ("direct", False)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), rank=st.integers(1, 3), batch=st.integers(1, 2), channels=st.integers(1, 4))
def test_staging_writes_every_element(data, rank, batch, channels):
    """A staged scratch is the input padded with the pad value (and cropped), whatever it held before;
    its borders are a few strided views, not one per row."""
    from pytflite.ops.windows import make_staging, padded_copies

    sizes = data.draw(st.tuples(*[st.integers(1, 6)] * rank))
    extents = data.draw(st.tuples(*[st.integers(1, 9)] * rank))
    pads = data.draw(st.tuples(*[st.integers(0, 3)] * rank))
    repeat = data.draw(st.integers(1, 3))
    shape = (batch, *sizes, channels)
    x = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
    staged = (batch, *extents, channels * repeat)
    staging = make_staging(staged, padded_copies(shape, extents, pads), 4, repeat)
    scratch = np.full(staged, np.nan, np.float32)
    staging.fill(x, scratch, -7.0)
    inner = np.repeat(x, repeat, axis=-1)
    inner = inner[(slice(None), *(slice(0, max(e - p, 0)) for e, p in zip(extents, pads)))]
    expected = np.full(staged, -7.0, np.float32)
    expected[(slice(None), *(slice(p, p + n) for p, n in zip(pads, inner.shape[1:-1])))] = inner
    np.testing.assert_array_equal(scratch, expected)
    assert len(staging.borders) <= 2 * rank


# --- DEPTHWISE_CONV_2D --------------------------------------------------------------------------------


def _depthwise_options(padding, strides, dilation, multiplier, activation) -> dict:
    return {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "depth_multiplier": multiplier,
        "fused_activation_function": activation,
    }


@settings(max_examples=150, deadline=None)
@given(
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    channels=st.integers(1, 5),
    multiplier=st.sampled_from([1, 1, 2, 3]),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    constant_filter=st.booleans(),
    constant_bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(  # a sum that cancels (see the scale below)
    batch=1,
    size=(4, 8),
    kernel=(2, 4),
    channels=1,
    multiplier=3,
    strides=(1, 2),
    dilation=(2, 2),
    padding="VALID",
    activation="RELU",
    constant_filter=False,
    constant_bias=False,
    seed=10257,
)
def test_depthwise_conv2d(
    batch,
    size,
    kernel,
    channels,
    multiplier,
    strides,
    dilation,
    padding,
    activation,
    constant_filter,
    constant_bias,
    seed,
):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([batch, *size, channels]).astype(np.float32)
    w = rng.standard_normal([1, *kernel, channels * multiplier]).astype(np.float32)
    b = rng.standard_normal([channels * multiplier]).astype(np.float32)
    options = _depthwise_options(padding, strides, dilation, multiplier, activation)
    operands = [Operand(x), Operand(w, constant=constant_filter), Operand(b, constant=constant_bias)]
    model = SingleOpModel(Op.DEPTHWISE_CONV_2D, operands, [T.FLOAT32], options, version=2)
    if padding == "VALID" and any(
        _valid_out(size[i], kernel[i], strides[i], dilation[i]) < 0 for i in range(2)
    ):
        _fails_to_prepare(model.build()[0], "DEPTHWISE_CONV_2D", "too small for a filter")
        return
    # each output sums kernel taps products and the bias: its rounding error scales with them, not with
    # an output they cancelled to near 0 (seed 10257 cancels to 0.0083 from terms of about 1)
    terms = float(np.abs(x).max() * np.abs(w).max() * kernel[0] * kernel[1])
    model.check(scale=terms + float(np.abs(b).max()))


@pytest.mark.parametrize(
    ("op", "input_shape", "filter_shape", "condition"),
    [
        (Op.CONV_2D, [1, 0, 4, 3], [2, 3, 3, 3], "input->dims->data[1] > 0"),
        (Op.CONV_2D, [1, 4, 0, 3], [2, 3, 3, 3], "input->dims->data[2] > 0"),
        (Op.CONV_2D, [1, 4, 4, 0], [2, 3, 3, 0], "input_channel > 0"),
        (Op.CONV_2D, [1, 4, 4, 3], [2, 0, 3, 3], "filter->dims->data[1] > 0"),
        (Op.CONV_2D, [1, 4, 4, 3], [2, 3, 0, 3], "filter->dims->data[2] > 0"),
        (Op.CONV_2D, [1, 4, 4, 3], [0, 3, 3, 3], "filter->dims->data[0] > 0"),
        (Op.CONV_2D, [1, 4, 4, 3], [2, 3, 3, 0], "filter_input_channel > 0"),
        (Op.DEPTHWISE_CONV_2D, [1, 0, 4, 3], [1, 3, 3, 3], "SizeOfDimension(input, 1) > 0"),
        (Op.DEPTHWISE_CONV_2D, [1, 4, 0, 3], [1, 3, 3, 3], "SizeOfDimension(input, 2) > 0"),
        (Op.DEPTHWISE_CONV_2D, [1, 4, 4, 0], [1, 3, 3, 0], "SizeOfDimension(input, 3) > 0"),
        (Op.DEPTHWISE_CONV_2D, [1, 4, 4, 3], [1, 0, 3, 3], "SizeOfDimension(filter, 1) > 0"),
        (Op.DEPTHWISE_CONV_2D, [1, 4, 4, 3], [1, 3, 0, 3], "SizeOfDimension(filter, 2) > 0"),
        (Op.DEPTHWISE_CONV_2D, [1, 4, 4, 3], [1, 3, 3, 0], "SizeOfDimension(filter, 3) > 0"),
    ],
)
def test_empty_convolution_operands_are_refused_in_tflite_words(op, input_shape, filter_shape, condition):
    """LiteRT's texts (after its file:line) and its run-together join with the node's report."""
    depthwise = op == Op.DEPTHWISE_CONV_2D
    options = {"stride_h": 1, "stride_w": 1, "dilation_h_factor": 1, "dilation_w_factor": 1}
    if depthwise:
        options["depth_multiplier"] = 1
    operands = [
        Operand(np.zeros(input_shape, np.float32)),
        Operand(np.ones(filter_shape, np.float32), constant=True),
        Operand(np.zeros(filter_shape[3 if depthwise else 0], np.float32), constant=True),
    ]
    model = SingleOpModel(op, operands, [T.FLOAT32], options, version=2)
    fails_like_litert(model, f"{condition} was not true.Node number 0 ({op.name}) failed to prepare.")


def test_depthwise_conv2d_larger_image():
    rng = np.random.default_rng(3)
    for stride in (1, 2):
        x = rng.standard_normal([1, 20, 23, 24]).astype(np.float32)
        w = rng.standard_normal([1, 3, 3, 24]).astype(np.float32)
        b = rng.standard_normal([24]).astype(np.float32)
        options = {
            "padding": "SAME",
            "stride_h": stride,
            "stride_w": stride,
            "fused_activation_function": "RELU6",
        }
        SingleOpModel(
            Op.DEPTHWISE_CONV_2D,
            [Operand(x), Operand(w, constant=True), Operand(b, constant=True)],
            [T.FLOAT32],
            options,
        ).check()


@pytest.mark.parametrize(
    "shape, kernel, strides, dilation, padding, multiplier, staged",
    [
        ((1, 9, 10, 4), (3, 3), (1, 1), (1, 1), "VALID", 1, None),  # the input itself is the padded layout
        ((2, 9, 10, 4), (3, 2), (2, 1), (2, 1), "SAME", 1, (2, 13, 11, 4)),  # padded, cropped
        ((1, 9, 10, 4), (3, 3), (1, 1), (1, 1), "VALID", 3, (1, 9, 10, 12)),  # channels repeated
        ((2, 11, 12, 5), (3, 3), (2, 2), (1, 1), "SAME", 1, (2, 13, 3, 6, 5)),  # columns gathered per tap
        ((1, 11, 12, 5), (2, 3), (1, 3), (2, 2), "SAME", 2, (1, 13, 3, 4, 10)),
        ((1, 11, 12, 5), (2, 3), (3, 2), (1, 2), "VALID", 1, (1, 11, 3, 4, 5)),
    ],
)
def test_depthwise_conv2d_layouts(shape, kernel, strides, dilation, padding, multiplier, staged):
    rng = np.random.default_rng(8)
    channels = shape[3] * multiplier
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal([1, *kernel, channels]).astype(np.float32)
    b = rng.standard_normal([channels]).astype(np.float32)
    options = _depthwise_options(padding, strides, dilation, multiplier, "RELU6")
    model = SingleOpModel(
        Op.DEPTHWISE_CONV_2D,
        [Operand(x), Operand(w, constant=True), Operand(b, constant=True)],
        [T.FLOAT32],
        options,
    )
    model.check()
    staging = _kernel_state(model.build()[0]).staging
    assert (staging and staging.shape) == staged


def test_depthwise_conv2d_without_bias_adds_nothing():
    # TFLite's Prepare accepts two inputs, but LiteRT's optimized float kernel segfaults on a missing
    # bias; so compare with LiteRT running the same op with a zero bias.
    rng = np.random.default_rng(4)
    x = rng.standard_normal([1, 6, 7, 4]).astype(np.float32)
    w = rng.standard_normal([1, 3, 2, 8]).astype(np.float32)
    options = {"padding": "SAME", "stride_h": 2, "stride_w": 1, "depth_multiplier": 2}
    (reference,) = SingleOpModel(
        Op.DEPTHWISE_CONV_2D,
        [Operand(x), Operand(w, constant=True), Operand(np.zeros([8], np.float32), constant=True)],
        [T.FLOAT32],
        options,
    ).check()
    model, _ = SingleOpModel(
        Op.DEPTHWISE_CONV_2D, [Operand(x), Operand(w, constant=True)], [T.FLOAT32], options
    ).build()
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    assert_matches(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), reference)


@pytest.mark.parametrize(
    "filter_shape, bias, message",
    [
        ((2, 3, 3, 4), True, "DEPTHWISE_CONV_2D filter dimension 0 2 != 1"),
        ((1, 3, 3, 6), True, "filter channels % input channels 2 != 0"),
        ((1, 3, 3, 4), None, "Tensor at index 2 was optional but was expected"),
    ],
)
def test_depthwise_conv2d_errors(filter_shape, bias, message):
    x = np.zeros([1, 5, 5, 4], np.float32)
    w = np.zeros(filter_shape, np.float32)
    third = Operand(np.zeros([filter_shape[3]], np.float32), constant=True) if bias else None
    model, _ = SingleOpModel(
        Op.DEPTHWISE_CONV_2D,
        [Operand(x), Operand(w, constant=True), third],
        [T.FLOAT32],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1},
    ).build()
    _fails_to_prepare(model, "DEPTHWISE_CONV_2D", message)


# --- TRANSPOSE_CONV ------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    channels=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    extra=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    bias=st.sampled_from(["const", "input", "none", "absent"]),
    activation=st.sampled_from(ACTIVATIONS),
    constant_shape=st.booleans(),
    constant_filter=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_transpose_conv(
    batch,
    size,
    kernel,
    channels,
    strides,
    padding,
    extra,
    bias,
    activation,
    constant_shape,
    constant_filter,
    seed,
):
    rng = np.random.default_rng(seed)
    in_channels, out_channels = channels
    # an output size whose forward convolution gives back `size`: SAME has stride choices, VALID too
    out_size = []
    for i in range(2):
        if padding == "SAME":
            out_size.append((size[i] - 1) * strides[i] + 1 + extra[i] % strides[i])
        else:
            out_size.append((size[i] - 1) * strides[i] + kernel[i] + extra[i] % strides[i])
    x = rng.standard_normal([batch, *size, in_channels]).astype(np.float32)
    w = rng.standard_normal([out_channels, *kernel, in_channels]).astype(np.float32)
    b = rng.standard_normal([out_channels]).astype(np.float32)
    shape = np.array([batch, *out_size, out_channels], np.int32)
    operands = [Operand(shape, constant=constant_shape), Operand(w, constant=constant_filter), Operand(x)]
    if bias != "none":
        operands.append(None if bias == "absent" else Operand(b, constant=bias == "const"))
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "fused_activation_function": activation,
    }
    # each output sums up to kernel taps * in_channels products (and the bias): its rounding error
    # scales with them, not with an output RELU may have left tiny
    terms = float(np.abs(x).max() * np.abs(w).max() * kernel[0] * kernel[1] * in_channels)
    model = SingleOpModel(Op.TRANSPOSE_CONV, operands, [T.FLOAT32], options, version=4)
    (out,) = model.check(scale=terms + float(np.abs(b).max()))
    assert out.shape == tuple(shape)


@pytest.mark.parametrize(
    "in_size, out_size, channels, bias, mode",
    [
        ((16, 16), (32, 32), (96, 8), True, "gather"),  # each output sums its rows: two NumPy calls
        ((7, 6), (14, 12), (3, 5), False, "gather"),
        ((64, 64), (128, 128), (4, 8), True, "scatter"),  # too many gathered rows: a slice add per tap
    ],
)
def test_transpose_conv_paths(in_size, out_size, channels, bias, mode):
    rng = np.random.default_rng(9)
    x = rng.standard_normal([1, *in_size, channels[0]]).astype(np.float32)
    w = rng.standard_normal([channels[1], 3, 3, channels[0]]).astype(np.float32)
    shape = np.array([1, *out_size, channels[1]], np.int32)
    operands = [Operand(shape, constant=True), Operand(w, constant=True), Operand(x)]
    if bias:
        operands.append(Operand(rng.standard_normal([channels[1]]).astype(np.float32), constant=True))
    options = {"padding": "SAME", "stride_h": 2, "stride_w": 2, "fused_activation_function": "RELU"}
    model = SingleOpModel(Op.TRANSPOSE_CONV, operands, [T.FLOAT32], options, version=4)
    model.check()
    assert _kernel_state(model.build()[0]).plan.mode == mode


def test_transpose_conv_runtime_shape_follows_each_invoke():
    rng = np.random.default_rng(5)
    builder = ModelBuilder()
    shape_in = builder.add_input("shape", T.INT32, [4])
    x_in = builder.add_input("x", T.FLOAT32, [1, 3, 3, 2])
    w = builder.add_tensor(
        "w", T.FLOAT32, [4, 3, 3, 2], data=rng.standard_normal([4, 3, 3, 2]).astype(np.float32)
    )
    out = builder.add_tensor("out", T.FLOAT32, [1])
    builder.add_output(out)
    builder.add_operator(
        Op.TRANSPOSE_CONV, [shape_in, w, x_in], [out], {"padding": "SAME", "stride_h": 2, "stride_w": 2}
    )
    model = builder.build()
    x = rng.standard_normal([1, 3, 3, 2]).astype(np.float32)
    for height, width in ((6, 6), (5, 6), (6, 5)):  # SAME with stride 2: 5 and 6 both give 3
        (result,) = compare_with_litert(model, [np.array([1, height, width, 4], np.int32), x])
        assert result.shape == (1, height, width, 4)
    assert _kernel_state(model).plan is None  # a runtime shape: planned at invoke, where it scatters


@pytest.mark.parametrize(
    "shape, message",
    [
        ([1, 9, 6, 4], "TRANSPOSE_CONV input size computed from the output shape \\(dimension 1\\) 5 != 3"),
        ([1, 6, 6, 3], "output channels vs filter output channels 3 != 4"),
        ([2, 6, 6, 4], "output batch vs input batch 2 != 1"),
        ([1, 6, 6], "TRANSPOSE_CONV output shape size 3 != 4"),
    ],
)
def test_transpose_conv_bad_output_shape(shape, message):
    model, _ = SingleOpModel(
        Op.TRANSPOSE_CONV,
        [
            Operand(np.array(shape, np.int32), constant=True),
            Operand(np.zeros([4, 3, 3, 2], np.float32), constant=True),
            Operand(np.zeros([1, 3, 3, 2], np.float32)),
        ],
        [T.FLOAT32],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2},
    ).build()
    _fails_to_prepare(model, "TRANSPOSE_CONV", message)


# --- CONV_3D and CONV_3D_TRANSPOSE ---------------------------------------------------------------------


def _options_3d(padding, strides, dilation, activation):
    return {
        "padding": padding,
        "stride_d": strides[0],
        "stride_h": strides[1],
        "stride_w": strides[2],
        "dilation_d_factor": dilation[0],
        "dilation_h_factor": dilation[1],
        "dilation_w_factor": dilation[2],
        "fused_activation_function": activation,
    }


triples = st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 2))


@settings(max_examples=150, deadline=None)
@given(
    size=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    channels=st.tuples(st.integers(1, 10), st.integers(1, 4)),
    strides=triples,
    dilation=triples,
    padding=st.sampled_from(["SAME", "VALID"]),
    bias=st.sampled_from(["const", "input", "none"]),
    activation=st.sampled_from(ACTIVATIONS),
    seed=st.integers(0, 2**16),
)
def test_conv3d(size, kernel, channels, strides, dilation, padding, bias, activation, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([1, *size, channels[0]]).astype(np.float32)
    w = rng.standard_normal([*kernel, *channels]).astype(np.float32)
    b = rng.standard_normal([channels[1]]).astype(np.float32)
    operands = [Operand(x), Operand(w, constant=True)]
    if bias != "none":
        operands.append(Operand(b, constant=bias == "const"))
    options = _options_3d(padding, strides, dilation, activation)
    model = SingleOpModel(Op.CONV_3D, operands, [T.FLOAT32], options)
    if padding == "VALID" and any(
        _valid_out(size[i], kernel[i], strides[i], dilation[i]) < 0 for i in range(3)
    ):
        _fails_to_prepare(model.build()[0], "CONV_3D", "too small for a filter")
        return
    # each output sums up to kernel taps * in_channels products: its rounding error scales with them,
    # not with an output that cancelled to almost nothing
    terms = float(np.abs(x).max() * np.abs(w).max() * np.prod(kernel) * channels[0])
    model.check(scale=terms + float(np.abs(b).max()))  # a VALID output of size 0 is empty, not an error


@settings(max_examples=150, deadline=None)
@given(
    size=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)),
    channels=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    strides=triples,
    dilation=triples,
    padding=st.sampled_from(["SAME", "VALID"]),
    extra=st.tuples(st.integers(0, 1), st.integers(0, 1), st.integers(0, 1)),
    bias=st.sampled_from(["const", "none"]),
    activation=st.sampled_from(ACTIVATIONS),
    constant_shape=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv3d_transpose(
    size, kernel, channels, strides, dilation, padding, extra, bias, activation, constant_shape, seed
):
    rng = np.random.default_rng(seed)
    in_channels, out_channels = channels
    out_size = []
    for i in range(3):
        effective = (kernel[i] - 1) * dilation[i] + 1
        base = (size[i] - 1) * strides[i] + (1 if padding == "SAME" else effective)
        out_size.append(base + extra[i] % strides[i])
    x = rng.standard_normal([1, *size, in_channels]).astype(np.float32)
    w = rng.standard_normal([*kernel, out_channels, in_channels]).astype(np.float32)
    shape = np.array([1, *out_size, out_channels], np.int32)
    operands = [Operand(shape, constant=constant_shape), Operand(w, constant=True), Operand(x)]
    if bias == "const":
        operands.append(Operand(rng.standard_normal([out_channels]).astype(np.float32), constant=True))
    options = _options_3d(padding, strides, dilation, activation)
    (out,) = SingleOpModel(Op.CONV_3D_TRANSPOSE, operands, [T.FLOAT32], options).check()
    assert out.shape == tuple(shape)


def test_conv3d_channel_mismatch():
    model, _ = SingleOpModel(
        Op.CONV_3D,
        [
            Operand(np.zeros([1, 3, 3, 3, 2], np.float32)),
            Operand(np.zeros([1, 1, 1, 3, 4], np.float32), constant=True),
        ],
        [T.FLOAT32],
        _options_3d("SAME", (1, 1, 1), (1, 1, 1), "NONE"),
    ).build()
    _fails_to_prepare(model, "CONV_3D", "input channels vs filter input channels 2 != 3")


# --- resizing: the scratch temporaries follow the input shape ------------------------------------------


def test_resizing_the_batch_replans_every_kernel():
    rng = np.random.default_rng(6)
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 8, 8, 3], shape_signature=[-1, 8, 8, 3])

    def const(name, shape):
        return builder.add_tensor(name, T.FLOAT32, shape, data=rng.standard_normal(shape).astype(np.float32))

    conv = builder.add_tensor("conv", T.FLOAT32, [1])
    builder.add_operator(
        Op.CONV_2D,
        [x, const("w1", [6, 3, 3, 3]), const("b1", [6])],
        [conv],
        {"padding": "SAME", "stride_h": 2, "stride_w": 2},
    )
    depthwise = builder.add_tensor("depthwise", T.FLOAT32, [1])
    builder.add_operator(
        Op.DEPTHWISE_CONV_2D,
        [conv, const("w2", [1, 3, 3, 12]), const("b2", [12])],
        [depthwise],
        {"padding": "SAME", "stride_h": 1, "stride_w": 2, "depth_multiplier": 2},
    )
    pointwise = builder.add_tensor("pointwise", T.FLOAT32, [1])
    builder.add_operator(
        Op.CONV_2D,
        [depthwise, const("w3", [5, 1, 1, 12]), const("b3", [5])],
        [pointwise],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU6"},
    )
    builder.add_output(pointwise)
    model = builder.build()
    ours, theirs = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    for batch in (1, 3, 2):
        feed = rng.standard_normal([batch, 8, 8, 3]).astype(np.float32)
        for interpreter in (ours, theirs):
            interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], feed.shape)
        assert_matches(run(ours, [feed])[0], run(theirs, [feed])[0])


# --- quantized (uint8, int8, int16x8) and hybrid convolutions ----------------------------------------------
#
# Integer outputs must equal LiteRT's bit for bit, hybrid (float32) ones within 1e-5. Each model runs
# several invokes with different inputs in one interpreter of each kind (the hybrid kernels keep state
# between invokes), with LiteRT's optimized kernels and, where the reference kernels differ, BUILTIN_REF.

RESOLVERS = ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")
INTEGER = {T.UINT8: np.uint8, T.INT8: np.int8, T.INT16: np.int16}


def _compare_invokes(model: bytes, feed_sets, resolver: str = RESOLVERS[0], rtol: float = 1e-5) -> None:
    """One interpreter of each kind, allocated once, invoked once per feed set; outputs must match."""
    kind = getattr(litert.OpResolverType, resolver)
    interpreters = [
        pytflite.Interpreter(model_content=model, experimental_op_resolver_type=kind),
        litert_interpreter(model, experimental_op_resolver_type=kind),
    ]
    for interpreter in interpreters:
        interpreter.allocate_tensors()
    for step, feeds in enumerate(feed_sets):
        results = []
        for interpreter in interpreters:
            for detail, value in zip(interpreter.get_input_details(), feeds):
                interpreter.set_tensor(detail["index"], value)
            interpreter.invoke()
            results.append([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()])
        for i, (ours, theirs) in enumerate(zip(*results)):
            assert_matches(ours, theirs, rtol, what=f"invoke {step} output {i} ({resolver})")


def _affine(scales, axis: int = 0, zero_points=None) -> AffineQuantization:
    scales = np.asarray(scales, np.float32).reshape(-1)
    zero_points = np.zeros(scales.size, np.int64) if zero_points is None else zero_points
    return AffineQuantization(scales, zero_points, axis)


def _integers(rng, tensor_type: T, shape, low=None) -> np.ndarray:
    info = np.iinfo(INTEGER[tensor_type])
    return rng.integers(info.min if low is None else low, int(info.max) + 1, shape).astype(
        INTEGER[tensor_type]
    )


def _activation_params(rng, tensor_type: T) -> tuple[float, int]:
    """A random scale and zero point for an activation of this type (int16: zero point 0)."""
    scale = float(np.float32(10.0 ** rng.uniform(-3, 0)))
    if tensor_type == T.INT16:
        return scale, 0
    info = np.iinfo(INTEGER[tensor_type])
    return scale, int(rng.integers(info.min, int(info.max) + 1))


def _filter_and_bias(
    rng, in_type: T, out_channels: int, filter_shape, axis: int, in_scale: float, per_channel
):
    """A quantized filter (uint8: per tensor with a zero point; else int8, symmetric) and its bias
    (int32, int16x8: int64) quantized at input scale * filter scale."""
    if in_type == T.UINT8:
        w = _integers(rng, T.UINT8, filter_shape)
        w_scale = np.float32(10.0 ** rng.uniform(-3, -1))
        w_quant = (float(w_scale), int(rng.integers(0, 256)))
        b_quant = (float(np.float32(in_scale) * w_scale), 0)
        scales = np.array([w_scale])
    else:
        w = _integers(rng, T.INT8, filter_shape, low=-127)
        scales = (10.0 ** rng.uniform(-3, -1, out_channels if per_channel else 1)).astype(np.float32)
        w_quant = _affine(scales, axis)
        b_quant = _affine(np.float32(in_scale) * scales)
    bias_type = np.int64 if in_type == T.INT16 else np.int32
    b = rng.integers(-(2**15), 2**15, out_channels).astype(bias_type)
    return w, w_quant, b, b_quant, scales


def _output_scale(in_scale: float, w_scales, depth: int, in_type: T, squeeze: float) -> float:
    """An output scale that keeps most outputs in range; `squeeze` > 1 makes them saturate."""
    typical = in_scale * float(np.max(w_scales)) * np.sqrt(depth) * (64 if in_type != T.INT16 else 8000)
    return float(np.float32(typical / (100 if in_type != T.INT16 else 20000) / squeeze))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    in_type=st.sampled_from([T.INT8, T.INT8, T.INT16, T.UINT8]),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    in_per_group=st.integers(1, 20),
    out_channels=st.integers(1, 20),
    groups=st.sampled_from([1, 1, 1, 2]),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    per_channel=st.booleans(),
    squeeze=st.sampled_from([1.0, 1.0, 8.0]),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_quantized_conv2d(
    in_type,
    batch,
    size,
    kernel,
    in_per_group,
    out_channels,
    groups,
    strides,
    dilation,
    padding,
    activation,
    per_channel,
    squeeze,
    resolver,
    seed,
    kernels,
):
    """uint8 (per-tensor filter with a zero point), int8 and int16x8 (int64 bias), per-tensor or
    per-channel filter scales, grouped (int8), every padding, stride, dilation and fused activation."""
    if in_type != T.INT8:
        groups = 1
    if in_type == T.UINT8:
        per_channel = False
    rng = np.random.default_rng(seed)
    if any(_valid_out(size[i], kernel[i], strides[i], dilation[i]) <= 0 for i in range(2)):
        padding = "SAME"
    out_channels = groups * max(1, out_channels // groups)
    in_scale, in_zero = _activation_params(rng, in_type)
    filter_shape = (out_channels, *kernel, in_per_group)
    w, w_quant, b, b_quant, scales = _filter_and_bias(
        rng, in_type, out_channels, filter_shape, 0, in_scale, per_channel
    )
    depth = kernel[0] * kernel[1] * in_per_group
    out_scale, out_zero = _activation_params(rng, in_type)
    out_scale = _output_scale(in_scale, scales, depth, in_type, squeeze)
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "fused_activation_function": activation,
    }
    x_shape = (batch, *size, groups * in_per_group)
    operands = [
        Operand(_integers(rng, in_type, x_shape), quantization=(in_scale, in_zero)),
        Operand(w, constant=True, quantization=w_quant),
        Operand(b, constant=True, quantization=b_quant),
    ]
    model, _ = SingleOpModel(
        Op.CONV_2D, operands, [in_type], options, version=4, output_quantization=[(out_scale, out_zero)]
    ).build()
    feeds = [[_integers(rng, in_type, x_shape)] for _ in range(2)]
    _compare_invokes(model, feeds, resolver)


@pytest.mark.parametrize(
    ("in_type", "in_channels", "out_channels"), [(T.INT8, 300, 24), (T.UINT8, 200, 16), (T.INT8, 520, 8)]
)
def test_quantized_conv2d_deep_windows_sum_exactly_in_float32_ranges(in_type, in_channels, out_channels):
    """A window of thousands of values with the largest inputs and weights, all of one sign: its sums
    leave float32's exact integers, so the product is float32 products over ranges of the depth summed
    in float64 (ConvState.depth_chunks). The accumulators are the exact integer sums, and the outputs
    LiteRT's, bit for bit."""
    rng = np.random.default_rng(in_channels)
    dtype = INTEGER[in_type]
    in_scale, in_zero = 0.05, (-3 if in_type == T.INT8 else 130)
    filter_shape = (out_channels, 3, 3, in_channels)
    w, w_quant, b, b_quant, scales = _filter_and_bias(
        rng, in_type, out_channels, filter_shape, 0, in_scale, True
    )
    w = np.full(filter_shape, np.iinfo(dtype).max, dtype)
    w[0, 0, 0, :7] = np.iinfo(dtype).max - 1  # an odd partial sum, which float32 would round above 2**24
    out_scale = _output_scale(in_scale, scales, 9 * in_channels, in_type, 1.0)
    x_shape = (1, 5, 4, in_channels)
    operands = [
        Operand(_integers(rng, in_type, x_shape), quantization=(in_scale, in_zero)),
        Operand(w, constant=True, quantization=w_quant),
        Operand(b, constant=True, quantization=b_quant),
    ]
    options = {"padding": "VALID", "stride_h": 1, "stride_w": 1, "fused_activation_function": "NONE"}
    model, _ = SingleOpModel(
        Op.CONV_2D, operands, [in_type], options, version=4, output_quantization=[(out_scale, 0)]
    ).build()
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    subgraph = interpreter.subgraphs[0]
    state = subgraph.nodes[0][0].user_data
    assert len(state.depth_chunks) >= 2
    x = np.full(x_shape, np.iinfo(dtype).max, dtype)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    offset = 0 if in_type == T.INT8 else w_quant[1]
    windows = np.lib.stride_tricks.sliding_window_view(x[0].astype(np.int64), (3, 3), axis=(0, 1))
    exact = np.einsum("hwcij,oijc->hwo", windows, w.astype(np.int64) - offset).reshape(-1, out_channels)
    np.testing.assert_array_equal(subgraph.tensors[state.acc].data, exact)
    assert exact.max() >= 1 << 24
    _compare_invokes(model, [[x], [_integers(rng, in_type, x_shape)]])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    in_type=st.sampled_from([T.INT8, T.INT8, T.INT16, T.UINT8]),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    channels=st.integers(1, 19),
    multiplier=st.sampled_from([1, 1, 2, 3]),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    bias=st.sampled_from([True, True, False]),
    squeeze=st.sampled_from([1.0, 1.0, 8.0]),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_quantized_depthwise_conv2d(
    in_type,
    batch,
    size,
    kernel,
    channels,
    multiplier,
    strides,
    dilation,
    padding,
    activation,
    bias,
    squeeze,
    resolver,
    seed,
    kernels,
):
    """Depth multipliers, channel counts off the NEON blocks of 8, every padding/stride/dilation; no
    bias only with BUILTIN_REF (LiteRT's optimized kernel crashes without one)."""
    if not bias:
        resolver = "BUILTIN_REF"
    rng = np.random.default_rng(seed)
    if any(_valid_out(size[i], kernel[i], strides[i], dilation[i]) <= 0 for i in range(2)):
        padding = "SAME"
    out_channels = channels * multiplier
    in_scale, in_zero = _activation_params(rng, in_type)
    w, w_quant, b, b_quant, scales = _filter_and_bias(
        rng, in_type, out_channels, (1, *kernel, out_channels), 3, in_scale, in_type != T.UINT8
    )
    out_scale = _output_scale(in_scale, scales, kernel[0] * kernel[1], in_type, squeeze)
    _, out_zero = _activation_params(rng, in_type)
    options = _depthwise_options(padding, strides, dilation, multiplier, activation)
    x_shape = (batch, *size, channels)
    operands = [
        Operand(_integers(rng, in_type, x_shape), quantization=(in_scale, in_zero)),
        Operand(w, constant=True, quantization=w_quant),
    ]
    if bias:
        operands.append(Operand(b, constant=True, quantization=b_quant))
    model, _ = SingleOpModel(
        Op.DEPTHWISE_CONV_2D,
        operands,
        [in_type],
        options,
        version=5,
        output_quantization=[(out_scale, out_zero)],
    ).build()
    _compare_invokes(model, [[_integers(rng, in_type, x_shape)] for _ in range(2)], resolver)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["int8", "int8", "int16_int64", "int16_int32", "uint8"]),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    channels=st.tuples(st.integers(1, 6), st.integers(1, 19)),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    bias=st.booleans(),
    activation=st.sampled_from(ACTIVATIONS),
    squeeze=st.sampled_from([1.0, 1.0, 8.0]),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_quantized_transpose_conv(
    kind, batch, size, kernel, channels, strides, padding, bias, activation, squeeze, resolver, seed
):
    """uint8, int8 and int16x8 with an int64 bias or an int32 one (quantized_bias_type INT32)."""
    in_type = {"int8": T.INT8, "uint8": T.UINT8}.get(kind, T.INT16)
    rng = np.random.default_rng(seed)
    in_channels, out_channels = channels
    out_size = [(size[i] - 1) * strides[i] + (1 if padding == "SAME" else kernel[i]) for i in range(2)]
    in_scale, in_zero = _activation_params(rng, in_type)
    w, w_quant, b, b_quant, scales = _filter_and_bias(
        rng, in_type, out_channels, (out_channels, *kernel, in_channels), 0, in_scale, in_type != T.UINT8
    )
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "fused_activation_function": activation,
    }
    if kind == "int16_int32":
        b = b.astype(np.int32)
        options["quantized_bias_type"] = T.INT32
    elif kind == "int16_int64":
        options["quantized_bias_type"] = T.INT64
    out_scale = _output_scale(in_scale, scales, kernel[0] * kernel[1] * in_channels, in_type, squeeze)
    _, out_zero = _activation_params(rng, in_type)
    x_shape = (batch, *size, in_channels)
    operands = [
        Operand(np.array([batch, *out_size, out_channels], np.int32), constant=True),
        Operand(w, constant=True, quantization=w_quant),
        Operand(_integers(rng, in_type, x_shape), quantization=(in_scale, in_zero)),
    ]
    if bias:
        operands.append(Operand(b, constant=True, quantization=b_quant))
    model, _ = SingleOpModel(
        Op.TRANSPOSE_CONV,
        operands,
        [in_type],
        options,
        version=5,
        output_quantization=[(out_scale, out_zero)],
    ).build()
    _compare_invokes(model, [[_integers(rng, in_type, x_shape)] for _ in range(2)], resolver)


def _hybrid_input(rng, shape) -> np.ndarray:
    """Floats of mixed magnitudes and signs (some batches all positive: zero point -128), with values on
    quantization half-steps, where the NEON block rounding and the scalar tail differ."""
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(10.0 ** rng.uniform(-2, 1))
    if rng.random() < 0.3:
        x = np.abs(x)
    flat = x.reshape(shape[0], -1)
    extent = np.abs(flat).max(axis=1, keepdims=True)
    steps = rng.integers(-127, 128, flat.shape) + 0.5
    halves = (steps * extent / 127).astype(np.float32)
    pick = rng.random(flat.shape) < 0.2
    flat[pick] = halves[pick]
    return x


def _hybrid_filter(rng, shape, minus_128: bool) -> np.ndarray:
    w = rng.integers(-127, 128, shape).astype(np.int8)
    if minus_128:
        w[rng.random(shape) < 0.15] = -128
    return w


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 3),
    size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    in_per_group=st.integers(1, 40),
    out_channels=st.integers(1, 13),
    groups=st.sampled_from([1, 1, 1, 2]),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    scales=st.sampled_from(["uniform", "per_channel"]),
    minus_128=st.booleans(),
    constant_filter=st.sampled_from([True, True, False]),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_hybrid_conv2d(
    batch,
    size,
    kernel,
    in_per_group,
    out_channels,
    groups,
    strides,
    dilation,
    padding,
    activation,
    scales,
    minus_128,
    constant_filter,
    resolver,
    seed,
    kernels,
):
    """float32 input, int8 filter: per-tensor (equal per-channel scales: symmetric input
    quantization, SSE dot product when O % 4 != 0, weights of -128 included) or distinct per-channel
    scales / groups (asymmetric input, zero point times the row sums). Window depths off the 16-value
    blocks; three invokes with different inputs; a runtime filter changes between invokes (TFLite
    keeps the row sums of the first)."""
    rng = np.random.default_rng(seed)
    if any(_valid_out(size[i], kernel[i], strides[i], dilation[i]) <= 0 for i in range(2)):
        padding = "SAME"
    out_channels = groups * max(1, out_channels // groups)
    filter_shape = (out_channels, *kernel, in_per_group)
    w = _hybrid_filter(rng, filter_shape, minus_128)
    if scales == "uniform":  # TFLite wants one scale per output channel, even when they are equal
        quantization = _affine(np.full(out_channels, 10.0 ** rng.uniform(-3, -1)))
    else:
        quantization = _affine(10.0 ** rng.uniform(-3, -1, out_channels))
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "fused_activation_function": activation,
    }
    x_shape = (batch, *size, groups * in_per_group)
    b = rng.standard_normal(out_channels).astype(np.float32)
    operands = [
        Operand(_hybrid_input(rng, x_shape)),
        Operand(w, constant=constant_filter, quantization=quantization),
        Operand(b, constant=True),
    ]
    model, _ = SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], options, version=2).build()
    feeds = []
    for _ in range(3):
        feed = [_hybrid_input(rng, x_shape)]
        if not constant_filter:
            feed.append(_hybrid_filter(rng, filter_shape, minus_128))
        feeds.append(feed)
    _compare_invokes(model, feeds, resolver)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 3),
    size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    channels=st.integers(1, 11),
    multiplier=st.sampled_from([1, 1, 2, 3]),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    minus_128=st.booleans(),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_hybrid_depthwise_conv2d(
    batch,
    size,
    kernel,
    channels,
    multiplier,
    strides,
    dilation,
    padding,
    activation,
    minus_128,
    resolver,
    seed,
    kernels,
):
    """float32 input, int8 filter with per-channel scales: channel counts off NEON's blocks of 4
    (whose two scalings are ordered differently), three invokes with different inputs."""
    rng = np.random.default_rng(seed)
    if any(_valid_out(size[i], kernel[i], strides[i], dilation[i]) <= 0 for i in range(2)):
        padding = "SAME"
    out_channels = channels * multiplier
    w = _hybrid_filter(rng, (1, *kernel, out_channels), minus_128)
    quantization = _affine(10.0 ** rng.uniform(-3, -1, out_channels), axis=3)
    options = _depthwise_options(padding, strides, dilation, multiplier, activation)
    x_shape = (batch, *size, channels)
    operands = [
        Operand(_hybrid_input(rng, x_shape)),
        Operand(w, constant=True, quantization=quantization),
        Operand(rng.standard_normal(out_channels).astype(np.float32), constant=True),
    ]
    model, _ = SingleOpModel(Op.DEPTHWISE_CONV_2D, operands, [T.FLOAT32], options, version=6).build()
    _compare_invokes(model, [[_hybrid_input(rng, x_shape)] for _ in range(3)], resolver)


@pytest.mark.parametrize("constant_filter", [True, False])
def test_hybrid_conv2d_row_sums_wrap_in_int16_lanes(constant_filter):
    """The per-channel kernel's weight row sums add 16-value blocks in eight int16 lanes: rows of
    2408 weights of mostly 127 wrap them, and TFLite subtracts zero point * the wrapped sum."""
    rng = np.random.default_rng(3)
    depth = 2408  # 150 blocks of 16 and one of 8: 302 weights per lane
    w = np.full((4, 1, 1, depth), 127, np.int8)
    w[:, :, :, rng.random(depth) < 0.05] = -5
    quantization = _affine([0.002, 0.003, 0.004, 0.005])
    x = np.abs(_hybrid_input(rng, (1, 2, 2, depth)))  # all positive: zero point -128
    operands = [
        Operand(x),
        Operand(w, constant=constant_filter, quantization=quantization),
        Operand(np.zeros(4, np.float32), constant=True),
    ]
    model, _ = SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], {"stride_h": 1, "stride_w": 1}).build()
    feeds = [[np.abs(_hybrid_input(rng, x.shape))] + ([] if constant_filter else [w]) for _ in range(2)]
    _compare_invokes(model, feeds)
    state = _kernel_state(model)
    if constant_filter:
        assert state.hybrid.stale is not None  # the sums did wrap


def test_hybrid_conv2d_sse_dot_product_flips_minus_128():
    """Per-tensor scale, 3 output channels (not ruy): -128 weights against negative inputs."""
    rng = np.random.default_rng(4)
    w = np.full((3, 1, 1, 32), -128, np.int8)
    w[:, :, :, 20:] = 7  # past the 16-value blocks: exact there
    x = -np.abs(_hybrid_input(rng, (1, 2, 3, 32)))
    operands = [
        Operand(x),
        Operand(w, constant=True, quantization=_affine([0.01] * 3)),
        Operand(np.zeros(3, np.float32), constant=True),
    ]
    model, _ = SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], {"stride_h": 1, "stride_w": 1}).build()
    _compare_invokes(model, [[x], [-x]])
    assert _kernel_state(model).hybrid.flipped is not None


def _int8_conv_model(**changes) -> bytes:
    """A small int8 CONV_2D whose parts `changes` replaces (input, filter, bias, output type...)."""
    rng = np.random.default_rng(0)
    parts = {
        "x": Operand(rng.integers(-128, 128, (1, 4, 4, 3)).astype(np.int8), quantization=(0.1, 2)),
        "w": Operand(
            rng.integers(-127, 128, (2, 3, 3, 3)).astype(np.int8),
            constant=True,
            quantization=_affine([0.01, 0.02]),
        ),
        "b": Operand(np.zeros(2, np.int32), constant=True, quantization=_affine([0.001, 0.002])),
        "out": T.INT8,
        "out_q": (0.5, 0),
        "op": Op.CONV_2D,
        "options": {"padding": "SAME", "stride_h": 1, "stride_w": 1},
    }
    parts.update(changes)
    return SingleOpModel(
        parts["op"],
        [parts["x"], parts["w"], parts["b"]],
        [parts["out"]],
        parts["options"],
        version=3,
        output_quantization=[parts["out_q"]],
    ).build()[0]


@pytest.mark.parametrize("op", [Op.CONV_2D, Op.DEPTHWISE_CONV_2D])
@pytest.mark.parametrize("resolver", RESOLVERS)
def test_int8_calls_follow_resized_tensors(op, resolver, kernels):
    """The int8 kernels run calls bound to the arena's arrays (Registration.calls): invokes before and after
    resizes (new arrays, new staging and im2col geometry) match LiteRT's, with the NumPy requantization
    and with the compiled one."""
    rng = np.random.default_rng(7)
    channels = 8  # whole NEON blocks: no scalar tail in the optimized depthwise kernel
    scales = _affine(np.linspace(0.01, 0.03, channels), axis=0 if op == Op.CONV_2D else 3)
    shape = (channels, 3, 3, 3) if op == Op.CONV_2D else (1, 3, 3, channels)
    changes = {
        "op": op,
        "w": Operand(rng.integers(-127, 128, shape).astype(np.int8), constant=True, quantization=scales),
        "b": Operand(
            rng.integers(-500, 500, channels).astype(np.int32),
            constant=True,
            quantization=_affine(np.linspace(0.001, 0.003, channels)),
        ),
        "options": {"padding": "SAME", "stride_h": 2, "stride_w": 1},
    }
    if op == Op.DEPTHWISE_CONV_2D:
        changes["x"] = Operand(np.zeros((1, 4, 4, channels), np.int8), quantization=(0.1, 2))
        changes["options"]["depth_multiplier"] = 1
    model = _int8_conv_model(**changes)
    kind = getattr(litert.OpResolverType, resolver)
    ours = pytflite.Interpreter(model_content=model, experimental_op_resolver_type=kind)
    theirs = litert_interpreter(model, experimental_op_resolver_type=kind)
    depth = 3 if op == Op.CONV_2D else channels
    for size in [(1, 4, 4), (2, 7, 5), (1, 4, 4)]:
        for interpreter in (ours, theirs):
            interpreter.resize_tensor_input(0, (*size, depth))
        for _ in range(2):
            x = rng.integers(-128, 128, (*size, depth)).astype(np.int8)
            np.testing.assert_array_equal(run(ours, [x])[0], run(theirs, [x])[0])
    integer = ours.subgraphs[0].nodes[ours.subgraphs[0].execution_plan[0]][0].user_data.integer
    simd = integer.requant.rounding == "simd"  # the optimized kernels': requantized in float64
    if op == Op.CONV_2D:  # the product with a constant filter is calls, and the float64 requantization
        assert integer.as_calls and integer.requantizes == simd
    else:  # the depthwise kernel has calls for the float64 requantization only
        assert integer.as_calls == simd
        if simd and kernels == "compiled":  # the sums and the requantization in one compiled call
            step, _ = ours.subgraphs[0].runner.fast_steps[0]
            assert len(step.calls) == 1


@pytest.mark.parametrize(
    "changes, op, message",
    [
        (
            {
                "w": Operand(
                    np.ones((2, 3, 3, 3), np.int8),
                    constant=True,
                    quantization=_affine([0.01, 0.02], 0, [1, 0]),
                )
            },
            "CONV_2D",
            "filter zero points must be 0",
        ),
        ({"out": T.UINT8, "out_q": (0.5, 128)}, "CONV_2D", "output type UINT8 != input type INT8"),
        (
            {
                "x": Operand(np.zeros((1, 4, 4, 3), np.float32)),
                "w": Operand(np.ones((2, 3, 3, 3), np.int8), constant=True, quantization=_affine([0.1])),
                "b": Operand(np.zeros(2, np.float32), constant=True),
                "out": T.FLOAT32,
                "out_q": None,
            },
            "CONV_2D",
            "hybrid filter has 1 scales for 2 output channels",
        ),
        (
            {"b": Operand(np.zeros(2, np.int64), constant=True, quantization=_affine([0.001, 0.002]))},
            "CONV_2D",
            "bias of a INT8 input must be INT32, got INT64",
        ),
        (
            {
                "x": Operand(np.zeros((1, 4, 4, 3), np.int16), quantization=(0.1, 3)),
                "b": Operand(np.zeros(2, np.int64), constant=True, quantization=_affine([0.001, 0.002])),
                "out": T.INT16,
            },
            "CONV_2D",
            "int16 input zero point",
        ),
        (
            {"w": Operand(np.ones((2, 3, 3, 3), np.uint8), constant=True, quantization=(0.1, 3))},
            "CONV_2D",
            "needs a INT8 filter, got UINT8",
        ),
        (
            {
                "x": Operand(np.zeros((1, 4, 4, 3), np.float32)),
                "w": Operand(np.ones((1, 3, 3, 3), np.uint8), constant=True, quantization=(0.1, 3)),
                "b": Operand(np.zeros(3, np.float32), constant=True),
                "out": T.FLOAT32,
                "out_q": None,
                "op": Op.DEPTHWISE_CONV_2D,
                "options": {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1},
            },
            "DEPTHWISE_CONV_2D",
            "Type FLOAT32 with filter type UINT8 not currently supported",
        ),
    ],
)
def test_quantized_conv_errors(changes, op, message):
    _fails_to_prepare(_int8_conv_model(**changes), op, message)


def test_hybrid_conv2d_runtime_filter_keeps_first_row_sums():
    """A runtime filter that changes between invokes: TFLite's per-channel kernel subtracts the zero
    point times the row sums of the first invoke's filter (stale afterwards), and so does pytflite."""
    rng = np.random.default_rng(1)
    x = np.abs(rng.standard_normal((1, 3, 3, 8)).astype(np.float32))  # zero point -128
    first, second = (rng.integers(-127, 128, (4, 1, 1, 8)).astype(np.int8) for _ in range(2))
    operands = [
        Operand(x),
        Operand(first, quantization=_affine([0.01, 0.02, 0.03, 0.04])),
        Operand(np.zeros(4, np.float32), constant=True),
    ]
    model, _ = SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], {"stride_h": 1, "stride_w": 1}).build()
    _compare_invokes(model, [[x, first], [x, second], [2 * x, second]])


# --- LiteRT's summation order (experimental_exact_float_summation): bit-identical float outputs -----------
#
# Forced on, the float CONV_2D and DEPTHWISE_CONV_2D must equal LiteRT's outputs bit for bit (not within
# 1e-5): each sum in the order of the kernel LiteRT runs (Eigen's blocked product, matrix-vector, dot and
# coefficient-wise products for the optimized CONV_2D; window order for its reference and grouped kernels;
# bias first or last for DEPTHWISE_CONV_2D). Inputs span many magnitudes, where another order shows.


def _spread(rng, shape) -> np.ndarray:
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape)).astype(np.float32)


def _exact_outputs(model: bytes, feeds, resolver: str = RESOLVERS[0], exact: bool | None = True):
    kind = getattr(litert.OpResolverType, resolver)
    ours = pytflite.Interpreter(
        model_content=model, experimental_op_resolver_type=kind, experimental_exact_float_summation=exact
    )
    return run(ours, feeds), run(litert_interpreter(model, experimental_op_resolver_type=kind), feeds)


def _assert_identical(model: bytes, feeds, resolver: str = RESOLVERS[0]) -> None:
    ours, theirs = _exact_outputs(model, feeds, resolver)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b, err_msg=f"exact summation ({resolver})")


def _conv_model(
    rng,
    batch,
    size,
    kernel,
    in_channels,
    out_channels,
    groups=1,
    strides=(1, 1),
    dilation=(1, 1),
    padding="SAME",
    activation="NONE",
    constant_filter=True,
):
    x = _spread(rng, [batch, *size, in_channels])
    w = _spread(rng, [out_channels, *kernel, in_channels // groups])
    b = _spread(rng, [out_channels])
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "fused_activation_function": activation,
    }
    operands = [Operand(x), Operand(w, constant=constant_filter), Operand(b, constant=True)]
    return SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], options).build()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    groups=st.sampled_from([1, 1, 1, 2]),
    in_per_group=st.integers(1, 40),
    # from 32 channels, the compiled kernel takes the plain orders
    out_channels=st.one_of(st.integers(1, 21), st.sampled_from([32, 40, 48])),
    strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    constant_filter=st.booleans(),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_conv2d_exact_summation_is_bit_identical(
    batch,
    size,
    kernel,
    groups,
    in_per_group,
    out_channels,
    strides,
    dilation,
    padding,
    activation,
    constant_filter,
    resolver,
    seed,
    kernels,
):
    if any(_valid_out(size[i], kernel[i], strides[i], dilation[i]) <= 0 for i in range(2)):
        return
    out_channels = out_channels // groups * groups or groups
    rng = np.random.default_rng(seed)
    model, feeds = _conv_model(
        rng,
        batch,
        size,
        kernel,
        groups * in_per_group,
        out_channels,
        groups,
        strides,
        dilation,
        padding,
        activation,
        constant_filter,
    )
    _assert_identical(model, feeds, resolver)


@pytest.mark.parametrize(
    "batch, size, kernel, in_channels, out_channels",
    [
        ((1, (1, 1), (1, 1), 40, 13)),  # one pixel: Eigen's matrix-vector product
        ((1, (3, 5), (1, 1), 37, 1)),  # one output channel: the same, over pixels
        ((1, (1, 1), (1, 1), 75, 1)),  # one of each: Eigen's dot product (four packets)
        ((1, (2, 2), (1, 1), 13, 2)),  # K + O + P < 20: Eigen's coefficient-wise product
        ((2, (3, 5), (2, 2), 11, 13)),  # 8 channels in order, 4 by even and odd k, 1 by k % 4
        ((1, (24, 24), (1, 1), 8, 48)),  # mobilenet_v2_dynamic's layers (48 channels: compiled)
        ((1, (96, 96), (3, 3), 3, 16)),
    ],
)
@pytest.mark.parametrize("resolver", RESOLVERS)
def test_conv2d_exact_summation_follows_eigen_kernels(
    batch, size, kernel, in_channels, out_channels, resolver, kernels
):
    """Each of Eigen's product kernels, on sums too short to be split by the cache size; the depth
    blocks, which depend on the CPU, are checked against LiteRT's recorded outputs of each machine
    kind in tests/fidelity/test_eigen_order.py."""
    rng = np.random.default_rng(in_channels)
    strides = (2, 2) if size == (96, 96) else (1, 1)
    model, feeds = _conv_model(rng, batch, size, kernel, in_channels, out_channels, strides=strides)
    _assert_identical(model, feeds, resolver)


def test_conv2d_exact_summation_differs_from_the_fast_path():
    """The inputs above do tell the orders apart: the default (BLAS) path is not bit-identical."""
    rng = np.random.default_rng(3)
    model, feeds = _conv_model(rng, 1, (8, 8), (3, 3), 40, 16)
    ours, theirs = _exact_outputs(model, feeds, exact=False)
    assert not np.array_equal(ours[0], theirs[0])
    assert_matches(ours[0], theirs[0])


@pytest.mark.parametrize(
    "size, kernel, in_channels, out_channels, groups",
    [((5, 6), (3, 3), 20, 13, 1), ((1, 1), (1, 1), 30, 1, 1), ((4, 4), (2, 2), 12, 6, 2)],
)
def test_conv2d_exact_summation_without_a_sequential_einsum(
    monkeypatch, size, kernel, in_channels, out_channels, groups
):
    """Where NumPy's einsum would not sum in order, products and an ordered reduction take over."""
    from pytflite.fidelity import eigen_order

    monkeypatch.setattr(eigen_order, "einsum_is_sequential", lambda: False)
    rng = np.random.default_rng(5)
    model, feeds = _conv_model(rng, 2, size, kernel, in_channels, out_channels, groups)
    for resolver in RESOLVERS:
        _assert_identical(model, feeds, resolver)


def _depthwise_model(
    rng,
    batch,
    size,
    kernel,
    channels,
    multiplier,
    strides=(1, 1),
    dilation=(1, 1),
    padding="SAME",
    activation="NONE",
    constant_filter=True,
    bias="constant",
):
    x = _spread(rng, [batch, *size, channels])
    w = _spread(rng, [1, *kernel, channels * multiplier])
    operands = [Operand(x), Operand(w, constant=constant_filter)]
    if bias is not None:
        operands.append(Operand(_spread(rng, [channels * multiplier]), constant=bias == "constant"))
    options = _depthwise_options(padding, strides, dilation, multiplier, activation)
    return SingleOpModel(Op.DEPTHWISE_CONV_2D, operands, [T.FLOAT32], options, version=2).build()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    channels=st.integers(1, 20),
    multiplier=st.sampled_from([1, 1, 2, 3]),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(ACTIVATIONS),
    constant_filter=st.booleans(),
    bias=st.sampled_from(["constant", "runtime", None]),
    resolver=st.sampled_from(RESOLVERS),
    seed=st.integers(0, 2**16),
)
def test_depthwise_conv2d_exact_summation_is_bit_identical(
    batch,
    size,
    kernel,
    channels,
    multiplier,
    strides,
    dilation,
    padding,
    activation,
    constant_filter,
    bias,
    resolver,
    seed,
    kernels,
):
    if any(_valid_out(size[i], kernel[i], strides[i], dilation[i]) <= 0 for i in range(2)):
        return
    if bias is None:
        resolver = "BUILTIN_REF"  # LiteRT's optimized kernel crashes without a bias
    rng = np.random.default_rng(seed)
    model, feeds = _depthwise_model(
        rng,
        batch,
        size,
        kernel,
        channels,
        multiplier,
        strides,
        dilation,
        padding,
        activation,
        constant_filter,
        bias,
    )
    _assert_identical(model, feeds, resolver)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_depthwise_conv2d_exact_summation_in_row_batches(monkeypatch, resolver, kernels):
    """Large outputs are summed a few output rows at a time (here, one or two; the NumPy kernel), or by
    the compiled kernel."""
    from pytflite.ops.conv import depthwise

    rng = np.random.default_rng(9)
    monkeypatch.setattr(depthwise, "_TERMS_AT_ONCE", 10 * 2 * 48 * 2)
    model, feeds = _depthwise_model(rng, 2, (11, 12), (3, 3), 16, 1, strides=(1, 1))
    _assert_identical(model, feeds, resolver)
    interpreter = pytflite.Interpreter(
        model_content=model,
        experimental_op_resolver_type=getattr(litert.OpResolverType, resolver),
        experimental_exact_float_summation=True,
    )
    interpreter.allocate_tensors()
    state = interpreter.subgraphs[0].nodes[0][0].user_data
    assert state.exact and (state.compiled_float is not None) == (kernels == "compiled")
    if resolver == RESOLVERS[0]:
        # without exact mode, the NumPy kernel adds the bias last, as only the reference kernel does; the
        # compiled one sums in LiteRT's order in either mode
        ours, theirs = _exact_outputs(model, feeds, resolver, exact=False)
        assert np.array_equal(ours[0], theirs[0]) == (kernels == "compiled")


def _hybrid_network(hybrid: bool) -> bytes:
    """A float CONV_2D, then a DEPTHWISE_CONV_2D, then a CONV_2D with int8 weights (hybrid) or float."""
    rng = np.random.default_rng(2)
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 8, 8, 3])

    def const(name, value, **kwargs):
        return builder.add_tensor(name, kwargs.pop("type", T.FLOAT32), value.shape, data=value, **kwargs)

    conv = builder.add_tensor("conv", T.FLOAT32, [1])
    builder.add_operator(
        Op.CONV_2D,
        [x, const("w1", _spread(rng, [8, 3, 3, 3])), const("b1", _spread(rng, [8]))],
        [conv],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1},
    )
    depthwise = builder.add_tensor("depthwise", T.FLOAT32, [1])
    builder.add_operator(
        Op.DEPTHWISE_CONV_2D,
        [conv, const("w2", _spread(rng, [1, 3, 3, 8])), const("b2", _spread(rng, [8]))],
        [depthwise],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1},
    )
    if hybrid:
        w3 = const(
            "w3",
            rng.integers(-127, 128, [4, 1, 1, 8]).astype(np.int8),
            type=T.INT8,
            quantization=_affine(rng.uniform(0.01, 0.02, 4), axis=0, zero_points=np.zeros(4, np.int64)),
        )
    else:
        w3 = const("w3", _spread(rng, [4, 1, 1, 8]))
    out = builder.add_tensor("out", T.FLOAT32, [1])
    builder.add_operator(
        Op.CONV_2D,
        [depthwise, w3, const("b3", _spread(rng, [4]))],
        [out],
        {"padding": "SAME", "stride_h": 1, "stride_w": 1},
    )
    builder.add_output(out)
    return builder.build()


def _float_kernels_exact(interpreter) -> tuple[bool, bool]:
    """Whether the float CONV_2D and DEPTHWISE_CONV_2D (the first two nodes) planned the exact sums."""
    subgraph = interpreter.subgraphs[0]
    conv, depthwise = (subgraph.nodes[i][0].user_data for i in subgraph.execution_plan[:2])
    return conv.mode == "exact", depthwise.exact


@pytest.mark.parametrize(
    "hybrid, forced, exact",
    [(True, None, True), (False, None, False), (True, False, False), (False, True, True)],
)
def test_exact_summation_is_chosen_where_a_hybrid_op_follows(hybrid, forced, exact):
    model = _hybrid_network(hybrid)
    interpreter = pytflite.Interpreter(model_content=model, experimental_exact_float_summation=forced)
    interpreter.allocate_tensors()
    assert interpreter.subgraphs[0].context.exact_float_summation is exact
    assert _float_kernels_exact(interpreter) == (exact, exact)
    feed = _spread(np.random.default_rng(4), [1, 8, 8, 3])
    ours, theirs = run(interpreter, [feed])[0], run(litert_interpreter(model), [feed])[0]
    if exact:
        np.testing.assert_array_equal(ours, theirs)
    elif not hybrid:  # (a hybrid op after the fast path may land one quantization step off)
        assert_matches(ours, theirs)


def test_laid_out_weights_and_bias_rows_are_shared_by_a_models_interpreters():
    """What prepare derives from constant filters and biases is computed once per model (core/derived.py)."""
    rng = np.random.default_rng(7)
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 9, 9, 4])
    conv = builder.add_tensor("conv", T.FLOAT32, [1, 9, 9, 8])
    builder.add_operator(
        Op.CONV_2D,
        [
            x,
            builder.add_constant("w", rng.standard_normal([8, 3, 3, 4]).astype(np.float32)),
            builder.add_constant("b", rng.standard_normal([8]).astype(np.float32)),
        ],
        [conv],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1},
    )
    depthwise = builder.add_tensor("depthwise", T.FLOAT32, [1, 9, 9, 8])
    builder.add_operator(
        Op.DEPTHWISE_CONV_2D,
        [
            conv,
            builder.add_constant("dw", rng.standard_normal([1, 3, 3, 8]).astype(np.float32)),
            builder.add_constant("db", rng.standard_normal([8]).astype(np.float32)),
        ],
        [depthwise],
        {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1},
    )
    builder.add_output(depthwise)
    model = builder.build()
    first, second = (pytflite.Interpreter(model_content=model) for _ in range(2))
    data = rng.standard_normal([1, 9, 9, 4]).astype(np.float32)
    outputs = []
    for interpreter in (first, second):
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], data)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
    np.testing.assert_array_equal(*outputs)
    (conv_a, _), (depthwise_a, _) = first.subgraphs[0].nodes
    (conv_b, _), (depthwise_b, _) = second.subgraphs[0].nodes
    for a, b in (
        (conv_a.user_data.weights, conv_b.user_data.weights),
        (depthwise_a.user_data.weights, depthwise_b.user_data.weights),
    ):
        assert a is b and not a.flags.writeable
    if conv_a.user_data.bias_row is not None:
        assert conv_a.user_data.bias_row is conv_b.user_data.bias_row
    assert depthwise_a.user_data.bias is depthwise_b.user_data.bias


def _requant_of(interpreter):
    subgraph = interpreter.subgraphs[0]
    state = subgraph.nodes[subgraph.execution_plan[0]][0].user_data
    return state.integer.requant


@pytest.mark.parametrize("op", [Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.TRANSPOSE_CONV])
def test_requantization_rows_are_shared_by_a_models_interpreters(op):
    """Requant's float64 map and its rows tiled over the output (requant.py) are computed once per
    model: a second interpreter holds the first's arrays, read-only, and computes the same outputs."""
    rng = np.random.default_rng(3)
    channels = 16  # CONV_2D: deeper than wide, so the map is not folded into the weights
    weights = rng.integers(
        -127, 128, (1, 3, 3, channels) if op == Op.DEPTHWISE_CONV_2D else (channels, 3, 3, 3)
    )
    changes = {
        "op": op,
        "w": Operand(
            weights.astype(np.int8),
            constant=True,
            quantization=_affine(
                np.linspace(0.01, 0.03, channels), axis=3 if op == Op.DEPTHWISE_CONV_2D else 0
            ),
        ),
        "b": Operand(
            rng.integers(-500, 500, channels).astype(np.int32),
            constant=True,
            quantization=_affine(np.linspace(0.001, 0.003, channels)),
        ),
    }
    if op == Op.DEPTHWISE_CONV_2D:
        changes["x"] = Operand(np.zeros((1, 4, 4, channels), np.int8), quantization=(0.1, 2))
        changes["options"] = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1}
    if op == Op.TRANSPOSE_CONV:
        x = Operand(np.zeros((1, 4, 4, 3), np.int8), quantization=(0.1, 2))
        model = SingleOpModel(
            op,
            [Operand(np.array([1, 8, 8, channels], np.int32), constant=True), changes["w"], x, changes["b"]],
            [T.INT8],
            {"padding": "SAME", "stride_h": 2, "stride_w": 2},
            version=3,
            output_quantization=[(0.5, 0)],
        ).build()[0]
    else:
        model = _int8_conv_model(**changes)
    interpreters = [pytflite.Interpreter(model_content=model) for _ in range(2)]
    feed = rng.integers(-128, 128, interpreters[0].get_input_details()[0]["shape"]).astype(np.int8)
    first, second = (run(interpreter, [feed])[0] for interpreter in interpreters)
    np.testing.assert_array_equal(first, second)
    a, b = (_requant_of(interpreter) for interpreter in interpreters)
    assert a._rows.fast is not None and a._rows is not b._rows
    for x, y in zip(a._rows.fast + a._fast[1][:2], b._rows.fast + b._fast[1][:2], strict=True):
        assert x is y and not x.flags.writeable


@pytest.mark.parametrize("op", [Op.CONV_2D, Op.DEPTHWISE_CONV_2D])
def test_bound_hybrid_steps_hand_refused_rows_to_invoke(op):
    """The hybrid kernels' bound calls (conv2d_calls, depthwise_calls) quantize with the compiled kernel;
    a batch it refuses (a NaN, an infinity) goes through the kernel's invoke: the outputs are the
    NumPy kernels' for every feed, and the bound step serves the next finite one."""
    rng = np.random.default_rng(11)
    channels = 8
    if op == Op.CONV_2D:
        shape, axis = (channels, 3, 3, channels), 0
    else:
        shape, axis = (1, 3, 3, channels), 3
    w = _hybrid_filter(rng, shape, False)
    operands = [
        Operand(_hybrid_input(rng, (2, 5, 5, channels))),
        Operand(w, constant=True, quantization=_affine(10.0 ** rng.uniform(-3, -1, channels), axis)),
        Operand(rng.standard_normal(channels).astype(np.float32), constant=True),
    ]
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    if op == Op.DEPTHWISE_CONV_2D:
        options["depth_multiplier"] = 1
    model, _ = SingleOpModel(op, operands, [T.FLOAT32], options, version=2).build()
    feeds = [_hybrid_input(rng, (2, 5, 5, channels)) for _ in range(4)]
    feeds[1][0, 2, 2, 3], feeds[2][1, 0, 0, 0] = np.nan, np.inf

    def inspect(interpreter, compiled):
        step = interpreter.subgraphs[0].runner.fast_steps[0][0]
        assert isinstance(step, Direct) == compiled  # the bound calls, or the kernel's invoke

    assert_compiled_as_numpy(model, [[x] for x in feeds], inspect)

"""Convolutions (float32) against LiteRT: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and
CONV_3D_TRANSPOSE — strides, dilation, padding, groups / depth multiplier, bias, activations, constant
and runtime filters, runtime output shapes, resizing, and the errors TFLite reports."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_matches, compare_with_litert, requires_litert
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
    model.check()


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
    model.check()


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
    (out,) = SingleOpModel(Op.TRANSPOSE_CONV, operands, [T.FLOAT32], options, version=4).check()
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
    assert _kernel_state(model.build()[0]).mode == mode


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
    assert _kernel_state(model).mode == "scatter"  # a runtime shape: no gather indices planned ahead


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
    operands = [Operand(x), Operand(w, constant=True)]
    if bias != "none":
        operands.append(
            Operand(rng.standard_normal([channels[1]]).astype(np.float32), constant=bias == "const")
        )
    options = _options_3d(padding, strides, dilation, activation)
    model = SingleOpModel(Op.CONV_3D, operands, [T.FLOAT32], options)
    if padding == "VALID" and any(
        _valid_out(size[i], kernel[i], strides[i], dilation[i]) < 0 for i in range(3)
    ):
        _fails_to_prepare(model.build()[0], "CONV_3D", "too small for a filter")
        return
    model.check()  # a VALID output size of 0 is an empty output, not an error


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
    from tests.oracle import litert_interpreter, run

    ours, theirs = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    for batch in (1, 3, 2):
        feed = rng.standard_normal([batch, 8, 8, 3]).astype(np.float32)
        for interpreter in (ours, theirs):
            interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], feed.shape)
        assert_matches(run(ours, [feed])[0], run(theirs, [feed])[0])

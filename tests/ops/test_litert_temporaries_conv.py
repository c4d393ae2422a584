"""get_tensor_details() lists the temporaries LiteRT's convolution kernels add, as LiteRT does: CONV_2D's
im2col or transposed float filter (one thread or several) and hybrid scratch, DEPTHWISE_CONV_2D's hybrid
scratch, TRANSPOSE_CONV's col2im, transposed filter and accumulator (sized by prepare, or by Eval for a
computed output shape or filter), CONV_3D's im2col and CONV_3D_TRANSPOSE's col2im; none for the nodes
XNNPACK takes under the default resolver."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder
from tests.oracle import CORPUS, requires_litert
from tests.single_op import Operand, SingleOpModel
from tests.tensor_listing import RESOLVERS, assert_listed_as_litert

pytestmark = requires_litert

RNG = np.random.default_rng(5)
THREADS = [None, 2]


def per_tensor_quantization(scale, dimension: int = 0) -> AffineQuantization:
    scale = np.atleast_1d(np.asarray(scale, np.float32))
    return AffineQuantization(scale, np.zeros(scale.size, np.int64), dimension)


def _per_channel(channels: int, dimension: int) -> AffineQuantization:
    return per_tensor_quantization(np.linspace(0.01, 0.05, channels), dimension)


def _operands(kind: str, x_shape, w_shape, channel_dimension: int, weights_constant: bool = True):
    """Input, filter and bias operands of a convolution of `kind`: f32, hybrid (float input, int8
    per-channel filter), i8 (per-channel), u8, i16 (int16 input, int8 filter, int64 bias)."""
    channels = w_shape[channel_dimension]
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    per_channel = _per_channel(channels, channel_dimension)
    bias_quantization = per_tensor_quantization(np.full(channels, 1e-3))
    if kind == "f32":
        return (
            [Operand(x), Operand(w, weights_constant), Operand(np.zeros(channels, np.float32), True)],
            T.FLOAT32,
            None,
        )
    if kind == "hybrid":
        weights = Operand((w * 20).astype(np.int8), weights_constant, quantization=per_channel)
        return [Operand(x), weights, Operand(np.zeros(channels, np.float32), True)], T.FLOAT32, None
    if kind == "u8":
        return (
            [
                Operand((x * 10 + 128).astype(np.uint8), quantization=AffineQuantization([0.1], [128])),
                Operand(
                    (w * 10 + 128).astype(np.uint8),
                    weights_constant,
                    quantization=AffineQuantization([0.05], [128]),
                ),
                Operand(np.zeros(channels, np.int32), True, quantization=per_tensor_quantization(0.005)),
            ],
            T.UINT8,
            AffineQuantization([0.2], [128]),
        )
    source, bias, output = {
        "i8": ((x * 10).astype(np.int8), np.int32, AffineQuantization([0.2], [2])),
        "i16": ((x * 100).astype(np.int16), np.int64, per_tensor_quantization(0.02)),
    }[kind]
    input_quantization = AffineQuantization([0.1], [1]) if kind == "i8" else per_tensor_quantization(0.01)
    return (
        [
            Operand(source, quantization=input_quantization),
            Operand((w * 20).astype(np.int8), weights_constant, quantization=per_channel),
            Operand(np.zeros(channels, bias), True, quantization=bias_quantization),
        ],
        {"i8": T.INT8, "i16": T.INT16}[kind],
        output,
    )


def _model(
    op, operands, output_type, output_quantization, options, version, output_shape
) -> tuple[bytes, list]:
    """A one-op model whose output declares its shape (XNNPACK checks the declared rank)."""
    quantization = [output_quantization] if output_quantization else []
    return SingleOpModel(op, operands, [output_type], options, version, quantization, [output_shape]).build()


# --- CONV_2D ---------------------------------------------------------------------------------------

CONV_2D = {
    # name: (kind, input shape, filter shape, stride, dilation, activation, filter constant)
    "f32-3x3": ("f32", (1, 8, 8, 3), (4, 3, 3, 3), 1, 1, "RELU", True),
    "f32-1x1": ("f32", (2, 5, 5, 3), (4, 1, 1, 3), 1, 1, "NONE", True),  # no im2col; hwcn with threads
    "f32-1x1-strided": ("f32", (1, 8, 8, 3), (4, 1, 1, 3), 2, 1, "NONE", True),
    "f32-dilated": ("f32", (1, 8, 8, 3), (4, 3, 3, 3), 1, 2, "NONE", True),  # im2col whatever the threads
    "f32-grouped": ("f32", (2, 8, 8, 4), (4, 3, 3, 2), 1, 1, "NONE", True),
    "f32-computed-filter": (
        "f32",
        (1, 8, 8, 3),
        (4, 3, 3, 3),
        1,
        1,
        "NONE",
        False,
    ),  # neither XNNPACK nor hwcn
    "f32-tanh": ("f32", (1, 8, 8, 3), (4, 3, 3, 3), 1, 1, "TANH", True),  # XNNPACK refuses the activation
    "i8-3x3": ("i8", (1, 8, 8, 3), (4, 3, 3, 3), 2, 1, "NONE", True),
    "i8-1x1": ("i8", (1, 8, 8, 3), (4, 1, 1, 3), 1, 1, "NONE", True),
    "u8-3x3": ("u8", (1, 8, 8, 3), (4, 3, 3, 3), 1, 1, "NONE", True),
    "i16-3x3": ("i16", (1, 8, 8, 3), (4, 3, 3, 3), 1, 1, "NONE", True),  # XNNPACK takes no int16
    "hybrid-3x3": ("hybrid", (1, 8, 8, 3), (4, 3, 3, 3), 1, 1, "NONE", True),
    "hybrid-1x1-grouped": ("hybrid", (2, 6, 6, 4), (4, 1, 1, 2), 1, 1, "NONE", True),
    "hybrid-computed-filter": ("hybrid", (1, 8, 8, 3), (4, 3, 3, 3), 1, 1, "NONE", False),
}


def _conv2d(kind, x_shape, w_shape, stride, dilation, activation, weights_constant):
    operands, output_type, output_quantization = _operands(kind, x_shape, w_shape, 0, weights_constant)
    options = {
        "padding": "SAME",
        "stride_h": stride,
        "stride_w": stride,
        "dilation_h_factor": dilation,
        "dilation_w_factor": dilation,
        "fused_activation_function": activation,
    }
    out = (x_shape[0], -(-x_shape[1] // stride), -(-x_shape[2] // stride), w_shape[0])
    version = 6 if x_shape[3] != w_shape[3] else {"f32": 1, "u8": 1, "i16": 4}.get(kind, 3)
    return _model(Op.CONV_2D, operands, output_type, output_quantization, options, version, out)[0]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("case", CONV_2D)
def test_conv2d_temporaries_as_litert(case, resolver, threads):
    assert_listed_as_litert(_conv2d(*CONV_2D[case]), resolver, threads)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("producer", ["DEQUANTIZE", "ADD"])
def test_conv2d_filter_computed_ahead(producer, resolver):
    """With threads, LiteRT transposes a filter it has before invoke: a DEQUANTIZE of constants keeps its
    output persistent, an ADD's is an arena tensor (im2col instead)."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, (1, 8, 8, 3))
    weights = builder.add_tensor("w", T.FLOAT32, (4, 3, 3, 3))
    ones = np.ones((4, 3, 3, 3), np.float32)
    if producer == "DEQUANTIZE":
        packed = builder.add_tensor(
            "w8", T.INT8, ones.shape, data=ones.astype(np.int8), quantization=per_tensor_quantization(0.1)
        )
        builder.add_operator(Op.DEQUANTIZE, [packed], [weights], {}, version=2)
    else:
        halves = [builder.add_tensor(f"w{i}", T.FLOAT32, ones.shape, data=ones) for i in range(2)]
        builder.add_operator(Op.ADD, halves, [weights], {})
    bias = builder.add_tensor("b", T.FLOAT32, (4,), data=np.zeros(4, np.float32))
    output = builder.add_tensor("y", T.FLOAT32, (1, 8, 8, 4))
    builder.add_output(output)
    builder.add_operator(
        Op.CONV_2D, [x, weights, bias], [output], {"padding": "SAME", "stride_h": 1, "stride_w": 1}
    )
    assert_listed_as_litert(builder.build(), resolver, 2)


# --- DEPTHWISE_CONV_2D -------------------------------------------------------------------------------

DEPTHWISE = {
    # name: (kind, input shape, depth multiplier); only hybrid nodes have temporaries, XNNPACK takes none
    "f32": ("f32", (1, 8, 8, 4), 1),
    "i8": ("i8", (1, 8, 8, 4), 1),
    "hybrid": ("hybrid", (1, 8, 8, 4), 1),
    "hybrid-batch2-multiplier2": ("hybrid", (2, 6, 6, 3), 2),
}


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("case", DEPTHWISE)
def test_depthwise_temporaries_as_litert(case, resolver):
    kind, x_shape, multiplier = DEPTHWISE[case]
    channels = x_shape[3] * multiplier
    operands, output_type, output_quantization = _operands(kind, x_shape, (1, 3, 3, channels), 3)
    options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": multiplier}
    version = {"f32": 1, "i8": 3}.get(kind, 6)
    model = _model(
        Op.DEPTHWISE_CONV_2D,
        operands,
        output_type,
        output_quantization,
        options,
        version,
        (*x_shape[:3], channels),
    )
    assert_listed_as_litert(model[0], resolver)


# --- TRANSPOSE_CONV ----------------------------------------------------------------------------------

TRANSPOSE_CONV = {
    # name: (kind, filter shape, padding, activation, output shape constant, filter constant)
    "f32": ("f32", (2, 3, 3, 3), "SAME", "NONE", True, True),
    "f32-valid": ("f32", (2, 3, 3, 3), "VALID", "RELU", True, True),
    "f32-computed-shape": ("f32", (2, 3, 3, 3), "SAME", "NONE", False, True),
    "f32-computed-filter": ("f32", (2, 3, 3, 3), "SAME", "NONE", True, False),
    "f32-stride-beyond-kernel": ("f32", (2, 1, 1, 3), "SAME", "NONE", True, True),  # XNNPACK refuses
    "f32-tanh": ("f32", (2, 3, 3, 3), "SAME", "TANH", True, True),
    "i8": ("i8", (2, 3, 3, 3), "SAME", "NONE", True, True),
    "i8-computed-shape": ("i8", (2, 3, 3, 3), "SAME", "NONE", False, True),
    "u8": ("u8", (2, 3, 3, 3), "SAME", "NONE", True, True),
    "i16": ("i16", (2, 3, 3, 3), "SAME", "NONE", True, True),
}


def _transpose_conv(kind, w_shape, padding, activation, shape_constant, weights_constant, bias_type=None):
    x_shape, stride = (1, 4, 4, w_shape[3]), 2
    size = [x_shape[1] * stride if padding == "SAME" else (x_shape[1] - 1) * stride + w_shape[1]] * 2
    out = np.array([1, *size, w_shape[0]], np.int32)
    operands, output_type, output_quantization = _operands(kind, x_shape, w_shape, 0, weights_constant)
    if bias_type is not None:
        operands[2] = Operand(np.zeros(w_shape[0], bias_type), True, quantization=operands[2].quantization)
    options = {
        "padding": padding,
        "stride_h": stride,
        "stride_w": stride,
        "fused_activation_function": activation,
    }
    if bias_type is not None:
        options["quantized_bias_type"] = "INT32"
    inputs = [Operand(out, shape_constant), operands[1], operands[0], operands[2]]
    version = {"f32": 1, "u8": 1, "i8": 3}.get(kind, 3)
    return _model(Op.TRANSPOSE_CONV, inputs, output_type, output_quantization, options, version, tuple(out))


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("case", TRANSPOSE_CONV)
def test_transpose_conv_temporaries_as_litert(case, resolver):
    model, feeds = _transpose_conv(*TRANSPOSE_CONV[case])
    assert_listed_as_litert(model, resolver)
    assert_listed_as_litert(model, resolver, inputs=feeds)  # Eval sizes what prepare left dynamic


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_int16_transpose_conv_accumulates_in_the_bias_type(resolver):
    model, feeds = _transpose_conv("i16", (2, 3, 3, 3), "SAME", "NONE", True, True, bias_type=np.int32)
    assert_listed_as_litert(model, resolver, inputs=feeds)


# --- CONV_3D, CONV_3D_TRANSPOSE ----------------------------------------------------------------------


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize(
    ("w_shape", "stride", "dilation"),
    [((3, 3, 3, 2, 3), 1, 1), ((1, 1, 1, 2, 3), 1, 1), ((1, 1, 1, 2, 3), 2, 1), ((2, 2, 2, 2, 3), 1, 2)],
)
def test_conv3d_temporaries_as_litert(w_shape, stride, dilation, resolver):
    x = RNG.standard_normal((1, 4, 6, 6, 2)).astype(np.float32)
    options = {
        "padding": "SAME",
        **{f"stride_{axis}": stride for axis in "dhw"},
        **{f"dilation_{axis}_factor": dilation for axis in "dhw"},
    }
    weights = RNG.standard_normal(w_shape).astype(np.float32)
    model = SingleOpModel(Op.CONV_3D, [Operand(x), Operand(weights, True)], [T.FLOAT32], options).build()[0]
    assert_listed_as_litert(model, resolver)


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("shape_constant", [True, False], ids=["constant-shape", "computed-shape"])
def test_conv3d_transpose_temporaries_as_litert(shape_constant, resolver):
    x = RNG.standard_normal((1, 2, 3, 3, 4)).astype(np.float32)
    weights = RNG.standard_normal((2, 2, 2, 2, 4)).astype(np.float32)
    shape = np.array([1, 4, 6, 6, 2], np.int32)
    options = {"padding": "SAME", "stride_d": 2, "stride_h": 2, "stride_w": 2}
    operands = [Operand(shape, shape_constant), Operand(weights, True), Operand(x)]
    model, feeds = SingleOpModel(Op.CONV_3D_TRANSPOSE, operands, [T.FLOAT32], options).build()
    assert_listed_as_litert(model, resolver)
    assert_listed_as_litert(model, resolver, inputs=feeds)


# --- the corpus --------------------------------------------------------------------------------------

MODELS = [
    "small_cnn",
    "small_cnn_int8",
    "small_cnn_int16x8",
    "mobilenet_v2_f32",
    "mobilenet_v2_fp16",
    "mobilenet_v2_int8",
    "mobilenet_v2_dynamic",
    "dynamic_batch",
    "zoo_matmul_conv",
]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("name", MODELS)
def test_corpus_convolutions_listed_as_litert(name, resolver, threads):
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} is absent (the public corpus is not checked out)")
    if resolver == "BUILTIN_REF" and name in ("small_cnn_int8", "small_cnn_int16x8"):
        pytest.skip("LiteRT's reference resolver has no TILE version 3, which these models use")
    assert_listed_as_litert(path, resolver, threads)

"""Convolutions, pooling and matrix products: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D,
AVERAGE_POOL_2D, MAX_POOL_2D, FULLY_CONNECTED, BATCH_MATMUL.

Windowed ops run channels-first (ONNX's layout); TFLite's SAME/VALID padding becomes explicit pads
computed from the static shapes, so the output size is TFLite's exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...core.node import OPTIONAL_TENSOR, Node
from ...core.types import BuiltinOperator as Op
from ...core.types import TensorType
from ...model.options import Padding
from .graph import PartitionGraph, Unsupported, channels_first
from .registry import activation, arity, fused, translates

_FLOAT = (TensorType.FLOAT32,)


def _pads(
    padding: int,
    inputs: Sequence[int],
    outputs: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> list[int]:
    """ONNX pads [begin..., end...] reproducing TFLite's SAME (extra pixel at the end) or VALID."""
    begins, ends = [], []
    for size, out, k, s, d in zip(inputs, outputs, kernel, strides, dilations):
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0) if padding == Padding.SAME else 0
        begins.append(total // 2)
        ends.append(total - total // 2)
    return begins + ends


def _same_float_or_quantized(g: PartitionGraph, data: int, weights: int, output: int) -> None:
    """Float activations with float weights, or (allow_quantized) quantized with quantized weights;
    hybrid kernels (float activations, int8 weights) stay on the CPU."""
    if g.quantized(data) != g.quantized(weights) or g.quantized(data) != g.quantized(output):
        raise Unsupported("hybrid or mixed quantization")
    g.check_types([data, weights, output], _FLOAT)


@translates(Op.CONV_2D, Op.DEPTHWISE_CONV_2D)
def conv_2d(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, (2, 3))
    x, w, b = (*node.inputs, OPTIONAL_TENSOR)[:3]
    y = node.outputs[0]
    _same_float_or_quantized(g, x, w, y)
    if g.rank(x) != 4 or g.rank(w) != 4:
        raise Unsupported("input and filter must be 4-D")
    options = node.builtin_data
    _, height, width, channels = g.shape(x)
    _, out_h, out_w, out_c = g.shape(y)
    strides = [options.stride_h, options.stride_w]
    dilations = [options.dilation_h_factor, options.dilation_w_factor]
    depthwise = op == Op.DEPTHWISE_CONV_2D
    if depthwise:
        kh, kw = g.shape(w)[1:3]
        filter_layout = (3, 0, 1, 2)  # [1, H, W, C*M] -> [C*M, 1, H, W]
        group = channels
    else:
        kh, kw, in_c = g.shape(w)[1:4]
        if in_c == 0 or channels % in_c:
            raise Unsupported(f"{channels} input channels for a filter of depth {in_c}")
        filter_layout = channels_first(4)  # OHWI -> OIHW
        group = channels // in_c
    if g.shape(w)[3 if depthwise else 0] != out_c:
        raise Unsupported("filter and output channels differ")
    bias = g.bias(b, x, w)
    pads = _pads(options.padding, [height, width], [out_h, out_w], [kh, kw], strides, dilations)
    if _flat(g, x, w, group, dilations):
        out = _flat_conv(g, x, w, bias, strides, dilations, pads)
    else:
        inputs = [g.value(x, channels_first(4)), g.value(w, filter_layout)] + ([bias] if bias else [])
        out = g.op(
            "Conv",
            inputs,
            kernel_shape=[kh, kw],
            strides=strides,
            dilations=dilations,
            group=group,
            pads=pads,
        )
    g.define(y, activation(g, out, fused(node)), channels_first(4))


_FLAT_CHANNELS = 4  # RGB(A) or grey images: where a transposition costs as much as the convolution


def _flat(g: PartitionGraph, x: int, w: int, group: int, dilations: Sequence[int]) -> bool:
    """A convolution of a few-channel value that is still channels-last (a partition input, typically
    the image) runs as a one-channel convolution over the flattened rows, without transposing it."""
    return (
        group == 1
        and dilations[1] == 1
        and g.shape(x)[3] <= _FLAT_CHANNELS
        and g.layout(x) is None
        and not g.is_constant(x)
        and not g.quantized(x)
        and g.tensor(w).type == TensorType.FLOAT32
        and g.is_constant(w)
    )


def _flat_conv(
    g: PartitionGraph,
    x: int,
    w: int,
    bias: str | None,
    strides: Sequence[int],
    dilations: Sequence[int],
    pads: Sequence[int],
) -> str:
    """Conv over x [N, H, W, C] seen as [N, 1, H, W*C]: filter tap (ky, kx, c) lands on column kx*C + c,
    so the OHWI filter reshaped to [O, 1, kh, kw*C] is the filter, and column strides and pads scale
    by C. The same products as the NCHW convolution (summed in another order); channels-first output."""
    batch, height, width, channels = g.shape(x)
    out_c, kh, kw, _ = g.shape(w)
    rows = g.op("Reshape", [g.value(x), g.ints([batch, 1, height, width * channels])])
    weights = g.const(g.constant(w).reshape(out_c, 1, kh, kw * channels), f"c{w}")
    return g.op(
        "Conv",
        [rows, weights] + ([bias] if bias else []),
        kernel_shape=[kh, kw * channels],
        strides=[strides[0], strides[1] * channels],
        dilations=[dilations[0], 1],
        pads=[pads[0], pads[1] * channels, pads[2], pads[3] * channels],
    )


@translates(Op.CONV_3D)
def conv_3d(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, (2, 3))
    x, w, b = (*node.inputs, OPTIONAL_TENSOR)[:3]
    y = node.outputs[0]
    g.check_types([x, w, y, b], _FLOAT)
    if g.rank(x) != 5 or g.rank(w) != 5:
        raise Unsupported("input and filter must be 5-D")
    options = node.builtin_data
    kd, kh, kw, in_c, _ = g.shape(w)
    channels = g.shape(x)[4]
    if in_c == 0 or channels % in_c:
        raise Unsupported("filter depth does not divide the input channels")
    strides = [options.stride_d, options.stride_h, options.stride_w]
    dilations = [options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor]
    inputs = [g.value(x, channels_first(5)), g.value(w, (4, 3, 0, 1, 2))]
    if b != OPTIONAL_TENSOR:
        inputs.append(g.value(b))
    out = g.op(
        "Conv",
        inputs,
        kernel_shape=[kd, kh, kw],
        strides=strides,
        dilations=dilations,
        group=channels // in_c,
        pads=_pads(options.padding, g.shape(x)[1:4], g.shape(y)[1:4], [kd, kh, kw], strides, dilations),
    )
    g.define(y, activation(g, out, fused(node)), channels_first(5))


@translates(Op.TRANSPOSE_CONV)
def transpose_conv(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, (3, 4))
    _, w, x, b = (*node.inputs, OPTIONAL_TENSOR)[:4]
    y = node.outputs[0]
    _same_float_or_quantized(g, x, w, y)
    if g.rank(x) != 4 or g.rank(w) != 4 or g.rank(y) != 4:
        raise Unsupported("input, filter and output must be 4-D")
    options = node.builtin_data
    out_c, kh, kw, in_c = g.shape(w)
    if in_c != g.shape(x)[3] or out_c != g.shape(y)[3]:
        raise Unsupported("filter shape does not match input/output channels")
    strides = [options.stride_h, options.stride_w]
    begins, ends, extra = [], [], []
    for size, out, k, s in zip(g.shape(x)[1:3], g.shape(y)[1:3], (kh, kw), strides):
        # TFLite pads as the forward convolution from the output to the input would
        total = max((size - 1) * s + k - out, 0) if options.padding == Padding.SAME else 0
        begin = total // 2
        end = (size - 1) * s + k - begin - out
        begins.append(begin)
        ends.append(max(end, 0))
        extra.append(max(-end, 0))
    if any(e >= s for e, s in zip(extra, strides)):
        raise Unsupported("output larger than a transposed convolution produces")
    inputs = [g.value(x, channels_first(4)), g.value(w, (3, 0, 1, 2))]  # OHWI -> IOHW
    bias = g.bias(b, x, w)
    if bias:
        inputs.append(bias)
    out = g.op(
        "ConvTranspose",
        inputs,
        kernel_shape=[kh, kw],
        strides=strides,
        pads=begins + ends,
        output_padding=extra,
    )
    g.define(y, activation(g, out, fused(node)), channels_first(4))


@translates(Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D)
def pool_2d(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    x, y = node.inputs[0], node.outputs[0]
    g.check_types([x, y], _FLOAT)
    if g.quantized(x) and g.tensor(x).quantization != g.tensor(y).quantization:
        raise Unsupported("pooling that requantizes")
    if g.rank(x) != 4:
        raise Unsupported("input must be 4-D")
    options = node.builtin_data
    kernel = [options.filter_height, options.filter_width]
    strides = [options.stride_h, options.stride_w]
    pads = _pads(options.padding, g.shape(x)[1:3], g.shape(y)[1:3], kernel, strides, [1, 1])
    average = op == Op.AVERAGE_POOL_2D
    attrs = {"count_include_pad": 0} if average else {}
    out = g.op(
        "AveragePool" if average else "MaxPool",
        [g.value(x, channels_first(4))],
        kernel_shape=kernel,
        strides=strides,
        pads=pads,
        **attrs,
    )
    g.define(y, activation(g, out, fused(node)), channels_first(4))


@translates(Op.FULLY_CONNECTED)
def fully_connected(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, (2, 3))
    x, w, b = (*node.inputs, OPTIONAL_TENSOR)[:3]
    y = node.outputs[0]
    _same_float_or_quantized(g, x, w, y)
    options = node.builtin_data
    if int(options.weights_format) != 0:
        raise Unsupported("shuffled weights")
    if g.rank(w) != 2:
        raise Unsupported("weights must be 2-D")
    units, depth = g.shape(w)
    size = int(np.prod(g.shape(x)))
    if depth == 0 or size % depth:
        raise Unsupported("input size is not a multiple of the weights' depth")
    data = g.value(x)
    if g.rank(x) != 2 or g.shape(x)[1] != depth:
        data = g.op("Reshape", [data, g.ints([size // depth, depth])])
    inputs = [data, g.value(w)]
    bias = g.bias(b, x, w)
    if bias:
        inputs.append(bias)
    out = g.op("Gemm", inputs, transB=1)
    if list(g.shape(y)) != [size // depth, units]:
        out = g.op("Reshape", [out, g.ints(g.shape(y))])
    g.define(y, activation(g, out, fused(node)))


@translates(Op.BATCH_MATMUL)
def batch_matmul(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 2)
    a, b = node.inputs
    y = node.outputs[0]
    g.check_types([a, b, y], _FLOAT)
    if g.quantized(a) != g.quantized(b) or g.quantized(a) != g.quantized(y):
        raise Unsupported("hybrid or mixed quantization")
    if g.rank(a) < 2 or g.rank(b) < 2:
        raise Unsupported("operands must be at least 2-D")
    options = node.builtin_data
    names = []
    for t, adjoint in ((a, options.adj_x), (b, options.adj_y)):
        name = g.value(t)
        if adjoint:
            perm = list(range(g.rank(t)))
            perm[-2:] = perm[-1], perm[-2]
            name = g.op("Transpose", [name], perm=perm)
        names.append(name)
    out = g.op("MatMul", names)
    g.define(y, out)

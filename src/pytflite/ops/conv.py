"""Convolution: CONV_2D (float32) with strides, dilation, SAME/VALID padding, groups and a fused activation.

Prepare computes the output shape and padding once; invoke is im2col — a strided view of the padded
input, copied into [pixels, KH*KW*Cin] — and one matrix product per group, written into the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure, ensure_eq, ensure_type
from ..model.options import Padding
from .common import activation_clamp, check_arity, input_tensor, output_tensor
from .registry import register_builtin


def output_size(padding: Padding, size: int, filter_size: int, stride: int, dilation: int) -> int:
    """Output extent of one spatial dimension (TFLite's ComputeOutSize)."""
    effective = (filter_size - 1) * dilation + 1
    if padding == Padding.SAME:
        return (size + stride - 1) // stride
    return (size - effective + stride) // stride if size >= effective else 0


def padding_before_after(
    size: int, filter_size: int, stride: int, dilation: int, out: int
) -> tuple[int, int]:
    """Zeros added before and after one spatial dimension (ComputePaddingWithOffset); SAME puts the odd
    one after."""
    effective = (filter_size - 1) * dilation + 1
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


@dataclass(frozen=True)
class Window:
    """A 2-D sliding window: filter size, strides, dilation and the zero padding it needs."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[tuple[int, int], tuple[int, int]]
    out: tuple[int, int]


def plan_window(options, input_hw, kernel_hw, dilation=(1, 1)) -> Window:
    strides = (options.stride_h, options.stride_w)
    ensure(strides[0] > 0 and strides[1] > 0, f"strides must be positive, got {list(strides)}")
    ensure(dilation[0] > 0 and dilation[1] > 0, f"dilation must be positive, got {list(dilation)}")
    out = tuple(
        output_size(options.padding, input_hw[i], kernel_hw[i], strides[i], dilation[i]) for i in range(2)
    )
    pads = tuple(
        padding_before_after(input_hw[i], kernel_hw[i], strides[i], dilation[i], out[i]) for i in range(2)
    )
    return Window(tuple(kernel_hw), strides, tuple(dilation), pads, out)


def windows(x: np.ndarray, window: Window, pad_value=0) -> np.ndarray:
    """A read-only [N, OH, OW, KH, KW, C] view of every window of an NHWC array (after padding)."""
    (top, bottom), (left, right) = window.pads
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    n, _, _, c = x.shape
    sn, sh, sw, sc = x.strides
    oh, ow = window.out
    kh, kw = window.kernel
    shape = (n, oh, ow, kh, kw, c)
    strides = (
        sn,
        sh * window.strides[0],
        sw * window.strides[1],
        sh * window.dilation[0],
        sw * window.dilation[1],
        sc,
    )
    return as_strided(x, shape, strides, writeable=False)


@dataclass(frozen=True)
class ConvData:
    window: Window
    groups: int
    clamp: Callable[[np.ndarray], None] | None


def conv2d_prepare(context, node):
    check_arity(node, (2, 3))
    options = node.builtin_data
    ensure(len(node.inputs) == 3, "has_bias was not true.")  # TFLite's CONV_2D always needs its bias
    source, weights, bias = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    for tensor, role in ((source, "input"), (weights, "filter"), (output, "output")):
        ensure_type(tensor, TensorType.FLOAT32, role, "CONV_2D")
    ensure_eq(len(source.shape), 4, "CONV_2D input rank")
    ensure_eq(len(weights.shape), 4, "CONV_2D filter rank")
    n, h, w, channels = source.shape
    out_channels, kh, kw, filter_channels = weights.shape
    ensure(
        h > 0 and w > 0 and channels > 0 and min(weights.shape) > 0,
        "CONV_2D needs non-empty input and filter",
    )
    ensure_eq(channels % filter_channels, 0, "CONV_2D input channels % filter input channels")
    groups = channels // filter_channels
    ensure_eq(out_channels % groups, 0, "CONV_2D output channels % groups")
    ensure_type(bias, TensorType.FLOAT32, "bias", "CONV_2D")
    ensure_eq(bias.bytes // 4, out_channels, "CONV_2D bias size")
    window = plan_window(options, (h, w), (kh, kw), (options.dilation_h_factor, options.dilation_w_factor))
    context.resize_tensor(output, (n, *window.out, out_channels))
    node.user_data = ConvData(window, groups, activation_clamp(options.fused_activation_function))


def conv2d_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    x, w = tensors[node.inputs[0]].data, tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    n, oh, ow, out_channels = out.shape
    per_group_out = out_channels // data.groups
    per_group_in = w.shape[3]
    cols = windows(x, data.window)
    rows = out.reshape(n * oh * ow, out_channels)
    for g in range(data.groups):
        patch = cols[..., g * per_group_in : (g + 1) * per_group_in].reshape(n * oh * ow, -1)
        filters = w[g * per_group_out : (g + 1) * per_group_out].reshape(per_group_out, -1)
        if data.groups == 1:
            np.matmul(patch, filters.T, out=rows)
        else:
            rows[:, g * per_group_out : (g + 1) * per_group_out] = patch @ filters.T
    out += tensors[node.inputs[2]].data
    if data.clamp is not None:
        data.clamp(out)


register_builtin(
    BuiltinOperator.CONV_2D, (1, 8), types=(TensorType.FLOAT32,), prepare=conv2d_prepare, invoke=conv2d_invoke
)

"""The gradient ops TF's GradientTape leaves in a converted `train` signature where TFLite has no
builtin: activation gradients, BiasAddGrad, BroadcastGradientArgs, and the backward passes of
convolution and pooling (NHWC, as TFLite's forward ops).

The backward convolutions sum in float64 and round once: TF's Eigen contraction sums float32 in its
own blocked order, so the two agree to float32's rounding, not bit for bit (docs/flex.md).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOATS, REAL
from ..node_def import TfNode
from ..registry import register


def _gradient(op: str, function, types=FLOATS) -> None:
    def compute(node: TfNode, first, second):
        return np.asarray(function(node, first, second)).astype(first.dtype, copy=False)

    compute.__doc__ = f"{op}: the gradient of its activation."
    register(op, compute, types={"T": types})


_gradient("ReluGrad", lambda node, dy, x: np.where(x > 0, dy, 0), REAL)
_gradient("Relu6Grad", lambda node, dy, x: np.where((x > 0) & (x < 6), dy, 0), REAL)
_gradient("EluGrad", lambda node, dy, y: np.where(y < 0, dy * (y + 1), dy))
_gradient(
    "SeluGrad", lambda node, dy, y: np.where(y < 0, dy * (y + 1.7580993408473766), dy * 1.0507009873554805)
)
_gradient("SoftplusGrad", lambda node, dy, x: dy / (1 + np.exp(-x)))
_gradient("SoftsignGrad", lambda node, dy, x: dy / np.square(1 + np.abs(x)))
_gradient(
    "LeakyReluGrad", lambda node, dy, x: np.where(x > 0, dy, dy * x.dtype.type(node.attr("alpha", 0.2)))
)
_gradient("SigmoidGrad", lambda node, y, dy: dy * y * (1 - y))
_gradient("TanhGrad", lambda node, y, dy: dy * (1 - y * y))
_gradient("SqrtGrad", lambda node, y, dy: dy * 0.5 / y)
_gradient("RsqrtGrad", lambda node, y, dy: dy * -0.5 * y * y * y)
_gradient("ReciprocalGrad", lambda node, y, dy: -dy * y * y)


@register("BiasAddGrad", types={"T": REAL})
def _bias_add_grad(node: TfNode, out_backprop):
    """BiasAddGrad: the gradient summed over every axis but the channels."""
    channels = 1 if node.text("data_format", "NHWC") == "NCHW" and out_backprop.ndim > 2 else -1
    axes = tuple(a for a in range(out_backprop.ndim) if a != channels % out_backprop.ndim)
    return np.sum(out_backprop, axis=axes, dtype=np.float64).astype(out_backprop.dtype)


@register("BroadcastGradientArgs", types={"T": ["int32", "int64"]})
def _broadcast_gradient_args(node: TfNode, s0, s1):
    """BroadcastGradientArgs: per input, the axes its gradient is summed over after a broadcast."""
    shape0, shape1 = [int(d) for d in s0], [int(d) for d in s1]
    rank = max(len(shape0), len(shape1))
    padded0 = [1] * (rank - len(shape0)) + shape0
    padded1 = [1] * (rank - len(shape1)) + shape1
    reduce0, reduce1 = [], []
    for axis, (a, b) in enumerate(zip(padded0, padded1, strict=True)):
        if a != b and a != 1 and b != 1:
            raise ValueError(
                f"Incompatible shapes: [{','.join(map(str, shape0))}] vs. [{','.join(map(str, shape1))}]"
            )
        if a == 1 and b == 1:  # TF reduces both over an axis of ones
            reduce0.append(axis)
            reduce1.append(axis)
        elif a == 1:
            reduce0.append(axis)
        elif b == 1:
            reduce1.append(axis)
    return np.array(reduce0, s0.dtype), np.array(reduce1, s1.dtype)


def _nhwc(node: TfNode) -> None:
    if node.text("data_format", "NHWC") != "NHWC":
        raise ValueError(f"{node.op}: only data_format NHWC is supported (TFLite's layout)")


def _window(node: TfNode, attr: str) -> tuple[int, int]:
    values = node.attr(attr)
    if len(values) != 4 or values[0] != 1 or values[3] != 1:
        raise ValueError(f"{node.op}: {attr} must be [1, h, w, 1], got {values}")
    return values[1], values[2]


def _padding(node: TfNode, size: int, out: int, window: int, stride: int, dilation: int, axis: int) -> int:
    """The padding before the first element along one spatial axis (TF's GetWindowedOutputSize)."""
    padding = node.text("padding")
    effective = (window - 1) * dilation + 1
    if padding == "VALID":
        return 0
    if padding == "SAME":
        return max((out - 1) * stride + effective - size, 0) // 2
    if padding == "EXPLICIT":
        return node.attr("explicit_paddings")[2 * axis + 2]
    raise ValueError(f"{node.op}: padding {padding} is not supported")


def _conv_geometry(node: TfNode, input_shape, filter_shape, out_shape):
    """Per spatial axis (stride, dilation, padding before)."""
    strides = _window(node, "strides")
    dilations = _window(node, "dilations") if "dilations" in node.attrs else (1, 1)
    return [
        (
            strides[a],
            dilations[a],
            _padding(
                node, input_shape[1 + a], out_shape[1 + a], filter_shape[a], strides[a], dilations[a], a
            ),
        )
        for a in range(2)
    ]


def _taps(geometry, filter_shape, input_shape, out_shape):
    """For each filter tap (i, j): the output rows/cols it reads and the input rows/cols they meet."""
    for i in range(filter_shape[0]):
        for j in range(filter_shape[1]):
            spans = []
            for axis, tap in ((0, i), (1, j)):
                stride, dilation, pad = geometry[axis]
                positions = np.arange(out_shape[1 + axis]) * stride + tap * dilation - pad
                valid = (positions >= 0) & (positions < input_shape[1 + axis])
                spans.append((np.nonzero(valid)[0], positions[valid]))
            yield i, j, spans


@register("Conv2DBackpropFilter", types={"T": FLOATS})
def _conv2d_backprop_filter(node: TfNode, x, filter_sizes, out_backprop):
    """Conv2DBackpropFilter: the gradient of CONV_2D's filter."""
    _nhwc(node)
    filter_shape = tuple(int(d) for d in filter_sizes)
    geometry = _conv_geometry(node, x.shape, filter_shape, out_backprop.shape)
    gradient = np.zeros(filter_shape, np.float64)
    dy = out_backprop.astype(np.float64)
    for i, j, ((out_rows, in_rows), (out_cols, in_cols)) in _taps(
        geometry, filter_shape, x.shape, out_backprop.shape
    ):
        patch = x[:, in_rows][:, :, in_cols].astype(np.float64)
        gradient[i, j] = np.einsum("nhwc,nhwo->co", patch, dy[:, out_rows][:, :, out_cols])
    return gradient.astype(x.dtype)


@register("Conv2DBackpropInput", types={"T": FLOATS})
def _conv2d_backprop_input(node: TfNode, input_sizes, kernel, out_backprop):
    """Conv2DBackpropInput: the gradient of CONV_2D's input (TF's transposed convolution)."""
    _nhwc(node)
    input_shape = tuple(int(d) for d in input_sizes)
    geometry = _conv_geometry(node, input_shape, kernel.shape, out_backprop.shape)
    gradient = np.zeros(input_shape, np.float64)
    dy = out_backprop.astype(np.float64)
    for i, j, ((out_rows, in_rows), (out_cols, in_cols)) in _taps(
        geometry, kernel.shape, input_shape, out_backprop.shape
    ):
        contribution = np.einsum(
            "nhwo,co->nhwc", dy[:, out_rows][:, :, out_cols], kernel[i, j].astype(np.float64)
        )
        gradient[:, in_rows[:, None], in_cols[None, :]] += contribution
    return gradient.astype(out_backprop.dtype)


def _pool_windows(node: TfNode, input_shape, out_shape):
    """Per output position (row, col): the input rows and cols of its window."""
    window = _window(node, "ksize")
    strides = _window(node, "strides")
    pads = [
        _padding(node, input_shape[1 + a], out_shape[1 + a], window[a], strides[a], 1, a) for a in range(2)
    ]
    for row in range(out_shape[1]):
        top = row * strides[0] - pads[0]
        rows = range(max(top, 0), min(top + window[0], input_shape[1]))
        for col in range(out_shape[2]):
            left = col * strides[1] - pads[1]
            yield row, col, rows, range(max(left, 0), min(left + window[1], input_shape[2]))


@register("MaxPoolGrad", types={"T": REAL})
def _max_pool_grad(node: TfNode, orig_input, orig_output, grad):
    """MaxPoolGrad: each window's gradient to its first maximal input (in row-major order)."""
    _nhwc(node)
    result = np.zeros(orig_input.shape, np.float64)
    batch, channels = np.meshgrid(
        np.arange(orig_input.shape[0]), np.arange(orig_input.shape[3]), indexing="ij"
    )
    for row, col, rows, cols in _pool_windows(node, orig_input.shape, grad.shape):
        window = orig_input[:, rows.start : rows.stop, cols.start : cols.stop, :]
        flat = window.reshape(window.shape[0], -1, window.shape[3])
        first = np.argmax(flat, axis=1)  # the first of equal maxima, as TF's scan keeps it
        # (unravel_index, not first // len(cols): Debian i386's numpy 1.24 AVX-512 int32 floor_divide by
        # a scalar returns the dividend for 16 or more elements)
        window_row, window_col = np.unravel_index(first, (len(rows), len(cols)))
        at_row, at_col = rows.start + window_row, cols.start + window_col
        np.add.at(result, (batch, at_row, at_col, channels), grad[:, row, col, :])
    return result.astype(orig_input.dtype)


@register("AvgPoolGrad", types={"T": FLOATS})
def _avg_pool_grad(node: TfNode, orig_input_shape, grad):
    """AvgPoolGrad: each window's gradient spread evenly over the inputs it averaged."""
    _nhwc(node)
    shape = tuple(int(d) for d in orig_input_shape)
    result = np.zeros(shape, np.float64)
    for row, col, rows, cols in _pool_windows(node, shape, grad.shape):
        share = grad[:, row, col, :].astype(np.float64) / (len(rows) * len(cols))
        result[:, rows.start : rows.stop, cols.start : cols.stop, :] += share[:, None, None, :]
    return result.astype(grad.dtype)

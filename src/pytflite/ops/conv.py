"""Convolutions (float32): CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and CONV_3D_TRANSPOSE.

They share one geometry: TFLite's output size and leading padding per spatial dimension. Everything
derivable from shapes is planned in prepare; invoke makes a handful of NumPy calls whatever the size:
- CONV_2D / CONV_3D: the input is copied into a zero-bordered scratch when the windows reach padding
  (Staging), then a single copy moves every window (a strided view of it) into an im2col scratch, and
  one matrix product per group does the rest; a constant bias rides in the product as a column of ones.
  A 1x1, stride-1 convolution usually skips im2col: the [N*H*W, C] view of the input is the left operand.
- DEPTHWISE_CONV_2D: one np.einsum over a strided view of every tap of a padded copy of the input.
- TRANSPOSE_CONV / CONV_3D_TRANSPOSE multiply every input pixel by the whole filter matrix at once, then
  sum the products landing on each output: gathered with precomputed row indices, or scatter-added per
  tap (a *tap plan*: per kernel tap, the output positions it reaches and the inputs they read).
Constant filters are laid out for the matrix product once, in prepare (constants never change). The
temporaries are arena tensors, shared with other nodes: every invoke writes what it reads of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.types import AllocationType, BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type
from ..model.options import Padding
from .common import (
    activation_clamp,
    check_arity,
    input_tensor,
    is_constant,
    optional_input_tensor,
    output_tensor,
    reject_quantized_or_hybrid,
    scratch_tensor,
    set_temporaries,
)
from .registry import register_builtin
from .windows import (
    Staging,
    Window,
    byte_strides,
    make_staging,
    output_size,
    padded_copies,
    padding_before_after,
    plan_window,
    staged_input,
    tap_plan,
)

# einsum's C function itself: np.einsum's Python layer costs more than a small depthwise layer (~1 us).
try:
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import c_einsum as _einsum

_FLOAT = (TensorType.FLOAT32,)
_ALL = slice(None)


def _check_float(tensors, roles, op: str) -> None:
    """Every tensor float32; quantized and hybrid variants are planned, not invalid: they say so."""
    reject_quantized_or_hybrid(tensors[0], tensors[1], op)
    for tensor, role in zip(tensors, roles):
        ensure_type(tensor, _FLOAT, role, op)


def _check_bias(bias, channels: int, op: str) -> None:
    ensure_type(bias, _FLOAT, "bias", op)
    count = int(np.prod(bias.shape, dtype=np.int64))
    ensure_eq(count, channels, f"{op} bias size")


def _positive(values: Sequence[int], what: str) -> None:
    ensure(all(v > 0 for v in values), f"{what} must be positive, got {list(values)}")


# --- CONV_2D and CONV_3D: im2col and one matrix product per group --------------------------------------


@dataclass
class ConvState:
    """Per-node state: the im2col and padded-input temporaries made in init, and what prepare derived."""

    scratch: int  # im2col
    stage: int  # the padded input
    # "direct": the input is the left operand (1x1, stride 1); "im2col": windows copied into
    # [pixels, G, K/G]; "im2col_t": into [K, pixels], for short window rows, where [pixels, K] copies
    # would run in short pieces
    mode: str = "im2col"
    groups: int = 1
    staging: Staging | None = None  # None: the input itself is read (no padding)
    # the windows: their shape, their byte strides in the staged input and in the im2col scratch
    windows: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] = ((), (), ())
    depth: int = 0  # im2col columns per group (a last column of ones when the bias is folded in)
    folded: bool = False  # the weights carry the bias as their last row
    weights: np.ndarray | None = None  # [G, K/G (+1), O/G] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    bias: int = -1  # the bias tensor, or -1
    bias_row: np.ndarray | None = None  # a constant bias tiled over the output's last spatial dimension
    clamp: Callable[[np.ndarray], None] | None = None


# im2col goes [K, pixels] when the contiguous run of a window row (kernel width x channels) is shorter.
_TRANSPOSED_IM2COL_RUN = 16
# A 1x1 convolution copies its input into im2col, to fold the bias in, when the output has this many more
# elements than the input: adding the bias to them costs more than the copy.
_FOLD_GAIN = 32768


def _conv_init(context, buffer, length):
    first, second = context.add_tensors(2)
    return ConvState(scratch=first, stage=second)


def _bias_row(bias: np.ndarray, width: int) -> np.ndarray:
    """The bias repeated over one output row, so that adding it runs one long loop per row."""
    return np.tile(bias.reshape(-1), width)


def _plan_conv(
    context,
    node,
    state: ConvState,
    source,
    weights,
    bias,
    out_spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: tuple[int, ...],
    groups: int,
    layout: Callable[[np.ndarray], np.ndarray],
) -> None:
    """The im2col plan of an N-d convolution, its temporaries and the constant weight matrix.

    The input is copied into a zero-bordered scratch when the windows reach padding; then one copy
    moves every window, a strided view of it, into the im2col scratch. A constant bias with a constant
    filter is folded into the product: a column of ones in im2col, a row of biases in the weights.
    """
    n, *in_spatial, channels = source.shape
    group_channels = channels // groups
    out_channels = weights.shape[0] if len(kernel) == 2 else weights.shape[-1]
    state.groups, state.layout, state.staging = groups, layout, None
    constant_weights = is_constant(weights) and weights.data is not None
    constant_bias = bias is not None and is_constant(bias) and bias.data is not None
    state.folded = constant_weights and constant_bias
    pixels = n * int(np.prod(out_spatial, dtype=np.int64))
    pointwise = all(k == 1 for k in kernel) and all(s == 1 for s in strides) and not any(pads)
    temporaries = []
    if pixels == 0 or (pointwise and not (state.folded and pixels * (out_channels - channels) > _FOLD_GAIN)):
        state.mode, state.folded = "direct", False
    else:
        run = group_channels * (kernel[-1] if dilation[-1] == 1 else 1)
        transposed = groups == 1 and run < _TRANSPOSED_IM2COL_RUN
        state.mode = "im2col_t" if transposed else "im2col"
        extents = tuple(
            (o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_spatial, strides, kernel, dilation)
        )
        staged = tuple(source.shape)
        if any(pads) or any(e > size for e, size in zip(extents, in_spatial)):
            staged = (n, *extents, channels)
            state.staging = make_staging(staged, padded_copies(source.shape, extents, pads), 4)
            scratch_tensor(context, state.stage, TensorType.FLOAT32, staged)
            temporaries.append(state.stage)
        batch, *steps, _ = byte_strides(staged, 4)
        # the windows, [N, *out, G, *kernel, C/G], and where im2col keeps them
        shape = (n, *out_spatial, groups, *kernel, group_channels)
        view = (batch, *(s * t for s, t in zip(strides, steps)), group_channels * 4)
        view += (*(d * t for d, t in zip(dilation, steps)), 4)
        kernel_size = int(np.prod(kernel, dtype=np.int64)) * group_channels
        state.depth = kernel_size + state.folded
        if transposed:  # [*kernel, C, N, *out] into [K (+1), pixels]
            order = (*range(len(kernel) + 2, len(shape)), *range(len(kernel) + 1))
            shape, view = tuple(shape[i] for i in order), tuple(view[i] for i in order)
            columns = byte_strides(shape, 4)
            scratch_tensor(context, state.scratch, TensorType.FLOAT32, (state.depth, pixels))
        else:  # into [pixels, G, K/G (+1)]
            columns = byte_strides((n, *out_spatial), 4 * state.depth * groups)
            columns += (state.depth * 4, *byte_strides((*kernel, group_channels), 4))
            scratch_tensor(context, state.scratch, TensorType.FLOAT32, (pixels, groups * state.depth))
        state.windows = (shape, view, columns)
        temporaries.append(state.scratch)
    set_temporaries(context, node, (state.stage, state.scratch), temporaries)
    state.weights = None
    if constant_weights:
        w = layout(weights.data)
        if state.folded:
            w = np.concatenate((w, bias.data.reshape(groups, 1, -1).astype(np.float32)), axis=1)
        state.weights = np.ascontiguousarray(w)
    state.bias, state.bias_row = -1, None
    if bias is not None and not state.folded:
        state.bias = bias.index
        if constant_bias and out_spatial:
            state.bias_row = _bias_row(bias.data, out_spatial[-1])


def _conv_compute(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    x = tensors[node.inputs[0]].data
    groups = state.groups
    pixels = out.size // out.shape[-1]
    rows = out.reshape(pixels, -1)
    w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
    if state.mode == "direct":
        lhs = x.reshape(pixels, -1)
    else:
        x = staged_input(state.staging, x, tensors, state.stage)
        col = tensors[state.scratch].data
        shape, view, columns = state.windows
        np.copyto(np.ndarray(shape, np.float32, col, 0, columns), np.ndarray(shape, np.float32, x, 0, view))
        if state.mode == "im2col_t":
            if state.folded:
                col[-1] = 1
            lhs = col.T
        else:
            if state.folded:
                col.reshape(pixels, groups, state.depth)[:, :, -1] = 1
            lhs = col
    if groups == 1:
        np.matmul(lhs, w[0], out=rows)
    else:
        lhs = lhs.reshape(pixels, groups, -1).transpose(1, 0, 2)
        np.matmul(lhs, w, out=rows.reshape(pixels, groups, -1).transpose(1, 0, 2))
    if state.bias >= 0:
        bias_row = state.bias_row
        if bias_row is None:
            bias_row = _bias_row(tensors[state.bias].data, out.shape[-2])
        lines = out.reshape(-1, bias_row.shape[0])
        np.add(lines, bias_row, out=lines)
    if state.clamp is not None:
        state.clamp(out)


def conv2d_prepare(context, node):
    check_arity(node, (2, 3))
    options = node.builtin_data
    ensure(len(node.inputs) == 3, "has_bias was not true.")  # TFLite's CONV_2D always needs its bias
    source, weights, bias = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    _check_float((source, weights, output), ("input", "filter", "output"), "CONV_2D")
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
    _check_bias(bias, out_channels, "CONV_2D")
    dilation = (options.dilation_h_factor, options.dilation_w_factor)
    window = plan_window(options, (h, w), (kh, kw), dilation, checked=True)
    context.resize_tensor(output, (n, *window.out, out_channels))
    state = node.user_data
    per_group = out_channels // groups

    def layout(filt: np.ndarray) -> np.ndarray:  # [O, KH, KW, Cg] -> [G, KH*KW*Cg, O/G]
        return filt.reshape(groups, per_group, -1).transpose(0, 2, 1)

    _plan_conv(
        context,
        node,
        state,
        source,
        weights,
        bias,
        window.out,
        (kh, kw),
        window.strides,
        window.dilation,
        (window.pads[0][0], window.pads[1][0]),
        groups,
        layout,
    )
    state.clamp = activation_clamp(options.fused_activation_function)


def conv2d_invoke(context, node):
    _conv_compute(context, node, node.user_data)


def conv3d_prepare(context, node):
    check_arity(node, (2, 3))
    options = node.builtin_data
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    bias = optional_input_tensor(context, node, 2)
    output = output_tensor(context, node)
    ensure_eq(len(source.shape), 5, "CONV_3D input rank")
    ensure_eq(len(weights.shape), 5, "CONV_3D filter rank")
    ensure_eq(source.shape[4], weights.shape[3], "CONV_3D input channels vs filter input channels")
    ensure(min(source.shape[1:]) > 0 and min(weights.shape) > 0, "CONV_3D needs non-empty input and filter")
    _check_float((source, weights, output), ("input", "filter", "output"), "CONV_3D")
    out_channels = weights.shape[4]
    if bias is not None:
        _check_bias(bias, out_channels, "CONV_3D")
    strides = (options.stride_d, options.stride_h, options.stride_w)
    dilation = (options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor)
    _positive(strides, "CONV_3D strides")
    _positive(dilation, "CONV_3D dilation")
    in_spatial, kernel = source.shape[1:4], weights.shape[:3]
    out_spatial = tuple(
        output_size(options.padding, in_spatial[i], kernel[i], strides[i], dilation[i], checked=True)
        for i in range(3)
    )
    pads = tuple(
        padding_before_after(in_spatial[i], kernel[i], strides[i], dilation[i], out_spatial[i])[0]
        for i in range(3)
    )
    context.resize_tensor(output, (source.shape[0], *out_spatial, out_channels))
    state = node.user_data

    def layout(filt: np.ndarray) -> np.ndarray:  # [KD, KH, KW, I, O] -> [1, KD*KH*KW*I, O]
        return filt.reshape(1, -1, filt.shape[-1])

    _plan_conv(
        context, node, state, source, weights, bias, out_spatial, kernel, strides, dilation, pads, 1, layout
    )
    state.clamp = activation_clamp(options.fused_activation_function)


def conv3d_invoke(context, node):
    _conv_compute(context, node, node.user_data)


# --- DEPTHWISE_CONV_2D: one einsum over the taps of a padded copy of the input ------------------------------
#
# Output row h is sum over taps (i, j) of an input row segment times the tap's weights tiled over the
# row: with the input laid out so that the segment of tap (i, j) for row h starts at a fixed offset
# i*A + j*B + h*D and is contiguous, the taps form one strided view [N, KH, KW, OH, OW*C] and a single
# np.einsum sums them, its inner loop running along whole output rows. With a column stride of 1 the
# layout is the input padded (and cropped) to what the window reads; with a column stride s > 1 it is
# [N, rows, KW, OW, C], the input columns tap j reads (ow*s + j*dilation) gathered per tap. A depth
# multiplier > 1 repeats each input channel in that copy, so that the sum runs over output channels.


@dataclass
class DepthwiseState:
    scratch: int  # the staged input
    staging: Staging | None = None  # None: the input itself is the padded layout (VALID, stride-1 cols)
    view: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # the taps' view: shape, byte strides
    weights: np.ndarray | None = None  # [KH, KW, OW*C*M]: each tap's weights tiled over an output row
    bias: np.ndarray | None = None  # [OW*C*M]
    clamp: Callable[[np.ndarray], None] | None = None


def _depthwise_init(context, buffer, length):
    return DepthwiseState(scratch=context.add_tensors(1)[0])


def _tile_weights(w: np.ndarray, width: int) -> np.ndarray:
    _, kh, kw, channels = w.shape
    return np.tile(w.reshape(kh, kw, channels), (1, 1, width))


def _plan_depthwise(state: DepthwiseState, shape, window: Window, channels: int) -> tuple[int, ...] | None:
    """The staging and taps view of `window` over an input of `shape`; returns the scratch shape."""
    n, h, w, _ = shape
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = window.out, window.kernel, window.strides, window.dilation
    top, left = window.pads[0][0], window.pads[1][0]
    rows = (oh - 1) * sh + (kh - 1) * dh + 1
    repeat = channels // shape[3]
    if sw == 1:
        cols = ow + (kw - 1) * dw
        if top == 0 and left == 0 and rows <= h and cols <= w and repeat == 1:
            staged, state.staging = tuple(shape), None
        else:
            staged = (n, rows, cols, channels)
            copies = padded_copies(shape, (rows, cols), (top, left))
            state.staging = make_staging(staged, copies, 4, repeat)
        row = staged[2] * channels
        steps = (dh * row, dw * channels, sh * row)
    else:
        staged = (n, rows, kw, ow, channels)
        copies = []
        for row_copy in padded_copies(shape, (rows, w), (top, 0)):
            (_, rows_dst, _, _), (_, rows_src, _, _) = row_copy
            for tap in tap_plan((w,), (ow,), (kw,), (sw,), (dw,), (left,)):
                if not tap.empty:
                    j, cols = tap.index[0], tap.source[0]
                    copies.append(((_ALL, rows_dst, j, tap.out[0], _ALL), (_ALL, rows_src, cols, _ALL)))
        state.staging = make_staging(staged, copies, 4, repeat)
        row = kw * ow * channels
        steps = (dh * row, ow * channels, sh * row)
    batch = int(np.prod(staged[1:], dtype=np.int64))
    state.view = ((n, kh, kw, oh, ow * channels), tuple(4 * s for s in (batch, *steps, 1)))
    return None if state.staging is None else staged


def depthwise_prepare(context, node):
    check_arity(node, (2, 3))
    options = node.builtin_data
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    # Three inputs need a real bias (TFLite's GetInputSafe); two mean none (LiteRT's optimized kernel
    # crashes on that, its reference kernel adds nothing, and so does this one).
    bias = input_tensor(context, node, 2) if len(node.inputs) == 3 else None
    output = output_tensor(context, node)
    ensure_eq(len(source.shape), 4, "DEPTHWISE_CONV_2D input rank")
    ensure_eq(len(weights.shape), 4, "DEPTHWISE_CONV_2D filter rank")
    dilation = (options.dilation_h_factor, options.dilation_w_factor)
    _positive(dilation, "DEPTHWISE_CONV_2D dilation")
    _positive((options.stride_h, options.stride_w), "DEPTHWISE_CONV_2D strides")
    ensure(
        min(source.shape[1:]) > 0 and min(weights.shape[1:]) > 0,
        "DEPTHWISE_CONV_2D needs non-empty input and filter",
    )
    _check_float((source, weights, output), ("input", "filter", "output"), "DEPTHWISE_CONV_2D")
    ensure_eq(weights.shape[0], 1, "DEPTHWISE_CONV_2D filter dimension 0")
    n, h, w, channels = source.shape
    _, kh, kw, out_channels = weights.shape
    ensure_eq(out_channels % channels, 0, "DEPTHWISE_CONV_2D filter channels % input channels")
    if bias is not None:
        ensure_type(bias, _FLOAT, "bias", "DEPTHWISE_CONV_2D")
        ensure_eq(len(bias.shape), 1, "DEPTHWISE_CONV_2D bias rank")
        ensure_eq(bias.shape[0], out_channels, "DEPTHWISE_CONV_2D bias size")
    window = plan_window(options, (h, w), (kh, kw), dilation, checked=True)
    context.resize_tensor(output, (n, *window.out, out_channels))
    state = node.user_data
    state.staging = None
    temporaries = []
    if n * window.out[0] * window.out[1]:
        staged = _plan_depthwise(state, source.shape, window, out_channels)
        if staged is not None:
            scratch_tensor(context, state.scratch, TensorType.FLOAT32, staged)
            temporaries.append(state.scratch)
    set_temporaries(context, node, (state.scratch,), temporaries)
    width = window.out[1]
    state.weights = None
    if is_constant(weights) and weights.data is not None:
        state.weights = _tile_weights(weights.data, width)
    state.bias = None
    if bias is not None and is_constant(bias) and bias.data is not None:
        state.bias = _bias_row(bias.data, width)
    state.clamp = activation_clamp(options.fused_activation_function)


def depthwise_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    x = staged_input(state.staging, tensors[node.inputs[0]].data, tensors, state.scratch)
    w = state.weights
    if w is None:
        w = _tile_weights(tensors[node.inputs[1]].data, out.shape[2])
    rows = out.reshape(out.shape[0], out.shape[1], -1)
    shape, strides = state.view
    _einsum("nijhq,ijq->nhq", np.ndarray(shape, np.float32, x, 0, strides), w, out=rows)
    if len(node.inputs) == 3:
        bias = state.bias
        if bias is None:
            bias = _bias_row(tensors[node.inputs[2]].data, out.shape[2])
        np.add(rows, bias, out=rows)
    if state.clamp is not None:
        state.clamp(out)


# --- TRANSPOSE_CONV and CONV_3D_TRANSPOSE: one matrix product, then a sum of its columns per output ---------
#
# One matrix product multiplies every input pixel by the whole filter: [pixels, taps*O], which is also
# [pixels*taps, O], a row per (input pixel, tap). Output o of input i and tap k is o = i*stride +
# k*dilation - pad. Then, chosen in prepare:
# - "gather" (a constant output shape, a small output): every output pixel lists the rows that land on
#   it (padded with a row of zeros, ended with a row holding the bias); one np.take gathers them and one
#   reduction sums them. Two calls, whatever the kernel;
# - "scatter": the output starts as the bias and each tap adds its rows into a strided slice of it (the
#   tap plan read backwards), one call per tap and no index memory.


@dataclass
class TransposeState:
    scratch: int  # the matrix product: [pixels, taps*O], then (gather) a zero row and a bias row
    gathered: int  # gather: the rows of every output pixel, [R, output pixels, O]
    op: str = ""
    spatial: int = 2
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    padding: Padding = Padding.SAME
    out_channels: int = 0
    taps: int = 1
    weights: np.ndarray | None = None  # [I, taps*O] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    shape: tuple[int, ...] | None = None  # the output shape the plan was made for
    mode: str = "scatter"
    steps: list[tuple[tuple, tuple]] = field(default_factory=list)  # scatter: (output slice, rows)
    rows: np.ndarray | None = None  # gather: [R, output pixels], indices of product rows
    clamp: Callable[[np.ndarray], None] | None = None
    bias: int = -1
    bias_data: np.ndarray | None = None  # a constant bias
    bias_row: np.ndarray | None = None  # the constant bias tiled over an output row


# Gather when the gathered rows, [R, output pixels, O], have at most this many elements.
_GATHER_ELEMENTS = 1 << 18


def _transpose_init(context, buffer, length):
    first, second = context.add_tensors(2)
    return TransposeState(scratch=first, gathered=second)


def _transpose_plan(
    state: TransposeState, source_shape: tuple[int, ...], requested: np.ndarray, gather: bool = False
) -> tuple:
    """Validate the requested output shape against the input; plan the sums (gathered if `gather` and
    small enough); return the shape."""
    op, dims = state.op, state.spatial + 2
    shape = tuple(int(d) for d in np.asarray(requested).reshape(-1))
    ensure_eq(len(shape), dims, f"{op} output shape size")
    ensure(all(d >= 0 for d in shape), f"{op} output shape has a negative dimension: {list(shape)}")
    ensure_eq(shape[0], source_shape[0], f"{op} output batch vs input batch")
    ensure_eq(shape[-1], state.out_channels, f"{op} output channels vs filter output channels")
    if state.spatial == 2:
        ensure(shape[1] > 0 and shape[2] > 0, f"{op} output height and width must be positive")
    out_spatial = shape[1:-1]
    in_spatial = source_shape[1:-1]
    pads = []
    for i in range(state.spatial):
        computed = output_size(
            state.padding, out_spatial[i], state.kernel[i], state.strides[i], state.dilation[i], True
        )
        ensure_eq(
            computed, in_spatial[i], f"{op} input size computed from the output shape (dimension {i + 1})"
        )
        pads.append(
            padding_before_after(
                out_spatial[i], state.kernel[i], state.strides[i], state.dilation[i], computed
            )[0]
        )
    # The convolution's relation with input and output swapped: the tap plan over the output gives,
    # per tap, the inputs that land inside.
    taps = [
        (t, tap)
        for t, tap in enumerate(
            tap_plan(out_spatial, in_spatial, state.kernel, state.strides, state.dilation, pads)
        )
        if not tap.empty
    ]
    state.shape, state.mode, state.steps, state.rows = shape, "scatter", [], None
    if gather:
        pixels = np.arange(int(np.prod(shape[:-1], dtype=np.int64))).reshape(shape[:-1])
        sources = np.arange(int(np.prod(source_shape[:-1], dtype=np.int64))).reshape(source_shape[:-1])
        counts = np.zeros(pixels.shape, np.int64)
        for _, tap in taps:
            counts[(_ALL, *tap.source)] += 1
        depth = int(counts.max(initial=0)) + (state.bias >= 0)
        if depth * pixels.size * state.out_channels <= _GATHER_ELEMENTS:
            zero_row = sources.size * state.taps  # then the bias row
            rows = np.full((depth, pixels.size), zero_row, np.intp)
            if state.bias >= 0:
                rows[-1] = zero_row + 1
            filled = np.zeros(pixels.size, np.intp)
            for t, tap in taps:
                targets = pixels[(_ALL, *tap.source)].reshape(-1)
                rows[filled[targets], targets] = sources[(_ALL, *tap.out)].reshape(-1) * state.taps + t
                filled[targets] += 1
            state.mode, state.rows = "gather", rows
    if state.mode == "scatter":
        state.steps = [((_ALL, *tap.source, _ALL), (_ALL, *tap.out, t, _ALL)) for t, tap in taps]
        if state.bias_data is not None:
            state.bias_row = _bias_row(state.bias_data, shape[-2])
    return shape


def _transpose_prepare(context, node, op: str, spatial: int, options, weight_dims: tuple[int, int]) -> None:
    """Shared prepare; `weight_dims` names the filter's (output channels, input channels) axes."""
    check_arity(node, (3, 4))
    state = node.user_data
    shape_tensor, weights, source = (input_tensor(context, node, i) for i in range(3))
    bias = optional_input_tensor(context, node, 3) if len(node.inputs) == 4 else None
    output = output_tensor(context, node)
    ensure_eq(len(shape_tensor.shape), 1, f"{op} output shape rank")
    ensure_eq(len(source.shape), spatial + 2, f"{op} input rank")
    ensure_eq(len(weights.shape), spatial + 2, f"{op} filter rank")
    _check_float((source, weights, output), ("input", "filter", "output"), op)
    if shape_tensor.type != TensorType.INT32:
        raise KernelError(f"{op} output shape is {shape_tensor.type.name}, not int32.")
    ensure_eq(shape_tensor.shape[0], spatial + 2, f"{op} output shape size")
    o_axis, i_axis = weight_dims
    ensure_eq(source.shape[-1], weights.shape[i_axis], f"{op} input channels vs filter input channels")
    if spatial == 2:
        ensure(
            min(source.shape[1:]) > 0 and min(weights.shape[:3]) > 0, f"{op} needs non-empty input and filter"
        )
    state.op, state.spatial = op, spatial
    state.out_channels = weights.shape[o_axis]
    state.kernel = tuple(weights.shape[1:3]) if spatial == 2 else tuple(weights.shape[:3])
    if bias is not None:
        _check_bias(bias, state.out_channels, op)
    state.bias = node.inputs[3] if bias is not None else -1
    state.bias_row = state.bias_data = None
    if bias is not None and is_constant(bias) and bias.data is not None:
        state.bias_data = np.array(bias.data, np.float32).reshape(-1)
    _positive(state.strides, f"{op} strides")
    _positive(state.dilation, f"{op} dilation")
    state.padding = options.padding
    state.taps = int(np.prod(state.kernel, dtype=np.int64))
    state.weights = None
    if is_constant(weights) and weights.data is not None:
        state.weights = np.ascontiguousarray(state.layout(weights.data))
    state.clamp = activation_clamp(options.fused_activation_function)
    state.shape = None
    pixels = int(np.prod(source.shape[:-1], dtype=np.int64))
    rows = pixels * state.taps
    temporaries = [state.scratch]
    if is_constant(shape_tensor) and shape_tensor.data is not None:
        context.resize_tensor(output, _transpose_plan(state, source.shape, shape_tensor.data, gather=True))
    else:
        context.set_tensor_to_dynamic(output)
    if state.mode == "gather":
        rows += 2
        scratch_tensor(context, state.gathered, TensorType.FLOAT32, (*state.rows.shape, state.out_channels))
        temporaries.append(state.gathered)
    scratch_tensor(context, state.scratch, TensorType.FLOAT32, (rows, state.out_channels))
    set_temporaries(context, node, (state.scratch, state.gathered), temporaries)


def _transpose_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    source = tensors[node.inputs[2]]
    output = tensors[node.outputs[0]]
    if output.allocation_type == AllocationType.DYNAMIC:
        requested = tensors[node.inputs[0]].data
        shape = tuple(int(d) for d in np.asarray(requested).reshape(-1))
        if shape != state.shape:
            shape = _transpose_plan(state, source.shape, requested)
        context.resize_tensor(output, shape)
    out = output.data
    x = source.data
    w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
    col = tensors[state.scratch].data
    pixels = x.size // x.shape[-1]
    if pixels:
        np.matmul(x.reshape(pixels, -1), w, out=col[: pixels * state.taps].reshape(pixels, -1))
    if state.mode == "gather":
        col[-2] = 0
        if state.bias >= 0:
            col[-1] = tensors[state.bias].data
        gathered = tensors[state.gathered].data
        np.take(col, state.rows, axis=0, out=gathered, mode="clip")
        np.add.reduce(gathered, axis=0, out=out.reshape(-1, state.out_channels))
    else:
        cols = col.reshape(*x.shape[:-1], state.taps, state.out_channels)
        if state.bias >= 0:
            bias_row = state.bias_row
            if bias_row is None or bias_row.shape[0] != out.shape[-2] * out.shape[-1]:
                bias_row = _bias_row(tensors[state.bias].data, out.shape[-2])
            np.copyto(out.reshape(-1, bias_row.shape[0]), bias_row)
        else:
            out.fill(0)
        for dst, src in state.steps:
            region = out[dst]
            np.add(region, cols[src], out=region)
    if state.clamp is not None:
        state.clamp(out)


def transpose_conv_prepare(context, node):
    options = node.builtin_data
    state = node.user_data
    state.strides, state.dilation = (options.stride_h, options.stride_w), (1, 1)

    def layout(filt: np.ndarray) -> np.ndarray:  # [O, KH, KW, I] -> [I, KH*KW*O]
        return filt.reshape(filt.shape[0], -1, filt.shape[-1]).transpose(2, 1, 0).reshape(filt.shape[-1], -1)

    state.layout = layout
    _transpose_prepare(context, node, "TRANSPOSE_CONV", 2, options, (0, 3))


def conv3d_transpose_prepare(context, node):
    options = node.builtin_data
    state = node.user_data
    state.strides = (options.stride_d, options.stride_h, options.stride_w)
    state.dilation = (options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor)

    def layout(filt: np.ndarray) -> np.ndarray:  # [KD, KH, KW, O, I] -> [I, KD*KH*KW*O]
        return filt.reshape(-1, filt.shape[-1]).T

    state.layout = layout
    _transpose_prepare(context, node, "CONV_3D_TRANSPOSE", 3, options, (3, 4))


# --- registration ---------------------------------------------------------------------------------------


def _register(op: BuiltinOperator, versions: tuple[int, int], **callbacks: Any) -> None:
    register_builtin(op, versions, types=_FLOAT, **callbacks)


_register(BuiltinOperator.CONV_2D, (1, 8), init=_conv_init, prepare=conv2d_prepare, invoke=conv2d_invoke)
_register(
    BuiltinOperator.DEPTHWISE_CONV_2D,
    (1, 7),
    init=_depthwise_init,
    prepare=depthwise_prepare,
    invoke=depthwise_invoke,
)
_register(
    BuiltinOperator.TRANSPOSE_CONV,
    (1, 5),
    init=_transpose_init,
    prepare=transpose_conv_prepare,
    invoke=_transpose_invoke,
)
_register(BuiltinOperator.CONV_3D, (1, 1), init=_conv_init, prepare=conv3d_prepare, invoke=conv3d_invoke)
_register(
    BuiltinOperator.CONV_3D_TRANSPOSE,
    (1, 1),
    init=_transpose_init,
    prepare=conv3d_transpose_prepare,
    invoke=_transpose_invoke,
)

"""Convolutions (float32): CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and CONV_3D_TRANSPOSE.

They share one geometry: TFLite's output size and leading padding per spatial dimension, and a *tap
plan* made in prepare. For each kernel tap the plan holds the output positions whose input position
falls inside the input, as a slice of the output and a strided slice of the input (padding is never
materialised). With it:
- CONV_2D / CONV_3D copy each tap's input slice into an im2col scratch buffer (a node temporary that
  lives in the arena; the parts a tap does not reach are zeroed) and do one matrix product per group.
  A 1x1, stride-1 convolution skips im2col: the [N*H*W, C] view of the input is the left operand.
- DEPTHWISE_CONV_2D accumulates, tap by tap, the tap's input slice times its per-channel weights.
- TRANSPOSE_CONV / CONV_3D_TRANSPOSE multiply every input pixel by the whole filter matrix at once,
  then scatter-add each tap's columns into a strided slice of the output (the tap plan read backwards).
Constant filters are laid out for the matrix product once, in prepare (constants never change).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

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
)
from .registry import register_builtin

_FLOAT = (TensorType.FLOAT32,)
_ALL = slice(None)


# --- geometry ---------------------------------------------------------------------------------------


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (rounds toward zero)."""
    return -((-a) // b) if a < 0 else a // b


def output_size(
    padding: Padding, size: int, filter_size: int, stride: int, dilation: int, checked: bool = False
) -> int:
    """Output extent of one spatial dimension (TFLite's ComputeOutSize, with C++'s truncating division).

    A negative size is an error in the checked variant (the convolutions) and 0 in the unchecked one
    (pooling), as LiteRT behaves; a VALID window larger than the input may still give 0.
    """
    effective = (filter_size - 1) * dilation + 1
    if filter_size <= 0 or stride <= 0 or dilation <= 0 or size < 0:
        value = -1
    elif padding == Padding.SAME:
        value = (size + stride - 1) // stride
    else:
        value = _trunc_div(size + stride - effective, stride)
    if value < 0:
        if checked:
            raise KernelError(
                f"input size {size} is too small for a filter of {filter_size} (dilation {dilation}, "
                f"stride {stride}) with {Padding(padding).name} padding"
            )
        return 0
    return value


def padding_before_after(
    size: int, filter_size: int, stride: int, dilation: int, out: int
) -> tuple[int, int]:
    """Zeros before and after one spatial dimension (ComputePaddingWithOffset): the odd one goes after."""
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


def plan_window(options, input_hw, kernel_hw, dilation=(1, 1), checked: bool = False) -> Window:
    """The window of a 2-D op whose options carry padding, stride_h and stride_w."""
    strides = (options.stride_h, options.stride_w)
    ensure(strides[0] > 0 and strides[1] > 0, f"strides must be positive, got {list(strides)}")
    ensure(dilation[0] > 0 and dilation[1] > 0, f"dilation must be positive, got {list(dilation)}")
    out = tuple(
        output_size(options.padding, input_hw[i], kernel_hw[i], strides[i], dilation[i], checked)
        for i in range(2)
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
class Tap:
    """One kernel position: the output positions it reaches and the input positions they read.

    `out` and `source` are per-spatial-dimension slices (the source one strided), `gaps` the output
    regions the tap does not reach (disjoint slice tuples), `full` whether it reaches every output.
    """

    index: tuple[int, ...]
    out: tuple[slice, ...]
    source: tuple[slice, ...]
    gaps: tuple[tuple[slice, ...], ...]
    empty: bool

    @property
    def full(self) -> bool:
        return not self.empty and not self.gaps


def tap_plan(
    in_sizes: Sequence[int],
    out_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    pads: Sequence[int],
) -> list[Tap]:
    """Every tap of a window over `in_sizes`: output o of tap k reads input o*stride + k*dilation - pad."""
    taps = []
    for index in itertools.product(*(range(k) for k in kernel)):
        ranges, sources = [], []
        for size, out, k, s, d, p in zip(in_sizes, out_sizes, index, strides, dilation, pads):
            offset = k * d - p  # the input position output 0 reads
            lo = max(0, -((offset) // s)) if offset < 0 else 0
            hi = min(out, (size - 1 - offset) // s + 1) if size - 1 - offset >= 0 else 0
            hi = max(hi, lo)
            ranges.append((lo, hi, out))
            start = lo * s + offset
            sources.append(slice(start, start + (hi - lo - 1) * s + 1, s) if hi > lo else slice(0, 0))
        empty = any(hi <= lo for lo, hi, _ in ranges)
        gaps = []
        if empty:
            if all(out > 0 for _, _, out in ranges):
                gaps.append(tuple(_ALL for _ in ranges))
        else:
            for i, (lo, hi, out) in enumerate(ranges):
                before = tuple(slice(a, b) for a, b, _ in ranges[:i])
                after = tuple(_ALL for _ in ranges[i + 1 :])
                if lo > 0:
                    gaps.append((*before, slice(0, lo), *after))
                if hi < out:
                    gaps.append((*before, slice(hi, out), *after))
        taps.append(
            Tap(
                tuple(index),
                tuple(slice(lo, hi) for lo, hi, _ in ranges),
                tuple(sources),
                tuple(gaps),
                empty,
            )
        )
    return taps


def _ordered(taps: list[Tap]) -> list[Tap]:
    """The taps that reach something, one reaching every output first when there is one."""
    live = [t for t in taps if not t.empty]
    full = [i for i, t in enumerate(live) if t.full]
    if full:
        live.insert(0, live.pop(full[0]))
    return live


def _set_scratch(context, index: int, shape: Sequence[int]) -> None:
    """Type and size a float32 arena temporary made by init."""
    scratch = context.tensors[index]
    scratch.type = TensorType.FLOAT32
    scratch.allocation_type = AllocationType.ARENA_RW
    context.resize_tensor(scratch, tuple(shape))


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
    """Per-node state: the im2col temporary made in init, and what prepare derived."""

    scratch: int
    # "direct": the input is the left operand (1x1, stride 1); "im2col": taps copied into [pixels, K];
    # "im2col_t": into [K, pixels], for few input channels, where the [pixels, K] copy has short rows
    mode: str = "im2col"
    groups: int = 1
    batch: int = 0
    out_spatial: tuple[int, ...] = ()
    kernel: tuple[int, ...] = ()
    group_channels: int = 0
    copies: list[tuple[tuple, tuple]] = field(default_factory=list)
    zeros: list[tuple] = field(default_factory=list)
    weights: np.ndarray | None = None  # [G, K/G, O/G] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    bias: int = -1  # the bias tensor, or -1
    bias_row: np.ndarray | None = None  # a constant bias tiled over the output's last spatial dimension
    clamp: Callable[[np.ndarray], None] | None = None


# Up to this many input channels, im2col is laid out [K, pixels]: copies then run along pixels.
_TRANSPOSED_IM2COL_CHANNELS = 8


def _conv_init(context, buffer, length):
    return ConvState(scratch=context.add_tensors(1)[0])


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
    """The im2col plan of an N-d convolution, its scratch temporary and the constant weight matrix."""
    n, *in_spatial, channels = source.shape
    group_channels = channels // groups
    state.groups, state.batch, state.out_spatial = groups, n, out_spatial
    state.kernel, state.group_channels, state.layout = kernel, group_channels, layout
    state.copies, state.zeros = [], []
    if all(k == 1 for k in kernel) and all(s == 1 for s in strides) and not any(pads):
        state.mode = "direct"
        node.temporaries = ()
    else:
        transposed = groups == 1 and channels <= _TRANSPOSED_IM2COL_CHANNELS
        state.mode = "im2col_t" if transposed else "im2col"
        for tap in tap_plan(in_spatial, out_spatial, kernel, strides, dilation, pads):
            if transposed:  # view [*kernel, C, N, *out]; source: the input as [C, N, *in]
                if not tap.empty:
                    state.copies.append(((*tap.index, _ALL, _ALL, *tap.out), (_ALL, _ALL, *tap.source)))
                state.zeros.extend((*tap.index, _ALL, _ALL, *gap) for gap in tap.gaps)
            else:  # view [N, *out, G, *kernel, C/G]; source: the input as [N, *in, G, C/G]
                if not tap.empty:
                    state.copies.append(
                        ((_ALL, *tap.out, _ALL, *tap.index, _ALL), (_ALL, *tap.source, _ALL, _ALL))
                    )
                state.zeros.extend((_ALL, *gap, _ALL, *tap.index, _ALL) for gap in tap.gaps)
        pixels = n * int(np.prod(out_spatial, dtype=np.int64))
        depth = channels * int(np.prod(kernel, dtype=np.int64))
        _set_scratch(context, state.scratch, (depth, pixels) if transposed else (pixels, depth))
        node.temporaries = (state.scratch,)
    state.weights = None
    if is_constant(weights) and weights.data is not None:
        state.weights = np.ascontiguousarray(layout(weights.data))
    state.bias, state.bias_row = -1, None
    if bias is not None:
        state.bias = bias.index
        if is_constant(bias) and bias.data is not None and out_spatial:
            state.bias_row = _bias_row(bias.data, out_spatial[-1])


def _conv_compute(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    x = tensors[node.inputs[0]].data
    groups, kernel_channels = state.groups, state.group_channels
    pixels = out.size // out.shape[-1]
    rows = out.reshape(pixels, -1)
    w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
    if state.mode == "im2col_t":
        col = tensors[node.temporaries[0]].data
        view = col.reshape(*state.kernel, kernel_channels, state.batch, *state.out_spatial)
        xt = np.moveaxis(x, -1, 0)
        for dst, src in state.copies:
            view[dst] = xt[src]
        for dst in state.zeros:
            view[dst] = 0
        np.matmul(col.T, w[0], out=rows)
    else:
        if state.mode == "direct":
            lhs = x.reshape(pixels, groups, kernel_channels)
        else:
            col = tensors[node.temporaries[0]].data
            view = col.reshape(state.batch, *state.out_spatial, groups, *state.kernel, kernel_channels)
            xg = x.reshape(*x.shape[:-1], groups, kernel_channels)
            for dst, src in state.copies:
                view[dst] = xg[src]
            for dst in state.zeros:
                view[dst] = 0
            lhs = col.reshape(pixels, groups, -1)
        if groups == 1:
            np.matmul(lhs[:, 0, :], w[0], out=rows)
        else:
            per_group = rows.shape[1] // groups
            np.matmul(
                lhs.transpose(1, 0, 2), w, out=rows.reshape(pixels, groups, per_group).transpose(1, 0, 2)
            )
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


# --- DEPTHWISE_CONV_2D: a sum over kernel taps of input slice x per-channel weights ------------------------
#
# NumPy is fast when the innermost loop is long: a tap's input slice [N, rows, cols, C] multiplied by
# weights broadcast from [cols, C] (tiled once) runs as one loop over cols*C per row, if the slice's
# columns are adjacent. With a column stride > 1 they are not, so the input is first split into
# `stride_w` column phases (input column c goes to phase c % stride_w, position c // stride_w), where
# every tap reads adjacent columns of one phase. A depth multiplier > 1 repeats each input channel in
# that staging copy, so that the sum runs over output channels directly.


@dataclass(frozen=True)
class ColumnSteps:
    """Per-tap (output region, input region, tap index, width) of a 2-D window over NHWC data.

    With `phases` > 1 (or `repeat` > 1) input regions index a staging array
    [phases, N, H, ceil(W / phases), C * repeat] filled by `stage_columns`; otherwise the input itself.
    """

    steps: tuple[tuple[tuple, tuple, tuple[int, int], int], ...]
    direct: bool  # the first step reaches every output position
    phases: int
    repeat: int
    stage_shape: tuple[int, ...] | None


def column_steps(
    shape: tuple[int, ...], window: Window, repeat: int = 1, staged: bool | None = None
) -> ColumnSteps:
    """The tap steps of `window` over an NHWC input of `shape` (see ColumnSteps)."""
    n, h, w, c = shape
    phases = window.strides[1]
    if staged is None:
        staged = phases > 1 or repeat > 1
    pads = [p[0] for p in window.pads]
    taps = _ordered(tap_plan((h, w), window.out, window.kernel, window.strides, window.dilation, pads))
    steps = []
    for tap in taps:
        rows, cols = tap.source
        width = tap.out[1].stop - tap.out[1].start
        if staged:
            start = cols.start // phases
            source = (cols.start % phases, _ALL, rows, slice(start, start + width), _ALL)
        else:
            source = (_ALL, rows, cols, _ALL)
        steps.append(((_ALL, *tap.out, _ALL), source, tap.index, width))
    stage_shape = (phases, n, h, -(-w // phases), c * repeat) if staged else None
    return ColumnSteps(tuple(steps), bool(taps) and taps[0].full, phases, repeat, stage_shape)


def stage_columns(x: np.ndarray, stage: np.ndarray, plan: ColumnSteps) -> None:
    """Copy `x` into the staging array: column phases split, channels repeated `plan.repeat` times."""
    n, h, _, c = x.shape
    for phase in range(plan.phases):
        columns = x[:, :, phase :: plan.phases, :]
        count = columns.shape[2]
        if plan.repeat == 1:
            stage[phase, :, :, :count, :] = columns
        else:
            target = stage[phase, :, :, :count, :].reshape(n, h, count, c, plan.repeat)
            for m in range(plan.repeat):
                target[..., m] = columns


@dataclass
class DepthwiseState:
    scratch: int  # the product of one tap, output-sized
    stage: int  # the column-phase / channel-repeat staging copy of the input
    plan: ColumnSteps | None = None
    out_width: int = 0
    weights: np.ndarray | None = None  # [KH, KW, OW, C*M]: each tap's weights tiled over a row
    bias: np.ndarray | None = None  # [OW, C*M]
    clamp: Callable[[np.ndarray], None] | None = None


def _depthwise_init(context, buffer, length):
    first, second = context.add_tensors(2)
    return DepthwiseState(scratch=first, stage=second)


def _tile_weights(w: np.ndarray, width: int) -> np.ndarray:
    _, kh, kw, channels = w.shape
    return np.ascontiguousarray(np.broadcast_to(w.reshape(kh, kw, 1, channels), (kh, kw, width, channels)))


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
    plan = column_steps(source.shape, window, repeat=out_channels // channels)
    state.plan, state.out_width = plan, window.out[1]
    temporaries = []
    if len(plan.steps) > 1 or not plan.direct:
        _set_scratch(context, state.scratch, output.shape)
        temporaries.append(state.scratch)
    if plan.stage_shape is not None:
        _set_scratch(context, state.stage, plan.stage_shape)
        temporaries.append(state.stage)
    node.temporaries = tuple(temporaries)
    state.weights = None
    if is_constant(weights) and weights.data is not None:
        state.weights = _tile_weights(weights.data, window.out[1])
    state.bias = None
    if bias is not None and is_constant(bias) and bias.data is not None:
        state.bias = np.ascontiguousarray(np.broadcast_to(bias.data, (window.out[1], out_channels)))
    state.clamp = activation_clamp(options.fused_activation_function)


def depthwise_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    plan = state.plan
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    x = tensors[node.inputs[0]].data
    if plan.stage_shape is not None:
        stage = tensors[node.temporaries[-1]].data
        stage_columns(x, stage, plan)
        x = stage
    w = state.weights
    if w is None:
        w = _tile_weights(tensors[node.inputs[1]].data, state.out_width)
    steps = plan.steps
    if plan.direct:
        _, src, (i, j), width = steps[0]
        np.multiply(x[src], w[i, j], out=out)
        steps = steps[1:]
    else:
        out.fill(0)
    if steps:
        tmp = tensors[node.temporaries[0]].data
        for dst, src, (i, j), width in steps:
            region, product = out[dst], tmp[dst]
            np.multiply(x[src], w[i, j, :width], out=product)
            np.add(region, product, out=region)
    if len(node.inputs) == 3:
        bias = state.bias
        if bias is None:
            bias = tensors[node.inputs[2]].data
        np.add(out, bias, out=out)
    if state.clamp is not None:
        state.clamp(out)


# --- TRANSPOSE_CONV and CONV_3D_TRANSPOSE: one matrix product, then a scatter-add per tap ----------------


@dataclass
class TransposeState:
    scratch: int
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
    shape: tuple[int, ...] | None = None  # the output shape the steps were planned for
    steps: list[tuple[tuple, tuple]] = field(default_factory=list)
    clamp: Callable[[np.ndarray], None] | None = None
    bias: int = -1
    bias_data: np.ndarray | None = None  # a constant bias
    bias_row: np.ndarray | None = None  # the constant bias tiled over an output row


def _transpose_init(context, buffer, length):
    return TransposeState(scratch=context.add_tensors(1)[0])


def _transpose_plan(state: TransposeState, source_shape: tuple[int, ...], requested: np.ndarray) -> tuple:
    """Validate the requested output shape against the input; plan the scatter; return the shape."""
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
    # Output o of input i and tap k: o = i*stride + k*dilation - pad, the convolution's relation with
    # input and output swapped: the tap plan over the output gives, per tap, the inputs that land inside.
    taps = tap_plan(out_spatial, in_spatial, state.kernel, state.strides, state.dilation, pads)
    state.steps = []
    for t, tap in enumerate(taps):
        if not tap.empty:
            state.steps.append(((_ALL, *tap.source, _ALL), (_ALL, *tap.out, t, _ALL)))
    state.shape = shape
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
    pixels = int(np.prod(source.shape[:-1], dtype=np.int64))
    _set_scratch(context, state.scratch, (pixels, state.taps * state.out_channels))
    node.temporaries = (state.scratch,)
    state.weights = None
    if is_constant(weights) and weights.data is not None:
        state.weights = np.ascontiguousarray(state.layout(weights.data))
    state.clamp = activation_clamp(options.fused_activation_function)
    state.shape = None
    if is_constant(shape_tensor) and shape_tensor.data is not None:
        context.resize_tensor(output, _transpose_plan(state, source.shape, shape_tensor.data))
    else:
        context.set_tensor_to_dynamic(output)


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
    col = tensors[node.temporaries[0]].data
    if col.size:
        np.matmul(x.reshape(-1, x.shape[-1]), w, out=col)
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

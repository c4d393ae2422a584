"""CONV_2D and CONV_3D: im2col and one matrix product per group.

ConvState holds a CONV_2D's or CONV_3D's plan; plan_conv makes it (into prepare's draft of it) and
conv_compute runs it (the float kernels); the quantized and hybrid CONV_2D run conv_product on their own
values (conv2d.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ...fidelity.eigen_order import eigen_product, sequential_products
from ..common import add_scratch_tensors, make_calls, scratch_tensor
from ..jit import read_only
from ..windows import Staging, byte_strides, make_staging, padded_copies, staged_input
from .common import FLOAT_TYPES, constant_data, draft_of
from .rows import apply_row, bias_and_clamp_calls, channel_row, fill_row

if TYPE_CHECKING:
    from .conv2d import IntegerConv
    from .conv2d_hybrid import HybridConv


@dataclass(frozen=True)
class ConvState:
    """CONV_2D's and CONV_3D's op data: the temporaries made in init, and what prepare derived."""

    scratch: int  # im2col
    stage: int  # the padded input
    acc: int = -1  # quantized and hybrid: the product [pixels, O] (float32 or float64)
    wide: int = -1  # quantized: int64 accumulators [pixels, O]; hybrid: the quantized input
    # "direct": the input is the left operand (1x1, stride 1); "im2col": windows copied into
    # [pixels, G, K/G]; "im2col_t": into [K, pixels], for short window rows, where [pixels, K] copies
    # would run in short pieces; "exact": into [G, K/G, pixels], summed in LiteRT's order (the sums,
    # [O, pixels], in the `acc` temporary)
    mode: str = "im2col"
    # exact mode: the cache sizes of LiteRT's optimized (Eigen) order; None: in window order
    eigen: tuple[int, int, int] | None = None
    groups: int = 1
    staging: Staging | None = None  # None: the input itself is read (no padding)
    pad_value: int = 0  # what the staging's borders hold (a quantized input's zero point)
    # the windows: their shape, their byte strides in the staged input and in the im2col scratch
    windows: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] = ((), (), ())
    depth: int = 0  # im2col columns per group (a last column of ones when the bias is folded in)
    folded: bool = False  # the weights carry the bias as their last row
    dtype: Any = np.float32  # the staged input, im2col, weights and product
    weights: np.ndarray | None = None  # [G, K/G (+1), O/G] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    bias: int = -1  # the bias tensor, or -1
    bias_row: np.ndarray | None = None  # the bias tiled over a row (rows.py); refilled when not constant
    bias_constant: bool = False
    clamp: Callable[[np.ndarray], None] | None = None
    integer: IntegerConv | None = None
    hybrid: HybridConv | None = None
    as_calls: bool = False  # float, constant filter, not exact: conv_compute is float_calls' calls
    # exact mode in a plain order, where compiled kernels run: conv2d_compiled.conv_float, and the 2-D
    # window it reads: (kernel h, w), (stride h, w, dilation h, w, pad top, left)
    compiled_exact: Callable | None = None
    compiled_by_pixels: bool = False  # it is conv_float_by_pixels (which takes the scratch)
    geometry: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    # quantized, where float64 would be exact and float32 is not (common.exact_depth_chunks): the product
    # as float32 products over these ranges of im2col's columns, each landing in `chunk_product` and
    # summed into the float64 product (twice float64's speed, as exact)
    depth_chunks: tuple[tuple[int, int], ...] = ()
    chunk_product: np.ndarray | None = None


# im2col goes [K, pixels] when the contiguous run of a window row (kernel width x channels) is shorter.
_TRANSPOSED_IM2COL_RUN = 16
# A 1x1 convolution copies its input into im2col, to fold the bias in, when the output has this many more
# elements than the input: adding the bias to them costs more than the copy.
_FOLD_GAIN = 32768


def conv_init(context, buffer, length):
    stage, scratch, acc, wide = add_scratch_tensors(context, 4)
    return ConvState(scratch=scratch, stage=stage, acc=acc, wide=wide)


_OWNED = ("stage", "scratch", "acc", "wide")  # the temporaries init makes


def conv_draft(node):
    """A fresh draft of the node's ConvState for prepare (common._draft)."""
    return draft_of(node.user_data, *_OWNED)


def owned(state) -> tuple[int, ...]:
    return tuple(getattr(state, name) for name in _OWNED)


def plan_conv(
    context,
    state,
    source_shape: tuple[int, ...],
    out_channels: int,
    out_spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: tuple[int, ...],
    groups: int,
    weights_matrix: np.ndarray | None,
    fold_bias: np.ndarray | None,
    dtype: Any = np.float32,
    source_itemsize: int = 4,
    direct: bool = True,
    exact: bool = False,
) -> list[int]:
    """The im2col plan of an N-d convolution and its constant weight matrix, into prepare's draft of a
    ConvState; returns the temporaries it uses.

    The input is copied into a bordered scratch (of `dtype`) when the windows reach padding; then one
    copy moves every window, a strided view of it, into the im2col scratch. A constant bias with a
    constant filter (`fold_bias`, with `weights_matrix`) is folded into the product: a column of ones in
    im2col, a row of biases in the weights. `direct`: a 1x1 stride-1 convolution may use the input
    itself as the left operand (its elements must then be `dtype`). `exact` (float32 only): im2col
    goes [G, K/G, pixels] for sequential_products, the bias is never folded (it comes last).
    """
    n, *in_spatial, channels = source_shape
    group_channels = channels // groups
    item = np.dtype(dtype).itemsize
    state.groups, state.staging, state.dtype = groups, None, np.dtype(dtype)
    state.folded = weights_matrix is not None and fold_bias is not None and not exact
    pixels = n * int(np.prod(out_spatial, dtype=np.int64))
    pointwise = all(k == 1 for k in kernel) and all(s == 1 for s in strides) and not any(pads)
    temporaries = []
    gain = state.folded and pixels * (out_channels - channels) > _FOLD_GAIN
    if pixels == 0 or (direct and pointwise and not gain and not exact):
        state.mode, state.folded = "direct", False
    else:
        run = group_channels * (kernel[-1] if dilation[-1] == 1 else 1)
        transposed = groups == 1 and run < _TRANSPOSED_IM2COL_RUN
        state.mode = "exact" if exact else "im2col_t" if transposed else "im2col"
        extents = tuple(
            (o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_spatial, strides, kernel, dilation)
        )
        staged, read = tuple(source_shape), source_itemsize
        if any(pads) or any(e > size for e, size in zip(extents, in_spatial)):
            staged, read = (n, *extents, channels), item
            scratch_tensor(context, state.stage, FLOAT_TYPES[state.dtype], staged)  # Limits, then the mask
            state.staging = make_staging(staged, padded_copies(source_shape, extents, pads), item)
            temporaries.append(state.stage)
        batch, *steps, _ = byte_strides(staged, read)
        # the windows, [N, *out, G, *kernel, C/G], and where im2col keeps them
        shape = (n, *out_spatial, groups, *kernel, group_channels)
        view = (batch, *(s * t for s, t in zip(strides, steps)), group_channels * read)
        view += (*(d * t for d, t in zip(dilation, steps)), read)
        kernel_size = int(np.prod(kernel, dtype=np.int64)) * group_channels
        state.depth = kernel_size + state.folded
        if exact:  # [G, *kernel, C/G, N, *out] into [G, K/G, pixels]; the sums [O, pixels]
            spatial = len(kernel)
            order = (spatial + 1, *range(spatial + 2, len(shape)), *range(spatial + 1))
            shape, view = tuple(shape[i] for i in order), tuple(view[i] for i in order)
            columns = byte_strides(shape, item)
            scratch_tensor(context, state.scratch, FLOAT_TYPES[state.dtype], (groups * kernel_size, pixels))
            scratch_tensor(context, state.acc, FLOAT_TYPES[state.dtype], (out_channels, pixels))
            temporaries.append(state.acc)
        elif transposed:  # [*kernel, C, N, *out] into [K (+1), pixels]
            order = (*range(len(kernel) + 2, len(shape)), *range(len(kernel) + 1))
            shape, view = tuple(shape[i] for i in order), tuple(view[i] for i in order)
            columns = byte_strides(shape, item)
            scratch_tensor(context, state.scratch, FLOAT_TYPES[state.dtype], (state.depth, pixels))
        else:  # into [pixels, G, K/G (+1)]
            columns = byte_strides((n, *out_spatial), item * state.depth * groups)
            columns += (state.depth * item, *byte_strides((*kernel, group_channels), item))
            scratch_tensor(context, state.scratch, FLOAT_TYPES[state.dtype], (pixels, groups * state.depth))
        state.windows = (shape, view, columns)
        temporaries.append(state.scratch)
    state.weights = _product_weights(weights_matrix, fold_bias if state.folded else None, groups, dtype)
    return temporaries


def _product_weights(weights_matrix, fold_bias, groups: int, dtype) -> np.ndarray | None:
    """The constant right operand of the product, with the folded bias as one more row per group."""
    if weights_matrix is None:
        return None
    if fold_bias is not None:
        weights_matrix = np.concatenate(
            (weights_matrix, fold_bias.reshape(groups, 1, -1).astype(dtype)), axis=1
        )
    return np.ascontiguousarray(weights_matrix, dtype=dtype)


def plan_float_bias(state, bias, pixels: int) -> None:
    """A bias not folded into the product is added after it, tiled over a row (a run-time bias is
    written into that row at every invoke)."""
    state.bias, state.bias_row, state.bias_constant = -1, None, False
    if bias is not None and not state.folded:
        state.bias = bias.index
        state.bias_constant = constant_data(bias) is not None
        values = bias.data if state.bias_constant else np.zeros(bias.shape, np.float32)
        state.bias_row = channel_row(values, pixels, np.float32)


def _bias(tensors, state: ConvState) -> np.ndarray:
    """The bias row of a float convolution."""
    if state.bias_constant:
        return state.bias_row
    return fill_row(state.bias_row, tensors[state.bias].data)


def conv_product(tensors, state: ConvState, x: np.ndarray, w: np.ndarray, rows: np.ndarray) -> None:
    """rows [pixels, O] = the windows of x times the weights (one matrix product per group)."""
    for call in product_calls(
        state, x, staging_scratch(tensors, state), im2col_scratch(tensors, state), w, rows
    ):
        call()


def staging_scratch(tensors, state: ConvState) -> np.ndarray | None:
    """The staged input's scratch, or None (no padding)."""
    return None if state.staging is None else tensors[state.stage].data


def im2col_scratch(tensors, state: ConvState) -> np.ndarray | None:
    """The im2col scratch, or None (direct mode)."""
    return None if state.mode == "direct" else tensors[state.scratch].data


def product_calls(state: ConvState, x, stage, col, w: np.ndarray, rows: np.ndarray) -> list:
    """conv_product as calls to make, on the input `x`, the staging scratch `stage`
    (None: no padding) and the im2col scratch `col` (None: direct)."""
    groups = state.groups
    pixels = rows.shape[0]
    calls = []
    if state.mode == "direct":
        lhs = x.reshape(pixels, -1)
    else:
        if state.staging is not None:
            calls += state.staging.calls(x, stage, state.pad_value)
            x = stage
        shape, view, columns = state.windows
        windows = np.ndarray(shape, col.dtype, col, 0, columns)
        calls.append(partial(np.copyto, windows, np.ndarray(shape, x.dtype, x, 0, view)))
        if state.mode == "im2col_t":
            if state.folded:
                calls.append(partial(np.copyto, col[-1], 1))
            lhs = col.T
        else:
            if state.folded:
                calls.append(partial(np.copyto, col.reshape(pixels, groups, state.depth)[:, :, -1], 1))
            lhs = col
    if groups == 1 and state.depth_chunks:
        for i, (first, end) in enumerate(state.depth_chunks):
            part = state.chunk_product
            calls.append(partial(np.matmul, lhs[:, first:end], w[0][first:end], out=part))
            calls.append(partial(np.copyto, rows, part) if i == 0 else partial(np.add, rows, part, out=rows))
    elif groups == 1:
        calls.append(partial(np.matmul, lhs, w[0], out=rows))
    else:
        lhs = lhs.reshape(pixels, groups, -1).transpose(1, 0, 2)
        calls.append(partial(np.matmul, lhs, w, out=rows.reshape(pixels, groups, -1).transpose(1, 0, 2)))
    return calls


def _conv_exact_product(tensors, state: ConvState, x: np.ndarray, w: np.ndarray, rows: np.ndarray) -> None:
    """rows [pixels, O] = the windows of x times the weights [G, K/G, O/G] (+ the bias), each sum taken
    in LiteRT's order (see __init__.py), one float32 rounding per product and per addition."""
    x = staged_input(state.staging, x, tensors, state.stage, state.pad_value)
    col = tensors[state.scratch].data
    shape, view, columns = state.windows
    np.copyto(np.ndarray(shape, col.dtype, col, 0, columns), np.ndarray(shape, x.dtype, x, 0, view))
    groups, pixels = state.groups, rows.shape[0]
    sums = tensors[state.acc].data
    w = np.ascontiguousarray(w)  # a runtime filter (the layout transposes it)
    if state.eigen:
        eigen_product(col, w[0], sums, state.eigen)
    else:
        sequential_products(col.reshape(groups, -1, pixels), w, sums.reshape(groups, -1, pixels))
    np.copyto(rows, sums.T)
    if state.bias >= 0:  # LiteRT adds the bias to the finished sums
        apply_row(np.add, rows, _bias(tensors, state), rows)


def plan_conv2d(context, state, source, out_channels: int, window, groups: int, matrix, *args, **kwargs):
    """plan_conv for a 2-D window (CONV_2D): its geometry from the WindowGeometry."""
    pads = (window.pads[0][0], window.pads[1][0])
    geometry = (window.out, window.kernel, window.strides, window.dilation, pads)
    return plan_conv(
        context, state, tuple(source.shape), out_channels, *geometry, groups, matrix, *args, **kwargs
    )


def made_of_calls(state) -> bool:
    """Whether conv_compute is float_calls' calls: a float convolution with a constant filter (not in
    exact mode)."""
    return state.weights is not None and state.mode != "exact"


def float_calls(context, node) -> tuple | None:
    """conv_compute's product, bias and activation as calls on the node's arrays (Registration.calls),
    where it is made of calls alone (made_of_calls); else None."""
    state = node.user_data
    if not state.as_calls:
        return None
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return ()
    x = tensors[node.inputs[0]].data
    bias = tensors[state.bias].data if state.bias >= 0 else None
    stage, col = staging_scratch(tensors, state), im2col_scratch(tensors, state)
    calls = product_calls(state, x, stage, col, state.weights, out.reshape(-1, out.shape[-1]))
    row = state.bias_row if state.bias >= 0 else None
    return (*calls, *bias_and_clamp_calls(row, state.bias_constant, bias, out, state.clamp, out))


def conv_compute(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    if state.as_calls:
        make_calls(float_calls(context, node))
        return
    x = tensors[node.inputs[0]].data
    pixels = out.size // out.shape[-1]
    rows = out.reshape(pixels, -1)
    w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
    if state.mode == "exact":
        if state.compiled_exact is not None and x.flags.c_contiguous:  # (CONV_2D: a bias, unfolded)
            bias = read_only(tensors[state.bias].data.reshape(-1))
            weights = read_only(np.ascontiguousarray(w[0]))  # a runtime filter: the layout transposes it
            arguments = (x, weights, *state.geometry, bias)
            if state.compiled_by_pixels:  # its scratch: the windows, the sums
                arguments += (tensors[state.scratch].data, tensors[state.acc].data)
            state.compiled_exact(*arguments, out)
        else:
            _conv_exact_product(tensors, state, x, w, rows)
        if state.clamp is not None:
            state.clamp(out)
        return
    conv_product(tensors, state, x, w, rows)
    if state.bias >= 0:
        apply_row(np.add, out, _bias(tensors, state), out)
    if state.clamp is not None:
        state.clamp(out)

"""How DEPTHWISE_CONV_2D plans and computes its sums: the staged input (padding, the depth multiplier's
repeats) and the taps' strided view over it, the weights tiled along a row of output pixels, the sums as
one einsum (or as its call, for a kernel's calls), and exact mode's sums in LiteRT's order."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ...fidelity.eigen_order import sum_in_order
from ..common import scratch_tensor
from ..windows import Window, make_staging, padded_copies, staged_input, tap_plan
from .common import ALL, FLOAT_TYPES

if TYPE_CHECKING:
    from .depthwise import DepthwiseState

# einsum's C function itself: np.einsum's Python layer costs more than a small depthwise layer (~1 us).
try:
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import c_einsum as _einsum


def tile_weights(w: np.ndarray, width: int) -> np.ndarray:
    """A [1, KH, KW, C] filter as [KH, KW, width * C]: its taps repeated along a row of output pixels."""
    _, kh, kw, channels = w.shape
    return np.tile(w.reshape(kh, kw, channels), (1, 1, width))


def plan_depthwise(context, state, shape, window: Window, channels: int, stage: bool = False) -> bool:
    """The staging and taps view of `window` over an input of `shape` (elements of `state.dtype`, the
    staged copy's too; `stage`: always copy), into prepare's draft of a DepthwiseState; sizes the scratch
    and returns whether there is one."""
    n, h, w, _ = shape
    item = state.dtype.itemsize
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = window.out, window.kernel, window.strides, window.dilation
    top, left = window.pads[0][0], window.pads[1][0]
    rows = (oh - 1) * sh + (kh - 1) * dh + 1
    repeat = channels // shape[3]
    if sw == 1:
        cols = ow + (kw - 1) * dw
        if top == 0 and left == 0 and rows <= h and cols <= w and repeat == 1 and not stage:
            staged, state.staging = tuple(shape), None
        else:
            staged = (n, rows, cols, channels)
            scratch_tensor(context, state.scratch, FLOAT_TYPES[state.dtype], staged)  # Limits, then mask
            copies = padded_copies(shape, (rows, cols), (top, left))
            state.staging = make_staging(staged, copies, item, repeat)
        row = staged[2] * channels
        steps = (dh * row, dw * channels, sh * row)
    else:
        staged = (n, rows, kw, ow, channels)
        scratch_tensor(context, state.scratch, FLOAT_TYPES[state.dtype], staged)  # Limits, then the mask
        copies = []
        for row_copy in padded_copies(shape, (rows, w), (top, 0)):
            (_, rows_dst, _, _), (_, rows_src, _, _) = row_copy
            for tap in tap_plan((w,), (ow,), (kw,), (sw,), (dw,), (left,)):
                if not tap.empty:
                    j, cols = tap.index[0], tap.source[0]
                    copies.append(((ALL, rows_dst, j, tap.out[0], ALL), (ALL, rows_src, cols, ALL)))
        state.staging = make_staging(staged, copies, item, repeat)
        row = kw * ow * channels
        steps = (dh * row, ow * channels, sh * row)
    batch = int(np.prod(staged[1:], dtype=np.int64))
    state.view = ((n, kh, kw, oh, ow * channels), tuple(item * s for s in (batch, *steps, 1)))
    return state.staging is not None


def plan_depthwise_sums(context, node, state, source, window, out_channels, dtype, stage: bool) -> list[int]:
    """Staging (of `dtype`) and the float sums scratch [N, OH, OW*C] of a quantized or hybrid kernel."""
    temporaries = []
    state.dtype = np.dtype(dtype)
    n = source.shape[0]
    if n * window.out[0] * window.out[1]:
        if plan_depthwise(context, state, source.shape, window, out_channels, stage):
            temporaries.append(state.scratch)
        scratch_tensor(
            context, state.acc, FLOAT_TYPES[state.dtype], (n, *window.out[:1], window.out[1] * out_channels)
        )
        temporaries.append(state.acc)
    return temporaries


def depthwise_exact(tensors, state: DepthwiseState, x, w: np.ndarray, bias, rows: np.ndarray) -> None:
    """rows [N, OH, OW*C] = the bias and the taps' products summed in LiteRT's order (see __init__.py)."""
    x = staged_input(state.staging, x, tensors, state.scratch, state.pad_value)
    shape, strides = state.view
    taps = np.ndarray(shape, x.dtype, x, 0, strides).transpose(1, 2, 0, 3, 4)  # [KH, KW, N, OH, Q]
    kh, kw, _, height, _ = taps.shape
    terms = tensors[state.acc].data  # [KH*KW + 1, N, R, Q], C-contiguous
    products, start = (terms[1:], terms[0]) if state.bias_first else (terms[:-1], terms[-1])
    products = products.reshape(kh, kw, *terms.shape[1:])  # a view: the first axis split
    weights = w[:, :, None, None, :]
    step = terms.shape[2]
    for first in range(0, height, step):
        count = min(step, height - first)
        np.multiply(taps[:, :, :, first : first + count], weights, out=products[:, :, :, :count])
        if bias is None:
            start[:, :count] = 0
        else:  # the channels of every output pixel
            start[:, :count].reshape(*start.shape[:1], count, -1, bias.size)[...] = bias.reshape(-1)
        sum_in_order(terms[:, :, :count], rows[:, first : first + count])


def depthwise_sums(tensors, state: DepthwiseState, x: np.ndarray, w: np.ndarray, rows: np.ndarray) -> None:
    """rows [N, OH, OW*C] = the sum over taps of the (staged) input times the tiled weights."""
    x = staged_input(state.staging, x, tensors, state.scratch, state.pad_value)
    sums_call(state, x, w, rows)()


def sums_call(state: DepthwiseState, staged: np.ndarray, w: np.ndarray, rows: np.ndarray):
    """The einsum of depthwise_sums on the staged input, as a call to make."""
    shape, strides = state.view
    return partial(
        _einsum, "nijhq,ijq->nhq", np.ndarray(shape, staged.dtype, staged, 0, strides), w, out=rows
    )

"""The float CONV_2D in exact mode compiled by numba (ops/jit.py), where LiteRT's order is plain: each
output the sum along its window in order (kernel rows, kernel columns, input channels) from zero, one
float32 rounding per product and per addition, then the bias (eigen_order.eigen_product_is_sequential,
and the reference kernel's order). It reads the input where it lies (a tap outside it reads 0.0, as the
staged copy held) instead of copying the windows into im2col and the sums out of [O, pixels]. Imported
only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS

_F32 = numba.float32
_I64 = numba.int64


_IMAGE = _F32[:, :, :, ::1]  # x [N, H, W, C], out [N, OH, OW, O]
_INPUTS = (numba.types.Array(_F32, 4, "C", readonly=True), _IMAGE)  # x read-only where a constant (folded)
_OPERANDS = (
    numba.types.Array(_F32, 2, "C", readonly=True),  # weights [KH * KW * C, O]
    numba.types.UniTuple(_I64, 2),  # kernel height, width
    numba.types.UniTuple(_I64, 6),  # stride h, w, dilation h, w, pad top, left
    numba.types.Array(_F32, 1, "C", readonly=True),  # bias [O] (CONV_2D always has one)
)


@numba.njit(inline="always", **OPTIONS)
def _tap(image, geometry, oh, ow, i, j):
    """The input pixel [C] that kernel tap (i, j) of output pixel (oh, ow) reads, and whether it lies
    inside the input (else the tap reads zeros: the pixel returned is then any one)."""
    height, width, _ = image.shape
    stride_h, stride_w, dilation_h, dilation_w, top, left = geometry
    r = oh * stride_h - top + i * dilation_h
    column = ow * stride_w - left + j * dilation_w
    inside = 0 <= r < height and 0 <= column < width
    return image[min(max(r, 0), height - 1), min(max(column, 0), width - 1)], inside


@numba.njit([numba.void(x, *_OPERANDS, _IMAGE) for x in _INPUTS], **OPTIONS)
def conv_float(x, weights, kernel, geometry, bias, out):
    batches, _, _, channels = x.shape
    _, out_height, out_width, units = out.shape
    kernel_h, kernel_w = kernel
    zero = np.float32(0)
    for n in range(batches):
        for oh in range(out_height):
            for ow in range(out_width):
                acc = out[n, oh, ow]
                for o in range(units):
                    acc[o] = zero
                k = 0
                for i in range(kernel_h):
                    for j in range(kernel_w):
                        source, inside = _tap(x[n], geometry, oh, ow, i, j)
                        for c in range(channels):
                            value = source[c] if inside else zero
                            row = weights[k]
                            for o in range(units):
                                acc[o] += value * row[o]
                            k += 1
                for o in range(units):
                    acc[o] += bias[o]


@numba.njit(inline="always", **OPTIONS)
def _lay_out_windows(x, kernel, geometry, columns, out_height, out_width):
    """columns [KH * KW * C, pixels] = the windows' taps, one row per (kernel row, column, channel), each
    filled along the output pixels in order (contiguous writes; a tap outside the input reads 0.0)."""
    batches, height, width, channels = x.shape
    kernel_h, kernel_w = kernel
    stride_h, stride_w, dilation_h, dilation_w, top, left = geometry
    zero = np.float32(0)
    k = 0
    for i in range(kernel_h):
        for j in range(kernel_w):
            for c in range(channels):
                row = columns[k]
                p = 0
                for n in range(batches):
                    for oh in range(out_height):
                        r = oh * stride_h - top + i * dilation_h
                        if r < 0 or r >= height:
                            for _ in range(out_width):
                                row[p] = zero
                                p += 1
                            continue
                        line = x[n, r]
                        for ow in range(out_width):
                            column = ow * stride_w - left + j * dilation_w
                            row[p] = line[column, c] if 0 <= column < width else zero
                            p += 1
                k += 1


# its scratch: the windows [KH * KW * C, pixels], the sums [O, pixels]
@numba.njit([numba.void(x, *_OPERANDS, _F32[:, ::1], _F32[:, ::1], _IMAGE) for x in _INPUTS], **OPTIONS)
def conv_float_by_pixels(x, weights, kernel, geometry, bias, columns, sums, out):
    """conv_float's sums for few output channels: the windows laid out as rows of pixels, each output
    channel's sums then taken along whole rows (vectorized over the pixels, where conv_float's loop runs
    over the output channels), the products added in the same order."""
    _, out_height, out_width, units = out.shape
    _lay_out_windows(x, kernel, geometry, columns, out_height, out_width)
    zero = np.float32(0)
    for o in range(units):
        row = sums[o]
        for q in range(row.size):
            row[q] = zero
        for k in range(columns.shape[0]):
            weight = weights[k, o]
            window = columns[k]
            for q in range(row.size):
                row[q] += window[q] * weight
    flat = out.reshape(-1, units)
    for q in range(flat.shape[0]):
        pixel = flat[q]
        for o in range(units):
            pixel[o] = sums[o, q] + bias[o]

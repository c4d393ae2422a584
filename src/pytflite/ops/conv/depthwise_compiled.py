"""DEPTHWISE_CONV_2D compiled by numba (ops/jit.py), reading the input where it lies instead of a padded
copy: the quantized kernel (sums and float64 requantization in one call) and the float kernel (LiteRT's
order of float32 additions, in exact-summation mode and out of it alike).

The sums are the NumPy path's (depthwise.py): the input times each tap's weights, a tap outside the input
reading the padding value (the zero point; 0.0 for floats), taps added in row-major order, each product
and each addition rounded to the sums' type. Quantized, that type is exact (every partial sum an integer
below 2**24 in float32, below 2**53 in float64) and the requantization is requant_compiled.requantize's;
float, the bias comes first (LiteRT's optimized kernel) or last (its reference kernel). With a column
stride of 1, a row of outputs is summed along whole rows ([OW * C] at a time, vectorized); otherwise
pixel by pixel. A depth multiplier above 1 is left to the NumPy path (its staged copy repeats the input
channels; read in place, they make short loops that lose to it). Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS
from .requant_compiled import requantize

_I64 = numba.int64


def _signatures():
    channels = numba.types.Array(numba.float64, 1, "C", readonly=True)
    found = []
    for storage in (numba.int8, numba.uint8):
        for sums in (numba.float32, numba.float64):
            weights = numba.types.Array(sums, 3, "C", readonly=True)
            found.extend(
                numba.void(
                    image,  # x [N, H, W, C_in]
                    _I64,  # its zero point
                    weights,  # [KH, KW, OW * C]: each tap's weights tiled over an output row
                    numba.types.UniTuple(_I64, 6),  # stride h, w, dilation h, w, pad top, left
                    sums[::1],  # scratch [OW * C]
                    channels,  # float64 path: scale [C]
                    channels,  # and constant [C]
                    numba.types.UniTuple(_I64, 3),  # lifted bounds and the lift
                    storage[:, :, :, ::1],  # out [N, OH, OW, C]
                )
                for image in _images(storage)
            )
    return found


def _images(element):
    """The input image's types: read-only where it is a model constant (a node folded in prepare)."""
    return numba.types.Array(element, 4, "C", readonly=True), element[:, :, :, ::1]


@numba.njit(inline="always", **OPTIONS)
def _row_sums(image, pad, weights, geometry, oh, acc):
    """acc [OW * C] += output row oh's products, whole rows at a time (column stride 1, no multiplier)."""
    height, width, channels = image.shape
    taps_h, taps_w, _ = weights.shape
    stride_h, _, dilation_h, dilation_w, top, left = geometry
    out_width = acc.size // channels
    for i in range(taps_h):
        r = oh * stride_h - top + i * dilation_h
        inside = 0 <= r < height
        line = image[min(max(r, 0), height - 1)].reshape(-1)
        for j in range(taps_w):
            tap = weights[i, j]
            shift = j * dilation_w - left  # output column ow reads input column ow + shift
            first = min(max(0, -shift), out_width) if inside else out_width
            last = max(min(out_width, width - shift), first)
            for q in range(first * channels):
                acc[q] += pad * tap[q]
            for q in range(last * channels, acc.size):
                acc[q] += pad * tap[q]
            span = acc[first * channels : last * channels]
            source = line[(first + shift) * channels : (last + shift) * channels]
            part = tap[first * channels : last * channels]
            for q in range(span.size):
                span[q] += source[q] * part[q]


@numba.njit(inline="always", **OPTIONS)
def _pixel_sums(image, pad, weights, geometry, oh, acc):
    """acc [OW * C] += output row oh's products, pixel by pixel (any stride)."""
    height, width, channels = image.shape
    taps_h, taps_w, _ = weights.shape
    stride_h, stride_w, dilation_h, dilation_w, top, left = geometry
    for ow in range(acc.size // channels):
        span = acc[ow * channels : (ow + 1) * channels]
        for i in range(taps_h):
            r = oh * stride_h - top + i * dilation_h
            for j in range(taps_w):
                part = weights[i, j, :channels]  # a tap's weights are the same for every column
                column = ow * stride_w - left + j * dilation_w
                if not (0 <= r < height and 0 <= column < width):
                    for c in range(channels):
                        span[c] += pad * part[c]
                    continue
                source = image[r, column]
                for c in range(channels):
                    span[c] += source[c] * part[c]


@numba.njit(inline="always", **OPTIONS)
def _add_products(image, pad, weights, geometry, oh, acc):
    """acc [OW * C] += output row oh's products, in tap order."""
    if geometry[1] == 1:
        _row_sums(image, pad, weights, geometry, oh, acc)
    else:
        _pixel_sums(image, pad, weights, geometry, oh, acc)


@numba.njit(_signatures(), **OPTIONS)
def depthwise(x, zero_point, weights, geometry, acc, scale, constant, bounds, out):
    """out = the requantized depthwise sums of x (see the module's docstring)."""
    batches = x.shape[0]
    out_height = out.shape[1]
    pad = np.empty(1, acc.dtype)
    pad[0] = zero_point  # exact: |zero point| <= 255
    for n in range(batches):
        for oh in range(out_height):
            for q in range(acc.size):
                acc[q] = 0
            _add_products(x[n], pad[0], weights, geometry, oh, acc)
            target = out[n, oh]
            requantize(acc.reshape(target.shape), scale, constant, *bounds, target)


def _float_signatures():
    constant = numba.types.Array(numba.float32, 1, "C", readonly=True)
    weights = numba.types.Array(numba.float32, 3, "C", readonly=True)
    geometry = numba.types.UniTuple(_I64, 6)
    out = numba.float32[:, :, :, ::1]
    return [
        numba.void(image, weights, geometry, constant, numba.boolean, out) for image in _images(numba.float32)
    ]


@numba.njit(_float_signatures(), **OPTIONS)
def depthwise_float(x, weights, geometry, bias, bias_first, out):
    """out [N, OH, OW, C] = bias and the products of x and weights ([KH, KW, OW * C], tiled) added in
    order, the bias (zeros where there is none) first or last."""
    _, out_height, out_width, channels = out.shape
    pad = np.float32(0)
    for n in range(x.shape[0]):
        for oh in range(out_height):
            row = out[n, oh].reshape(-1)
            for ow in range(out_width):
                span = row[ow * channels : (ow + 1) * channels]
                for c in range(channels):  # -0.0 + p is p: the first product starts the sum
                    span[c] = bias[c] if bias_first else np.float32(-0.0)
            _add_products(x[n], pad, weights, geometry, oh, row)
            if not bias_first:
                for ow in range(out_width):
                    span = row[ow * channels : (ow + 1) * channels]
                    for c in range(channels):
                        span[c] += bias[c]

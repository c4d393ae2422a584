"""The hybrid kernels' way back to floats compiled by numba (ops/jit.py): the exact sums of a batch's
quantized input and the int8 weights times the input's and the weights' scales, plus the bias, clamped,
in one pass where the NumPy path makes several calls per batch (CONV_2D, DEPTHWISE_CONV_2D).

Each product is a float32 rounding in the order LiteRT's kernel takes (the kernels say which; sums in
float64 are multiplied in float64 and rounded once, as NumPy's mixed product is): `order` 0 is
acc * (filter scale * input scale), 1 is (acc * filter scale) * input scale, and the channels from
`scalar_from` on take (acc * input scale) * filter scale (NEON's scalar tail). The clamp keeps NaN and
-0.0 as ops.common.clip does. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS

_F32 = numba.float32
_CHANNELS = numba.types.Array(_F32, 1, "C", readonly=True)
# the bias: a constant's read-only data, or a runtime tensor's array
_BIASES = (_CHANNELS, _F32[::1])


@numba.njit(
    [
        numba.void(
            sums[:, :, ::1],  # sums [N, P, C]
            _F32[::1],  # the input scale of each batch [N]
            _CHANNELS,  # filter scales [C]
            numba.int64,  # order
            numba.int64,  # scalar_from
            bias,  # bias [C]
            numba.boolean,  # whether to add it
            _F32,  # low
            _F32,  # high
            _F32[:, :, ::1],  # out [N, P, C] (may be the sums)
        )
        for sums in (_F32, numba.float64)
        for bias in _BIASES
    ],
    **OPTIONS,
)
def scale_back(sums, input_scales, filter_scales, order, scalar_from, bias, add_bias, low, high, out):
    batches, pixels, channels = sums.shape
    factors = np.empty(channels, np.float32)
    blocked = min(scalar_from, channels)
    for n in range(batches):
        scale = input_scales[n]
        for c in range(channels):
            factors[c] = filter_scales[c] * scale
        for p in range(pixels):
            values = sums[n, p]
            target = out[n, p]
            if order == 0:
                for c in range(blocked):
                    target[c] = values[c] * factors[c]
            else:
                for c in range(blocked):
                    target[c] = (values[c] * filter_scales[c]) * scale
            for c in range(blocked, channels):
                target[c] = (values[c] * scale) * filter_scales[c]
            if add_bias:
                for c in range(channels):
                    target[c] += bias[c]
            for c in range(channels):
                value = target[c]
                if value < low:
                    value = low
                if value > high:
                    value = high
                target[c] = value

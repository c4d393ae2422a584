"""The hybrid LSTM's time steps compiled by numba (ops/jit.py), for its common form (four gates, tanh, no
peephole, layer norm or projection): what lstm_float._run_lstm does in about sixty NumPy calls a step,
one call for the whole sequence. The input terms (bias + x.W, one product for all steps) come in as
`pre`, gates [input forget output cell].

The arithmetic is the NumPy path's, exactly, as the state is quantized again at every step: the hidden
rows quantized and multiplied as rnn_compiled.add_hybrid_product does, the sigmoid gates through Eigen's
logistic (activations._sigmoid: its vector path's Cephes exp, or std::exp on the elements `scalar` marks,
those TFLite computes on Eigen's scalar path), tanh Eigen's, then c = f * c + g * i, clipped, and
h = o * tanh(c). A step whose gates are not all finite, or a state that is not, returns False with h and
c untouched, for the NumPy path. Imported only through jit.compiled.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..jit import OPTIONS
from .activations import _EXP_C1, _EXP_C2, _EXP_P, _LOG2E, _LOGISTIC_HIGHEST, _LOGISTIC_LOWEST
from .lstm_compiled import eigen_tanh
from .rnn_compiled import add_hybrid_product, quantize_hidden

_F32 = numba.float32
_ZERO = np.float32(0)
_HALF = np.float32(0.5)
_ONE = np.float32(1)
_P0, _P1, _P2, _P3 = _EXP_P
_READ_INT8 = numba.types.Array(numba.int8, 2, "C", readonly=True)


@numba.njit(inline="always", **OPTIONS)
def eigen_sigmoid(x, scalar):
    """activations._sigmoid on one finite float32; `scalar`: it is on Eigen's scalar path."""
    half = min(x, _LOGISTIC_HIGHEST)
    if scalar:
        e = np.float32(np.exp(np.float64(half)))
    elif x < _LOGISTIC_LOWEST:
        return _ZERO
    else:
        half = half * _HALF
        m = np.floor(half * _LOG2E + _HALF)
        r = m * _EXP_C1 + half
        r = r + m * _EXP_C2
        r2 = r * r
        even = r2 * _P2 + _P0
        odd = (r2 * _P3 + _P1) * r
        odd = (odd + even) * r2
        odd = odd + (r + _ONE)
        e = np.float32(math.ldexp(np.float64(odd), int(m)))
        e = e * e
    return e / (e + _ONE)


@numba.njit(
    numba.boolean(
        _F32[:, :, ::1],  # pre [time, batch, 4n]
        _READ_INT8,  # recurrent weights [n, 4n]
        _READ_INT8,  # the SSE quirk's mask [columns, 4n] (0 x 0 when none)
        numba.types.Array(numba.int64, 1, "C", readonly=True),  # weight row sums [4n]
        numba.types.Array(_F32, 1, "C", readonly=True),  # weight scales [4n]
        numba.types.Array(numba.boolean, 2, "C", readonly=True),  # scalar-path gate elements [batch, 4n]
        _F32[:, ::1],  # h [batch, n]
        _F32[:, ::1],  # c [batch, n]
        _F32[:, :, :],  # out [time, batch, n], any layout
        numba.boolean,  # forward
        _F32,  # cell clip (0: none)
        numba.boolean,  # asymmetric inputs
    ),
    **OPTIONS,
)
def hybrid_lstm_steps(
    pre, weights, mask, row_sums, scales, scalar, h, c, out, forward, cell_clip, asymmetric
):
    steps, batch, width = pre.shape
    n = width // 4
    hidden, cell = h.copy(), c.copy()
    quantized = np.empty((batch, n), np.float32)
    factors = np.empty(batch, np.float32)
    zero_points = np.zeros(batch, np.int64)
    sums = np.empty(width, np.int64)
    gates = np.empty(width, np.float32)
    for s in range(steps):
        t = s if forward else steps - 1 - s
        nonzero = False
        for b in range(batch):
            for k in range(n):
                if hidden[b, k] != _ZERO:
                    nonzero = True
        if nonzero and not quantize_hidden(hidden, quantized, factors, zero_points, asymmetric):
            return False
        for b in range(batch):
            if nonzero:
                add_hybrid_product(
                    quantized[b],
                    zero_points[b],
                    factors[b],
                    weights,
                    mask,
                    row_sums,
                    scales,
                    asymmetric,
                    sums,
                    pre[t, b],
                    gates,
                )
            else:
                for g in range(width):
                    gates[g] = pre[t, b, g]
            for g in range(width):
                if not np.isfinite(gates[g]):
                    return False
            on_scalar = scalar[b]
            state = cell[b]
            row = out[t, b]
            for j in range(n):
                i = eigen_sigmoid(gates[j], on_scalar[j])
                f = eigen_sigmoid(gates[n + j], on_scalar[n + j])
                o = eigen_sigmoid(gates[2 * n + j], on_scalar[2 * n + j])
                value = f * state[j] + eigen_tanh(gates[3 * n + j]) * i
                if cell_clip > _ZERO:
                    value = min(max(value, -cell_clip), cell_clip)
                state[j] = value
                row[j] = o * eigen_tanh(value)
        for b in range(batch):
            for j in range(n):
                hidden[b, j] = out[t, b, j]
    h[...] = hidden
    c[...] = cell
    return True

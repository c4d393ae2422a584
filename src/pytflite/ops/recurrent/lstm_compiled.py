"""The plain float LSTM's time steps compiled by numba (ops/jit.py): what lstm_float._PlainLstm runs
as nine NumPy calls a step, here one call for the whole sequence.

The arithmetic is _PlainLstm's: the sigmoid gates come halved (weights and bias), as 0.5 * tanh + 0.5;
tanh is Eigen's rational approximation, the one LiteRT's float LSTM applies (bit for bit
activations._tanh); each gate starts from its input term and adds the recurrent products in depth
order, as TFLite's lstm_eval accumulates them. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS
from .activations import TANH_CLAMP, TANH_P, TANH_Q

_F32 = numba.float32
_CLAMP = TANH_CLAMP
_P0, _P1, _P2, _P3 = TANH_P
_Q0, _Q1, _Q2, _Q3, _Q4 = TANH_Q
_HALF = np.float32(0.5)
_ZERO = np.float32(0)


@numba.njit(_F32(_F32), inline="always", **OPTIONS)
def eigen_tanh(x):
    """activations._tanh on one float32: the clamp, Horner's steps unfused, one division."""
    z = x
    if z > _CLAMP:
        z = _CLAMP
    elif z < -_CLAMP:
        z = -_CLAMP
    z2 = z * z
    p = ((_P0 * z2 + _P1) * z2 + _P2) * z2 + _P3
    q = (((_Q0 * z2 + _Q1) * z2 + _Q2) * z2 + _Q3) * z2 + _Q4
    p = p * (z2 * z) + z
    return p / q


@numba.njit(inline="always", **OPTIONS)
def add_products(values, weights, target):
    """target[j] += values[k] * weights[k, j], one product at a time in depth order k (the recurrences'
    order of additions)."""
    for k in range(values.size):
        value = values[k]
        row = weights[k]
        for j in range(target.size):
            target[j] += value * row[j]


@numba.njit(
    numba.void(_F32[:, :, :], _F32[:, ::1], _F32[:, ::1], _F32[:, ::1], _F32[:, :, :], numba.boolean, _F32),
    **OPTIONS,
)
def plain_lstm_steps(pre, weights, h, c, out, forward, limit):
    """Run the steps of pre [time, batch, 4n] (input terms and bias, gates [i f o g], the sigmoid ones
    halved) with the recurrent weights [n, 4n] from states h, c [batch, n] (updated in place), each
    step's output into out [time, batch, n]; `limit` > 0 clips the cell state."""
    steps, batch, width = pre.shape
    n = width // 4
    gates = np.empty(width, np.float32)
    for s in range(steps):
        t = s if forward else steps - 1 - s
        for b in range(batch):
            row = pre[t, b]
            for g in range(width):
                gates[g] = row[g]
            state = h[b]
            add_products(state, weights, gates)
            # (each loop simple enough for the compiler to vectorize: one loop doing it all runs scalar)
            for g in range(width):
                gates[g] = eigen_tanh(gates[g])
            cell = c[b]
            for j in range(n):
                i = gates[j] * _HALF + _HALF
                f = gates[n + j] * _HALF + _HALF
                value = i * gates[3 * n + j] + f * cell[j]
                if limit > _ZERO:
                    value = min(max(value, -limit), limit)
                cell[j] = value
            for j in range(n):
                state[j] = (gates[2 * n + j] * _HALF + _HALF) * eigen_tanh(cell[j])
            out_row = out[t, b]
            for j in range(n):
                out_row[j] = state[j]

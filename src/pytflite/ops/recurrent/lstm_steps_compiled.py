"""The LSTM's time steps compiled by numba (ops/jit.py), for every form: float or hybrid, CIFG, peephole,
layer norm, projection, clips, with tanh. lstm_float.run_lstm runs 20 to 60 NumPy calls a step; here one
call runs the sequence. The input terms (bias + x.W, one product for all steps) come in as `pre`, gates in
the direction's order (the offsets of input, forget, output and cell; input -1 for CIFG).

The hybrid arithmetic is the NumPy path's, exactly, as the state is quantized again at every step: the
hidden rows (and the projection's inputs) quantized and multiplied as rnn_compiled.add_hybrid_product
does, the sigmoid gates through Eigen's logistic (eigen_compiled's sigmoid: its vector path's Cephes exp, or
std::exp on the elements `scalar` marks, those TFLite computes on Eigen's scalar path) and tanh Eigen's.
The float arithmetic is TFLite's: recurrent and projection products summed from zero in depth order, then
added to their terms (the NumPy path takes BLAS's order), Eigen's logistic and tanh (the NumPy path takes
np.exp and np.tanh, within an ulp or two). Then as the NumPy path: peepholes added to the gates, the layer
norm (MeanStddevNormalization, sums in order) on each gate before its activation, c = f * c + g * i
(i = 1 - f for CIFG), clipped, the output gate's peephole on the new c, h = o * tanh(c), projected,
clipped. A step whose gates or state are not all finite returns False with h and c untouched, for the
NumPy path. Imported only through jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..eigen_compiled import sigmoid_scalar_path, sigmoid_vector_path
from ..jit import OPTIONS
from .lstm_compiled import add_products, eigen_tanh
from .rnn_compiled import HYBRID_MATRIX, add_hybrid_product, any_nonzero, copy_rows, quantize_hidden

_F32 = numba.float32
_ZERO = np.float32(0)
_ONE = np.float32(1)
_EPSILON = np.float32(1e-8)  # MeanStddevNormalization's
_I64 = numba.int64


def _read(dtype, dimensions):
    return numba.types.Array(dtype, dimensions, "C", readonly=True)


@numba.njit(inline="always", **OPTIONS)
def _sigmoid_row(gates, at, n, scalar, saved):
    """gates[at : at + n] = Eigen's logistic, in place: the vector path in one loop, then the elements
    `scalar` marks from their inputs (kept in `saved`)."""
    for j in range(n):
        saved[j] = gates[at + j]
    for j in range(n):
        gates[at + j] = sigmoid_vector_path(saved[j])
    for j in range(n):
        if scalar[at + j]:
            gates[at + j] = sigmoid_scalar_path(saved[j])


@numba.njit(inline="always", **OPTIONS)
def _finite(values):
    for value in values:  # noqa: SIM110 (numba compiles a loop, not a generator)
        if not np.isfinite(value):
            return False
    return True


@numba.njit(inline="always", **OPTIONS)
def _normalize(row, coefficients, bias):
    """lstm_float._layer_norm on one gate's row in place: TFLite's MeanStddevNormalization (sums in
    order, in float32), times the coefficients, plus the bias."""
    n = np.float32(row.size)
    total = row[0]
    for j in range(1, row.size):
        total += row[j]
    mean = total / n
    first = row[0] - mean
    squares = first * first
    for j in range(1, row.size):
        difference = row[j] - mean
        squares += difference * difference
    inverse = _ONE / np.sqrt(squares / n + _EPSILON)
    for j in range(row.size):
        row[j] = (row[j] - mean) * inverse * coefficients[j] + bias[j]


@numba.njit(inline="always", **OPTIONS)
def _cell_update(gates, state, peephole, norm, offsets, scalar, cell_clip, activated):
    """One batch row's gates [W] (pre-activation, changed) into the cell state [n] (updated) and
    o * tanh(c) [n]. `peephole` [3, n] (input, forget, output; 0 x 0 without), `norm` [2, gates, n] (layer
    norm coefficients and biases by gate; 0 x 0 x 0 without), `offsets` (input, forget, output, cell):
    the input and forget peepholes, the layer norm of every gate but a peephole's output gate, the
    activations, the cell update, then the output gate (its peephole on the new c, its layer norm). Each
    step is its own loop, simple enough to vectorize; `activated` holds the saved inputs meanwhile."""
    n = state.size
    i_at, f_at, o_at, g_at = offsets
    peep, normed = peephole.shape[0] > 0, norm.shape[0] > 0
    if peep:
        for j in range(n):
            gates[f_at + j] = gates[f_at + j] + peephole[1, j] * state[j]
        if i_at >= 0:
            for j in range(n):
                gates[i_at + j] = gates[i_at + j] + peephole[0, j] * state[j]
    if normed:
        for at in (i_at, f_at, g_at, o_at):
            if at >= 0 and not (peep and at == o_at):
                gate = at // n
                _normalize(gates[at : at + n], norm[0, gate], norm[1, gate])
    _sigmoid_row(gates, f_at, n, scalar, activated)
    if i_at >= 0:
        _sigmoid_row(gates, i_at, n, scalar, activated)
    else:
        for j in range(n):
            activated[j] = _ONE - gates[f_at + j]
    for j in range(n):
        gates[g_at + j] = eigen_tanh(gates[g_at + j])
    for j in range(n):
        i = gates[i_at + j] if i_at >= 0 else activated[j]
        value = gates[f_at + j] * state[j] + gates[g_at + j] * i
        if cell_clip > _ZERO:
            value = min(max(value, -cell_clip), cell_clip)
        state[j] = value
    if peep:
        for j in range(n):
            gates[o_at + j] = gates[o_at + j] + peephole[2, j] * state[j]
        if normed:
            gate = o_at // n
            _normalize(gates[o_at : o_at + n], norm[0, gate], norm[1, gate])
    _sigmoid_row(gates, o_at, n, scalar, activated)
    for j in range(n):
        activated[j] = gates[o_at + j] * eigen_tanh(state[j])


@numba.njit(inline="always", **OPTIONS)
def _clip(row, limit):
    if limit > _ZERO:
        for j in range(row.size):
            row[j] = min(max(row[j], -limit), limit)


@numba.njit(inline="always", **OPTIONS)
def _float_product(values, weights, bias, target):
    """target = bias + values . weights, the dot products summed from zero in depth order."""
    for j in range(target.size):
        target[j] = _ZERO
    add_products(values, weights, target)
    for j in range(target.size):
        target[j] = bias[j] + target[j]


_COMMON = (
    _read(_F32, 2),  # peephole [3, n] or 0 x 0
    _read(_F32, 3),  # layer norm coefficients and biases [2, gates, n] or 0 x 0 x 0
    numba.types.UniTuple(_I64, 4),  # gate offsets: input (-1: CIFG), forget, output, cell
    _F32[:, ::1],  # h [batch, n_output]
    _F32[:, ::1],  # c [batch, n]
    _F32[:, :, :],  # out [time, batch, n_output], any layout
    numba.boolean,  # forward
    _F32,  # cell clip (0: none)
    _F32,  # projection clip (0: none)
)


@numba.njit(
    numba.boolean(
        _F32[:, :, ::1],  # pre [time, batch, W]
        _read(_F32, 2),  # recurrent weights [n_output, W]
        _read(_F32, 2),  # projection weights [n, n_output] or 0 x 0
        _read(_F32, 1),  # projection bias [n_output] (zeros without)
        *_COMMON,
    ),
    **OPTIONS,
)
def float_lstm_steps(
    pre,
    recurrent,
    projection,
    projection_bias,
    peephole,
    norm,
    offsets,
    h,
    c,
    out,
    forward,
    cell_clip,
    proj_clip,
):
    steps, batch, width = pre.shape
    n = c.shape[1]
    hidden, cell = h.copy(), c.copy()
    gates = np.empty(width, np.float32)
    activated = np.empty(n, np.float32)
    scalar = np.zeros(width, np.bool_)  # (Eigen's vector path everywhere)
    for s in range(steps):
        t = s if forward else steps - 1 - s
        for b in range(batch):
            _float_product(hidden[b], recurrent, pre[t, b], gates)
            if not (_finite(gates) and _finite(cell[b])):
                return False
            _cell_update(gates, cell[b], peephole, norm, offsets, scalar, cell_clip, activated)
            row = out[t, b]
            if projection.shape[0] > 0:
                _float_product(activated, projection, projection_bias, row)
                _clip(row, proj_clip)
            else:
                row[:] = activated
        copy_rows(out[t], hidden)
    h[...] = hidden
    c[...] = cell
    return True


@numba.njit(
    numba.boolean(
        _F32[:, :, ::1],  # pre [time, batch, W]
        *HYBRID_MATRIX,  # recurrent [n_output, W]
        *HYBRID_MATRIX,  # projection [n, n_output] (0 x 0 weights without)
        _read(_F32, 1),  # projection bias [n_output] (zeros without)
        _read(numba.boolean, 2),  # scalar-path gate elements [batch, W]
        numba.boolean,  # asymmetric inputs
        *_COMMON,
    ),
    **OPTIONS,
)
def hybrid_lstm_steps(
    pre,
    weights,
    mask,
    row_sums,
    scales,
    p_weights,
    p_mask,
    p_row_sums,
    p_scales,
    projection_bias,
    scalar,
    asymmetric,
    peephole,
    norm,
    offsets,
    h,
    c,
    out,
    forward,
    cell_clip,
    proj_clip,
):
    matrix, projection = (weights, mask, row_sums, scales), (p_weights, p_mask, p_row_sums, p_scales)
    steps, batch, width = pre.shape
    n, n_output = c.shape[1], h.shape[1]
    projected = p_weights.shape[0] > 0
    hidden, cell = h.copy(), c.copy()
    quantized, quantized_activated = np.empty((batch, n_output), np.float32), np.empty((batch, n), np.float32)
    factors = np.empty(batch, np.float32)
    zero_points = np.zeros(batch, np.int64)
    sums, projected_sums = np.empty(width, np.int64), np.empty(n_output, np.int64)
    gates = np.empty(width, np.float32)
    activated = np.empty((batch, n), np.float32)
    for s in range(steps):
        t = s if forward else steps - 1 - s
        nonzero = any_nonzero(hidden)
        if nonzero and not quantize_hidden(hidden, quantized, factors, zero_points, asymmetric):
            return False
        for b in range(batch):
            if nonzero:
                add_hybrid_product(
                    quantized[b], zero_points[b], factors[b], matrix, asymmetric, sums, pre[t, b], gates
                )
            else:
                gates[:] = pre[t, b]
            if not (_finite(gates) and _finite(cell[b])):
                return False
            _cell_update(gates, cell[b], peephole, norm, offsets, scalar[b], cell_clip, activated[b])
        if projected:
            nonzero = any_nonzero(activated)
            if nonzero and not quantize_hidden(
                activated, quantized_activated, factors, zero_points, asymmetric
            ):
                return False
        for b in range(batch):
            row = out[t, b]
            if not projected:
                row[:] = activated[b]
                continue
            if nonzero:
                add_hybrid_product(
                    quantized_activated[b],
                    zero_points[b],
                    factors[b],
                    projection,
                    asymmetric,
                    projected_sums,
                    projection_bias,
                    row,
                )
            else:
                row[:] = projection_bias
            _clip(row, proj_clip)
        copy_rows(out[t], hidden)
    h[...] = hidden
    c[...] = cell
    return True

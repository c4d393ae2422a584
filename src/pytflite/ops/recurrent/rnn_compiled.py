"""The RNN kernels' time steps compiled by numba (ops/jit.py): rnn._run_rnn's recurrence, a few NumPy
calls a step (about twenty for the hybrid kernel's quantization and product), here one call for the
whole sequence. The input terms (bias + x.W, computed for all steps at once) come in as `pre`.

The arithmetic is TFLite's RnnBatchStep: each unit's recurrent term is a dot product summed from zero in
depth order, then added to its input term (the portable MatrixBatchVectorMultiplyAccumulate, which x86
runs for floats; the NumPy path takes BLAS's order instead), then the activation, tanh being Eigen's
(lstm_compiled.eigen_tanh, bit for bit activations._tanh; the NumPy float path takes np.tanh, within an
ulp). The hybrid step is the NumPy path's, exactly: the hidden rows quantized as quant/hybrid_inputs
does (symmetric here, asymmetric through hybrid_inputs_compiled), the int8 sums exact in int64 with the
x86 SSE kernel's sign quirk and the zero point's row sums, scaled as float32(sums) * (factor * scale).
A hybrid sequence meeting a value that is not finite returns False, its state untouched, for the NumPy
path. hybrid_rows_product computes a sequence's hybrid input terms the same way, and the hybrid LSTM's
steps (lstm_steps_compiled) share this module's quantization and product. Imported only through
jit.compiled.
"""

from __future__ import annotations

import numba
import numpy as np

from ..jit import OPTIONS
from ..quant.hybrid_inputs import BELOW_HALF, BLOCK, HALF
from ..quant.hybrid_inputs_compiled import quantize_rows_asymmetric
from .lstm_compiled import add_products, eigen_tanh

_F32 = numba.float32
_ZERO = np.float32(0)
_ONE = np.float32(1)
_127 = np.float32(127)

_SEQUENCE = _F32[:, :, :]  # [time, batch, units], any layout (a time-major view of a batch-major tensor)
_PRE = _F32[:, :, ::1]


@numba.njit(inline="always", **OPTIONS)
def _finish(row, tanh):
    """The activation TFLite's ApplyActivationToVector applies: tanh, or none."""
    if tanh:
        for j in range(row.size):
            row[j] = eigen_tanh(row[j])


@numba.njit(inline="always", **OPTIONS)
def any_nonzero(rows):
    """Whether some value of rows [batch, size] is not 0 (TFLite's IsZeroVector, negated)."""
    for b in range(rows.shape[0]):
        for value in rows[b]:
            if value != _ZERO:
                return True
    return False


@numba.njit(inline="always", **OPTIONS)
def copy_rows(source, target):
    """target[b] = source[b] for the rows of [batch, size] arrays (a state from a step's output)."""
    for b in range(target.shape[0]):
        for j in range(target.shape[1]):
            target[b, j] = source[b, j]


@numba.njit(
    numba.boolean(
        _PRE,
        numba.types.Array(_F32, 2, "C", readonly=True),
        _F32[:, ::1],
        _SEQUENCE,
        numba.boolean,
        numba.boolean,
    ),
    **OPTIONS,
)
def float_rnn_steps(pre, recurrent, h, out, forward, tanh):
    """out[t] = act(pre[t] + h.R) over the steps of pre [time, batch, units], forward or backward, with
    the recurrent weights R [units (depth), units]; h [batch, units] is the state, left at the last step.
    True (as hybrid_rnn_steps, which may refuse a sequence)."""
    steps, batch, units = pre.shape
    hidden = h.copy()
    acc = np.empty(units, np.float32)
    for s in range(steps):
        t = s if forward else steps - 1 - s
        for b in range(batch):
            for j in range(units):
                acc[j] = _ZERO
            add_products(hidden[b], recurrent, acc)
            row = out[t, b]
            for j in range(units):
                row[j] = pre[t, b, j] + acc[j]
            _finish(row, tanh)
        copy_rows(out[t], hidden)
    h[...] = hidden
    return True


@numba.njit(inline="always", **OPTIONS)
def quantize_hidden(hidden, quantized, factors, zero_points, asymmetric):
    """The state rows quantized as the hybrid product quantizes them (quantize_rows_asymmetric or
    _quantize_symmetric); False when a value is not finite."""
    if asymmetric:
        return quantize_rows_asymmetric(hidden, quantized, factors, zero_points, False)
    return _quantize_symmetric(hidden, quantized, factors)


@numba.njit(inline="always", **OPTIONS)
def add_hybrid_product(q, zero_point, factor, matrix, asymmetric, sums, pre, target):
    """target = pre + the hybrid product of one quantized row q [depth] with `matrix` (weights, mask,
    row sums, scales: HYBRID_MATRIX): the exact int8 sums (with the SSE quirk's 256 * q for the masked
    -128 weights met by a negative q, less the zero point times the row sums), as float32(sums) *
    (factor * scale)."""
    weights, mask, row_sums, scales = matrix
    units = target.size
    for j in range(units):
        sums[j] = 0
    for k in range(weights.shape[0]):
        value = np.int64(q[k])
        if value != 0:
            w = weights[k]
            for j in range(units):
                sums[j] += value * w[j]
    for k in range(mask.shape[0]):
        value = np.int64(q[k])
        if value < 0:
            flags = mask[k]
            for j in range(units):
                sums[j] += 256 * value * flags[j]
    if asymmetric:
        for j in range(units):
            sums[j] -= zero_point * row_sums[j]
    for j in range(units):
        target[j] = pre[j] + np.float32(sums[j]) * (factor * scales[j])


@numba.njit(inline="always", **OPTIONS)
def _quantize_symmetric(values, out, factors):
    """quantize_rows_symmetric(values, out): each row scaled by 127 / max|x| in float32, rounded as NEON's
    blocks and std::round in the tail, clamped to +-127; a row of zeros gives zeros and factor 1. False
    when a value is not finite."""
    rows, size = values.shape
    blocked = size - size % BLOCK
    for r in range(rows):
        row = values[r]
        extent = _ZERO
        for i in range(size):
            magnitude = abs(row[i])
            if not np.isfinite(magnitude):
                return False
            extent = max(extent, magnitude)
        target = out[r]
        if extent == _ZERO:
            factors[r] = _ONE
            for i in range(size):
                target[i] = _ZERO
            continue
        factors[r] = extent / _127
        inverse = _127 / extent
        for i in range(size):
            p = row[i] * inverse
            q = np.trunc(p + np.copysign(HALF if i < blocked else BELOW_HALF, p))
            target[i] = min(max(q, -_127), _127)
    return True


# hybrid._HybridMatrix.compiled_operands
HYBRID_MATRIX = (
    numba.types.Array(numba.int8, 2, "C", readonly=True),  # weights [depth, units]
    numba.types.Array(numba.int8, 2, "C", readonly=True),  # SSE quirk's mask [columns, units] or 0 x 0
    numba.types.Array(numba.int64, 1, "C", readonly=True),  # weight row sums [units]
    numba.types.Array(_F32, 1, "C", readonly=True),  # weight scales [units]
)


@numba.njit(
    numba.boolean(
        numba.types.Array(_F32, 2, "C", readonly=True), *HYBRID_MATRIX, _F32[:, ::1], numba.boolean
    ),
    **OPTIONS,
)
def hybrid_rows_product(values, weights, mask, row_sums, scales, out, asymmetric):
    """out[r] += the hybrid product of row r of values [rows, depth] (read-only), the rows quantized as
    hybrid._hybrid_product quantizes them: the input terms of a sequence in one call. False (out partly
    written) when a value is not finite."""
    matrix = (weights, mask, row_sums, scales)
    rows, depth = values.shape
    quantized = np.empty((rows, depth), np.float32)
    factors = np.empty(rows, np.float32)
    zero_points = np.zeros(rows, np.int64)
    sums = np.empty(out.shape[1], np.int64)
    if not quantize_hidden(values.copy(), quantized, factors, zero_points, asymmetric):  # (writable)
        return False
    for r in range(rows):
        add_hybrid_product(quantized[r], zero_points[r], factors[r], matrix, asymmetric, sums, out[r], out[r])
    return True


@numba.njit(
    numba.boolean(
        _PRE,
        *HYBRID_MATRIX,
        _F32[:, ::1],  # h
        _SEQUENCE,  # out
        numba.boolean,  # forward
        numba.boolean,  # tanh
        numba.boolean,  # asymmetric inputs
    ),
    **OPTIONS,
)
def hybrid_rnn_steps(pre, weights, mask, row_sums, scales, h, out, forward, tanh, asymmetric):
    """float_rnn_steps' recurrence with int8 recurrent weights: a state of zeros adds nothing (TFLite's
    IsZeroVector), else its rows are quantized and multiplied exactly. False (h untouched) when a state
    holds a value that is not finite."""
    matrix = (weights, mask, row_sums, scales)
    steps, batch, units = pre.shape
    depth = weights.shape[0]
    hidden = h.copy()
    quantized = np.empty((batch, depth), np.float32)
    factors = np.empty(batch, np.float32)
    zero_points = np.zeros(batch, np.int64)
    sums = np.empty(units, np.int64)
    for s in range(steps):
        t = s if forward else steps - 1 - s
        nonzero = any_nonzero(hidden)
        if nonzero and not quantize_hidden(hidden, quantized, factors, zero_points, asymmetric):
            return False
        for b in range(batch):
            row = out[t, b]
            if not nonzero:
                for j in range(units):
                    row[j] = pre[t, b, j]
                _finish(row, tanh)
                continue
            add_hybrid_product(
                quantized[b], zero_points[b], factors[b], matrix, asymmetric, sums, pre[t, b], row
            )
            _finish(row, tanh)
        copy_rows(out[t], hidden)
    h[...] = hidden
    return True

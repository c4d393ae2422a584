"""The float kernels LiteRT writes as Eigen expressions, compiled by numba (ops/jit.py) in Eigen's own
arithmetic: float LOGISTIC, SOFTMAX, and float MEAN (over the last axis by Eigen, over others by TFLite's
loops, sums in memory order); the logistic's per-element arithmetic serves the compiled LSTM too.
Imported only through jit.compiled.

LiteRT's x86 build runs Eigen on SSE packets of 4 floats with multiply-adds not fused, over tensors
aligned to 16 bytes or more, so that an element's arithmetic follows from its position:
- exp: a packet's elements take Eigen's pexp (a Cephes range reduction, then a degree-6 polynomial in
  unfused multiply-adds, 0 below -104); the elements an assignment loop leaves outside its aligned
  packets take std::exp (float64 exp rounded to float32 here: within rounding of expf);
- logistic: a packet's elements take Eigen's own (exp(x/2) by a range reduction and a degree-5
  polynomial, squared, then e / (1 + e)), the elements outside whole packets std::exp;
- the sum of a contiguous column (Eigen's redux): from its first 16-byte aligned element on, two packet
  accumulators over pairs of packets, one more packet if left, the accumulators added, their four
  lanes summed as (l0 + l2) + (l1 + l3), then the elements before the aligned start and those after the
  last packet one by one; a column with under 4 elements past its aligned start is summed in order.
The NumPy paths sum pairwise and exponentiate with NumPy's exp (within float tolerance of these). With
this arithmetic the compiled kernels are bit-exact with LiteRT's x86 build (tests/ops/test_activations.py,
tests/ops/test_reduce.py). LiteRT's ARM build runs NEON packets, whose multiply-adds are fused (and whose
lanes newer Eigen sums pairwise): there these kernels keep x86's arithmetic, within an ulp or so.
"""

from __future__ import annotations

import numba
import numpy as np

from .jit import OPTIONS
from .recurrent.activations import EXP_C1, EXP_C2, EXP_P, LOG2E, LOGISTIC_HIGHEST, LOGISTIC_LOWEST

_F32 = numba.float32
_I64 = numba.int64
_PACKET = 4  # floats per packet

# pexp's constants (float32)
_EXP_LOWEST = np.float32(-104)  # below: 0
_EXP_BELOW_LOWEST = np.float32(-104.5)
_EXP_HIGHEST = np.float32(88.723)  # clamp
_LOG2E = np.float32(1.44269504088896341)
_HALF = np.float32(0.5)
_ONE = np.float32(1)
_LN2_HIGH = np.float32(-0.693359375)  # -ln 2 in two parts
_LN2_LOW = np.float32(2.12194440e-4)
_P2 = np.float32(0.49999988079071044921875)
_P3 = np.float32(0.16666518151760101318359375)
_P4 = np.float32(4.166965186595916748046875e-2)
_P5 = np.float32(8.36894474923610687255859375e-3)
_P6 = np.float32(1.37449637986719608306884765625e-3)
_ZERO = np.float32(0)
# 2^m for the m pexp reaches (floor(-104.5 log2(e) + 0.5) = -151 to 128), as float64: y * 2^m is exact
# there and rounds once to float32, as Eigen's ldexp does
_FIRST_POWER = -151
_POWERS_OF_TWO = np.array([2.0**m for m in range(_FIRST_POWER, 130)])
_FLOAT_MAX = np.float32(np.finfo(np.float32).max)


@numba.njit(inline="always", **OPTIONS)
def _packet_exp(x, powers_of_two):
    """Eigen's pexp of a float32, one lane."""
    clamped = x if x < _EXP_HIGHEST else _EXP_HIGHEST
    # (a NaN becomes the highest, and anything below -104, whose result is 0, -104.5: 2^m stays in
    # the table whatever x is)
    clamped = clamped if clamped > _EXP_BELOW_LOWEST else _EXP_BELOW_LOWEST
    m = np.floor(clamped * _LOG2E + _HALF)
    r = m * _LN2_HIGH + clamped
    r = m * _LN2_LOW + r
    r2 = r * r
    even = r2 * _P6 + _P4
    odd = r2 * _P5 + _P3
    even = even * r2 + _P2
    y = odd * r + even
    y = y * r2 + (r + _ONE)
    value = np.float32(np.float64(y) * powers_of_two[np.int64(m) - _FIRST_POWER])
    if x > value:  # Eigen's max(result, x): +inf stays inf
        value = x
    return _ZERO if x < _EXP_LOWEST else value


@numba.njit(inline="always", **OPTIONS)
def _scalar_exp(x):
    """std::exp of a float32."""
    return np.float32(np.exp(np.float64(x)))


# Eigen's logistic (its own exp of x/2, squared: recurrent/activations.py has the recipe)
_LOGISTIC_P0, _LOGISTIC_P1, _LOGISTIC_P2, _LOGISTIC_P3 = EXP_P
# 2**m for the exponents the logistic's vector path meets: x in [-104, 16.64] gives m in [-75, 13]
_LOGISTIC_FIRST_POWER = -76
_LOGISTIC_POWERS = np.ldexp(np.float32(1), np.arange(_LOGISTIC_FIRST_POWER, 16)).astype(np.float32)


@numba.njit(inline="always", **OPTIONS)
def sigmoid_vector_path(x):
    """Eigen's vector-path logistic of one float32 that is not NaN, without branches (so that a loop of
    it vectorizes): 0 below its lowest input; the exponent is computed from x clamped to that input, so
    that the power of two it looks up is in the table."""
    half = min(max(x, LOGISTIC_LOWEST), LOGISTIC_HIGHEST) * _HALF
    m = np.floor(half * LOG2E + _HALF)
    r = m * EXP_C1 + half
    r = r + m * EXP_C2
    r2 = r * r
    even = r2 * _LOGISTIC_P2 + _LOGISTIC_P0
    odd = (r2 * _LOGISTIC_P3 + _LOGISTIC_P1) * r
    odd = (odd + even) * r2
    odd = odd + (r + _ONE)
    e = odd * _LOGISTIC_POWERS[int(m) - _LOGISTIC_FIRST_POWER]  # ldexp: exact, the powers are normal
    e = e * e
    return _ZERO if x < LOGISTIC_LOWEST else e / (e + _ONE)


@numba.njit(inline="always", **OPTIONS)
def sigmoid_scalar_path(x):
    """Eigen's scalar-path logistic of one float32 that is not NaN: std::exp (in float64, rounded once)."""
    e = np.float32(np.exp(np.float64(min(x, LOGISTIC_HIGHEST))))
    return e / (e + _ONE)


_FLAT = [numba.types.Array(_F32, 1, "C", readonly=True), _F32[::1]]


@numba.njit([numba.void(x, _F32[::1]) for x in _FLAT], **OPTIONS)
def logistic(x, out):
    """LiteRT's float LOGISTIC of the flat x into out (Eigen's logistic over the tensor): the vector
    path on the whole packets, the scalar path on the last size % 4 elements; NaN stays NaN."""
    size = x.size
    packets_end = size - size % _PACKET
    for i in range(packets_end):
        value = x[i]
        result = sigmoid_vector_path(value)
        out[i] = value if value != value else result
    for i in range(packets_end, size):
        value = x[i]
        out[i] = value if value != value else sigmoid_scalar_path(value)


@numba.njit(inline="always", **OPTIONS)
def _aligned_start(offset):
    """The index of a column's first 16-byte aligned element, its first at `offset` floats from the
    tensor's (aligned) start."""
    return (_PACKET - offset % _PACKET) % _PACKET


@numba.njit(inline="always", **OPTIONS)
def _column_sum(column, start):
    """Eigen's redux sum of a contiguous column of at least one element whose aligned elements begin
    at `start`."""
    size = column.size
    if size - start < _PACKET:
        total = column[0]
        for i in range(1, size):
            total += column[i]
        return total
    end = start + (size - start) // _PACKET * _PACKET
    end2 = start + (size - start) // (2 * _PACKET) * (2 * _PACKET)
    a0, a1, a2, a3 = column[start], column[start + 1], column[start + 2], column[start + 3]
    if end - start > _PACKET:
        b0, b1, b2, b3 = column[start + 4], column[start + 5], column[start + 6], column[start + 7]
        for i in range(start + 2 * _PACKET, end2, 2 * _PACKET):
            a0 += column[i]
            a1 += column[i + 1]
            a2 += column[i + 2]
            a3 += column[i + 3]
            b0 += column[i + 4]
            b1 += column[i + 5]
            b2 += column[i + 6]
            b3 += column[i + 7]
        a0 += b0
        a1 += b1
        a2 += b2
        a3 += b3
        if end > end2:
            a0 += column[end2]
            a1 += column[end2 + 1]
            a2 += column[end2 + 2]
            a3 += column[end2 + 3]
    total = (a0 + a2) + (a1 + a3)
    for i in range(start):
        total += column[i]
    for i in range(end, size):
        total += column[i]
    return total


_ROWS = [numba.types.Array(_F32, 2, "C", readonly=True), _F32[:, ::1]]


@numba.njit([numba.boolean(x, _F32, numba.boolean, _I64[::1], _F32[:, ::1]) for x in _ROWS], **OPTIONS)
def softmax(x, beta, reference, scalar_positions, out):
    """Softmax of the rows of x [rows, n] (n >= 1) into out: exp((x - max) * beta) times the
    reciprocal of its row's sum (LiteRT's Eigen kernel: pexp except at `scalar_positions`, flat
    indices of the elements its assignment loops leave to std::exp; Eigen's column sums), or with
    `reference` TFLite's reference kernel (std::exp, sums in order, a division). False, with nothing
    written, when x holds a NaN or an infinity: the NumPy path takes those."""
    rows, n = x.shape
    peaks = np.empty(rows, np.float32)
    for r in range(rows):
        row = x[r]
        peak = row[0]
        unbounded = np.int32(0)
        for i in range(n):  # (no early exit, an integer flag: the loop vectorizes)
            value = row[i]
            unbounded |= np.int32(not abs(value) <= _FLOAT_MAX)
            peak = value if value > peak else peak
        if unbounded:
            return False
        peaks[r] = peak
    if reference:
        for r in range(rows):
            row, target, peak = x[r], out[r], peaks[r]
            total = _ZERO
            for i in range(n):
                target[i] = _scalar_exp((row[i] - peak) * beta)
                total += target[i]
            for i in range(n):
                target[i] = target[i] / total
        return True
    powers_of_two = _POWERS_OF_TWO
    for r in range(rows):
        row, target, peak = x[r], out[r], peaks[r]
        for i in range(n):
            target[i] = _packet_exp((row[i] - peak) * beta, powers_of_two)
    for position in scalar_positions:
        r, i = position // n, position % n
        out[r, i] = _scalar_exp((x[r, i] - peaks[r]) * beta)
    for r in range(rows):
        target = out[r]
        inverse = _ONE / _column_sum(target, _aligned_start(r * n))
        for i in range(n):
            target[i] *= inverse
    return True


_BLOCKS = [numba.types.Array(_F32, 3, "C", readonly=True), _F32[:, :, ::1]]


@numba.njit([numba.void(x, numba.boolean, numba.boolean, _F32[:, ::1]) for x in _BLOCKS], **OPTIONS)
def mean(x, eigen, from_zero, out):
    """The mean over the middle axis of x [outer, reduced, inner] (reduced >= 1) into out [outer, inner]:
    with `eigen` (inner 1) Eigen's column sums divided by the count (LiteRT's last-axis float MEAN), else
    sums in order, from the first element or with `from_zero` from 0 (TFLite's optimized and reference
    MeanGeneral), divided by the count."""
    outer, reduced, inner = x.shape
    count = np.float32(reduced)
    if eigen:
        columns = x.reshape(outer, reduced)
        for o in range(outer):
            out[o, 0] = _column_sum(columns[o], _aligned_start(o * reduced)) / count
        return
    for o in range(outer):
        block, target = x[o], out[o]
        for i in range(inner):
            target[i] = _ZERO + block[0, i] if from_zero else block[0, i]
        for r in range(1, reduced):
            row = block[r]
            for i in range(inner):
                target[i] += row[i]
        for i in range(inner):
            target[i] /= count

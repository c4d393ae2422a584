"""Per-row dynamic quantization of float32 activations to int8, as TFLite's hybrid kernels do it
(tensor_utils::BatchQuantizeFloats: SymmetricQuantizeFloats / AsymmetricQuantizeFloats).

LiteRT's x86 build runs the NEON versions of both (through its SSE translation header), so each row is
quantized in whole blocks of 8 values and a scalar tail, which round differently:
- blocks: x * inverse_scale in float32, then ARMv7's RoundToNearest: truncate(p + (p < 0 ? -0.5 : 0.5))
  with the addition rounded to float32 (so 0.49999997 + 0.5 rounds up to 1.0 before truncation);
- tail (the last size % 8 values): std::round(x * inverse_scale), half away from zero, exactly.

Symmetric: scale = max(|min|, |max|) / 127 (float32), values clamped to [-127, 127], zero point 0.
Asymmetric: the range is widened to include 0; scale = (max - min) / 255 in double, the zero point nudged
to an int8 from whichever end has the smaller error; values clamped to [-128, 127].
A row of zeros (asymmetric: min == max) quantizes to zeros with scale 1 and zero point 0.

"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..common import clip
from ..jit import compiled
from .fixed_point import round_half_away

BLOCK = 8
HALF = np.float32(0.5)
# The float32 just below 0.5: trunc(p + copysign(BELOW_HALF, p)) is std::round (half away from zero)
# exactly, for every float32 p. Adding 0.5 itself goes wrong only for p = +-0.49999997, where the
# float32 sum rounds up to 1; with the addend one ulp below 0.5 an exact half still reaches the next
# integer (p = n - 0.5 gives n - 2**-25, within half an ulp of n for n >= 1, and 1 - 2**-25 ties to even
# 1.0), while anything below a half stays below it.
BELOW_HALF = np.nextafter(np.float32(0.5), np.float32(0))
# The same for float64 values (the zero points): one ulp below 0.5.
_BELOW_HALF_64 = np.nextafter(0.5, 0.0)
_127 = np.float32(127)
_M128 = np.float32(-128)
_ONE = np.float32(1)
_BOUNDS = np.array([-128, 127], np.float32)
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce  # without ndarray.min's Python layer


# 0.5 and its bits as 0-d arrays: ufuncs take them faster than NumPy scalars
_HALF_0D = np.array(HALF)
_HALF_0D.flags.writeable = False
_HALF_BITS_0D = _HALF_0D.view(np.int32)


@functools.lru_cache(maxsize=64)
def _round_addend(size: int) -> tuple[np.ndarray, np.ndarray]:
    """What _round_rows adds (with the sign of each product) to a row of `size` products: 0.5 in the
    NEON blocks, BELOW_HALF in the scalar tail; and its bits as int32."""
    blocked = size - size % BLOCK
    if blocked == size:
        return _HALF_0D, _HALF_BITS_0D
    addend = np.full(size, HALF, np.float32)
    addend[blocked:] = BELOW_HALF
    addend.flags.writeable = False
    return addend, addend.view(np.int32)


# From this many values on, _round_rows moves the signs with integer operations: np.copysign does not
# vectorize (~0.6 ns a value), an AND and an OR do.
_BITWISE_SIGNS = 2048
_SIGN_BIT = np.array(-(2**31), np.int32)


def _round_rows(products: np.ndarray, scratch: np.ndarray | None = None) -> None:
    """Round a C-contiguous [rows, size] float32 array in place the way the NEON kernels do (blocks,
    then the tail): blocks truncate p + (p < 0 ? -0.5 : 0.5) summed in float32, the tail is
    std::round(p) (see BELOW_HALF). copysign(0.5, p) differs from TFLite's (p < 0 ? -0.5 : 0.5) only
    for p = -0.0, which both truncate to zero. `scratch`, a float32 array of the same shape, spares an
    allocation."""
    addend, bits = _round_addend(products.shape[1])
    if products.size < _BITWISE_SIGNS:
        products += np.copysign(addend, products, out=scratch)
    else:  # copysign(addend, p): p's sign bit OR the addend's bits (whose sign bit is clear)
        signs = np.bitwise_and(
            products.view(np.int32), _SIGN_BIT, out=None if scratch is None else scratch.view(np.int32)
        )
        signs |= bits
        products += signs.view(np.float32)
    np.trunc(products, out=products)


def _has_zero(row: np.ndarray) -> bool:
    """Whether a 1-D array holds a 0 (a list's `in` beats NumPy's reductions on a few values)."""
    return 0.0 in row.tolist() if row.size <= 64 else bool((row == 0).any())


def quantize_rows_symmetric(
    values: np.ndarray, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """int8-valued float32 [rows, size] (into `out` when given) and float32 scales [rows]
    (NeonSymmetricQuantizeFloats)."""
    values = np.asarray(values, np.float32)
    rows, size = values.shape
    if size == 0:
        return np.zeros(values.shape, np.float32), np.ones(rows, np.float32)
    if values.size <= _SMALL:  # one pass of abs costs less than a second reduction and a maximum
        extent = np.abs(values).max(axis=1)  # max(|min|, |max|)
    else:
        extent = np.maximum(-values.min(axis=1), values.max(axis=1))
    any_zero = _has_zero(extent)
    if any_zero:
        zero = extent == 0
        extent[zero] = _127  # scale 1 and factor 1; the rows' -0.0 are made 0 below
    scales = extent / _127
    inverse = _127 / extent
    quantized = np.multiply(values, inverse[0] if rows == 1 else inverse[:, None], out=out)
    _round_rows(quantized)
    clip(quantized, -_127, _127, out=quantized)
    if any_zero:
        quantized[zero] = 0
    return quantized, scales


# AsymmetricQuantizeFloats' arithmetic on both ends of each range at once: rows [low, high] of
# _ends, scaled by the scale, give zero points -128 - low_scaled and 127 - high_scaled
# (_ZERO_BASE - scaled) and errors 128 + |low_scaled| and 127 + |high_scaled|, which, since
# low <= 0 <= high, are _ERROR_BASE - scaled * _ERROR_SIGN (a - (-b) is a + b exactly).
_ZERO_BASE = np.array([[-128.0], [127.0]])
_ERROR_BASE = np.array([[128.0], [127.0]])
_ERROR_SIGN = np.array([[1.0], [-1.0]])


def _asymmetric_parameters(ends: np.ndarray):
    """AsymmetricQuantizeFloats' per-row parameters for the float32 ranges [low, high] = ends [2, rows]
    (low <= 0 <= high): float32 scales, int64 zero points, float32 inverse
    scales; None when some row's float32 scale is 0 (an empty range, or an underflow). The scale is
    float32(high - low) / 255 in double, the zero point the one of whichever end loses less, clamped
    and rounded half away from zero (in double), the inverse float32(1.0 / float32(scale))."""
    spread = ends[1] - ends[0]  # float32, as in C
    scale = np.divide(spread, 255.0, dtype=np.float64)
    scales = scale.astype(np.float32)
    if _has_zero(scales):
        return None
    scaled = ends / scale  # float64
    candidates = _ZERO_BASE - scaled
    errors = _ERROR_BASE - scaled * _ERROR_SIGN
    zero_point = np.where(errors[0] < errors[1], candidates[0], candidates[1])
    # No clamp to [-128, 127]: it never binds. high_scaled - low_scaled is 255 up to ~2**-20 (the float32
    # spread's rounding), so the low end's zero point, chosen when 128 - low_scaled < 127 + high_scaled,
    # is in [-128, -0.99], and the high end's, chosen otherwise, in [-1.01, 127]; a NaN stays NaN.
    zero_point += np.copysign(_BELOW_HALF_64, zero_point)  # std::round, exactly (see BELOW_HALF),
    # with the truncation done by the cast
    # float32(1.0 / double(s)) is the float32 quotient itself: double rounding is innocuous for a
    # division when the wide type has at least 2 * 24 + 2 bits (checked on every float32 mantissa)
    inverse = np.divide(_ONE, scales)
    return scales, zero_point.astype(np.int64), inverse  # the cast truncates


def _asymmetric_parameters_general(ends: np.ndarray):
    """_asymmetric_parameters for any ranges: an empty one (all zeros) gives scale 1 and zero point 0,
    a scale that underflows to 0 in float32 gives the inverse 0."""
    flat = ends[0] == ends[1]
    if flat.any():  # [-128, 127]: scale 1, zero point 0, inverse 1
        ends = ends.copy()
        ends[0, flat], ends[1, flat] = -128, 127
    spread = ends[1] - ends[0]
    scale = np.divide(spread, 255.0, dtype=np.float64)
    scales = scale.astype(np.float32)
    scaled = ends / scale
    candidates = _ZERO_BASE - scaled
    errors = _ERROR_BASE - scaled * _ERROR_SIGN
    zero_point = np.where(errors[0] < errors[1], candidates[0], candidates[1])
    zero_point = round_half_away(np.clip(zero_point, -128.0, 127.0))
    inverse = np.zeros(scales.shape, np.float64)
    np.divide(1.0, scales, dtype=np.float64, out=inverse, where=scales != 0)
    return scales, zero_point.astype(np.int64), inverse.astype(np.float32)


# Up to this many rows, the per-row parameters are computed with Python scalars: a NumPy call on a
# handful of values costs ~1 us, and the vectorized recipe takes ~20 of them (a hybrid CONV_2D quantizes
# one row per batch: the parameters would cost more than quantizing the row).
_FEW_ROWS = 8
# Up to this many values, symmetric quantization finds max|x| with np.abs and one reduction.
_SMALL = 4096


def _asymmetric_row(low: float, high: float) -> tuple[float, int, float]:
    """_asymmetric_parameters of one row, in Python floats (doubles, as in C): the same steps."""
    scale = float(np.float32(high) - np.float32(low)) / 255.0
    low_scaled, high_scaled = low / scale, high / scale
    zero_point = (
        -128.0 - low_scaled if 128.0 + abs(low_scaled) < 127.0 + abs(high_scaled) else 127.0 - high_scaled
    )
    nudged = int(round_half_away(min(max(zero_point, -128.0), 127.0)))
    scale32 = float(np.float32(scale))
    return scale32, nudged, float(np.float32(1.0 / scale32)) if scale32 else 0.0


def quantize_rows_asymmetric(
    values: np.ndarray, centered: bool = False, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int8-valued float32 [rows, size] (into `out` when given), float32 scales [rows] and int64 zero
    points [rows] (NeonAsymmetricQuantizeFloats). With `centered`, the values come back minus their
    row's zero point (clamp(r + zp, -128, 127) - zp, exact): what a kernel that subtracts the zero point
    multiplies. A row whose range is empty (all zeros) gives zeros, scale 1 and zero point 0."""
    values = np.asarray(values, np.float32)
    rows = values.shape[0]
    if values.shape[1] == 0:
        return np.zeros(values.shape, np.float32), np.ones(rows, np.float32), np.zeros(rows, np.int64)
    if rows == 1:
        result = _quantize_row_asymmetric(values, centered, out)
        if result is not None:
            return result
    ends = np.empty((2, rows), np.float32)
    np.minimum.reduce(values, axis=1, initial=0, out=ends[0])  # NeonMinMax starts from 0
    np.maximum.reduce(values, axis=1, initial=0, out=ends[1])
    params = flat = None  # flat: the rows of zeros, when there may be some
    if rows <= _FEW_ROWS:
        ranges = ends.T.tolist()
        if all(math.isfinite(a) and math.isfinite(b) for a, b in ranges):
            params = [(1.0, 0, 1.0) if a == b else _asymmetric_row(a, b) for a, b in ranges]
            if any(a == b for a, b in ranges):
                flat = ends[0] == ends[1]
            scales = np.array([p[0] for p in params], np.float32)
            nudged = np.array([p[1] for p in params], np.int64)
            inverse = np.array([p[2] for p in params], np.float32)
        # else NaN or infinity: the vectorized recipe gives what C's casts give
    if params is None:
        params = _asymmetric_parameters(ends)
        if params is None:
            params = _asymmetric_parameters_general(ends)
            flat = ends[0] == ends[1]
        scales, nudged, inverse = params
    if rows == 1:  # scalars broadcast faster than columns
        factor, offsets = inverse[0], np.float32(nudged[0])  # NaN's zero point: as C's casts give
    else:
        factor, offsets = inverse[:, None], nudged[:, None].astype(np.float32)
    quantized = np.multiply(values, factor, out=out)
    _round_rows(quantized)
    if centered:
        if rows == 1:
            clip(quantized, _M128 - offsets, _127 - offsets, out=quantized)
        else:
            bounds = _BOUNDS - offsets  # [rows, 2]
            clip(quantized, bounds[:, :1], bounds[:, 1:], out=quantized)
    else:
        quantized += offsets
        clip(quantized, _M128, _127, out=quantized)
    if centered and flat is not None:  # clamping keeps their -0.0
        quantized[flat] = 0
    return quantized, scales, nudged


def _quantize_row_asymmetric(
    values: np.ndarray, centered: bool, out: np.ndarray | None, scratch: np.ndarray | None = None
):
    """quantize_rows_asymmetric of a single row with Python scalars for its parameters (`scratch`: see
    _round_rows); None when its range is not finite."""
    # NeonMinMax starts from 0
    low, high = min(float(_MIN(values, axis=None)), 0.0), max(float(_MAX(values, axis=None)), 0.0)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    flat = low == high
    scale, nudged, inverse = (1.0, 0, 1.0) if flat else _asymmetric_row(low, high)
    quantized = np.multiply(values, np.float32(inverse), out=out)
    _round_rows(quantized, scratch)
    if centered:
        clip(quantized, np.float32(-128 - nudged), np.float32(127 - nudged), out=quantized)
        if flat:  # clamping keeps the row's -0.0
            quantized.fill(0)
    else:
        quantized += np.float32(nudged)
        clip(quantized, _M128, _127, out=quantized)
    return quantized, np.array([scale], np.float32), np.array([nudged], np.int64)


# AsymmetricRowQuantizer's operands: 0-d arrays of the operands' dtypes (no promotion, no scalar
# conversion per call).
_255_0D = np.array(255.0)
_BELOW_HALF_0D = np.array(_BELOW_HALF_64)
_ONE_0D = np.array(1, np.float32)
_ZERO_0D = np.array(0, np.float32)
_M128_0D, _127_0D = np.array(-128, np.float32), np.array(127, np.float32)


# Up to this many values, AsymmetricRowQuantizer spreads its per-row columns over the rows.
_WIDE_LIMIT = 1 << 14


class AsymmetricRowQuantizer:
    """quantize_rows_asymmetric for inputs of one shape [rows, size] (size > 0), into arrays allocated
    once, in about 20 NumPy calls (a single row keeps its Python-scalar recipe).

    The zero point is the rounded -128 - low / scale or 127 - high / scale, whichever end loses less
    (_asymmetric_parameters). The two differ by (high - low) / scale - 255, the float32 rounding of the
    spread (under 2e-5), so both round to the same integer unless they straddle a half: the quantizer
    rounds both and, when they agree, needs no choice (else it hands the call to
    quantize_rows_asymmetric, which chooses). The per-row factors and bounds are written as columns of
    one block that one broadcasting copy spreads over the row width: NumPy calls whose operands all have
    the data's shape skip the broadcasting iterator (~1 us a call on small inputs). Calls whose rows
    include an empty range (a row of zeros) or a scale that is 0 or not finite go to
    quantize_rows_asymmetric too. The arrays a call returns are the quantizer's own (or `out`),
    overwritten by the next call. Where compiled kernels run (ops/jit.py), one call of
    hybrid_inputs_compiled.quantize_rows_asymmetric does it all (rows it cannot take come back here)."""

    def __init__(self, rows: int, size: int, centered: bool):
        self._centered = centered
        self._one_row = rows == 1
        self._scratch = np.empty((rows, size), np.float32)
        self._quantized: np.ndarray | None = None  # made by the first call that is given no output
        self._compiled = compiled("quant.hybrid_inputs_compiled", "quantize_rows_asymmetric")
        if self._compiled is not None:  # its scales and zero points
            self._compiled_results = (np.empty(rows, np.float32), np.empty(rows, np.int64))
        if self._one_row:
            return
        self._ends = np.empty((2, rows), np.float32)  # [low, high] of each row, widened to include 0
        self._spread = np.empty(rows, np.float32)
        self._scale = np.empty(rows)  # the double scale
        self._bases = np.repeat(np.array([[-128.0], [127.0]]), rows, axis=1)
        self._bounds = np.repeat(np.array([[-128.0], [127.0]], np.float32), rows, axis=1)
        # the ends in double, then the zero points of the low and of the high end (operands of one
        # dtype: mixed ones make NumPy allocate casting buffers)
        self._candidates = np.empty((2, rows))
        self._signs = np.empty((2, rows))
        self._zero_points = np.empty((2, rows), np.int64)
        self._offsets = np.empty((2, rows), np.float32)
        self._scales = np.empty(rows, np.float32)
        # per row: the inverse scale, then (centered) the bounds -128 - zp and 127 - zp, or the zero point
        columns = np.empty((3 if centered else 2, rows, 1), np.float32)
        self._columns, self._column_values = columns, columns[:, :, 0]
        # spread over the rows for small inputs only: on larger ones broadcasting costs little
        self._wide = np.empty((len(columns), rows, size), np.float32) if rows * size <= _WIDE_LIMIT else None

    @property
    def compiled_kernel(self):
        """(the compiled kernel, the scales and the zero points it writes) for a kernel that binds its
        arrays once and calls it as kernel(values, out, scales, zero_points, centered) on C-contiguous
        [rows, size] arrays (False back: a row needs this quantizer's NumPy path); None without one."""
        return None if self._compiled is None else (self._compiled, *self._compiled_results)

    def __call__(
        self, values: np.ndarray, out: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """quantize_rows_asymmetric(values, centered, out) for float32 `values` of the quantizer's
        shape; without `out`, into the quantizer's own array."""
        if out is None:
            if self._quantized is None:
                self._quantized = np.empty(self._scratch.shape, np.float32)
            out = self._quantized
        if self._compiled is not None and values.flags.c_contiguous and out.flags.c_contiguous:
            scales, zero_points = self._compiled_results
            if self._compiled(values, out, scales, zero_points, self._centered):
                return out, scales, zero_points
        if self._one_row:  # Python scalars beat a dozen NumPy calls
            result = _quantize_row_asymmetric(values, self._centered, out, self._scratch)
            return quantize_rows_asymmetric(values, self._centered, out) if result is None else result
        ends, scale, scales = self._ends, self._scale, self._scales
        _MIN(values, 1, None, ends[0], False, _ZERO_0D)  # NeonMinMax starts from 0
        _MAX(values, 1, None, ends[1], False, _ZERO_0D)
        np.subtract(ends[1], ends[0], self._spread)  # float32, as in C
        np.copyto(scale, self._spread)
        np.divide(scale, _255_0D, scale)
        np.copyto(scales, scale, casting="same_kind")
        listed = scales.tolist()
        if 0.0 in listed or not math.isfinite(sum(listed)):  # scales are >= 0 or NaN
            return quantize_rows_asymmetric(values, self._centered, out)
        candidates, zero_points, offsets = self._candidates, self._zero_points, self._offsets
        np.copyto(candidates, ends)
        np.divide(candidates, scale, candidates)
        np.subtract(self._bases, candidates, candidates)  # -128 - low_scaled, 127 - high_scaled
        # rounded half away from zero (see BELOW_HALF; no clamp: see _asymmetric_parameters), the
        # truncation done by the cast
        candidates += np.copysign(_BELOW_HALF_0D, candidates, self._signs)
        np.copyto(zero_points, candidates, casting="unsafe")
        np.copyto(offsets, zero_points, casting="same_kind")
        from_low, from_high = zero_points.tolist()
        if from_low != from_high:  # the candidates straddle a half: choose the end
            return quantize_rows_asymmetric(values, self._centered, out)
        inverse, *per_row = self._column_values
        np.divide(_ONE_0D, scales, inverse)  # float32(1.0 / scale): see _asymmetric_parameters
        if self._centered:  # clamp(r + zp, -128, 127) - zp; both rows of zero_points are zp
            np.subtract(self._bounds, offsets, self._column_values[1:])
        else:
            np.copyto(per_row[0], offsets[1])
        wide = self._wide
        if wide is None:
            wide = self._columns
        else:
            np.copyto(wide, self._columns)
        quantized = np.multiply(values, wide[0], out)
        _round_rows(quantized, self._scratch)
        if self._centered:
            clip(quantized, wide[1], wide[2], quantized)
        else:
            quantized += wide[1]
            clip(quantized, _M128_0D, _127_0D, quantized)
        return quantized, scales, zero_points[1]


def quantize_rows_4bit_kernel(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The input quantization of TFLite's 4-bit hybrid FULLY_CONNECTED kernel (BatchQuantizeFloats4Bit):
    always symmetric, every value rounded as std::round(x * float(127.0 / max|x|)) without clamping, the
    scale float(max|x| / 127.0) computed in double; a row of zeros gets scale 1."""
    values = np.asarray(values, np.float32)
    extent = np.abs(values).max(axis=1, initial=0).astype(np.float64)
    extent[extent == 0] = 127.0
    inverse = (127.0 / extent).astype(np.float32)
    quantized = round_half_away(values * inverse[:, None]).astype(np.float32)
    return quantized, (extent / 127.0).astype(np.float32)

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

has_hybrid_op tells whether a subgraph holds such a kernel: the Interpreter then asks the float kernels
before it for LiteRT's exact summation order (Context.exact_float_summation).
"""

from __future__ import annotations

import math

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ..common import clip, is_constant
from .fixed_point import round_half_away

_BLOCK = 8
_HALF = np.float32(0.5)
_ONE = np.float32(1)
_127 = np.float32(127)


def _round_rows(products: np.ndarray) -> None:
    """Round a [rows, size] float32 array in place the way the NEON kernels do (blocks, then the tail).
    In blocks, copysign(0.5, p) differs from TFLite's (p < 0 ? -0.5 : 0.5) only for p = -0.0, which
    both truncate to zero."""
    size = products.shape[1]
    blocked = size - size % _BLOCK
    head = products[:, :blocked] if blocked < size else products
    head += np.copysign(_HALF, head)
    np.trunc(head, out=head)
    if blocked < size:
        tail = products[:, blocked:]
        whole = np.trunc(tail)
        whole += np.copysign(_ONE, tail) * (np.abs(tail - whole) >= _HALF)  # half away from zero
        tail[...] = whole


# --- which subgraphs have hybrid kernels ---------------------------------------------------------------

# The builtins with hybrid variants: float32 activations meet constant int8 / uint8 / int4 weights.
_HYBRID_OPS = frozenset(
    {
        BuiltinOperator.CONV_2D,
        BuiltinOperator.DEPTHWISE_CONV_2D,
        BuiltinOperator.FULLY_CONNECTED,
        BuiltinOperator.BATCH_MATMUL,
        BuiltinOperator.EMBEDDING_LOOKUP,
        BuiltinOperator.LSTM,
        BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
        BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM,
        BuiltinOperator.RNN,
        BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN,
        BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN,
        BuiltinOperator.SVDF,
    }
)
_QUANTIZED_WEIGHTS = (TensorType.INT8, TensorType.UINT8, TensorType.INT4)


def is_hybrid_node(tensors, node, builtin_code: int) -> bool:
    """A hybrid kernel: one of _HYBRID_OPS with a constant 8-bit (or 4-bit) input and a float32 input
    or output (a fully quantized kernel has no float32 tensor)."""
    if builtin_code not in _HYBRID_OPS:
        return False
    inputs = [tensors[i] for i in node.inputs if i >= 0]
    if not any(t.type in _QUANTIZED_WEIGHTS and is_constant(t) for t in inputs):
        return False
    return any(t.type == TensorType.FLOAT32 for t in inputs) or any(
        tensors[i].type == TensorType.FLOAT32 for i in node.outputs if i >= 0
    )


def has_hybrid_op(subgraph) -> bool:
    """Whether any node of the subgraph is a hybrid kernel. Such a kernel quantizes its float input per
    batch, so a float kernel before it that differs from LiteRT by one ulp can move a value across a
    rounding boundary: a whole quantization step at the output. The Interpreter then turns on
    Context.exact_float_summation for the subgraph (LiteRT's summation order in the float kernels)."""
    tensors = subgraph.tensors
    return any(
        is_hybrid_node(tensors, node, registration.builtin_code) for node, registration in subgraph.nodes
    )


# Up to this many rows, the per-row parameters are computed with Python scalars: a NumPy call on a
# handful of values costs ~1 us, and the vectorized recipe takes ~20 of them (a hybrid CONV_2D quantizes
# one row per batch: the parameters would cost more than quantizing the row).
_FEW_ROWS = 8


def _row_ranges(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's min and max, widened to include 0 (NeonMinMax starts from 0)."""
    return np.minimum(values.min(axis=1), np.float32(0)), np.maximum(values.max(axis=1), np.float32(0))


def quantize_rows_symmetric(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8-valued float32 [rows, size] and float32 scales [rows] (NeonSymmetricQuantizeFloats)."""
    values = np.asarray(values, np.float32)
    rows = values.shape[0]
    if values.shape[1] == 0:
        return np.zeros(values.shape, np.float32), np.ones(rows, np.float32)
    low, high = _row_ranges(values)
    extent = np.maximum(-low, high)  # max(|min|, |max|)
    zero = extent == 0
    any_zero = zero.any()
    if any_zero:
        extent[zero] = 1
    scales = extent / _127
    inverse = _127 / extent
    quantized = values * (inverse[0] if rows == 1 else inverse[:, None])
    _round_rows(quantized)
    clip(quantized, -_127, _127, out=quantized)
    if any_zero:
        quantized[zero] = 0
        scales[zero] = 1
    return quantized, scales


def _asymmetric_parameters(low: np.ndarray, high: np.ndarray):
    """AsymmetricQuantizeFloats' per-row parameters for the ranges [low, high] (low < high; float32):
    float32 scales, int64 zero points, float32 inverse scales. The scale is float32(high - low) / 255
    in double, the zero point the one of whichever end loses less, clamped and rounded half away from
    zero (in double), the inverse float32(1.0 / scale) (0 when the scale underflows to 0)."""
    spread = (high - low).astype(np.float64)  # the subtraction is float32, as in C
    scale = spread / 255.0
    low_scaled, high_scaled = low / scale, high / scale  # float64
    from_low = -128.0 - low_scaled
    from_high = 127.0 - high_scaled
    zero_point = np.where(128.0 + np.abs(low_scaled) < 127.0 + np.abs(high_scaled), from_low, from_high)
    nudged = round_half_away(np.clip(zero_point, -128.0, 127.0)).astype(np.int64)
    scales = scale.astype(np.float32)
    with np.errstate(divide="ignore"):
        inverse = np.where(scales == 0, 0.0, 1.0 / scales.astype(np.float64)).astype(np.float32)
    return scales, nudged, inverse


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
    values: np.ndarray, centered: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int8-valued float32 [rows, size], float32 scales [rows] and int64 zero points [rows]
    (NeonAsymmetricQuantizeFloats). With `centered`, the values come back minus their row's zero point
    (clamp(r + zp, -128, 127) - zp, exact): what a kernel that subtracts the zero point multiplies.
    A row whose range is empty (all zeros) gives zeros, scale 1 and zero point 0."""
    values = np.asarray(values, np.float32)
    rows = values.shape[0]
    if values.shape[1] == 0:
        return np.zeros(values.shape, np.float32), np.ones(rows, np.float32), np.zeros(rows, np.int64)
    ranges = None
    if rows <= _FEW_ROWS:
        ranges = [
            (min(a, 0.0), max(b, 0.0))
            for a, b in zip(values.min(axis=1).tolist(), values.max(axis=1).tolist())
        ]
        if not all(math.isfinite(a) and math.isfinite(b) for a, b in ranges):
            ranges = None  # NaN or infinity: the vectorized recipe gives what C's casts give
    if ranges is not None:
        flat = [a == b for a, b in ranges]
        any_flat = any(flat)
        params = [(1.0, 0, 0.0) if f else _asymmetric_row(a, b) for (a, b), f in zip(ranges, flat)]
        scales = np.array([p[0] for p in params], np.float32)
        nudged = np.array([p[1] for p in params], np.int64)
        inverse = np.array([p[2] for p in params], np.float32)
    else:
        low, high = _row_ranges(values)
        flat = low == high
        any_flat = flat.any()
        if any_flat:
            low, high = np.where(flat, np.float32(-1), low), np.where(flat, np.float32(1), high)
        scales, nudged, inverse = _asymmetric_parameters(low, high)
    if rows == 1:  # scalars broadcast faster than columns
        factor, offsets = inverse[0], np.float32(nudged[0])
    else:
        factor, offsets = inverse[:, None], nudged[:, None].astype(np.float32)
    quantized = values * factor
    _round_rows(quantized)
    if centered:
        clip(quantized, np.float32(-128) - offsets, _127 - offsets, out=quantized)
    else:
        quantized += offsets
        clip(quantized, np.float32(-128), _127, out=quantized)
    if any_flat:
        quantized[flat] = 0
        scales[flat] = 1
        nudged[flat] = 0
    return quantized, scales, nudged


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


# --- the x86 integer kernels' quirks ---------------------------------------------------------------
#
# TFLite's SSE hybrid kernels (MatrixBatchVectorMultiplyAccumulate, ReductionSumVector), which LiteRT's
# x86 build uses for both its optimized and reference resolvers, are exact except in two corners that
# quantized weights can reach, reproduced here:
# - the dot product of 16-value blocks moves the input's sign onto the weight with _mm_sign_epi8, which
#   leaves a weight of -128 unchanged: w = -128 times a negative input x counts as +128 * |x| negated,
#   i.e. the sum is off by 256 * x for each such pair;
# - row sums (for asymmetric inputs) add 16-value blocks in eight int16 lanes, which wrap.


def sign_transfer_mask(weights: np.ndarray, columns: int) -> np.ndarray | None:
    """[columns, units] float64 indicator of the weights of -128 among the first `columns` columns (the
    ones TFLite's SSE kernel multiplies in 16-value blocks), or None when there are none."""
    mask = weights[:, :columns] == -128
    return mask.T.astype(np.float64) if mask.any() else None


def sign_transfer_correction(quantized: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """What TFLite's _mm_sign_epi8 dot product adds to the exact sums of the quantized rows [rows,
    depth] times the weights: 256 * x for every weight of -128 (in `mask`) met by a negative x."""
    negative = np.minimum(quantized[:, : mask.shape[0]], 0).astype(np.float64)
    return 256.0 * (negative @ mask)  # exact: integers far below 2**53


def sign_transfer_split(weights: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The SSE dot product of int8 rows x with `weights` [units, depth] as two exact products,
    x @ kept.T + |x| @ flipped.T: a weight of -128 among the first `columns` columns contributes
    -128 * x + 256 * min(x, 0) = -128 * |x| (what _mm_sign_epi8 leaves), so `flipped` holds those
    weights and `kept` every other one (0 there). None when there are none. For kernels whose input
    rows are windows gathered on the fly (convolutions), where sign_transfer_correction's
    [rows, depth] operand does not exist."""
    weights = np.asarray(weights)
    mask = np.zeros(weights.shape, bool)
    mask[:, :columns] = weights[:, :columns] == -128
    if not mask.any():
        return None
    return np.where(mask, 0, weights), np.where(mask, weights, 0)


def sse_row_sums(weights: np.ndarray) -> np.ndarray:
    """Each row's sum as SseReductionSumVector computes it: whole 16-value blocks (and one 8-value block
    after them) summed in eight int16 lanes that wrap, the rest added in int32."""
    weights = np.asarray(weights).astype(np.int64)
    units, depth = weights.shape
    blocked = depth & ~15
    lanes = weights[:, :blocked].reshape(units, -1, 8, 2).sum(axis=(1, 3))
    rest = blocked
    if blocked < depth & ~7:
        lanes += weights[:, blocked : blocked + 8]
        rest = blocked + 8
    lanes = ((lanes + 2**15) & 0xFFFF) - 2**15
    return lanes.sum(axis=1) + weights[:, rest:].sum(axis=1)

"""LiteRT's x86-only integer quirks: its SSE hybrid kernels, reproduced on x86 profiles only.

TFLite's SSE hybrid kernels (MatrixBatchVectorMultiplyAccumulate, ReductionSumVector), which LiteRT's
x86 build uses for both its optimized and reference resolvers, are exact except in two corners that
quantized weights can reach:
- the dot product of 16-value blocks moves the input's sign onto the weight with _mm_sign_epi8, which
  leaves a weight of -128 unchanged: w = -128 times a negative input x counts as +128 * |x| negated,
  i.e. the sum is off by 256 * x for each such pair;
- row sums (for asymmetric inputs) add 16-value blocks in eight int16 lanes, which wrap.
Both are x86-only: kernels get them through their host's HostArithmetic (fidelity/arithmetic.py). ARM
runs TFLite's NEON kernels instead, whose products and sums are exact (docs/fidelity.md).
"""

from __future__ import annotations

import numpy as np


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

"""NEON lane operations as LiteRT's x86 build computes them (NEON_2_SSE translation), over NumPy int64
arrays holding int32 (or int16) lane values.

TFLite's optimized kernels run their `#ifdef USE_NEON` blocks on x86 through an SSE translation of the
NEON intrinsics. Those blocks round differently from the scalar code that handles the remaining elements,
so a kernel reproducing them needs the lane semantics:
- vqrdmulhq_s32 (gemmlowp's vector SaturatingRoundingDoublingHighMul): the high half of 2*a*b rounded
  half up (toward +inf) -- which the scalar SaturatingRoundingDoublingHighMul, with its nudge of
  1 - 2**30 for negative products and truncating division, computes too;
- vshlq_s32 by a signed count: a left shift that wraps, or a truncating (flooring) arithmetic right shift
  for a negative count; counts of 32 or more either way give 0 (the translation's serial loop);
- gemmlowp's vector RoundingDivideByPOT: rounds half away from zero, exactly like the scalar one, so
  fixed_point.rounding_divide_by_pot serves both;
- vmovn (narrowing, wraps) and vqmovn/vqmovun (narrowing, saturates).
"""

from __future__ import annotations

import numpy as np

INT32_MAX = 2**31 - 1


def vqrdmulh(a, b) -> np.ndarray:
    """vqrdmulhq_s32: (2*a*b + 2**31) >> 32, saturating only INT32_MIN * INT32_MIN."""
    product = np.asarray(a, dtype=np.int64) * b
    return np.minimum((product + (1 << 30)) >> 31, INT32_MAX)


def vshl(x, count: int) -> np.ndarray:
    """vshlq_s32 by one count for every lane: left (wrapping in int32) or right (flooring)."""
    x = np.asarray(x, dtype=np.int64)
    if count >= 32 or count <= -32:
        return np.zeros_like(x)
    if count >= 0:
        return wrap(x << count, 32)
    return x >> -count


def wrap(x, bits: int) -> np.ndarray:
    """Two's complement truncation to `bits` (vmovn, or C arithmetic that overflows)."""
    half = 1 << (bits - 1)
    return ((np.asarray(x, dtype=np.int64) + half) & ((1 << bits) - 1)) - half


def saturate(x, low: int, high: int) -> np.ndarray:
    """vqmovn / vqmovun: narrowing with saturation to [low, high]."""
    return np.clip(x, low, high)

"""NEON lane operations as LiteRT's x86 build computes them (NEON_2_SSE translation), over NumPy int64
arrays holding int32 (or int16) lane values. Real NEON rounds the same way, so kernels use these on
every host (the translation's shifts by 32 or more, below, are its own: docs/fidelity.md).

TFLite's optimized kernels run their `#ifdef USE_NEON` blocks on x86 through an SSE translation of the
NEON intrinsics. Those blocks round differently from the scalar code that handles the remaining elements,
so a kernel reproducing them needs the lane semantics:
- vqrdmulhq_s32: gemmlowp's SaturatingRoundingDoublingHighMul exactly (fixed_point's serves both);
- vshlq_s32 by a signed count: a left shift that wraps, or a truncating (flooring) arithmetic right shift
  for a negative count; counts of 32 or more either way give 0 (the translation's serial loop);
- gemmlowp's vector RoundingDivideByPOT: rounds half away from zero, exactly like the scalar one, so
  ops/quant/fixed_point.rounding_divide_by_pot serves both;
- vmovn (narrowing, wraps: ops/quant/fixed_point.wrap) and vqmovn/vqmovun (narrowing, saturates).
"""

from __future__ import annotations

import numpy as np


def vshl(x, count: int) -> np.ndarray:
    """vshlq_s32 by one count for every lane: left (wrapping in int32) or right (flooring)."""
    x = np.asarray(x, dtype=np.int64)
    if count >= 32 or count <= -32:
        return np.zeros_like(x)
    if count >= 0:
        return ((x << count) + 2**31) % 2**32 - 2**31  # wraps in int32
    return x >> -count


def saturate(x, low: int, high: int) -> np.ndarray:
    """vqmovn / vqmovun: narrowing with saturation to [low, high]."""
    return np.clip(x, low, high)

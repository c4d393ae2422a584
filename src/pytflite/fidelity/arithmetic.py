"""The host's arithmetic where TFLite's C++ gives other numbers on one CPU than on another, as one object
per host (HostProfile.arithmetic) that kernels call instead of branching on the host.

Two things differ, and only between LiteRT's x86 build and the others (ARM, wasm32):
- converting a float out of int32's range (or NaN) to int32: x86's cvttss2si gives INT32_MIN, ARM's
  fcvtzs saturates (NaN to 0), in every kernel that converts (QUANTIZE, quantized SQRT, integer POW,
  quantized SUM/MEAN, the float-scale FULLY_CONNECTED, activations' tables and multipliers);
- the x86 build's SSE hybrid kernels (fidelity/sse.py): a weight of -128 loses its sign against a
  negative input in the 16-value blocks, and the weight row sums wrap in int16 lanes.
A kernel reads its host's HostArithmetic in prepare and keeps it in its op data; adding a host that
computes otherwise is a new HostArithmetic here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import INT32_MAX, INT32_MIN
from . import sse


def float_to_int32(values, saturate: bool = False, *, x86: bool) -> np.ndarray:
    """static_cast<int32_t>(float): truncation toward zero. On x86 (cvttss2si) NaN and values out of
    int32's range give INT32_MIN ("integer indefinite"); with `saturate`, out-of-range values clamp to
    int32's limits instead, as where LiteRT's compiler folds a following clamp into the conversion.
    Elsewhere (`x86` False; ARM's fcvtzs) out-of-range values saturate and NaN gives 0. Returned as
    int64. (Kernels call their HostArithmetic's; lut.py keeps x86's conversion on every host.)"""
    values = np.asarray(values)
    with np.errstate(invalid="ignore"):
        inside = (values >= -(2.0**31)) & (values < 2.0**31)
        whole = np.trunc(np.where(inside, values, 0)).astype(np.int64)
    if not x86:
        return np.where(inside, whole, np.where(values > 0, INT32_MAX, np.where(values < 0, INT32_MIN, 0)))
    if saturate:
        return np.where(inside, whole, np.where(values > 0, INT32_MAX, INT32_MIN))
    return np.where(inside, whole, INT32_MIN)


@dataclass(frozen=True)
class HostArithmetic:
    """What a host's C++ computes where hosts differ. `x86`: LiteRT's x86 build (SSE)."""

    x86: bool

    def float_to_int32(self, values, saturate: bool = False) -> np.ndarray:
        """static_cast<int32_t>(float) on this host (see float_to_int32), as int64."""
        return float_to_int32(values, saturate, x86=self.x86)

    def hybrid_row_sums(self, weights: np.ndarray) -> np.ndarray:
        """The weight rows' sums (int64) a hybrid kernel subtracts, times the zero point, for asymmetric
        inputs: SseReductionSumVector's wrapping int16 lanes on x86, exact elsewhere."""
        if self.x86:
            return sse.sse_row_sums(weights)
        return np.asarray(weights).astype(np.int64).sum(axis=1)

    def sign_lost_columns(self, depth: int) -> int:
        """How many of a hybrid product's `depth` columns the kernel multiplies in the SSE blocks where a
        weight of -128 loses its sign (sse.py): the whole 16-value blocks on x86, none elsewhere."""
        return depth & ~15 if self.x86 else 0


X86 = HostArithmetic(x86=True)
PORTABLE = HostArithmetic(x86=False)  # ARM, wasm32 and every other host

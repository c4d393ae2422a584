"""What the 8-bit SOFTMAX and LOG_SOFTMAX kernels share: each element's distance below its row's
maximum, the float expf table and sequential row sums of the optimized kernels, and the fixed-point
exps of BUILTIN_REF's integer kernels."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import ensure
from ..quant.fixed_point import quantize_multiplier, rounding_divide_by_pot, wrap
from ..quant.lut import expf
from .common import as_rows
from .quantized import Q31

# SOFTMAX, LOG_SOFTMAX of uint8/int8: the optimized kernels work in float32 with a table of
# expf(-input_scale * beta * d) over the 256 distances d to the row's maximum, summed sequentially.
# BUILTIN_REF's kernels are fixed-point (gemmlowp exp, reciprocal and log). int16 SOFTMAX is one
# fixed-point kernel in both, with 513-entry exp and 1/(1+x) tables.


def distances_below_max(x: np.ndarray) -> np.ndarray:
    """Each element's distance below its row's maximum (int32 rows)."""
    rows = as_rows(x).astype(np.int32)
    return np.subtract(np.maximum.reduce(rows, axis=-1, keepdims=True), rows, out=rows)


def float_exp_table(input_scale: np.float32, beta: np.float32) -> np.ndarray:
    """expf(scale * d) for d = 0 ... 255, scale = -input_scale * beta (PopulateSoftmaxLookupTable)."""
    scale = -input_scale * beta
    return expf(scale * np.arange(256, dtype=np.float32))


def sequential_row_sums(values: np.ndarray) -> np.ndarray:
    """float32 row sums added left to right, as TFLite's scalar loop does."""
    return np.add.accumulate(values, axis=-1)[:, -1]


def softmax_input_scaling(input_scale: np.float32, beta: float, op_name: str) -> tuple[int, int, int]:
    """PreprocessSoftmaxScaling (5 integer bits) and the matching diff_min (CalculateInputRadius)."""
    real = min(float(beta) * float(input_scale) * (1 << 26), 2.0**31 - 1.0)
    ensure(real > 1.0, f"{op_name} input scale * beta {real / (1 << 26)} is too small for the integer kernel")
    multiplier, left_shift = quantize_multiplier(real)
    radius = math.floor(31.0 * (1 << 26) / (1 << left_shift))
    return multiplier, left_shift, -radius


@dataclass(frozen=True)
class _FixedPointExps:
    """The integer kernels' per-distance values, for distances d = 0 ... 255 below the row maximum."""

    valid: np.ndarray  # -d >= diff_min: the element takes part
    rescaled: np.ndarray  # -d * input_scale * beta in Q5.26
    exps: np.ndarray  # exp of that, Q0.31
    summands: np.ndarray  # the exps in Q12.19, 0 where not valid


def fixed_point_exps(multiplier: int, left_shift: int, diff_min: int) -> _FixedPointExps:
    differences = -np.arange(256, dtype=np.int64)
    valid = differences >= diff_min
    rescaled = Q31.mul(wrap(np.where(valid, differences, 0) << left_shift, 32), multiplier)
    exps = Q31.exp_on_negative_values(rescaled, 5)
    return _FixedPointExps(valid, rescaled, exps, np.where(valid, rounding_divide_by_pot(exps, 12), 0))

"""What the recurrent ops share: float32 and its 1, the hybrid weight types, and the [time, batch, depth]
view of a sequence tensor with its product by a weight matrix."""

from __future__ import annotations

import numpy as np

from ...core.types import TensorType

F32 = np.float32
T = TensorType
WEIGHT_INT = (T.INT8, T.UINT8)  # hybrid weights (TFLite reads uint8 weights as int8)

ONE = F32(1)


def time_major_view(array: np.ndarray, time_major: bool) -> np.ndarray:
    """A [time, batch, depth] view of a sequence tensor's data."""
    return array if time_major else array.swapaxes(0, 1)


def sequence_matmul(x_tbd: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """x @ weights for every (time, batch) row of a [time, batch, depth] view, as [time, batch, cols]."""
    if x_tbd.flags.c_contiguous:
        base, swapped = x_tbd, False
    else:
        base, swapped = np.ascontiguousarray(x_tbd.swapaxes(0, 1)), True
    rows = base.reshape(-1, base.shape[-1]) @ weights
    rows = rows.reshape(*base.shape[:-1], weights.shape[1])
    return rows.swapaxes(0, 1) if swapped else rows

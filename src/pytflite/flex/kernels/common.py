"""What the TF kernel modules share to read their inputs and refuse them as TF does, in TF's words."""

from __future__ import annotations

import numpy as np


def shape_text(shape) -> str:
    """A shape as TF writes it in messages: [3,4], ? for an unknown dimension, <unknown> for an
    unknown rank (None)."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in shape) + "]"


def ints(values: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(values).reshape(-1)]


def sizes(dims: np.ndarray) -> list[int]:
    """A shape input's sizes, refusing a negative one as TF does."""
    shape = ints(dims)
    for d in shape:
        if d < 0:
            raise ValueError(f"Dimension {d} must be >= 0")
    return shape


def scalar(value: np.ndarray, refusal: str):
    """The one element of a scalar input (TF also takes a one-element vector); `refusal` names the
    input in TF's message and gets the shape appended."""
    if value.size != 1 or value.ndim > 1:
        raise ValueError(f"{refusal}{shape_text(value.shape)}")
    return value.reshape(())[()]


def zeros(shape, dtype: np.dtype) -> np.ndarray:
    """What TF writes where no value is given: zeros, False, empty strings."""
    return np.full(shape, b"", dtype=object) if dtype.kind == "O" else np.zeros(shape, dtype)

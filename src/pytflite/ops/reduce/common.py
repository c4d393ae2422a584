"""What the reductions share: the axis tensor's resolution, the reduced shape and ReduceSpec."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.types import TensorType
from ...errors import KernelError, ensure, ensure_eq
from ...fidelity.arithmetic import X86, HostArithmetic
from ..kernel_type import OPTIMIZED, KernelType

NUMBERS = (TensorType.FLOAT32, TensorType.INT32, TensorType.INT64)


QUANTIZED = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)


def resolve_axes(axis: np.ndarray, rank: int) -> tuple[int, ...]:
    """Axis values made non-negative, validated, in first-seen order without duplicates."""
    resolved: list[int] = []
    if rank == 0:
        return ()
    for value in np.asarray(axis).reshape(-1).tolist():
        current = value + rank if value < 0 else value
        if not 0 <= current < rank:
            raise KernelError("Invalid axis index.")
        if current not in resolved:
            resolved.append(current)
    return tuple(resolved)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return reduced_shape(shape, axes, keep_dims=True)


@dataclass(frozen=True)
class ReduceSpec:
    """What a reducer is made for: the input shape and type, the resolved axes, and for quantized
    inputs the (scale, zero point) of input and output, and which TFLite kernel (KernelType) to follow."""

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    dtype: np.dtype
    keep_dims: bool = False
    source_quantization: tuple[float, int] | None = None
    output_quantization: tuple[float, int] | None = None
    kernel_type: KernelType = OPTIMIZED
    arithmetic: HostArithmetic = X86  # the host's (read in prepare): how floats out of int32's range convert

    @property
    def count(self) -> int:
        """Elements reduced into each output element."""
        return math.prod(self.shape[a] for a in self.axes)


# A reducer makes, from a ReduceSpec, the function that reduces an input into the output viewed with the
# reduced dimensions kept as 1: everything per shape is worked out once.
Reducer = Callable[[ReduceSpec], Callable[[np.ndarray, np.ndarray], None]]


ARG_TYPES = (TensorType.FLOAT32, TensorType.UINT8, TensorType.INT8, TensorType.INT32, TensorType.BOOL)


AXIS_TYPES = (TensorType.INT32, TensorType.INT64)


INDEX_TYPES = (TensorType.INT32, TensorType.INT64)


def read_axis(axis: np.ndarray, rank: int) -> int:
    """The one value of an int32/int64 axis tensor, made non-negative (TFLite's ReadAndNormalizeAxis)."""
    value = int(axis.reshape(-1)[0])
    if value < 0:
        value += rank
    ensure(0 <= value < rank, "Invalid axis value.")
    return value


def ensure_single_axis(axis, op_name: str) -> None:
    ensure_eq(math.prod(axis.shape), 1, f"{op_name} axis element count")

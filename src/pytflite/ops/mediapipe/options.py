"""The MediaPipe ops' options, read as MediaPipe's kernels read them.

The three older ops (Convolution2DTransposeBias, MaxPoolingWithArgmax2D, MaxUnpooling2D) cast their
custom options to a TFLite C struct (TfLiteTransposeConvParams, TfLitePoolParams): little-endian int32
fields, the padding as TfLitePadding (0 unknown, 1 SAME, 2 VALID: not the schema's numbering) and the
activation as TfLiteFusedActivation (the schema's numbering). MediaPipe reads past a short buffer;
pytflite refuses it. The landmark ops read a flexbuffer map, where a missing key reads as 0 (the
shared readers, ops/custom_op_options.py, plus the two kinds only these ops use).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import KernelError
from ...model.options import ActivationFunctionType
from ..common import activation_clamp

PADDING_SAME = 1
PADDING_VALID = 2


@dataclass(frozen=True)
class PoolOptions:
    """The TfLitePoolParams fields MediaPipe's pooling ops read."""

    padding: int
    stride_width: int
    stride_height: int
    filter_width: int
    filter_height: int
    activation: int


@dataclass(frozen=True)
class TransposeConvOptions:
    """The TfLiteTransposeConvParams fields Convolution2DTransposeBias reads (no activation)."""

    padding: int
    stride_width: int
    stride_height: int


def _c_struct(op: str, buffer: bytes | None, fields: int) -> tuple[int, ...]:
    size = 4 * fields
    if buffer is None or len(buffer) < size:
        got = 0 if buffer is None else len(buffer)
        raise KernelError(f"{op} needs its options as a {size}-byte C struct, got {got} bytes")
    return struct.unpack_from(f"<{fields}i", bytes(buffer))


def pool_options(op: str, buffer: bytes | None) -> PoolOptions:
    """TfLitePoolParams' first six fields (the computed padding after them is not read)."""
    options = PoolOptions(*_c_struct(op, buffer, 6))
    for name in ("stride_width", "stride_height", "filter_width", "filter_height"):
        if getattr(options, name) < 1:
            raise KernelError(f"{op}: {name} must be positive, got {getattr(options, name)}")
    return options


def transpose_conv_options(op: str, buffer: bytes | None) -> TransposeConvOptions:
    options = TransposeConvOptions(*_c_struct(op, buffer, 3))
    if options.stride_width < 1 or options.stride_height < 1:
        raise KernelError(
            f"{op}: strides must be positive, got {options.stride_height}x{options.stride_width}"
        )
    return options


def c_div(a: int, b: int) -> int:
    """C's integer division (truncating toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def compute_padding(stride: int, in_size: int, filter_size: int, out_size: int) -> int:
    """TFLite's ComputePadding without dilation: half the excess of the windows over the input, >= 0."""
    return max(0, c_div((out_size - 1) * stride + filter_size - in_size, 2))


def fused_activation(activation: int):
    """The in-place clamp of a TfLiteFusedActivation value (None: no clamp, as CalculateActivationRange
    leaves any other value)."""
    try:
        return activation_clamp(ActivationFunctionType(activation))
    except ValueError:
        return None


def as_float(options: dict[str, Any], key: str) -> float:
    """flexbuffers' AsFloat for numbers and bools; anything else (a missing key) reads as 0."""
    value = options.get(key)
    if isinstance(value, (bool, int, float)):
        return float(np.float32(value))
    return 0.0


def as_int_list(options: dict[str, Any], key: str) -> list[int]:
    """A typed vector of ints (AsTypedVector; missing: empty)."""
    value = options.get(key)
    if not isinstance(value, list):
        return []
    return [int(v) if isinstance(v, (bool, int)) else 0 for v in value]


@dataclass(frozen=True)
class PoolingData:
    """Op data of MaxPoolingWithArgmax2D and MaxUnpooling2D: the options init read, the padding prepare
    computes."""

    options: PoolOptions
    pad_top: int = 0
    pad_left: int = 0


def pooling_init(op: str):
    """The init of a pooling op named `op`: its TfLitePoolParams, read once."""

    def init(context, buffer, length):
        return PoolingData(pool_options(op, buffer))

    return init

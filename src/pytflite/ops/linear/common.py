"""What the matrix-product kernels share: the types, bounds and weight readers, and the float matrix product."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...core.packed import unpack_packed
from ...core.quantization import AffineQuantization
from ...core.types import TensorType
from ...model.options import ActivationFunctionType

T = TensorType


Act = ActivationFunctionType


Kernel = Callable[..., None]


RANGES = {T.UINT8: (0, 255), T.INT8: (-128, 127), T.INT16: (-(2**15), 2**15 - 1)}


PACKED_WEIGHTS = (T.INT4, T.INT2)


INT32_LIMIT = 2**31


def weight_values(weights) -> np.ndarray:
    """The weights' integer values, one per element (int4/int2 unpacked), in the weights' shape."""
    if weights.type in PACKED_WEIGHTS:
        count = math.prod(weights.shape)
        return unpack_packed(weights.data, count, weights.type).reshape(weights.shape)
    return weights.data


def largest(tensor_type: TensorType, zero_point) -> int:
    """Bound on |q - zero_point| for a value of this type."""
    low, high = RANGES.get(tensor_type, (-128, 127))
    zero = np.asarray(zero_point, np.int64)
    return int(max(np.max(np.abs(high - zero)), np.max(np.abs(low - zero))))


def per_channel_scales(tensor) -> np.ndarray | None:
    """The scales of a tensor quantized per channel (more than one scale), else None."""
    quantization = tensor.quantization
    if isinstance(quantization, AffineQuantization) and quantization.scale.size > 1:
        return quantization.scale
    return None


def matrix_product(depth: int) -> Callable:
    """The function putting a product of rows of `depth` into an output array, product(a, b, out):
    np.dot, about half of np.matmul's 1 us on a few rows; np.matmul for a depth of 1, where np.dot
    multiplies a single pair directly and keeps a -0.0 product's sign (a sum from zero, as BLAS and
    TFLite's accumulators make it, gives +0.0)."""
    return np.matmul if depth == 1 else np.dot


def requantize_into(
    out: np.ndarray, acc: np.ndarray, requantize, zero_point: int, low: int, high: int
) -> None:
    """out = clamp(requantize(acc) + zero_point, low, high): a quantized product's last steps."""
    result = requantize(acc)
    if zero_point:
        result += zero_point
    np.clip(result, low, high, out=result)
    np.copyto(out, result, casting="unsafe")

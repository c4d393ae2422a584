"""What the elementwise kernels' prepare shares: the input/output checks, the broadcast output shape, the
fused activation's bounds, and the zero-divisor check and float64 operands of the dividing ops."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ...core.types import TensorType
from ...errors import KernelError, ensure_type_condition, ensure_types_eq
from ...model.options import ActivationFunctionType
from ..common import broadcast_shape, check_arity, input_tensor, output_tensor
from .binary import EXPANDED_LIMIT

T = TensorType
QUANTIZED = (T.INT8, T.UINT8, T.INT16)
# TFLite's generic broadcast loop handles at most this many dimensions (it aborts beyond).
_MAX_BROADCAST_RANK = 8


def binary_tensors(context, node, op_name: str, same_output_type: bool = True):
    check_arity(node, 2)
    first, second = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_type_condition(first, second.type, "input1->type != input2->type")  # TFLite's words
    if same_output_type:
        ensure_types_eq(first, output, f"{op_name} input/output types")
    return first, second, output


def output_shape(first, second, op_name: str, capped: bool = True) -> tuple[int, ...]:
    """The broadcast shape; TFLite's broadcast loop (used when the shapes differ) stops at 8 dims."""
    shape = broadcast_shape(first.shape, second.shape)
    if capped and first.shape != second.shape and len(shape) > _MAX_BROADCAST_RANK:
        raise KernelError(
            f"{op_name} broadcasts at most {_MAX_BROADCAST_RANK} dimensions, got {len(shape)} "
            f"([{','.join(map(str, first.shape))}] and [{','.join(map(str, second.shape))}])."
        )
    return shape


def fused_activation(node) -> ActivationFunctionType:
    value = getattr(node.builtin_data, "fused_activation_function", None)
    return ActivationFunctionType(value) if value is not None else ActivationFunctionType.NONE


def activation_bounds(activation: ActivationFunctionType, dtype: np.dtype) -> tuple[Any, Any]:
    """TFLite's CalculateActivationRange for an element type as (low, high), or (None, None) when the
    clamp is a no-op. Floats always clamp: no activation means [lowest, max], so +-inf becomes +-max."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return None, None
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    low, high = info.min, info.max
    if activation == ActivationFunctionType.RELU:
        low = 0
    elif activation == ActivationFunctionType.RELU6:
        low, high = 0, 6
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        low, high = -1, 1
    if dtype.kind != "f" and (low, high) == (info.min, info.max):
        return None, None
    # C conversion semantics: -1 as an unsigned type wraps (TFLite's uint32 RELU_N1_TO_1 clamps to 1).
    # 0-d arrays: a ufunc converts a NumPy scalar operand to an array at every call (~0.3 us).
    return np.array(low).astype(dtype), np.array(high).astype(dtype)


def float64_operands(shape: tuple[int, ...]) -> Callable:
    """operands(a, b) -> both inputs converted to float64 arrays of the output's shape (node-owned ones
    when the output is small). Converting by assignment is cheaper than letting a ufunc cast its inputs,
    which takes NumPy's buffered casting loop (over a microsecond more per call)."""
    if math.prod(shape) <= EXPANDED_LIMIT:
        first, second = np.empty(shape, np.float64), np.empty(shape, np.float64)

        def kept(a, b):
            first[...] = a
            second[...] = b
            return first, second

        return kept

    def fresh(a, b):
        wide_a, wide_b = np.empty(shape, np.float64), np.empty(shape, np.float64)
        wide_a[...] = a
        wide_b[...] = b
        return wide_a, wide_b

    return fresh


def zero_check(divisor, message: str, zero: int = 0) -> Callable[[np.ndarray], None]:
    """The invoke-time 'no zero divisor' check (`zero`: the value standing for 0, a quantized divisor's
    zero point); decided once in prepare when the divisor is constant."""
    if divisor.is_constant_or_persistent:
        if np.all(divisor.data != zero):
            return lambda b: None

        def always_fails(b):
            raise KernelError(message)

        return always_fails

    if zero != 0:

        def check_quantized(b):
            if (b == zero).any():
                raise KernelError(message)

        return check_quantized

    def check(b):
        if np.count_nonzero(b) != b.size:
            raise KernelError(message)

    return check

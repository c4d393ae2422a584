"""ADD, SUB, MUL and DIV: float and integer through BinaryOp, quantized through quantized.py. BUILTIN_REF
gets its own ADD and MUL (scalar quantized kernels)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure, ensure_type, ensure_types_eq
from ...model.options import ActivationFunctionType
from ..common import clip
from ..kernel_type import OPTIMIZED, KernelType
from .binary import BinaryOp, binary_init_with_scratch, register_binary
from .common import (
    QUANTIZED,
    T,
    activation_bounds,
    binary_tensors,
    float64_operands,
    fused_activation,
    output_shape,
    zero_check,
)
from .quantized import quantized_arithmetic, quantized_prepare
from .widened import widened_ufunc

_NUMERIC = (T.FLOAT32, T.INT32, T.INT64)


def _arithmetic_prepare(
    op_name: str, ufunc: np.ufunc, types: tuple[TensorType, ...], kernel_type: KernelType = OPTIMIZED
):
    def prepare(context, node):
        first, second, output = binary_tensors(context, node, op_name, same_output_type=op_name != "MUL")
        kind = first.type
        ensure_type(first, types, "input", op_name)
        if quantized_arithmetic(op_name, first, output):
            quantized_prepare(context, node, op_name, first, second, output, kernel_type)
            return
        ensure_types_eq(first, output, f"{op_name} input/output types")
        activation = fused_activation(node)
        if kind == T.COMPLEX64:
            ensure(
                activation == ActivationFunctionType.NONE, "Activation is not allowed for COMPLEX64 input."
            )
        # Float ADD/SUB/MUL have TFLite's fivefold broadcast path besides the generic loop: no rank cap.
        capped = not (kind == T.FLOAT32 and op_name in ("ADD", "SUB", "MUL"))
        shape = output_shape(first, second, op_name, capped)
        low, high = activation_bounds(activation, first.dtype)
        context.resize_tensor(output, shape)
        if op_name == "DIV" and kind == T.INT32:
            return BinaryOp(_int_divide(second, low, high, shape))
        return BinaryOp(widened_ufunc(ufunc, first, second, shape), low, high)

    return prepare


def _int_divide(divisor, low, high, shape: tuple[int, ...]) -> Callable:
    """int32 DIV: C division (truncating), checked for zero divisors, clamped to the activation range.

    The quotient of two int32 values is exact in float64, so trunc(a / b) is C's a / b; the clamp to the
    int32 range (in float64, before the cast) turns INT_MIN / -1 into INT_MAX, as LiteRT's build does.
    """
    info = np.iinfo(np.int32)
    low = np.array(info.min if low is None else low, np.float64)
    high = np.array(info.max if high is None else high, np.float64)
    checked = zero_check(divisor, "data[i] != zero_point was not true.")
    operands = float64_operands(shape)

    def divide(a, b, out):
        checked(b)
        quotient, divisor = operands(a, b)
        np.true_divide(quotient, divisor, out=quotient)
        np.trunc(quotient, out=quotient)
        clip(quotient, low, high, quotient)
        out[...] = quotient

    return divide


_ARITHMETIC = (
    (BuiltinOperator.ADD, np.add, (1, 6), (T.FLOAT32, T.FLOAT16, T.INT32, T.INT64, *QUANTIZED)),
    (BuiltinOperator.SUB, np.subtract, (1, 5), (*_NUMERIC, *QUANTIZED)),
    (
        BuiltinOperator.MUL,
        np.multiply,
        (1, 8),
        (T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32, T.INT64, *QUANTIZED, T.COMPLEX64),
    ),
    (BuiltinOperator.DIV, np.true_divide, (1, 2), (T.FLOAT32, T.INT32, *QUANTIZED)),
)
# BUILTIN_REF's ADD and MUL: TFLite's reference kernels, scalar code without the SIMD blocks' rounding.
_WITH_REFERENCE_TWIN = (BuiltinOperator.ADD, BuiltinOperator.MUL)
for _op, _ufunc, _versions, _types in _ARITHMETIC:
    register_binary(
        _op,
        _versions,
        _types,
        init=binary_init_with_scratch,
        **(
            {"prepare_for": partial(_arithmetic_prepare, _op.name, _ufunc, _types)}
            if _op in _WITH_REFERENCE_TWIN
            else {"prepare": _arithmetic_prepare(_op.name, _ufunc, _types)}
        ),
    )

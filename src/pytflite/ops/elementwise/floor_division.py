"""FLOOR_DIV and FLOOR_MOD, with TFLite's checks for a zero divisor."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import ensure
from .binary import BinaryOp, register_binary
from .common import T, binary_tensors, float64_operands, output_shape, zero_check
from .widened import widened_ufunc

_FLOOR_DIV_TYPES = (T.FLOAT32, T.INT32, T.INT16, T.INT8)
_FLOOR_MOD_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT16, T.INT8)


def _floor_div_prepare(context, node):
    first, second, output = binary_tensors(context, node, "FLOOR_DIV")
    ensure(first.type in _FLOOR_DIV_TYPES, f"Type '{type_name(first.type)}' is not supported by floor_div.")
    context.resize_tensor(output, output_shape(first, second, "FLOOR_DIV"))
    checked = zero_check(second, "Division by 0")  # float zeros too
    if first.type == T.FLOAT32:
        # floor(double(a) / double(b)), rounded back to float32 (overflowing to inf quietly).
        operands = float64_operands(tuple(output.shape))

        def floor_divide(a, b, out):
            checked(b)
            quotient, divisor = operands(a, b)
            np.true_divide(quotient, divisor, out=quotient)
            np.floor(quotient, out=quotient)
            out[...] = quotient

        return BinaryOp(floor_divide)

    if _never_zero(second):  # INT_MIN // -1 wraps, as in TFLite
        return BinaryOp(np.floor_divide, elementwise=True)

    def floor_divide(a, b, out):
        checked(b)
        np.floor_divide(a, b, out=out)

    return BinaryOp(floor_divide, elementwise=True)


def _floor_mod_prepare(context, node):
    first, second, output = binary_tensors(context, node, "FLOOR_MOD")
    ensure(first.type in _FLOOR_MOD_TYPES, f"Type '{type_name(first.type)}' is not supported by floor_mod.")
    context.resize_tensor(output, output_shape(first, second, "FLOOR_MOD"))
    if first.type == T.FLOAT32:  # fmod, then the divisor's sign; x mod 0 is NaN
        return BinaryOp(widened_ufunc(np.remainder, first, second, output.shape))
    if _never_zero(second):
        return BinaryOp(np.remainder, elementwise=True)
    checked = zero_check(second, "Division by 0")

    def floor_mod(a, b, out):
        checked(b)
        np.remainder(a, b, out=out)

    return BinaryOp(floor_mod, elementwise=True)


def _never_zero(divisor) -> bool:
    """A constant divisor without a zero: the plain ufunc computes the op (the binary kernels' Direct and
    one-element forms then apply)."""
    return divisor.is_constant_or_persistent and bool(np.all(divisor.data != 0))


register_binary(BuiltinOperator.FLOOR_DIV, (1, 3), _FLOOR_DIV_TYPES, _floor_div_prepare)
register_binary(BuiltinOperator.FLOOR_MOD, (1, 2), _FLOOR_MOD_TYPES, _floor_mod_prepare)

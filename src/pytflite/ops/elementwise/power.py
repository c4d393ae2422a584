"""POW: std::pow per element, or TFLite's repeated squaring for a single integral exponent."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure
from ...fidelity.arithmetic import HostArithmetic
from ..common import clip
from .binary import BinaryOp, register_binary
from .common import T, binary_tensors, output_shape


def _pow_prepare(context, node):
    first, second, output = binary_tensors(context, node, "POW")
    ensure(first.type in (T.FLOAT32, T.INT32), f"Unsupported data type {type_name(first.type)}.")
    context.resize_tensor(output, output_shape(first, second, "POW"))
    is_int = first.type == T.INT32
    checked = _negative_exponent_check(second) if is_int else None
    arithmetic = context.host.arithmetic
    elementwise = (lambda a, b, out: _int_pow(a, b, out, arithmetic)) if is_int else np.power
    # Shapes differ and the exponent is one value: TFLite multiplies by repeated squaring when it is
    # within 1e-5 of an integer >= 1 (clamping floats to +-FLT_MAX), else calls std::pow per element.
    scalar_exponent = first.shape != second.shape and math.prod(second.shape) == 1
    if scalar_exponent and second.is_constant_or_persistent:
        exponent = _integer_exponent(second.data)
        if exponent is None:
            scalar_exponent = False
        else:
            return BinaryOp(lambda a, b, out: _integer_power(a, exponent, out, is_int))

    def power(a, b, out):
        if checked is not None:
            checked(b)
        if scalar_exponent:
            exponent = _integer_exponent(b)
            if exponent is not None:
                _integer_power(a, exponent, out, is_int)
                return
        elementwise(a, b, out=out)

    return BinaryOp(power)


def _integer_exponent(exponent: np.ndarray) -> int | None:
    """The integer TFLite's broadcast POW raises to by repeated multiplication, or None for std::pow."""
    value = exponent.reshape(-1)[0]
    if not np.isfinite(value):
        return None
    rounded = math.floor(abs(float(value)) + 0.5) * (1 if value >= 0 else -1)  # std::round
    if not 1 <= rounded < 2**31:  # below 1, or past int (where the cast gives INT_MIN)
        return None
    floating = np.issubdtype(exponent.dtype, np.floating)
    if floating and not abs(np.float32(value) - np.float32(rounded)) < np.float32(1e-5):
        return None
    return rounded


def _integer_power(base: np.ndarray, exponent: int, out: np.ndarray, is_int: bool) -> None:
    """base ** exponent by TFLite's repeated squaring, each float product clamped to +-FLT_MAX."""
    view = out.reshape(base.shape)  # the exponent has one element: same element count
    if np.may_share_memory(base, view):
        base = base.copy()
    current = base
    bits = bin(exponent)[3:]  # after the leading 1: square, then multiply by the base on a 1
    if not bits:
        np.copyto(view, base)
    for bit in bits:
        np.multiply(current, current, out=view)
        current = view
        if not is_int:
            clip(view, _FLOAT_LOWEST, _FLOAT_MAX, out=view)
        if bit == "1":
            np.multiply(base, view, out=view)
            if not is_int:
                clip(view, _FLOAT_LOWEST, _FLOAT_MAX, out=view)


_FLOAT_MAX = np.array(np.finfo(np.float32).max)
_FLOAT_LOWEST = -_FLOAT_MAX


def _negative_exponent_check(exponent) -> Callable[[np.ndarray], None]:
    message = "POW does not support negative value for int32."
    if exponent.is_constant_or_persistent and not (exponent.data < 0).any():
        return lambda b: None

    def check(b):
        if (b < 0).any():
            raise KernelError(message)

    return check


def _int_pow(a, b, out, arithmetic: HostArithmetic):
    """std::pow on ints: computed in double, converted back as the host converts (out-of-range results:
    INT_MIN on x86, saturated on ARM; fidelity/arithmetic.py)."""
    result = np.power(a, b, out=np.empty(out.shape, np.float64), dtype=np.float64)
    np.copyto(out, arithmetic.float_to_int32(result), casting="unsafe")


register_binary(BuiltinOperator.POW, (1, 1), (T.FLOAT32, T.INT32), _pow_prepare)

"""The quantized ops' parameters (TFLite's ArithmeticParams: offsets, multipliers, shifts, clamp) and the
checks of their scales and zero points."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.types import type_name
from ...errors import KernelError, ensure, ensure_eq
from ..quant.fixed_point import activation_range, quantize_multiplier, round_half_away
from .common import T, fused_activation

TYPE_RANGE = {T.INT8: (-128, 127), T.UINT8: (0, 255), T.INT16: (-32768, 32767)}


@dataclass(frozen=True)
class Rescale:
    """One input's (or the output's) part of TFLite's ArithmeticParams."""

    offset: int
    multiplier: int
    shift: int


@dataclass(frozen=True)
class QuantParams:
    first: Rescale
    second: Rescale
    output: Rescale
    left_shift: int
    low: int  # the activation clamp
    high: int


def _scale(tensor) -> float:
    return float(np.float32(tensor.params.scale))


def check_scales(op_name: str, *tensors) -> None:
    for tensor in tensors:
        scale = tensor.params.scale
        ensure(
            scale > 0 and math.isfinite(scale),
            f"{op_name} of quantized {type_name(tensor.type)} tensors needs a positive scale, got {scale}.",
        )


def check_zero_points(op_name: str, tensor_type, *tensors) -> None:
    low, high = TYPE_RANGE[tensor_type]
    if tensor_type == T.INT16:
        for tensor in tensors:
            ensure_eq(tensor.params.zero_point, 0, f"{op_name} int16 zero point")
        return
    for tensor in tensors:
        zero_point = tensor.params.zero_point
        ensure(
            low <= zero_point <= high,
            f"{op_name} zero point {zero_point} is outside the {type_name(tensor_type)} range.",
        )


def _smaller_than_one(real: float, what: str) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp, which aborts the process outside (0, 1) in TFLite."""
    ensure(0.0 < real < 1.0, f"{what} {real} is outside (0, 1): TFLite cannot requantize this.")
    return quantize_multiplier(real)


def _activation_limits(node, output, op_name: str) -> tuple[int, int]:
    low, high = TYPE_RANGE[output.type]
    try:
        return activation_range(
            fused_activation(node), output.params.scale, output.params.zero_point, low, high
        )
    except OverflowError:
        raise KernelError("no_integer_overflow_from_quantization was not true.") from None


def add_sub_params(node, first, second, output, op_name: str) -> QuantParams:
    """PrepareGeneralSubOp / add.cc's general path: both inputs onto twice the larger input scale after a
    left shift of 20 (8-bit) or 15 (int16), then the output multiplier."""
    left_shift = 15 if output.type == T.INT16 else 20
    s1, s2, so = _scale(first), _scale(second), _scale(output)
    twice = 2 * max(s1, s2)
    real_output = twice / float(np.float32(1 << left_shift) * np.float32(so))
    m1, h1 = _smaller_than_one(s1 / twice, f"{op_name} input1 multiplier")
    m2, h2 = _smaller_than_one(s2 / twice, f"{op_name} input2 multiplier")
    if op_name == "SUB" and real_output > 1:  # then applied as if smaller than one: see _divide_by_pot_x86
        mo, ho = quantize_multiplier(real_output)
    else:
        mo, ho = _smaller_than_one(real_output, f"{op_name} output multiplier")
    low, high = _activation_limits(node, output, op_name)
    return QuantParams(
        Rescale(-first.params.zero_point, m1, h1),
        Rescale(-second.params.zero_point, m2, h2),
        Rescale(output.params.zero_point, mo, ho),
        left_shift,
        low,
        high,
    )


def product_params(node, first, second, output, real: float, op_name: str) -> QuantParams:
    """MUL and DIV: one multiplier, (input1 scale * input2 scale) / output scale or its DIV form."""
    multiplier, shift = quantize_multiplier(real)
    low, high = _activation_limits(node, output, op_name)
    return QuantParams(
        Rescale(-first.params.zero_point, 0, 0),
        Rescale(-second.params.zero_point, 0, 0),
        Rescale(output.params.zero_point, multiplier, shift),
        0,
        low,
        high,
    )


def pot_int16(node, first, second, output) -> bool:
    """int16 ADD/SUB take the power-of-two path when the pot_scale_int16 option is set and every scale
    is a power of two."""
    if not getattr(node.builtin_data, "pot_scale_int16", False):
        return False
    return all(_checked_log2(tensor.params.scale) is not None for tensor in (first, second, output))


def _checked_log2(scale: float) -> int | None:
    """CheckedLog2: the rounded log2 when the scale is within 1e-3 (in log2) of a power of two."""
    with np.errstate(all="ignore"):
        log2 = np.float32(np.log(np.float32(scale))) * np.float32(1.0 / np.log(np.float32(2.0)))
    if not np.isfinite(log2):
        return None
    rounded = np.float32(round_half_away(float(log2)))
    return int(rounded) if abs(log2 - rounded) < np.float32(1e-3) else None


def pot_params(node, first, second, output, op_name: str) -> tuple[int, int, int, int]:
    out_log2 = _checked_log2(output.params.scale)
    first_shift = _checked_log2(first.params.scale) - out_log2
    second_shift = _checked_log2(second.params.scale) - out_log2
    ensure(
        first_shift == 0 or second_shift == 0,
        "data->input1_shift == 0 || data->input2_shift == 0 was not true.",
    )
    ensure(first_shift <= 0, "data->input1_shift <= 0 was not true.")
    ensure(second_shift <= 0, "data->input2_shift <= 0 was not true.")
    low, high = _activation_limits(node, output, op_name)
    return first_shift, second_shift, low, high


def squared_difference_params(first, second, output) -> QuantParams:
    """squared_difference.cc: inputs onto twice the larger scale after a left shift of 7, the output
    multiplier on the squared difference; no fused activation."""
    left_shift = 7
    s1, s2, so = _scale(first), _scale(second), _scale(output)
    twice = 2 * max(s1, s2)
    real_output = (twice * twice) / float(np.float32(1 << (2 * left_shift)) * np.float32(so))
    m1, h1 = _smaller_than_one(s1 / twice, "SQUARED_DIFFERENCE input1 multiplier")
    m2, h2 = _smaller_than_one(s2 / twice, "SQUARED_DIFFERENCE input2 multiplier")
    mo, ho = _smaller_than_one(real_output, "SQUARED_DIFFERENCE output multiplier")
    return QuantParams(
        Rescale(-first.params.zero_point, m1, h1),
        Rescale(-second.params.zero_point, m2, h2),
        Rescale(output.params.zero_point, mo, ho),
        left_shift,
        -128,
        127,
    )

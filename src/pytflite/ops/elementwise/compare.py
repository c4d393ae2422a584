"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER and GREATER_EQUAL; quantized inputs compared after
TFLite's fixed-point rescaling."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure, ensure_type
from ..quant.fixed_point import quantize_multiplier
from .binary import BinaryOp, register_binary
from .common import T, binary_tensors, output_shape
from .requantize import mbqm_smaller_than_one
from .widened import widened_ufunc

_ORDER_TYPES = (T.FLOAT32, T.FLOAT16, T.INT16, T.INT32, T.INT64, T.UINT8, T.INT8)
_EQUALITY_TYPES = (T.BOOL, *_ORDER_TYPES, T.STRING)


def _comparison_prepare(op_name: str, ufunc: np.ufunc, types: tuple[TensorType, ...]):
    equality = op_name in ("EQUAL", "NOT_EQUAL")

    def prepare(context, node):
        first, second, output = binary_tensors(context, node, op_name, same_output_type=False)
        ensure_type(first, types, "input", op_name)
        ensure(output.type == T.BOOL, f"{op_name} output type must be BOOL, got {type_name(output.type)}.")
        context.resize_tensor(output, output_shape(first, second, op_name))
        # TFLite rescales int8/uint8 always, int16 only for (NOT_)EQUAL with a quantized first input.
        rescaled = first.type in (T.INT8, T.UINT8) or (
            first.type == T.INT16 and equality and first.quantization is not None
        )
        compute = _rescaled(op_name, ufunc, first, second) if rescaled else ufunc
        if isinstance(compute, np.ufunc):
            compute = widened_ufunc(compute, first, second, output.shape)
        return BinaryOp(compute, elementwise=True)

    return prepare


def _rescaled(op_name: str, ufunc: np.ufunc, first, second) -> Callable:
    """Compare int8/uint8/int16 values as TFLite does: each input mapped to ((q - zero_point) << 8) times
    its scale in fixed point, the two results compared as int32. The map depends on the raw value only,
    so prepare tabulates it over the type's whole range and invoke looks the values up."""
    first_table = _rescale_table(first, op_name)
    second_table = _rescale_table(second, op_name)
    if np.array_equal(first_table, second_table) and np.all(np.diff(first_table) > 0):
        return ufunc  # same strictly increasing map on both sides: comparing raw values is the same
    unsigned = np.dtype(f"u{first.dtype.itemsize}")

    def compare(a, b, out):
        ufunc(first_table[a.view(unsigned)], second_table[b.view(unsigned)], out=out)

    return compare


def _rescale_table(tensor, op_name: str) -> np.ndarray:
    """The rescaled int32 value of every raw value, indexed by the raw bits read as unsigned. A scale above
    1 gets a left-shifting multiplier that TFLite still applies as a right shift (see _divide_by_pot_x86);
    a scale of exactly 1 fails a CHECK in TFLite (QuantizeMultiplierGreaterThanOne), 0 has no multiplier."""
    scale, zero_point = float(tensor.params.scale), int(tensor.params.zero_point)
    if not (0.0 < scale < math.inf and scale != 1.0):
        raise KernelError(
            f"{op_name} on {type_name(tensor.type)} needs quantized inputs with a positive scale other "
            f"than 1, got scale {scale}."
        )
    multiplier, shift = quantize_multiplier(scale)
    bits = tensor.dtype.itemsize * 8
    raw = np.arange(2**bits, dtype=np.int64)
    if tensor.dtype.kind == "i":
        raw = np.where(raw >= 2 ** (bits - 1), raw - 2**bits, raw)
    return mbqm_smaller_than_one((raw - zero_point) * 256, multiplier, shift).astype(np.int32)


for _op, _ufunc, _versions, _types in (
    (BuiltinOperator.EQUAL, np.equal, (1, 5), _EQUALITY_TYPES),
    (BuiltinOperator.NOT_EQUAL, np.not_equal, (1, 4), _EQUALITY_TYPES),
    (BuiltinOperator.LESS, np.less, (1, 3), _ORDER_TYPES),
    (BuiltinOperator.LESS_EQUAL, np.less_equal, (1, 2), _ORDER_TYPES),
    (BuiltinOperator.GREATER, np.greater, (1, 2), _ORDER_TYPES),
    (BuiltinOperator.GREATER_EQUAL, np.greater_equal, (1, 3), _ORDER_TYPES),
):
    register_binary(_op, _versions, _types, _comparison_prepare(_op.name, _ufunc, _types))

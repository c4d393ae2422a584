"""SQUARED_DIFFERENCE: float and int32 through BinaryOp, int8 through quantized.py."""

from __future__ import annotations

from functools import partial

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure_type
from .binary import BinaryOp, binary_init_with_scratch, register_binary
from .common import T, binary_tensors, output_shape
from .quantized import quantized_arithmetic, quantized_prepare


def _squared_difference_prepare(context, node):
    first, second, output = binary_tensors(context, node, "SQUARED_DIFFERENCE")
    ensure_type(first, _SQUARED_DIFFERENCE_TYPES, "input", "SQUARED_DIFFERENCE")
    if quantized_arithmetic("SQUARED_DIFFERENCE", first, output):
        quantized_prepare(context, node, "SQUARED_DIFFERENCE", first, second, output, True)
        return
    context.resize_tensor(output, output_shape(first, second, "SQUARED_DIFFERENCE"))
    return BinaryOp(_squared_difference, elementwise=True, calls=_squared_difference_calls)


def _squared_difference_calls(a, b, out) -> tuple:
    return (partial(np.subtract, a, b, out), partial(np.multiply, out, out, out))


def _squared_difference(a, b, out):
    for call in _squared_difference_calls(a, b, out):
        call()


_SQUARED_DIFFERENCE_TYPES = (T.FLOAT32, T.INT32, T.INT8)


register_binary(
    BuiltinOperator.SQUARED_DIFFERENCE,
    (1, 2),
    _SQUARED_DIFFERENCE_TYPES,
    _squared_difference_prepare,
    init=binary_init_with_scratch,
)

"""BITWISE_XOR and RIGHT_SHIFT on 8-, 16- and 32-bit integers."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import ensure
from ..common import clip
from .binary import BinaryOp, register_binary
from .common import T, binary_tensors, output_shape
from .widened import widened_ufunc

_BITWISE = (T.UINT8, T.INT8, T.UINT16, T.INT16, T.UINT32, T.INT32)


def _bitwise_xor_prepare(context, node):
    first, second, output = binary_tensors(context, node, "BITWISE_XOR")
    ensure(
        first.type in _BITWISE,
        "BitwiseXor currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, "
        f"got {type_name(first.type)}",
    )
    context.resize_tensor(output, output_shape(first, second, "BITWISE_XOR"))
    return BinaryOp(widened_ufunc(np.bitwise_xor, first, second, output.shape))


def _right_shift_prepare(context, node):
    first, second, output = binary_tensors(context, node, "RIGHT_SHIFT")
    ensure(
        first.type in _BITWISE,
        "RightShift currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, "
        f"got {type_name(first.type)}",
    )
    context.resize_tensor(output, output_shape(first, second, "RIGHT_SHIFT"))
    # Shift counts are clamped to [0, bits - 1]; signed values shift arithmetically.
    dtype = first.dtype
    low, high = dtype.type(0), dtype.type(dtype.itemsize * 8 - 1)
    if second.is_constant_or_persistent:
        counts = np.clip(second.data, low, high)

        def shift(a, b, out):
            np.right_shift(a, counts, out=out)

    else:

        def shift(a, b, out):
            np.right_shift(a, clip(b, low, high), out=out)

    return BinaryOp(shift)


register_binary(BuiltinOperator.BITWISE_XOR, (1, 1), _BITWISE, _bitwise_xor_prepare)
register_binary(BuiltinOperator.RIGHT_SHIFT, (1, 1), _BITWISE, _right_shift_prepare)

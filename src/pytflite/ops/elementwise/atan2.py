"""ATAN2, which pairs its inputs' elements in memory order when their shapes differ."""

from __future__ import annotations

import math

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from .binary import BinaryOp, register_binary
from .common import T


def _atan2_prepare(context, node):
    check_arity(node, 2)
    y, x = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(
        len(y.shape) == len(x.shape),
        f"tflite::NumDimensions(a) != tflite::NumDimensions(b) ({len(y.shape)} != {len(x.shape)})",
    )
    ensure_types_eq(y, x, "ATAN2 input types")
    ensure_types_eq(y, output, "ATAN2 input/output types")
    ensure_type(y, (T.FLOAT32, T.FLOAT64, T.FLOAT16), "input", "ATAN2")
    context.resize_tensor(output, y.shape)
    if x.shape == y.shape:
        return BinaryOp(np.arctan2)
    # TFLite checks only the ranks and pairs the elements in memory order, over y's element count.
    count = math.prod(y.shape)
    ensure(
        math.prod(x.shape) >= count,
        f"ATAN2 input x {list(x.shape)} has fewer elements than input y {list(y.shape)}.",
    )
    shape = y.shape

    def atan2(a, b, out):
        np.arctan2(a, b.reshape(-1)[:count].reshape(shape), out=out)

    return BinaryOp(atan2)


register_binary(BuiltinOperator.ATAN2, (1, 1), (T.FLOAT32, T.FLOAT64, T.FLOAT16), _atan2_prepare)

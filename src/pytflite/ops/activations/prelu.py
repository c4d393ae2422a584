"""PRELU: x where x >= 0, else alpha * x, alpha a broadcast input (float32; 8-bit as a table over
(alpha, input) pairs, int16 one table per distinct constant alpha)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure, ensure_type, ensure_types_eq
from ..common import broadcast_shape, check_arity, clip, input_tensor, output_tensor
from ..quant.fixed_point import multiply_by_quantized_multiplier, wrap
from ..quant.lut import every_value
from ..registry import register_builtin
from .alpha import AlphaData, alpha_compute, alpha_invoke, select_at_or_above
from .common import ALL, DTYPES, I8, I16, U8
from .quantized import checked_multiplier, per_tensor_quantization

# Up to this many elements, a constant PRELU alpha is expanded to the input's shape in prepare: a
# same-shape multiply runs several times faster than one broadcasting a few channels.
_EXPANDED_LIMIT = 65536


def prelu_prepare(context, node):
    check_arity(node, 2)
    source, alpha = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_type(source, tuple(_PRELU_ALPHA_TYPES), "input", "PRELU")
    ensure_type(alpha, (_PRELU_ALPHA_TYPES[source.type],), "alpha", "PRELU")
    ensure_types_eq(source, output, "PRELU input/output types")
    shape = broadcast_shape(source.shape, alpha.shape)
    ensure(
        shape == tuple(source.shape),
        f"PRELU alpha of shape {list(alpha.shape)} does not broadcast to the input shape "
        f"{list(source.shape)}",
    )
    context.resize_tensor(output, shape)
    if source.type != TensorType.FLOAT32:
        node.user_data = _prelu_quantized(source, alpha, output, shape)
        return
    known = alpha.data if alpha.is_constant_or_persistent else None
    expanded = None
    if known is not None and math.prod(shape) <= _EXPANDED_LIMIT:
        expanded = np.broadcast_to(known, shape).copy()
    node.user_data = AlphaData(expanded, alpha_compute(known, select_at_or_above))


# PRELU: x >= 0 rescaled by in_scale / out_scale, x < 0 multiplied by alpha and rescaled by
# in_scale * alpha_scale / out_scale (TFLite's reference kernel, which its optimized one calls).
_PRELU_ALPHA_TYPES = {TensorType.FLOAT32: TensorType.FLOAT32, U8: U8, I8: I8, I16: I8}


def _prelu_arithmetic(source, alpha, output) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """f(x, a): the quantized PRELU of int64 input and alpha values (broadcasting)."""
    in_scale, in_zero = per_tensor_quantization(source, "input", "PRELU")
    alpha_scale, alpha_zero = per_tensor_quantization(alpha, "alpha", "PRELU")
    out_scale, out_zero = per_tensor_quantization(output, "output", "PRELU")
    identity_multiplier, identity_shift = checked_multiplier(in_scale / out_scale, "PRELU")
    alpha_multiplier, alpha_shift = checked_multiplier(in_scale * alpha_scale / out_scale, "PRELU")
    info = np.iinfo(DTYPES[source.type])

    def prelu(x: np.ndarray, a: np.ndarray) -> np.ndarray:
        values = x - in_zero
        positive = multiply_by_quantized_multiplier(values, identity_multiplier, identity_shift)
        product = wrap(values * (a - alpha_zero), 32)
        negative = multiply_by_quantized_multiplier(product, alpha_multiplier, alpha_shift)
        result = wrap(np.where(values >= 0, positive, negative) + out_zero, 32)
        return clip(result, info.min, info.max)

    return prelu


def _prelu_bytes(table: np.ndarray) -> Callable:
    """compute(x, alpha_index, out) for 8-bit PRELU: a table over (alpha, x) pairs, indexed by
    alpha_bits << 8 | x_bits; alpha_index holds alpha_bits << 8 (int32), or is the raw alpha."""

    def compute(x, alpha_index, out):
        if alpha_index.dtype != np.int32:  # alpha known only now
            alpha_index = alpha_index.view(np.uint8).astype(np.int32) << 8
        np.take(table, np.bitwise_or(alpha_index, x.view(np.uint8)), out=out, mode="clip")

    return compute


# An int16 PRELU with a constant alpha of at most this many distinct values gets one table per value.
_PRELU_INT16_TABLES = 16


def _prelu_quantized(source, alpha, output, shape) -> AlphaData:
    arithmetic = _prelu_arithmetic(source, alpha, output)
    dtype = DTYPES[source.type]
    values = every_value(dtype)
    if source.type == I16:
        distinct, slots = (
            np.unique(alpha.data, return_inverse=True) if alpha.is_constant_or_persistent else (None, None)
        )
        if distinct is None or distinct.size > _PRELU_INT16_TABLES:

            def compute(x, a, out):
                np.copyto(out, arithmetic(x.astype(np.int64), a.astype(np.int64)), casting="unsafe")

            return AlphaData(None, compute)
        # table[slot << 16 | x_bits], slot: the alpha value's index among the distinct ones
        tables = arithmetic(values[None, :], distinct.astype(np.int64)[:, None])
        table = np.roll(tables, int(np.iinfo(dtype).min), axis=1).reshape(-1).astype(dtype)
        slot_index = np.broadcast_to(slots.reshape(alpha.shape).astype(np.int32) << 16, shape).copy()

        def lookup(x, index, out):
            np.take(table, np.bitwise_or(index, x.view(np.uint16)), out=out, mode="clip")

        return AlphaData(slot_index, lookup)
    by_alpha_then_x = arithmetic(values[None, :], values[:, None])  # [alpha, x], each by value - min
    shift = int(np.iinfo(dtype).min)
    table = np.roll(by_alpha_then_x, (shift, shift), axis=(0, 1)).reshape(-1).astype(dtype)
    alpha_index = None
    if alpha.is_constant_or_persistent:
        alpha_index = np.broadcast_to(alpha.data.view(np.uint8).astype(np.int32) << 8, shape).copy()
    return AlphaData(alpha_index, _prelu_bytes(table))


register_builtin(
    BuiltinOperator.PRELU, (1, 1), types=ALL, op_data=AlphaData, prepare=prelu_prepare, invoke=alpha_invoke
)

"""LOCAL_RESPONSE_NORMALIZATION (float32): TFLite's running float32 window sum along the channels,
reproduced rounding for rounding."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import KernelError, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, check_scratch, input_tensor, output_tensor
from ..registry import register_builtin
from .common import FLOAT, f32


@dataclass(frozen=True)
class LocalResponseNormData:
    """The scalars, and the scratch arrays made in prepare for the input's shape."""

    bias: np.ndarray  # 0-d float32
    alpha: np.ndarray  # 0-d float32
    beta: float
    exponent: np.ndarray  # 0-d float32: -beta
    terms: np.ndarray  # flat: alpha * x^2, its negation, +0, -0
    squares: np.ndarray  # input-shaped views of the first two parts of `terms`
    negated: np.ndarray
    order: np.ndarray  # [pixels, 2 * (radius + depth)]: the position in `terms` of each running-sum operand
    sums: np.ndarray  # [pixels, 2 * (radius + depth)]: the running sums
    reads: np.ndarray  # the input-shaped view of the sums read at each channel
    scale: np.ndarray  # input-shaped


def _running_sum_order(radius: int, depth: int, pixels: int) -> np.ndarray:
    """TFLite keeps a running float32 window sum over alpha*x^2 padded with `radius` zeros each side: it
    adds the 2*radius first padded squares, then per channel adds the square entering the window, reads
    the sum, and subtracts the square leaving it (the same rounding as adding its negation). This lists
    that sequence of operands, per pixel, as positions in `terms`; one sequential accumulation over them
    reproduces every rounding."""
    size = pixels * depth
    plus_zero, minus_zero = 2 * size, 2 * size + 1
    channel = np.arange(-radius, depth + radius)  # of each padded position
    padded = np.where((channel >= 0) & (channel < depth), channel, plus_zero)
    leaving = np.where(channel[:depth] >= 0, size + channel[:depth], minus_zero)
    row = np.concatenate([padded[: 2 * radius], np.stack([padded[2 * radius :], leaving], 1).reshape(-1)])
    return np.where(row < plus_zero, row + np.arange(pixels)[:, None] * depth, row)


def local_response_norm_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_eq(len(source.shape), 4, "NumDimensions(input)")
    ensure_type(source, FLOAT, "input", "LOCAL_RESPONSE_NORMALIZATION")
    ensure_types_eq(source, output, "LOCAL_RESPONSE_NORMALIZATION input/output types")
    options = node.builtin_data
    if options.radius < 0:  # TFLite corrupts its heap on this
        raise KernelError(f"LOCAL_RESPONSE_NORMALIZATION radius {options.radius} is negative")
    shape = tuple(source.shape)
    pixels, depth = math.prod(shape[:-1]), shape[-1]
    # a window wider than the channels adds only more leading zeros: the same sums, far less memory
    size, radius = pixels * depth, min(int(options.radius), depth)
    check_scratch(
        context, "LOCAL_RESPONSE_NORMALIZATION running sums", (pixels, 2 * (radius + depth)), np.int64
    )
    order = _running_sum_order(radius, depth, pixels)
    sums = np.empty(order.shape, np.float32)
    terms = np.zeros(2 * size + 2, np.float32)
    terms[-1] = -0.0
    beta = float(np.float32(options.beta))
    node.user_data = LocalResponseNormData(
        f32(options.bias),
        f32(options.alpha),
        beta,
        f32(-beta),
        terms,
        terms[:size].reshape(shape),
        terms[size : 2 * size].reshape(shape),
        order,
        sums,
        sums[:, 2 * radius :: 2].reshape(shape),
        np.empty(shape, np.float32),
    )
    context.resize_tensor(output, source.shape)


def local_response_norm_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if out.size == 0:
        return
    data = node.user_data
    squares, sums, scale = data.squares, data.sums, data.scale
    np.multiply(x, x, out=squares)
    squares *= data.alpha
    np.negative(squares, out=data.negated)
    data.terms.take(data.order, out=sums)
    np.add.accumulate(sums, axis=-1, out=sums)
    np.add(data.reads, data.bias, out=scale)
    if data.beta == 1:
        np.reciprocal(scale, out=scale)
    elif data.beta == 0.5:
        np.sqrt(scale, out=scale)
        np.reciprocal(scale, out=scale)
    else:
        np.power(scale, data.exponent, out=scale)
    np.multiply(x, scale, out=out)


register_builtin(
    BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION,
    (1, 1),
    types=FLOAT,
    op_data=LocalResponseNormData,
    prepare=local_response_norm_prepare,
    invoke=local_response_norm_invoke,
)

"""Activation functions and normalizations (float32).

RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, TANH, LOGISTIC, HARD_SWISH, ELU, LEAKY_RELU, PRELU, GELU, SOFTMAX,
LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION.

Every kernel is a short chain of ufuncs writing into the output (or into a few scratch arrays when the
chain needs them), with constants held as 0-d float32 arrays (the cheapest scalar operand for a ufunc).
Long chains run block by block (_blockwise) so their scratch arrays stay in the CPU cache. Overflow and
invalid operations give inf/NaN as in TFLite: the interpreter runs kernels with NumPy's floating-point
warnings off (a per-call np.errstate would cost about 1 us).
The arithmetic follows TFLite's float kernels wherever their result can differ from the exact function
by more than float32 rounding:
- GELU(approximate) is 0.5*x*(1 + tanh(...)), which cancels for negative x; its tanh is Eigen's clamped
  [9/8] rational approximation, evaluated in the same float32 operation order (bit-exact with LiteRT).
- HARD_SWISH rounds as TFLite's x86 build does: blocks of 4 through its NEON-on-SSE loop, the last
  size % 4 elements through its scalar loop (bit-exact, overflow near FLT_MAX included).
- LOCAL_RESPONSE_NORMALIZATION sums its window with a running float32 add/subtract along the channels,
  which a large value followed by small ones leaves inexact; the same sequence of roundings is reproduced
  by one sequential accumulation over the interleaved additions and subtractions.
- L2_NORMALIZATION adds the squares sequentially in float32 (np.add.accumulate here; a pairwise sum
  drifts from it on long rows) and divides by max(sqrt(sum), 1e-6).
GELU(exact) needs erfc, which NumPy lacks: it is computed as relu(x) - |x| Q(|x|), Q the normal upper
tail, with Q(a) = exp(-a^2/2) sum_k c_k t^(k+1), t = 1/(1 + 0.35 a). The c_k were fitted for this module
(iteratively reweighted least squares on the relative error of erfc(a/sqrt 2) exp(a^2/2)/2, a in [0, 16],
against Python's math.erfc): within 3.3e-8 relative. It agrees with LiteRT's Eigen erfc to ~2e-6 relative
down to results of 1e-10, ~1e-5 in the far tail where both round near the denormals.
Quantized (uint8/int8/int16) variants are not implemented yet: prepare rejects them, as it rejects the
integer types TFLite's float kernels do not take.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import (
    broadcast_shape,
    check_arity,
    clip,
    input_tensor,
    is_constant,
    output_tensor,
    reject_quantized,
)
from .registry import register_builtin

_FLOAT = (TensorType.FLOAT32,)


def _f32(value: float) -> np.ndarray:
    return np.array(value, np.float32)


_ZERO, _ONE, _MINUS_ONE, _THREE, _SIX = _f32(0), _f32(1), _f32(-1), _f32(3), _f32(6)
_INF, _MINUS_INF = _f32(np.inf), _f32(-np.inf)

# Long ufunc chains run block by block over the flattened tensor, so that their intermediates stay in
# the CPU cache instead of streaming whole-tensor temporaries through memory.
_BLOCK = 32768


def _blockwise(compute: Callable, block: int = _BLOCK) -> Callable:
    """`compute(x, out)` applied to consecutive blocks of `block` elements (a multiple of 4)."""

    def run(x, out):
        size = out.size
        if size <= block or not out.flags.c_contiguous:
            compute(x, out)
            return
        flat, flat_out = x.reshape(-1), out.reshape(-1)
        for start in range(0, size, block):
            compute(flat[start : start + block], flat_out[start : start + block])

    return run


def _check_float(tensor, what: str, op_name: str) -> None:
    """float32 only; a quantized tensor gets its own message (those kernels are not written yet)."""
    reject_quantized(tensor, op_name)
    ensure_type(tensor, _FLOAT, what, op_name)


def _same_shape_prepare(op_name: str) -> Callable:
    """Prepare of a one-input float32 op whose output has the input's type and shape."""

    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        _check_float(source, "input", op_name)
        ensure_types_eq(source, output, f"{op_name} input/output types")
        context.resize_tensor(output, source.shape)

    return prepare


def _unary_kernel(op: BuiltinOperator, versions: tuple[int, int], compute: Callable) -> None:
    """Register a one-input float32 op whose output is `compute(x, out)`."""

    def invoke(context, node):
        tensors = context.tensors
        compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)

    register_builtin(op, versions, types=_FLOAT, prepare=_same_shape_prepare(op.name), invoke=invoke)


# ---- ReLU family, HARD_SWISH, ELU, TANH, LOGISTIC ------------------------------------------------------
# TFLite clamps with comparisons that let NaN through; so does clip.


def _relu(x, out):
    clip(x, _ZERO, _INF, out=out)


def _relu6(x, out):
    clip(x, _ZERO, _SIX, out=out)


def _relu_n1_to_1(x, out):
    clip(x, _MINUS_ONE, _ONE, out=out)


def _relu_0_to_1(x, out):
    clip(x, _ZERO, _ONE, out=out)


_ONE_SIXTH = _f32(1.0 / 6.0)


def _hard_swish_block(x, out):
    # x * min(6, max(0, x + 3)) / 6. TFLite's x86 build runs the kernel's NEON loop (through SSE) on
    # blocks of 4, computing (x * (1/6)) * clamp, and its scalar loop on the last size % 4 elements,
    # computing (x * clamp) * (1/6): the two round differently and overflow differently near the top of
    # the float range, so both are reproduced.
    np.add(x, _THREE, out=out)
    clip(out, _ZERO, _SIX, out=out)
    size = out.size
    tail = size % 4
    if tail:
        tail_values = x.flat[size - tail :] * out.flat[size - tail :]
        tail_values *= _ONE_SIXTH
    out *= np.multiply(x, _ONE_SIXTH)
    if tail:
        out.flat[size - tail :] = tail_values


_hard_swish = _blockwise(_hard_swish_block)


def _elu(x, out):
    # x for x >= 0, expm1(x) below: expm1(min(x, 0)) is 0 where x >= 0 and exceeds x where x < 0
    clip(x, _MINUS_INF, _ZERO, out=out)
    np.expm1(out, out=out)
    np.maximum(out, x, out=out)


def _tanh(x, out):
    np.tanh(x, out=out)


# Above this exp(x)/(1 + exp(x)) rounds to 1 (TFLite clamps its exp argument at the same point).
_LOGISTIC_HIGHEST = _f32(16.6355324)


def _logistic_block(x, out):
    # e / (1 + e) with e = exp(x): accurate for negative x down to the denormals, 1 above the clamp
    clip(x, _MINUS_INF, _LOGISTIC_HIGHEST, out=out)
    np.exp(out, out=out)
    np.divide(out, out + _ONE, out=out)


_logistic = _blockwise(_logistic_block)


# ---- LEAKY_RELU, PRELU -------------------------------------------------------------------------------
# x where x > 0 (LEAKY_RELU) / x >= 0 (PRELU), else alpha * x. With 0 < alpha <= 1 that is
# max(x, alpha*x), with alpha >= 1 min(x, alpha*x); with any finite alpha max(x, 0) + alpha*min(x, 0)
# (exact: one of the two terms is 0). Only a NaN or infinite alpha needs an elementwise select.


def _scaled_pick(pick: np.ufunc) -> Callable:
    def compute(x, alpha, out):
        np.multiply(x, alpha, out=out)
        pick(out, x, out=out)

    return compute


def _split_scale(x, alpha, out):
    clip(x, _MINUS_INF, _ZERO, out=out)
    out *= alpha
    out += clip(x, _ZERO, _INF)


def _select_above(x, alpha, out):
    np.multiply(x, alpha, out=out)
    np.copyto(out, x, where=x > _ZERO)


def _select_at_or_above(x, alpha, out):
    np.multiply(x, alpha, out=out)
    np.copyto(out, x, where=x >= _ZERO)


def _alpha_compute(alpha: np.ndarray | None, select: Callable) -> Callable:
    """The cheapest exact computation for these alpha values (None: not known before invoke)."""
    if alpha is None or alpha.size == 0 or not np.isfinite(alpha).all():
        return select
    if ((alpha > 0) & (alpha <= 1)).all():
        return _scaled_pick(np.maximum)
    if (alpha >= 1).all():
        return _scaled_pick(np.minimum)
    return _split_scale


@dataclass(frozen=True)
class AlphaData:
    alpha: np.ndarray | None  # the alpha operand, when known in prepare; None: PRELU's input 1 at invoke
    compute: Callable[[np.ndarray, np.ndarray, np.ndarray], None]


# Up to this many elements, a constant PRELU alpha is expanded to the input's shape in prepare: a
# same-shape multiply runs several times faster than one broadcasting a few channels.
_EXPANDED_LIMIT = 65536


def leaky_relu_prepare(context, node):
    _same_shape_prepare("LEAKY_RELU")(context, node)
    alpha = _f32(node.builtin_data.alpha)
    node.user_data = AlphaData(alpha, _alpha_compute(alpha, _select_above))


def prelu_prepare(context, node):
    check_arity(node, 2)
    source, alpha = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    _check_float(source, "input", "PRELU")
    _check_float(alpha, "alpha", "PRELU")
    ensure_types_eq(source, output, "PRELU input/output types")
    shape = broadcast_shape(source.shape, alpha.shape)
    ensure(
        shape == tuple(source.shape),
        f"PRELU alpha of shape {list(alpha.shape)} does not broadcast to the input shape "
        f"{list(source.shape)}",
    )
    known = alpha.data if is_constant(alpha) else None
    expanded = None
    if known is not None and math.prod(shape) <= _EXPANDED_LIMIT:
        expanded = np.broadcast_to(known, shape).copy()
    node.user_data = AlphaData(expanded, _alpha_compute(known, _select_at_or_above))
    context.resize_tensor(output, shape)


def alpha_invoke(context, node):
    """LEAKY_RELU and PRELU."""
    tensors = context.tensors
    data = node.user_data
    alpha = data.alpha
    if alpha is None:
        alpha = tensors[node.inputs[1]].data
    data.compute(tensors[node.inputs[0]].data, alpha, tensors[node.outputs[0]].data)


# ---- GELU --------------------------------------------------------------------------------------------


class _WorkRows:
    """`count` float32 scratch rows of a block computation. For a tensor of one block they are made once,
    with their views: on small tensors a fresh temporary or view costs about as much as the arithmetic.
    Larger tensors get fresh rows per block (kept, they would hold memory for little gain)."""

    def __init__(self, count: int, size: int, block: int):
        self.count = count
        self.kept = np.empty((count, size), np.float32) if size <= block else None
        self.kept_rows = None if self.kept is None else tuple(self.kept)

    def get(self, n: int) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """[count, n] rows for a block of n elements, as one array and as its rows."""
        if self.kept is not None:
            return self.kept, self.kept_rows
        table = np.empty((self.count, n), np.float32)
        return table, tuple(table)


_GELU_CUBE = _f32(0.044715)
_GELU_SQRT_2_OVER_PI = _f32(np.sqrt(2.0 / np.pi))
_HALF = _f32(0.5)
# Eigen's float tanh, which TFLite's GELU uses: clamp to +-c (c: the smallest argument where the
# approximation is exactly 1 when multiply-adds are not fused), then (x + x^3 P(x^2)) / Q(x^2), P and Q
# by Horner, highest power first.
_TANH_CLAMP = _f32(7.90738964080810547)
_MINUS_TANH_CLAMP = -_TANH_CLAMP
_TANH_P = tuple(map(_f32, (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1)))
_TANH_Q = tuple(map(_f32, (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0)))


def _horner(coefficients: tuple[np.ndarray, ...], x: np.ndarray, out: np.ndarray) -> None:
    """out = sum c_k x^(n-k), highest power first, by unfused multiply-adds in x's type."""
    np.multiply(x, coefficients[0], out)
    for coefficient in coefficients[1:-1]:
        out += coefficient
        out *= x
    out += coefficients[-1]


def _gelu_tanh_block(x, out, work: _WorkRows):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) in TFLite's float32 operation order."""
    _, (z, z2, p, q) = work.get(x.size)
    flat = x.reshape(-1)  # (a 0-d x would give NumPy scalars, which cannot be updated in place)
    np.multiply(flat, flat, z)
    z *= flat
    z *= _GELU_CUBE
    z += flat
    z *= _GELU_SQRT_2_OVER_PI
    clip(z, _MINUS_TANH_CLAMP, _TANH_CLAMP, z)
    np.multiply(z, z, z2)
    _horner(_TANH_P, z2, p)
    _horner(_TANH_Q, z2, q)
    z2 *= z  # z^3
    p *= z2
    p += z
    p /= q  # tanh(z)
    p += _ONE
    np.multiply(x, _HALF, out=out)
    out *= p.reshape(out.shape)


# |x| Q(|x|) = |x| exp(-x^2/2) sum_k _GELU_Q[k] t^(k+1), t = 1 / (1 + 0.35 |x|); see the module docstring.
# The polynomial is evaluated in float32 (the powers of t and one matrix-vector product), the Gaussian
# factor in float64 (a float32 x^2 would be off by up to x^2/2 ulps after exp).
_GELU_T_SCALE = _f32(1.0 / 0.35)
_GELU_Q = np.array(
    [
        0.13962124722274816,
        0.13986452289932316,
        0.11981419769472983,
        0.10557974143870101,
        -0.02327507666647865,
        0.15940866787359714,
        -0.2559151936186907,
        0.14406704654891997,
        -0.029165169394519092,
    ],
    np.float32,
)
_GELU_A_MAX = _f32(40)  # exp(-x^2/2) is 0 beyond; keeps inf inputs from making inf*0
_MINUS_HALF = np.array(-0.5)  # float64


def _gelu_erf_block(x, out, work: _WorkRows):
    """x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2)), computed as relu(x) - |x| Q(|x|)."""
    table, (a, t, *higher) = work.get(x.size)  # |x|, then the powers of t
    np.absolute(x.reshape(-1), a)
    clip(a, _ZERO, _GELU_A_MAX, a)
    np.add(a, _GELU_T_SCALE, t)
    np.divide(_GELU_T_SCALE, t, t)
    previous = t
    for power in higher:
        previous = np.multiply(previous, t, power)
    tail = _GELU_Q.dot(table[1:])  # Q(a) exp(a^2/2)
    gauss = a.astype(np.float64)
    gauss *= gauss  # exact a^2: a rounded one errs by a^2/2 ulps after exp
    gauss *= _MINUS_HALF
    np.exp(gauss, out=gauss)
    np.multiply(tail, gauss, out=tail)
    tail *= a
    # relu(x) as x - min(x, 0), so that -inf gives NaN as TFLite's 0.5*x*erfc(...) does
    clip(x, _MINUS_INF, _ZERO, out=out)
    np.subtract(x, out, out=out)
    out -= tail.reshape(out.shape)


def _gelu(approximate: bool, size: int) -> Callable:
    """GELU of inputs of `size` elements."""
    compute, rows, block = (
        (_gelu_tanh_block, 4, _BLOCK) if approximate else (_gelu_erf_block, 10, _BLOCK // 2)
    )
    work = _WorkRows(rows, size, block)
    return _blockwise(lambda x, out: compute(x, out, work), block)


def gelu_prepare(context, node):
    _same_shape_prepare("GELU")(context, node)
    size = math.prod(input_tensor(context, node, 0).shape)
    node.user_data = _gelu(node.builtin_data.approximate, size)


def gelu_invoke(context, node):
    tensors = context.tensors
    node.user_data(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


# ---- SOFTMAX, LOG_SOFTMAX ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftmaxData:
    beta: np.ndarray | None  # 0-d float32, None for beta == 1


def softmax_prepare(context, node):
    _same_shape_prepare("SOFTMAX")(context, node)
    ensure(len(input_tensor(context, node, 0).shape) >= 1, "SOFTMAX input must have at least one dimension")
    beta = np.float32(node.builtin_data.beta)
    node.user_data = SoftmaxData(None if beta == 1 else _f32(beta))


def _softmax(x, out, beta):
    # exp((x - max) * beta), then scaled by the reciprocal of the row sum, as TFLite's kernel does
    np.subtract(x, np.maximum.reduce(x, axis=-1, keepdims=True), out=out)
    if beta is not None:
        out *= beta
    np.exp(out, out=out)
    total = np.add.reduce(out, axis=-1, keepdims=True)
    out *= np.reciprocal(total, out=total)


def softmax_invoke(context, node):
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size:
        _softmax(tensors[node.inputs[0]].data, out, node.user_data.beta)


def _log_softmax(x, out):
    if x.ndim == 0:  # one logit: log(1) (TFLite reads past the shape here)
        np.subtract(x, x, out=out)
        return
    # (x - max) - log(sum(exp(x - max)))
    np.subtract(x, np.maximum.reduce(x, axis=-1, keepdims=True), out=out)
    log_sum = np.add.reduce(np.exp(out), axis=-1, keepdims=True)
    out -= np.log(log_sum, out=log_sum)


def log_softmax_invoke(context, node):
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size:
        _log_softmax(tensors[node.inputs[0]].data, out)


# ---- L2_NORMALIZATION --------------------------------------------------------------------------------

_L2_EPSILON = _f32(1e-6)


def l2_normalization_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure(len(source.shape) >= 1, "L2_NORMALIZATION input must have at least one dimension")
    _check_float(source, "input", "L2_NORMALIZATION")
    ensure_types_eq(source, output, "L2_NORMALIZATION input/output types")
    ensure_eq(
        int(node.builtin_data.fused_activation_function),
        int(ActivationFunctionType.NONE),
        "L2_NORMALIZATION fused activation (only NONE is supported)",
    )
    context.resize_tensor(output, source.shape)


def l2_normalization_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if out.size == 0:
        return
    squares = np.multiply(x, x)
    # the squares added one after another in float32, as TFLite's loop does (huge ones overflow to inf)
    np.add.accumulate(squares, axis=-1, out=squares)
    norm = np.sqrt(squares[..., -1:])
    np.maximum(norm, _L2_EPSILON, out=norm)
    np.divide(x, norm, out=out)


# ---- LOCAL_RESPONSE_NORMALIZATION --------------------------------------------------------------------


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
    _check_float(source, "input", "LOCAL_RESPONSE_NORMALIZATION")
    ensure_types_eq(source, output, "LOCAL_RESPONSE_NORMALIZATION input/output types")
    options = node.builtin_data
    if options.radius < 0:  # TFLite corrupts its heap on this
        raise KernelError(f"LOCAL_RESPONSE_NORMALIZATION radius {options.radius} is negative")
    shape = tuple(source.shape)
    pixels, depth = math.prod(shape[:-1]), shape[-1]
    size, radius = pixels * depth, int(options.radius)
    order = _running_sum_order(radius, depth, pixels)
    sums = np.empty(order.shape, np.float32)
    terms = np.zeros(2 * size + 2, np.float32)
    terms[-1] = -0.0
    beta = float(np.float32(options.beta))
    node.user_data = LocalResponseNormData(
        _f32(options.bias),
        _f32(options.alpha),
        beta,
        _f32(-beta),
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


# ---- registration ------------------------------------------------------------------------------------

for _op, _versions, _compute in (
    (BuiltinOperator.RELU, (1, 3), _relu),
    (BuiltinOperator.RELU6, (1, 3), _relu6),
    (BuiltinOperator.RELU_N1_TO_1, (1, 1), _relu_n1_to_1),
    (BuiltinOperator.RELU_0_TO_1, (1, 1), _relu_0_to_1),
    (BuiltinOperator.TANH, (1, 3), _tanh),
    (BuiltinOperator.LOGISTIC, (1, 3), _logistic),
    (BuiltinOperator.HARD_SWISH, (1, 1), _hard_swish),
    (BuiltinOperator.ELU, (1, 1), _elu),
):
    _unary_kernel(_op, _versions, _compute)

register_builtin(
    BuiltinOperator.LEAKY_RELU, (1, 2), types=_FLOAT, prepare=leaky_relu_prepare, invoke=alpha_invoke
)
register_builtin(BuiltinOperator.PRELU, (1, 1), types=_FLOAT, prepare=prelu_prepare, invoke=alpha_invoke)
register_builtin(BuiltinOperator.GELU, (1, 3), types=_FLOAT, prepare=gelu_prepare, invoke=gelu_invoke)
register_builtin(
    BuiltinOperator.SOFTMAX, (1, 4), types=_FLOAT, prepare=softmax_prepare, invoke=softmax_invoke
)
register_builtin(
    BuiltinOperator.LOG_SOFTMAX,
    (1, 2),
    types=_FLOAT,
    prepare=_same_shape_prepare("LOG_SOFTMAX"),
    invoke=log_softmax_invoke,
)
register_builtin(
    BuiltinOperator.L2_NORMALIZATION,
    (1, 2),
    types=_FLOAT,
    prepare=l2_normalization_prepare,
    invoke=l2_normalization_invoke,
)
register_builtin(
    BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION,
    (1, 1),
    types=_FLOAT,
    prepare=local_response_norm_prepare,
    invoke=local_response_norm_invoke,
)

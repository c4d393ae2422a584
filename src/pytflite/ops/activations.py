"""Activation functions and normalizations (float32 and quantized).

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

Quantized kernels (uint8/int8, and int16 where TFLite has them) match LiteRT bit for bit:
- Elementwise ops are a table over every input value, made in prepare; invoke is one np.take. The tables
  hold TFLite's own per-element arithmetic: the float LUTs of TANH, LOGISTIC, ELU, GELU (LUTPopulate, with
  the C library's float functions, quant/lut.py), the fixed-point formulas of the RELU family, LEAKY_RELU
  and HARD_SWISH, and for int16 TANH/LOGISTIC either the interpolated sigmoid table (non power-of-two
  input scales) or gemmlowp's int16 tanh/logistic (power-of-two scales, quant/gemmlowp.py).
- 8-bit PRELU is a table over (alpha, input) pairs; int16 PRELU one table per distinct constant alpha.
- 8-bit SOFTMAX/LOG_SOFTMAX follow the optimized kernels LiteRT runs: float32 with a 256-entry expf table,
  row sums added in order. BUILTIN_REF registers TFLite's integer (gemmlowp) kernels instead, and the
  interpolating int16 TANH/LOGISTIC for every scale; the other ops compute alike in both.
- int16 SOFTMAX uses TFLite's 513-entry exp and 1/(1+x) interpolation tables; L2_NORMALIZATION the
  fixed-point inverse square root of each row's sum of squares.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import (
    broadcast_shape,
    check_arity,
    check_scratch,
    clip,
    input_tensor,
    is_constant,
    output_tensor,
)
from .quant.fixed_point import (
    INT32_MAX,
    INT32_MIN,
    float_to_int32,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
    rounding_divide_by_pot,
    wrap,
)
from .quant.gemmlowp import (
    FixedPointMath,
    count_leading_zeros32,
    get_reciprocal,
    inv_sqrt_multiplier,
    log_x_for_x_greater_than_or_equal_to_1,
)
from .quant.lut import (
    SIGMOID_TABLE_UINT16,
    c_double_function,
    erfcf,
    every_value,
    expf,
    expm1f,
    int16_table,
    logf,
    lookup_16bit,
    populate_8bit,
    populate_16bit,
    table_kernel,
    tanhf,
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


def _check_unary(context, node, op_name: str, types: tuple[TensorType, ...]):
    """Checks of a one-input op whose output has the input's type and shape; resizes the output."""
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, types, "input", op_name)
    ensure_types_eq(source, output, f"{op_name} input/output types")
    context.resize_tensor(output, source.shape)
    return source, output


def compute_invoke(context, node):
    """Invoke of the ops whose prepare leaves `compute(x, out)` in node.user_data."""
    tensors = context.tensors
    node.user_data(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


def _unary_kernel(
    op: BuiltinOperator,
    versions: tuple[int, int],
    compute: Callable,
    quantized: Callable | None = None,
    types: tuple[TensorType, ...] = _FLOAT,
    reference: bool = False,
) -> None:
    """Register a one-input op: `compute(x, out)` for float32, `quantized(input, output, x86)` making the
    compute function of the other `types` in prepare (`x86`: the host's float-to-int conversions)."""

    def prepare(context, node):
        source, output = _check_unary(context, node, op.name, types)
        if source.type == TensorType.FLOAT32:
            node.user_data = compute
        else:
            node.user_data = quantized(source, output, context.host.x86)

    register_builtin(op, versions, types=types, reference=reference, prepare=prepare, invoke=compute_invoke)


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
    source, output = _check_unary(context, node, "LEAKY_RELU", _FLOAT + _QUANTIZED)
    alpha = _f32(node.builtin_data.alpha)
    if source.type == TensorType.FLOAT32:
        node.user_data = AlphaData(alpha, _alpha_compute(alpha, _select_above))
        return
    table = table_kernel(_leaky_relu_table(source, output, node.builtin_data.alpha), _DTYPES[source.type])
    node.user_data = AlphaData(alpha, lambda x, _alpha, out: table(x, out))


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
    known = alpha.data if is_constant(alpha) else None
    expanded = None
    if known is not None and math.prod(shape) <= _EXPANDED_LIMIT:
        expanded = np.broadcast_to(known, shape).copy()
    node.user_data = AlphaData(expanded, _alpha_compute(known, _select_at_or_above))


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
    source, output = _check_unary(context, node, "GELU", _FLOAT + _QUANTIZED)
    approximate = bool(node.builtin_data.approximate)
    if source.type == TensorType.FLOAT32:
        node.user_data = _gelu(approximate, math.prod(source.shape))
    else:
        node.user_data = _gelu_quantized(source, output, approximate)


# ---- SOFTMAX, LOG_SOFTMAX ----------------------------------------------------------------------------


def _softmax_prepare(reference: bool) -> Callable:
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure(len(source.shape) >= 1, "SOFTMAX input must have at least one dimension")
        ensure_type(source, tuple(_SOFTMAX_OUTPUTS), "input", "SOFTMAX")
        allowed = _SOFTMAX_OUTPUTS[source.type]
        ensure(
            output.type in allowed,
            f"SOFTMAX of a {type_name(source.type)} input supports "
            f"{' and '.join(type_name(t) for t in allowed)} outputs, got {type_name(output.type)}",
        )
        context.resize_tensor(output, source.shape)
        beta = node.builtin_data.beta
        if source.type == TensorType.FLOAT32:
            beta32 = None if np.float32(beta) == 1 else _f32(beta)
            node.user_data = lambda x, out: _softmax(x, out, beta32)
        else:
            node.user_data = _softmax_quantized(source, output, beta, reference, context.host.x86)

    return prepare


def _softmax(x, out, beta):
    # exp((x - max) * beta), then scaled by the reciprocal of the row sum, as TFLite's kernel does
    np.subtract(x, np.maximum.reduce(x, axis=-1, keepdims=True), out=out)
    if beta is not None:
        out *= beta
    np.exp(out, out=out)
    total = np.add.reduce(out, axis=-1, keepdims=True)
    out *= np.reciprocal(total, out=total)


def nonempty_invoke(context, node):
    """SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION: `compute(x, out)` from node.user_data, unless empty."""
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size:
        node.user_data(tensors[node.inputs[0]].data, out)


def _log_softmax(x, out):
    if x.ndim == 0:  # one logit: log(1) (TFLite reads past the shape here)
        np.subtract(x, x, out=out)
        return
    # (x - max) - log(sum(exp(x - max)))
    np.subtract(x, np.maximum.reduce(x, axis=-1, keepdims=True), out=out)
    log_sum = np.add.reduce(np.exp(out), axis=-1, keepdims=True)
    out -= np.log(log_sum, out=log_sum)


def _log_softmax_prepare(reference: bool) -> Callable:
    def prepare(context, node):
        source, output = _check_unary(context, node, "LOG_SOFTMAX", _FLOAT + _BYTES)
        if source.type == TensorType.FLOAT32:
            node.user_data = _log_softmax
        else:
            node.user_data = _log_softmax_quantized(source, output, reference, context.host.x86)

    return prepare


# ---- L2_NORMALIZATION --------------------------------------------------------------------------------

_L2_EPSILON = _f32(1e-6)


def l2_normalization_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure(len(source.shape) >= 1, "L2_NORMALIZATION input must have at least one dimension")
    ensure_type(source, _FLOAT + _BYTES, "input", "L2_NORMALIZATION")
    ensure_types_eq(source, output, "L2_NORMALIZATION input/output types")
    ensure_eq(
        int(node.builtin_data.fused_activation_function),
        int(ActivationFunctionType.NONE),
        "L2_NORMALIZATION fused activation (only NONE is supported)",
    )
    context.resize_tensor(output, source.shape)
    if source.type == TensorType.FLOAT32:
        node.user_data = _l2_normalization
    else:
        node.user_data = _l2_normalization_quantized(source, output)


def _l2_normalization(x, out):
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
    ensure_type(source, _FLOAT, "input", "LOCAL_RESPONSE_NORMALIZATION")
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


# ---- quantized (uint8 / int8 / int16) kernels ---------------------------------------------------------
# Elementwise ops on 8-bit (and most on 16-bit) inputs are a table over every possible input value, made
# in prepare by evaluating TFLite's per-element arithmetic (fixed-point or float) on all of them; invoke
# is one np.take indexed by the input's bits read as unsigned. Scales are float32 and the real
# multipliers derived from them are computed in float32 where TFLite's C++ does (float * float).

_U8, _I8, _I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
_BYTES = (_U8, _I8)
_QUANTIZED = (_U8, _I8, _I16)
_DTYPES = {_U8: np.dtype(np.uint8), _I8: np.dtype(np.int8), _I16: np.dtype(np.int16)}


def _quantization(tensor, what: str, op_name: str) -> tuple[np.float32, int]:
    """(float32 scale, zero point) of a per-tensor quantized tensor."""
    scale, zero_point = np.float32(tensor.params.scale), int(tensor.params.zero_point)
    ensure(
        np.isfinite(scale) and scale > 0,
        f"{op_name} {what} scale {tensor.params.scale} is not a positive number",
    )
    return scale, zero_point


def _ensure_zero_points(op_name: str, *pairs) -> None:
    for what, zero_point in pairs:
        ensure_eq(zero_point, 0, f"{op_name} int16 {what} zero point")


def _multiplier(real, op_name: str) -> tuple[int, int]:
    """QuantizeMultiplier of a finite real multiplier. A left shift above 31 (a multiplier of 2**31 or
    more) acts as shift % 32 in TFLite's x * (1 << shift) on x86, whose shift instructions take the count
    modulo 32; kept on every host, since AArch64's LSLV on 32-bit registers does the same (armv7's
    register shifts, which give 0 from 32 on, are not reproduced)."""
    ensure(np.isfinite(real), f"{op_name} rescaling multiplier {real} is not finite")
    multiplier, shift = quantize_multiplier(float(real))
    return multiplier, shift % 32 if shift > 31 else shift


def _wrap_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """C's conversion of int32 results into a narrower integer type (two's-complement wrap)."""
    return wrap(np.asarray(values, np.int64), 8 * dtype.itemsize).astype(dtype)


# RELU family: (TFLite's QuantizedReluX) out_zp + rescale(x - in_zp), clamped to the quantized bounds.
_RELU_BOUNDS = {
    BuiltinOperator.RELU: (0.0, math.inf),
    BuiltinOperator.RELU6: (0.0, 6.0),
    BuiltinOperator.RELU_N1_TO_1: (-1.0, 1.0),
    BuiltinOperator.RELU_0_TO_1: (0.0, 1.0),
}


def _relu_quantized(op: BuiltinOperator) -> Callable:
    def quantized(source, output, x86: bool):
        in_scale, in_zero = _quantization(source, "input", op.name)
        out_scale, out_zero = _quantization(output, "output", op.name)
        multiplier, shift = _multiplier(in_scale / out_scale, op.name)
        if source.type == _I16:
            _ensure_zero_points(op.name, ("input", in_zero), ("output", out_zero))
        dtype = _DTYPES[source.type]
        info = np.iinfo(dtype)
        low, high = _RELU_BOUNDS[op]

        def bound(value: float) -> int:
            quotient = round_half_away(float(np.float32(value) / out_scale))
            return int(wrap(np.int64(out_zero) + float_to_int32(quotient, x86=x86), 32))

        lowest = max(info.min, bound(low))
        highest = info.max if high == math.inf else min(info.max, bound(high))
        values = every_value(dtype)
        result = wrap(out_zero + multiply_by_quantized_multiplier(values - in_zero, multiplier, shift), 32)
        return table_kernel(_wrap_to(np.minimum(np.maximum(result, lowest), highest), dtype), dtype)

    return quantized


def _leaky_relu_table(source, output, alpha: float) -> np.ndarray:
    in_scale, in_zero = _quantization(source, "input", "LEAKY_RELU")
    out_scale, out_zero = _quantization(output, "output", "LEAKY_RELU")
    alpha_multiplier, alpha_shift = _multiplier(in_scale * np.float32(alpha) / out_scale, "LEAKY_RELU")
    identity_multiplier, identity_shift = _multiplier(in_scale / out_scale, "LEAKY_RELU")
    if source.type == _I16:
        _ensure_zero_points("LEAKY_RELU", ("input", in_zero), ("output", out_zero))
    dtype = _DTYPES[source.type]
    info = np.iinfo(dtype)
    values = every_value(dtype) - in_zero
    positive = multiply_by_quantized_multiplier(values, identity_multiplier, identity_shift)
    if source.type == _I16:  # the optimized int16 kernel applies the signed multiplier directly
        negative = multiply_by_quantized_multiplier(values, alpha_multiplier, alpha_shift)
    else:  # the reference kernel scales by |multiplier| and negates (the same result)
        scaled = multiply_by_quantized_multiplier(values, abs(alpha_multiplier), alpha_shift)
        negative = -scaled if alpha_multiplier < 0 else scaled
    result = wrap(out_zero + np.where(values >= 0, positive, negative), 32)
    return clip(result, info.min, info.max)


# HARD_SWISH (uint8/int8): TFLite's int16 fixed-point evaluation of x * relu6(x + 3) / 6.
_Q15 = FixedPointMath(16)


def _int16_multiplier(real) -> tuple[int, int]:
    """QuantizeMultiplier, then the multiplier rounded down to 16 bits (DownScaleInt32ToInt16Multiplier)."""
    multiplier, exponent = _multiplier(real, "HARD_SWISH")
    if multiplier >= 2**31 - 1 - (1 << 15):
        return 32767, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


def _rounding_divide_int16(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT on int16 values (its mask is an int16, truncated for large shifts)."""
    mask = int(wrap(np.int64((1 << exponent) - 1), 16))
    threshold = (mask >> 1) + (x < 0)
    return wrap((x >> exponent) + ((x & mask) > threshold), 16)


def _hard_swish_table(source, output) -> np.ndarray:
    in_scale, in_zero = _quantization(source, "input", "HARD_SWISH")
    out_scale, out_zero = _quantization(output, "output", "HARD_SWISH")
    hires_input_scale = np.float32(1.0 / 128.0) * in_scale
    output_multiplier, output_exponent = _int16_multiplier(hires_input_scale / out_scale)
    ensure(output_exponent <= 0, "params->output_multiplier_exponent <= 0 was not true.")
    reluish_multiplier, reluish_exponent = _int16_multiplier(hires_input_scale / np.float32(3.0 / 32768.0))
    dtype = _DTYPES[source.type]
    info = np.iinfo(dtype)
    hires = wrap((every_value(dtype) - in_zero) * 128, 16)
    preshift_output = _Q15.mul(hires, output_multiplier)
    reluish = hires
    if reluish_exponent > 0:
        reluish = clip(reluish << (reluish_exponent - 1), -32768, 32767)
    reluish = _Q15.mul(reluish, reluish_multiplier)
    if reluish_exponent > 0:
        reluish = clip(reluish << 1, -32768, 32767)
    if reluish_exponent < 0:
        reluish = _rounding_divide_int16(reluish, -reluish_exponent)
    reluish = (reluish + (1 << 15)) >> 1  # relu6(x + 3) / 6 in [0, 1], Q0.15
    product = reluish * preshift_output
    high = np.where(product < 0, -((-product) >> 15), product >> 15)  # doubling high half, truncated
    high = np.where((reluish == -32768) & (preshift_output == -32768), 32767, high)
    result = wrap(_rounding_divide_int16(high, -output_exponent) + out_zero, 16)
    return clip(result, info.min, info.max)


# TANH, LOGISTIC.
_F32_ONE = np.float32(1)


def _sigmoid_float(x: np.ndarray) -> np.ndarray:
    return _F32_ONE / (_F32_ONE + expf(-x))


def _checked_log2(x: np.float32) -> tuple[bool, int]:
    """TFLite's CheckedLog2: (x is a power of two within 1e-3 of log2, rounded log2)."""
    log2 = logf(np.array([x], np.float32))[0] * (np.float32(1) / logf(np.array([2.0], np.float32))[0])
    rounded = np.float32(round_half_away(float(log2)))
    return bool(abs(log2 - rounded) < np.float32(1e-3)), int(rounded)


def _int16_sigmoid_interpolation(values: np.ndarray, multiplier: int, left_shift: int, tanh: bool):
    """TFLite's reference int16 LOGISTIC / TANH: interpolation in its 256-entry sigmoid table."""
    if multiplier == 0:  # power-of-two input scale
        multiplier, left_shift = 3 << left_shift, 0
    rounding = 1 << (left_shift - 1) if left_shift > 0 else 0
    scaled = wrap(values * multiplier + rounding, 32) >> left_shift
    magnitude = np.abs(scaled)
    fraction_bits = 8 if tanh else 9
    high = magnitude >> fraction_bits
    index = np.minimum(high, 254)
    lower, upper = SIGMOID_TABLE_UINT16[index], SIGMOID_TABLE_UINT16[index + 1]
    fraction = magnitude & ((1 << fraction_bits) - 1)
    if tanh:
        result = np.where(high >= 255, 0xFFFF << 8, (lower << 8) + fraction * (upper - lower))
        result = np.where(scaled >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
        return wrap(result >> 8, 16)
    result = np.where(high >= 255, 0x7FFF << 10, (lower << 9) + fraction * (upper - lower))
    result = np.where(scaled >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return wrap((result & 0xFFFFFFFF) >> 10, 16)


def _tanh_logistic_quantized(op: BuiltinOperator, reference: bool) -> Callable:
    tanh = op == BuiltinOperator.TANH

    def quantized(source, output, x86: bool):
        in_scale, in_zero = _quantization(source, "input", op.name)
        out_scale, out_zero = _quantization(output, "output", op.name)
        dtype = _DTYPES[source.type]
        if source.type in _BYTES:
            if not tanh:
                ensure(float(out_scale) == 1.0 / 256, "output->params.scale == 1. / 256 was not true.")
            transform = tanhf if tanh else _sigmoid_float
            return table_kernel(
                populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, dtype), dtype
            )
        if not tanh:
            ensure(float(out_scale) == 1.0 / 32768, "output->params.scale == 1. / 32768 was not true.")
            ensure(out_zero == 0, "output->params.zero_point == 0 was not true.")
        _ensure_zero_points(op.name, ("input", in_zero), ("output", out_zero))
        power_of_two, log2 = _checked_log2(in_scale)
        left_shift = 12 + log2
        power_of_two &= left_shift in ((0, 1) if tanh else (0,))
        multiplier = 0
        if not power_of_two:  # rescale the input to 1/(3*4096) units for the table
            real, left_shift = float(in_scale) * 4096.0 * 3.0, 0
            while real <= 32767.0 / 2.0 and left_shift <= 30:
                left_shift += 1
                real *= 2.0
            # int32_t(real) past int32: x86 gives INT32_MIN, ARM saturates
            multiplier = int(real) if real < 2.0**31 else INT32_MIN if x86 else INT32_MAX
        exact, out_log2 = _checked_log2(out_scale)
        ensure(exact, f"{op.name} output scale {out_scale} is not a power of two")
        ensure_eq(out_log2, -15, f"{op.name} int16 output scale log2")
        values = every_value(dtype)
        if reference or multiplier > 0:
            table = _int16_sigmoid_interpolation(values, multiplier, left_shift, tanh)
        else:  # the optimized kernel: gemmlowp's int16 fixed-point functions on Q3.12 inputs
            raw = _Q15.multiply_by_pot(values, left_shift)
            table = _Q15.tanh(raw, 3) if tanh else _Q15.logistic(raw, 3)
        return table_kernel(table, dtype)

    return quantized


def _elu_quantized(source, output, _x86: bool):
    in_scale, in_zero = _quantization(source, "input", "ELU")
    out_scale, out_zero = _quantization(output, "output", "ELU")

    def transform(x):
        return np.where(x < 0, expm1f(np.minimum(x, 0)), x)

    return table_kernel(
        populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, np.int8), np.dtype(np.int8)
    )


# TFLite's constants: float(-M_SQRT1_2), and sqrt(2/pi) as float(M_2_SQRTPI * M_SQRT1_2) in double
_GELU_SQRT_HALF = np.float32(-0.70710678118654752440)
_GELU_K = np.float32(1.12837916709551257390 * 0.70710678118654752440)


def _gelu_transform(approximate: bool) -> Callable:
    if approximate:
        return lambda x: (_HALF * x) * (_F32_ONE + tanhf(_GELU_K * (x + _GELU_CUBE * x * x * x)))
    return lambda x: (_HALF * x) * erfcf(x * _GELU_SQRT_HALF)


def _gelu_quantized(source, output, approximate: bool) -> Callable:
    in_scale, in_zero = _quantization(source, "input", "GELU")
    out_scale, out_zero = _quantization(output, "output", "GELU")
    dtype = _DTYPES[source.type]
    transform = _gelu_transform(approximate)
    if source.type in _BYTES:
        return table_kernel(populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, dtype), dtype)
    return table_kernel(int16_table(transform, in_scale, in_zero, out_scale, out_zero), dtype)


# PRELU: x >= 0 rescaled by in_scale / out_scale, x < 0 multiplied by alpha and rescaled by
# in_scale * alpha_scale / out_scale (TFLite's reference kernel, which its optimized one calls).
_PRELU_ALPHA_TYPES = {TensorType.FLOAT32: TensorType.FLOAT32, _U8: _U8, _I8: _I8, _I16: _I8}


def _prelu_arithmetic(source, alpha, output) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """f(x, a): the quantized PRELU of int64 input and alpha values (broadcasting)."""
    in_scale, in_zero = _quantization(source, "input", "PRELU")
    alpha_scale, alpha_zero = _quantization(alpha, "alpha", "PRELU")
    out_scale, out_zero = _quantization(output, "output", "PRELU")
    identity_multiplier, identity_shift = _multiplier(in_scale / out_scale, "PRELU")
    alpha_multiplier, alpha_shift = _multiplier(in_scale * alpha_scale / out_scale, "PRELU")
    info = np.iinfo(_DTYPES[source.type])

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
    dtype = _DTYPES[source.type]
    values = every_value(dtype)
    if source.type == _I16:
        distinct, slots = np.unique(alpha.data, return_inverse=True) if is_constant(alpha) else (None, None)
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
    if is_constant(alpha):
        alpha_index = np.broadcast_to(alpha.data.view(np.uint8).astype(np.int32) << 8, shape).copy()
    return AlphaData(alpha_index, _prelu_bytes(table))


# SOFTMAX, LOG_SOFTMAX of uint8/int8: the optimized kernels work in float32 with a table of
# expf(-input_scale * beta * d) over the 256 distances d to the row's maximum, summed sequentially.
# BUILTIN_REF's kernels are fixed-point (gemmlowp exp, reciprocal and log). int16 SOFTMAX is one
# fixed-point kernel in both, with 513-entry exp and 1/(1+x) tables.


def _rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)


def _distances(x: np.ndarray) -> np.ndarray:
    """Each element's distance below its row's maximum (int32 rows)."""
    rows = _rows(x).astype(np.int32)
    return np.subtract(np.maximum.reduce(rows, axis=-1, keepdims=True), rows, out=rows)


def _float_exp_table(input_scale: np.float32, beta: np.float32) -> np.ndarray:
    """expf(scale * d) for d = 0 ... 255, scale = -input_scale * beta (PopulateSoftmaxLookupTable)."""
    scale = -input_scale * beta
    return expf(scale * np.arange(256, dtype=np.float32))


def _sequential_row_sums(values: np.ndarray) -> np.ndarray:
    """float32 row sums added left to right, as TFLite's scalar loop does."""
    return np.add.accumulate(values, axis=-1)[:, -1]


def _round_non_negative(values: np.ndarray) -> np.ndarray:
    """roundf (halves away from zero) of non-negative float32 values, exactly."""
    whole = np.trunc(values)
    return whole + (values - whole >= np.float32(0.5))


def _softmax_float_table(source, output, beta: np.float32, x86: bool) -> Callable:
    in_scale, _ = _quantization(source, "input", "SOFTMAX")
    out_scale, out_zero = _quantization(output, "output", "SOFTMAX")
    table = _float_exp_table(in_scale, beta)
    out_info = np.iinfo(_DTYPES[output.type])
    # x86 rounds uint8 results as int(p + 0.5f), and that specialization leaves out the zero point
    truncating = output.type == _U8
    offset = 0 if truncating else out_zero

    def convert(values):  # probabilities below 2**31: a plain cast
        return values.astype(np.int64)

    # probabilities reach 1 / out_scale: past int32, the conversion needs C's overflow behaviour
    if 1 / float(out_scale) >= 2**31 - 1:
        convert = functools.partial(float_to_int32, x86=x86)
    half = np.float32(0.5)

    def compute(x, out):
        exps = table[_distances(x)]
        inverse = np.float32(1) / (_sequential_row_sums(exps) * out_scale)
        exps *= inverse[:, None]
        quantized = convert(np.trunc(exps + half) if truncating else _round_non_negative(exps))
        quantized += offset
        clip(quantized, out_info.min, out_info.max, out=quantized)
        np.copyto(out, quantized.reshape(out.shape), casting="unsafe")

    return compute


_Q31 = FixedPointMath(32)


def _softmax_input_scaling(input_scale: np.float32, beta: float, op_name: str) -> tuple[int, int, int]:
    """PreprocessSoftmaxScaling (5 integer bits) and the matching diff_min (CalculateInputRadius)."""
    real = min(float(beta) * float(input_scale) * (1 << 26), 2.0**31 - 1.0)
    ensure(real > 1.0, f"{op_name} input scale * beta {real / (1 << 26)} is too small for the integer kernel")
    multiplier, left_shift = quantize_multiplier(real)
    radius = math.floor(31.0 * (1 << 26) / (1 << left_shift))
    return multiplier, left_shift, -radius


@dataclass(frozen=True)
class _FixedPointExps:
    """The integer kernels' per-distance values, for distances d = 0 ... 255 below the row maximum."""

    valid: np.ndarray  # -d >= diff_min: the element takes part
    rescaled: np.ndarray  # -d * input_scale * beta in Q5.26
    exps: np.ndarray  # exp of that, Q0.31
    summands: np.ndarray  # the exps in Q12.19, 0 where not valid


def _fixed_point_exps(multiplier: int, left_shift: int, diff_min: int) -> _FixedPointExps:
    differences = -np.arange(256, dtype=np.int64)
    valid = differences >= diff_min
    rescaled = _Q31.mul(wrap(np.where(valid, differences, 0) << left_shift, 32), multiplier)
    exps = _Q31.exp_on_negative_values(rescaled, 5)
    return _FixedPointExps(valid, rescaled, exps, np.where(valid, rounding_divide_by_pot(exps, 12), 0))


def _softmax_reference(source, output, beta: float) -> Callable:
    in_scale, _ = _quantization(source, "input", "SOFTMAX")
    table = _fixed_point_exps(*_softmax_input_scaling(in_scale, beta, "SOFTMAX"))
    out_info = np.iinfo(_DTYPES[output.type])
    out_bits = 8 * _DTYPES[output.type].itemsize

    def compute(x, out):
        distances = _distances(x)
        exps = table.exps[distances]
        reciprocal, bits_over_unit = get_reciprocal(
            wrap(np.add.reduce(table.summands[distances], axis=-1), 32), 12
        )
        exponent = bits_over_unit + 31 - out_bits
        scaled = rounding_divide_by_pot(_Q31.mul(reciprocal[:, None], exps), exponent[:, None])
        result = clip(scaled + out_info.min, out_info.min, out_info.max)
        np.copyto(
            out, np.where(table.valid[distances], result, out_info.min).reshape(out.shape), casting="unsafe"
        )

    return compute


def _softmax_int16(source, output, beta: float) -> Callable:
    in_scale, in_zero = _quantization(source, "input", "SOFTMAX")
    _, out_zero = _quantization(output, "output", "SOFTMAX")
    _ensure_zero_points("SOFTMAX", ("input", in_zero), ("output", out_zero))
    exp_lut = populate_16bit(c_double_function("exp"), 10.0 / 65535, 32767, 2.0 / 65535, 0, np.float64)
    reciprocal_lut = populate_16bit(
        lambda v: 1.0 / (1.0 + v), 1.0 / 65535, -32768, 2.0 / 65535, 0, np.float64
    )
    multiplier, shift = _multiplier(np.float32(in_scale * np.float32(beta)) / (10.0 / 65535.0), "SOFTMAX")
    # exp(x - max) of every difference 0, -1, ..., -65535 (Q0.15 via the table)
    differences = -np.arange(65536, dtype=np.int64)
    scaled = clip(multiply_by_quantized_multiplier(differences, multiplier, shift) + 32767, -32768, 32767)
    exps_by_distance = lookup_16bit(scaled, exp_lut)

    def compute(x, out):
        rows = _rows(x).astype(np.int64)
        exps = exps_by_distance[np.maximum.reduce(rows, axis=-1, keepdims=True) - rows]
        total = wrap(np.add.reduce(exps, axis=-1), 32)
        headroom_plus_one = count_leading_zeros32(total & 0xFFFFFFFF)
        shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        reciprocal = lookup_16bit(clip(shifted - (1 << 15) - (1 << 16), -32768, 32767), reciprocal_lut)
        right_shift = (31 - headroom_plus_one)[:, None]
        result = (exps * reciprocal[:, None] + (np.int64(1) << (right_shift - 1))) >> right_shift
        np.copyto(out, clip(result, 0, 32767).reshape(out.shape), casting="unsafe")

    return compute


_SOFTMAX_OUTPUTS = {
    TensorType.FLOAT32: (TensorType.FLOAT32,),
    _U8: (_U8, _I16),
    _I8: (_I8, _I16),
    _I16: (_I16,),
}


def _softmax_quantized(source, output, beta: float, reference: bool, x86: bool) -> Callable:
    out_scale, out_zero = _quantization(output, "output", "SOFTMAX")
    if source.type == _I8 and output.type == _I8:
        ensure_eq(out_zero, -128, "SOFTMAX int8 output zero point")
        ensure(
            abs(out_scale - np.float32(1 / 256)) <= np.float32(0.001 / 256),
            "SOFTMAX int8 output scale != 1/256",
        )
    if output.type == _I16 and source.type == _I16:
        ensure_eq(out_zero, 0, "SOFTMAX int16 output zero point")
        ensure(
            abs(out_scale - np.float32(1 / 32768)) <= np.float32(0.001 / 32768),
            "SOFTMAX int16 output scale != 1/32768",
        )
    if source.type == _I16:
        return _softmax_int16(source, output, beta)
    if reference:
        return _softmax_reference(source, output, beta)
    return _softmax_float_table(source, output, np.float32(beta), x86)


def _log_softmax_float_table(source, output, x86: bool) -> Callable:
    in_scale, _ = _quantization(source, "input", "LOG_SOFTMAX")
    out_scale, out_zero = _quantization(output, "output", "LOG_SOFTMAX")
    table = _float_exp_table(in_scale, np.float32(1))
    ratio = in_scale / out_scale
    info = np.iinfo(_DTYPES[source.type])

    def compute(x, out):
        rows = _rows(x)
        maxima = np.maximum.reduce(rows, axis=-1).astype(np.float32)
        exps = table[_distances(x)]
        log_sums = _logf_rows(_sequential_row_sums(exps))
        offsets = (in_scale * maxima + log_sums) / out_scale
        log_probabilities = ratio * rows.astype(np.float32)
        log_probabilities -= offsets[:, None]
        rounded = np.rint(log_probabilities, out=log_probabilities) + np.float32(out_zero)
        quantized = float_to_int32(rounded, x86=x86)
        np.copyto(out, clip(quantized, info.min, info.max).reshape(out.shape), casting="unsafe")

    return compute


# Up to this many rows a LOG_SOFTMAX calls the C library's logf for each (exact); beyond, float64 log
# rounded to float32, which differs from glibc's logf in the last bit for ~0.4% of arguments (moving a
# result only when it lies within ~1e-5 of a rounding boundary).
_LOGF_ROWS = 64


def _logf_rows(values: np.ndarray) -> np.ndarray:
    if values.size <= _LOGF_ROWS:
        return logf(values)
    return np.log(values.astype(np.float64)).astype(np.float32)


def _log_softmax_reference(source, output) -> Callable:
    in_scale, _ = _quantization(source, "input", "LOG_SOFTMAX")
    multiplier, left_shift, diff_min = _softmax_input_scaling(in_scale, 1.0, "LOG_SOFTMAX")
    table = _fixed_point_exps(multiplier, left_shift, diff_min)
    reverse_multiplier, reverse_shift = quantize_multiplier((1 << (31 - left_shift)) / float(multiplier))
    info = np.iinfo(_DTYPES[source.type])

    def compute(x, out):
        distances = _distances(x)
        sums = wrap(np.add.reduce(table.summands[distances], axis=-1), 32)
        log_sums = log_x_for_x_greater_than_or_equal_to_1(sums, 12, 5)[:, None]
        limit = multiply_by_quantized_multiplier(
            wrap(log_sums + INT32_MIN, 32), reverse_multiplier, reverse_shift
        )
        # elements with -distance > max(diff_min - 1, limit) count; all of them have a rescaled difference
        kept = -distances > np.maximum(diff_min - 1, limit)
        result = rounding_divide_by_pot(wrap(table.rescaled[distances] - log_sums, 32), 22) + info.max
        result = np.where(kept, clip(result, info.min, info.max), info.min)
        np.copyto(out, result.reshape(out.shape), casting="unsafe")

    return compute


def _log_softmax_quantized(source, output, reference: bool, x86: bool) -> Callable:
    out_scale, out_zero = _quantization(output, "output", "LOG_SOFTMAX")
    ensure(float(out_scale) == 16.0 / 256, f"LOG_SOFTMAX output scale {out_scale} != 16/256")
    ensure_eq(out_zero, 255 if source.type == _U8 else 127, "LOG_SOFTMAX output zero point")
    if reference:
        return _log_softmax_reference(source, output)
    return _log_softmax_float_table(source, output, x86)


def _l2_normalization_quantized(source, output) -> Callable:
    out_scale, out_zero = _quantization(output, "output", "L2_NORMALIZATION")
    _, in_zero = _quantization(source, "input", "L2_NORMALIZATION")
    ensure(float(out_scale) == 1.0 / 128, f"L2_NORMALIZATION output scale {out_scale} != 1/128")
    ensure_eq(out_zero, 128 if source.type == _U8 else 0, "L2_NORMALIZATION output zero point")
    unsigned = source.type == _U8
    info = np.iinfo(_DTYPES[source.type])

    def compute(x, out):
        differences = _rows(x).astype(np.int64) - in_zero
        squares = wrap(np.add.reduce(differences * differences, axis=-1), 32)
        multiplier, shift = inv_sqrt_multiplier(squares)
        multiplier, shift = multiplier[:, None], shift[:, None]
        if unsigned:  # 128 + (128 * d) * (1 / norm)
            result = 128 + multiply_by_quantized_multiplier(128 * differences, multiplier, shift)
        else:  # d * (1 / norm) in Q7
            result = multiply_by_quantized_multiplier(differences, multiplier, shift + 7)
        np.copyto(out, clip(result, info.min, info.max).reshape(out.shape), casting="unsafe")

    return compute


# ---- registration ------------------------------------------------------------------------------------
# BUILTIN_REF differs from the default kernels for int16 TANH/LOGISTIC of power-of-two scales and for the
# 8-bit SOFTMAX/LOG_SOFTMAX; elsewhere (HARD_SWISH, LEAKY_RELU, PRELU included) LiteRT's x86 build runs the
# same arithmetic in both.

_ALL = _FLOAT + _QUANTIZED
for _op, _versions, _compute, _quantized, _types in (
    (BuiltinOperator.RELU, (1, 3), _relu, _relu_quantized(BuiltinOperator.RELU), _ALL),
    (BuiltinOperator.RELU6, (1, 3), _relu6, _relu_quantized(BuiltinOperator.RELU6), _ALL),
    (
        BuiltinOperator.RELU_N1_TO_1,
        (1, 1),
        _relu_n1_to_1,
        _relu_quantized(BuiltinOperator.RELU_N1_TO_1),
        _FLOAT + _BYTES,
    ),
    (
        BuiltinOperator.RELU_0_TO_1,
        (1, 1),
        _relu_0_to_1,
        _relu_quantized(BuiltinOperator.RELU_0_TO_1),
        _FLOAT + _BYTES,
    ),
    (
        BuiltinOperator.HARD_SWISH,
        (1, 1),
        _hard_swish,
        lambda i, o, _x86: table_kernel(_hard_swish_table(i, o), _DTYPES[i.type]),
        _FLOAT + _BYTES,
    ),
    (BuiltinOperator.ELU, (1, 1), _elu, _elu_quantized, (*_FLOAT, _I8)),
):
    _unary_kernel(_op, _versions, _compute, _quantized, _types)

for _reference in (False, True):
    _unary_kernel(
        BuiltinOperator.TANH,
        (1, 3),
        _tanh,
        _tanh_logistic_quantized(BuiltinOperator.TANH, _reference),
        _ALL,
        _reference,
    )
    _unary_kernel(
        BuiltinOperator.LOGISTIC,
        (1, 3),
        _logistic,
        _tanh_logistic_quantized(BuiltinOperator.LOGISTIC, _reference),
        _ALL,
        _reference,
    )
    register_builtin(
        BuiltinOperator.SOFTMAX,
        (1, 4),
        types=_ALL,
        reference=_reference,
        prepare=_softmax_prepare(_reference),
        invoke=nonempty_invoke,
    )
    register_builtin(
        BuiltinOperator.LOG_SOFTMAX,
        (1, 2),
        types=_FLOAT + _BYTES,
        reference=_reference,
        prepare=_log_softmax_prepare(_reference),
        invoke=nonempty_invoke,
    )

register_builtin(
    BuiltinOperator.LEAKY_RELU, (1, 2), types=_ALL, prepare=leaky_relu_prepare, invoke=alpha_invoke
)
register_builtin(BuiltinOperator.PRELU, (1, 1), types=_ALL, prepare=prelu_prepare, invoke=alpha_invoke)
register_builtin(BuiltinOperator.GELU, (1, 3), types=_ALL, prepare=gelu_prepare, invoke=compute_invoke)
register_builtin(
    BuiltinOperator.L2_NORMALIZATION,
    (1, 2),
    types=_FLOAT + _BYTES,
    prepare=l2_normalization_prepare,
    invoke=nonempty_invoke,
)
register_builtin(
    BuiltinOperator.LOCAL_RESPONSE_NORMALIZATION,
    (1, 1),
    types=_FLOAT,
    prepare=local_response_norm_prepare,
    invoke=local_response_norm_invoke,
)

"""Activation functions and normalizations (float32).

RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, TANH, LOGISTIC, HARD_SWISH, ELU, LEAKY_RELU, PRELU, GELU, SOFTMAX,
LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION.

Every kernel is a short chain of ufuncs writing into the output (or into a few scratch arrays when the
chain needs them), with constants held as 0-d float32 arrays (the cheapest scalar operand for a ufunc).
Long chains run block by block (_blockwise) so their scratch arrays stay in the CPU cache.
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

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import (
    broadcast_shape,
    check_arity,
    input_tensor,
    is_constant,
    output_tensor,
    reject_quantized,
)
from .registry import register_builtin

_FLOAT = (TensorType.FLOAT32,)

try:  # the clip ufunc itself: np.clip's Python wrapper costs more than the work on small tensors
    from numpy._core.umath import clip as _clip
except ImportError:  # NumPy 1.x
    from numpy.core.umath import clip as _clip


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


def _quiet(compute: Callable) -> Callable:
    """`compute` without NumPy's RuntimeWarnings: infinities and overflow give inf/NaN, as in TFLite."""

    def run(*args):
        with np.errstate(all="ignore"):
            compute(*args)

    return run


def _unary_kernel(op: BuiltinOperator, versions: tuple[int, int], compute: Callable) -> None:
    """Register a one-input float32 op whose output is `compute(x, out)`."""

    def invoke(context, node):
        tensors = context.tensors
        compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)

    register_builtin(op, versions, types=_FLOAT, prepare=_same_shape_prepare(op.name), invoke=invoke)


# ---- ReLU family, HARD_SWISH, ELU, TANH, LOGISTIC ------------------------------------------------------
# TFLite clamps with comparisons that let NaN through; so does clip.


def _relu(x, out):
    _clip(x, _ZERO, _INF, out=out)


def _relu6(x, out):
    _clip(x, _ZERO, _SIX, out=out)


def _relu_n1_to_1(x, out):
    _clip(x, _MINUS_ONE, _ONE, out=out)


def _relu_0_to_1(x, out):
    _clip(x, _ZERO, _ONE, out=out)


_ONE_SIXTH = _f32(1.0 / 6.0)


def _hard_swish_block(x, out):
    # x * min(6, max(0, x + 3)) / 6. TFLite's x86 build runs the kernel's NEON loop (through SSE) on
    # blocks of 4, computing (x * (1/6)) * clamp, and its scalar loop on the last size % 4 elements,
    # computing (x * clamp) * (1/6): the two round differently and overflow differently near the top of
    # the float range, so both are reproduced.
    np.add(x, _THREE, out=out)
    _clip(out, _ZERO, _SIX, out=out)
    size = out.size
    tail = size % 4
    if tail:
        tail_values = x.flat[size - tail :] * out.flat[size - tail :]
        tail_values *= _ONE_SIXTH
    out *= np.multiply(x, _ONE_SIXTH)
    if tail:
        out.flat[size - tail :] = tail_values


_hard_swish = _quiet(_blockwise(_hard_swish_block))


def _elu(x, out):
    # x for x >= 0, expm1(x) below: expm1(min(x, 0)) is 0 where x >= 0 and exceeds x where x < 0
    _clip(x, _MINUS_INF, _ZERO, out=out)
    np.expm1(out, out=out)
    np.maximum(out, x, out=out)


def _tanh(x, out):
    np.tanh(x, out=out)


# Above this exp(x)/(1 + exp(x)) rounds to 1 (TFLite clamps its exp argument at the same point).
_LOGISTIC_HIGHEST = _f32(16.6355324)


def _logistic_block(x, out):
    # e / (1 + e) with e = exp(x): accurate for negative x down to the denormals, 1 above the clamp
    _clip(x, _MINUS_INF, _LOGISTIC_HIGHEST, out=out)
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

    return _quiet(compute)


@_quiet
def _split_scale(x, alpha, out):
    _clip(x, _MINUS_INF, _ZERO, out=out)
    out *= alpha
    out += _clip(x, _ZERO, _INF)


@_quiet
def _select_above(x, alpha, out):
    np.multiply(x, alpha, out=out)
    np.copyto(out, x, where=x > _ZERO)


@_quiet
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
    alpha: np.ndarray | None  # LEAKY_RELU: its 0-d float32 alpha; PRELU: None (alpha is input 1)
    compute: Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def leaky_relu_prepare(context, node):
    _same_shape_prepare("LEAKY_RELU")(context, node)
    alpha = _f32(node.builtin_data.alpha)
    node.user_data = AlphaData(alpha, _alpha_compute(alpha, _select_above))


def leaky_relu_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    data.compute(tensors[node.inputs[0]].data, data.alpha, tensors[node.outputs[0]].data)


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
    node.user_data = AlphaData(None, _alpha_compute(known, _select_at_or_above))
    context.resize_tensor(output, shape)


def prelu_invoke(context, node):
    tensors = context.tensors
    node.user_data.compute(
        tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, tensors[node.outputs[0]].data
    )


# ---- GELU --------------------------------------------------------------------------------------------

_GELU_CUBE = _f32(0.044715)
_GELU_SQRT_2_OVER_PI = _f32(np.sqrt(2.0 / np.pi))
_HALF = _f32(0.5)
# Eigen's float tanh, which TFLite's GELU uses: clamp to +-c (c: the smallest argument where the
# approximation is exactly 1 when multiply-adds are not fused), then (x + x^3 P(x^2)) / Q(x^2), P and Q
# by Horner, highest power first.
_TANH_CLAMP = _f32(7.90738964080810547)
_TANH_P = tuple(map(_f32, (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1)))
_TANH_Q = tuple(map(_f32, (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0)))


def _horner(coefficients: tuple[np.ndarray, ...], x: np.ndarray) -> np.ndarray:
    """sum c_k x^(n-k), highest power first, by unfused multiply-adds in x's type."""
    result = np.multiply(x, coefficients[0])
    for coefficient in coefficients[1:-1]:
        result += coefficient
        result *= x
    result += coefficients[-1]
    return result


def _gelu_tanh_block(x, out):
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) in TFLite's float32 operation order."""
    flat = x.reshape(-1)  # (a 0-d x would give NumPy scalars, which cannot be updated in place)
    z = np.multiply(flat, flat)
    z *= flat
    z *= _GELU_CUBE
    z += flat
    z *= _GELU_SQRT_2_OVER_PI
    _clip(z, -_TANH_CLAMP, _TANH_CLAMP, out=z)
    z2 = np.multiply(z, z)
    p, q = _horner(_TANH_P, z2), _horner(_TANH_Q, z2)
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


def _gelu_erf_block(x, out):
    """x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2)), computed as relu(x) - |x| Q(|x|)."""
    a = np.abs(x.reshape(-1))
    _clip(a, _ZERO, _GELU_A_MAX, out=a)
    powers = np.empty((9, a.size), np.float32)
    t = powers[0]
    np.add(a, _GELU_T_SCALE, out=t)
    np.divide(_GELU_T_SCALE, t, out=t)
    np.multiply(t, t, out=powers[1])
    for k in range(2, 9):
        np.multiply(powers[k - 1], t, out=powers[k])
    tail = _GELU_Q.dot(powers)  # Q(a) exp(a^2/2)
    gauss = np.multiply(a, a, dtype=np.float64)  # exact a^2: a rounded one errs by a^2/2 ulps after exp
    gauss *= -0.5
    np.exp(gauss, out=gauss)
    np.multiply(tail, gauss, out=tail)
    tail *= a
    # relu(x) as x - min(x, 0), so that -inf gives NaN as TFLite's 0.5*x*erfc(...) does
    _clip(x, _MINUS_INF, _ZERO, out=out)
    np.subtract(x, out, out=out)
    out -= tail.reshape(out.shape)


_gelu_tanh = _blockwise(_gelu_tanh_block)
_gelu_erf = _blockwise(_gelu_erf_block, 16384)


def gelu_prepare(context, node):
    _same_shape_prepare("GELU")(context, node)
    node.user_data = _gelu_tanh if node.builtin_data.approximate else _gelu_erf


def gelu_invoke(context, node):
    tensors = context.tensors
    with np.errstate(all="ignore"):  # huge inputs overflow x^3; the results stay as TFLite's
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


@_quiet
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


@_quiet
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
    with np.errstate(all="ignore"):  # huge inputs overflow the sum of squares to inf, as in TFLite
        squares = np.multiply(x, x)
        # the squares added one after another in float32, as TFLite's loop does
        norm = np.add.accumulate(squares, axis=-1, out=squares)[..., -1:]
        np.sqrt(norm, out=norm)
        np.maximum(norm, _L2_EPSILON, out=norm)
        np.divide(x, norm, out=out)


# ---- LOCAL_RESPONSE_NORMALIZATION --------------------------------------------------------------------


@dataclass(frozen=True)
class LocalResponseNormData:
    radius: int
    bias: np.ndarray  # 0-d float32
    alpha: np.ndarray  # 0-d float32
    beta: float
    exponent: np.ndarray  # 0-d float32: -beta


def local_response_norm_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_eq(len(source.shape), 4, "NumDimensions(input)")
    _check_float(source, "input", "LOCAL_RESPONSE_NORMALIZATION")
    ensure_types_eq(source, output, "LOCAL_RESPONSE_NORMALIZATION input/output types")
    options = node.builtin_data
    if options.radius < 0:  # TFLite corrupts its heap on this
        raise KernelError(f"LOCAL_RESPONSE_NORMALIZATION radius {options.radius} is negative")
    beta = float(np.float32(options.beta))
    node.user_data = LocalResponseNormData(
        int(options.radius), _f32(options.bias), _f32(options.alpha), beta, _f32(-beta)
    )
    context.resize_tensor(output, source.shape)


def local_response_norm_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if out.size == 0:
        return
    data = node.user_data
    radius, depth = data.radius, x.shape[-1]
    rows = x.reshape(-1, depth)
    with np.errstate(all="ignore"):
        # TFLite keeps a running float32 window sum over alpha*x^2 padded with `radius` zeros each side:
        # it adds the 2*radius first padded squares, then per channel adds the square entering the window,
        # reads the sum, and subtracts the square leaving it. One sequential accumulation over that exact
        # sequence of operands reproduces every rounding.
        padded = np.zeros((rows.shape[0], depth + 2 * radius), np.float32)
        inner = padded[:, radius : radius + depth]
        np.multiply(rows, rows, out=inner)
        inner *= data.alpha
        sequence = np.empty((rows.shape[0], 2 * radius + 2 * depth), np.float32)
        sequence[:, : 2 * radius] = padded[:, : 2 * radius]
        sequence[:, 2 * radius :: 2] = padded[:, 2 * radius :]
        np.negative(padded[:, :depth], out=sequence[:, 2 * radius + 1 :: 2])
        np.add.accumulate(sequence, axis=-1, out=sequence)
        scale = sequence[:, 2 * radius :: 2].reshape(x.shape)
        scale += data.bias
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
    BuiltinOperator.LEAKY_RELU, (1, 2), types=_FLOAT, prepare=leaky_relu_prepare, invoke=leaky_relu_invoke
)
register_builtin(BuiltinOperator.PRELU, (1, 1), types=_FLOAT, prepare=prelu_prepare, invoke=prelu_invoke)
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

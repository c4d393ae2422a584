"""GELU, exact (erf) and approximate (tanh): float32 block computations, quantized as tables of TFLite's
float LUTs."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ..common import Computation, clip
from ..jit import compiled, read_only
from ..quant.lut import erfcf, int16_table, populate_8bit, table_kernel, tanhf
from ..registry import register_builtin
from .common import (
    ALL,
    BLOCK,
    BYTES,
    DTYPES,
    FLOAT,
    MINUS_INF,
    ONE,
    QUANTIZED,
    ZERO,
    ActivationData,
    check_unary,
    compute_invoke,
    f32,
    in_blocks,
    unary_calls,
)
from .quantized import F32_ONE, per_tensor_quantization


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


_GELU_CUBE = f32(0.044715)
_GELU_SQRT_2_OVER_PI = f32(np.sqrt(2.0 / np.pi))
_HALF = f32(0.5)
# Eigen's float tanh, which TFLite's GELU uses: clamp to +-c (c: the smallest argument where the
# approximation is exactly 1 when multiply-adds are not fused), then (x + x^3 P(x^2)) / Q(x^2), P and Q
# by Horner, highest power first.
_TANH_CLAMP = f32(7.90738964080810547)
_MINUS_TANH_CLAMP = -_TANH_CLAMP
_TANH_P = tuple(map(f32, (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1)))
_TANH_Q = tuple(map(f32, (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0)))


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
    p += ONE
    np.multiply(x, _HALF, out=out)
    out *= p.reshape(out.shape)


# |x| Q(|x|) = |x| exp(-x^2/2) sum_k GELU_Q[k] t^(k+1), t = 1 / (1 + 0.35 |x|); see the package docstring.
# The polynomial is evaluated in float32 (the powers of t and one matrix-vector product), the Gaussian
# factor in float64 (a float32 x^2 would be off by up to x^2/2 ulps after exp).
GELU_T_SCALE = f32(1.0 / 0.35)
GELU_Q = np.array(
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
GELU_A_MAX = f32(40)  # exp(-x^2/2) is 0 beyond; keeps inf inputs from making inf*0
_MINUS_HALF = np.array(-0.5)  # float64


def _gelu_erf_block(x, out, work: _WorkRows):
    """x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2)), computed as relu(x) - |x| Q(|x|)."""
    table, (a, t, *higher) = work.get(x.size)  # |x|, then the powers of t
    np.absolute(x.reshape(-1), a)
    clip(a, ZERO, GELU_A_MAX, a)
    np.add(a, GELU_T_SCALE, t)
    np.divide(GELU_T_SCALE, t, t)
    previous = t
    for power in higher:
        previous = np.multiply(previous, t, power)
    tail = GELU_Q.dot(table[1:])  # Q(a) exp(a^2/2)
    gauss = a.astype(np.float64)
    gauss *= gauss  # exact a^2: a rounded one errs by a^2/2 ulps after exp
    gauss *= _MINUS_HALF
    np.exp(gauss, out=gauss)
    np.multiply(tail, gauss, out=tail)
    tail *= a
    # relu(x) as x - min(x, 0), so that -inf gives NaN as TFLite's 0.5*x*erfc(...) does
    clip(x, MINUS_INF, ZERO, out=out)
    np.subtract(x, out, out=out)
    out -= tail.reshape(out.shape)


def _gelu(approximate: bool, size: int) -> Callable:
    """GELU of inputs of `size` elements: the exact one compiled (gelu_compiled) where compiled kernels
    run, for contiguous operands."""
    kernel = None if approximate else compiled("activations.gelu_compiled", "gelu_erf")
    if kernel is not None:
        fallback = _gelu_numpy(approximate, size)

        def calls(x, out):
            if not (x.flags.c_contiguous and out.flags.c_contiguous):
                return (partial(fallback, x, out),)
            return (partial(kernel, read_only(x.reshape(-1)), out.reshape(-1)),)

        return Computation(calls)
    return _gelu_numpy(approximate, size)


def _gelu_numpy(approximate: bool, size: int) -> Callable:
    compute, rows, block = (_gelu_tanh_block, 4, BLOCK) if approximate else (_gelu_erf_block, 10, BLOCK // 2)
    work = _WorkRows(rows, size, block)
    return in_blocks(lambda x, out: compute(x, out, work), block)


def gelu_prepare(context, node):
    source, output = check_unary(context, node, "GELU", FLOAT + QUANTIZED)
    approximate = bool(node.builtin_data.approximate)
    if source.type == TensorType.FLOAT32:
        node.user_data = ActivationData(_gelu(approximate, math.prod(source.shape)))
    else:
        node.user_data = ActivationData(_gelu_quantized(source, output, approximate))


# TFLite's constants: float(-M_SQRT1_2), and sqrt(2/pi) as float(M_2_SQRTPI * M_SQRT1_2) in double
_GELU_SQRT_HALF = np.float32(-0.70710678118654752440)
_GELU_K = np.float32(1.12837916709551257390 * 0.70710678118654752440)


def _gelu_transform(approximate: bool) -> Callable:
    if approximate:
        return lambda x: (_HALF * x) * (F32_ONE + tanhf(_GELU_K * (x + _GELU_CUBE * x * x * x)))
    return lambda x: (_HALF * x) * erfcf(x * _GELU_SQRT_HALF)


def _gelu_quantized(source, output, approximate: bool) -> Callable:
    in_scale, in_zero = per_tensor_quantization(source, "input", "GELU")
    out_scale, out_zero = per_tensor_quantization(output, "output", "GELU")
    dtype = DTYPES[source.type]
    transform = _gelu_transform(approximate)
    if source.type in BYTES:
        return table_kernel(populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, dtype), dtype)
    return table_kernel(int16_table(transform, in_scale, in_zero, out_scale, out_zero), dtype)


register_builtin(
    BuiltinOperator.GELU,
    (1, 3),
    types=ALL,
    op_data=ActivationData,
    prepare=gelu_prepare,
    invoke=compute_invoke,
    calls=unary_calls(),
)

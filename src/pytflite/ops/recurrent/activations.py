"""The gate activations: Eigen's float tanh and logistic, bit-exact with LiteRT (the hybrid kernels
requantize their results), faster ones within an ulp or two for the float kernels, and TFLite's
ApplyActivationToVector."""

from __future__ import annotations

import numpy as np

from ...errors import KernelError
from ...model.options import ActivationFunctionType
from ..common import clip
from .common import F32, ONE

_ZERO = F32(0)
_HALF = F32(0.5)
_NEG_INF = F32(-np.inf)

# Eigen's float tanh (TFLite's ApplyTanhToVector, the vector and scalar paths alike): x clamped to +-c,
# then (x + x^3 P(x^2)) / Q(x^2), P and Q by Horner with unfused multiply-adds. Bit-exact with LiteRT.
TANH_CLAMP = F32(7.90738964080810547)
TANH_P = tuple(map(F32, (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1)))
TANH_Q = tuple(map(F32, (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0)))

# Eigen's float logistic (ApplySigmoidToVector). Vector path: e = exp(x/2)^2 with exp by a Cephes range
# reduction and a degree-5 polynomial, then e / (1 + e); the scalar path (elements before the first
# 16-byte aligned one and after the last whole packet of 4) uses std::exp. Both clamp x at the first
# point where the result is 1, and the vector path gives 0 below -104.
LOGISTIC_HIGHEST = F32(16.6355324)
LOGISTIC_LOWEST = F32(-104)
LOG2E = F32(1.44269504088896341)
EXP_C1 = F32(-0.693359375)
EXP_C2 = F32(2.12194440e-4)
EXP_P = tuple(map(F32, (0.49999141693115234375, 0.16666877269744873046875)))
EXP_P += tuple(map(F32, (4.1898667812347412109375e-2, 8.33471305668354034423828125e-3)))


# P padded with a leading 0 (0 * x + c is exactly c: the same Horner steps) to evaluate P and Q stacked,
# one ufunc call per step for both
_TANH_PQ = np.array([(F32(0), *TANH_P), TANH_Q], F32).T[:, :, None]  # [step, 2, 1]


def tanh_into(x, out) -> None:
    z = clip(x, -TANH_CLAMP, TANH_CLAMP).reshape(-1)
    z2 = z * z
    pq = np.multiply(z2, _TANH_PQ[0])  # [2, size]: Horner's scheme on P and Q at once
    for coefficient in _TANH_PQ[1:-1]:
        pq += coefficient
        pq *= z2
    pq += _TANH_PQ[-1]
    p, q = pq
    z2 *= z
    p *= z2
    p += z
    np.divide(p.reshape(x.shape), q.reshape(x.shape), out=out)


def sigmoid_into(x, out, scalar=None) -> None:
    """Eigen's logistic; `scalar`: a boolean mask of the elements TFLite computes on its scalar path."""
    below = x < LOGISTIC_LOWEST
    half = clip(x, _NEG_INF, LOGISTIC_HIGHEST)
    if scalar is not None:
        exact = np.exp(half[scalar].astype(np.float64)).astype(F32)
    half *= _HALF
    m = half * LOG2E
    m += _HALF
    np.floor(m, out=m)
    r = m * EXP_C1
    r += half
    np.multiply(m, EXP_C2, out=half)
    r += half
    r2 = r * r
    even = r2 * EXP_P[2]
    even += EXP_P[0]
    odd = np.multiply(r2, EXP_P[3], out=half)
    odd += EXP_P[1]
    odd *= r
    odd += even
    odd *= r2
    r += ONE
    odd += r
    e = np.ldexp(odd, m.astype(np.int32), out=odd)
    e *= e
    if scalar is not None:
        e[scalar] = exact
    np.add(e, ONE, out=r)
    np.divide(e, r, out=out)
    if below.any():
        out[below & ~scalar if scalar is not None else below] = 0


def fast_sigmoid(x, out, scalar=None) -> None:
    """The logistic within an ulp or two of Eigen's, in four ufunc calls (float kernels, where the
    tolerance allows it; hybrid kernels requantize their results and need Eigen's exact values)."""
    clip(x, _NEG_INF, LOGISTIC_HIGHEST, out=out)
    np.exp(out, out=out)
    np.divide(out, out + ONE, out=out)


def fast_tanh(x, out) -> None:
    np.tanh(x, out=out)


def activation_function(activation, tanh=tanh_into):
    """TFLite's ApplyActivationToVector as a function (x, out); None for NONE, which leaves `out`
    unwritten (as TFLite does)."""
    if activation == ActivationFunctionType.NONE:
        return None
    if activation == ActivationFunctionType.RELU:
        return lambda x, out: np.maximum(x, _ZERO, out=out)
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return lambda x, out: clip(x, F32(-1), ONE, out=out)
    if activation == ActivationFunctionType.RELU6:
        return lambda x, out: clip(x, _ZERO, F32(6), out=out)
    if activation == ActivationFunctionType.TANH:
        return np.tanh if tanh is fast_tanh else tanh  # the ufunc takes `out` positionally
    if activation == ActivationFunctionType.SIGN_BIT:
        return lambda x, out: np.copyto(out, np.signbit(x))
    raise KernelError(f"Unsupported fused activation {activation!r}")

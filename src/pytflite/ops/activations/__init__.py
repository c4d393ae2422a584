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

Modules: relu.py (RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1), hard_swish.py, elu.py, tanh_logistic.py (TANH,
LOGISTIC), leaky_relu.py, prelu.py, gelu.py, softmax.py, log_softmax.py, l2_normalization.py and
local_response_norm.py register the kernels; alpha.py holds what LEAKY_RELU and PRELU share,
softmax_common.py what the 8-bit SOFTMAX and LOG_SOFTMAX share; common.py the element types, constants,
one-input checks, the op data (ActivationData) and invokes; quantized.py the quantization parameters and
fixed-point helpers.
"""

# BUILTIN_REF differs from the default kernels for int16 TANH/LOGISTIC of power-of-two scales and for the
# 8-bit SOFTMAX/LOG_SOFTMAX; elsewhere (HARD_SWISH, LEAKY_RELU, PRELU included) LiteRT's x86 build runs the
# same arithmetic in both.
from . import (  # noqa: F401  (importing them registers their kernels)
    elu,
    gelu,
    hard_swish,
    l2_normalization,
    leaky_relu,
    local_response_norm,
    log_softmax,
    prelu,
    relu,
    softmax,
    tanh_logistic,
)

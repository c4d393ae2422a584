"""Reductions over axes: MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL, ARG_MAX, ARG_MIN, CUMSUM, TOPK_V2.

The axis tensor (int32, negative values count from the end, duplicates ignored) is resolved in prepare
when it is constant; a computed axis makes the output dynamic and is resolved at invoke. keep_dims keeps
reduced dimensions as 1. Integer MEAN divides the int64 sum truncating toward zero, as TFLite does;
MAX/MIN of an empty slice give the type's lowest/highest value, not an error. REDUCE_MAX/MIN (and
REDUCE_PROD of unquantized int8/int16) of uint8/int8/int16 pass raw values through: input and output must
share their scale and zero point (and int16 zero points be 0), as TFLite checks.

Quantized MEAN, SUM and REDUCE_PROD requantize (quantized.py):
MEAN by TFLite's integer QuantizedMeanOrSum, or, for a 4-D int8/uint8 input reduced over [1, 2] with
keep_dims, by its optimized kernel (per-channel sums, the scale folded into one multiplier, SIMD blocks
of 16 channels rounding halves up), either tabulated in prepare over every reachable int32 sum when
there are few (invoke then sums and looks up); SUM by the optimized kernel's float arithmetic;
REDUCE_PROD one requantizing multiplication per element, in memory order. BUILTIN_REF's MEAN always takes the integer
path, and its SUM is TFLite's reference code, which reads the input bytes as uint8.

ARG_MAX/ARG_MIN pick the first index among ties and skip NaNs (an all-NaN slice gives 0); along the
innermost axis TFLite's row kernel treats NaNs in its own way, which _innermost_nan_arg reproduces.
Quantized inputs are compared raw. CUMSUM adds sequentially in the input's type (exclusive: the running
sum before each element; reverse: from the end). TOPK_V2 sorts each last-axis row descending, ties by
lower index, NaNs last.

Modules: reducers.py (MEAN, SUM, REDUCE_*; their quantized arithmetic in quantized.py), arg.py
(ARG_MAX, ARG_MIN), cumsum.py, topk.py; common.py what they share.
"""

from . import arg, cumsum, reducers, topk  # noqa: F401  (importing them registers their kernels)

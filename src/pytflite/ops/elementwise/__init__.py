"""Elementwise binary ops with broadcasting: arithmetic, comparisons, logical and bitwise ops.

ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD, ATAN2, ADD_N,
BITWISE_XOR, RIGHT_SHIFT; EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL; LOGICAL_AND,
LOGICAL_OR, LOGICAL_NOT.

Prepare checks types, computes the broadcast output shape and picks the compute function (usually a bare
NumPy ufunc) and the clamp; invoke is that one call into the preallocated output, then the clamp.

TFLite's float arithmetic kernels always clamp to the fused activation's range, and with no activation
that range is [lowest, max] of the type: an overflow gives +-FLT_MAX, not +-inf (NaN stays NaN).
Integer arithmetic wraps. MAXIMUM/MINIMUM pick `a > b ? a : b` / `a < b ? a : b`, so a NaN in the first
input yields the second input and a NaN in the second yields NaN. Comparisons of int8/uint8 (and of
quantized int16 for EQUAL/NOT_EQUAL) compare the inputs rescaled to a common fixed-point scale, as
TFLite does. MAXIMUM/MINIMUM, FLOOR_DIV and FLOOR_MOD treat int8/uint8/int16 as plain integers, whatever
their quantization (so does TFLite). Quantized ADD, SUB, MUL, DIV and SQUARED_DIFFERENCE requantize
bit-exactly as TFLite's kernels do, including the SIMD blocks of its optimized ADD and MUL (see
quantized.py); BUILTIN_REF gets their scalar reference kernels.

Modules: arithmetic.py (ADD, SUB, MUL, DIV), minmax.py (MAXIMUM, MINIMUM), power.py (POW),
squared_difference.py, floor_division.py (FLOOR_DIV, FLOOR_MOD), atan2.py, add_n.py, bitwise.py
(BITWISE_XOR, RIGHT_SHIFT), compare.py (the six comparisons) and logical.py register the kernels.
binary.py holds BinaryOp (the op as a prepare describes it), the runner built from it and BinaryData, the
op data holding the runner invoke calls; common.py the shared prepare checks, output shape and activation
bounds; widened.py the faster per-channel broadcast. The quantized arithmetic: quantized.py (prepare and
the lookup runner), quant_params.py (TFLite's ArithmeticParams), formulas.py (the output per code path),
fidelity/simd_paths.py (which code path computes each element) and requantize.py (the integer rounding).
"""

from . import (  # noqa: F401  (importing them registers their kernels)
    add_n,
    arithmetic,
    atan2,
    bitwise,
    compare,
    floor_division,
    logical,
    minmax,
    power,
    squared_difference,
)

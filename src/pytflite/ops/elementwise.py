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
bit-exactly as TFLite's kernels do, including the SIMD blocks of its optimized ADD and MUL (see the
"quantized arithmetic" section); BUILTIN_REF gets their scalar reference kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.types import BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import broadcast_shape, check_arity, clip, input_tensor, is_constant, output_tensor
from .quant.fixed_point import (
    activation_range,
    float_to_int32,
    quantize_multiplier,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap,
)
from .quant.neon import saturate, vshl
from .registry import register_builtin

T = TensorType
_NUMERIC = (T.FLOAT32, T.INT32, T.INT64)
_QUANTIZED = (T.INT8, T.UINT8, T.INT16)
_BITWISE = (T.UINT8, T.INT8, T.UINT16, T.INT16, T.UINT32, T.INT32)
# TFLite's generic broadcast loop handles at most this many dimensions (it aborts beyond).
_MAX_BROADCAST_RANK = 8


@dataclass(frozen=True)
class BinaryOpData:
    """What invoke computes: ufunc(first, second, out=output), then the clamp to [low, high] if low is set.

    Prepare describes the op with this; _finish_prepare then turns it into the runner invoke calls."""

    ufunc: Callable[..., Any]
    low: Any = None
    high: Any = None
    # ufunc is elementwise in its two inputs (as any np.ufunc is): inputs that broadcast may be expanded
    elementwise: bool = False


def binary_invoke(context, node):
    tensors = context.tensors
    node.user_data(tensors, node.inputs, tensors[node.outputs[0]].data)


def _noop(first, second, out):
    """Invoke of a node whose output was computed once in prepare."""


def _run_nothing(tensors, inputs, out):
    """The runner of a node whose output was computed once in prepare."""


# Up to this many output elements, an input that broadcasts is first expanded to the output's shape: a
# constant once in prepare, a computed input by one copy into a scratch array per call. NumPy's broadcasting
# loop costs 0.3-0.5 us more per call than a same-shape loop (and than the copy).
_EXPANDED_LIMIT = 16384


def _runner(context, node, data: BinaryOpData) -> Callable[[list, tuple, np.ndarray], None]:
    """The function invoke calls with (tensors, node.inputs, output array) for this BinaryOpData.

    A plain ufunc on a small output gets its broadcasting inputs expanded (see _EXPANDED_LIMIT). A
    one-element output with a clamp is computed into a scratch element and clamped into the output:
    NumPy's in-place operations on one-element arrays take a slow path (about 0.5 us more)."""
    compute, low, high = data.ufunc, data.low, data.high
    if compute is _noop:
        return _run_nothing
    tensors = context.tensors
    output = tensors[node.outputs[0]]
    shape = tuple(output.shape)
    total = math.prod(shape)
    constants: list[np.ndarray | None] = [None, None]  # an input expanded once, here
    buffers: list[np.ndarray | None] = [None, None]  # where an input is expanded at each call
    if (data.elementwise or isinstance(compute, np.ufunc)) and 1 < total <= _EXPANDED_LIMIT:
        for i in (0, 1):
            tensor = tensors[node.inputs[i]]
            if tuple(tensor.shape) == shape:
                continue
            if is_constant(tensor) and tensor.data is not None:
                constants[i] = np.ascontiguousarray(np.broadcast_to(tensor.data, shape))
            elif math.prod(tensor.shape) > 1:  # (a single value broadcasts at full speed)
                buffers[i] = np.empty(shape, tensor.dtype)
    if any(x is not None for x in (*constants, *buffers)):
        return _expanding_runner(compute, low, high, constants, buffers)
    if low is None:

        def run(tensors, inputs, out):
            compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)

        return run
    if total == 1:
        scratch = np.empty(shape, output.dtype)

        def run_one(tensors, inputs, out):
            compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out=scratch)
            clip(scratch, low, high, out)

        return run_one

    def run_clamped(tensors, inputs, out):
        compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)
        clip(out, low, high, out)

    return run_clamped


def _expanded(x: np.ndarray, buffer: np.ndarray | None) -> np.ndarray:
    """`x` copied into its output-shaped buffer, or `x` itself when it has none (it needs no expanding)."""
    if buffer is None:
        return x
    buffer[...] = x
    return buffer


def _expanding_runner(compute, low, high, constants, buffers) -> Callable:
    first, second = constants
    first_buffer, second_buffer = buffers

    def run(tensors, inputs, out):
        a = first if first is not None else _expanded(tensors[inputs[0]].data, first_buffer)
        b = second if second is not None else _expanded(tensors[inputs[1]].data, second_buffer)
        compute(a, b, out=out)
        if low is not None:
            clip(out, low, high, out)

    return run


def _finish_prepare(prepare: Callable) -> Callable:
    """`prepare`, which leaves a BinaryOpData in node.user_data, followed by building its runner."""

    def run_prepare(context, node):
        status = prepare(context, node)
        data = node.user_data
        if isinstance(data, BinaryOpData):
            node.user_data = _runner(context, node, data)
        return status

    return run_prepare


# --- shared prepare helpers ----------------------------------------------------------------------------


def _binary_tensors(context, node, op_name: str, same_output_type: bool = True):
    check_arity(node, 2)
    first, second = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_types_eq(first, second, f"{op_name} input types")
    if same_output_type:
        ensure_types_eq(first, output, f"{op_name} input/output types")
    return first, second, output


def _output_shape(first, second, op_name: str, capped: bool = True) -> tuple[int, ...]:
    """The broadcast shape; TFLite's broadcast loop (used when the shapes differ) stops at 8 dims."""
    shape = broadcast_shape(first.shape, second.shape)
    if capped and first.shape != second.shape and len(shape) > _MAX_BROADCAST_RANK:
        raise KernelError(
            f"{op_name} broadcasts at most {_MAX_BROADCAST_RANK} dimensions, got {len(shape)} "
            f"([{','.join(map(str, first.shape))}] and [{','.join(map(str, second.shape))}])."
        )
    return shape


def _activation(node) -> ActivationFunctionType:
    value = getattr(node.builtin_data, "fused_activation_function", None)
    return ActivationFunctionType(value) if value is not None else ActivationFunctionType.NONE


def _activation_bounds(activation: ActivationFunctionType, dtype: np.dtype) -> tuple[Any, Any]:
    """TFLite's CalculateActivationRange for an element type as (low, high), or (None, None) when the
    clamp is a no-op. Floats always clamp: no activation means [lowest, max], so +-inf becomes +-max."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return None, None
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    low, high = info.min, info.max
    if activation == ActivationFunctionType.RELU:
        low = 0
    elif activation == ActivationFunctionType.RELU6:
        low, high = 0, 6
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        low, high = -1, 1
    if dtype.kind != "f" and (low, high) == (info.min, info.max):
        return None, None
    # C conversion semantics: -1 as an unsigned type wraps (TFLite's uint32 RELU_N1_TO_1 clamps to 1).
    # 0-d arrays: a ufunc converts a NumPy scalar operand to an array at every call (~0.3 us).
    return np.array(low).astype(dtype), np.array(high).astype(dtype)


def _fold_constants(context, node, output, shape, data: BinaryOpData) -> BinaryOpData:
    """Both inputs constant: compute once now into a persistent read-only output (TFLite's MUL does)."""
    context.set_tensor_to_persistent_ro(output)
    context.resize_tensor(output, shape)
    tensors = context.tensors
    _runner(context, node, data)(tensors, node.inputs, output.data)
    return BinaryOpData(_noop)


# Rows this wide keep NumPy's inner loop long when one operand repeats along the leading dimensions.
_WIDE_ROW = 8192


def _widened(ufunc: np.ufunc, first, second, shape: tuple[int, ...]) -> Callable[..., Any]:
    """`ufunc`, or a faster equivalent for a per-channel broadcast: one operand has the output's shape,
    the other its trailing dimensions (say [C] against [N,H,W,C]). NumPy loops over rows of only C
    elements there; viewing the output as rows of C*k elements against the small operand tiled k times
    (once in prepare when it is constant) computes the same values several times faster."""
    total = math.prod(shape)
    if total < 2 * _WIDE_ROW or first.dtype.kind not in "biufc":
        return ufunc
    if first.shape == shape and _is_trailing(second.shape, shape):
        small, small_first = second, False
    elif second.shape == shape and _is_trailing(first.shape, shape):
        small, small_first = first, True
    else:
        return ufunc
    inner = math.prod(small.shape)
    if inner >= _WIDE_ROW // 4:
        return ufunc
    rows = total // inner
    repeat = max(k for k in range(1, _WIDE_ROW // inner + 1) if rows % k == 0)
    if repeat == 1:
        return ufunc
    wide = (rows // repeat, inner * repeat)
    tiled = np.tile(small.data.reshape(-1), repeat) if is_constant(small) else None

    def compute(a, b, out):
        row = tiled if tiled is not None else np.tile((a if small_first else b).reshape(-1), repeat)
        if small_first:
            ufunc(row, b.reshape(wide), out=out.reshape(wide))
        else:
            ufunc(a.reshape(wide), row, out=out.reshape(wide))

    return compute


def _is_trailing(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """`small` without its leading 1s is a proper suffix of `shape` (and so broadcasts along the rest)."""
    start = 0
    while start < len(small) and small[start] == 1:
        start += 1
    core = small[start:]
    return 0 < len(core) < len(shape) and tuple(shape[len(shape) - len(core) :]) == core


# --- quantized arithmetic: ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE on int8 / uint8 / int16 ----------------
#
# TFLite rescales each quantized input to a common fixed-point scale, combines, and requantizes to the
# output (ArithmeticParams: offsets, multipliers, shifts, clamp). Its optimized ADD and MUL (what LiteRT's
# BuiltinOpResolver runs; on x86 the NEON code through an SSE translation) compute whole SIMD blocks of
# 8 or 16 elements differently from the scalar code that finishes each row: the input shift is applied
# before the multiply (one rounding instead of two) or as a flooring vshl after it, and the 8-bit
# kernels narrow through int16 lanes that saturate or wrap. (vqrdmulh itself equals the scalar
# SaturatingRoundingDoublingHighMul: both round the high half up.)
# Which elements a SIMD block computes follows TFLite's broadcast walk (_broadcast_walk): the whole flat
# array when the shapes match; each innermost row of the "fivefold" broadcast pattern; and the generic
# broadcast falls back to the scalar reference loop. The reference kernels (BUILTIN_REF) are scalar
# throughout. SUB, DIV, SQUARED_DIFFERENCE and int16 MUL are scalar in both.
#
# Every output element is a function of its two input values and of the code path that computed it, so
# for 8-bit inputs prepare tabulates that function over all 256 x 256 input pairs, once per path, and
# invoke is a table lookup. For int16 inputs the per-input rescaling is tabulated over the 65536 values
# where the formula separates (_Separable), and the rest computed in int64 NumPy arithmetic.

_SCALAR, _BLOCK, _BROADCAST_BLOCK = "scalar", "block", "broadcast block"
# Outputs up to this many elements keep their int64 index buffer between calls.
_INDEX_BUFFER_LIMIT = 16384
_TYPE_RANGE = {T.INT8: (-128, 127), T.UINT8: (0, 255), T.INT16: (-32768, 32767)}


def _broadcast_walk(shape1, shape2) -> tuple[str, tuple[int, ...] | None]:
    """TFLite's ProcessBroadcastShapes: ("elementwise", None) when the shapes match (up to leading 1s),
    ("fivefold", (y0, y1, y2, y3, y4)) when the output is the nested loops y0 > y1 > y2 > y3 > y4 with
    contiguous rows of y4 elements (y4 == 1: rows of y3 against one broadcast value), else ("generic",
    None)."""
    rank = max(len(shape1), len(shape2))
    a = (1,) * (rank - len(shape1)) + tuple(shape1)
    b = (1,) * (rank - len(shape2)) + tuple(shape2)
    if a == b:
        return "elementwise", None
    i = rank - 1
    while a[i] == b[i]:
        i -= 1
    if a[i] != 1:  # the second input broadcasts along the innermost differing dimension: swap
        a, b = b, a
    y = [1, 1, 1, 1, 1]
    i = rank - 1
    for slot, same in ((4, True), (3, None), (2, True), (1, False), (0, True)):
        while i >= 0 and (a[i] == b[i] if same else (a[i] == 1 if same is None else b[i] == 1)):
            y[slot] *= max(a[i], b[i])
            i -= 1
    return ("generic", None) if i >= 0 else ("fivefold", tuple(y))


def _path_groups(walk, size: int, block: int, broadcast_block: int) -> list[tuple[str, np.ndarray | None]]:
    """Which code path computes each output element: [(path, None)] when one path computes them all, else
    the main path and (path, flat positions) for the others (the scalar tails of the SIMD rows).
    `block` / `broadcast_block`: the SIMD widths of the elementwise and the scalar-broadcast loops (0:
    none)."""
    kind, y = walk
    if kind == "elementwise":
        row, step, simd = size, block, _BLOCK
    elif kind == "fivefold" and y[4] > 1:
        row, step, simd = y[4], block, _BLOCK
    elif kind == "fivefold":
        row, step, simd = y[3], broadcast_block, _BROADCAST_BLOCK
    else:
        return [(_SCALAR, None)]
    whole = row - row % step if step else 0
    if whole == 0 or size == 0:
        return [(_SCALAR, None)]
    if whole == row:
        return [(simd, None)]
    return [(simd, None), (_SCALAR, np.flatnonzero(np.arange(size) % row >= whole))]


def _divide_by_pot_x86(x: np.ndarray, exponent) -> np.ndarray:
    """gemmlowp's scalar RoundingDivideByPOT on int32 values for any exponent, as x86 code computes it:
    exponents outside [0, 31] (which TFLite's DIV and SUB can produce) shift by their low 6 bits for the
    int64 mask and by their low 5 bits for the int32 shift. Used on every host: AArch64's shifts by a
    register also take the count mod 64 (X registers) and mod 32 (W registers); armv7's, which give 0 or
    the sign from 32 on, are not reproduced."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = _wrap32((np.int64(1) << (exponent & 63)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (exponent & 31)) + ((x & mask) > threshold)


def _mbqm_smaller_than_one(x: np.ndarray, multiplier: int, shift) -> np.ndarray:
    """MultiplyByQuantizedMultiplierSmallerThanOneExp: no left shift, whatever the sign of `shift`."""
    return _divide_by_pot_x86(saturating_rounding_doubling_high_mul(x, multiplier), -np.asarray(shift))


def _mbqm_smaller_than_one_vectorized(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """The same in the compiler-vectorized int16 SUB loop (4 lanes): a right shift by a count outside
    [0, 31] fills with the sign bit (psrad) where the scalar instruction masks the count."""
    exponent = -shift
    if 0 <= exponent <= 31:
        return _mbqm_smaller_than_one(x, multiplier, shift)
    x = saturating_rounding_doubling_high_mul(x, multiplier)
    mask = int(_wrap32((1 << (exponent & 63)) - 1))
    threshold = (mask >> 1) + (x < 0)
    return (x >> 31) + ((x & mask) > threshold)


def _clamp(x: np.ndarray, low: int, high: int, simd: bool) -> np.ndarray:
    """The activation clamp: scalar code is min(high, max(low, x)), NEON max(low, min(high, x)) (they
    would differ only for an empty activation range)."""
    if simd:
        return np.maximum(np.minimum(x, high), low)
    return np.minimum(np.maximum(x, low), high)


@dataclass(frozen=True)
class _Rescale:
    """One input's (or the output's) part of TFLite's ArithmeticParams."""

    offset: int
    multiplier: int
    shift: int


@dataclass(frozen=True)
class _QuantParams:
    first: _Rescale
    second: _Rescale
    output: _Rescale
    left_shift: int
    low: int  # the activation clamp
    high: int


def _scale(tensor) -> float:
    return float(np.float32(tensor.params.scale))


def _check_scales(op_name: str, *tensors) -> None:
    for tensor in tensors:
        scale = tensor.params.scale
        ensure(
            scale > 0 and math.isfinite(scale),
            f"{op_name} of quantized {type_name(tensor.type)} tensors needs a positive scale, got {scale}.",
        )


def _check_zero_points(op_name: str, tensor_type, *tensors) -> None:
    low, high = _TYPE_RANGE[tensor_type]
    if tensor_type == T.INT16:
        for tensor in tensors:
            ensure_eq(tensor.params.zero_point, 0, f"{op_name} int16 zero point")
        return
    for tensor in tensors:
        zero_point = tensor.params.zero_point
        ensure(
            low <= zero_point <= high,
            f"{op_name} zero point {zero_point} is outside the {type_name(tensor_type)} range.",
        )


def _smaller_than_one(real: float, what: str) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp, which aborts the process outside (0, 1) in TFLite."""
    ensure(0.0 < real < 1.0, f"{what} {real} is outside (0, 1): TFLite cannot requantize this.")
    return quantize_multiplier(real)


def _activation_limits(node, output, op_name: str) -> tuple[int, int]:
    low, high = _TYPE_RANGE[output.type]
    try:
        return activation_range(_activation(node), output.params.scale, output.params.zero_point, low, high)
    except OverflowError:
        raise KernelError("no_integer_overflow_from_quantization was not true.") from None


def _add_sub_params(node, first, second, output, op_name: str) -> _QuantParams:
    """PrepareGeneralSubOp / add.cc's general path: both inputs onto twice the larger input scale after a
    left shift of 20 (8-bit) or 15 (int16), then the output multiplier."""
    left_shift = 15 if output.type == T.INT16 else 20
    s1, s2, so = _scale(first), _scale(second), _scale(output)
    twice = 2 * max(s1, s2)
    real_output = twice / float(np.float32(1 << left_shift) * np.float32(so))
    m1, h1 = _smaller_than_one(s1 / twice, f"{op_name} input1 multiplier")
    m2, h2 = _smaller_than_one(s2 / twice, f"{op_name} input2 multiplier")
    if op_name == "SUB" and real_output > 1:  # then applied as if smaller than one: see _divide_by_pot_x86
        mo, ho = quantize_multiplier(real_output)
    else:
        mo, ho = _smaller_than_one(real_output, f"{op_name} output multiplier")
    low, high = _activation_limits(node, output, op_name)
    return _QuantParams(
        _Rescale(-first.params.zero_point, m1, h1),
        _Rescale(-second.params.zero_point, m2, h2),
        _Rescale(output.params.zero_point, mo, ho),
        left_shift,
        low,
        high,
    )


def _product_params(node, first, second, output, real: float, op_name: str) -> _QuantParams:
    """MUL and DIV: one multiplier, (input1 scale * input2 scale) / output scale or its DIV form."""
    multiplier, shift = quantize_multiplier(real)
    low, high = _activation_limits(node, output, op_name)
    return _QuantParams(
        _Rescale(-first.params.zero_point, 0, 0),
        _Rescale(-second.params.zero_point, 0, 0),
        _Rescale(output.params.zero_point, multiplier, shift),
        0,
        low,
        high,
    )


@dataclass(frozen=True)
class _Separable:
    """A formula combine(first(x1), second(x2)) whose per-input parts depend on one input value each: for
    int16 inputs the runner tabulates them over all 65536 values and calls only `combine` per element."""

    first: Callable
    second: Callable
    combine: Callable

    def __call__(self, x1, x2):
        return self.combine(self.first(x1), self.second(x2))


def _requantize(total: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """MultiplyByQuantizedMultiplier of int32 values held in an int64 array, computed in place: the left
    shift (wrapping in int32), the doubling high multiply (TFLite's scalar one and vqrdmulh agree: the
    high half of 2*x*m rounded half up), the right shift rounding halves away from zero."""
    total = np.asarray(total)  # (a 0-d result arrives as a NumPy scalar)
    if shift > 0:
        total <<= shift
        total += 1 << 31
        total &= 0xFFFFFFFF
        total -= 1 << 31
    total *= multiplier
    total += 1 << 30
    total >>= 31
    exponent = max(0, -shift)
    if exponent:
        negative = total < 0
        total += 1 << (exponent - 1)
        total -= negative
        total >>= exponent
    return total


def _clamped(result: np.ndarray, low: int, high: int, simd: bool) -> np.ndarray:
    """_clamp in place."""
    result = np.asarray(result)
    if simd and low > high:
        result[...] = low
    else:
        np.clip(result, low, high, out=result)
    return result


def _add_sub_formulas(p: _QuantParams, sign: int, tensor_type, simd: bool) -> dict[str, Callable]:
    """Functions (x1, x2) -> output values, int64 arrays in and out, one per code path."""
    one, two, out, shift = p.first, p.second, p.output, p.left_shift

    def scaled_first(x):
        return _mbqm_smaller_than_one((x + one.offset) << shift, one.multiplier, one.shift)

    def scaled_second(x):
        return sign * _mbqm_smaller_than_one((x + two.offset) << shift, two.multiplier, two.shift)

    def requantized(simd_clamp: bool, vectorized: bool = False):
        def combine(v1, v2):
            total = np.asarray(np.add(v1, v2, dtype=np.int64))
            if vectorized:
                total = _mbqm_smaller_than_one_vectorized(total, out.multiplier, out.shift)
            elif out.shift <= 0:
                total = _requantize(total, out.multiplier, out.shift)
            else:  # SUB's output multiplier above 1: see _divide_by_pot_x86
                total = _mbqm_smaller_than_one(total, out.multiplier, out.shift)
            total += out.offset
            return _clamped(total, p.low, p.high, simd_clamp)

        return combine

    formulas = {_SCALAR: _Separable(scaled_first, scaled_second, requantized(False))}
    if tensor_type == T.INT16 and sign < 0 and out.shift > 0:  # see _mbqm_smaller_than_one_vectorized
        formulas[_BLOCK] = _Separable(scaled_first, scaled_second, requantized(False, vectorized=True))
    if not simd:
        return formulas

    def shifted_first(rescale: _Rescale):  # the shift folded into the left shift, before the multiply
        return lambda x: saturating_rounding_doubling_high_mul(
            vshl(x + rescale.offset, shift + rescale.shift), rescale.multiplier
        )

    def shifted_last(rescale: _Rescale):  # the (flooring) right shift after the multiply
        return lambda x: vshl(
            saturating_rounding_doubling_high_mul(vshl(x + rescale.offset, shift), rescale.multiplier),
            rescale.shift,
        )

    if tensor_type == T.INT16:
        formulas[_BLOCK] = _Separable(shifted_first(one), shifted_first(two), requantized(True))
        return formulas
    type_low, type_high = _TYPE_RANGE[tensor_type]

    def narrowed(v1, v2):
        """The requantized sum through the 8-bit kernels' int16 lanes: narrowing and the offset wrap."""
        result = rounding_divide_by_pot(
            saturating_rounding_doubling_high_mul(v1 + v2, out.multiplier), -out.shift
        )
        result = saturate(wrap(wrap(result, 16) + out.offset, 16), type_low, type_high)
        return _clamp(result, p.low, p.high, simd=True)

    last = _Separable(shifted_last(one), shifted_last(two), narrowed)
    formulas[_BROADCAST_BLOCK] = last
    formulas[_BLOCK] = (
        _Separable(shifted_first(one), shifted_first(two), narrowed) if tensor_type == T.INT8 else last
    )
    return formulas


def _pot_formulas(first_shift: int, second_shift: int, sign: int, low: int, high: int) -> dict[str, Callable]:
    """The int16 power-of-two path (LSTM cells): inputs rounded down to the output's scale by shifts,
    then a saturating int16 add or subtract."""

    def combine(v1, v2):
        total = np.asarray(np.add(v1, v2, dtype=np.int64))
        np.clip(total, -32768, 32767, out=total)
        return _clamped(total, low, high, simd=False)

    return {
        _SCALAR: _Separable(
            lambda x: rounding_divide_by_pot(x, -first_shift),
            lambda x: sign * rounding_divide_by_pot(x, -second_shift),
            combine,
        )
    }


def _mul_formulas(p: _QuantParams, tensor_type, simd: bool) -> dict[str, Callable]:
    one, two, out = p.first, p.second, p.output

    def scalar(x1, x2):
        product = _requantize((x1 + one.offset) * (x2 + two.offset), out.multiplier, out.shift)
        product += out.offset
        return _clamped(product, p.low, p.high, simd=False)

    formulas = {_SCALAR: scalar}
    if not simd:
        return formulas
    type_low, type_high = _TYPE_RANGE[tensor_type]
    left, right = max(0, out.shift), max(0, -out.shift)

    def vector(narrow):
        def compute(x1, x2):
            product = vshl((x1 + one.offset) * (x2 + two.offset), left)
            product = narrow(
                rounding_divide_by_pot(saturating_rounding_doubling_high_mul(product, out.multiplier), right)
            )
            result = saturate(wrap(product + out.offset, 16), type_low, type_high)
            return _clamp(result, p.low, p.high, simd=True)

        return compute

    formulas[_BLOCK] = vector(lambda x: saturate(x, -32768, 32767))
    # uint8's scalar-broadcast loop narrows with vmovn (wrapping) where the others saturate
    formulas[_BROADCAST_BLOCK] = vector(
        (lambda x: wrap(x, 16)) if tensor_type == T.UINT8 else (lambda x: saturate(x, -32768, 32767))
    )
    return formulas


def _int16_to_8bit_mul_formulas(output_offset: int, low: int, high: int) -> dict[str, Callable]:
    """MUL of int16 inputs into an int8/uint8 output: the Q0.15 product, divided by 2**8, clamped."""

    def scalar(x1, x2):
        product = _srdhm16(x1, x2)
        rescaled = rounding_divide_by_pot(product, 8)
        clamped = np.maximum(np.minimum(rescaled, high - output_offset), low - output_offset)
        return output_offset + clamped

    return {_SCALAR: scalar}


def _srdhm16(a, b):
    """gemmlowp's int16 SaturatingRoundingDoublingHighMul."""
    product = np.asarray(a, np.int64) * b
    nudged = product + np.where(product >= 0, 1 << 14, 1 - (1 << 14))
    result = np.where(nudged >= 0, nudged >> 15, -((-nudged) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, result)


def _div_formulas(p: _QuantParams) -> dict[str, Callable]:
    """Quantized DIV (scalar in every kernel): the divisor's reciprocal by gemmlowp's Newton-Raphson in
    fixed point, the dividend normalized by its leading sign bits, one requantization."""
    one, two, out = p.first, p.second, p.output

    def scalar(x1, x2):
        numerator, denominator = x1 + one.offset, x2 + two.offset
        negative = denominator < 0
        numerator = np.where(negative, -numerator, numerator)
        denominator = np.where(negative, -denominator, denominator)
        denominator = np.maximum(denominator, 1)  # zero divisors fail at invoke; never computed
        headroom_plus_one = _count_leading_zeros32(denominator)
        reciprocal_shift = 31 - headroom_plus_one
        shifted = _wrap32((denominator << headroom_plus_one) - (1 << 31))
        reciprocal = _one_over_one_plus_x(shifted)
        headroom = _count_leading_sign_bits32(numerator)
        quotient = saturating_rounding_doubling_high_mul(numerator << headroom, reciprocal)
        total_shift = out.shift - reciprocal_shift - headroom
        result = _mbqm_smaller_than_one(quotient, out.multiplier, total_shift) + out.offset
        return _clamp(result, p.low, p.high, simd=False)

    return {_SCALAR: scalar}


def _wrap32(x):
    return ((np.asarray(x, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of positive int32 values (< 2**31)."""
    x = np.asarray(x, np.int64)
    _, exponent = np.frexp(x.astype(np.float64))  # exact: x < 2**53; x = m * 2**e, 0.5 <= m < 1
    return np.where(x > 0, 32 - exponent, 32)


def _count_leading_sign_bits32(x: np.ndarray) -> np.ndarray:
    """__builtin_clrsb on int32 (31 for 0)."""
    x = np.asarray(x, np.int64)
    magnitude = np.where(x < 0, ~x, x)
    return np.where(x == 0, 31, _count_leading_zeros32(magnitude) - 1)


def _saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent on int32 values."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, 2**31 - 1, np.where(x < -threshold, -(2**31), x << exponent))


def _one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 on raw int32 Q0.31 values, as raw Q0.31."""
    total = a + (2**31 - 1)  # RoundingHalfSum(a, One()): (a + b + sign) / 2, truncating
    total = total + np.where(total >= 0, 1, -1)
    half_denominator = np.where(total >= 0, total >> 1, -((-total) >> 1))
    srdhm = saturating_rounding_doubling_high_mul
    x = 1515870810 + srdhm(half_denominator, -1010580540)  # 48/17 - 32/17 * d, in Q2.29
    for _ in range(3):
        one_minus = (1 << 29) - srdhm(half_denominator, x)
        x = x + _saturating_shift_left(srdhm(x, one_minus), 2)
    return _saturating_shift_left(x, 1)


def _squared_difference_formulas(p: _QuantParams) -> dict[str, Callable]:
    one, two, out, shift = p.first, p.second, p.output, p.left_shift

    def scalar(x1, x2):
        difference = _mbqm_smaller_than_one((x1 + one.offset) << shift, one.multiplier, one.shift)
        difference = difference - _mbqm_smaller_than_one(
            (x2 + two.offset) << shift, two.multiplier, two.shift
        )
        result = _mbqm_smaller_than_one(difference * difference, out.multiplier, out.shift) + out.offset
        return _clamp(result, p.low, p.high, simd=False)

    return {_SCALAR: scalar}


def _quantized_runner(context, node, formulas: dict[str, Callable], groups, check=None) -> Callable:
    """The function invoke calls: a lookup in per-path tables of all 256 x 256 results for 8-bit inputs,
    direct int64 arithmetic for int16 ones. `check(b)` validates the second input first (DIV)."""
    tensors = context.tensors
    first = tensors[node.inputs[0]]
    output = tensors[node.outputs[0]]
    shape = tuple(output.shape)
    size = math.prod(shape)
    if size == 0:
        return _run_nothing
    if first.type in (T.INT8, T.UINT8):
        raw = np.arange(256, dtype=np.uint8).view(first.dtype).astype(np.int64)
        with np.errstate(all="ignore"):
            tables = {
                path: formulas[path](raw[:, None], raw[None, :]).astype(output.dtype).reshape(-1)
                for path, _ in groups
            }
        main = tables[groups[0][0]]
        extras = [(tables[path], positions) for path, positions in groups[1:]]
        kept = np.empty(shape, np.intp) if size <= _INDEX_BUFFER_LIMIT else None

        def lookup(tensors, inputs, out):
            b = tensors[inputs[1]].data
            if check is not None:
                check(b)
            index = kept if kept is not None else np.empty(shape, np.intp)
            np.left_shift(tensors[inputs[0]].data.view(np.uint8), 8, out=index, dtype=np.intp)
            np.bitwise_or(index, b.view(np.uint8), out=index)
            np.take(main, index, out=out, mode="clip")
            for table, positions in extras:
                out.reshape(-1)[positions] = table[index.reshape(-1)[positions]]

        return lookup
    if first.type == T.INT16 and all(isinstance(formulas[path], _Separable) for path, _ in groups):
        return _int16_table_runner(formulas, groups, shape, check)
    main_formula = formulas[groups[0][0]]
    extras = [(formulas[path], positions) for path, positions in groups[1:]]

    def compute(tensors, inputs, out):
        b = tensors[inputs[1]].data
        if check is not None:
            check(b)
        x1 = tensors[inputs[0]].data.astype(np.int64)
        x2 = b.astype(np.int64)
        out[...] = main_formula(x1, x2)
        for formula, positions in extras:
            flat1 = np.broadcast_to(x1, shape).reshape(-1)[positions]
            flat2 = np.broadcast_to(x2, shape).reshape(-1)[positions]
            out.reshape(-1)[positions] = formula(flat1, flat2)

    return compute


def _int16_table_runner(formulas: dict[str, _Separable], groups, shape, check) -> Callable:
    """int16 inputs through a _Separable formula: each input's part looked up in a table over the 65536
    values (indexed by the raw bits), then `combine` per element."""
    raw = np.arange(1 << 16, dtype=np.uint16).view(np.int16).astype(np.int64)
    tables = {
        path: (formulas[path].first(raw).astype(np.int32), formulas[path].second(raw).astype(np.int32))
        for path, _ in groups
    }
    main_path = groups[0][0]
    first_table, second_table = tables[main_path]
    combine = formulas[main_path].combine
    extras = [(tables[path], formulas[path].combine, positions) for path, positions in groups[1:]]

    def compute(tensors, inputs, out):
        b = tensors[inputs[1]].data
        if check is not None:
            check(b)
        bits1, bits2 = tensors[inputs[0]].data.view(np.uint16), b.view(np.uint16)
        out[...] = combine(first_table.take(bits1), second_table.take(bits2))
        for (table1, table2), extra, positions in extras:
            flat1 = np.broadcast_to(bits1, shape).reshape(-1)[positions]
            flat2 = np.broadcast_to(bits2, shape).reshape(-1)[positions]
            out.reshape(-1)[positions] = extra(table1.take(flat1), table2.take(flat2))

    return compute


def _quantized_prepare(context, node, op_name: str, first, second, output, optimized: bool) -> None:
    """Prepare of ADD/SUB/MUL/DIV/SQUARED_DIFFERENCE on quantized int8/uint8/int16 inputs."""
    kind = first.type
    shape = broadcast_shape(first.shape, second.shape)
    walk = _broadcast_walk(first.shape, second.shape)
    size = math.prod(shape)
    block = broadcast_block = 0  # SIMD widths; 0: the kernel is scalar
    check = None
    if op_name in ("ADD", "SUB"):
        _check_scales(op_name, first, second, output)
        _check_zero_points(op_name, kind, first, second, output)
        sign = 1 if op_name == "ADD" else -1
        if kind == T.INT16 and _pot_int16(node, first, second, output):
            first_shift, second_shift, low, high = _pot_params(node, first, second, output, op_name)
            ensure(
                walk[0] == "elementwise" or op_name == "SUB",
                "ADD of power-of-two scaled int16 inputs does not broadcast in TFLite.",
            )
            formulas = _pot_formulas(first_shift, second_shift, sign, low, high)
        else:
            params = _add_sub_params(node, first, second, output, op_name)
            simd = optimized and op_name == "ADD"
            formulas = _add_sub_formulas(params, sign, kind, simd)
            if _BLOCK in formulas and not simd:  # int16 SUB's loop as the compiler vectorized it
                block = 4 if walk[0] == "elementwise" else 0
            elif simd and kind == T.INT16:
                block = 16 if walk[0] == "elementwise" else 0  # int16 broadcasts in the reference loop
            elif simd:
                block, broadcast_block = (16, 8) if kind == T.INT8 else (8, 8)
    elif op_name == "MUL":
        ensure(
            output.type == kind or (kind == T.INT16 and output.type in (T.INT8, T.UINT8)),
            "Unsupported combination of input and output types in Mul.",
        )
        _check_scales(op_name, first, second, output)
        # float arithmetic in TFLite (the scales are floats), widened to double afterwards
        real = float(
            np.float32(first.params.scale) * np.float32(second.params.scale) / np.float32(output.params.scale)
        )
        params = _product_params(node, first, second, output, real, op_name)
        if kind == T.INT16 and output.type != T.INT16:
            ensure(walk[0] == "elementwise", "MUL of int16 inputs into an 8-bit output does not broadcast.")
            formulas = _int16_to_8bit_mul_formulas(output.params.zero_point, params.low, params.high)
        elif kind == T.INT16:
            _check_zero_points(op_name, kind, first, second, output)
            formulas = _mul_formulas(params, kind, simd=False)
        else:
            _check_zero_points(op_name, kind, first, second, output)
            simd = optimized
            formulas = _mul_formulas(params, kind, simd)
            if simd:
                block = broadcast_block = 16 if kind == T.INT8 else 8
    elif op_name == "DIV":
        _check_scales(op_name, first, second, output)
        _check_zero_points(op_name, kind, first, second, output)
        real = float(
            np.float32(first.params.scale)
            / (np.float32(second.params.scale) * np.float32(output.params.scale))
        )
        params = _product_params(node, first, second, output, real, op_name)
        formulas = _div_formulas(params)
        check = _zero_check(second, "data[i] != zero_point was not true.", second.params.zero_point)
    else:  # SQUARED_DIFFERENCE
        _check_scales(op_name, first, second, output)
        _check_zero_points(op_name, kind, first, second, output)
        params = _squared_difference_params(first, second, output)
        formulas = _squared_difference_formulas(params)
    if walk[0] != "elementwise" and not (walk[0] == "fivefold" and (block or broadcast_block)):
        _output_shape(first, second, op_name)  # TFLite's broadcast loop: its rank limit
    groups = _path_groups(walk, size, block, broadcast_block)
    fold = op_name == "MUL" and is_constant(first) and is_constant(second)
    if fold:
        context.set_tensor_to_persistent_ro(output)
    context.resize_tensor(output, shape)
    runner = _quantized_runner(context, node, formulas, groups, check)
    if fold:
        runner(context.tensors, node.inputs, output.data)
        runner = _run_nothing
    node.user_data = runner


def _pot_int16(node, first, second, output) -> bool:
    """int16 ADD/SUB take the power-of-two path when the pot_scale_int16 option is set and every scale
    is a power of two."""
    if not getattr(node.builtin_data, "pot_scale_int16", False):
        return False
    return all(_checked_log2(tensor.params.scale) is not None for tensor in (first, second, output))


def _checked_log2(scale: float) -> int | None:
    """CheckedLog2: the rounded log2 when the scale is within 1e-3 (in log2) of a power of two."""
    with np.errstate(all="ignore"):
        log2 = np.float32(np.log(np.float32(scale))) * np.float32(1.0 / np.log(np.float32(2.0)))
    if not np.isfinite(log2):
        return None
    rounded = np.float32(round_half_away(float(log2)))
    return int(rounded) if abs(log2 - rounded) < np.float32(1e-3) else None


def _pot_params(node, first, second, output, op_name: str) -> tuple[int, int, int, int]:
    out_log2 = _checked_log2(output.params.scale)
    first_shift = _checked_log2(first.params.scale) - out_log2
    second_shift = _checked_log2(second.params.scale) - out_log2
    ensure(
        first_shift == 0 or second_shift == 0,
        "data->input1_shift == 0 || data->input2_shift == 0 was not true.",
    )
    ensure(first_shift <= 0, "data->input1_shift <= 0 was not true.")
    ensure(second_shift <= 0, "data->input2_shift <= 0 was not true.")
    low, high = _activation_limits(node, output, op_name)
    return first_shift, second_shift, low, high


def _squared_difference_params(first, second, output) -> _QuantParams:
    """squared_difference.cc: inputs onto twice the larger scale after a left shift of 7, the output
    multiplier on the squared difference; no fused activation."""
    left_shift = 7
    s1, s2, so = _scale(first), _scale(second), _scale(output)
    twice = 2 * max(s1, s2)
    real_output = (twice * twice) / float(np.float32(1 << (2 * left_shift)) * np.float32(so))
    m1, h1 = _smaller_than_one(s1 / twice, "SQUARED_DIFFERENCE input1 multiplier")
    m2, h2 = _smaller_than_one(s2 / twice, "SQUARED_DIFFERENCE input2 multiplier")
    mo, ho = _smaller_than_one(real_output, "SQUARED_DIFFERENCE output multiplier")
    return _QuantParams(
        _Rescale(-first.params.zero_point, m1, h1),
        _Rescale(-second.params.zero_point, m2, h2),
        _Rescale(output.params.zero_point, mo, ho),
        left_shift,
        -128,
        127,
    )


# --- ADD, SUB, MUL, DIV ----------------------------------------------------------------------------------


def _arithmetic_prepare(op_name: str, ufunc: np.ufunc, types: tuple[TensorType, ...], optimized: bool = True):
    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name, same_output_type=op_name != "MUL")
        kind = first.type
        ensure_type(first, types, "input", op_name)
        if _quantized_arithmetic(op_name, first, output):
            _quantized_prepare(context, node, op_name, first, second, output, optimized)
            return
        ensure_types_eq(first, output, f"{op_name} input/output types")
        activation = _activation(node)
        if kind == T.COMPLEX64:
            ensure(
                activation == ActivationFunctionType.NONE, "Activation is not allowed for COMPLEX64 input."
            )
        # Float ADD/SUB/MUL have TFLite's fivefold broadcast path besides the generic loop: no rank cap.
        capped = not (kind == T.FLOAT32 and op_name in ("ADD", "SUB", "MUL"))
        shape = _output_shape(first, second, op_name, capped)
        low, high = _activation_bounds(activation, first.dtype)
        data = BinaryOpData(_widened(ufunc, first, second, shape), low, high)
        if op_name == "DIV" and kind == T.INT32:
            data = BinaryOpData(_int_divide(second, low, high, shape))
        if op_name == "MUL" and is_constant(first) and is_constant(second):
            data = _fold_constants(context, node, output, shape, data)
        else:
            context.resize_tensor(output, shape)
        node.user_data = data

    return prepare


def _quantized_arithmetic(op_name: str, first, output) -> bool:
    """Whether TFLite takes its quantized path: always for int8/uint8; for int16, ADD and MUL only with
    a quantized output (else plain integer arithmetic), SUB and DIV always. The inputs and output must
    then all carry quantization."""
    if first.type not in _QUANTIZED:
        return False
    if first.type == T.INT16 and op_name in ("ADD", "MUL") and output.quantization is None:
        return False
    for tensor, what in ((first, "input"), (output, "output")):
        ensure(
            tensor.quantization is not None,
            f"{op_name} of {type_name(first.type)} tensors needs a quantized {what}.",
        )
    return True


def _int_divide(divisor, low, high, shape: tuple[int, ...]) -> Callable:
    """int32 DIV: C division (truncating), checked for zero divisors, clamped to the activation range.

    The quotient of two int32 values is exact in float64, so trunc(a / b) is C's a / b; the clamp to the
    int32 range (in float64, before the cast) turns INT_MIN / -1 into INT_MAX, as LiteRT's build does.
    """
    info = np.iinfo(np.int32)
    low = np.array(info.min if low is None else low, np.float64)
    high = np.array(info.max if high is None else high, np.float64)
    checked = _zero_check(divisor, "data[i] != zero_point was not true.")
    operands = _float64_operands(shape)

    def divide(a, b, out):
        checked(b)
        quotient, divisor = operands(a, b)
        np.true_divide(quotient, divisor, out=quotient)
        np.trunc(quotient, out=quotient)
        clip(quotient, low, high, quotient)
        out[...] = quotient

    return divide


def _float64_operands(shape: tuple[int, ...]) -> Callable:
    """operands(a, b) -> both inputs converted to float64 arrays of the output's shape (node-owned ones
    when the output is small). Converting by assignment is cheaper than letting a ufunc cast its inputs,
    which takes NumPy's buffered casting loop (over a microsecond more per call)."""
    if math.prod(shape) <= _EXPANDED_LIMIT:
        first, second = np.empty(shape, np.float64), np.empty(shape, np.float64)

        def kept(a, b):
            first[...] = a
            second[...] = b
            return first, second

        return kept

    def fresh(a, b):
        wide_a, wide_b = np.empty(shape, np.float64), np.empty(shape, np.float64)
        wide_a[...] = a
        wide_b[...] = b
        return wide_a, wide_b

    return fresh


def _zero_check(divisor, message: str, zero: int = 0) -> Callable[[np.ndarray], None]:
    """The invoke-time 'no zero divisor' check (`zero`: the value standing for 0, a quantized divisor's
    zero point); decided once in prepare when the divisor is constant."""
    if is_constant(divisor):
        if np.all(divisor.data != zero):
            return lambda b: None

        def always_fails(b):
            raise KernelError(message)

        return always_fails

    if zero != 0:

        def check_quantized(b):
            if (b == zero).any():
                raise KernelError(message)

        return check_quantized

    def check(b):
        if np.count_nonzero(b) != b.size:
            raise KernelError(message)

    return check


# --- MAXIMUM, MINIMUM --------------------------------------------------------------------------------------

_MIN_MAX_TYPES = (T.FLOAT32, T.FLOAT16, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)


def _min_max_prepare(op_name: str, propagating: np.ufunc, ignoring: np.ufunc):
    """TFLite picks `a > b ? a : b` (MAXIMUM): NaN in a gives b, NaN in b gives NaN. np.fmax gives that
    when b has no NaN, np.maximum when a has none; otherwise maximum(fmax(a, b), b). Quantized inputs
    are compared raw, as TFLite does (it never rescales here)."""

    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name)
        ensure_type(first, _MIN_MAX_TYPES, "input", op_name)
        context.resize_tensor(output, _output_shape(first, second, op_name))
        if first.dtype.kind != "f":
            ufunc = propagating
        elif is_constant(second) and not np.isnan(second.data).any():
            ufunc = ignoring
        elif is_constant(first) and not np.isnan(first.data).any():
            ufunc = propagating
        else:  # NaN in b: the second call makes it NaN again; ties (signed zeros) give b as in TFLite

            def ufunc(a, b, out):
                ignoring(a, b, out=out)
                propagating(out, b, out=out)

        node.user_data = BinaryOpData(
            _widened(ufunc, first, second, output.shape) if isinstance(ufunc, np.ufunc) else ufunc,
            elementwise=True,
        )

    return prepare


# --- POW, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD ------------------------------------------------------


def _pow_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "POW")
    ensure(first.type in (T.FLOAT32, T.INT32), f"Unsupported data type {type_name(first.type)}.")
    context.resize_tensor(output, _output_shape(first, second, "POW"))
    is_int = first.type == T.INT32
    checked = _negative_exponent_check(second) if is_int else None
    x86 = context.host.x86
    elementwise = (lambda a, b, out: _int_pow(a, b, out, x86)) if is_int else np.power
    # Shapes differ and the exponent is one value: TFLite multiplies by repeated squaring when it is
    # within 1e-5 of an integer >= 1 (clamping floats to +-FLT_MAX), else calls std::pow per element.
    scalar_exponent = first.shape != second.shape and math.prod(second.shape) == 1
    if scalar_exponent and is_constant(second):
        exponent = _integer_exponent(second.data)
        if exponent is None:
            scalar_exponent = False
        else:
            node.user_data = BinaryOpData(lambda a, b, out: _integer_power(a, exponent, out, is_int))
            return

    def power(a, b, out):
        if checked is not None:
            checked(b)
        if scalar_exponent:
            exponent = _integer_exponent(b)
            if exponent is not None:
                _integer_power(a, exponent, out, is_int)
                return
        elementwise(a, b, out=out)

    node.user_data = BinaryOpData(power)


def _integer_exponent(exponent: np.ndarray) -> int | None:
    """The integer TFLite's broadcast POW raises to by repeated multiplication, or None for std::pow."""
    value = exponent.reshape(-1)[0]
    if not np.isfinite(value):
        return None
    rounded = math.floor(abs(float(value)) + 0.5) * (1 if value >= 0 else -1)  # std::round
    if not 1 <= rounded < 2**31:  # below 1, or past int (where the cast gives INT_MIN)
        return None
    floating = np.issubdtype(exponent.dtype, np.floating)
    if floating and not abs(np.float32(value) - np.float32(rounded)) < np.float32(1e-5):
        return None
    return rounded


def _integer_power(base: np.ndarray, exponent: int, out: np.ndarray, is_int: bool) -> None:
    """base ** exponent by TFLite's repeated squaring, each float product clamped to +-FLT_MAX."""
    view = out.reshape(base.shape)  # the exponent has one element: same element count
    if np.may_share_memory(base, view):
        base = base.copy()
    current = base
    bits = bin(exponent)[3:]  # after the leading 1: square, then multiply by the base on a 1
    if not bits:
        np.copyto(view, base)
    for bit in bits:
        np.multiply(current, current, out=view)
        current = view
        if not is_int:
            clip(view, _FLOAT_LOWEST, _FLOAT_MAX, out=view)
        if bit == "1":
            np.multiply(base, view, out=view)
            if not is_int:
                clip(view, _FLOAT_LOWEST, _FLOAT_MAX, out=view)


_FLOAT_MAX = np.array(np.finfo(np.float32).max)
_FLOAT_LOWEST = -_FLOAT_MAX


def _negative_exponent_check(exponent) -> Callable[[np.ndarray], None]:
    message = "POW does not support negative value for int32."
    if is_constant(exponent) and not (exponent.data < 0).any():
        return lambda b: None

    def check(b):
        if (b < 0).any():
            raise KernelError(message)

    return check


def _int_pow(a, b, out, x86: bool):
    """std::pow on ints: computed in double, converted back; out-of-range results become INT_MIN on x86
    hosts and saturate elsewhere (ARM's conversion; see float_to_int32)."""
    result = np.power(a, b, out=np.empty(out.shape, np.float64), dtype=np.float64)
    np.copyto(out, float_to_int32(result, x86=x86), casting="unsafe")


def _squared_difference_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "SQUARED_DIFFERENCE")
    ensure_type(first, _SQUARED_DIFFERENCE_TYPES, "input", "SQUARED_DIFFERENCE")
    if _quantized_arithmetic("SQUARED_DIFFERENCE", first, output):
        _quantized_prepare(context, node, "SQUARED_DIFFERENCE", first, second, output, True)
        return
    context.resize_tensor(output, _output_shape(first, second, "SQUARED_DIFFERENCE"))
    node.user_data = BinaryOpData(_squared_difference, elementwise=True)


def _squared_difference(a, b, out):
    np.subtract(a, b, out=out)
    np.multiply(out, out, out=out)


_SQUARED_DIFFERENCE_TYPES = (T.FLOAT32, T.INT32, T.INT8)
_FLOOR_DIV_TYPES = (T.FLOAT32, T.INT32, T.INT16, T.INT8)
_FLOOR_MOD_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT16, T.INT8)


def _floor_div_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "FLOOR_DIV")
    ensure(first.type in _FLOOR_DIV_TYPES, f"Type '{type_name(first.type)}' is not supported by floor_div.")
    context.resize_tensor(output, _output_shape(first, second, "FLOOR_DIV"))
    checked = _zero_check(second, "Division by 0")  # float zeros too
    if first.type == T.FLOAT32:
        # floor(double(a) / double(b)), rounded back to float32 (overflowing to inf quietly).
        operands = _float64_operands(tuple(output.shape))

        def floor_divide(a, b, out):
            checked(b)
            quotient, divisor = operands(a, b)
            np.true_divide(quotient, divisor, out=quotient)
            np.floor(quotient, out=quotient)
            out[...] = quotient

        node.user_data = BinaryOpData(floor_divide)
        return

    def floor_divide(a, b, out):  # INT_MIN // -1 wraps, as in TFLite
        checked(b)
        np.floor_divide(a, b, out=out)

    node.user_data = BinaryOpData(floor_divide, elementwise=True)


def _floor_mod_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "FLOOR_MOD")
    ensure(first.type in _FLOOR_MOD_TYPES, f"Type '{type_name(first.type)}' is not supported by floor_mod.")
    context.resize_tensor(output, _output_shape(first, second, "FLOOR_MOD"))
    if first.type == T.FLOAT32:  # fmod, then the divisor's sign; x mod 0 is NaN
        node.user_data = BinaryOpData(_widened(np.remainder, first, second, output.shape))
        return
    checked = _zero_check(second, "Division by 0")

    def floor_mod(a, b, out):
        checked(b)
        np.remainder(a, b, out=out)

    node.user_data = BinaryOpData(floor_mod, elementwise=True)


# --- ATAN2, ADD_N ------------------------------------------------------------------------------------------


def _atan2_prepare(context, node):
    check_arity(node, 2)
    y, x = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(
        len(y.shape) == len(x.shape),
        f"tflite::NumDimensions(a) != tflite::NumDimensions(b) ({len(y.shape)} != {len(x.shape)})",
    )
    ensure_types_eq(y, x, "ATAN2 input types")
    ensure_types_eq(y, output, "ATAN2 input/output types")
    ensure_type(y, (T.FLOAT32, T.FLOAT64, T.FLOAT16), "input", "ATAN2")
    context.resize_tensor(output, y.shape)
    if x.shape == y.shape:
        node.user_data = BinaryOpData(np.arctan2)
        return
    # TFLite checks only the ranks and pairs the elements in memory order, over y's element count.
    count = math.prod(y.shape)
    ensure(
        math.prod(x.shape) >= count,
        f"ATAN2 input x {list(x.shape)} has fewer elements than input y {list(y.shape)}.",
    )
    shape = y.shape

    def atan2(a, b, out):
        np.arctan2(a, b.reshape(-1)[:count].reshape(shape), out=out)

    node.user_data = BinaryOpData(atan2)


def _add_n_prepare(context, node):
    ensure(len(node.inputs) >= 2, "num_inputs >= 2 was not true.")
    ensure(len(node.outputs) == 1, f"output count {len(node.outputs)} != 1")
    first, output = input_tensor(context, node, 0), output_tensor(context, node)
    for i in range(1, len(node.inputs)):
        other = input_tensor(context, node, i)
        ensure(other.shape == first.shape, "HaveSameShapes(input1, input) was not true.")
        ensure_types_eq(first, other, "ADD_N input types")
    ensure_types_eq(first, output, "ADD_N input/output types")
    ensure(
        first.type in (T.FLOAT32, T.INT32),
        f"AddN only supports FLOAT32|INT32 now, got {type_name(first.type)}.",
    )
    context.resize_tensor(output, first.shape)


def _add_n_invoke(context, node):
    tensors = context.tensors
    inputs = node.inputs
    out = tensors[node.outputs[0]].data
    np.add(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)
    for index in inputs[2:]:
        np.add(out, tensors[index].data, out=out)


# --- BITWISE_XOR, RIGHT_SHIFT ------------------------------------------------------------------------------


def _bitwise_xor_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "BITWISE_XOR")
    ensure(
        first.type in _BITWISE,
        "BitwiseXor currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, "
        f"got {type_name(first.type)}",
    )
    context.resize_tensor(output, _output_shape(first, second, "BITWISE_XOR"))
    node.user_data = BinaryOpData(_widened(np.bitwise_xor, first, second, output.shape))


def _right_shift_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "RIGHT_SHIFT")
    ensure(
        first.type in _BITWISE,
        "RightShift currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, "
        f"got {type_name(first.type)}",
    )
    context.resize_tensor(output, _output_shape(first, second, "RIGHT_SHIFT"))
    # Shift counts are clamped to [0, bits - 1]; signed values shift arithmetically.
    dtype = first.dtype
    low, high = dtype.type(0), dtype.type(dtype.itemsize * 8 - 1)
    if is_constant(second):
        counts = np.clip(second.data, low, high)

        def shift(a, b, out):
            np.right_shift(a, counts, out=out)

    else:

        def shift(a, b, out):
            np.right_shift(a, clip(b, low, high), out=out)

    node.user_data = BinaryOpData(shift)


# --- comparisons -----------------------------------------------------------------------------------------

_ORDER_TYPES = (T.FLOAT32, T.FLOAT16, T.INT16, T.INT32, T.INT64, T.UINT8, T.INT8)
_EQUALITY_TYPES = (T.BOOL, *_ORDER_TYPES, T.STRING)


def _comparison_prepare(op_name: str, ufunc: np.ufunc, types: tuple[TensorType, ...]):
    equality = op_name in ("EQUAL", "NOT_EQUAL")

    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name, same_output_type=False)
        ensure_type(first, types, "input", op_name)
        ensure(output.type == T.BOOL, f"{op_name} output type must be BOOL, got {type_name(output.type)}.")
        context.resize_tensor(output, _output_shape(first, second, op_name))
        # TFLite rescales int8/uint8 always, int16 only for (NOT_)EQUAL with a quantized first input.
        rescaled = first.type in (T.INT8, T.UINT8) or (
            first.type == T.INT16 and equality and first.quantization is not None
        )
        compute = _rescaled(op_name, ufunc, first, second) if rescaled else ufunc
        if isinstance(compute, np.ufunc):
            compute = _widened(compute, first, second, output.shape)
        node.user_data = BinaryOpData(compute, elementwise=True)

    return prepare


def _rescaled(op_name: str, ufunc: np.ufunc, first, second) -> Callable:
    """Compare int8/uint8/int16 values as TFLite does: each input mapped to ((q - zero_point) << 8) times
    its scale in fixed point, the two results compared as int32. The map depends on the raw value only,
    so prepare tabulates it over the type's whole range and invoke looks the values up."""
    first_table = _rescale_table(first, op_name)
    second_table = _rescale_table(second, op_name)
    if np.array_equal(first_table, second_table) and np.all(np.diff(first_table) > 0):
        return ufunc  # same strictly increasing map on both sides: comparing raw values is the same
    unsigned = np.dtype(f"u{first.dtype.itemsize}")

    def compare(a, b, out):
        ufunc(first_table[a.view(unsigned)], second_table[b.view(unsigned)], out=out)

    return compare


def _rescale_table(tensor, op_name: str) -> np.ndarray:
    """The rescaled int32 value of every raw value, indexed by the raw bits read as unsigned. A scale above
    1 gets a left-shifting multiplier that TFLite still applies as a right shift (see _divide_by_pot_x86);
    a scale of exactly 1 fails a CHECK in TFLite (QuantizeMultiplierGreaterThanOne), 0 has no multiplier."""
    scale, zero_point = float(tensor.params.scale), int(tensor.params.zero_point)
    if not (0.0 < scale < math.inf and scale != 1.0):
        raise KernelError(
            f"{op_name} on {type_name(tensor.type)} needs quantized inputs with a positive scale other "
            f"than 1, got scale {scale}."
        )
    multiplier, shift = quantize_multiplier(scale)
    bits = tensor.dtype.itemsize * 8
    raw = np.arange(2**bits, dtype=np.int64)
    if tensor.dtype.kind == "i":
        raw = np.where(raw >= 2 ** (bits - 1), raw - 2**bits, raw)
    return _mbqm_smaller_than_one((raw - zero_point) * 256, multiplier, shift).astype(np.int32)


# --- logical ---------------------------------------------------------------------------------------------


def _logical_prepare(op_name: str, ufunc: np.ufunc):
    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name)
        ensure(first.type == T.BOOL, "Logical ops only support bool type.")
        context.resize_tensor(output, _output_shape(first, second, op_name))
        node.user_data = BinaryOpData(_widened(ufunc, first, second, output.shape))

    return prepare


def _logical_not_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_types_eq(source, output, "LOGICAL_NOT input/output types")
    ensure_type(source, (T.BOOL,), "input", "LOGICAL_NOT")
    context.resize_tensor(output, source.shape)


def _logical_not_invoke(context, node):
    tensors = context.tensors
    np.logical_not(tensors[node.inputs[0]].data, out=tensors[node.outputs[0]].data)


# --- registration ----------------------------------------------------------------------------------------

_ARITHMETIC = (
    (BuiltinOperator.ADD, np.add, (1, 6), (T.FLOAT32, T.FLOAT16, T.INT32, T.INT64, *_QUANTIZED)),
    (BuiltinOperator.SUB, np.subtract, (1, 5), (*_NUMERIC, *_QUANTIZED)),
    (
        BuiltinOperator.MUL,
        np.multiply,
        (1, 8),
        (T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32, T.INT64, *_QUANTIZED, T.COMPLEX64),
    ),
    (BuiltinOperator.DIV, np.true_divide, (1, 2), (T.FLOAT32, T.INT32, *_QUANTIZED)),
)
for _op, _ufunc, _versions, _types in _ARITHMETIC:
    register_builtin(
        _op,
        _versions,
        types=_types,
        prepare=_finish_prepare(_arithmetic_prepare(_op.name, _ufunc, _types)),
        invoke=binary_invoke,
    )
# BUILTIN_REF's ADD and MUL: TFLite's reference kernels, scalar code without the SIMD blocks' rounding.
for _op, _ufunc, _versions, _types in _ARITHMETIC[0:3:2]:
    register_builtin(
        _op,
        _versions,
        types=_types,
        reference=True,
        prepare=_finish_prepare(_arithmetic_prepare(_op.name, _ufunc, _types, optimized=False)),
        invoke=binary_invoke,
    )

register_builtin(
    BuiltinOperator.MAXIMUM,
    (1, 4),
    types=_MIN_MAX_TYPES,
    prepare=_finish_prepare(_min_max_prepare("MAXIMUM", np.maximum, np.fmax)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.MINIMUM,
    (1, 4),
    types=_MIN_MAX_TYPES,
    prepare=_finish_prepare(_min_max_prepare("MINIMUM", np.minimum, np.fmin)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.POW,
    (1, 1),
    types=(T.FLOAT32, T.INT32),
    prepare=_finish_prepare(_pow_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.SQUARED_DIFFERENCE,
    (1, 2),
    types=_SQUARED_DIFFERENCE_TYPES,
    prepare=_finish_prepare(_squared_difference_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.FLOOR_DIV,
    (1, 3),
    types=_FLOOR_DIV_TYPES,
    prepare=_finish_prepare(_floor_div_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.FLOOR_MOD,
    (1, 2),
    types=_FLOOR_MOD_TYPES,
    prepare=_finish_prepare(_floor_mod_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.ATAN2,
    (1, 1),
    types=(T.FLOAT32, T.FLOAT64, T.FLOAT16),
    prepare=_finish_prepare(_atan2_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.ADD_N, (1, 1), types=(T.FLOAT32, T.INT32), prepare=_add_n_prepare, invoke=_add_n_invoke
)
register_builtin(
    BuiltinOperator.BITWISE_XOR,
    (1, 1),
    types=_BITWISE,
    prepare=_finish_prepare(_bitwise_xor_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.RIGHT_SHIFT,
    (1, 1),
    types=_BITWISE,
    prepare=_finish_prepare(_right_shift_prepare),
    invoke=binary_invoke,
)

for _op, _ufunc, _versions, _types in (
    (BuiltinOperator.EQUAL, np.equal, (1, 5), _EQUALITY_TYPES),
    (BuiltinOperator.NOT_EQUAL, np.not_equal, (1, 4), _EQUALITY_TYPES),
    (BuiltinOperator.LESS, np.less, (1, 3), _ORDER_TYPES),
    (BuiltinOperator.LESS_EQUAL, np.less_equal, (1, 2), _ORDER_TYPES),
    (BuiltinOperator.GREATER, np.greater, (1, 2), _ORDER_TYPES),
    (BuiltinOperator.GREATER_EQUAL, np.greater_equal, (1, 3), _ORDER_TYPES),
):
    register_builtin(
        _op,
        _versions,
        types=_types,
        prepare=_finish_prepare(_comparison_prepare(_op.name, _ufunc, _types)),
        invoke=binary_invoke,
    )

register_builtin(
    BuiltinOperator.LOGICAL_AND,
    (1, 1),
    types=(T.BOOL,),
    prepare=_finish_prepare(_logical_prepare("LOGICAL_AND", np.logical_and)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.LOGICAL_OR,
    (1, 1),
    types=(T.BOOL,),
    prepare=_finish_prepare(_logical_prepare("LOGICAL_OR", np.logical_or)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.LOGICAL_NOT,
    (1, 1),
    types=(T.BOOL,),
    prepare=_logical_not_prepare,
    invoke=_logical_not_invoke,
)

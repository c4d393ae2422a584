"""Reductions over axes: MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL, ARG_MAX, ARG_MIN, CUMSUM, TOPK_V2.

The axis tensor (int32, negative values count from the end, duplicates ignored) is resolved in prepare
when it is constant; a computed axis makes the output dynamic and is resolved at invoke. keep_dims keeps
reduced dimensions as 1. Integer MEAN divides the int64 sum truncating toward zero, as TFLite does;
MAX/MIN of an empty slice give the type's lowest/highest value, not an error. REDUCE_MAX/MIN (and
REDUCE_PROD of unquantized int8/int16) of uint8/int8/int16 pass raw values through: input and output must
share their scale and zero point (and int16 zero points be 0), as TFLite checks.

Quantized MEAN, SUM and REDUCE_PROD requantize (see _quantized_mean, _quantized_sum, _quantized_prod):
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
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..core.step_program import Direct
from ..core.types import AllocationType, BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..fidelity.arithmetic import X86, HostArithmetic
from .common import CallSequence, check_arity, clip, ensure_same_quantization, input_tensor, output_tensor
from .jit import compiled
from .quant.fixed_point import (
    INT32_MAX,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
    round_half_away,
)
from .registry import register_builtin

_NUMBERS = (TensorType.FLOAT32, TensorType.INT32, TensorType.INT64)
_QUANTIZED = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)


def resolve_axes(axis: np.ndarray, rank: int) -> tuple[int, ...]:
    """Axis values made non-negative, validated, in first-seen order without duplicates."""
    resolved: list[int] = []
    if rank == 0:
        return ()
    for value in np.asarray(axis).reshape(-1).tolist():
        current = value + rank if value < 0 else value
        if not 0 <= current < rank:
            raise KernelError("Invalid axis index.")
        if current not in resolved:
            resolved.append(current)
    return tuple(resolved)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return reduced_shape(shape, axes, keep_dims=True)


@dataclass(frozen=True)
class ReduceSpec:
    """What a reducer is made for: the input shape and type, the resolved axes, and for quantized
    inputs the (scale, zero point) of input and output and which TFLite kernel (optimized or reference)
    to follow."""

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    dtype: np.dtype
    keep_dims: bool = False
    source_quantization: tuple[float, int] | None = None
    output_quantization: tuple[float, int] | None = None
    optimized: bool = True
    arithmetic: HostArithmetic = X86  # the host's (read in prepare): how floats out of int32's range convert

    @property
    def count(self) -> int:
        """Elements reduced into each output element."""
        return math.prod(self.shape[a] for a in self.axes)


# A reducer makes, from a ReduceSpec, the function that reduces an input into the output viewed with the
# reduced dimensions kept as 1: everything per shape is worked out once.
Reducer = Callable[[ReduceSpec], Callable[[np.ndarray, np.ndarray], None]]


def _mean(spec: ReduceSpec) -> Callable:
    if spec.source_quantization is not None:
        return _quantized_mean(spec)
    axes, count = spec.axes, spec.count
    if np.issubdtype(spec.dtype, np.integer):

        def integer_mean(x, out):
            total = np.add.reduce(x, axis=axes, dtype=np.int64, keepdims=True)
            np.copyto(out, np.where(total < 0, -((-total) // count), total // count), casting="unsafe")

        return integer_mean
    blocks = _reduced_blocks(spec.shape, spec.axes) if spec.dtype == np.float32 else None
    kernel = compiled("eigen_compiled", "mean") if blocks is not None else None
    if kernel is not None:
        outer, _, inner = blocks
        # LiteRT's optimized kernel sums the last axis with Eigen where some kept dimension is not 1
        eigen = spec.optimized and inner == 1 and outer > 1
        kept = (outer, inner)
        return CallSequence(
            lambda x, out: (partial(kernel, x.reshape(blocks), eigen, not spec.optimized, out.reshape(kept)),)
        )
    divisor = np.array(count, spec.dtype)
    return CallSequence(
        lambda x, out: (
            partial(np.add.reduce, x, axes, None, out, True),
            partial(np.divide, out, divisor, out),
        )
    )


def _reduced_blocks(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(outer, reduced, inner): a non-empty input seen as blocks reduced over their middle axis (the
    compiled MEAN's operand, eigen_compiled.mean), where the dimensions other than 1s are kept ones, then
    reduced ones, then kept ones, as LiteRT's MEAN normalizes them; else None."""
    if 0 in shape:
        return None
    kinds = [axis in axes for axis, size in enumerate(shape) if size != 1]
    runs = [kind for i, kind in enumerate(kinds) if i == 0 or kind != kinds[i - 1]]
    if runs not in ([], [True], [False], [True, False], [False, True], [False, True, False]):
        return None
    sizes = [(axis in axes, size) for axis, size in enumerate(shape)]
    first = next((i for i, (reduced, size) in enumerate(sizes) if reduced and size != 1), len(sizes))
    outer = math.prod(size for reduced, size in sizes[:first] if not reduced)
    reduced = math.prod(size for is_reduced, size in sizes if is_reduced)
    return outer, reduced, math.prod(shape) // (outer * reduced)


def _sum(spec: ReduceSpec) -> Callable:
    if spec.source_quantization is not None:
        return _quantized_sum(spec) if spec.optimized else _reference_quantized_sum(spec)
    return _plain(np.add)(spec)


def _prod(spec: ReduceSpec) -> Callable:
    if spec.source_quantization is not None:
        return _quantized_prod(spec)
    return _plain(np.multiply)(spec)


def _extreme(ufunc: np.ufunc, lowest: bool) -> Reducer:
    """MAX/MIN: an empty slice gives the type's lowest/highest value."""

    def make(spec: ReduceSpec) -> Callable:
        limits = np.finfo(spec.dtype) if np.issubdtype(spec.dtype, np.floating) else np.iinfo(spec.dtype)
        initial = limits.min if lowest else limits.max
        axes = spec.axes

        return CallSequence(lambda x, out: (partial(ufunc.reduce, x, axes, None, out, True, initial),))

    return make


def _plain(ufunc: np.ufunc) -> Reducer:
    def make(spec: ReduceSpec) -> Callable:
        axes = spec.axes

        return CallSequence(lambda x, out: (partial(ufunc.reduce, x, axes, None, out, True),))

    return make


# --- quantized MEAN, SUM, REDUCE_PROD ---------------------------------------------------------------------

_TYPE_RANGE = {
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.int16): (-32768, 32767),
}


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _int32_sum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The int32 accumulator TFLite sums into (wrapping on overflow), with the reduced axes kept."""
    return _wrap32(np.add.reduce(x, axis=axes, dtype=np.int64, keepdims=True))


# A blocked sum's rows hold at least this many elements: NumPy's cost per reduced row is then small.
_BLOCKED_ROW = 1024


class _IntegerSums:
    """Sums of an 8/16-bit input over `axes` into integer `sums` (integer additions: any order gives
    TFLite's accumulators, int32 ones wrapping as C's do), in arrays made once with the reducer. The
    input is converted into a staged copy by assignment (a ufunc casting its input goes through NumPy's
    buffers). NumPy reduces over an axis that is not the innermost one row at a time, so [N, H, W, C]
    over H and W with few channels costs a call per pixel; where the reduced axes are consecutive and
    followed only by kept ones, the H*W rows are summed in k groups first ([N, H*W / k, k*C] over its
    middle axis: long rows), staged in int16 when a group's sum fits it, then the k partial rows."""

    def __init__(self, shape: tuple[int, ...], axes: tuple[int, ...], dtype: np.dtype, sums_dtype: np.dtype):
        self.axes = axes
        self.sums = np.empty(_kept(shape, axes), sums_dtype)
        largest = max(abs(v) for v in _TYPE_RANGE[np.dtype(dtype)])
        grouping = _row_groups(shape, axes, largest)
        if grouping is None:
            self._groups = None
            self.staged = np.empty(shape, sums_dtype)  # (a reduction into another type would cast buffered)
            return
        outer, rows, inner, groups, staged = grouping
        self.staged = np.empty((outer, rows // groups, groups * inner), staged)
        self.partial = np.empty((outer, groups * inner), staged)
        self._groups = (outer, groups, inner)

    def __call__(self, x: np.ndarray, initial: int = 0) -> np.ndarray:
        """The sums of `x` (plus `initial`) into self.sums (returned)."""
        if self._groups is None:
            np.copyto(self.staged, x)
            np.add.reduce(self.staged, axis=self.axes, out=self.sums, keepdims=True, initial=initial)
            return self.sums
        outer, groups, inner = self._groups
        np.copyto(self.staged, x.reshape(self.staged.shape))
        np.add.reduce(self.staged, axis=1, out=self.partial)
        partial = self.partial.reshape(outer, groups, inner)
        np.add.reduce(
            partial, axis=1, out=self.sums.reshape(outer, inner), initial=initial, dtype=self.sums.dtype
        )
        return self.sums


def _row_groups(shape: tuple[int, ...], axes: tuple[int, ...], largest: int):
    """(outer, rows, inner, groups, staged dtype) for summing `axes` in groups of rows (_IntegerSums), or
    None where that does not pay: reduced axes not consecutive, rows already long, or too few rows."""
    first, last = min(axes), max(axes)
    if sorted(axes) != list(range(first, last + 1)):
        return None
    outer, rows, inner = (
        math.prod(shape[:first]),
        math.prod(shape[first : last + 1]),
        math.prod(shape[last + 1 :]),
    )
    groups = 1
    while groups * inner < _BLOCKED_ROW and rows % (2 * groups) == 0 and rows // (2 * groups) >= 2:
        groups *= 2
    if groups == 1 or inner == 0:
        return None
    staged = np.dtype(np.int16) if largest * (rows // groups) <= 32767 else np.dtype(np.int32)
    return outer, rows, inner, groups, staged


def _wrap32_in_place(x: np.ndarray) -> None:
    np.add(x, 1 << 31, out=x)
    np.bitwise_and(x, 0xFFFFFFFF, out=x)
    np.subtract(x, 1 << 31, out=x)


def _requantize(x: np.ndarray, multiplier: int, shift: int, simd: bool, work: np.ndarray, spare: np.ndarray):
    """x = multiply_by_quantized_multiplier(x, multiplier, shift) (simd: its _simd form) in place, on
    int64 x; `work` and `spare` (shaped like x) hold the rounding terms."""
    left, right = (max(shift, 0) if simd else max(shift, 0) & 31), max(-shift, 0)
    if left:
        np.left_shift(x, left, out=x)
        _wrap32_in_place(x)
    np.multiply(x, multiplier, out=x)  # SaturatingRoundingDoublingHighMul
    np.add(x, 1 << 30, out=x)
    np.right_shift(x, 31, out=x)
    np.minimum(x, INT32_MAX, out=x)
    if not right:
        return
    if simd:  # the right shift rounds halves up
        np.add(x, (1 << right) >> 1, out=x)
        np.right_shift(x, right, out=x)
        return
    # RoundingDivideByPOT: (x >> right) + [remainder > mask / 2 + (x < 0)], with -[x < 0] = x >> 63
    # and -[remainder > threshold] = (threshold - remainder) >> 63: no bool arrays to cast
    mask = (np.int64(1) << np.int64(right)) - 1
    np.right_shift(x, 63, out=work)
    np.subtract(mask >> 1, work, out=work)
    np.bitwise_and(x, mask, out=spare)
    np.subtract(work, spare, out=work)
    np.right_shift(work, 63, out=work)
    np.right_shift(x, right, out=x)
    np.subtract(x, work, out=x)


# A quantized MEAN maps each output's int32 sum to its value by TFLite's integer arithmetic, in pieces
# over the output's last axis (the optimized kernel rounds whole blocks of 16 channels and the rest
# differently): (where, finish), finish(sums, work, spare) working in place on int64 arrays.
_Finish = Callable[[np.ndarray, np.ndarray, np.ndarray], None]

# Sums spanning at most this many values are looked up: prepare finishes every reachable sum into a
# table, and invoke is the sum (in int16 where it fits) and one `take` per piece.
_LOOKUP_LIMIT = 1 << 16


def _fast_mean_applies(spec: ReduceSpec) -> bool:
    """TFLite's optimized MEAN kernel: a 4-D int8/uint8 input with keep_dims, reduced over exactly H, W."""
    return (
        spec.optimized
        and spec.dtype != np.int16
        and spec.keep_dims
        and len(spec.shape) == 4
        and sorted(spec.axes) == [1, 2]
    )


def _quantized_mean(spec: ReduceSpec) -> Callable:
    if spec.count == 0 or math.prod(spec.shape) == 0:
        return _zeros  # TFLite fills the output of an empty input with "NaN", which is 0 for integers
    pieces = _fast_mean_pieces(spec) if _fast_mean_applies(spec) else _reference_mean_pieces(spec)
    low, high = _TYPE_RANGE[spec.dtype]
    lowest, highest = low * spec.count, high * spec.count
    if highest - lowest < _LOOKUP_LIMIT:
        return _looked_up_mean(spec, pieces, lowest, highest)
    return _computed_mean(spec, pieces)


def _reference_mean_pieces(spec: ReduceSpec) -> list[tuple[object, _Finish]]:
    """reference_ops::QuantizedMeanOrSum: 1 / count folded into the multiplier, keeping its precision."""
    (source_scale, source_zero_point), (output_scale, output_zero_point) = (
        spec.source_quantization,
        spec.output_quantization,
    )
    multiplier, shift = quantize_multiplier(source_scale / output_scale)
    count = spec.count
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    multiplier = (multiplier << extra) // count
    shift -= extra
    low, high = _TYPE_RANGE[spec.dtype]
    offset = source_zero_point * count

    def finish(total, work, spare):
        np.subtract(total, offset, out=total)
        _wrap32_in_place(total)
        _requantize(total, multiplier, shift, False, work, spare)
        np.add(total, output_zero_point, out=total)
        clip(total, low, high, out=total)

    return [(Ellipsis, finish)]


def _fast_mean_pieces(spec: ReduceSpec) -> list[tuple[object, _Finish]]:
    """optimized_integer_ops::Mean (int8) / optimized_ops::Mean (uint8): the raw sum over H x W of each
    channel, times input_scale / (H * W * output_scale) as one multiplier (computed in float32), plus a
    bias from the zero points; channels in whole blocks of 16 use the SIMD multiply (rounding halves
    up), the last depth % 16 the scalar one. (Single-threaded, as LiteRT runs by default: with more
    threads each thread's channel range has its own blocks.)"""
    (source_scale, source_zero_point), (output_scale, output_zero_point) = (
        spec.source_quantization,
        spec.output_quantization,
    )
    f32 = np.float32
    count = f32(spec.shape[1] * spec.shape[2])
    real = f32(source_scale) / (count * f32(output_scale))
    multiplier, shift = quantize_multiplier(float(real))
    temp = f32(source_zero_point) * f32(source_scale) / f32(output_scale)
    temp = temp + f32(0.5) if temp > 0 else temp - f32(0.5)
    bias = output_zero_point - int(temp)  # the C cast truncates
    low, high = _TYPE_RANGE[spec.dtype]

    def rounding(simd: bool) -> _Finish:
        def finish(total, work, spare):
            _requantize(total, multiplier, shift, simd, work, spare)
            np.add(total, bias, out=total)
            clip(total, low, high, out=total)

        return finish

    depth = spec.shape[3]
    blocked = depth - depth % 16
    pieces = [(np.s_[..., :blocked], rounding(True)), (np.s_[..., blocked:], rounding(False))]
    return [(where, finish) for (where, finish), size in zip(pieces, (blocked, depth - blocked)) if size]


def _computed_mean(spec: ReduceSpec, pieces: list[tuple[object, _Finish]]) -> Callable:
    sums = _IntegerSums(spec.shape, spec.axes, spec.dtype, np.dtype(np.int32))
    total, work, spare = (np.empty(sums.sums.shape, np.int64) for _ in range(3))  # requantized in int64

    def mean(x, out):
        np.copyto(total, sums(x))
        for where, finish in pieces:
            finish(total[where], work[where], spare[where])
        np.copyto(out, total, casting="unsafe")

    return mean


def _looked_up_mean(spec: ReduceSpec, pieces: list[tuple[object, _Finish]], lowest: int, highest: int):
    """MEAN as one table of every reachable sum's result per piece, end to end: the sums start from
    -lowest (so they index their piece's table) and each piece's channels add its table's offset."""
    reachable = np.arange(lowest, highest + 1, dtype=np.int64)
    size = reachable.size
    tables = []
    for _, finish in pieces:
        values = reachable.copy()
        finish(values, np.empty_like(values), np.empty_like(values))
        tables.append(values)
    table = np.concatenate(tables).astype(spec.dtype)
    narrow = table.size <= 1 << 15
    sums = _IntegerSums(spec.shape, spec.axes, spec.dtype, np.dtype(np.int16 if narrow else np.int32))
    indices = np.empty(sums.sums.shape, np.intp)  # take converts other index types into a new array
    start = -lowest
    offsets = None
    if len(pieces) > 1:
        offsets = np.zeros(indices.shape[-1], np.intp)
        for index, (where, _) in enumerate(pieces):
            offsets[where] = index * size

    def mean(x, out):
        np.copyto(indices, sums(x, start))
        if offsets is not None:
            np.add(indices, offsets, out=indices)
        table.take(indices, out=out, mode="clip")

    return mean


def _zeros(x, out):
    out[...] = 0


def _quantized_sum(spec: ReduceSpec) -> Callable:
    """optimized_ops::QuantizedMeanOrSum with compute_sum: the int32 sum requantized in float32 arithmetic,
    round(sum * (input_scale / output_scale) + bias) + output zero point, rounding halves away from 0
    (past int32: INT32_MIN on x86 hosts, saturated elsewhere)."""
    (source_scale, source_zero_point), (output_scale, output_zero_point) = (
        spec.source_quantization,
        spec.output_quantization,
    )
    f32 = np.float32
    scale = f32(source_scale) / f32(output_scale)
    bias = f32(-source_zero_point) * scale * f32(spec.count)
    low, high = _TYPE_RANGE[spec.dtype]
    axes = spec.axes

    def quantized_sum(x, out):
        total = _int32_sum(x, axes).astype(np.float32)  # int to float, rounding as C does
        value = total * scale + bias
        with np.errstate(invalid="ignore"):
            result = spec.arithmetic.float_to_int32(round_half_away(value)) + output_zero_point
        np.copyto(out, np.clip(result, low, high), casting="unsafe")

    return quantized_sum


def _reference_quantized_sum(spec: ReduceSpec) -> Callable:
    """BUILTIN_REF's SUM: reference_ops::QuantizedMeanOrSum instantiated for uint8 whatever the input type,
    so int8 bytes are summed as uint8 values and the result clamped to [0, 255] and stored as bytes."""
    if spec.dtype == np.int16:  # (it would read half the input's bytes and write half the output's)
        raise KernelError("TFLite's reference SUM kernel reads int16 input as uint8 bytes: unsupported.")
    (source_scale, source_zero_point), (output_scale, output_zero_point) = (
        spec.source_quantization,
        spec.output_quantization,
    )
    multiplier, shift = quantize_multiplier(source_scale / output_scale)
    axes, offset = spec.axes, source_zero_point * spec.count

    def reference_sum(x, out):
        total = _wrap32(_int32_sum(x.view(np.uint8), axes) - offset)
        result = multiply_by_quantized_multiplier(total, multiplier, shift) + output_zero_point
        np.copyto(out.view(np.uint8), np.clip(result, 0, 255), casting="unsafe")

    return reference_sum


def _quantized_prod(spec: ReduceSpec) -> Callable:
    """QuantizedReduceProd: each output's elements multiplied in memory order, every product requantized by
    input_scale / output_scale ** (1 / count), and the result once more. The optimized kernel drops axes
    of size 1 first, and with none left copies the input unchanged; the reference kernel requantizes."""
    (source_scale, source_zero_point), (output_scale, output_zero_point) = (
        spec.source_quantization,
        spec.output_quantization,
    )
    count = spec.count
    if count == 0 or math.prod(spec.shape) == 0:
        return _leave  # TFLite returns before writing anything
    if count == 1 and spec.optimized:  # only axes of size 1: the optimized kernel copies the raw values
        return _copy
    multiplier, shift = quantize_multiplier(source_scale / math.pow(output_scale, 1.0 / count))
    low, high = _TYPE_RANGE[spec.dtype]
    rank = len(spec.shape)
    order = [a for a in range(rank) if a not in spec.axes] + sorted(spec.axes)

    def requantize(x):
        return _wrap32(multiply_by_quantized_multiplier_int64(x, multiplier, shift))

    def product(x, out):
        rows = x.transpose(order).reshape(-1, count).astype(np.int64) - source_zero_point
        current = rows[:, 0]
        for column in range(1, count):
            current = requantize(current * rows[:, column])
        result = requantize(current) + output_zero_point
        np.copyto(out, np.clip(result, low, high).reshape(out.shape), casting="unsafe")

    return product


def _copy(x, out):
    out[...] = x.reshape(out.shape)


def _leave(x, out):
    """The output keeps whatever it held."""


@dataclass(frozen=True)
class ReduceData:
    run: Callable[[np.ndarray, np.ndarray], None] | None  # None: the axis tensor is computed at run time
    kept: tuple[int, ...] = ()  # the output's shape with the reduced dimensions kept
    quantized: bool = False  # the reduction requantizes (its reducer gets the quantization parameters)
    arithmetic: HostArithmetic = X86  # the host's, read in prepare


def _quantization_rule(op_name: str, source, output) -> bool:
    """Validate the quantized input and output of a reduction; True when it requantizes (MEAN and SUM of
    8/16-bit inputs, REDUCE_PROD of quantized int8/int16), False for a pass-through or plain integers."""
    if source.type not in _QUANTIZED:
        return False
    if source.type == TensorType.INT16:
        ensure_eq(source.params.zero_point, 0, f"{op_name} int16 input zero point")
        ensure_eq(output.params.zero_point, 0, f"{op_name} int16 output zero point")
    if op_name == "REDUCE_PROD" and source.quantization is not None:
        ensure(
            source.type in (TensorType.INT8, TensorType.INT16),
            f"Unsupported quantized data type: {type_name(source.type)}",
        )
    elif op_name not in ("MEAN", "SUM"):
        # TFLite's generic reduction (MAX, MIN, plain integer PROD) passes raw values through
        ensure_same_quantization(source, output)
        return False
    for tensor, what in ((source, "input"), (output, "output")):
        ensure(
            tensor.params.scale > 0,
            f"{op_name} of {type_name(source.type)} needs a quantized {what} with a positive scale.",
        )
    return True


def reducer(op_name: str, make: Reducer, types: tuple[TensorType, ...], optimized: bool = True):
    """Prepare, invoke and bind functions for one reduction."""

    def spec_for(data: ReduceData, node, source, output, axes) -> ReduceSpec:
        quantized = data.quantized
        return ReduceSpec(
            tuple(source.shape),
            axes,
            source.dtype,
            bool(node.builtin_data.keep_dims),
            (source.params.scale, source.params.zero_point) if quantized else None,
            (output.params.scale, output.params.zero_point) if quantized else None,
            optimized,
            data.arithmetic,
        )

    def prepare(context, node):
        check_arity(node, 2)
        source, axis, output = (
            input_tensor(context, node, 0),
            input_tensor(context, node, 1),
            output_tensor(context, node),
        )
        ensure_type(source, types, "input", op_name)
        ensure_eq(output.type, source.type, f"{op_name} output type")
        ensure_type(axis, TensorType.INT32, "axis", op_name)
        data = ReduceData(
            None, quantized=_quantization_rule(op_name, source, output), arithmetic=context.host.arithmetic
        )
        if axis.allocation_type not in (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO):
            node.user_data = data
            context.set_tensor_to_dynamic(output)
            return
        shape = tuple(source.shape)
        axes = resolve_axes(axis.data, len(shape))
        run = make(spec_for(data, node, source, output, axes))
        node.user_data = dataclasses.replace(data, run=run, kept=_kept(shape, axes))
        context.resize_tensor(output, reduced_shape(shape, axes, node.builtin_data.keep_dims))

    def invoke(context, node):
        tensors = context.tensors
        data = node.user_data
        source = tensors[node.inputs[0]]
        run, kept = data.run, data.kept
        if run is None:
            shape = tuple(source.shape)
            axes = resolve_axes(tensors[node.inputs[1]].data, len(shape))
            output = tensors[node.outputs[0]]
            context.resize_tensor(output, reduced_shape(shape, axes, node.builtin_data.keep_dims))
            run, kept = make(spec_for(data, node, source, output, axes)), _kept(shape, axes)
        run(source.data, tensors[node.outputs[0]].data.reshape(kept))

    def bind(context, node):
        """With constant axes, the step holds the input and the output viewed with the kept dimensions."""
        data = node.user_data
        if data.run is None:
            return invoke
        tensors, run = context.tensors, data.run
        x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data.reshape(data.kept)
        if isinstance(run, CallSequence):
            return Direct(*run.calls_of(x, out))

        def step(context, node):
            run(x, out)

        return step

    return prepare, invoke, bind


_EXTREMES = (*_NUMBERS, *_QUANTIZED)
_INTEGER_PRODUCTS = (*_NUMBERS, TensorType.UINT8, TensorType.INT8, TensorType.INT16)

# op: (reducer, types, versions, has a BUILTIN_REF variant)
_REDUCERS = {
    BuiltinOperator.MEAN: (_mean, (*_NUMBERS, *_QUANTIZED), (1, 3), True),
    BuiltinOperator.SUM: (_sum, (*_NUMBERS, *_QUANTIZED), (1, 2), True),
    BuiltinOperator.REDUCE_PROD: (_prod, _INTEGER_PRODUCTS, (1, 2), True),
    BuiltinOperator.REDUCE_MAX: (_extreme(np.maximum, lowest=True), _EXTREMES, (1, 3), False),
    BuiltinOperator.REDUCE_MIN: (_extreme(np.minimum, lowest=False), _EXTREMES, (1, 3), False),
    BuiltinOperator.REDUCE_ANY: (_plain(np.logical_or), (TensorType.BOOL,), (1, 1), False),
    BuiltinOperator.REDUCE_ALL: (_plain(np.logical_and), (TensorType.BOOL,), (1, 1), False),
}

for _op, (_compute, _types, _versions, _has_reference) in _REDUCERS.items():
    _prepare, _invoke, _bind = reducer(_op.name, _compute, _types)
    _twin = None
    if _has_reference:
        _twin = dict(zip(("prepare", "invoke", "bind"), reducer(_op.name, _compute, _types, optimized=False)))
    register_builtin(
        _op,
        _versions,
        types=_types,
        op_data=ReduceData,
        prepare=_prepare,
        invoke=_invoke,
        bind=_bind,
        builtin_ref=_twin,
    )


# --- ARG_MAX / ARG_MIN ----------------------------------------------------------------------------

_ARG_TYPES = (TensorType.FLOAT32, TensorType.UINT8, TensorType.INT8, TensorType.INT32, TensorType.BOOL)
_AXIS_TYPES = (TensorType.INT32, TensorType.INT64)
_INDEX_TYPES = (TensorType.INT32, TensorType.INT64)


def read_axis(axis: np.ndarray, rank: int) -> int:
    """The one value of an int32/int64 axis tensor, made non-negative (TFLite's ReadAndNormalizeAxis)."""
    value = int(axis.reshape(-1)[0])
    if value < 0:
        value += rank
    ensure(0 <= value < rank, "Invalid axis value.")
    return value


def _ensure_single_axis(axis, op_name: str) -> None:
    ensure_eq(math.prod(axis.shape), 1, f"{op_name} axis element count")


def _arg_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    ensure(shape[axis] > 0, "Cannot compute ArgMin/ArgMax over an empty axis.")
    return shape[:axis] + shape[axis + 1 :]


def _nan_skipping_arg(x: np.ndarray, axis: int, is_max: bool) -> np.ndarray:
    """First index of the max/min among the non-NaN values; 0 where a slice is all NaN."""
    valid = ~np.isnan(x)
    if is_max:
        extreme = np.max(x, axis=axis, initial=-np.inf, where=valid, keepdims=True)
    else:
        extreme = np.min(x, axis=axis, initial=np.inf, where=valid, keepdims=True)
    return np.argmax(x == extreme, axis=axis)


def _innermost_nan_arg(rows: np.ndarray, is_max: bool) -> np.ndarray:
    """ARG_MAX/ARG_MIN of float rows holding NaNs, as TFLite's row kernel computes it (the reduced axis
    innermost): four lanes scan the whole blocks of four, skipping NaNs; the lanes are then folded
    pairwise by a compare that keeps its first operand when either is NaN; the first index among the
    lanes equal to that value wins, and the remaining elements are scanned NaN-aware. A NaN result
    gives 0. Rows shorter than four are scanned NaN-aware from the start."""
    better = np.greater if is_max else np.less
    count, size = rows.shape
    if size < 4:
        value, index, start = rows[:, 0].copy(), np.zeros(count, np.int64), 1
    else:
        lanes, lane_index = rows[:, :4].copy(), np.broadcast_to(np.arange(4), (count, 4)).copy()
        start = 4
        while start <= size - 4:
            block = rows[:, start : start + 4]
            take = ~np.isnan(block) & (np.isnan(lanes) | better(block, lanes))
            np.copyto(lanes, block, where=take)
            np.copyto(lane_index, np.arange(start, start + 4), where=take)
            start += 4

        def fold(p, q):
            return np.where(better(q, p), q, p)

        value = fold(fold(lanes[:, 0], lanes[:, 1]), fold(lanes[:, 2], lanes[:, 3]))
        matches = lanes == value[:, None]
        index = np.where(matches, lane_index, size).min(axis=1)  # size: past every lane's index
    for i in range(start, size):
        column = rows[:, i]
        take = ~np.isnan(column) & (np.isnan(value) | better(column, value))
        value = np.where(take, column, value)
        index = np.where(take, i, index)
    return np.where(np.isnan(value), 0, index)


@dataclass(frozen=True, slots=True)
class ArgData:
    axis: int  # resolved in prepare from a constant axis tensor


def arg_extreme(op_name: str, is_max: bool):
    """Prepare and invoke functions for ARG_MAX (is_max) or ARG_MIN."""
    pick = np.ndarray.argmax if is_max else np.ndarray.argmin  # the methods skip np.argmax's dispatch

    def prepare(context, node):
        check_arity(node, 2)
        source, axis, output = (
            input_tensor(context, node, 0),
            input_tensor(context, node, 1),
            output_tensor(context, node),
        )
        ensure_type(source, _ARG_TYPES, "input", op_name)
        ensure_type(axis, _AXIS_TYPES, "axis", op_name)
        _ensure_single_axis(axis, op_name)
        index_type = node.builtin_data.output_type
        ensure(index_type in _INDEX_TYPES, f"Unknown index output data type: {int(index_type)}")
        ensure(
            output.type == index_type,
            f"{op_name} output type {type_name(output.type)} != output_type option {type_name(index_type)}",
        )
        ensure(len(source.shape) >= 1, f"{op_name} input must have at least one dimension")
        if not axis.is_constant_or_persistent:
            node.user_data = None
            context.set_tensor_to_dynamic(output)
            return
        value = read_axis(axis.data, len(source.shape))
        node.user_data = ArgData(value)
        context.resize_tensor(output, _arg_shape(source.shape, value))

    def invoke(context, node):
        tensors = context.tensors
        source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
        data = node.user_data
        if data is None:
            axis = read_axis(tensors[node.inputs[1]].data, len(source.shape))
            context.resize_tensor(output, _arg_shape(source.shape, axis))
        else:
            axis = data.axis
        out = output.data
        if out.size == 0:
            return
        x = source.data
        index = pick(x, axis)
        if x.dtype.kind == "f" and np.isnan(x).any():
            # NumPy picks the first NaN; TFLite skips NaNs (in its own way along the innermost axis).
            if math.prod(x.shape[axis + 1 :]) == 1:
                index = _innermost_nan_arg(x.reshape(-1, x.shape[axis]), is_max).reshape(out.shape)
            else:
                index = _nan_skipping_arg(x, axis, is_max)
        out[...] = index

    return prepare, invoke


for _op, _is_max in ((BuiltinOperator.ARG_MAX, True), (BuiltinOperator.ARG_MIN, False)):
    _prepare, _invoke = arg_extreme(_op.name, _is_max)
    register_builtin(_op, (1, 3), types=_ARG_TYPES, op_data=ArgData, prepare=_prepare, invoke=_invoke)


# --- CUMSUM ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CumsumPlan:
    """Running sums of x[source] along `axis` go to out[target] (both in scan order); an exclusive sum
    first sets out[zero] to 0."""

    axis: int
    source: tuple
    target: tuple
    zero: tuple | None


def _cumsum_plan(node, shape: tuple[int, ...], axis_values: np.ndarray) -> CumsumPlan:
    axis = read_axis(axis_values, len(shape))
    before, length = (slice(None),) * axis, shape[axis]
    options = node.builtin_data
    if not options.exclusive:
        scan = (*before, slice(None, None, -1) if options.reverse else slice(None))
        return CumsumPlan(axis, scan, scan, None)
    if options.reverse:  # out[n-2], ..., out[0] get x[n-1], x[n-1] + x[n-2], ...
        first = length - 1
        source = slice(length - 1, 0, -1)
        target = slice(length - 2, None, -1) if length >= 2 else slice(0, 0)
    else:
        first, source, target = 0, slice(0, length - 1), slice(1, length)
    return CumsumPlan(axis, (*before, source), (*before, target), (*before, slice(first, first + 1)))


def cumsum_prepare(context, node):
    check_arity(node, 2)
    source, axis, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, _NUMBERS, "input", "CUMSUM")
    ensure_types_eq(source, output, "CUMSUM input/output types")
    ensure_type(axis, TensorType.INT32, "axis", "CUMSUM")
    _ensure_single_axis(axis, "CUMSUM")
    ensure(len(source.shape) >= 1, "CUMSUM input must have at least one dimension")
    node.user_data = (
        _cumsum_plan(node, tuple(source.shape), axis.data) if axis.is_constant_or_persistent else None
    )
    context.resize_tensor(output, source.shape)


def cumsum_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    plan = node.user_data
    if plan is None:
        plan = _cumsum_plan(node, x.shape, tensors[node.inputs[1]].data)
    if out.size == 0:
        return
    if plan.zero is not None:
        out[plan.zero] = 0
    np.add.accumulate(x[plan.source], axis=plan.axis, dtype=out.dtype, out=out[plan.target])


register_builtin(
    BuiltinOperator.CUMSUM,
    (1, 1),
    types=_NUMBERS,
    op_data=CumsumPlan,
    prepare=cumsum_prepare,
    invoke=cumsum_invoke,
)


# --- TOPK_V2 --------------------------------------------------------------------------------------

_TOPK_TYPES = (
    TensorType.FLOAT32,
    TensorType.UINT8,
    TensorType.INT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
)
_K_TYPES = (TensorType.INT32, TensorType.INT16)


def _topk_shape(shape: tuple[int, ...], k: int) -> tuple[int, ...]:
    if k > 0:
        ensure(k <= shape[-1], "TopK k is higher than the internal dimension.")
    return (*shape[:-1], max(0, k))


@dataclass(frozen=True)
class TopkPlan:
    """What invoke needs for one input shape and k."""

    shape: tuple[int, ...]  # of both outputs
    k: int
    # Descending order as an ascending stable sort of keys: negated floats (NaN stays NaN and sorts last),
    # complemented integers (order-reversing without overflow). Stability keeps ties in index order.
    key: np.ufunc
    starts: np.ndarray  # [..., 1]: where each row starts in the flattened input
    fits: bool  # the row size fits the index type (TFLite checks it only when there is output)


def _topk_plan(source, k: int, index_dtype: np.dtype) -> TopkPlan:
    shape = tuple(source.shape)
    starts = (np.arange(math.prod(shape[:-1])) * shape[-1]).reshape(*shape[:-1], 1)
    key = np.negative if source.dtype.kind == "f" else np.invert
    fits = shape[-1] <= np.iinfo(index_dtype).max
    return TopkPlan(_topk_shape(shape, k), k, key, starts, fits)


def topk_prepare(context, node):
    check_arity(node, 2, outputs=2)
    source, k_tensor = input_tensor(context, node, 0), input_tensor(context, node, 1)
    values, indices = output_tensor(context, node, 0), output_tensor(context, node, 1)
    ensure_type(source, _TOPK_TYPES, "input", "TOPK_V2")
    ensure_types_eq(source, values, "TOPK_V2 input/values types")
    ensure_type(k_tensor, _K_TYPES, "k", "TOPK_V2")
    ensure_eq(math.prod(k_tensor.shape), 1, "TOPK_V2 k element count")
    ensure(
        indices.type in _K_TYPES,
        f"Output index type {type_name(indices.type)} is currently not supported by TopK.",
    )
    ensure(len(source.shape) >= 1, "TopK k input must have 1 or more dimensions.")
    if k_tensor.is_constant_or_persistent and -1 not in source.shape_signature:
        node.user_data = plan = _topk_plan(source, int(k_tensor.data.reshape(-1)[0]), indices.dtype)
        context.resize_tensor(indices, plan.shape)
        context.resize_tensor(values, plan.shape)
        return
    node.user_data = None
    context.set_tensor_to_dynamic(indices)
    context.set_tensor_to_dynamic(values)


def topk_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]]
    values, indices = tensors[node.outputs[0]], tensors[node.outputs[1]]
    plan = node.user_data
    if plan is None:
        plan = _topk_plan(source, int(tensors[node.inputs[1]].data.reshape(-1)[0]), indices.dtype)
        context.resize_tensor(indices, plan.shape)
        context.resize_tensor(values, plan.shape)
    if values.data.size == 0:
        return
    if not plan.fits:
        raise KernelError("TopK row size exceeds output index type range.")
    x = source.data
    order = plan.key(x).argsort(-1, kind="stable")[..., : plan.k]
    indices.data[...] = order
    x.reshape(-1).take(order + plan.starts, out=values.data)


register_builtin(
    BuiltinOperator.TOPK_V2,
    (1, 3),
    types=_TOPK_TYPES,
    op_data=TopkPlan,
    prepare=topk_prepare,
    invoke=topk_invoke,
)

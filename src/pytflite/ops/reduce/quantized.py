"""Quantized MEAN, SUM and REDUCE_PROD: TFLite's integer arithmetic, requantized (see reduce/__init__.py)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...errors import KernelError
from ..common import clip
from ..kernel_type import OPTIMIZED
from ..quant.fixed_point import (
    INT32_MAX,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int64,
    quantize_multiplier,
    round_half_away,
)
from .common import ReduceSpec, kept_shape

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
        self.sums = np.empty(kept_shape(shape, axes), sums_dtype)
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
        spec.kernel_type is OPTIMIZED
        and spec.dtype != np.int16
        and spec.keep_dims
        and len(spec.shape) == 4
        and sorted(spec.axes) == [1, 2]
    )


def quantized_mean(spec: ReduceSpec) -> Callable:
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


def quantized_sum(spec: ReduceSpec) -> Callable:
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


def reference_quantized_sum(spec: ReduceSpec) -> Callable:
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


def quantized_prod(spec: ReduceSpec) -> Callable:
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
    if count == 1 and spec.kernel_type is OPTIMIZED:  # only axes of size 1: the raw values are copied
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

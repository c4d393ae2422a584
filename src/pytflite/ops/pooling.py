"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D over NHWC inputs.

Only taps inside the input count: padded positions are skipped by the max and excluded from the
average's divisor (TFLite's filter_count). Two ways to compute, chosen in prepare:
- separable (the general case): max and sum over a window are a fold over the window's rows, then over
  its columns. The input, padded with the fold's identity (lowest value, or 0) where windows overhang
  it (windows.Staging), is folded row tap by row tap into [N, OH, W', C] (each fold one NumPy call whose
  inner loop runs along whole rows), then column tap by column tap into the output: KH + KW - 2 calls
  instead of KH * KW - 1. The average divides by the valid-tap counts (rows x columns per position);
- a plain reduction over H and W when one window covers the whole input (global pooling).

MAX_POOL_2D and AVERAGE_POOL_2D also take int8, uint8 and int16, without requantization: TFLite only
DCHECKs (a no-op in release builds) that input and output share their quantization and computes on the
stored integers, whatever the output's parameters. The max is taken as it is; the average sums the
valid taps and divides by their count rounding half away from zero, `(sum +- count/2) / count` in C's
truncating integer division, as every TFLite kernel (reference, optimized, NEON or not) does. Here the
input is staged into a float32 scratch (float64 for int16 windows of 256 taps or more) and summed and
divided there: while |sum| + count/2 < 2**24 every sum is exact and truncating the correctly rounded
quotient gives C's integer quotient (a quotient within 1/count of an integer would need 24 more bits).
The fused activation becomes a clamp to the output's quantized range.
L2_POOL_2D is float32 only in TFLite too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType, storage_dtype
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import (
    activation_clamp,
    add_scratch_tensors,
    check_arity,
    input_tensor,
    output_tensor,
    scratch_tensor,
    set_temporaries,
)
from .registry import register_builtin
from .windows import Staging, make_staging, output_size, padded_copies, padding_before_after

_FLOAT = (TensorType.FLOAT32,)
_MAX_TYPES = (TensorType.FLOAT32, TensorType.INT8, TensorType.UINT8, TensorType.INT16)
_AVERAGE_TYPES = _MAX_TYPES
_QUANTIZED = (TensorType.INT8, TensorType.UINT8, TensorType.INT16)
_ALL = slice(None)


@dataclass(frozen=True)
class PoolState:
    """init makes it with the temporaries' indices; each prepare replaces it with the plan for its shapes."""

    stage: int  # temporary: the padded input (L2_POOL_2D: its squares; quantized average: as int32)
    rows: int  # temporary: the fold over window rows, [N, OH, W', C]
    sums: int  # temporary: the quantized average's window sums, [N, OH, OW, C]
    signs: int  # temporary: +-count/2 with each sum's sign (signed types)
    mode: str = "separable"  # "separable", "global" or "empty"
    staging: Staging | None = None  # None: the input is read as it is
    row_taps: tuple[tuple, ...] = ()  # the staged input's rows each window row tap reads
    column_taps: tuple[tuple, ...] = ()  # the row fold's columns each window column tap reads
    count: np.ndarray | float = 1.0  # valid taps per output position ([OH, OW*C]) or one number
    clamp: Callable[[np.ndarray], None] | None = None
    sum_type: TensorType | None = None  # quantized AVERAGE_POOL_2D: the float type summing exactly
    half: np.ndarray | float = 0.0  # count // 2, the rounding term of the integer division


def _pool_init(context, buffer, length):
    stage, rows, sums, signs = add_scratch_tensors(context, 4)
    return PoolState(stage=stage, rows=rows, sums=sums, signs=signs)


def _quantized_clamp(tensor, activation) -> Callable[[np.ndarray], None] | None:
    """The fused activation as a clamp to the output's quantized range (CalculateActivationRangeQuantized)."""
    info = np.iinfo(tensor.dtype)
    low, high = int(info.min), int(info.max)
    scale, zero_point = float(tensor.params.scale), int(tensor.params.zero_point)

    def quantize(value: float) -> int:
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.float32(value) / np.float32(scale)
        ensure(np.isfinite(scaled), "quantized activation range overflows int32")
        rounded = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))  # half away from zero
        return zero_point + int(rounded)

    if activation == ActivationFunctionType.RELU:
        low = max(low, quantize(0.0))
    elif activation == ActivationFunctionType.RELU6:
        low, high = max(low, quantize(0.0)), min(high, quantize(6.0))
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        low, high = max(low, quantize(-1.0)), min(high, quantize(1.0))
    else:
        return None
    return lambda out: np.clip(out, low, high, out=out)


def _output_hw(padding, size_hw, kernel, strides) -> tuple[int, int]:
    """TFLite's ComputePaddingHeightWidth: the width first; a negative one leaves both sizes 0, a
    negative height only the height."""
    try:
        width = output_size(padding, size_hw[1], kernel[1], strides[1], 1, checked=True)
    except KernelError:
        return 0, 0
    return output_size(padding, size_hw[0], kernel[0], strides[0], 1), width


def _valid_taps(size: int, kernel: int, stride: int, pad: int, out: int) -> np.ndarray:
    """Per output position along one dimension, how many of the window's taps fall inside the input."""
    starts = np.arange(out) * stride - pad
    return np.minimum(starts + kernel, size) - np.maximum(starts, 0)


def _plan_separable(
    context, state: PoolState, source, op_name: str, out, kernel, strides, pads
) -> tuple[PoolState, list]:
    """`state` with the separable fold's staging, taps and counts, and the temporaries it needs."""
    n, h, w, channels = source.shape
    (oh, ow), (kh, kw), (sh, sw) = out, kernel, strides
    extents = ((oh - 1) * sh + kh, (ow - 1) * sw + kw)
    temporaries = []
    # the quantized average sums in floats: its input is always staged, converted
    fold_type = source.type if state.sum_type is None else state.sum_type
    staging = any(pads) or extents[0] > h or extents[1] > w or state.sum_type is not None
    staged = (n, *extents, channels) if staging else tuple(source.shape)
    if staging or op_name == "L2_POOL_2D":
        scratch_tensor(context, state.stage, fold_type, staged)  # held to the Limits before the mask
        temporaries.append(state.stage)
    plan = None
    if staging:
        itemsize = storage_dtype(fold_type).itemsize
        plan = make_staging(staged, padded_copies(source.shape, extents, pads), itemsize)
    columns = _ALL if kw > 1 else slice(0, (ow - 1) * sw + 1, sw)
    row_taps = tuple((_ALL, slice(i, i + (oh - 1) * sh + 1, sh), columns, _ALL) for i in range(kh))
    column_taps = tuple((_ALL, _ALL, slice(j, j + (ow - 1) * sw + 1, sw), _ALL) for j in range(kw))
    if kh > 1 and kw > 1:
        scratch_tensor(context, state.rows, fold_type, (n, oh, staged[2], channels))
        temporaries.append(state.rows)
    rows = _valid_taps(h, kh, sh, pads[0], oh)
    cols = _valid_taps(w, kw, sw, pads[1], ow)
    if rows.min() == rows.max() and cols.min() == cols.max():
        area = int(rows[0] * cols[0])
        count, half = float(area), float(area // 2)
    else:
        counts = np.repeat(rows[:, None] * cols[None, :], channels, axis=1)  # [OH, OW*C]
        dtype = np.float32 if state.sum_type is None else storage_dtype(state.sum_type)
        # counts >= 1: half by a shift (numpy 1.24's AVX-512 int32 floor_divide by a scalar, as Debian's
        # i386 build runs it, returns the dividend for arrays of 16 or more)
        count, half = counts.astype(dtype), (counts >> 1).astype(dtype)
    planned = dataclasses.replace(
        state,
        staging=plan,
        row_taps=row_taps,
        column_taps=column_taps,
        count=count,
        half=half,
    )
    return planned, temporaries


def pool_prepare_for(op_name: str, types: tuple[TensorType, ...]):
    def prepare(context, node):
        check_arity(node, 1)
        options = node.builtin_data
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_eq(len(source.shape), 4, f"{op_name} input rank")
        ensure_types_eq(source, output, f"{op_name} input/output types")
        ensure_type(source, types, "input", op_name)
        ensure(options.stride_h > 0 and options.stride_w > 0, f"{op_name} strides must be positive")
        n, h, w, channels = source.shape
        kernel = (options.filter_height, options.filter_width)
        strides = (options.stride_h, options.stride_w)
        out = _output_hw(options.padding, (h, w), kernel, strides)
        pads = tuple(
            padding_before_after((h, w)[i], max(kernel[i], 1), strides[i], 1, out[i])[0] for i in range(2)
        )
        context.resize_tensor(output, (n, *out, channels))
        if source.type in _QUANTIZED:
            clamp = _quantized_clamp(output, options.fused_activation_function)
        else:
            clamp = activation_clamp(options.fused_activation_function)
        temporaries = []
        area = kernel[0] * kernel[1]
        sum_type = None
        if op_name == "AVERAGE_POOL_2D" and source.type in _QUANTIZED:
            info = np.iinfo(source.dtype)
            exact = max(-int(info.min), int(info.max)) * area + area // 2 < 2**24
            sum_type = TensorType.FLOAT32 if exact else TensorType.FLOAT64
        if min(out) == 0 or n * channels == 0:
            mode = "empty"
        elif out == (1, 1) and kernel == (h, w) and not any(pads):
            mode = "global"
        else:
            mode = "separable"
        made = node.user_data  # by init: the temporaries' indices
        state = PoolState(
            made.stage,
            made.rows,
            made.sums,
            made.signs,
            mode=mode,
            clamp=clamp,
            sum_type=sum_type,
            count=float(area),
            half=float(area // 2),
        )
        if mode == "global" and op_name == "L2_POOL_2D":
            scratch_tensor(context, state.stage, source.type, source.shape)
            temporaries.append(state.stage)
        elif mode == "separable":
            state, temporaries = _plan_separable(context, state, source, op_name, out, kernel, strides, pads)
        node.user_data = state
        if state.sum_type is not None and state.mode != "empty":
            scratch_tensor(context, state.sums, state.sum_type, output.shape)
            temporaries.append(state.sums)
            if np.iinfo(source.dtype).min < 0:
                scratch_tensor(context, state.signs, state.sum_type, output.shape)
                temporaries.append(state.signs)
        owned = (state.stage, state.rows, state.sums, state.signs)
        set_temporaries(context, node, owned, temporaries)

    return prepare


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _fold(ufunc: np.ufunc, x: np.ndarray, taps: tuple[tuple, ...], out: np.ndarray) -> None:
    """out = the ufunc-fold of x's tap regions."""
    if len(taps) == 1:
        np.copyto(out, x[taps[0]])
        return
    ufunc(x[taps[0]], x[taps[1]], out=out)
    for tap in taps[2:]:
        ufunc(out, x[tap], out=out)


def _reduce(context, node, x: np.ndarray, out: np.ndarray, ufunc: np.ufunc, identity, square=False) -> None:
    """out = the ufunc-fold over each window of x (of its squares with `square`)."""
    state = node.user_data
    tensors = context.tensors
    if state.mode == "global":
        if state.sum_type is not None:
            flat = x.reshape(x.shape[0], -1, x.shape[3])
            np.sum(flat, axis=1, dtype=out.dtype, out=out.reshape(out.shape[0], -1))
            return
        if square:
            x = np.square(x, out=tensors[node.temporaries[0]].data)
        ufunc.reduce(x.reshape(x.shape[0], -1, x.shape[3]), axis=1, out=out.reshape(out.shape[0], -1))
        return
    if state.staging is not None:
        stage = tensors[state.stage].data
        state.staging.fill(x, stage, identity)
        x = np.square(stage, out=stage) if square else stage
    elif square:
        x = np.square(x, out=tensors[state.stage].data)
    row_taps, column_taps = state.row_taps, state.column_taps
    if len(column_taps) == 1:
        _fold(ufunc, x, row_taps, out)
    elif len(row_taps) == 1:
        _fold(ufunc, x[row_taps[0]], column_taps, out)
    else:
        rows = tensors[state.rows].data
        _fold(ufunc, x, row_taps, rows)
        _fold(ufunc, rows, column_taps, out)


def _average(out: np.ndarray, count) -> None:
    if isinstance(count, float):
        np.divide(out, count, out=out)
    else:
        lines = out.reshape(out.shape[0], out.shape[1], -1)
        np.divide(lines, count, out=lines)


def max_pool_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    if state.mode == "empty":
        return
    x = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    _reduce(context, node, x, out, np.maximum, _lowest(x.dtype))
    if state.clamp is not None:
        state.clamp(out)


def _rounded_average(sums: np.ndarray, signs: np.ndarray | None, count, half) -> None:
    """sums = trunc((sums +- count/2) / count), the sign of each sum's (see the module docstring)."""
    per_position = isinstance(count, np.ndarray)
    lines = sums.reshape(sums.shape[0], sums.shape[1], -1) if per_position else sums
    if signs is None:  # unsigned: every sum is >= 0
        np.add(lines, half, out=lines)
    else:
        signs = signs.reshape(lines.shape)
        np.copysign(half, lines, out=signs)  # a zero sum gets +count/2, as C's `acc > 0 ? : ` gives 0 too
        np.add(lines, signs, out=lines)
    np.divide(lines, count, out=lines)
    np.trunc(sums, out=sums)


def average_pool_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    if state.mode == "empty":
        return
    out = tensors[node.outputs[0]].data
    if state.sum_type is not None:
        sums = tensors[state.sums].data
        _reduce(context, node, tensors[node.inputs[0]].data, sums, np.add, 0)
        signs = tensors[state.signs].data if state.signs in node.temporaries else None
        _rounded_average(sums, signs, state.count, state.half)
        if state.clamp is not None:
            state.clamp(sums)
        np.copyto(out, sums, casting="unsafe")
        return
    _reduce(context, node, tensors[node.inputs[0]].data, out, np.add, 0)
    _average(out, state.count)
    if state.clamp is not None:
        state.clamp(out)


def l2_pool_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    if state.mode == "empty":
        return
    out = tensors[node.outputs[0]].data
    _reduce(context, node, tensors[node.inputs[0]].data, out, np.add, 0, square=True)
    _average(out, state.count)
    np.sqrt(out, out=out)
    if state.clamp is not None:
        state.clamp(out)


for _op, _versions, _types, _invoke in (
    (BuiltinOperator.AVERAGE_POOL_2D, (1, 3), _AVERAGE_TYPES, average_pool_invoke),
    (BuiltinOperator.MAX_POOL_2D, (1, 3), _MAX_TYPES, max_pool_invoke),
    (BuiltinOperator.L2_POOL_2D, (1, 1), _FLOAT, l2_pool_invoke),
):
    register_builtin(
        _op,
        _versions,
        types=_types,
        op_data=PoolState,
        init=_pool_init,
        prepare=pool_prepare_for(_op.name, _types),
        invoke=_invoke,
    )

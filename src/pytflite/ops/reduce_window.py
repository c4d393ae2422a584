"""REDUCE_WINDOW: a reduction (add, mul, min, max, all, any) over strided, dilated windows that slide
over every axis, each output starting from an init value (TFLite's deprecated, pre-StableHLO form:
no base dilation, no padding; window shape, strides and dilations are constant int64 inputs).

TFLite folds each window's elements into its accumulator one at a time in row-major window order;
invoke does the same, one window element at a time for all outputs at once, so float sums and products
round exactly as TFLite's. Min and max keep the accumulator on ties and follow its comparisons with NaN.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..core.types import TFLITE_TYPE_NUMBER, BuiltinOperator, TensorType
from ..errors import KernelError, ensure
from ..model.options import ReduceWindowFunction
from .common import check_arity, input_tensor, output_tensor
from .registry import register_builtin

T = TensorType
TYPES = (T.BOOL, T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.FLOAT32, T.FLOAT64)
_MAX_RANK = 6


@dataclass(frozen=True)
class ReduceWindowData:
    function: ReduceWindowFunction
    windows: tuple[tuple[slice, ...], ...]  # per window element: the input view it contributes


def ensure_type_eq(first, second: TensorType, condition: str) -> None:
    """TF_LITE_ENSURE_EQ on types: TFLite prints their TfLiteType numbers."""
    if first.type != second:
        raise KernelError(
            f"{condition} ({TFLITE_TYPE_NUMBER.get(first.type, 0)} != {TFLITE_TYPE_NUMBER.get(second, 0)})"
        )


def reduce_window_prepare(context, node):
    check_arity(node, 5)
    source, init, shape, strides, dilations = (input_tensor(context, node, i) for i in range(5))
    output = output_tensor(context, node)
    ensure(shape.is_constant, "IsConstantTensor(window_dimensions_tensor) was not true.")
    ensure(strides.is_constant, "IsConstantTensor(window_strides_tensor) was not true.")
    ensure(dilations.is_constant, "IsConstantTensor(window_dilations_tensor) was not true.")
    ensure_type_eq(source, output.type, "input_tensor->type != output_tensor->type")
    ensure_type_eq(source, init.type, "input_tensor->type != init_value_tensor->type")
    ensure_type_eq(shape, T.INT64, "window_dimensions_tensor->type != kTfLiteInt64")
    ensure_type_eq(strides, T.INT64, "window_strides_tensor->type != kTfLiteInt64")
    ensure_type_eq(dilations, T.INT64, "window_dilations_tensor->type != kTfLiteInt64")
    rank = len(source.shape)
    ensure(rank > 0, "input_tensor->dims->size > 0 was not true.")
    ensure(rank <= _MAX_RANK, "input_tensor->dims->size <= kMaxReduceWindowRank was not true.")
    window = _attribute(shape, rank, "window_dimensions")
    step = _attribute(strides, rank, "window_strides")
    spread = _attribute(dilations, rank, "window_dilations")
    out_shape, windows = sliding_windows(source.shape, window, step, spread)
    node.user_data = ReduceWindowData(ReduceWindowFunction(node.builtin_data.reduce_function), windows)
    context.resize_tensor(output, out_shape)


def sliding_windows(shape, window, step, spread) -> tuple[tuple[int, ...], tuple[tuple[slice, ...], ...]]:
    """The output shape of windows of `window` elements `spread` apart, sliding by `step`, over an input
    of `shape`, and per window element (row-major) the strided input view it contributes to all outputs."""
    out_shape = tuple(
        0 if n < (w - 1) * d + 1 else (n - ((w - 1) * d + 1)) // s + 1
        for n, w, s, d in zip(shape, window, step, spread)
    )
    windows = tuple(
        tuple(
            slice(i * d, i * d + (o - 1) * s + 1, s) for i, d, o, s in zip(offsets, spread, out_shape, step)
        )
        for offsets in itertools.product(*(range(w) for w in window))
    )
    return out_shape, windows


def _attribute(tensor, rank: int, name: str) -> tuple[int, ...]:
    """A window attribute: one positive value per input axis (TFLite reads `rank` values unchecked and
    divides by the strides; STABLEHLO_REDUCE_WINDOW's positivity check is applied here)."""
    ensure(math.prod(tensor.shape) == rank, f"REDUCE_WINDOW {name} must hold {rank} values (the input rank)")
    values = tuple(int(v) for v in tensor.data.reshape(-1))
    ensure(all(v > 0 for v in values), f"AllGtThanZero({name}) was not true.")
    return values


def _fold(function: ReduceWindowFunction):
    """One accumulation step, acc = f(acc, value), as TFLite's functors compute it."""
    if function == ReduceWindowFunction.ADD:
        return lambda acc, value: np.add(acc, value, out=acc)
    if function == ReduceWindowFunction.MUL:
        return lambda acc, value: np.multiply(acc, value, out=acc)
    if function == ReduceWindowFunction.MAXIMUM:  # a >= b ? a : b
        return lambda acc, value: np.copyto(acc, value, where=~(acc >= value))
    if function == ReduceWindowFunction.MINIMUM:  # a <= b ? a : b
        return lambda acc, value: np.copyto(acc, value, where=~(acc <= value))
    if function == ReduceWindowFunction.ALL:
        return lambda acc, value: np.copyto(acc, (acc != 0) & (value != 0), casting="unsafe")
    if function == ReduceWindowFunction.ANY:
        return lambda acc, value: np.copyto(acc, (acc != 0) | (value != 0), casting="unsafe")
    return None


def reduce_windows(source_type, values, init, out, function, windows) -> None:
    """Fill `out` with the reductions of `values` by `function` over `windows` (see sliding_windows),
    each from the scalar `init`; fails as TFLite does on a body or type it has no kernel for."""
    step = _fold(function)
    if step is None:
        raise KernelError("REDUCE_WINDOW: unsupported reduction body.")
    if source_type not in TYPES:
        raise KernelError(
            f"REDUCE_WINDOW: unsupported kernel data type (TfliteType: {TFLITE_TYPE_NUMBER.get(source_type, 0)} "
            f"a.k.a {source_type.name})."
        )
    if values.dtype == np.bool_:  # TFLite reduces bool tensors as int8 bytes
        values, out = values.view(np.int8), out.view(np.int8)
    with np.errstate(all="ignore"):
        out[...] = init.reshape(-1).view(out.dtype)[0]
        if out.size:
            for window in windows:
                step(out, values[window])


def reduce_window_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source = tensors[node.inputs[0]]
    out = tensors[node.outputs[0]].data
    reduce_windows(source.type, source.data, tensors[node.inputs[1]].data, out, data.function, data.windows)


register_builtin(
    BuiltinOperator.REDUCE_WINDOW,
    (1, 1),
    types=TYPES,
    op_data=ReduceWindowData,
    prepare=reduce_window_prepare,
    invoke=reduce_window_invoke,
)

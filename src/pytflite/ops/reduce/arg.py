"""ARG_MAX and ARG_MIN: the first index among ties, NaNs as TFLite's kernels treat them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import ensure, ensure_type
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import ARG_TYPES, AXIS_TYPES, INDEX_TYPES, ensure_single_axis, read_axis


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
        ensure_type(source, ARG_TYPES, "input", op_name)
        ensure_type(axis, AXIS_TYPES, "axis", op_name)
        ensure_single_axis(axis, op_name)
        index_type = node.builtin_data.output_type
        ensure(index_type in INDEX_TYPES, f"Unknown index output data type: {int(index_type)}")
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
    register_builtin(_op, (1, 3), types=ARG_TYPES, op_data=ArgData, prepare=_prepare, invoke=_invoke)

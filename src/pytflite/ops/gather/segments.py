"""Segment reductions: SEGMENT_SUM and UNSORTED_SEGMENT_SUM / PROD / MAX / MIN (ufunc.at in TFLite's
element order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.types import AllocationType, BuiltinOperator
from ...errors import ensure, ensure_condition_eq, ensure_type_condition, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T

_SEGMENT_TYPES = (T.FLOAT32, T.INT32)


# --- SEGMENT_SUM ------------------------------------------------------------------------------------


def _segment_sum_shape(data_shape: tuple[int, ...], ids: np.ndarray) -> tuple[int, ...]:
    """TFLite's ValidateSegmentIds: ids start at 0 and rise by 0 or 1; the output has max id + 1 rows."""
    ensure(len(data_shape) >= 1, "NumDimensions(&data) >= 1 was not true.")
    ensure_condition_eq(ids.ndim, 1, "NumDimensions(&segment_ids) != 1")
    ensure_condition_eq(ids.size, data_shape[0], "segment_id_size != data.dims->data[0]")
    if ids.size == 0:
        return (0, *data_shape[1:])
    ensure_condition_eq(int(ids[0]), 0, "current_segment_id != 0")
    steps = np.diff(ids.astype(np.int64))
    ensure(((steps == 0) | (steps == 1)).all(), "delta == 0 || delta == 1 was not true.")
    return (int(ids[-1]) + 1, *data_shape[1:])


def segment_sum_prepare(context, node):
    check_arity(node, 2)
    data, ids = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(
        data.type in _SEGMENT_TYPES,
        "data->type == kTfLiteInt32 || data->type == kTfLiteFloat32 was not true.",
    )
    ensure_type_condition(ids, T.INT32, "segment_ids->type != kTfLiteInt32")
    ensure_types_eq(output, data, "SEGMENT_SUM output type")
    if not (data.is_constant_or_persistent and ids.is_constant_or_persistent):
        context.set_tensor_to_dynamic(output)
        return
    context.resize_tensor(output, _segment_sum_shape(data.shape, ids.data))


def segment_sum_invoke(context, node):
    tensors = context.tensors
    data = tensors[node.inputs[0]].data
    ids = tensors[node.inputs[1]].data
    output = tensors[node.outputs[0]]
    shape = _segment_sum_shape(data.shape, ids)  # validates the ids, as TFLite does at every invoke
    if output.allocation_type == AllocationType.DYNAMIC:
        context.resize_tensor(output, shape)
    out = output.data
    out.fill(0)
    if out.size:
        np.add.at(out.reshape(shape[0], -1), ids, data.reshape(ids.size, -1))


# --- UNSORTED_SEGMENT_SUM / PROD / MAX / MIN --------------------------------------------------------


def _unsorted_segment_shape(data_shape, ids_shape, ids: np.ndarray, num_segments) -> tuple[int, ...]:
    ensure(len(ids_shape) <= len(data_shape), "segment_ids_rank <= data_rank was not true.")
    for i, d in enumerate(ids_shape):
        ensure_condition_eq(d, data_shape[i], "SizeOfDimension(&segment_ids, i) != SizeOfDimension(&data, i)")
    ensure(
        num_segments.shape in ((1,), ()),
        "(num_segments.dims->size == 1 && num_segments.dims->data[0] == 1) || num_segments.dims->size == 0 "
        "was not true.",
    )
    count = int(num_segments.data.reshape(-1)[0])
    ensure(count >= 0, "num_segments_ >= 0 was not true.")
    ensure(ids.size == 0 or int(ids.max()) < count, "max_index < num_segments_ was not true.")
    return (count, *data_shape[len(ids_shape) :])


@dataclass(frozen=True, slots=True)
class SegmentData:
    ufunc: np.ufunc  # combines a row into its segment's output row
    identity: object  # what a segment without rows gets


def _unsorted_segment(op_name: str, combine: Callable[[np.dtype], tuple[np.ufunc, object]]):
    def prepare(context, node):
        check_arity(node, 3)
        data, ids, num_segments = (input_tensor(context, node, i) for i in range(3))
        output = output_tensor(context, node)
        ensure(
            data.type in _SEGMENT_TYPES,
            "data->type == kTfLiteInt32 || data->type == kTfLiteFloat32 was not true.",
        )
        ensure_type_condition(ids, T.INT32, "segment_ids->type != kTfLiteInt32")
        ensure_type_condition(num_segments, T.INT32, "num_segments->type != kTfLiteInt32")
        ensure_types_eq(output, data, f"{op_name} output type")
        node.user_data = SegmentData(*combine(output.dtype))
        if data.allocation_type == AllocationType.DYNAMIC or not (
            ids.is_constant_or_persistent and num_segments.is_constant_or_persistent
        ):
            context.set_tensor_to_dynamic(output)
            return
        context.resize_tensor(output, _unsorted_segment_shape(data.shape, ids.shape, ids.data, num_segments))

    def invoke(context, node):
        tensors = context.tensors
        data = tensors[node.inputs[0]].data
        ids = tensors[node.inputs[1]].data
        output = tensors[node.outputs[0]]
        if output.allocation_type == AllocationType.DYNAMIC:
            shape = _unsorted_segment_shape(data.shape, ids.shape, ids, tensors[node.inputs[2]])
            context.resize_tensor(output, shape)
        out = output.data
        if out.size == 0:
            return
        segments = node.user_data
        out.fill(segments.identity)
        ids = ids.reshape(-1)
        rows = data.reshape(ids.size, -1) if ids.size else data.reshape(0, out.size // out.shape[0])
        if ids.size and ids.min() < 0:  # negative ids are dropped
            keep = ids >= 0
            ids, rows = ids[keep], rows[keep]
        segments.ufunc.at(out.reshape(out.shape[0], -1), ids, rows)

    return prepare, invoke


def _extreme(float_ufunc: np.ufunc, int_ufunc: np.ufunc, lowest: bool):
    """max/min starting from the type's lowest/highest finite value; NaN data never wins (std::max)."""

    def combine(dtype):
        limits = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        return (float_ufunc if dtype.kind == "f" else int_ufunc), (limits.min if lowest else limits.max)

    return combine


_UNSORTED_SEGMENTS = {
    BuiltinOperator.UNSORTED_SEGMENT_SUM: lambda dtype: (np.add, 0),
    BuiltinOperator.UNSORTED_SEGMENT_PROD: lambda dtype: (np.multiply, 1),
    BuiltinOperator.UNSORTED_SEGMENT_MAX: _extreme(np.fmax, np.maximum, lowest=True),
    BuiltinOperator.UNSORTED_SEGMENT_MIN: _extreme(np.fmin, np.minimum, lowest=False),
}


register_builtin(
    Op.SEGMENT_SUM, (1, 1), types=_SEGMENT_TYPES, prepare=segment_sum_prepare, invoke=segment_sum_invoke
)
for _op, _combine in _UNSORTED_SEGMENTS.items():
    _prepare, _invoke = _unsorted_segment(_op.name, _combine)
    register_builtin(_op, (1, 1), types=_SEGMENT_TYPES, op_data=SegmentData, prepare=_prepare, invoke=_invoke)

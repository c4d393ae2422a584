"""SPARSE_TO_DENSE: a dense tensor of a default value with listed positions set to given values.

Indices are 0-D/1-D (positions in a 1-D output) or 2-D ([count, rank] coordinates, rank <= 4); values
are one scalar for every position or one value each. A position written twice keeps its last value.
An index outside the output fails the invoke (TFLite returns an error without a message).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import KernelError, ensure, ensure_condition_eq, ensure_type_condition, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, row_strides

_VALUE_TYPES = (T.INT32, T.INT64, T.INT8, T.UINT8, T.FLOAT32)
_MAX_DIMENSIONS = 4  # TFLite pads every index to four coordinates


@dataclass(frozen=True)
class SparseToDenseData:
    shape: tuple[int, ...] | None  # None: the output shape is a run-time input (dynamic output)


def sparse_to_dense_prepare(context, node):
    check_arity(node, 4)
    indices, shape, values, default = (input_tensor(context, node, i) for i in range(4))
    output = output_tensor(context, node)
    ensure(len(indices.shape) < 3, "NumDimensions(indices) < 3 was not true.")
    ensure_condition_eq(len(shape.shape), 1, "NumDimensions(output_shape) != 1")
    ensure(len(values.shape) < 2, "NumDimensions(values) < 2 was not true.")
    ensure_condition_eq(math.prod(default.shape), 1, "NumElements(default_value) != 1")
    ensure(
        indices.type in (T.INT32, T.INT64),
        "indices->type == kTfLiteInt32 || indices->type == kTfLiteInt64 was not true.",
    )
    ensure(
        shape.type in (T.INT32, T.INT64),
        "output_shape->type == kTfLiteInt32 || output_shape->type == kTfLiteInt64 was not true.",
    )
    ensure(
        values.type in _VALUE_TYPES,
        "values->type == kTfLiteInt32 || values->type == kTfLiteInt64 || values->type == kTfLiteInt8 || "
        "values->type == kTfLiteUInt8 || values->type == kTfLiteFloat32 was not true.",
    )
    ensure_type_condition(values, default.type, "values->type != default_value->type")
    _check_dimensions_match(indices, shape, values)
    ensure_types_eq(output, values, "SPARSE_TO_DENSE output type")
    if not shape.is_constant_or_persistent:
        node.user_data = SparseToDenseData(None)
        context.set_tensor_to_dynamic(output)
        return
    dims = _dims(shape)
    node.user_data = SparseToDenseData(dims)
    context.resize_tensor(output, dims)


def _check_dimensions_match(indices, shape, values) -> None:
    scalar_values = len(values.shape) == 0
    if len(indices.shape) < 2:
        if not scalar_values:
            ensure_condition_eq(
                math.prod(indices.shape),
                math.prod(values.shape),
                "NumElements(indices) != NumElements(values)",
            )
        ensure_condition_eq(math.prod(shape.shape), 1, "NumElements(output_shape) != 1")
    else:
        ensure_condition_eq(
            indices.shape[1],
            math.prod(shape.shape),
            "SizeOfDimension(indices, 1) != NumElements(output_shape)",
        )
        if not scalar_values:
            ensure_condition_eq(
                indices.shape[0],
                math.prod(values.shape),
                "SizeOfDimension(indices, 0) != NumElements(values)",
            )


def _dims(shape) -> tuple[int, ...]:
    """The output shape the shape tensor holds (int64 values truncated to int, as TFLite's Resize)."""
    return tuple(int(d) for d in shape.data.reshape(-1).astype(np.int32))


def sparse_to_dense_invoke(context, node):
    tensors = context.tensors
    indices = tensors[node.inputs[0]].data
    values = tensors[node.inputs[2]].data
    output = tensors[node.outputs[0]]
    dims = node.user_data.shape
    if dims is None:
        dims = _dims(tensors[node.inputs[1]])
        context.resize_tensor(output, dims)
    coordinates = indices.reshape(-1, 1) if indices.ndim < 2 else indices
    ensure(coordinates.shape[1] <= _MAX_DIMENSIONS, "true_dimensions <= kMaxDimensions was not true.")
    limits = np.asarray(dims, np.int64)
    if coordinates.size and ((coordinates < 0).any() or (coordinates >= limits).any()):
        raise KernelError(f"SPARSE_TO_DENSE: an index is outside the output shape {list(dims)}")
    out = output.data.reshape(-1)
    out[...] = tensors[node.inputs[3]].data.reshape(())
    if coordinates.shape[0] == 0:
        return
    positions = coordinates.astype(np.int64) @ row_strides(dims)
    # A position listed twice keeps its last value, as TFLite's in-order writes leave it.
    reversed_positions = positions[::-1]
    _, first_in_reversed = np.unique(reversed_positions, return_index=True)
    last = len(positions) - 1 - first_in_reversed
    out[positions[last]] = values.reshape(()) if values.ndim == 0 else values.reshape(-1)[last]


register_builtin(
    Op.SPARSE_TO_DENSE,
    (1, 3),
    types=_VALUE_TYPES,
    op_data=SparseToDenseData,
    prepare=sparse_to_dense_prepare,
    invoke=sparse_to_dense_invoke,
)

"""SCATTER_ND: slices added into zeros (np.add.at, so duplicates accumulate); the output shape is
planned in prepare when the shape tensor is constant, at invoke otherwise."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import KernelError, ensure, ensure_condition_eq, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, row_strides, unsupported_type

_SCATTER_TYPES = (T.FLOAT32, T.UINT8, T.BOOL, T.INT8, T.INT64, T.INT32)


@dataclass(frozen=True)
class ScatterPlan:
    slices: int
    depth: int
    slice_size: int
    rows: int
    limits: np.ndarray
    strides: np.ndarray


def _scatter_plan(indices_shape, updates_shape, shape_values) -> tuple[tuple[int, ...], ScatterPlan]:
    """TFLite's CheckShapes, then the output shape and the row arithmetic for it."""
    outer = len(indices_shape) - 1
    for i in range(min(outer, len(updates_shape))):
        ensure_condition_eq(indices_shape[i], updates_shape[i], "indices.Dims(i) != updates.Dims(i)")
    ensure(len(updates_shape) >= outer, "updates rank is less than indices rank - 1")
    depth = indices_shape[outer]
    ensure_condition_eq(
        len(updates_shape) - outer,
        len(shape_values) - depth,
        "updates.DimensionsCount() - outer_dims != shape_shape.Dims(0) - ix",
    )
    for i in range(len(updates_shape) - outer):
        ensure_condition_eq(
            updates_shape[outer + i],
            shape_values[depth + i],
            "updates.Dims(i + outer_dims) != shape_data[ix + i]",
        )
    shape = tuple(int(d) for d in shape_values)
    addressed = shape[:depth]
    plan = ScatterPlan(
        slices=math.prod(indices_shape[:outer]),
        depth=depth,
        slice_size=math.prod(updates_shape[outer:]),
        rows=math.prod(addressed),
        limits=np.array(addressed, np.int64),
        strides=row_strides(addressed),
    )
    return shape, plan


@dataclass(frozen=True)
class ScatterNdData:
    plan: ScatterPlan | None  # None: the shape tensor is computed at run time


def scatter_nd_prepare(context, node):
    check_arity(node, 3)
    indices, updates, shape = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    if updates.type not in _SCATTER_TYPES:
        raise unsupported_type(updates, "Updates of type '%s' are not supported by scatter_nd.")
    ensure(indices.type == shape.type, "Indices and shape must have the same type.")
    if indices.type != T.INT32:
        raise unsupported_type(indices, "Indices of type '%s' are not supported by scatter_nd.")
    ensure_types_eq(output, updates, "SCATTER_ND output type")
    ensure(
        len(indices.shape) >= 1 and len(updates.shape) >= 1 and len(shape.shape) == 1,
        "(indices.DimensionsCount() >= 1) && (updates.DimensionsCount() >= 1) && "
        "(shape_shape.DimensionsCount() == 1) was not true.",
    )
    if not shape.is_constant_or_persistent:
        node.user_data = ScatterNdData(None)
        context.set_tensor_to_dynamic(output)
        return
    out_shape, plan = _scatter_plan(indices.shape, updates.shape, shape.data.tolist())
    node.user_data = ScatterNdData(plan)
    context.resize_tensor(output, out_shape)


def scatter_nd_invoke(context, node):
    tensors = context.tensors
    indices, updates = tensors[node.inputs[0]].data, tensors[node.inputs[1]].data
    output = tensors[node.outputs[0]]
    plan = node.user_data.plan
    if plan is None:
        shape, plan = _scatter_plan(indices.shape, updates.shape, tensors[node.inputs[2]].data.tolist())
        context.resize_tensor(output, shape)
    out = output.data
    out.fill(0)
    coords = indices.reshape(plan.slices, plan.depth)
    if coords.size and (coords.min() < 0 or (coords >= plan.limits).any()):
        raise KernelError("scatter_nd index out of bounds")
    if out.size == 0 or plan.slices == 0:
        return
    rows = coords @ plan.strides if plan.depth else np.zeros(plan.slices, np.int64)
    np.add.at(out.reshape(plan.rows, plan.slice_size), rows, updates.reshape(plan.slices, plan.slice_size))


register_builtin(
    Op.SCATTER_ND,
    (1, 1),
    types=_SCATTER_TYPES,
    op_data=ScatterNdData,
    prepare=scatter_nd_prepare,
    invoke=scatter_nd_invoke,
)

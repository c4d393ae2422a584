"""WHERE: the coordinates of the true elements of a condition (a dynamic output unless it is constant)."""

from __future__ import annotations

import numpy as np

from ...core.types import AllocationType, type_name
from ...errors import ensure
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, unsupported_type

_WHERE_TYPES = (T.BOOL, T.FLOAT32, T.INT64, T.INT32, T.INT8, T.UINT8, T.UINT32)


def _true_coords(condition: np.ndarray) -> np.ndarray:
    return np.argwhere(condition) if condition.ndim else np.zeros((int(bool(condition)), 0), np.int64)


def where_prepare(context, node):
    check_arity(node, 1)
    condition, output = input_tensor(context, node, 0), output_tensor(context, node)
    if condition.type not in _WHERE_TYPES:
        raise unsupported_type(condition, "Condition tensor has unsupported type: '%s'.")
    ensure(output.type == T.INT64, f"WHERE output type {type_name(output.type)} != INT64")
    if not condition.is_constant_or_persistent:
        context.set_tensor_to_dynamic(output)
        return
    # one row per true element (a 0-d condition's shape is [0 or 1, 0] too)
    context.resize_tensor(output, (int(np.count_nonzero(condition.data)), condition.data.ndim))


def where_invoke(context, node):
    tensors = context.tensors
    condition = tensors[node.inputs[0]].data
    output = tensors[node.outputs[0]]
    coords = _true_coords(condition)
    if output.allocation_type == AllocationType.DYNAMIC:
        context.resize_tensor(output, coords.shape)
    ensure(condition.ndim > 0, "Where op requires condition w/ rank > 0")
    np.copyto(output.data, coords)


register_builtin(Op.WHERE, (1, 2), types=_WHERE_TYPES, prepare=where_prepare, invoke=where_invoke)

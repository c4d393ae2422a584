"""WHERE: the coordinates of the true elements of a condition (a dynamic output unless it is constant)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import type_name
from ...errors import ensure
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, _unsupported

_WHERE_TYPES = (T.BOOL, T.FLOAT32, T.INT64, T.INT32, T.INT8, T.UINT8, T.UINT32)


@dataclass(frozen=True)
class WhereData:
    coords: np.ndarray | None  # the answer, when the condition is constant


def _true_coords(condition: np.ndarray) -> np.ndarray:
    return np.argwhere(condition) if condition.ndim else np.zeros((int(bool(condition)), 0), np.int64)


def where_prepare(context, node):
    check_arity(node, 1)
    condition, output = input_tensor(context, node, 0), output_tensor(context, node)
    if condition.type not in _WHERE_TYPES:
        raise _unsupported(condition, "Condition tensor has unsupported type: '%s'.")
    ensure(output.type == T.INT64, f"WHERE output type {type_name(output.type)} != INT64")
    if not condition.is_constant_or_persistent:
        node.user_data = WhereData(None)
        context.set_tensor_to_dynamic(output)
        return
    coords = _true_coords(condition.data)
    node.user_data = WhereData(coords)
    context.resize_tensor(output, coords.shape)


def where_invoke(context, node):
    tensors = context.tensors
    condition = tensors[node.inputs[0]].data
    output = tensors[node.outputs[0]]
    coords = node.user_data.coords
    if coords is None:
        coords = _true_coords(condition)
        context.resize_tensor(output, coords.shape)
    ensure(condition.ndim > 0, "Where op requires condition w/ rank > 0")
    np.copyto(output.data, coords)


register_builtin(Op.WHERE, (1, 2), types=_WHERE_TYPES, prepare=where_prepare, invoke=where_invoke)

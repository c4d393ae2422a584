"""REVERSE_V2: the input flipped along a contiguous run of axes."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import T, int_values

_REVERSE_TYPES = (T.INT32, T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT64, T.BOOL, T.FLOAT16, T.BFLOAT16)


@dataclass(frozen=True)
class ReverseData:
    axes: tuple[int, ...] | None  # None: resolved at each invoke
    error: str | None = None  # a constant axis tensor TFLite rejects when the node is invoked


def _reverse_axes(values: list[int], rank: int) -> tuple[int, ...]:
    ensure(len(values) <= 8, "num_axes <= 8 was not true.")
    axes = []
    for value in values:
        axis = value + rank if value < 0 else value
        ensure(0 <= axis < rank, "axes[i] >= 0 && axes[i] < rank was not true.")
        axes.append(axis)
    axes.sort()
    if any(a + 1 != b for a, b in itertools.pairwise(axes)):
        raise KernelError("Non-contiguous `axes` not supported")
    return tuple(axes)


def reverse_prepare(context, node):
    check_arity(node, 2)
    source, axis, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_eq(len(axis.shape), 1, "REVERSE_V2 axis rank")
    ensure(len(source.shape) <= 8, "NumDimensions(input) <= 8 was not true.")
    ensure(len(source.shape) >= axis.shape[0], "NumDimensions(input) >= NumElements(axis) was not true.")
    if source.type not in _REVERSE_TYPES:
        raise KernelError(f"Type '{type_name(source.type)}' is not supported by reverse.")
    if axis.type != T.INT32:
        raise KernelError(f"Axis Type '{type_name(axis.type)}' is not supported by reverse.")
    ensure_types_eq(output, source, "REVERSE_V2 output/input types")
    context.resize_tensor(output, source.shape)
    if not axis.is_constant_or_persistent:
        node.user_data = ReverseData(None)
        return
    try:  # TFLite checks the axes when it invokes the node: so do we, with the constant resolved now
        node.user_data = ReverseData(_reverse_axes(int_values(axis), len(source.shape)))
    except KernelError as error:
        node.user_data = ReverseData(None, str(error))


def reverse_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    if data.error is not None:
        raise KernelError(data.error)
    source = tensors[node.inputs[0]].data
    axes = data.axes
    if axes is None:
        axes = _reverse_axes(int_values(tensors[node.inputs[1]]), source.ndim)
    np.copyto(tensors[node.outputs[0]].data, np.flip(source, axes) if axes else source)


register_builtin(
    BuiltinOperator.REVERSE_V2,
    (1, 4),
    types=_REVERSE_TYPES,
    op_data=ReverseData,
    prepare=reverse_prepare,
    invoke=reverse_invoke,
)

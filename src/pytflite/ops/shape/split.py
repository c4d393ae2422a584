"""SPLIT (equal parts) and SPLIT_V (given sizes, one of them possibly -1) along an axis; they share the
output slicing and resizing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from operator import setitem

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import KernelError, ensure, ensure_eq, ensure_type
from ..common import input_tensor
from ..registry import register_builtin
from .common import INDEX, T, int_values, scalar_value, set_type

_SPLIT_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)


@dataclass(frozen=True)
class SplitData:
    slices: tuple[tuple[slice, ...], ...] | None  # None: computed at each invoke


def _split_axis(axis_tensor, rank: int) -> int:
    axis = scalar_value(axis_tensor)
    if axis < 0:
        axis += rank
    ensure(axis >= 0, "axis_value >= 0 was not true.")
    ensure(axis < rank, "axis_value < NumDimensions(input) was not true.")
    return axis


def _split_slices(shape: tuple[int, ...], axis: int, sizes: Sequence[int]) -> tuple[tuple[slice, ...], ...]:
    slices, begin = [], 0
    for size in sizes:
        slices.append((slice(None),) * axis + (slice(begin, begin + size),))
        begin += size
    return tuple(slices)


def _resize_split_outputs(context, node, shape, axis, sizes) -> tuple[tuple[slice, ...], ...]:
    for i, size in zip(node.outputs, sizes):
        context.resize_tensor(context.tensors[i], (*shape[:axis], size, *shape[axis + 1 :]))
    return _split_slices(shape, axis, sizes)


def _split_plan(context, node) -> tuple[tuple[slice, ...], ...]:
    axis_tensor, source = input_tensor(context, node, 0), input_tensor(context, node, 1)
    axis = _split_axis(axis_tensor, len(source.shape))
    count = node.builtin_data.num_splits
    ensure(count != 0, "num_splits != 0 was not true.")
    ensure(source.shape[axis] % count == 0, "Not an even split")
    return _resize_split_outputs(context, node, source.shape, axis, [source.shape[axis] // count] * count)


def _prepare_split_outputs(context, node, source, known: bool, plan) -> None:
    for i in node.outputs:
        set_type(context.tensors[i], source.type)
    if known:
        node.user_data = SplitData(plan(context, node))
    else:
        node.user_data = SplitData(None)
        for i in node.outputs:
            context.set_tensor_to_dynamic(context.tensors[i])


def split_prepare(context, node):
    ensure_eq(len(node.inputs), 2, "SPLIT input count")
    ensure_eq(len(node.outputs), node.builtin_data.num_splits, "SPLIT output count vs num_splits")
    axis, source = input_tensor(context, node, 0), input_tensor(context, node, 1)
    ensure_type(source, _SPLIT_TYPES, "input", "SPLIT")
    ensure_type(axis, INDEX, "axis", "SPLIT")
    _prepare_split_outputs(context, node, source, axis.is_constant_or_persistent, _split_plan)


def _split_copy(context, node, source_index: int, plan) -> None:
    tensors = context.tensors
    slices = node.user_data.slices
    if slices is None:
        slices = plan(context, node)
    source = tensors[node.inputs[source_index]].data
    for i, where in zip(node.outputs, slices):
        np.copyto(tensors[i].data, source[where])


def _split_calls(source_index: int):
    """The calls of SPLIT / SPLIT_V: with the sizes known in prepare, the copies as (output, view of the
    input) pairs made once; else their invoke."""

    def calls(context, node):
        slices = node.user_data.slices
        if slices is None:
            return None
        tensors = context.tensors
        source = tensors[node.inputs[source_index]].data
        return tuple(
            partial(setitem, tensors[i].data, Ellipsis, source[where])
            for i, where in zip(node.outputs, slices)
        )

    return calls


def split_invoke(context, node):
    _split_copy(context, node, 1, _split_plan)


def _split_v_plan(context, node) -> tuple[tuple[slice, ...], ...]:
    source, size_splits, axis_tensor = (input_tensor(context, node, i) for i in range(3))
    axis = scalar_value(axis_tensor)
    if axis < 0:
        axis += len(source.shape)
    sizes = int_values(size_splits)
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise KernelError("The size_splits contains more than one -1.")
    known_sum = sum(s for s in sizes if s != -1)
    ensure(axis >= 0, "axis_value >= 0 was not true.")
    ensure(axis < len(source.shape), "axis_value < NumDimensions(input) was not true.")
    size = source.shape[axis]
    if unknown:
        if known_sum > size:
            raise KernelError("The sum of size_splits must be less than the dimension of value.")
        sizes[unknown[0]] = size - known_sum
    elif known_sum != size:
        raise KernelError("The size_splits must sum to the dimension of value along axis.")
    ensure(all(s >= 0 for s in sizes), f"SPLIT_V: size_splits {sizes} contains a negative size")
    return _resize_split_outputs(context, node, source.shape, axis, sizes)


def split_v_prepare(context, node):
    ensure_eq(len(node.inputs), 3, "SPLIT_V input count")
    ensure_eq(len(node.outputs), node.builtin_data.num_splits, "SPLIT_V output count vs num_splits")
    source, size_splits, axis = (input_tensor(context, node, i) for i in range(3))
    ensure_type(source, _SPLIT_TYPES, "input", "SPLIT_V")
    if size_splits.type not in INDEX:
        raise KernelError("size_splits only support type int32|int64.")
    ensure_type(axis, INDEX, "axis", "SPLIT_V")
    ensure_eq(len(size_splits.shape), 1, "SPLIT_V size_splits rank")
    ensure_eq(len(node.outputs), size_splits.shape[0], "SPLIT_V output count vs size_splits size")
    known = size_splits.is_constant_or_persistent and axis.is_constant_or_persistent
    _prepare_split_outputs(context, node, source, known, _split_v_plan)


def split_v_invoke(context, node):
    _split_copy(context, node, 0, _split_v_plan)


register_builtin(
    BuiltinOperator.SPLIT,
    (1, 5),
    types=_SPLIT_TYPES,
    op_data=SplitData,
    prepare=split_prepare,
    invoke=split_invoke,
    calls=_split_calls(1),
)
register_builtin(
    BuiltinOperator.SPLIT_V,
    (1, 3),
    types=_SPLIT_TYPES,
    op_data=SplitData,
    prepare=split_v_prepare,
    invoke=split_v_invoke,
    calls=_split_calls(0),
)

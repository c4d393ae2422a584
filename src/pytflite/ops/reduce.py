"""Reductions over axes: MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL.

The axis tensor (int32, negative values count from the end, duplicates ignored) is resolved in prepare
when it is constant; a computed axis makes the output dynamic and is resolved at invoke. keep_dims keeps
reduced dimensions as 1. Integer MEAN divides the int64 sum truncating toward zero, as TFLite does;
MAX/MIN of an empty slice give the type's lowest/highest value, not an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import AllocationType, BuiltinOperator, TensorType
from ..errors import KernelError, ensure_eq, ensure_type
from .common import check_arity, input_tensor, output_tensor
from .registry import register_builtin

_NUMBERS = (TensorType.FLOAT32, TensorType.INT32, TensorType.INT64)


def resolve_axes(axis: np.ndarray, rank: int) -> tuple[int, ...]:
    """Axis values made non-negative, validated, in first-seen order without duplicates."""
    resolved: list[int] = []
    if rank == 0:
        return ()
    for value in np.asarray(axis).reshape(-1).tolist():
        current = value + rank if value < 0 else value
        if not 0 <= current < rank:
            raise KernelError("Invalid axis index.")
        if current not in resolved:
            resolved.append(current)
    return tuple(resolved)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _mean(x: np.ndarray, axes: tuple[int, ...], out: np.ndarray) -> None:
    if np.issubdtype(x.dtype, np.integer):
        total = np.sum(x, axis=axes, dtype=np.int64, keepdims=True).reshape(out.shape)
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        np.copyto(out, np.where(total < 0, -((-total) // count), total // count), casting="unsafe")
    else:
        np.mean(x, axis=axes, keepdims=True, out=out.reshape(_kept(x.shape, axes)))


def _kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return reduced_shape(shape, axes, keep_dims=True)


def _extreme(ufunc: np.ufunc, lowest: bool) -> Callable:
    def reduce(x: np.ndarray, axes: tuple[int, ...], out: np.ndarray) -> None:
        limits = np.finfo(x.dtype) if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype)
        initial = limits.min if lowest else limits.max
        ufunc.reduce(x, axis=axes, keepdims=True, out=out.reshape(_kept(x.shape, axes)), initial=initial)

    return reduce


def _plain(ufunc: np.ufunc) -> Callable:
    def reduce(x: np.ndarray, axes: tuple[int, ...], out: np.ndarray) -> None:
        ufunc.reduce(x, axis=axes, keepdims=True, out=out.reshape(_kept(x.shape, axes)))

    return reduce


@dataclass
class ReduceData:
    compute: Callable[[np.ndarray, tuple[int, ...], np.ndarray], None]
    axes: tuple[int, ...] | None  # None: the axis tensor is computed at run time


def reducer(op_name: str, compute: Callable, types: tuple[TensorType, ...]):
    """Prepare and invoke functions for one reduction."""

    def prepare(context, node):
        check_arity(node, 2)
        source, axis, output = (
            input_tensor(context, node, 0),
            input_tensor(context, node, 1),
            output_tensor(context, node),
        )
        ensure_type(source, types, "input", op_name)
        ensure_eq(output.type, source.type, f"{op_name} output type")
        ensure_type(axis, TensorType.INT32, "axis", op_name)
        if axis.allocation_type not in (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO):
            node.user_data = ReduceData(compute, None)
            context.set_tensor_to_dynamic(output)
            return
        axes = resolve_axes(axis.data, len(source.shape))
        node.user_data = ReduceData(compute, axes)
        context.resize_tensor(output, reduced_shape(source.shape, axes, node.builtin_data.keep_dims))

    def invoke(context, node):
        tensors = context.tensors
        data = node.user_data
        source = tensors[node.inputs[0]]
        axes = data.axes
        if axes is None:
            axes = resolve_axes(tensors[node.inputs[1]].data, len(source.shape))
            context.resize_tensor(
                tensors[node.outputs[0]], reduced_shape(source.shape, axes, node.builtin_data.keep_dims)
            )
        data.compute(source.data, axes, tensors[node.outputs[0]].data)

    return prepare, invoke


_REDUCERS = {
    BuiltinOperator.MEAN: (_mean, _NUMBERS, (1, 3)),
    BuiltinOperator.SUM: (_plain(np.add), _NUMBERS, (1, 2)),
    BuiltinOperator.REDUCE_PROD: (_plain(np.multiply), _NUMBERS, (1, 2)),
    BuiltinOperator.REDUCE_MAX: (_extreme(np.maximum, lowest=True), _NUMBERS, (1, 3)),
    BuiltinOperator.REDUCE_MIN: (_extreme(np.minimum, lowest=False), _NUMBERS, (1, 3)),
    BuiltinOperator.REDUCE_ANY: (_plain(np.logical_or), (TensorType.BOOL,), (1, 1)),
    BuiltinOperator.REDUCE_ALL: (_plain(np.logical_and), (TensorType.BOOL,), (1, 1)),
}

for _op, (_compute, _types, _versions) in _REDUCERS.items():
    _prepare, _invoke = reducer(_op.name, _compute, _types)
    register_builtin(_op, _versions, types=_types, prepare=_prepare, invoke=_invoke)

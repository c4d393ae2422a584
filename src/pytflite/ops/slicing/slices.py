"""SLICE and DYNAMIC_UPDATE_SLICE: a box of the input read out, or a box of the output written over."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.types import BuiltinOperator, num_elements
from ...errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX_TYPES, SLICE_TYPES, UPDATE_TYPES, ensure_vector, ints

# --- SLICE ----------------------------------------------------------------------------------------


def plan_slice(shape: tuple[int, ...], begin: list[int], size: list[int]) -> tuple[tuple[int, ...], tuple]:
    """Output shape and slice tuple for SLICE; size -1 runs to the end of the axis."""
    out_shape, index = [], []
    for dim, start, extent in zip(shape, begin, size):
        if extent < 0:
            if extent != -1:
                raise KernelError("Invalid size.")
            extent = dim - start
        if start < 0 or extent < 0 or start + extent > dim:
            raise KernelError("Invalid begin and size.")
        out_shape.append(extent)
        index.append(slice(start, start + extent))
    return tuple(out_shape), tuple(index)


@dataclass(frozen=True, slots=True)
class SliceData:
    index: tuple  # the slice tuple that reads the output from the input


def slice_prepare(context, node):
    check_arity(node, 3)
    source, begin, size = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_type(source, SLICE_TYPES, "input", "SLICE")
    ensure_types_eq(source, output, "SLICE input/output types")
    ensure_type(begin, INDEX_TYPES, "begin", "SLICE")
    ensure_type(size, INDEX_TYPES, "size", "SLICE")
    ensure_vector(begin, "begin", "SLICE")
    ensure_vector(size, "size", "SLICE")
    ensure_eq(num_elements(begin.shape), num_elements(size.shape), "SLICE begin/size element counts")
    ensure_eq(num_elements(begin.shape), len(source.shape), "SLICE begin element count vs input rank")
    if not (begin.is_constant_or_persistent and size.is_constant_or_persistent):
        node.user_data = None
        context.set_tensor_to_dynamic(output)
        return
    out_shape, index = plan_slice(source.shape, ints(begin), ints(size))
    node.user_data = SliceData(index)
    context.resize_tensor(output, out_shape)


def slice_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    data = node.user_data
    if data is None:
        out_shape, index = plan_slice(
            source.shape, ints(tensors[node.inputs[1]]), ints(tensors[node.inputs[2]])
        )
        context.resize_tensor(output, out_shape)
    else:
        index = data.index
    output.data[...] = source.data[index]


register_builtin(
    BuiltinOperator.SLICE,
    (1, 8),
    types=SLICE_TYPES,
    op_data=SliceData,
    prepare=slice_prepare,
    invoke=slice_invoke,
)

# --- DYNAMIC_UPDATE_SLICE -------------------------------------------------------------------------


def plan_update(shape: tuple[int, ...], update_shape: tuple[int, ...], starts: list[int]) -> tuple:
    """Where the update lands: each start clamped to [0, dim - update dim], as TFLite does."""
    index = []
    for dim, extent, start in zip(shape, update_shape, starts):
        start = min(max(0, start), dim - extent)
        index.append(slice(start, start + extent))
    return tuple(index)


@dataclass(frozen=True, slots=True)
class UpdateSliceData:
    index: tuple  # where the update lands in the output


def dynamic_update_slice_prepare(context, node):
    check_arity(node, 3)
    operand, update, starts = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_type(operand, UPDATE_TYPES, "operand", "DYNAMIC_UPDATE_SLICE")
    ensure_types_eq(operand, update, "DYNAMIC_UPDATE_SLICE operand/update types")
    ensure_types_eq(operand, output, "DYNAMIC_UPDATE_SLICE operand/output types")
    ensure_type(starts, INDEX_TYPES, "start_indices", "DYNAMIC_UPDATE_SLICE")
    rank = len(operand.shape)
    ensure(len(starts.shape) == 1, "DYNAMIC_UPDATE_SLICE start_indices must be a vector")
    ensure(
        starts.shape[0] == rank,
        f"DYNAMIC_UPDATE_SLICE start_indices has {starts.shape[0]} values for an operand of rank {rank}",
    )
    ensure(
        len(update.shape) == rank,
        f"DYNAMIC_UPDATE_SLICE update rank {len(update.shape)} != operand rank {rank}",
    )
    ensure(
        all(u <= d for u, d in zip(update.shape, operand.shape)),
        f"DYNAMIC_UPDATE_SLICE update shape {list(update.shape)} exceeds operand shape {list(operand.shape)}",
    )
    node.user_data = (
        UpdateSliceData(plan_update(operand.shape, update.shape, ints(starts)))
        if starts.is_constant_or_persistent
        else None
    )
    context.resize_tensor(output, operand.shape)


def dynamic_update_slice_invoke(context, node):
    tensors = context.tensors
    operand, update = tensors[node.inputs[0]], tensors[node.inputs[1]]
    out = tensors[node.outputs[0]].data
    data = node.user_data
    if data is None:
        index = plan_update(operand.shape, update.shape, ints(tensors[node.inputs[2]]))
    else:
        index = data.index
    out[...] = operand.data
    out[index] = update.data


register_builtin(
    BuiltinOperator.DYNAMIC_UPDATE_SLICE,
    (1, 6),
    types=UPDATE_TYPES,
    op_data=UpdateSliceData,
    prepare=dynamic_update_slice_prepare,
    invoke=dynamic_update_slice_invoke,
)

"""STABLEHLO_SCATTER: the operand with each element of `updates` combined into the element it addresses.

An update element's batch coordinates (its axes not in update_window_dims) pick an index vector of
scatter_indices (along index_vector_dim), which gives the start along the operand axes of
scatter_dims_to_operand_dims; its window coordinates (the update_window_dims axes, in that order) add to
the operand axes not in inserted_window_dims. LiteRT walks the updates in row-major order, combining each
into the operand's current value, and skips an update whose index falls outside the operand.

LiteRT never runs the update computation: it recognises an empty body (replace) or one STABLEHLO_ADD,
MULTIPLY, MAXIMUM or MINIMUM and refuses any other. Replace keeps the last update of an element; add and
multiply run np.add.at / np.multiply.at, which apply repeats in order as LiteRT does; max and min of
floats go round by round (the k-th update of each element in round k) to keep std::max/min's NaN and
signed-zero choices. indices_are_sorted and unique_indices are hints LiteRT ignores; so does this kernel.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin

T = TensorType
_TYPES = (
    T.FLOAT16, T.FLOAT32, T.FLOAT64, T.INT8, T.INT16, T.INT32, T.INT64,
    T.UINT8, T.UINT16, T.UINT32, T.UINT64, T.BOOL,
)  # fmt: skip


class Computation(enum.Enum):
    REPLACE = "replace"
    ADD = "add"
    MULTIPLY = "multiply"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"


_BODIES = {
    BuiltinOperator.STABLEHLO_ADD: Computation.ADD,
    BuiltinOperator.STABLEHLO_MULTIPLY: Computation.MULTIPLY,
    BuiltinOperator.STABLEHLO_MAXIMUM: Computation.MAXIMUM,
    BuiltinOperator.STABLEHLO_MINIMUM: Computation.MINIMUM,
}


@dataclass(frozen=True)
class ScatterData:
    computation: Computation
    index_vector_dim: int
    scatter_dims: tuple[int, ...]  # the operand axes the index vector's first elements start
    window_axes: tuple[int, ...]  # update_window_dims: the axes the start offsets broadcast along
    window: np.ndarray  # per update element, its window offset along each operand axis (*updates, rank)


def _computation(context, index: int) -> Computation:
    subgraphs = context.subgraphs
    if not 0 <= index < len(subgraphs):
        raise KernelError("Computation subgraph not found for stablehlo.scatter.")
    body = subgraphs[index]
    plan = body.delegation.pre_delegation_plan or body.execution_plan
    if not plan:
        return Computation.REPLACE
    if len(plan) > 1:
        raise KernelError(
            f"Only one kernel allowed within the stablehlo region. ({len(plan)}) kernels found."
        )
    _, registration = body.node_and_registration(plan[0])
    if registration.builtin_code not in _BODIES:
        raise KernelError(
            "Only update, Add, Multiply, Maximum and Minimum operations are currently supported for "
            "stablehlo.scatter."
        )
    return _BODIES[registration.builtin_code]


def scatter_prepare(context, node):
    check_arity(node, 3)
    operand, indices, updates = (input_tensor(context, node, i) for i in range(3))
    if indices.type not in (T.INT32, T.INT64):
        raise KernelError(f"(Index Type: {type_name(indices.type)}) currently not supported.")
    output = output_tensor(context, node)
    context.resize_tensor(output, operand.shape)
    options = node.builtin_data
    ensure(options is not None, "data != nullptr was not true.")
    window_axes = tuple(int(d) for d in options.update_window_dims)
    inserted = tuple(int(d) for d in options.inserted_window_dims)
    scatter_dims = tuple(int(d) for d in options.scatter_dims_to_operand_dims)
    index_vector_dim = int(options.index_vector_dim)
    rank = len(operand.shape)
    ensure(
        len(window_axes) <= len(updates.shape),
        "data->num_update_window_dims <= updates->dims->size was not true.",
    )
    ensure(len(inserted) <= rank, "data->num_inserted_window_dims <= output->dims->size was not true.")
    ensure(
        len(scatter_dims) <= rank, "data->num_scatter_dims_to_operand_dims <= input->dims->size was not true."
    )
    ensure(
        index_vector_dim <= len(indices.shape),
        "data->index_vector_dim <= scatter_indices->dims->size was not true.",
    )
    computation = _computation(context, options.update_computation_subgraph_index)
    # What LiteRT leaves unchecked (and then reads or writes out of bounds), refused in pytflite's words:
    ensure(output.type == operand.type, "STABLEHLO_SCATTER output type differs from the operand's")
    ensure(updates.type == operand.type, "STABLEHLO_SCATTER updates type differs from the operand's")
    ensure(
        all(0 <= d < len(updates.shape) for d in window_axes) and len(set(window_axes)) == len(window_axes),
        "STABLEHLO_SCATTER: update_window_dims must be distinct axes of the updates",
    )
    ensure(
        len(window_axes) + len(inserted) == rank and all(0 <= d < rank for d in inserted),
        "STABLEHLO_SCATTER: update_window_dims and inserted_window_dims must make up the operand's axes",
    )
    ensure(
        all(0 <= d < rank for d in scatter_dims),
        "STABLEHLO_SCATTER: scatter_dims_to_operand_dims must name operand axes",
    )
    if not 0 <= index_vector_dim < len(indices.shape):  # LiteRT reads the size of an axis past the last
        raise KernelError("STABLEHLO_SCATTER: index_vector_dim equal to the indices' rank is not supported")
    ensure(
        indices.shape[index_vector_dim] >= len(scatter_dims),
        "STABLEHLO_SCATTER: index vectors shorter than scatter_dims_to_operand_dims",
    )
    batch_axes = [d for d in range(len(updates.shape)) if d not in window_axes]
    batch = tuple(n for d, n in enumerate(indices.shape) if d != index_vector_dim)
    ensure(
        batch == tuple(updates.shape[d] for d in batch_axes),
        "STABLEHLO_SCATTER: the updates' scatter axes must match scatter_indices' batch axes",
    )
    window = np.zeros((*updates.shape, rank), np.int64)
    targets = [d for d in range(rank) if d not in inserted]
    for axis, target in zip(window_axes, targets):
        view = [1] * len(updates.shape)
        view[axis] = updates.shape[axis]
        window[..., target] = np.arange(updates.shape[axis]).reshape(view)
    node.user_data = ScatterData(computation, index_vector_dim, scatter_dims, window_axes, window)


def _check_type(indices, operand) -> None:
    if operand.type not in _TYPES:
        raise KernelError(
            f"(Index Type: {type_name(indices.type)}, Data Type: {type_name(operand.type)}) currently not supported."
        )


def _targets(data: ScatterData, shape, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per update element (row-major), its flat operand position, and whether it lies in the operand."""
    vectors = np.moveaxis(indices, data.index_vector_dim, -1).astype(np.int64)
    starts = np.zeros((*vectors.shape[:-1], len(shape)), np.int64)
    starts[..., list(data.scatter_dims)] = vectors[..., : len(data.scatter_dims)]
    positions = np.expand_dims(starts, tuple(sorted(data.window_axes))) + data.window
    applied = ((positions >= 0) & (positions < np.array(shape, np.int64))).all(axis=-1).reshape(-1)
    strides = np.array([int(np.prod(shape[d + 1 :])) for d in range(len(shape))], np.int64)
    return (positions * strides).sum(axis=-1).reshape(-1), applied


def _in_rounds(out: np.ndarray, targets: np.ndarray, values: np.ndarray, combine) -> None:
    """out[t] = combine(out[t], v) for each (t, v) in order, as rounds in which every target is distinct."""
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    rank = np.arange(len(ordered)) - np.repeat(first, np.diff(np.r_[first, len(ordered)]))
    for k in range(int(rank.max(initial=-1)) + 1):
        chosen = order[rank == k]
        where = targets[chosen]
        out[where] = combine(out[where], values[chosen])


def scatter_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    operand, indices, updates = (tensors[i] for i in node.inputs)
    _check_type(indices, operand)
    out = tensors[node.outputs[0]].data
    np.copyto(out, operand.data)
    if updates.data.size == 0 or out.size == 0:
        return
    flat, applied = _targets(data, operand.shape, indices.data)
    targets, values = flat[applied], updates.data.reshape(-1)[applied]
    out = out.reshape(-1)
    floating = np.issubdtype(out.dtype, np.floating)
    with np.errstate(all="ignore"):
        if data.computation == Computation.REPLACE:  # the last update of each element wins
            last = len(targets) - 1 - np.unique(targets[::-1], return_index=True)[1]
            out[targets[last]] = values[last]
        elif data.computation == Computation.ADD:
            np.add.at(out, targets, values)
        elif data.computation == Computation.MULTIPLY:
            np.multiply.at(out, targets, values)
        elif data.computation == Computation.MAXIMUM:  # std::max(a, b): a < b ? b : a
            if floating:
                _in_rounds(out, targets, values, lambda a, b: np.where(a < b, b, a))
            else:
                np.maximum.at(out, targets, values)
        elif floating:  # std::min(a, b): b < a ? b : a
            _in_rounds(out, targets, values, lambda a, b: np.where(b < a, b, a))
        else:
            np.minimum.at(out, targets, values)


register_builtin(
    BuiltinOperator.STABLEHLO_SCATTER,
    (1, 1),
    types=_TYPES,
    op_data=ScatterData,
    prepare=scatter_prepare,
    invoke=scatter_invoke,
)

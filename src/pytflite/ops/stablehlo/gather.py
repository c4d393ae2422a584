"""STABLEHLO_GATHER: slices of the operand, one per index vector of start_indices, stacked along the
result's batch dimensions.

Each index vector (the start_indices axis index_vector_dim) gives the start along the operand axes of
start_index_map, 0 along the others; starts are clipped so the slice of slice_sizes fits. The slice's
axes not in collapsed_slice_dims become the result's offset_dims, in order; the other result axes are the
start_indices axes other than index_vector_dim, in order. A collapsed axis reads its first element only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure, ensure_condition_eq
from ..common import ANY_TYPE, check_arity, input_tensor, output_tensor
from ..registry import register_builtin

T = TensorType
# The operand is copied as 8-, 16-, 32- or 64-bit words.
_TYPES = tuple(t for t in ANY_TYPE if t.name not in ("STRING", "COMPLEX128", "INT4", "UINT4", "INT2"))


@dataclass(frozen=True)
class GatherData:
    index_vector_dim: int
    start_index_map: tuple[int, ...]
    limits: np.ndarray  # per operand axis, the largest start: operand size - slice size
    offsets: tuple[np.ndarray, ...]  # per operand axis, the slice's offsets, shaped to broadcast
    order: tuple[int, ...]  # transposes (batch axes..., offset axes...) to the result's axis order


def _ensure_options(node):
    options = node.builtin_data
    ensure(options is not None, "data != nullptr was not true.")
    return options


def gather_prepare(context, node):
    check_arity(node, 2)
    operand, indices = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    if indices.type not in (T.INT32, T.INT64):
        raise KernelError(f"(Index Type: {type_name(indices.type)}) currently not supported.")
    if operand.type not in _TYPES:
        raise KernelError(f"(Data Type: {type_name(operand.type)}) currently not supported.")
    ensure(output.type == operand.type, "STABLEHLO_GATHER output type differs from the operand's")
    options = _ensure_options(node)
    sizes, collapsed = options.slice_sizes, options.collapsed_slice_dims
    offset_dims, index_vector_dim = options.offset_dims, options.index_vector_dim
    ensure_condition_eq(len(sizes), len(operand.shape), "data->num_slice_sizes != operand->dims->size")
    ensure(
        len(collapsed) <= len(sizes), "data->num_collapsed_slice_dims <= data->num_slice_sizes was not true."
    )
    ensure(
        index_vector_dim <= len(indices.shape),
        "data->index_vector_dim <= start_indices->dims->size was not true.",
    )
    ensure(index_vector_dim >= 0, f"STABLEHLO_GATHER: index_vector_dim {index_vector_dim} is negative")
    if index_vector_dim == len(indices.shape):  # LiteRT reads the size of an axis past the last
        raise KernelError("STABLEHLO_GATHER: index_vector_dim equal to the indices' rank is not supported")
    if indices.shape[index_vector_dim] != len(options.start_index_map):
        raise KernelError(
            f"STABLEHLO_GATHER: index vectors of {indices.shape[index_vector_dim]} elements for a "
            f"start_index_map of {len(options.start_index_map)}"
        )
    ensure(
        all(0 <= d < len(sizes) for d in (*collapsed, *options.start_index_map)),
        "STABLEHLO_GATHER: collapsed_slice_dims and start_index_map must name operand axes",
    )
    ensure(
        all(0 <= s <= n for s, n in zip(sizes, operand.shape)),
        "STABLEHLO_GATHER: slice_sizes must lie between 0 and the operand's sizes",
    )
    batch_shape = tuple(n for axis, n in enumerate(indices.shape) if axis != index_vector_dim)
    kept = [axis for axis in range(len(sizes)) if axis not in collapsed]
    rank = len(batch_shape) + len(kept)
    ensure(
        len(offset_dims) == len(kept), "STABLEHLO_GATHER: one offset dim for each slice axis not collapsed"
    )
    ensure(
        sorted(offset_dims) == list(offset_dims) and all(0 <= d < rank for d in offset_dims),
        "STABLEHLO_GATHER: offset_dims must be increasing result axes",
    )
    ensure_condition_eq(len(output.shape), rank, "STABLEHLO_GATHER output rank")
    batch_axes = [d for d in range(rank) if d not in offset_dims]
    position = {d: i for i, d in enumerate(batch_axes)} | {
        d: len(batch_shape) + i for i, d in enumerate(offset_dims)
    }
    shape = [0] * rank
    for d, n in zip(batch_axes, batch_shape):
        shape[d] = n
    for d, axis in zip(offset_dims, kept):
        shape[d] = sizes[axis]
    offsets = []
    for axis in range(len(sizes)):  # broadcast over (batch..., kept slice axes...)
        steps = np.zeros(1, np.int64) if axis in collapsed else np.arange(sizes[axis], dtype=np.int64)
        view = [1] * (len(batch_shape) + len(kept))
        if axis not in collapsed:
            view[len(batch_shape) + kept.index(axis)] = sizes[axis]
        offsets.append(steps.reshape(view))
    node.user_data = GatherData(
        index_vector_dim,
        tuple(options.start_index_map),
        np.array([n - s for n, s in zip(operand.shape, sizes)], np.int64),
        tuple(offsets),
        tuple(position[d] for d in range(rank)),
    )
    context.resize_tensor(output, tuple(shape))


def gather_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    operand = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    if out.size == 0 or operand.size == 0:
        return
    vectors = np.moveaxis(tensors[node.inputs[1]].data, data.index_vector_dim, -1).astype(np.int64)
    starts = np.zeros((*vectors.shape[:-1], operand.ndim), np.int64)
    starts[..., list(data.start_index_map)] = vectors
    np.clip(starts, 0, data.limits, out=starts)
    pad = (1,) * (out.ndim - starts.ndim + 1)
    lookup = tuple(
        starts[..., axis].reshape(starts.shape[:-1] + pad) + offset
        for axis, offset in enumerate(data.offsets)
    )
    np.copyto(out, np.transpose(operand[lookup], data.order))


register_builtin(
    BuiltinOperator.STABLEHLO_GATHER,
    (1, 1),
    types=_TYPES,
    op_data=GatherData,
    prepare=gather_prepare,
    invoke=gather_invoke,
)

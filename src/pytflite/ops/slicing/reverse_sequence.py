"""REVERSE_SEQUENCE: the first seq_lengths[b] elements of each batch row reversed along seq_dim."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import ensure, ensure_eq, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX_TYPES, REVERSE_SEQUENCE_TYPES


def plan_reverse_sequence(shape, lengths: np.ndarray, seq_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Fancy indices (batch, position), both broadcasting to [batch, seq], into the input with its batch
    and sequence axes moved to the front: row b has its first lengths[b] items reversed, the rest (and
    rows of length 0 or less) stay in place."""
    lengths = lengths.reshape(-1).astype(np.int64)
    ensure(
        bool(np.all(lengths <= shape[seq_dim])),
        f"ReverseSequence: seq_lengths must be <= {shape[seq_dim]}, the size of dimension {seq_dim}",
    )
    steps = np.arange(shape[seq_dim])
    positions = np.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)
    return np.arange(len(lengths))[:, None], positions


@dataclass(frozen=True, slots=True)
class ReverseSequenceData:
    index: tuple[np.ndarray, np.ndarray]  # plan_reverse_sequence's (batch, position) indices


def reverse_sequence_prepare(context, node):
    check_arity(node, 2)
    source, lengths, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure(
        source.type in REVERSE_SEQUENCE_TYPES,
        f"Type '{type_name(source.type)}' is not supported by reverse_sequence.",
    )
    ensure(
        lengths.type in INDEX_TYPES,
        f"Seq_lengths type '{type_name(lengths.type)}' is not supported by reverse_sequence.",
    )
    ensure_types_eq(source, output, "REVERSE_SEQUENCE input/output types")
    ensure_eq(len(lengths.shape), 1, "REVERSE_SEQUENCE seq_lengths rank")
    options = node.builtin_data
    seq_dim, batch_dim, rank = options.seq_dim, options.batch_dim, len(source.shape)
    ensure(0 <= seq_dim < rank, f"ReverseSequence: seq_dim {seq_dim} is out of range for rank {rank}")
    ensure(0 <= batch_dim < rank, f"ReverseSequence: batch_dim {batch_dim} is out of range for rank {rank}")
    ensure(seq_dim != batch_dim, "ReverseSequence: seq_dim and batch_dim must differ")
    ensure_eq(lengths.shape[0], source.shape[batch_dim], "REVERSE_SEQUENCE seq_lengths size vs batch size")
    node.user_data = (
        ReverseSequenceData(plan_reverse_sequence(source.shape, lengths.data, seq_dim))
        if lengths.is_constant_or_persistent
        else None
    )
    context.resize_tensor(output, source.shape)


def reverse_sequence_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    options = node.builtin_data
    data = node.user_data
    if data is None:
        plan = plan_reverse_sequence(source.shape, tensors[node.inputs[1]].data, options.seq_dim)
    else:
        plan = data.index
    front = (options.batch_dim, options.seq_dim), (0, 1)
    np.moveaxis(output.data, *front)[...] = np.moveaxis(source.data, *front)[plan]


register_builtin(
    BuiltinOperator.REVERSE_SEQUENCE,
    (1, 1),
    types=REVERSE_SEQUENCE_TYPES,
    op_data=ReverseSequenceData,
    prepare=reverse_sequence_prepare,
    invoke=reverse_sequence_invoke,
)

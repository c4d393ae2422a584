"""STABLEHLO_PAD: edge padding before and after each axis (negative: cropping) and interior padding
between neighbouring elements, filled with a scalar padding value.

The input's elements land at low + i * (interior + 1) along each axis; those outside the output are
cropped away. When an output dimension comes out zero or negative, LiteRT gives every dimension of the
output the size 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import KernelError, ensure, ensure_condition_eq
from ..common import ANY_TYPE, check_arity, input_tensor, output_tensor
from ..registry import register_builtin

_MAX_RANK = 8  # TFLITE_STABLEHLO_PAD_PARAMS_MAX_DIMENSION_COUNT
_TYPES = tuple(t for t in ANY_TYPE if t.name not in ("STRING", "INT4", "UINT4", "INT2"))


@dataclass(frozen=True)
class PadData:
    # per axis, the input positions kept and where they land in the output; None: nothing is copied
    source: tuple[np.ndarray, ...] | None
    target: tuple[np.ndarray, ...] | None


def _options(node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    options = node.builtin_data
    if options is None:
        raise KernelError("Could not get 'stablehlo.pad' operation parameters.")
    low, high, interior = options.edge_padding_low, options.edge_padding_high, options.interior_padding
    if not len(low) == len(high) == len(interior):
        raise KernelError("'stablehlo.pad' operation parameter array sizes are not consistent.")
    return low, high, interior


def placement(shape, low, high, interior):
    """The padded shape, and the input positions kept with where they land in it (np.ix_ index tuples;
    None when nothing is copied)."""
    padded = tuple(
        n + max(n - 1, 0) * gap + before + after for n, before, after, gap in zip(shape, low, high, interior)
    )
    sources, targets = [], []
    for n, before, gap, size in zip(shape, low, interior, padded):
        positions = before + np.arange(n, dtype=np.int64) * (gap + 1)
        kept = (positions >= 0) & (positions < size)
        sources.append(np.flatnonzero(kept))
        targets.append(positions[kept])
    if not all(len(s) for s in sources):
        return padded, None, None
    return padded, tuple(np.ix_(*sources)), tuple(np.ix_(*targets))


def pad_prepare(context, node):
    check_arity(node, 2)
    source, padding_value = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(
        source.type == padding_value.type, "input_tensor->type == padding_value_tensor->type was not true."
    )
    ensure_condition_eq(int(np.prod(padding_value.shape)), 1, "padding_value_count != 1")
    low, high, interior = _options(node)
    rank = len(source.shape)
    ensure(
        0 < rank <= _MAX_RANK,
        "StableHLO Pad input rank must be between 1 and the maximum supported rank.",
    )
    if len(low) != rank:
        raise KernelError(f"STABLEHLO_PAD has {len(low)} padding values per kind for a rank {rank} input")
    ensure(all(p >= 0 for p in interior), "StableHLO Pad interior padding must be non-negative.")
    shape, source_positions, target_positions = placement(source.shape, low, high, interior)
    ensure(source.type == output.type, "input_tensor->type == output_tensor->type was not true.")
    if any(n <= 0 for n in shape):
        node.user_data = PadData(None, None)
        context.resize_tensor(output, (0,) * rank)
        return
    node.user_data = PadData(source_positions, target_positions)
    context.resize_tensor(output, shape)


def pad_invoke(context, node):
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    out[...] = tensors[node.inputs[1]].data.reshape(())
    data = node.user_data
    if data.source is not None:
        out[data.target] = tensors[node.inputs[0]].data[data.source]


register_builtin(
    BuiltinOperator.STABLEHLO_PAD,
    (1, 1),
    types=_TYPES,
    op_data=PadData,
    prepare=pad_prepare,
    invoke=pad_invoke,
)

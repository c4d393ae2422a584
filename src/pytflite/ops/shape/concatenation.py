"""CONCATENATION: inputs joined along an axis; uint8 inputs quantized unlike the output are requantized
through a 256-entry table each (ConcatenationWithScaling), and constant scalars make a vector."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from operator import setitem

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_eq, ensure_type, ensure_types_eq
from ...model.options import ActivationFunctionType
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import T, prod64

_CONCATENATION_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.UINT8,
    T.INT8,
    T.INT16,
    T.INT32,
    T.INT64,
    T.BOOL,
    T.UINT32,
)


@dataclass(frozen=True)
class ConcatenationData:
    axis: int
    inputs: tuple[int, ...]  # the inputs with elements: empty ones add nothing
    # one copy per nonempty input, in order: (input, output region, 256-entry requantization table or
    # None), when some uint8 input is quantized unlike the output or constant scalars are stacked; None:
    # one np.concatenate of `inputs`
    pieces: tuple[tuple[int, tuple, np.ndarray | None], ...] | None = None


def _uint8_rescale_table(source, output) -> np.ndarray:
    """TFLite's ConcatenationWithScaling for one uint8 input, over every input value: in float32,
    round(q * scale + bias) + output zero point, with scale = input scale * (1 / output scale) and
    bias = -input zero point * scale, rounded half away from zero and clamped to [0, 255]."""
    f32 = np.float32
    scale = f32(source.params.scale) * (f32(1) / f32(output.params.scale))
    bias = f32(-source.params.zero_point) * scale
    values = np.arange(256, dtype=np.float32) * scale + bias
    whole = np.trunc(values)
    rounded = whole + np.where(np.abs(values - whole) >= f32(0.5), np.sign(values), f32(0))
    return np.clip(rounded.astype(np.int64) + output.params.zero_point, 0, 255).astype(np.uint8)


def _concatenation_rescaling(inputs, node_inputs, output, axis: int):
    """The per-input copy plan of a uint8 concatenation when some input needs requantizing, else None."""
    if output.type != T.UINT8 or all(
        t.params.scale == output.params.scale and t.params.zero_point == output.params.zero_point
        for t in inputs
    ):
        return None
    plan, begin = [], 0
    for index, t in zip(node_inputs, inputs):
        size = t.shape[axis]
        if size > 0:
            same = t.params.scale == output.params.scale and t.params.zero_point == output.params.zero_point
            region = (slice(None),) * axis + (slice(begin, begin + size),)
            plan.append((index, region, None if same else _uint8_rescale_table(t, output)))
        begin += size
    return tuple(plan)


def concatenation_prepare(context, node):
    options = node.builtin_data
    ensure(len(node.inputs) >= 1, "CONCATENATION needs at least one input")
    check_arity(node, len(node.inputs))
    inputs = [input_tensor(context, node, i) for i in range(len(node.inputs))]
    first, output = inputs[0], output_tensor(context, node)
    rank = len(first.shape)
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(axis >= 0, "axis >= 0 was not true.")
    ensure(
        axis < rank or (rank == 0 and axis == 0),
        "axis < t0->dims->size || (t0->dims->size == 0 && axis == 0) was not true.",
    )
    if options.fused_activation_function != ActivationFunctionType.NONE:
        ensure_eq(
            ActivationFunctionType(options.fused_activation_function).name,
            "NONE",
            "CONCATENATION fused activation",
        )
    ensure_type(first, _CONCATENATION_TYPES, "input", "CONCATENATION")
    if rank == 0 and all(t.is_constant_or_persistent for t in inputs):
        # constant scalars make a vector, copied without requantizing
        for t in inputs[1:]:
            ensure_eq(len(t.shape), 0, "CONCATENATION input rank")
            ensure_types_eq(t, first, "CONCATENATION input types")
        ensure_types_eq(output, first, "CONCATENATION output/input types")
        context.resize_tensor(output, (len(inputs),))
        stacked = tuple((index, (slice(i, i + 1),), None) for i, index in enumerate(node.inputs))
        node.user_data = ConcatenationData(0, (), stacked)
        return
    ensure(rank > 0, "t0->dims->size > 0 was not true.")
    total = first.shape[axis]
    for t in inputs[1:]:
        ensure_eq(len(t.shape), rank, "CONCATENATION input rank")
        ensure_types_eq(t, first, "CONCATENATION input types")
        total += t.shape[axis]
        for d in range(rank):
            if d != axis and t.shape[d] != first.shape[d]:
                ensure_eq(t.shape[d], first.shape[d], f"CONCATENATION input dimension {d}")
    shape = (*first.shape[:axis], total, *first.shape[axis + 1 :])
    ensure_types_eq(output, first, "CONCATENATION output/input types")
    if first.type == T.INT8:  # uint8 inputs are requantized; int8 ones must not need it
        for t in inputs:
            ensure_eq(t.params.scale, output.params.scale, f"CONCATENATION input {t.index} / output scale")
            ensure_eq(
                t.params.zero_point,
                output.params.zero_point,
                f"CONCATENATION input {t.index} / output zero point",
            )
    if first.type == T.INT16:
        for t in inputs:
            ensure_eq(t.params.zero_point, 0, "CONCATENATION int16 input zero point")
        ensure_eq(output.params.zero_point, 0, "CONCATENATION int16 output zero point")
    empty = prod64(shape) == 0
    nonempty = () if empty else tuple([i for i, t in zip(node.inputs, inputs) if t.shape[axis] > 0])
    pieces = None if empty else _concatenation_rescaling(inputs, node.inputs, output, axis)
    kept = node.user_data  # (a WHILE body may prepare it again at every iteration, mostly alike)
    if not (
        pieces is None
        and isinstance(kept, ConcatenationData)
        and kept.pieces is None
        and kept.axis == axis
        and kept.inputs == nonempty
    ):
        node.user_data = ConcatenationData(axis, nonempty, pieces)
    context.resize_tensor(output, shape)


def concatenation_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    if data.pieces is not None:
        out = tensors[node.outputs[0]].data
        for index, region, table in data.pieces:
            if table is None:
                out[region] = tensors[index].data
            else:
                out[region] = table[tensors[index].data]
    elif data.inputs:
        np.concatenate(
            [tensors[i].data for i in data.inputs], axis=data.axis, out=tensors[node.outputs[0]].data
        )


def concatenation_calls(context, node):
    """Each input copied into its region of the output (a view made once), without rescaling; inputs
    that are rescaled through a table run the invoke."""
    tensors = context.tensors
    data = node.user_data
    out = tensors[node.outputs[0]].data
    if data.pieces is not None:
        if any(table is not None for _, _, table in data.pieces):
            return None
        return tuple(
            partial(setitem, out[region], Ellipsis, tensors[index].data) for index, region, _ in data.pieces
        )
    calls, start = [], 0
    for index in data.inputs:
        part = tensors[index].data
        stop = start + part.shape[data.axis]
        calls.append(
            partial(setitem, out[(slice(None),) * data.axis + (slice(start, stop),)], Ellipsis, part)
        )
        start = stop
    return tuple(calls)


register_builtin(
    BuiltinOperator.CONCATENATION,
    (1, 7),
    types=_CONCATENATION_TYPES,
    op_data=ConcatenationData,
    prepare=concatenation_prepare,
    invoke=concatenation_invoke,
    calls=concatenation_calls,
)

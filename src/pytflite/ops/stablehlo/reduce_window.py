"""STABLEHLO_REDUCE_WINDOW: REDUCE_WINDOW (ops/reduce_window.py) after dilating and padding the input.

The input is first base-dilated (base_dilations - 1 init values between neighbours) and padded or, for
negative padding, cropped; the fill is the init value. Windows then slide over the result as in the
deprecated REDUCE_WINDOW, folded one window element at a time. LiteRT does not run the body subgraph: it
recognises a body of exactly one ADD, MUL, MAXIMUM, MINIMUM, LOGICAL_AND or LOGICAL_OR (or their
STABLEHLO_ twins) and fails at invoke on any other body; so does this kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import KernelError, ensure
from ...model.options import ReduceWindowFunction
from ..common import check_arity, input_tensor, output_tensor
from ..reduce_window import TYPES, ensure_type_eq, reduce_windows, sliding_windows
from ..registry import register_builtin
from .pad import placement

Op = BuiltinOperator
_MAX_RANK = 6
_BODIES = {
    Op.ADD: ReduceWindowFunction.ADD,
    Op.STABLEHLO_ADD: ReduceWindowFunction.ADD,
    Op.MUL: ReduceWindowFunction.MUL,
    Op.STABLEHLO_MULTIPLY: ReduceWindowFunction.MUL,
    Op.MAXIMUM: ReduceWindowFunction.MAXIMUM,
    Op.STABLEHLO_MAXIMUM: ReduceWindowFunction.MAXIMUM,
    Op.MINIMUM: ReduceWindowFunction.MINIMUM,
    Op.STABLEHLO_MINIMUM: ReduceWindowFunction.MINIMUM,
    Op.LOGICAL_AND: ReduceWindowFunction.ALL,
    Op.STABLEHLO_AND: ReduceWindowFunction.ALL,
    Op.LOGICAL_OR: ReduceWindowFunction.ANY,
    Op.STABLEHLO_OR: ReduceWindowFunction.ANY,
}


@dataclass(frozen=True)
class StablehloReduceWindowData:
    function: ReduceWindowFunction
    padded_shape: tuple[int, ...] | None  # None: no dilation and no padding, the input is reduced as is
    source: tuple[np.ndarray, ...] | None  # the input positions kept and where they land (pad.placement)
    target: tuple[np.ndarray, ...] | None
    windows: tuple[tuple[slice, ...], ...]  # per window element: the padded input's view (sliding_windows)


def _body_function(context, index: int) -> ReduceWindowFunction:
    """The reduction LiteRT recognises in the body subgraph: its only node's builtin operator."""
    subgraphs = context.subgraphs
    if not 0 <= index < len(subgraphs):
        return ReduceWindowFunction.UNSUPPORTED
    body = subgraphs[index]
    plan = body.delegation.pre_delegation_plan or body.execution_plan
    if len(plan) != 1:
        return ReduceWindowFunction.UNSUPPORTED
    _, registration = body.node_and_registration(plan[0])
    return _BODIES.get(registration.builtin_code, ReduceWindowFunction.UNSUPPORTED)


def _attribute(values, rank: int, default: int, name: str) -> tuple[int, ...]:
    """One value per input axis; an absent attribute is all `default`."""
    values = tuple(int(v) for v in values) if len(values) else (default,) * rank
    if len(values) != rank:
        raise KernelError(f"STABLEHLO_REDUCE_WINDOW {name} has {len(values)} values for a rank {rank} input")
    return values


def reduce_window_prepare(context, node):
    check_arity(node, 2)
    source, init = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_type_eq(source, output.type, "input_tensor->type != output_tensor->type")
    ensure_type_eq(source, init.type, "input_tensor->type != init_value_tensor->type")
    rank = len(source.shape)
    ensure(rank > 0, "input_tensor->dims->size > 0 was not true.")
    ensure(rank <= _MAX_RANK, "input_tensor->dims->size <= kMaxReduceWindowRank was not true.")
    options = node.builtin_data
    base = _attribute(options.base_dilations, rank, 1, "base_dilations")
    window = _attribute(options.window_dimensions, rank, 1, "window_dimensions")
    step = _attribute(options.window_strides, rank, 1, "window_strides")
    spread = _attribute(options.window_dilations, rank, 1, "window_dilations")
    padding = _attribute(options.padding, 2 * rank, 0, "padding")
    named = {
        "base_dilations": base,
        "window_dimensions": window,
        "window_strides": step,
        "window_dilations": spread,
    }
    for name, values in named.items():
        ensure(all(v > 0 for v in values), f"AllGtThanZero({name}) was not true.")
    if all(b == 1 for b in base) and not any(padding):
        padded_shape, kept, placed = None, None, None
        shape = source.shape
    else:
        low, high = padding[0::2], padding[1::2]
        shape, kept, placed = placement(source.shape, low, high, [b - 1 for b in base])
        padded_shape = shape
        ensure(  # LiteRT fails to size its padding temporary
            all(n >= 0 for n in shape),
            f"STABLEHLO_REDUCE_WINDOW: padding crops the input to the shape {shape}",
        )
    out_shape, windows = sliding_windows(shape, window, step, spread)
    node.user_data = StablehloReduceWindowData(
        _body_function(context, options.body_subgraph_index), padded_shape, kept, placed, windows
    )
    context.resize_tensor(output, out_shape)


def reduce_window_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source, init = tensors[node.inputs[0]], tensors[node.inputs[1]].data
    values = source.data
    if data.padded_shape is not None:
        ensure(
            all(n > 0 for n in data.padded_shape),
            "The padding specification of stablehlo.reduce_window gives an empty tensor.",
        )
        values = np.full(data.padded_shape, init.reshape(-1)[0], values.dtype)
        if data.source is not None:
            values[data.target] = source.data[data.source]
    reduce_windows(source.type, values, init, tensors[node.outputs[0]].data, data.function, data.windows)


register_builtin(
    BuiltinOperator.STABLEHLO_REDUCE_WINDOW,
    (1, 1),
    types=TYPES,
    op_data=StablehloReduceWindowData,
    prepare=reduce_window_prepare,
    invoke=reduce_window_invoke,
)

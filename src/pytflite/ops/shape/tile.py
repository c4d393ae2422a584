"""TILE: the input repeated along each dimension by a multiples tensor, as one broadcasting copy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import INT32_MAX, BuiltinOperator, type_name
from ...errors import KernelError, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX, SIZED, T, int_values

_TILE_TYPES = (*SIZED, T.STRING)


@dataclass(frozen=True)
class TilePlan:
    source_view: tuple[int, ...]  # the input as (1, d0, 1, d1, ...)
    output_view: tuple[int, ...]  # the output as (m0, d0, m1, d1, ...): copying broadcasts the input


@dataclass(frozen=True)
class TileData:
    plan: TilePlan | None  # None: multiples computed at run time


def _tile_plan(context, node) -> TilePlan:
    tensors = context.tensors
    source, multiples, output = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
    shape = source.shape
    counts = int_values(multiples)
    ensure_eq(len(shape), len(counts), "TILE input rank vs multiples count")
    out_shape = []
    for d, m in zip(shape, counts):
        if m < 0:
            raise KernelError("Multipliers must be non-negative.")
        if d < 0 or (d > 0 and m > INT32_MAX // d):
            raise KernelError(
                f"Cannot multiply {d} and {m}. Output shape dimensions must be in range [0, INT32_MAX]."
            )
        out_shape.append(d * m)
    context.resize_tensor(output, out_shape)
    return TilePlan(
        tuple(x for d in shape for x in (1, d)),
        tuple(x for d, m in zip(shape, counts) for x in (m, d)),
    )


def tile_prepare(context, node):
    check_arity(node, 2)
    source, multiples, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_types_eq(source, output, "TILE input/output types")
    if multiples.type not in INDEX:
        raise KernelError(f"Multipliers of type '{type_name(multiples.type)}' are not supported by tile.")
    ensure_type(source, _TILE_TYPES, "input", "TILE")
    if multiples.is_constant_or_persistent:
        node.user_data = TileData(_tile_plan(context, node))
    else:
        node.user_data = TileData(None)
        context.set_tensor_to_dynamic(output)


def tile_invoke(context, node):
    plan = node.user_data.plan
    if plan is None:
        plan = _tile_plan(context, node)
    tensors = context.tensors
    np.copyto(
        tensors[node.outputs[0]].data.reshape(plan.output_view),
        tensors[node.inputs[0]].data.reshape(plan.source_view),
    )


register_builtin(
    BuiltinOperator.TILE,
    (1, 3),
    types=_TILE_TYPES,
    op_data=TileData,
    prepare=tile_prepare,
    invoke=tile_invoke,
)

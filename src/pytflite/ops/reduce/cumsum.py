"""CUMSUM: sequential sums in the input's type (exclusive, reverse)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure, ensure_type, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import NUMBERS, ensure_single_axis, read_axis


@dataclass(frozen=True)
class CumsumPlan:
    """Running sums of x[source] along `axis` go to out[target] (both in scan order); an exclusive sum
    first sets out[zero] to 0."""

    axis: int
    source: tuple
    target: tuple
    zero: tuple | None


def _cumsum_plan(node, shape: tuple[int, ...], axis_values: np.ndarray) -> CumsumPlan:
    axis = read_axis(axis_values, len(shape))
    before, length = (slice(None),) * axis, shape[axis]
    options = node.builtin_data
    if not options.exclusive:
        scan = (*before, slice(None, None, -1) if options.reverse else slice(None))
        return CumsumPlan(axis, scan, scan, None)
    if options.reverse:  # out[n-2], ..., out[0] get x[n-1], x[n-1] + x[n-2], ...
        first = length - 1
        source = slice(length - 1, 0, -1)
        target = slice(length - 2, None, -1) if length >= 2 else slice(0, 0)
    else:
        first, source, target = 0, slice(0, length - 1), slice(1, length)
    return CumsumPlan(axis, (*before, source), (*before, target), (*before, slice(first, first + 1)))


def cumsum_prepare(context, node):
    check_arity(node, 2)
    source, axis, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, NUMBERS, "input", "CUMSUM")
    ensure_types_eq(source, output, "CUMSUM input/output types")
    ensure_type(axis, TensorType.INT32, "axis", "CUMSUM")
    ensure_single_axis(axis, "CUMSUM")
    ensure(len(source.shape) >= 1, "CUMSUM input must have at least one dimension")
    node.user_data = (
        _cumsum_plan(node, tuple(source.shape), axis.data) if axis.is_constant_or_persistent else None
    )
    context.resize_tensor(output, source.shape)


def cumsum_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    plan = node.user_data
    if plan is None:
        plan = _cumsum_plan(node, x.shape, tensors[node.inputs[1]].data)
    if out.size == 0:
        return
    if plan.zero is not None:
        out[plan.zero] = 0
    np.add.accumulate(x[plan.source], axis=plan.axis, dtype=out.dtype, out=out[plan.target])


register_builtin(
    BuiltinOperator.CUMSUM,
    (1, 1),
    types=NUMBERS,
    op_data=CumsumPlan,
    prepare=cumsum_prepare,
    invoke=cumsum_invoke,
)

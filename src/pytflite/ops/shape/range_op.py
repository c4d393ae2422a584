"""RANGE: start, start + delta, ... up to limit, summed step by step as TFLite does."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import DynamicShapeData, T, set_type

_RANGE_TYPES = (T.FLOAT32, T.INT32, T.INT64)


def _range_size(start, limit, delta) -> int:
    """The element count of [start, limit) by delta, computed as TFLite does for the element type."""
    ensure(delta != 0, "!std::equal_to<T>()(delta, 0) was not true.")
    ensure(
        (start >= limit and delta < 0) or (start <= limit and delta > 0),
        "(start >= limit && delta < 0) || (start <= limit && delta > 0) was not true.",
    )
    if isinstance(start, np.floating):
        with np.errstate(all="ignore"):
            size = np.ceil(np.abs((limit - start) / delta))
        ensure(np.isfinite(size), f"RANGE: the element count {size} is not finite")
        return int(size)
    start, limit, delta = int(start), int(limit), int(delta)
    return (abs(limit - start) + abs(delta) - 1) // abs(delta)


def _range_shape(start, limit, delta) -> tuple[int]:
    """The output shape, from the values of the three scalar input tensors."""
    start, limit, delta = (t.data.reshape(())[()] for t in (start, limit, delta))
    return (_range_size(start, limit, delta),)


def range_prepare(context, node):
    check_arity(node, 3)
    start, limit, delta = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_eq(len(start.shape), 0, "RANGE start rank")
    ensure_eq(len(limit.shape), 0, "RANGE limit rank")
    ensure_eq(len(delta.shape), 0, "RANGE delta rank")
    if start.type not in _RANGE_TYPES:
        raise KernelError(f"Unknown index output data type: {type_name(start.type)}")
    ensure_types_eq(limit, start, "RANGE limit/start types")
    ensure_types_eq(delta, start, "RANGE delta/start types")
    set_type(output, start.type)
    if (
        start.is_constant_or_persistent
        and limit.is_constant_or_persistent
        and delta.is_constant_or_persistent
    ):
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _range_shape(start, limit, delta))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def range_invoke(context, node):
    tensors = context.tensors
    start, limit, delta = (tensors[i] for i in node.inputs)
    output = tensors[node.outputs[0]]
    if node.user_data.dynamic:
        context.resize_tensor(output, _range_shape(start, limit, delta))
    out = output.data
    if out.size:
        out[0] = start.data.reshape(())
        out[1:] = delta.data.reshape(())
        np.add.accumulate(out, out=out)  # TFLite adds delta step by step: the same float rounding


register_builtin(
    BuiltinOperator.RANGE,
    (1, 2),
    types=_RANGE_TYPES,
    op_data=DynamicShapeData,
    prepare=range_prepare,
    invoke=range_invoke,
)

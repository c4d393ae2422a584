"""SQUEEZE: drop the given (or every) dimension of size 1."""

from __future__ import annotations

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_type, ensure_types_eq
from ..common import ANY_TYPE, check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import copy_invoke


def squeeze_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "SQUEEZE")
    ensure_types_eq(source, output, "SQUEEZE input/output types")
    shape = source.shape
    rank = len(shape)
    ensure(rank <= 8, "input_num_dims <= 8 was not true.")
    requested = list(node.builtin_data.squeeze_dims or ())
    if not requested:
        squeezed = {i for i, d in enumerate(shape) if d == 1}
    else:
        squeezed = set()
        for dim in requested:
            current = dim + rank if dim < 0 else dim
            ensure(
                0 <= current < rank and shape[current] == 1,
                f"SQUEEZE: squeeze_dims entry {dim} is not a dimension of size 1 of an input of shape "
                f"{list(shape)} (current >= 0 && current < input_num_dims && "
                "input_dims->data[current] == 1 was not true.)",
            )
            squeezed.add(current)
    context.resize_tensor(output, tuple(d for i, d in enumerate(shape) if i not in squeezed))


register_builtin(BuiltinOperator.SQUEEZE, (1, 2), types=ANY_TYPE, prepare=squeeze_prepare, invoke=copy_invoke)

"""RESHAPE: the one -1 dimension resolved, the element counts checked; a computed shape is known only when
the node runs (OUTPUT_SHAPE_NOT_KNOWN)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.types import BuiltinOperator, Status, TensorType
from ...errors import KernelError, ensure, ensure_eq
from ..common import ANY_TYPE, check_arity, copy_calls, input_tensor, optional_input_tensor, output_tensor
from ..registry import register_builtin
from .common import prod64


@dataclass(frozen=True)
class ReshapeData:
    shape_known: bool


def _requested_shape(context, node) -> list[int]:
    shape_tensor = optional_input_tensor(context, node, 1)
    if shape_tensor is not None and len(shape_tensor.shape) == 1 and shape_tensor.type == TensorType.INT32:
        return shape_tensor.data.tolist()
    requested = list(node.builtin_data.new_shape)
    if requested == [0]:  # legacy converters wrote [0] for a scalar
        requested = []
    return requested


def resolve_reshape(input_shape: tuple[int, ...], requested: list[int]) -> tuple[int, ...]:
    """Fill in the one -1 dimension and check the element counts agree (reshape_utils)."""
    count = prod64(input_shape)
    stretch = requested.count(-1)
    ensure(stretch <= 1, "Reshape: only one dimension may be -1")
    ensure(min(requested, default=0) >= -1, "output shape contains negative dimension")
    shape = list(requested)
    if stretch:
        at = requested.index(-1)
        known = requested[:at] + requested[at + 1 :]
        known_nonzero = prod64([d for d in known if d != 0])
        if count == 0 and prod64(known) != 0:
            shape[at] = 0
        elif known_nonzero:
            shape[at] = prod64([d for d in input_shape if d != 0]) // known_nonzero
        else:
            shape[at] = 0
    total = prod64(shape)
    if total != count:
        raise KernelError(f"num_input_elements != num_output_elements ({count} != {total})")
    return tuple(shape)


# (made once: a frozen dataclass costs a microsecond to build, and a WHILE body may re-prepare each time)
_SHAPE_KNOWN, _SHAPE_AT_INVOKE = ReshapeData(shape_known=True), ReshapeData(shape_known=False)


def reshape_prepare(context, node):
    check_arity(node, (1, 2))
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_eq(source.type, output.type, "RESHAPE input/output type")
    shape_tensor = optional_input_tensor(context, node, 1)
    if shape_tensor is None or shape_tensor.is_constant_or_persistent:
        node.user_data = _SHAPE_KNOWN
        context.resize_tensor(output, resolve_reshape(source.shape, _requested_shape(context, node)))
        return Status.OK
    node.user_data = _SHAPE_AT_INVOKE
    return Status.OUTPUT_SHAPE_NOT_KNOWN


def reshape_invoke(context, node):
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    if not node.user_data.shape_known:
        context.set_tensor_to_dynamic(output)
        context.resize_tensor(output, resolve_reshape(source.shape, _requested_shape(context, node)))
    output.data[...] = source.data.reshape(output.data.shape)


def reshape_calls(context, node):
    """With the shape known in prepare: the copy from a view of the input in the output's shape."""
    if not node.user_data.shape_known:
        return None
    source, out = context.tensors[node.inputs[0]].data, context.tensors[node.outputs[0]].data
    return copy_calls(out, source.reshape(out.shape), source)


register_builtin(
    BuiltinOperator.RESHAPE,
    (1, 1),
    types=ANY_TYPE,
    op_data=ReshapeData,
    prepare=reshape_prepare,
    invoke=reshape_invoke,
    calls=reshape_calls,
)

"""SELECT and SELECT_V2: a condition choosing x or y (masked copies; bitwise when large)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...errors import KernelError, ensure, ensure_type_condition, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import EMBEDDING_TYPES, Op, T, unsupported_type

# SELECT switches on the element size: 8, 16, 32 or 64 bits.
_SELECT_TYPES = tuple(t for t in EMBEDDING_TYPES if t != T.COMPLEX128)


@dataclass(frozen=True)
class SelectData:
    single: bool  # all of condition, x, y and output hold one element
    condition_shape: tuple[int, ...] | None  # SELECT's rank-1 condition reshaped to broadcast by rows
    bits: np.dtype | None  # large outputs: the unsigned type of the element size, for a branch-free select


# Below this many output elements two masked copies are quickest; above it, a branch-free bitwise select
# (whose speed does not depend on how predictable the condition is).
_BITWISE_SELECT_SIZE = 2048


def _select_prepare(op_name: str, broadcast: bool):
    def prepare(context, node):
        check_arity(node, 3)
        condition, x, y = (input_tensor(context, node, i) for i in range(3))
        output = output_tensor(context, node)
        ensure_type_condition(condition, T.BOOL, "input_condition->type != kTfLiteBool")
        ensure_type_condition(y, x.type, "input_x->type != input_y->type")
        if x.type not in _SELECT_TYPES:
            raise unsupported_type(x, f"Type '%s' is not supported by {op_name}.")
        ensure_types_eq(output, x, f"{op_name} output type")
        sizes = (math.prod(condition.shape), math.prod(x.shape), math.prod(y.shape), math.prod(output.shape))
        if sizes == (1, 1, 1, 1):  # TFLite keeps the output's own (one-element) shape here
            node.user_data = SelectData(True, None, None)
            context.resize_tensor(output, output.shape)
            return
        condition_shape = None
        if condition.shape == x.shape == y.shape:
            shape = x.shape
        elif not broadcast:
            rank_one = len(condition.shape) == 1 and len(x.shape) >= 1 and condition.shape[0] == x.shape[0]
            ensure(len(condition.shape) == 0 or rank_one, "data->has_low_rank_input_condition was not true.")
            ensure(x.shape == y.shape, "HaveSameShapes(input_x, input_y) was not true.")
            shape = x.shape
            condition_shape = condition.shape + (1,) * (len(shape) - len(condition.shape))
        else:
            try:
                shape = tuple(np.broadcast_shapes(condition.shape, x.shape, y.shape))
            except ValueError:
                shapes = ", ".join(f"[{','.join(map(str, s))}]" for s in (condition.shape, x.shape))
                raise KernelError(
                    f"Given shapes, {shapes} and [{','.join(map(str, y.shape))}], are not broadcastable."
                ) from None
            ensure(len(shape) <= 8, "output_size->size <= 8 was not true.")
        bits = None
        if math.prod(shape) >= _BITWISE_SELECT_SIZE:
            bits = np.dtype(f"u{np.dtype(output.dtype).itemsize}")
        node.user_data = SelectData(False, condition_shape, bits)
        context.resize_tensor(output, shape)

    return prepare


def select_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    condition = tensors[node.inputs[0]].data
    x, y = tensors[node.inputs[1]].data, tensors[node.inputs[2]].data
    out = tensors[node.outputs[0]].data
    if data.single:
        out.reshape(-1)[0] = x.reshape(-1)[0] if condition.reshape(-1)[0] else y.reshape(-1)[0]
        return
    if data.condition_shape is not None:
        condition = condition.reshape(data.condition_shape)
    if data.bits is None:
        np.copyto(out, y)
        np.copyto(out, x, where=condition)
        return
    # out = y ^ ((x ^ y) & mask), the mask all ones where the condition holds
    mask = condition.astype(data.bits)
    np.negative(mask, out=mask)
    bits_out, bits_y = out.view(data.bits), y.view(data.bits)
    np.bitwise_xor(x.view(data.bits), bits_y, out=bits_out)
    np.bitwise_and(bits_out, mask, out=bits_out)
    np.bitwise_xor(bits_out, bits_y, out=bits_out)


def select_calls(context, node):
    """Two masked copies, the condition's view made once; else the invoke."""
    data = node.user_data
    if data.single or data.bits is not None:
        return None
    tensors = context.tensors
    condition = tensors[node.inputs[0]].data
    x, y = tensors[node.inputs[1]].data, tensors[node.inputs[2]].data
    out = tensors[node.outputs[0]].data
    if data.condition_shape is not None:
        condition = condition.reshape(data.condition_shape)
    return partial(np.copyto, out, y), partial(np.copyto, out, x, where=condition)


register_builtin(
    Op.SELECT,
    (1, 4),
    types=_SELECT_TYPES,
    op_data=SelectData,
    prepare=_select_prepare("SELECT", False),
    invoke=select_invoke,
    calls=select_calls,
)
register_builtin(
    Op.SELECT_V2,
    (1, 2),
    types=_SELECT_TYPES,
    op_data=SelectData,
    prepare=_select_prepare("SELECT_V2", True),
    invoke=select_invoke,
    calls=select_calls,
)

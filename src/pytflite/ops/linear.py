"""Matrix products (float32): FULLY_CONNECTED and BATCH_MATMUL.

FULLY_CONNECTED: y = x @ W^T + b with a fused activation. The input is flattened to [batch, depth] where
depth is the weights' second dimension; the output is [batch, units], or the input's leading dimensions
plus [units] with keep_num_dims.

BATCH_MATMUL: lhs @ rhs over the last two dimensions (each optionally transposed by adj_x / adj_y),
with the leading (batch) dimensions broadcast; ranks 2 to 5. One np.matmul into the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import FullyConnectedOptionsWeightsFormat
from .common import (
    activation_clamp,
    check_arity,
    input_tensor,
    optional_input_tensor,
    output_tensor,
    reject_quantized_or_hybrid,
)
from .registry import register_builtin


@dataclass(frozen=True)
class FullyConnectedData:
    batch: int
    depth: int
    units: int
    clamp: Callable[[np.ndarray], None] | None


def fully_connected_prepare(context, node):
    options = node.builtin_data
    check_arity(node, (2, 3))
    if options.weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
        raise KernelError(f"FULLY_CONNECTED weights format {options.weights_format.name} is not supported")
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    bias = optional_input_tensor(context, node, 2)
    output = output_tensor(context, node)
    reject_quantized_or_hybrid(source, weights, "FULLY_CONNECTED")
    for tensor, role in ((source, "input"), (weights, "weights"), (output, "output")):
        ensure_type(tensor, TensorType.FLOAT32, role, "FULLY_CONNECTED")
    ensure_eq(len(weights.shape), 2, "FULLY_CONNECTED weights rank")
    units, depth = weights.shape
    size = int(np.prod(source.shape, dtype=np.int64))
    if depth == 0:
        batch = int(np.prod(source.shape[:-1], dtype=np.int64))
    else:
        ensure(
            size % depth == 0, f"FULLY_CONNECTED input of {size} elements is not a multiple of depth {depth}"
        )
        batch = size // depth
    if bias is not None:
        ensure_type(bias, TensorType.FLOAT32, "bias", "FULLY_CONNECTED")
        ensure_eq(bias.bytes // 4, units, "FULLY_CONNECTED bias size")
    if options.keep_num_dims:
        ensure(
            len(source.shape) >= 1 and source.shape[-1] == depth,
            f"FULLY_CONNECTED keep_num_dims needs the input's last dimension {depth}, got {list(source.shape)}",
        )
        shape = (*source.shape[:-1], units)
    else:
        shape = (batch, units)
    context.resize_tensor(output, shape)
    node.user_data = FullyConnectedData(
        batch, depth, units, activation_clamp(options.fused_activation_function)
    )


def fully_connected_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    out = tensors[node.outputs[0]].data.reshape(data.batch, data.units)
    x = tensors[node.inputs[0]].data.reshape(data.batch, data.depth)
    np.matmul(x, tensors[node.inputs[1]].data.T, out=out)
    if len(node.inputs) == 3 and node.inputs[2] >= 0:
        out += tensors[node.inputs[2]].data
    if data.clamp is not None:
        data.clamp(out)


register_builtin(
    BuiltinOperator.FULLY_CONNECTED,
    (1, 14),
    types=(TensorType.FLOAT32,),
    prepare=fully_connected_prepare,
    invoke=fully_connected_invoke,
)


def batch_matmul_prepare(context, node):
    check_arity(node, 2)
    options = node.builtin_data
    lhs, rhs, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    reject_quantized_or_hybrid(lhs, rhs, "BATCH_MATMUL")
    ensure_type(lhs, _MATMUL_TYPES, "lhs", "BATCH_MATMUL")
    ensure_types_eq(lhs, rhs, "BATCH_MATMUL lhs/rhs types")
    ensure_types_eq(lhs, output, "BATCH_MATMUL input/output types")
    for tensor, role in ((lhs, "lhs"), (rhs, "rhs")):
        ensure(
            2 <= len(tensor.shape) <= 5,
            f"BATCH_MATMUL {role} must have rank 2 to 5, got {len(tensor.shape)}",
        )
    rank = max(len(lhs.shape), len(rhs.shape))
    lhs_shape = (1,) * (rank - len(lhs.shape)) + tuple(lhs.shape)
    rhs_shape = (1,) * (rank - len(rhs.shape)) + tuple(rhs.shape)
    batch = []
    for a, b in zip(lhs_shape[:-2], rhs_shape[:-2]):
        if a != b and a != 1 and b != 1:
            raise KernelError(
                f"BATCH_MATMUL batch dimensions do not broadcast: {list(lhs.shape)} and {list(rhs.shape)}"
            )
        batch.append(b if a == 1 else a)
    rows = lhs_shape[-1] if options.adj_x else lhs_shape[-2]
    lhs_depth = lhs_shape[-2] if options.adj_x else lhs_shape[-1]
    rhs_depth = rhs_shape[-1] if options.adj_y else rhs_shape[-2]
    cols = rhs_shape[-2] if options.adj_y else rhs_shape[-1]
    ensure_eq(lhs_depth, rhs_depth, "BATCH_MATMUL accumulation dimension of lhs vs rhs")
    context.resize_tensor(output, (*batch, rows, cols))


def batch_matmul_invoke(context, node):
    tensors = context.tensors
    options = node.builtin_data
    lhs = tensors[node.inputs[0]].data
    rhs = tensors[node.inputs[1]].data
    if options.adj_x:
        lhs = lhs.swapaxes(-1, -2)
    if options.adj_y:
        rhs = rhs.swapaxes(-1, -2)
    np.matmul(lhs, rhs, out=tensors[node.outputs[0]].data)


_MATMUL_TYPES = (TensorType.FLOAT32,)

register_builtin(
    BuiltinOperator.BATCH_MATMUL,
    (1, 4),
    types=_MATMUL_TYPES,
    prepare=batch_matmul_prepare,
    invoke=batch_matmul_invoke,
)

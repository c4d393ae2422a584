"""FULLY_CONNECTED (float32): y = x @ W^T + b, with a fused activation.

The input is flattened to [batch, depth] where depth is the weights' second dimension; the output is
[batch, units], or the input's leading dimensions plus [units] with keep_num_dims.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type
from ..model.options import FullyConnectedOptionsWeightsFormat
from .common import activation_clamp, check_arity, input_tensor, optional_input_tensor, output_tensor
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

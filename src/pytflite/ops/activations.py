"""Activation functions: RELU, LOGISTIC, SOFTMAX (float32)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure
from .common import input_tensor, same_shape_prepare
from .registry import register_builtin


def relu_invoke(context, node):
    tensors = context.tensors
    np.maximum(tensors[node.inputs[0]].data, 0, out=tensors[node.outputs[0]].data)


# exp(-x) overflows float32 below this; logistic is ~1e-39 there, far under float32 resolution of 1.
_LOGISTIC_LOWEST = np.float32(-88.0)


def logistic_invoke(context, node):
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    np.maximum(tensors[node.inputs[0]].data, _LOGISTIC_LOWEST, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    out += 1
    np.reciprocal(out, out=out)


@dataclass(frozen=True)
class SoftmaxData:
    beta: float


def softmax_prepare(context, node):
    same_shape_prepare("SOFTMAX")(context, node)
    ensure(len(input_tensor(context, node, 0).shape) >= 1, "SOFTMAX input must have at least one dimension")
    node.user_data = SoftmaxData(float(node.builtin_data.beta))


def softmax_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if out.size == 0:
        return
    # exp((x - max) * beta), then scaled by the reciprocal of the row sum, as TFLite's kernel does
    np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    if node.user_data.beta != 1.0:
        out *= np.float32(node.user_data.beta)
    np.exp(out, out=out)
    out *= np.reciprocal(out.sum(axis=-1, keepdims=True))


_FLOAT = (TensorType.FLOAT32,)
register_builtin(
    BuiltinOperator.RELU, (1, 3), types=_FLOAT, prepare=same_shape_prepare("RELU"), invoke=relu_invoke
)
register_builtin(
    BuiltinOperator.LOGISTIC,
    (1, 3),
    types=_FLOAT,
    prepare=same_shape_prepare("LOGISTIC"),
    invoke=logistic_invoke,
)
register_builtin(
    BuiltinOperator.SOFTMAX, (1, 4), types=_FLOAT, prepare=softmax_prepare, invoke=softmax_invoke
)

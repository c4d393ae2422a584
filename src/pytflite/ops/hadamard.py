"""aeq.hadamard_rotation: the AI Edge Quantizer's Hadamard rotation, a custom op LiteRT's
BuiltinOpResolver registers by default (quantized LLMs rotate activations with it before an int4/int8
FULLY_CONNECTED whose weights were rotated the same way).

Options (flexbuffer map): hadamard_size, and random_binary_vector (LiteRT reads it; its kernel never
uses it). The output is the input with consecutive runs of hadamard_size values replaced by their
normalized fast Walsh-Hadamard transform: the butterflies (x + y, x - y) in float32 for spans 1, 2, 4,
..., then a float32 multiply by 1 / sqrt(hadamard_size) (taken in double, as C++'s std::sqrt of an int
is, then rounded to float32). As LiteRT's kernel, it reads the input as [features, feature_size] or
[batch, features, feature_size] (rank 3) and transforms batch * features * (feature_size //
hadamard_size) runs laid end to end from the start of the buffer; a hadamard_size that is no power of
two transforms nothing (LiteRT prints an error and copies the input). int32 inputs are accepted, as
LiteRT accepts them, and their bits transformed as float32 values, as its kernel does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.types import TensorType
from ..errors import ensure, ensure_type
from .common import check_arity, input_tensor, output_tensor
from .custom_op_options import as_c_int, read_map
from .registry import register_custom

_F32 = np.float32
_WORD_TYPES = (TensorType.FLOAT32, TensorType.INT32)


@dataclass(frozen=True)
class HadamardData:
    """The options, and (after prepare) how many runs to transform and the normalization factor."""

    hadamard_size: int
    runs: int = 0
    norm: np.ndarray | None = None


def hadamard_init(context, buffer, length):
    return HadamardData(as_c_int(read_map("aeq.hadamard_rotation", buffer), "hadamard_size"))


def hadamard_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, _WORD_TYPES, "input", "aeq.hadamard_rotation")
    ensure_type(output, _WORD_TYPES, "output", "aeq.hadamard_rotation")
    size = node.user_data.hadamard_size
    ensure(size > 0, f"aeq.hadamard_rotation hadamard_size {size} is not positive")
    shape = source.shape
    ensure(len(shape) >= 2, f"aeq.hadamard_rotation needs an input of rank 2 or 3, got rank {len(shape)}")
    batch, features, feature_size = shape if len(shape) == 3 else (1, shape[0], shape[1])
    power_of_two = size & (size - 1) == 0
    runs = batch * features * (feature_size // size) if power_of_two else 0
    norm = np.array(1.0 / math.sqrt(size), _F32)
    context.resize_tensor(output, shape)
    node.user_data = HadamardData(size, runs, norm)


def hadamard_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    out = tensors[node.outputs[0]].data.reshape(-1).view(_F32)
    np.copyto(out, tensors[node.inputs[0]].data.reshape(-1).view(_F32))
    if not data.runs:
        return
    size = data.hadamard_size
    runs = out[: data.runs * size].reshape(data.runs, size)
    span = 1
    while span < size:
        pairs = runs.reshape(data.runs, size // (2 * span), 2, span)
        first, second = pairs[:, :, 0, :], pairs[:, :, 1, :]
        total = first + second
        np.subtract(first, second, out=second)
        first[...] = total
        span *= 2
    np.multiply(runs, data.norm, out=runs)


register_custom(
    "aeq.hadamard_rotation",
    (1, 1),
    types=_WORD_TYPES,
    op_data=HadamardData,
    init=hadamard_init,
    prepare=hadamard_prepare,
    invoke=hadamard_invoke,
)

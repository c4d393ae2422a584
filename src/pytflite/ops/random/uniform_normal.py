"""RANDOM_UNIFORM and RANDOM_STANDARD_NORMAL: float32 tensors of the shape the int32 `shape` input gives.

Each invoke draws ceil(n / 4) Philox blocks from the node's stream and turns them into n values:
uniforms word by word (23 mantissa bits), normals by Box-Muller on word pairs, each pair in a block
giving two values (a trailing odd value discards its pair's second one). The stream continues across
invokes and restarts at every prepare, as LiteRT's. A non-constant shape makes the output dynamic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure_eq, ensure_type
from ..common import check_arity, input_tensor, output_tensor
from ..quant.lut import c_float_function
from ..registry import register_builtin
from .philox import PhiloxStream, uint32_to_unit_float

_EPSILON = np.float32(1e-7)  # Box-Muller's floor for u1, which goes through log
_TWO_PI = np.float64(2 * np.pi)  # a double in TF's `2.0f * M_PI * u`: the product rounds to float once

# The host C library's float functions, as LiteRT's Box-Muller calls them (sincosf on Linux, which in
# glibc gives what its sinf and cosf give), one ctypes call per value (quant/lut.py). They are not
# correctly rounded: over all 2**23 arguments Box-Muller can pass them, glibc 2.36's logf is one ulp off
# the correctly rounded result on 0.73%, sinf and cosf on 1.29%, so NumPy's ufuncs would not give
# LiteRT's bits.
_LOGF, _SINF, _COSF = (c_float_function(name) for name in ("logf", "sinf", "cosf"))


def uniform_values(stream: PhiloxStream, count: int) -> np.ndarray:
    return uint32_to_unit_float(stream.draw(-(-count // 4))[:count])


def standard_normal_values(stream: PhiloxStream, count: int) -> np.ndarray:
    pairs = -(-count // 2)
    words = stream.draw(-(-count // 4))[: 2 * pairs]
    u1 = np.maximum(uint32_to_unit_float(words[0::2]), _EPSILON)
    v1 = (_TWO_PI * uint32_to_unit_float(words[1::2])).astype(np.float32)
    radius = np.sqrt(np.float32(-2) * _LOGF(u1))
    values = np.empty((pairs, 2), np.float32)
    np.multiply(_SINF(v1), radius, out=values[:, 0])
    np.multiply(_COSF(v1), radius, out=values[:, 1])
    return values.reshape(-1)[:count]


@dataclass(frozen=True)
class RandomData:
    stream: PhiloxStream  # advanced by every invoke; a new one at every prepare
    dynamic: bool  # the shape input is computed at run time


def _output_shape(shape) -> tuple[int, ...]:
    return tuple(int(v) for v in shape.data)


def _make_prepare(op_name: str) -> Callable:
    def prepare(context, node):
        check_arity(node, 1)
        shape, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_type(shape, TensorType.INT32, "shape", op_name)
        ensure_eq(len(shape.shape), 1, "NumDimensions(shape)")
        if output.type != TensorType.FLOAT32:
            raise KernelError(f"Unsupported output datatype for {op_name} op: {type_name(output.type)}")
        dynamic = not shape.is_constant_or_persistent
        node.user_data = RandomData(PhiloxStream.from_options(node.builtin_data), dynamic)
        if dynamic:
            context.set_tensor_to_dynamic(output)
        else:
            context.resize_tensor(output, _output_shape(shape))

    return prepare


def _make_invoke(values: Callable[[PhiloxStream, int], np.ndarray]) -> Callable:
    def invoke(context, node):
        data = node.user_data
        output = context.tensors[node.outputs[0]]
        if data.dynamic:
            context.resize_tensor(output, _output_shape(context.tensors[node.inputs[0]]))
        out = output.data
        np.copyto(out.reshape(-1), values(data.stream, out.size))

    return invoke


for _op, _name, _values in (
    (BuiltinOperator.RANDOM_UNIFORM, "RandomUniform", uniform_values),
    (BuiltinOperator.RANDOM_STANDARD_NORMAL, "RandomStandardNormal", standard_normal_values),
):
    register_builtin(
        _op,
        (1, 1),
        types=(TensorType.INT32,),
        op_data=RandomData,
        prepare=_make_prepare(_name),
        invoke=_make_invoke(_values),
        stateful=True,
    )

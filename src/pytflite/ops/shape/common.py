"""What the shape kernels share: the element types they accept, TFLite's type numbering for its
messages, reading shape/axis tensors, typing and writing outputs, the plain-copy invoke, the int64
element count, and DynamicShapeData (an output shape known in prepare or only at invoke)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...core.types import TensorType
from ...errors import ensure, ensure_eq

T = TensorType

# Element types whose width is 8, 16, 32 or 64 bits: what TFLite's copy kernels switch on.
SIZED = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.FLOAT64,
    T.COMPLEX64,
    T.INT8,
    T.UINT8,
    T.INT16,
    T.UINT16,
    T.INT32,
    T.UINT32,
    T.INT64,
    T.UINT64,
    T.BOOL,
    T.FLOAT8_E4M3FN,
    T.FLOAT8_E5M2,
)
INDEX = (T.INT32, T.INT64)


def set_persistent_ro(context, tensor, shape: Sequence[int]) -> None:
    """An output known in prepare whatever the inputs' values (SHAPE, RANK): the runtime computes it
    right after prepare and downstream kernels read it as a constant (SetTensorToPersistentRo)."""
    context.set_tensor_to_persistent_ro(tensor)
    context.resize_tensor(tensor, shape)


def set_type(tensor, tensor_type: TensorType) -> None:
    """Give an output the type the kernel produces, as TFLite kernels do (`output->type = ...`)."""
    if tensor.type != tensor_type:
        tensor.type = tensor_type
        tensor.data = None  # memory of the old type is dropped; the following resize gives new memory


def ensure_same_quantization(source, output, op: str) -> None:
    ensure_eq(source.params.scale, output.params.scale, f"{op} input/output scale")
    ensure_eq(source.params.zero_point, output.params.zero_point, f"{op} input/output zero point")


def int_values(tensor) -> list[int]:
    """The integer values of a shape/axis/multiples tensor."""
    return [int(v) for v in tensor.data.reshape(-1).tolist()]


def scalar_value(tensor) -> int:
    """The first element of an int32 or int64 axis tensor (TFLite reads element 0)."""
    values = int_values(tensor)
    ensure(len(values) > 0, "axis tensor is empty")
    return values[0]


def copy_invoke(context, node) -> None:
    """Invoke for a kernel whose output holds the input's elements in the same order."""
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    np.copyto(out, tensors[node.inputs[0]].data.reshape(out.shape))


def prod64(dims) -> int:
    """int(np.prod(dims, dtype=np.int64)) without NumPy's per-call cost (which prepare pays at every
    WHILE iteration that re-prepares a RESHAPE); NumPy's wrap-around is kept for overflowing products."""
    product = math.prod(dims)
    return product if -(2**63) <= product < 2**63 else int(np.prod(dims, dtype=np.int64))


@dataclass(frozen=True)
class DynamicShapeData:
    dynamic: bool  # the output shape is computed from a runtime tensor at each invoke

"""BITCAST: a tensor's bytes read as another element type (tf.bitcast).

A wider input element becomes a new last dimension of narrower ones ([..., ratio]); narrower inputs
need that last dimension and lose it; equal sizes keep the shape. The bytes are copied unchanged.
"""

from __future__ import annotations

import numpy as np

from ..core.types import TFLITE_TYPE_NUMBER, BuiltinOperator, TensorType, storage_dtype
from ..errors import KernelError
from .common import ANY_TYPE, check_arity, input_tensor, output_tensor
from .registry import register_builtin

T = TensorType
_PACKED = (T.INT4, T.UINT4, T.INT2)  # TFLite counts them a byte an element; pytflite holds them packed
_TYPES = tuple(t for t in ANY_TYPE if t not in (T.STRING, *_PACKED))


def _element_size(tensor) -> int:
    """TFLite's GetSizeOfType, with its message for the types it has no size for."""
    if tensor.type in _PACKED:
        raise KernelError(f"BITCAST of a packed {tensor.type.name} tensor is not supported")
    if tensor.type not in _TYPES:
        raise KernelError(
            f"Type {TFLITE_TYPE_NUMBER.get(tensor.type, 0)} is unsupported. Only float16, float32, float64, int2, "
            "int4, int8, int16, int32, int64, uint8, uint64, bool, complex64 and complex128 supported currently."
        )
    return storage_dtype(tensor.type).itemsize


def bitcast_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    wide, narrow = _element_size(source), _element_size(output)
    shape = source.shape
    if wide > narrow:
        shape = (*shape, wide // narrow)
    elif wide < narrow:
        if not shape:
            raise KernelError("BITCAST to a wider type needs an input of rank >= 1")
        if shape[-1] != narrow // wide:
            raise KernelError(
                "input->dims->data[dims - 1] != output_type_size / input_type_size "
                f"({shape[-1]} != {narrow // wide})"
            )
        shape = shape[:-1]
    context.resize_tensor(output, shape)


def bitcast_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    np.copyto(out.reshape(-1).view(np.uint8), source.reshape(-1).view(np.uint8))


register_builtin(
    BuiltinOperator.BITCAST, (1, 1), types=_TYPES, prepare=bitcast_prepare, invoke=bitcast_invoke
)

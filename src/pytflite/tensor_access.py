"""Tensor values and details through the Python API: get_tensor, set_tensor and the details dicts, with
LiteRT's checks, messages and conversions (sub-byte tensors unpacked, strings as bytes objects, a
byte-swapped array in native order), shared by the Interpreter, its SignatureRunner and the tools.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .core.packed import PACKED_TYPES, pack_into, unpack_packed
from .core.quantization import AffineQuantization, BlockwiseQuantization
from .core.subgraph import Subgraph
from .core.tensor import Tensor
from .core.types import (
    NON_POD_TYPES,
    TensorType,
    api_dtype,
    storage_dtype,
    tensor_type_for_dtype,
    type_name,
)
from .errors import InvalidArgumentError


def _check_tensor_index(subgraph: Subgraph, index: int) -> None:
    if not 0 <= index < len(subgraph.tensors):
        raise InvalidArgumentError(
            f"Invalid tensor index {index} exceeds max tensor index {len(subgraph.tensors)}"
        )


def readable_data(subgraph: Subgraph, index: int) -> np.ndarray:
    """A tensor's data for get_tensor/tensor(), with LiteRT's checks."""
    _check_tensor_index(subgraph, index)
    tensor = subgraph.tensors[index]
    if tensor.type is None:
        raise InvalidArgumentError("Unknown tensor type.")
    if tensor.data is None:
        if tensor.bytes or tensor.type in NON_POD_TYPES:
            raise InvalidArgumentError("Tensor data is null. Run allocate_tensors() first")
        return np.zeros(tensor.shape, dtype=api_dtype(tensor.type))
    return tensor.data


def tensor_value(subgraph: Subgraph, index: int) -> np.ndarray:
    """get_tensor's copy of a tensor; sub-byte tensors come unpacked, one element per byte, as in LiteRT."""
    data = readable_data(subgraph, index)
    tensor = subgraph.tensors[index]
    if tensor.type in PACKED_TYPES and tensor.data is not None:
        return unpack_packed(data, math.prod(tensor.shape), tensor.type).reshape(tensor.shape)
    return data.copy()


def _set_4bit_tensor(tensor, index: int, array: np.ndarray, incoming) -> None:
    """LiteRT's Set4BitTensor: one int8 (INT4) or uint8 (UINT4) per element, in range, packed here."""
    expected = TensorType.INT8 if tensor.type == TensorType.INT4 else TensorType.UINT8
    kind = type_name(tensor.type)
    if incoming != expected:
        raise InvalidArgumentError(
            f"Cannot set tensor: Expected a numpy array of {np.dtype(storage_dtype(expected)).name} for "
            f"{kind} input {index}, name: {tensor.name}, but got {type_name(incoming)}"
        )
    count = math.prod(tensor.shape)
    if array.nbytes != count:
        raise InvalidArgumentError(
            f"Cannot set tensor: Numpy array for {kind} input {index}, name: {tensor.name}, has "
            f"{array.nbytes} bytes, but expected {count} bytes for {count} elements"
        )
    if tensor.data is None and tensor.bytes:
        raise InvalidArgumentError(
            "Cannot set tensor: Tensor is unallocated. Try calling allocate_tensors() first for input "
            f"{index}, name: {tensor.name}"
        )
    low, high = (-8, 7) if tensor.type == TensorType.INT4 else (0, 15)
    if array.size and (array.min() < low or array.max() > high):
        raise InvalidArgumentError(
            f"Cannot set tensor: Values for {kind} input must be between {low} and {high}."
        )
    pack_into(array, tensor.type, tensor.data)


def _as_array(value: Any) -> np.ndarray:
    """`value` as an array in native byte order (LiteRT would copy a byte-swapped array's raw bytes)."""
    try:
        array = np.asarray(value)
    except Exception:
        raise InvalidArgumentError("Failed to convert value into readable tensor.") from None
    if array.dtype.byteorder not in "=|":
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def checked_value(tensor: Tensor, index: int, value: Any) -> np.ndarray:
    """`value` as an array whose element type suits the tensor, with LiteRT's message if not."""
    array = _as_array(value)
    if tensor.type is None:
        raise InvalidArgumentError("Tensor with no type found.")
    if tensor.type in (TensorType.INT4, TensorType.UINT4):
        return array  # _set_4bit_tensor checks the element type
    incoming = tensor_type_for_dtype(array.dtype)
    raw_float8 = tensor.type in (TensorType.FLOAT8_E4M3FN, TensorType.FLOAT8_E5M2) and incoming in (
        TensorType.INT8,
        TensorType.UINT8,
    )
    if incoming != tensor.type and not raw_float8:
        raise InvalidArgumentError(
            f"Cannot set tensor: Got value of type {type_name(incoming)} but expected type "
            f"{type_name(tensor.type)} for input {index}, name: {tensor.name} "
        )
    return array


def set_tensor_checked(subgraph: Subgraph, index: int, value: Any) -> None:
    """Copy `value` into a tensor, with LiteRT's checks and messages, in LiteRT's order."""
    _check_tensor_index(subgraph, index)
    tensor = subgraph.tensors[index]
    array = checked_value(tensor, index, value)
    if tensor.type in (TensorType.INT4, TensorType.UINT4):
        _set_4bit_tensor(tensor, index, array, tensor_type_for_dtype(array.dtype))
        return
    raw_float8 = tensor.type != tensor_type_for_dtype(array.dtype)
    if array.ndim != len(tensor.shape):
        raise InvalidArgumentError(
            f"Cannot set tensor: Dimension mismatch. Got {array.ndim} but expected {len(tensor.shape)} for input {index}."
        )
    for axis, (got, expected) in enumerate(zip(array.shape, tensor.shape)):
        if got != expected:
            raise InvalidArgumentError(
                f"Cannot set tensor: Dimension mismatch. Got {got} but expected {expected} for dimension {axis} "
                f"of input {index}."
            )
    if tensor.type == TensorType.STRING:
        tensor.data = _string_elements(value, array)
        return
    if tensor.data is None and tensor.bytes:
        raise InvalidArgumentError(
            "Cannot set tensor: Tensor is unallocated. Try calling allocate_tensors() first"
        )
    if array.nbytes != tensor.bytes:
        raise InvalidArgumentError(f"numpy array had {array.nbytes} bytes but expected {tensor.bytes} bytes.")
    if not tensor.data.flags.writeable:
        raise InvalidArgumentError(
            f"Cannot set tensor: tensor {index} ({tensor.name}) is a read-only constant."
        )
    np.copyto(tensor.data, array.view(tensor.data.dtype) if raw_float8 else array)


def _string_elements(value: Any, array: np.ndarray) -> np.ndarray:
    """A string tensor's new elements (bytes objects), as LiteRT's FillStringBufferWithPyArray makes them.

    Only a NumPy array is taken. A 0-d bytes or str array is one string of its raw buffer, as LiteRT
    copies the memory: trailing NULs stay (NumPy strips them from the item), and a str array gives its
    UCS-4 bytes. Other elements are bytes as they are, str encoded as UTF-8.
    """
    if not isinstance(value, np.ndarray):
        raise InvalidArgumentError(
            f"Passed in value type is not a numpy array, got type {_c_type_name(type(value))}."
        )
    if array.ndim == 0 and array.dtype.kind in "SU":
        return np.array(array.tobytes(), dtype=object)
    return np.array([_string_bytes(v) for v in array.reshape(-1)], dtype=object).reshape(array.shape)


def _string_bytes(element: Any) -> bytes:
    if isinstance(element, str):
        return element.encode("utf-8")
    if isinstance(element, bytes):
        return bytes(element)
    raise InvalidArgumentError("PyBytes_AsStringAndSize() failed.")  # LiteRT's text for a non-string


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


def _c_type_name(kind: type) -> str:
    """A type's name as LiteRT's C++ prints it (tp_name): a Python class's or builtin's bare name, an
    extension type's dotted one (numpy.bytes_)."""
    if kind.__flags__ & _HEAP_TYPE or kind.__module__ == "builtins":
        return kind.__name__
    return f"{kind.__module__}.{kind.__name__}"


def tensor_details(subgraph: Subgraph, tensor: Tensor, index: int | None = None) -> dict[str, Any]:
    """One tensor's details dict, with exactly LiteRT's keys and value types; `index`: LiteRT's index
    of the tensor (tensor_listing/numbering.py), where it may differ from the subgraph's (not a model tensor)."""
    if tensor.type is None:
        raise InvalidArgumentError("Tensor with no type found.")
    return {
        "name": tensor.name,
        "index": tensor.index if index is None else index,
        "shape": np.array(tensor.shape, dtype=np.int32),
        "shape_signature": np.array(tensor.shape_signature, dtype=np.int32),
        "dtype": api_dtype(tensor.type),
        "quantization": (tensor.params.scale, tensor.params.zero_point),
        "quantization_parameters": _quantization_parameters(subgraph, tensor),
        "sparsity_parameters": {} if tensor.sparsity is None else tensor.sparsity.as_dict(),
    }


def _quantization_parameters(subgraph: Subgraph, tensor: Tensor) -> dict[str, Any]:
    quantization = tensor.quantization
    if isinstance(quantization, AffineQuantization):
        return {
            "scales": quantization.scale.astype(np.float32),
            "zero_points": quantization.zero_point.astype(np.int32),
            "quantized_dimension": quantization.quantized_dimension,
            "block_size": 0,
        }
    if isinstance(quantization, BlockwiseQuantization):
        scales = subgraph.tensors[quantization.scale_tensor].data
        zero_points = (
            np.zeros(0, np.int32)
            if quantization.zero_point_tensor == -1
            else subgraph.tensors[quantization.zero_point_tensor].data.reshape(-1).view(np.int32)
        )
        return {
            "scales": np.asarray(scales).reshape(-1).view(np.float16),
            "zero_points": zero_points.astype(np.int32),
            "quantized_dimension": quantization.quantized_dimension,
            "block_size": quantization.block_size,
        }
    return {
        "scales": np.zeros(0, np.float32),
        "zero_points": np.zeros(0, np.int32),
        "quantized_dimension": 0,
        "block_size": 0,
    }

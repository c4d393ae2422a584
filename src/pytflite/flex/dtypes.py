"""TensorFlow's data types as Flex kernels see them: each DataType code with TF's name for it, the NumPy
dtype of its values and the TFLite tensor type that carries them between TFLite and TF nodes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import TensorType


@dataclass(frozen=True)
class DType:
    """One tensorflow.DataType. `numpy`: the dtype of an array of its values (object for strings, as
    a TFLite string tensor's data, and for variants: a TensorList per element); `tensor_type`: the
    TFLite tensor type of the same values, None where TFLite has none."""

    code: int
    name: str
    numpy: np.dtype
    tensor_type: TensorType | None

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    @property
    def type_string(self) -> str:
        """TF's DataTypeString, which its error messages print ("float", "double", "int32")."""
        return _TYPE_STRINGS.get(self.name, self.name)


_TYPE_STRINGS = {"float32": "float", "float64": "double", "float16": "half"}


_TABLE = (
    (1, "float32", np.float32, TensorType.FLOAT32),
    (2, "float64", np.float64, TensorType.FLOAT64),
    (3, "int32", np.int32, TensorType.INT32),
    (4, "uint8", np.uint8, TensorType.UINT8),
    (5, "int16", np.int16, TensorType.INT16),
    (6, "int8", np.int8, TensorType.INT8),
    (7, "string", np.object_, TensorType.STRING),
    (8, "complex64", np.complex64, TensorType.COMPLEX64),
    (9, "int64", np.int64, TensorType.INT64),
    (10, "bool", np.bool_, TensorType.BOOL),
    (14, "bfloat16", np.uint16, TensorType.BFLOAT16),
    (17, "uint16", np.uint16, TensorType.UINT16),
    (18, "complex128", np.complex128, TensorType.COMPLEX128),
    (19, "float16", np.float16, TensorType.FLOAT16),
    (20, "resource", np.object_, TensorType.RESOURCE),
    (21, "variant", np.object_, TensorType.VARIANT),
    (22, "uint32", np.uint32, TensorType.UINT32),
    (23, "uint64", np.uint64, TensorType.UINT64),
)
BY_CODE = {code: DType(code, name, np.dtype(numpy), tensor) for code, name, numpy, tensor in _TABLE}
BY_NAME = {dtype.name: dtype for dtype in BY_CODE.values()}
_BY_TENSOR_TYPE = {dtype.tensor_type: dtype for dtype in BY_CODE.values()}


def dtype_of_code(code: int) -> DType:
    """The DType of a DataType code; refuses the ones no Flex kernel handles (quantized, reference)."""
    found = BY_CODE.get(code)
    if found is None:
        raise ValueError(f"TensorFlow DataType {code} is not supported by pytflite's Flex kernels")
    return found


def dtype_of_tensor_type(tensor_type: TensorType) -> DType | None:
    return _BY_TENSOR_TYPE.get(tensor_type)


FLOATS = frozenset({"float16", "float32", "float64"})  # bfloat16 has no NumPy arithmetic
COMPLEX = frozenset({"complex64", "complex128"})
SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
INTEGERS = SIGNED | UNSIGNED
REAL = FLOATS | INTEGERS
NUMBERS = REAL | COMPLEX

# Named groups, largest first, for describing a kernel's dtypes (docs/flex_ops.md).
GROUPS = (
    ("numbers", NUMBERS),
    ("real", REAL),
    ("integers", INTEGERS),
    ("floats", FLOATS),
    ("complex", COMPLEX),
    ("signed", SIGNED),
)

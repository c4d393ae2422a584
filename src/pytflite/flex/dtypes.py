"""TensorFlow's data types as Flex kernels see them: each DataType code with TF's name for it and the
NumPy dtype of its values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """One tensorflow.DataType. `numpy`: the dtype of an array of its values (object for strings, as
    a TFLite string tensor's data, and for resources and variants)."""

    code: int
    name: str
    numpy: np.dtype

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    @property
    def type_string(self) -> str:
        """TF's DataTypeString, which its error messages print ("float", "double", "int32")."""
        return _TYPE_STRINGS.get(self.name, self.name)


_TYPE_STRINGS = {"float32": "float", "float64": "double", "float16": "half"}


_TABLE = (
    (1, "float32", np.float32),
    (2, "float64", np.float64),
    (3, "int32", np.int32),
    (4, "uint8", np.uint8),
    (5, "int16", np.int16),
    (6, "int8", np.int8),
    (7, "string", np.object_),
    (8, "complex64", np.complex64),
    (9, "int64", np.int64),
    (10, "bool", np.bool_),
    (14, "bfloat16", np.uint16),
    (17, "uint16", np.uint16),
    (18, "complex128", np.complex128),
    (19, "float16", np.float16),
    (20, "resource", np.object_),
    (21, "variant", np.object_),
    (22, "uint32", np.uint32),
    (23, "uint64", np.uint64),
)
BY_CODE = {code: DType(code, name, np.dtype(numpy)) for code, name, numpy in _TABLE}
BY_NAME = {dtype.name: dtype for dtype in BY_CODE.values()}


def dtype_of_code(code: int) -> DType:
    """The DType of a DataType code; refuses the ones no Flex kernel handles (quantized, reference)."""
    found = BY_CODE.get(code)
    if found is None:
        raise ValueError(f"TensorFlow DataType {code} is not supported by pytflite's Flex kernels")
    return found


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

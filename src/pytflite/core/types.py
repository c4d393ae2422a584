"""The runtime's vocabulary: tensor element types, builtin operators, allocation types and status codes.

Enum names and values are the `.tflite` schema's (TensorType, BuiltinOperator) and the C API's
(TfLiteAllocationType, TfLiteStatus), so code written against TFLite's headers reads the same here.
This module also says how each element type is stored in NumPy and how many bytes a shape needs.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence

import numpy as np


class TensorType(enum.IntEnum):
    """Element type of a tensor, with the schema's values (schema.fbs `enum TensorType`)."""

    FLOAT32 = 0
    FLOAT16 = 1
    INT32 = 2
    UINT8 = 3
    INT64 = 4
    STRING = 5
    BOOL = 6
    INT16 = 7
    COMPLEX64 = 8
    INT8 = 9
    FLOAT64 = 10
    COMPLEX128 = 11
    UINT64 = 12
    RESOURCE = 13
    VARIANT = 14
    UINT32 = 15
    UINT16 = 16
    INT4 = 17
    BFLOAT16 = 18
    INT2 = 19
    UINT4 = 20
    FLOAT8_E4M3FN = 21
    FLOAT8_E5M2 = 22


# The schema numbers builtin operators 0..209 without gaps, in this order.
BuiltinOperator = enum.IntEnum(
    "BuiltinOperator",
    """
    ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D DEPTH_TO_SPACE DEQUANTIZE
    EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED HASHTABLE_LOOKUP L2_NORMALIZATION L2_POOL_2D
    LOCAL_RESPONSE_NORMALIZATION LOGISTIC LSH_PROJECTION LSTM MAX_POOL_2D MUL RELU RELU_N1_TO_1 RELU6
    RESHAPE RESIZE_BILINEAR RNN SOFTMAX SPACE_TO_DEPTH SVDF TANH CONCAT_EMBEDDINGS SKIP_GRAM CALL CUSTOM
    EMBEDDING_LOOKUP_SPARSE PAD UNIDIRECTIONAL_SEQUENCE_RNN GATHER BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND
    TRANSPOSE MEAN SUB DIV SQUEEZE UNIDIRECTIONAL_SEQUENCE_LSTM STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN
    EXP TOPK_V2 SPLIT LOG_SOFTMAX DELEGATE BIDIRECTIONAL_SEQUENCE_LSTM CAST PRELU MAXIMUM ARG_MAX
    MINIMUM LESS NEG PADV2 GREATER GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN TRANSPOSE_CONV
    SPARSE_TO_DENSE TILE EXPAND_DIMS EQUAL NOT_EQUAL LOG SUM SQRT RSQRT SHAPE POW ARG_MIN FAKE_QUANT
    REDUCE_PROD REDUCE_MAX PACK LOGICAL_OR ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV
    REDUCE_ANY SQUARE ZEROS_LIKE FILL FLOOR_MOD RANGE RESIZE_NEAREST_NEIGHBOR LEAKY_RELU
    SQUARED_DIFFERENCE MIRROR_PAD ABS SPLIT_V UNIQUE CEIL REVERSE_V2 ADD_N GATHER_ND COS WHERE RANK ELU
    REVERSE_SEQUENCE MATRIX_DIAG QUANTIZE MATRIX_SET_DIAG ROUND HARD_SWISH IF WHILE
    NON_MAX_SUPPRESSION_V4 NON_MAX_SUPPRESSION_V5 SCATTER_ND SELECT_V2 DENSIFY SEGMENT_SUM BATCH_MATMUL
    PLACEHOLDER_FOR_GREATER_OP_CODES CUMSUM CALL_ONCE BROADCAST_TO RFFT2D CONV_3D IMAG REAL COMPLEX_ABS
    HASHTABLE HASHTABLE_FIND HASHTABLE_IMPORT HASHTABLE_SIZE REDUCE_ALL CONV_3D_TRANSPOSE VAR_HANDLE
    READ_VARIABLE ASSIGN_VARIABLE BROADCAST_ARGS RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM
    MULTINOMIAL GELU DYNAMIC_UPDATE_SLICE RELU_0_TO_1 UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_MAX
    UNSORTED_SEGMENT_SUM ATAN2 UNSORTED_SEGMENT_MIN SIGN BITCAST BITWISE_XOR RIGHT_SHIFT
    STABLEHLO_LOGISTIC STABLEHLO_ADD STABLEHLO_DIVIDE STABLEHLO_MULTIPLY STABLEHLO_MAXIMUM
    STABLEHLO_RESHAPE STABLEHLO_CLAMP STABLEHLO_CONCATENATE STABLEHLO_BROADCAST_IN_DIM
    STABLEHLO_CONVOLUTION STABLEHLO_SLICE STABLEHLO_CUSTOM_CALL STABLEHLO_REDUCE STABLEHLO_ABS
    STABLEHLO_AND STABLEHLO_COSINE STABLEHLO_EXPONENTIAL STABLEHLO_FLOOR STABLEHLO_LOG STABLEHLO_MINIMUM
    STABLEHLO_NEGATE STABLEHLO_OR STABLEHLO_POWER STABLEHLO_REMAINDER STABLEHLO_RSQRT STABLEHLO_SELECT
    STABLEHLO_SUBTRACT STABLEHLO_TANH STABLEHLO_SCATTER STABLEHLO_COMPARE STABLEHLO_CONVERT
    STABLEHLO_DYNAMIC_SLICE STABLEHLO_DYNAMIC_UPDATE_SLICE STABLEHLO_PAD STABLEHLO_IOTA
    STABLEHLO_DOT_GENERAL STABLEHLO_REDUCE_WINDOW STABLEHLO_SORT STABLEHLO_WHILE STABLEHLO_GATHER
    STABLEHLO_TRANSPOSE DILATE STABLEHLO_RNG_BIT_GENERATOR REDUCE_WINDOW STABLEHLO_COMPOSITE
    STABLEHLO_SHIFT_LEFT STABLEHLO_CBRT STABLEHLO_CASE
    """.split(),
    start=0,
    module=__name__,
)
BuiltinOperator.__doc__ = (
    "Builtin operator codes, with the schema's values (schema.fbs `enum BuiltinOperator`)."
)


class AllocationType(enum.IntEnum):
    """Where a tensor's data lives (TfLiteAllocationType)."""

    MEM_NONE = 0
    MMAP_RO = 1  # a constant: a read-only view on the mapped model file
    ARENA_RW = 2  # planned into the subgraph's arena, reused between tensors with disjoint lifetimes
    ARENA_RW_PERSISTENT = 3  # variables and persistent temporaries: their own arena, never reused
    DYNAMIC = 4  # its own array, (re)allocated whenever it is resized; strings and resources always
    PERSISTENT_RO = 5  # computed once in prepare, constant afterwards
    CUSTOM = 6  # a buffer the user supplied
    VARIANT_OBJECT = 7
    NON_CPU = 8


class Status(enum.IntEnum):
    """Result of a C-API style call (TfLiteStatus). Kernels may return one instead of raising."""

    OK = 0
    ERROR = 1
    DELEGATE_ERROR = 2
    APPLICATION_ERROR = 3
    DELEGATE_DATA_NOT_FOUND = 4
    DELEGATE_DATA_WRITE_ERROR = 5
    DELEGATE_DATA_READ_ERROR = 6
    UNRESOLVED_OPS = 7
    CANCELLED = 8
    OUTPUT_SHAPE_NOT_KNOWN = 9


OK_STATUSES = frozenset({None, Status.OK})  # what a kernel or delegate may return on success

INT32_MIN = -(2**31)  # int32's range, which TFLite's integer arithmetic wraps or clamps to
INT32_MAX = 2**31 - 1


class SubgraphState(enum.Enum):
    """Where a subgraph is in its lifecycle (tflite::Subgraph::State)."""

    UNINVOKABLE = 0
    INVOKABLE = 1
    INVOKABLE_AND_IMMUTABLE = 2


# How a tensor's elements are held in `Tensor.data`. Sub-byte types are held packed (two int4 or four
# int2 per byte), as TFLite holds them; bfloat16 and float8 are held as their raw bits.
_STORAGE_DTYPES = {
    TensorType.FLOAT32: np.float32,
    TensorType.FLOAT16: np.float16,
    TensorType.INT32: np.int32,
    TensorType.UINT8: np.uint8,
    TensorType.INT64: np.int64,
    TensorType.STRING: np.object_,
    TensorType.BOOL: np.bool_,
    TensorType.INT16: np.int16,
    TensorType.COMPLEX64: np.complex64,
    TensorType.INT8: np.int8,
    TensorType.FLOAT64: np.float64,
    TensorType.COMPLEX128: np.complex128,
    TensorType.UINT64: np.uint64,
    TensorType.RESOURCE: np.int32,  # a resource tensor holds resource ids
    TensorType.VARIANT: np.object_,
    TensorType.UINT32: np.uint32,
    TensorType.UINT16: np.uint16,
    TensorType.INT4: np.int8,
    TensorType.BFLOAT16: np.uint16,
    TensorType.INT2: np.int8,
    TensorType.UINT4: np.uint8,
    TensorType.FLOAT8_E4M3FN: np.uint8,
    TensorType.FLOAT8_E5M2: np.uint8,
}

# Elements per stored byte for the packed sub-byte types.
_ELEMENTS_PER_BYTE = {TensorType.INT4: 2, TensorType.UINT4: 2, TensorType.INT2: 4}

# The NumPy type the Python API reports for a tensor (the `dtype` of its details dict), as LiteRT does.
_API_DTYPES = {
    **_STORAGE_DTYPES,
    TensorType.STRING: np.bytes_,
    TensorType.RESOURCE: np.object_,
    TensorType.FLOAT8_E4M3FN: np.int8,
    TensorType.FLOAT8_E5M2: np.int8,
}

# Types whose data is not a flat array of fixed-size elements: always heap (Dynamic) tensors.
NON_POD_TYPES = frozenset({TensorType.STRING, TensorType.RESOURCE, TensorType.VARIANT})


def storage_dtype(tensor_type: TensorType) -> np.dtype:
    """The NumPy dtype of `Tensor.data` for a tensor of this type."""
    return np.dtype(_STORAGE_DTYPES[tensor_type])


def api_dtype(tensor_type: TensorType) -> type:
    """The NumPy scalar type the tf.lite Python API reports for this tensor type."""
    if tensor_type is TensorType.BFLOAT16:
        try:  # LiteRT reports ml_dtypes' bfloat16 when that package is installed
            import ml_dtypes

            return ml_dtypes.bfloat16
        except ImportError:
            return np.uint16
    return _API_DTYPES[tensor_type]


def tensor_type_for_dtype(dtype: np.dtype) -> TensorType | None:
    """The tensor type a NumPy array of this dtype carries, as LiteRT's `set_tensor` judges it."""
    dtype = np.dtype(dtype)
    if dtype.kind in "OSU":
        return TensorType.STRING
    if dtype.kind == "V" or dtype.name == "bfloat16":
        return TensorType.BFLOAT16 if dtype.name == "bfloat16" else None
    return _TYPE_BY_DTYPE.get(dtype)


_TYPE_BY_DTYPE = {
    np.dtype(dtype): tensor_type
    for tensor_type, dtype in _STORAGE_DTYPES.items()
    if tensor_type
    in (
        TensorType.FLOAT32,
        TensorType.FLOAT16,
        TensorType.FLOAT64,
        TensorType.INT8,
        TensorType.UINT8,
        TensorType.INT16,
        TensorType.UINT16,
        TensorType.INT32,
        TensorType.UINT32,
        TensorType.INT64,
        TensorType.UINT64,
        TensorType.BOOL,
        TensorType.COMPLEX64,
        TensorType.COMPLEX128,
    )
}


def num_elements(shape: Sequence[int]) -> int:
    return math.prod(shape)


def bytes_required(tensor_type: TensorType, shape: Sequence[int]) -> int:
    """Bytes a dense tensor of this type and shape occupies (TFLite's BytesRequired)."""
    count = math.prod(shape)
    per_byte = _ELEMENTS_PER_BYTE.get(tensor_type)
    if per_byte:
        return -(-count // per_byte)
    if tensor_type in NON_POD_TYPES:
        return 0
    return count * np.dtype(_STORAGE_DTYPES[tensor_type]).itemsize


def stored_shape(tensor_type: TensorType, shape: Sequence[int]) -> tuple[int, ...]:
    """Shape of `Tensor.data`: the tensor's shape, or the packed byte count for sub-byte types."""
    if tensor_type in _ELEMENTS_PER_BYTE:
        return (bytes_required(tensor_type, shape),)
    return tuple(shape)


def type_name(tensor_type: TensorType | None) -> str:
    """TFLite's name for a type (TfLiteTypeGetName), NOTYPE for an untyped tensor."""
    return "NOTYPE" if tensor_type is None else tensor_type.name


# TfLiteType's numbering: the C API's codes (native delegates' structs), and the few messages where
# TFLite prints a type as a number.
TFLITE_TYPE_NUMBER = {
    TensorType.FLOAT32: 1,
    TensorType.INT32: 2,
    TensorType.UINT8: 3,
    TensorType.INT64: 4,
    TensorType.STRING: 5,
    TensorType.BOOL: 6,
    TensorType.INT16: 7,
    TensorType.COMPLEX64: 8,
    TensorType.INT8: 9,
    TensorType.FLOAT16: 10,
    TensorType.FLOAT64: 11,
    TensorType.COMPLEX128: 12,
    TensorType.UINT64: 13,
    TensorType.RESOURCE: 14,
    TensorType.VARIANT: 15,
    TensorType.UINT32: 16,
    TensorType.UINT16: 17,
    TensorType.INT4: 18,
    TensorType.BFLOAT16: 19,
    TensorType.INT2: 20,
    TensorType.UINT4: 21,
    TensorType.FLOAT8_E4M3FN: 22,
    TensorType.FLOAT8_E5M2: 23,
}

"""Builtin operator options: the schema's option tables as typed, frozen dataclasses.

Every option table of schema.fbs (both `BuiltinOptions` unions) is described below as data, in the schema's
own field order, names, types and defaults. From that one description we read options out of a model
(`read_options`), write them into a model (`write_options`), and build the dataclass a kernel receives
as `node.builtin_data`, e.g. `Conv2DOptions(padding=Padding.SAME, stride_w=1, ...)`.

The classes are built on first use (building all of them at import would cost ~100 ms); reach them as
attributes of this module (`options.Conv2DOptions`) or with `options_class("Conv2DOptions")`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import flatbuffers
import numpy as np

from ..core.types import BuiltinOperator, TensorType
from .flatbuffer_bounds import OFFSET, Table, TableFields, array_at, string_at


class Padding(enum.IntEnum):
    SAME = 0
    VALID = 1


class ActivationFunctionType(enum.IntEnum):
    NONE = 0
    RELU = 1
    RELU_N1_TO_1 = 2
    RELU6 = 3
    TANH = 4
    SIGN_BIT = 5


class LSHProjectionType(enum.IntEnum):
    UNKNOWN = 0
    SPARSE = 1
    DENSE = 2


class FullyConnectedOptionsWeightsFormat(enum.IntEnum):
    DEFAULT = 0
    SHUFFLED4x16INT8 = 1


class LSTMKernelType(enum.IntEnum):
    FULL = 0
    BASIC = 1


class CombinerType(enum.IntEnum):
    SUM = 0
    MEAN = 1
    SQRTN = 2


class MirrorPadMode(enum.IntEnum):
    REFLECT = 0
    SYMMETRIC = 1


class StablehloComparisonDirection(enum.IntEnum):
    STABLEHLO_COMPARISON_DIRECTION_EQ = 0
    STABLEHLO_COMPARISON_DIRECTION_NE = 1
    STABLEHLO_COMPARISON_DIRECTION_GE = 2
    STABLEHLO_COMPARISON_DIRECTION_GT = 3
    STABLEHLO_COMPARISON_DIRECTION_LE = 4
    STABLEHLO_COMPARISON_DIRECTION_LT = 5


class StablehloComparisonType(enum.IntEnum):
    STABLEHLO_COMPARISON_TYPE_NOTYPE = 0
    STABLEHLO_COMPARISON_TYPE_FLOAT = 1
    STABLEHLO_COMPARISON_TYPE_FLOAT_TOTAL_ORDER = 2
    STABLEHLO_COMPARISON_TYPE_SIGNED = 3
    STABLEHLO_COMPARISON_TYPE_UNSIGNED = 4


class StablehloPrecisionConfig(enum.IntEnum):
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


class RngAlgorithm(enum.IntEnum):
    DEFAULT = 0
    PHILOX = 1
    THREEFRY = 2


class ReduceWindowFunction(enum.IntEnum):
    UNSUPPORTED = 0
    ADD = 1
    MUL = 2
    MINIMUM = 3
    MAXIMUM = 4
    ALL = 5
    ANY = 6


class CustomOptionsFormat(enum.IntEnum):
    FLEXBUFFERS = 0


# Enum-typed fields are stored as the enum's underlying scalar.
_ENUMS: dict[str, tuple[type[enum.IntEnum], str]] = {
    "TensorType": (TensorType, "byte"),
    "Padding": (Padding, "byte"),
    "ActivationFunctionType": (ActivationFunctionType, "byte"),
    "LSHProjectionType": (LSHProjectionType, "byte"),
    "FullyConnectedOptionsWeightsFormat": (FullyConnectedOptionsWeightsFormat, "byte"),
    "LSTMKernelType": (LSTMKernelType, "byte"),
    "CombinerType": (CombinerType, "byte"),
    "MirrorPadMode": (MirrorPadMode, "byte"),
    "StablehloComparisonDirection": (StablehloComparisonDirection, "uint"),
    "StablehloComparisonType": (StablehloComparisonType, "uint"),
    "StablehloPrecisionConfig": (StablehloPrecisionConfig, "uint"),
    "RngAlgorithm": (RngAlgorithm, "byte"),
    "ReduceWindowFunction": (ReduceWindowFunction, "int"),
    "CustomOptionsFormat": (CustomOptionsFormat, "byte"),
}

# schema scalar type -> (struct code, NumPy dtype, Builder.Prepend<X>Slot method name)
_SCALARS: dict[str, tuple[Any, type, str]] = {
    "bool": ("?", np.bool_, "PrependBoolSlot"),
    "byte": ("b", np.int8, "PrependInt8Slot"),
    "ubyte": ("B", np.uint8, "PrependUint8Slot"),
    "short": ("h", np.int16, "PrependInt16Slot"),
    "ushort": ("H", np.uint16, "PrependUint16Slot"),
    "int": ("i", np.int32, "PrependInt32Slot"),
    "int32": ("i", np.int32, "PrependInt32Slot"),
    "uint": ("I", np.uint32, "PrependUint32Slot"),
    "long": ("q", np.int64, "PrependInt64Slot"),
    "ulong": ("Q", np.uint64, "PrependUint64Slot"),
    "float": ("f", np.float32, "PrependFloat32Slot"),
    "double": ("d", np.float64, "PrependFloat64Slot"),
}

# One entry per option table: "<union: 1 BuiltinOptions, 2 BuiltinOptions2> <union value> <Table>
# [<operators whose builtin_data it is>] <field>:<schema type>[=<default>] ...", fields in slot order,
# "-" for a deprecated slot. Indented lines continue the entry above.
_SCHEMA = """
    1 1 Conv2DOptions [CONV_2D] padding:Padding stride_w:int stride_h:int
        fused_activation_function:ActivationFunctionType dilation_w_factor:int=1
        dilation_h_factor:int=1 quantized_bias_type:TensorType
    1 2 DepthwiseConv2DOptions [DEPTHWISE_CONV_2D] padding:Padding stride_w:int stride_h:int
        depth_multiplier:int fused_activation_function:ActivationFunctionType
        dilation_w_factor:int=1 dilation_h_factor:int=1
    1 3 ConcatEmbeddingsOptions [CONCAT_EMBEDDINGS] num_channels:int num_columns_per_channel:[int]
        embedding_dim_per_channel:[int]
    1 4 LSHProjectionOptions [LSH_PROJECTION] type:LSHProjectionType
    1 5 Pool2DOptions [AVERAGE_POOL_2D L2_POOL_2D MAX_POOL_2D] padding:Padding stride_w:int
        stride_h:int filter_width:int filter_height:int
        fused_activation_function:ActivationFunctionType
    1 6 SVDFOptions [SVDF] rank:int fused_activation_function:ActivationFunctionType
        asymmetric_quantize_inputs:bool
    1 7 RNNOptions [RNN] fused_activation_function:ActivationFunctionType
        asymmetric_quantize_inputs:bool
    1 8 FullyConnectedOptions [FULLY_CONNECTED] fused_activation_function:ActivationFunctionType
        weights_format:FullyConnectedOptionsWeightsFormat=DEFAULT keep_num_dims:bool
        asymmetric_quantize_inputs:bool quantized_bias_type:TensorType
    1 9 SoftmaxOptions [SOFTMAX] beta:float
    1 10 ConcatenationOptions [CONCATENATION] axis:int
        fused_activation_function:ActivationFunctionType
    1 11 AddOptions [ADD] fused_activation_function:ActivationFunctionType pot_scale_int16:bool=true
    1 12 L2NormOptions [L2_NORMALIZATION] fused_activation_function:ActivationFunctionType
    1 13 LocalResponseNormalizationOptions [LOCAL_RESPONSE_NORMALIZATION] radius:int bias:float
        alpha:float beta:float
    1 14 LSTMOptions [LSTM] fused_activation_function:ActivationFunctionType cell_clip:float
        proj_clip:float kernel_type:LSTMKernelType=FULL asymmetric_quantize_inputs:bool
    1 15 ResizeBilinearOptions [RESIZE_BILINEAR] - - align_corners:bool half_pixel_centers:bool
    1 16 CallOptions [CALL] subgraph:uint
    1 17 ReshapeOptions [RESHAPE] new_shape:[int]
    1 18 SkipGramOptions [SKIP_GRAM] ngram_size:int max_skip_size:int include_all_ngrams:bool
    1 19 SpaceToDepthOptions [SPACE_TO_DEPTH] block_size:int
    1 20 EmbeddingLookupSparseOptions [EMBEDDING_LOOKUP_SPARSE] combiner:CombinerType
    1 21 MulOptions [MUL] fused_activation_function:ActivationFunctionType
    1 22 PadOptions [PAD]
    1 23 GatherOptions [GATHER] axis:int batch_dims:int=0
    1 24 BatchToSpaceNDOptions [BATCH_TO_SPACE_ND]
    1 25 SpaceToBatchNDOptions [SPACE_TO_BATCH_ND]
    1 26 TransposeOptions [TRANSPOSE]
    1 27 ReducerOptions [MEAN SUM REDUCE_PROD REDUCE_MAX REDUCE_MIN REDUCE_ANY REDUCE_ALL]
        keep_dims:bool
    1 28 SubOptions [SUB] fused_activation_function:ActivationFunctionType pot_scale_int16:bool=true
    1 29 DivOptions [DIV] fused_activation_function:ActivationFunctionType
    1 30 SqueezeOptions [SQUEEZE] squeeze_dims:[int]
    1 31 SequenceRNNOptions [UNIDIRECTIONAL_SEQUENCE_RNN] time_major:bool
        fused_activation_function:ActivationFunctionType asymmetric_quantize_inputs:bool
    1 32 StridedSliceOptions [STRIDED_SLICE] begin_mask:int end_mask:int ellipsis_mask:int
        new_axis_mask:int shrink_axis_mask:int offset:bool
    1 33 ExpOptions [EXP]
    1 34 TopKV2Options [TOPK_V2]
    1 35 SplitOptions [SPLIT] num_splits:int
    1 36 LogSoftmaxOptions [LOG_SOFTMAX]
    1 37 CastOptions [CAST] in_data_type:TensorType out_data_type:TensorType
    1 38 DequantizeOptions [DEQUANTIZE]
    1 39 MaximumMinimumOptions [MAXIMUM MINIMUM]
    1 40 ArgMaxOptions [ARG_MAX] output_type:TensorType
    1 41 LessOptions [LESS]
    1 42 NegOptions [NEG]
    1 43 PadV2Options [PADV2]
    1 44 GreaterOptions [GREATER]
    1 45 GreaterEqualOptions [GREATER_EQUAL]
    1 46 LessEqualOptions [LESS_EQUAL]
    1 47 SelectOptions [SELECT]
    1 48 SliceOptions [SLICE]
    1 49 TransposeConvOptions [TRANSPOSE_CONV] padding:Padding stride_w:int stride_h:int
        fused_activation_function:ActivationFunctionType=NONE quantized_bias_type:TensorType
    1 50 SparseToDenseOptions [SPARSE_TO_DENSE] validate_indices:bool
    1 51 TileOptions [TILE]
    1 52 ExpandDimsOptions [EXPAND_DIMS]
    1 53 EqualOptions [EQUAL]
    1 54 NotEqualOptions [NOT_EQUAL]
    1 55 ShapeOptions [SHAPE] out_type:TensorType
    1 56 PowOptions [POW]
    1 57 ArgMinOptions [ARG_MIN] output_type:TensorType
    1 58 FakeQuantOptions [FAKE_QUANT] min:float max:float num_bits:int narrow_range:bool
    1 59 PackOptions [PACK] values_count:int axis:int
    1 60 LogicalOrOptions [LOGICAL_OR]
    1 61 OneHotOptions [ONE_HOT] axis:int
    1 62 LogicalAndOptions [LOGICAL_AND]
    1 63 LogicalNotOptions [LOGICAL_NOT]
    1 64 UnpackOptions [UNPACK] num:int axis:int
    1 65 FloorDivOptions [FLOOR_DIV]
    1 66 SquareOptions [SQUARE]
    1 67 ZerosLikeOptions [ZEROS_LIKE]
    1 68 FillOptions [FILL]
    1 69 BidirectionalSequenceLSTMOptions [BIDIRECTIONAL_SEQUENCE_LSTM]
        fused_activation_function:ActivationFunctionType cell_clip:float proj_clip:float
        merge_outputs:bool time_major:bool=true asymmetric_quantize_inputs:bool
    1 70 BidirectionalSequenceRNNOptions [BIDIRECTIONAL_SEQUENCE_RNN] time_major:bool
        fused_activation_function:ActivationFunctionType merge_outputs:bool
        asymmetric_quantize_inputs:bool
    1 71 UnidirectionalSequenceLSTMOptions [UNIDIRECTIONAL_SEQUENCE_LSTM]
        fused_activation_function:ActivationFunctionType cell_clip:float proj_clip:float
        time_major:bool asymmetric_quantize_inputs:bool diagonal_recurrent_tensors:bool
    1 72 FloorModOptions [FLOOR_MOD]
    1 73 RangeOptions [RANGE]
    1 74 ResizeNearestNeighborOptions [RESIZE_NEAREST_NEIGHBOR] align_corners:bool
        half_pixel_centers:bool
    1 75 LeakyReluOptions [LEAKY_RELU] alpha:float
    1 76 SquaredDifferenceOptions [SQUARED_DIFFERENCE]
    1 77 MirrorPadOptions [MIRROR_PAD] mode:MirrorPadMode
    1 78 AbsOptions [ABS]
    1 79 SplitVOptions [SPLIT_V] num_splits:int
    1 80 UniqueOptions [UNIQUE] idx_out_type:TensorType=INT32
    1 81 ReverseV2Options [REVERSE_V2]
    1 82 AddNOptions [ADD_N]
    1 83 GatherNdOptions [GATHER_ND]
    1 84 CosOptions [COS]
    1 85 WhereOptions [WHERE]
    1 86 RankOptions [RANK]
    1 87 ReverseSequenceOptions [REVERSE_SEQUENCE] seq_dim:int batch_dim:int=0
    1 88 MatrixDiagOptions [MATRIX_DIAG]
    1 89 QuantizeOptions [QUANTIZE]
    1 90 MatrixSetDiagOptions [MATRIX_SET_DIAG]
    1 91 HardSwishOptions [HARD_SWISH]
    1 92 IfOptions [IF] then_subgraph_index:int else_subgraph_index:int
    1 93 WhileOptions [WHILE] cond_subgraph_index:int body_subgraph_index:int
    1 94 DepthToSpaceOptions [DEPTH_TO_SPACE] block_size:int
    1 95 NonMaxSuppressionV4Options [NON_MAX_SUPPRESSION_V4]
    1 96 NonMaxSuppressionV5Options [NON_MAX_SUPPRESSION_V5]
    1 97 ScatterNdOptions [SCATTER_ND]
    1 98 SelectV2Options [SELECT_V2]
    1 99 DensifyOptions [DENSIFY]
    1 100 SegmentSumOptions [SEGMENT_SUM]
    1 101 BatchMatMulOptions [BATCH_MATMUL] adj_x:bool adj_y:bool asymmetric_quantize_inputs:bool
    1 102 CumsumOptions [CUMSUM] exclusive:bool reverse:bool
    1 103 CallOnceOptions [CALL_ONCE] init_subgraph_index:int
    1 104 BroadcastToOptions [BROADCAST_TO]
    1 105 Rfft2dOptions [RFFT2D]
    1 106 Conv3DOptions [CONV_3D CONV_3D_TRANSPOSE] padding:Padding stride_d:int stride_w:int
        stride_h:int fused_activation_function:ActivationFunctionType dilation_d_factor:int=1
        dilation_w_factor:int=1 dilation_h_factor:int=1
    1 107 HashtableOptions [HASHTABLE] table_id:int key_dtype:TensorType value_dtype:TensorType
    1 108 HashtableFindOptions [HASHTABLE_FIND]
    1 109 HashtableImportOptions [HASHTABLE_IMPORT]
    1 110 HashtableSizeOptions [HASHTABLE_SIZE]
    1 111 VarHandleOptions [VAR_HANDLE] container:string shared_name:string
    1 112 ReadVariableOptions [READ_VARIABLE]
    1 113 AssignVariableOptions [ASSIGN_VARIABLE]
    1 114 RandomOptions [RANDOM_STANDARD_NORMAL RANDOM_UNIFORM MULTINOMIAL] seed:long seed2:long
    1 115 BucketizeOptions [BUCKETIZE] boundaries:[float]
    1 116 GeluOptions [GELU] approximate:bool
    1 117 DynamicUpdateSliceOptions [DYNAMIC_UPDATE_SLICE]
    1 118 UnsortedSegmentProdOptions [UNSORTED_SEGMENT_PROD]
    1 119 UnsortedSegmentMaxOptions [UNSORTED_SEGMENT_MAX]
    1 120 UnsortedSegmentMinOptions [UNSORTED_SEGMENT_MIN]
    1 121 UnsortedSegmentSumOptions [UNSORTED_SEGMENT_SUM]
    1 122 ATan2Options [ATAN2]
    1 123 SignOptions [SIGN]
    1 124 BitcastOptions [BITCAST]
    1 125 BitwiseXorOptions [BITWISE_XOR]
    1 126 RightShiftOptions [RIGHT_SHIFT]
    2 1 StablehloConcatenateOptions [STABLEHLO_CONCATENATE] dimension:long
    2 2 StablehloBroadcastInDimOptions [STABLEHLO_BROADCAST_IN_DIM] broadcast_dimensions:[long]
    2 3 StablehloSliceOptions [STABLEHLO_SLICE] start_indices:[long] limit_indices:[long]
        strides:[long]
    2 4 StablehloConvolutionOptions [STABLEHLO_CONVOLUTION] window_strides:[long] padding:[long]
        lhs_dilation:[long] rhs_dilation:[long] window_reversal:[bool] input_batch_dimension:long
        input_feature_dimension:long input_spatial_dimensions:[long]
        kernel_input_feature_dimension:long kernel_output_feature_dimension:long
        kernel_spatial_dimensions:[long] output_batch_dimension:long output_feature_dimension:long
        output_spatial_dimensions:[long] feature_group_count:long batch_group_count:long
        precision_config:[StablehloPrecisionConfig]
    2 5 StablehloCustomCallOptions [STABLEHLO_CUSTOM_CALL] call_target_name:string
        has_side_effect:bool backend_config:string api_version:int called_computations:[int]
        custom_attributes:[ubyte]
    2 6 StablehloReduceOptions [STABLEHLO_REDUCE] dimensions:[long] body_subgraph_index:int
    2 7 StablehloScatterOptions [STABLEHLO_SCATTER] indices_are_sorted:bool
        update_window_dims:[long] inserted_window_dims:[long] scatter_dims_to_operand_dims:[long]
        index_vector_dim:long unique_indices:bool update_computation_subgraph_index:int
    2 8 StablehloCompareOptions [STABLEHLO_COMPARE]
        comparison_direction:StablehloComparisonDirection compare_type:StablehloComparisonType
    2 9 StablehloDynamicSliceOptions [STABLEHLO_DYNAMIC_SLICE] slice_sizes:[long]
    2 10 StablehloPadOptions [STABLEHLO_PAD] edge_padding_low:[long] edge_padding_high:[long]
        interior_padding:[long]
    2 11 StablehloIotaOptions [STABLEHLO_IOTA] iota_dimension:long
    2 12 StablehloDotGeneralOptions [STABLEHLO_DOT_GENERAL] lhs_batching_dimensions:[long]
        rhs_batching_dimensions:[long] lhs_contracting_dimensions:[long]
        rhs_contracting_dimensions:[long] precision_config:[StablehloPrecisionConfig]
    2 13 StablehloReduceWindowOptions [STABLEHLO_REDUCE_WINDOW] window_dimensions:[long]
        window_strides:[long] base_dilations:[long] window_dilations:[long] padding:[long]
        body_subgraph_index:int
    2 14 StablehloSortOptions [STABLEHLO_SORT] dimension:long is_stable:bool
        comparator_subgraph_index:int
    2 15 StablehloWhileOptions [STABLEHLO_WHILE] cond_subgraph_index:int body_subgraph_index:int
    2 16 StablehloGatherOptions [STABLEHLO_GATHER] offset_dims:[long] collapsed_slice_dims:[long]
        start_index_map:[long] index_vector_dim:long slice_sizes:[long] indices_are_sorted:bool
    2 17 StablehloTransposeOptions [STABLEHLO_TRANSPOSE] permutation:[long]
    2 18 DilateOptions [DILATE]
    2 19 StablehloRngBitGeneratorOptions [STABLEHLO_RNG_BIT_GENERATOR] algorithm:RngAlgorithm
    2 20 ReduceWindowOptions [REDUCE_WINDOW] reduce_function:ReduceWindowFunction
    2 21 StableHLOCompositeOptions [STABLEHLO_COMPOSITE] name:string
        decomposition_subgraph_index:int32 composite_attributes:[ubyte]
        composite_attributes_format:CustomOptionsFormat version:int32
    2 22 StablehloShiftLeftOptions [STABLEHLO_SHIFT_LEFT]
    2 23 StablehloCaseOptions [STABLEHLO_CASE] branch_subgraph_indices:[int]
"""


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str | None  # None for a deprecated slot
    schema_type: str
    default: Any
    slot: int


@dataclasses.dataclass(frozen=True)
class _Table:
    name: str
    union: int  # 1: Operator.builtin_options, 2: Operator.builtin_options_2
    union_type: int
    operators: tuple[str, ...]
    fields: tuple[_Field, ...]


def _scalar_kind(schema_type: str) -> str:
    return _ENUMS[schema_type][1] if schema_type in _ENUMS else schema_type


def _parse_default(schema_type: str, text: str | None) -> Any:
    if schema_type.startswith("["):
        return b"" if schema_type == "[ubyte]" else ()
    if schema_type == "string":
        return ""
    if schema_type in _ENUMS:
        enum_type = _ENUMS[schema_type][0]
        return enum_type[text] if text else enum_type(0)
    if schema_type == "bool":
        return text == "true"
    if schema_type in ("float", "double"):
        return float(text or 0.0)
    return int(text or 0)


def _parse_schema(text: str) -> dict[str, _Table]:
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("        "):
            entries[-1] += " " + line.strip()
        elif line.strip():
            entries.append(line.strip())
    tables = {}
    for entry in entries:
        head, ops_and_fields = entry.split("[", 1)
        union, union_type, name = head.split()
        ops, field_text = ops_and_fields.split("]", 1)
        fields = []
        for slot, word in enumerate(field_text.split()):
            if word == "-":
                fields.append(_Field(None, "int", 0, slot))
                continue
            declaration, _, default = word.partition("=")
            field_name, schema_type = declaration.split(":")
            fields.append(_Field(field_name, schema_type, _parse_default(schema_type, default or None), slot))
        tables[name] = _Table(name, int(union), int(union_type), tuple(ops.split()), tuple(fields))
    return tables


_TABLES = _parse_schema(_SCHEMA)
_TABLE_BY_UNION = {(t.union, t.union_type): t for t in _TABLES.values()}
_TABLE_BY_OPERATOR = {BuiltinOperator[op]: t for t in _TABLES.values() for op in t.operators}
_CLASSES: dict[str, type] = {}


def _python_type(schema_type: str) -> Any:
    if schema_type in _ENUMS:
        return _ENUMS[schema_type][0]
    if schema_type == "[ubyte]":
        return bytes
    if schema_type.startswith("["):
        return tuple
    return {"bool": bool, "float": float, "double": float, "string": str}.get(schema_type, int)


def options_class(table_name: str) -> type:
    """The frozen dataclass for one option table, e.g. options_class("Conv2DOptions")."""
    cls = _CLASSES.get(table_name)
    if cls is None:
        table = _TABLES[table_name]
        fields = [
            (f.name, _python_type(f.schema_type), dataclasses.field(default=f.default))
            for f in table.fields
            if f.name is not None
        ]
        cls = dataclasses.make_dataclass(table_name, fields, frozen=True)
        cls.__module__ = __name__
        cls.__doc__ = f"Options of {', '.join(table.operators)} (schema table {table_name})."
        _CLASSES[table_name] = cls
    return cls


def __getattr__(name: str) -> type:
    if name in _TABLES:
        return options_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def options_class_for_operator(op: int) -> type | None:
    """The dataclass of an operator's builtin_data, or None for operators that take no options."""
    table = _TABLE_BY_OPERATOR.get(op)
    return None if table is None else options_class(table.name)


class _OptionsReader:
    """One option table's reader: its fields read at once (TableFields), then each value made what the
    dataclass holds (an enum member, a str, a tuple or bytes for a vector)."""

    def __init__(self, spec: _Table):
        fields = [f for f in spec.fields if f.name is not None]
        slots = enum.IntEnum(spec.name, [(f.name, f.slot) for f in fields]) if fields else ()
        kinds = [
            OFFSET
            if f.schema_type == "string" or f.schema_type.startswith("[")
            else _SCALARS[_scalar_kind(f.schema_type)][0]
            for f in fields
        ]
        self.table_fields = TableFields(
            [(slots[f.name], kind, f.default) for f, kind in zip(fields, kinds, strict=True)]
        )
        self.cls = options_class(spec.name)
        self.name = spec.name
        # the fields a read value must be turned into something else for: enum members by value (a
        # dict lookup is a tenth of calling the enum), the vectors and strings by their position
        self.enums = [
            (index, field, {member.value: member for member in _ENUMS[field.schema_type][0]})
            for index, field in enumerate(fields)
            if field.schema_type in _ENUMS
        ]
        self.vectors = [
            (index, field)
            for index, field in enumerate(fields)
            if field.schema_type == "string" or field.schema_type.startswith("[")
        ]

    def read(self, table: Table) -> Any:
        values = self.table_fields.read(table)
        for index, field, members in self.enums:
            value = values[index]
            if value not in members:
                raise ValueError(f"{self.name}.{field.name} has invalid {field.schema_type} value {value}")
            values[index] = members[value]
        for index, field in self.vectors:
            values[index] = self._vector(table, field, values[index]) if values[index] else field.default
        return self.cls(*values)

    def _vector(self, table: Table, field: _Field, target: int) -> Any:
        kind = field.schema_type
        if kind == "string":
            return string_at(table, target, field.name)
        dtype = np.dtype(_SCALARS[_scalar_kind(kind[1:-1])][1]).newbyteorder("<")
        values = array_at(table, target, dtype, field.name)
        return values.tobytes() if kind == "[ubyte]" else tuple(values.tolist())


_READERS: dict[tuple[int, int], _OptionsReader] = {}


def read_options(union: int, union_type: int, table: Table | None) -> Any:
    """Decode one option table of the given union type into its dataclass."""
    reader = _READERS.get((union, union_type))
    if reader is None:
        spec = _TABLE_BY_UNION.get((union, union_type))
        if spec is None:
            raise ValueError(
                f"unknown builtin options type {union_type} in union BuiltinOptions{'' if union == 1 else 2}"
            )
        reader = _READERS[union, union_type] = _OptionsReader(spec)
    if table is None:  # a union type without its table: the defaults, as TFLite's parsers take them
        return reader.cls()
    return reader.read(table)


def write_options(builder: flatbuffers.Builder, options: Any) -> tuple[int, int, int]:
    """Serialize an options dataclass; returns (union, union type, table offset)."""
    spec = _TABLES[type(options).__name__]
    offsets = {}
    for f in spec.fields:  # vectors and strings must be finished before the table starts
        if f.name is None:
            continue
        value = getattr(options, f.name)
        if f.schema_type == "string":
            offsets[f.name] = builder.CreateString(value)
        elif f.schema_type == "[ubyte]":
            offsets[f.name] = builder.CreateByteVector(bytes(value))
        elif f.schema_type.startswith("["):
            dtype = _SCALARS[_scalar_kind(f.schema_type[1:-1])][1]
            offsets[f.name] = builder.CreateNumpyVector(np.array(value, dtype=dtype).reshape(-1))
    builder.StartObject(len(spec.fields))
    for f in spec.fields:
        if f.name is None:
            continue
        if f.name in offsets:
            builder.PrependUOffsetTRelativeSlot(f.slot, offsets[f.name], 0)
        else:
            prepend = getattr(builder, _SCALARS[_scalar_kind(f.schema_type)][2])
            value = getattr(options, f.name)
            # Fields equal to their default are omitted, as flatc does; the schema default reads them back.
            prepend(f.slot, bool(value) if f.schema_type == "bool" else value, f.default)
    return spec.union, spec.union_type, builder.EndObject()

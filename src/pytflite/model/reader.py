"""Read a `.tflite` flatbuffer into plain, validated descriptions of the model.

Nothing downstream touches the flatbuffer: the runtime builds its subgraphs from these descriptions.
The reader owns every check its reads need: each table, vector and string goes through
model/flatbuffer_bounds.py, which checks it lies in the file before reading it, and each tensor's type,
shape, quantization and constant buffer is checked as it is read. The finished description then passes
the model rules (model/verifier.py: indices, memory, arity, subgraph cycles, execution order) before
anything uses it. A malformed file fails with a ModelError (a ValueError) naming the field, index and
limit. Constant buffers become read-only NumPy views on the model bytes — on the memory-mapped file when
loaded from a path — never copies.
"""

from __future__ import annotations

import enum
import mmap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.derived import DerivedConstants
from ..core.limits import DEFAULT_LIMITS, Limits, element_bound
from ..core.quantization import (
    AffineQuantization,
    BlockwiseQuantization,
    DimensionMetadata,
    DimensionType,
    SparsityParameters,
)
from ..core.strings import decode_string_buffer
from ..core.types import BuiltinOperator, TensorType, bytes_required, storage_dtype, stored_shape
from ..errors import ModelError
from .flatbuffer_bounds import (
    INT8,
    INT32,
    NOT_A_FLATBUFFER,
    OFFSET,
    UINT8,
    UINT32,
    UINT64,
    FlatBuffer,
    Table,
    TableFields,
    array_at,
    int32s_at,
    string_at,
    vector_at,
)
from .options import read_options
from .verifier import verify_model

MODEL_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3

# Field slots of the schema.fbs tables read here, in schema order, named as in the schema.
_Model = enum.IntEnum(
    "Model",
    "version operator_codes subgraphs description buffers metadata_buffer metadata signature_defs",
    start=0,
)
_Buffer = enum.IntEnum("Buffer", "data offset size", start=0)
_Metadata = enum.IntEnum("Metadata", "name buffer", start=0)
_OperatorCode = enum.IntEnum(
    "OperatorCode", "deprecated_builtin_code custom_code version builtin_code", start=0
)
_SubGraph = enum.IntEnum("SubGraph", "tensors inputs outputs operators name", start=0)
_Tensor = enum.IntEnum(
    "Tensor", "shape type buffer name quantization is_variable sparsity shape_signature", start=0
)
_Quantization = enum.IntEnum(
    "QuantizationParameters", "min max scale zero_point details_type details quantized_dimension", start=0
)
_Blockwise = enum.IntEnum("BlockwiseQuantization", "scales zero_points block_size", start=0)
_Sparsity = enum.IntEnum("SparsityParameters", "traversal_order block_map dim_metadata", start=0)
_DimensionMetadata = enum.IntEnum(
    "DimensionMetadata",
    "format dense_size array_segments_type array_segments array_indices_type array_indices",
    start=0,
)
_IndexVector = enum.IntEnum("Int32Vector", "values", start=0)  # also Uint16Vector and Uint8Vector
_Operator = enum.IntEnum(
    "Operator",
    "opcode_index inputs outputs builtin_options_type builtin_options custom_options custom_options_format "
    "mutating_variable_inputs intermediates large_custom_options_offset large_custom_options_size "
    "builtin_options_2_type builtin_options_2",
    start=0,
)
_SignatureDef = enum.IntEnum(
    "SignatureDef", "inputs outputs signature_key deprecated_tag subgraph_index", start=0
)
_TensorMap = enum.IntEnum("TensorMap", "name tensor_index", start=0)

# The fields read from every tensor, operator and quantization table, all at once (TableFields).
_TENSOR_FIELDS = TableFields(
    [
        (_Tensor.name, OFFSET, None),
        (_Tensor.type, "b", 0),
        (_Tensor.shape, OFFSET, None),
        (_Tensor.shape_signature, OFFSET, None),
        (_Tensor.quantization, OFFSET, None),
        (_Tensor.sparsity, OFFSET, None),
        (_Tensor.buffer, "I", 0),
        (_Tensor.is_variable, "?", False),
    ]
)
_OPERATOR_FIELDS = TableFields(
    [
        (_Operator.opcode_index, "I", 0),
        (_Operator.inputs, OFFSET, None),
        (_Operator.outputs, OFFSET, None),
        (_Operator.intermediates, OFFSET, None),
        (_Operator.builtin_options_type, "B", 0),
        (_Operator.builtin_options, OFFSET, None),
        (_Operator.builtin_options_2_type, "B", 0),
        (_Operator.builtin_options_2, OFFSET, None),
        (_Operator.custom_options, OFFSET, None),
        (_Operator.large_custom_options_offset, "Q", 0),
        (_Operator.large_custom_options_size, "Q", 0),
    ]
)
_QUANTIZATION_FIELDS = TableFields(
    [
        (_Quantization.scale, OFFSET, None),
        (_Quantization.zero_point, OFFSET, None),
        (_Quantization.details_type, "B", 0),
        (_Quantization.details, OFFSET, None),
        (_Quantization.quantized_dimension, "i", 0),
    ]
)

# QuantizationDetails union members (schema.fbs)
_BLOCKWISE_QUANTIZATION, _MULTI_AXIS_QUANTIZATION = 2, 3
# SparseIndexVector union members: Int32Vector, Uint16Vector, Uint8Vector
_SPARSE_INDEX_DTYPES = {1: np.dtype("<i4"), 2: np.dtype("<u2"), 3: np.dtype("u1")}
_FLOAT32, _INT64 = np.dtype("<f4"), np.dtype("<i8")
_TENSOR_TYPES = {member.value: member for member in TensorType}  # a lookup, not an enum call per tensor


@dataclass(frozen=True)
class OperatorCodeDescription:
    builtin_code: int  # max(builtin_code, deprecated_builtin_code), possibly outside BuiltinOperator
    custom_code: str | None
    version: int
    name: str  # for messages: the builtin's name, or the custom op's


@dataclass(frozen=True, eq=False)
class TensorDescription:
    name: str
    type: TensorType
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    data: np.ndarray | None  # constant contents (read-only), None for tensors computed at run time
    buffer_index: int
    quantization: AffineQuantization | BlockwiseQuantization | None
    sparsity: SparsityParameters | None
    is_variable: bool


@dataclass(frozen=True, eq=False)
class OperatorDescription:
    opcode_index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    builtin_options: Any  # an options dataclass (model/options.py) or None
    custom_options: bytes | None


@dataclass(frozen=True, eq=False)
class SubgraphDescription:
    name: str
    tensors: tuple[TensorDescription, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[OperatorDescription, ...]


@dataclass(frozen=True)
class SignatureDescription:
    key: str
    subgraph_index: int
    inputs: dict[str, int] = field(default_factory=dict)  # signature name -> tensor index, file order
    outputs: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class ModelDescription:
    version: int
    description: str
    operator_codes: tuple[OperatorCodeDescription, ...]
    subgraphs: tuple[SubgraphDescription, ...]
    signatures: tuple[SignatureDescription, ...]
    metadata: dict[str, bytes]
    size: int  # bytes in the model file
    buffer: bytes | mmap.mmap = field(repr=False)  # what the constants view (kept alive with them)
    # what kernels derive from the constants, computed once for every interpreter of this description
    derived_constants: DerivedConstants = field(default_factory=DerivedConstants, repr=False)


def read_model(buffer: bytes | mmap.mmap, limits: Limits = DEFAULT_LIMITS) -> ModelDescription:
    """Parse and verify a whole model. `buffer` must stay unchanged while its views are in use."""
    if len(buffer) < 8 or bytes(buffer[4:8]) != MODEL_IDENTIFIER:
        raise ModelError(f"{NOT_A_FLATBUFFER} (no {MODEL_IDENTIFIER.decode()} file identifier)")
    model = _ModelReader(buffer, limits).read()
    verify_model(model, limits)
    return model


def _check_shape(label: str, shape: Sequence[int], signature: Sequence[int] | None, limits: Limits) -> None:
    """Dimensions >= 0 (-1 only in shape_signature, of the same rank) and at most `max_elements`."""
    if shape and min(shape) < 0:
        raise ModelError(
            f"{label} has a negative dimension in shape {list(shape)} (-1 is allowed only in shape_signature)."
        )
    if signature is not None and (len(signature) != len(shape) or (signature and min(signature) < -1)):
        raise ModelError(f"{label} has shape_signature {list(signature)} not matching shape {list(shape)}.")
    elements = element_bound(shape)
    if elements > limits.max_elements:
        raise ModelError(
            f"{label} shape {list(shape)} has {elements} elements (zero dimensions left out), over the limit "
            f"of {limits.max_elements}."
        )


def _check_constant_size(label: str, tensor_type: TensorType, shape: Sequence[int], available: int) -> int:
    """A constant's buffer holds at least the tensor's bytes; returns the bytes needed."""
    if tensor_type in (TensorType.RESOURCE, TensorType.VARIANT):  # run-time handles, never file data
        raise ModelError(
            f"{label} is invalidly specified in schema: a {tensor_type.name} tensor has a buffer."
        )
    needed = bytes_required(tensor_type, shape)
    if available < needed:
        raise ModelError(
            f"{label} is invalidly specified in schema: its buffer holds {available} bytes but "
            f"{tensor_type.name}{list(shape)} needs {needed}."
        )
    return needed


def _as_int32_values(values: np.ndarray) -> np.ndarray:
    """The file's int64 zero points as LiteRT holds them: in C ints (TfLiteAffineQuantization), a value
    outside int32 wrapped to its low 32 bits (the array itself where none is)."""
    if values.size == 0 or (values.min() >= -(1 << 31) and values.max() < 1 << 31):
        return values
    wrapped = values.astype(np.int32).astype(np.int64)  # two's complement: the low 32 bits
    wrapped.flags.writeable = False
    return wrapped


def _op_name(builtin_code: int, custom_code: str | None) -> str:
    if builtin_code == BuiltinOperator.CUSTOM:
        return custom_code or "CUSTOM"
    try:
        return BuiltinOperator(builtin_code).name
    except ValueError:
        return f"builtin {builtin_code}"


class _ModelReader:
    """Walks the flatbuffer once into the description; every read goes through a checked Table."""

    def __init__(self, buffer: bytes | mmap.mmap, limits: Limits):
        self.file = FlatBuffer(buffer)
        self.limits = limits
        self.model = self.file.root("model")
        self.buffer_spans: list[tuple[int, int]] = []  # (offset in file, size) per model buffer

    def read(self) -> ModelDescription:
        model = self.model
        version = model.scalar(_Model.version, UINT32)
        if version != SCHEMA_VERSION:
            raise ModelError(
                f"Model provided is schema version {version} not equal to supported version {SCHEMA_VERSION}."
            )
        buffers = model.tables(_Model.buffers, "buffer {}")
        if buffers is None:
            raise ModelError("No buffers in the model.")
        self.buffer_spans = [self._buffer_span(buffer, i) for i, buffer in enumerate(buffers)]
        operator_codes = tuple(
            self._operator_code(code)
            for code in model.tables(_Model.operator_codes, "operator code {}") or ()
        )
        subgraph_tables = model.tables(_Model.subgraphs, "subgraph {}")
        if not subgraph_tables:
            raise ModelError("No subgraph in the model.")
        subgraphs = tuple(self._subgraph(table, i, operator_codes) for i, table in enumerate(subgraph_tables))
        signatures = tuple(
            self._signature(signature, i)
            for i, signature in enumerate(model.tables(_Model.signature_defs, "signature def {}") or ())
        )
        metadata = {}
        for i, entry in enumerate(model.tables(_Model.metadata, "metadata {}") or ()):
            raw = self._buffer_bytes(entry.scalar(_Metadata.buffer, UINT32), f"metadata {i}")
            metadata[entry.string(_Metadata.name) or ""] = bytes(raw)
        return ModelDescription(
            version=version,
            description=model.string(_Model.description) or "",
            operator_codes=operator_codes,
            subgraphs=subgraphs,
            signatures=signatures,
            metadata=metadata,
            size=self.file.size,
            buffer=self.file.data,
        )

    # --- buffers -------------------------------------------------------------------------------

    def _buffer_span(self, buffer: Table, index: int) -> tuple[int, int]:
        data = buffer.span(_Buffer.data)
        if data is not None:
            return data
        offset, size = buffer.scalar(_Buffer.offset, UINT64), buffer.scalar(_Buffer.size, UINT64)
        if offset > 1:  # data stored after the flatbuffer (models over 2 GB); 0 and 1 mean "none"
            if offset + size > self.file.size:
                raise ModelError(
                    f"Constant buffer {index} specified an out of range offset: {offset} + size {size} is past "
                    f"the end of the {self.file.size}-byte file."
                )
            return offset, size
        return 0, 0

    def _buffer_bytes(self, index: int, user: str) -> np.ndarray:
        if not 0 <= index < len(self.buffer_spans):
            raise ModelError(
                f"{user} specifies out of range buffer {index} (only {len(self.buffer_spans)} buffers)."
            )
        start, length = self.buffer_spans[index]
        return np.frombuffer(self.file.data, dtype=np.uint8, count=length, offset=start)

    # --- operator codes ------------------------------------------------------------------------

    def _operator_code(self, code: Table) -> OperatorCodeDescription:
        # LiteRT's GetBuiltinCode: codes below 127 are in both fields, newer ones in builtin_code only
        builtin_code = max(
            code.scalar(_OperatorCode.builtin_code, INT32),
            code.scalar(_OperatorCode.deprecated_builtin_code, INT8),
        )
        custom = code.string(_OperatorCode.custom_code)
        version = code.scalar(_OperatorCode.version, INT32, default=1)
        return OperatorCodeDescription(builtin_code, custom, version, _op_name(builtin_code, custom))

    # --- subgraphs -----------------------------------------------------------------------------

    def _subgraph(
        self, subgraph: Table, index: int, operator_codes: tuple[OperatorCodeDescription, ...]
    ) -> SubgraphDescription:
        tensor_tables = subgraph.tables(_SubGraph.tensors, f"tensor {{}} of subgraph {index}")
        if tensor_tables is None:
            raise ModelError(f"Did not get tensors in subgraph {index}.")
        count = len(tensor_tables)
        tensors = tuple(self._tensor(tensor, index, t, count) for t, tensor in enumerate(tensor_tables))
        inputs = subgraph.int32s(_SubGraph.inputs) or ()
        outputs = subgraph.int32s(_SubGraph.outputs) or ()
        operators = []
        for o, op in enumerate(subgraph.tables(_SubGraph.operators, f"subgraph {index} operator {{}}") or ()):
            (
                opcode_index,
                op_inputs,
                op_outputs,
                op_intermediates,
                options_type,
                options,
                options_2_type,
                options_2,
                custom_options,
                large_custom_offset,
                large_custom_size,
            ) = _OPERATOR_FIELDS.read(op)
            name = operator_codes[opcode_index].name if opcode_index < len(operator_codes) else "?"
            where = f"operator {o} ({name})"
            if options_type:
                builtin_options = self._builtin_options(1, options_type, options, where)
            elif options_2_type:
                builtin_options = self._builtin_options(2, options_2_type, options_2, where)
            else:
                builtin_options = None
            operators.append(
                OperatorDescription(
                    opcode_index=opcode_index,
                    inputs=int32s_at(op, op_inputs, "inputs") or (),
                    outputs=int32s_at(op, op_outputs, "outputs") or (),
                    intermediates=int32s_at(op, op_intermediates, "intermediates") or (),
                    builtin_options=builtin_options,
                    custom_options=self._custom_options(
                        op, custom_options, large_custom_offset, large_custom_size, where
                    ),
                )
            )
        name = subgraph.string(_SubGraph.name) or ""
        return SubgraphDescription(name, tensors, inputs, outputs, tuple(operators))

    def _builtin_options(self, union: int, union_type: int, target: int, where: str) -> Any:
        table = Table(self.file, target, f"builtin options of {where}") if target else None
        try:
            return read_options(union, union_type, table)
        except ModelError:
            raise
        except ValueError as e:  # an unknown union type or enum value
            raise ModelError(f"Invalid builtin options of {where}: {e}") from None

    def _custom_options(self, op: Table, target: int, large_offset: int, large_size: int, where: str):
        """The custom options' bytes: a vector in the flatbuffer, or (models over 2 GB) bytes after it."""
        if target:
            start, length = vector_at(op, target, 1, "custom_options")
        elif large_offset <= 1:
            return None
        elif large_offset + large_size > self.file.size:
            raise ModelError(
                f"Custom options of {where} are out of bounds of the file: {large_offset} + size {large_size} "
                f"is past the end of the {self.file.size}-byte file."
            )
        else:
            start, length = large_offset, large_size
        return bytes(self.file.data[start : start + length])

    # --- tensors -------------------------------------------------------------------------------

    def _tensor(self, tensor: Table, subgraph_index: int, index: int, num_tensors: int) -> TensorDescription:
        file = self.file
        name, type_code, shape, signature, quantization, sparsity, buffer_index, is_variable = (
            _TENSOR_FIELDS.read(tensor)
        )
        label = f"Tensor {index} of subgraph {subgraph_index}"
        name = string_at(tensor, name, "name") or ""
        tensor_type = _TENSOR_TYPES.get(type_code)
        if tensor_type is None:
            raise ModelError(f"{label} ({name!r}) has unknown type {type_code}.")
        shape = int32s_at(tensor, shape, "shape") or ()
        signature = int32s_at(tensor, signature, "shape_signature")
        _check_shape(f"{label} ({name!r})", shape, signature, self.limits)
        if quantization:
            quantization = self._quantization(
                Table(file, quantization, f"{label} quantization"), shape, label, num_tensors
            )
        else:
            quantization = None
        sparsity = self._sparsity(Table(file, sparsity, f"{label} sparsity"), label) if sparsity else None
        data = None
        raw = self._buffer_bytes(buffer_index, label) if buffer_index != 0 else None
        if raw is not None and raw.size > 0:
            if is_variable:
                raise ModelError(f"{label} is a variable tensor with buffer. It's not supported now.")
            data = self._constant_data(raw, tensor_type, shape, sparsity is not None, label)
        return TensorDescription(
            name=name,
            type=tensor_type,
            shape=shape,
            shape_signature=signature,
            data=data,
            buffer_index=buffer_index,
            quantization=quantization,
            sparsity=sparsity,
            is_variable=is_variable,
        )

    def _constant_data(
        self, raw: np.ndarray, tensor_type: TensorType, shape: tuple[int, ...], sparse: bool, label: str
    ) -> np.ndarray:
        if tensor_type == TensorType.STRING:
            return decode_string_buffer(raw.tobytes(), shape, label)
        dtype = storage_dtype(tensor_type)
        if sparse:  # the stored values of a sparse constant; DENSIFY expands them
            return raw[: raw.size - raw.size % dtype.itemsize].view(dtype)
        needed = _check_constant_size(label, tensor_type, shape, raw.size)
        return raw[:needed].view(dtype).reshape(stored_shape(tensor_type, shape))

    def _quantization(self, params: Table, shape: tuple[int, ...], label: str, num_tensors: int):
        scales, zero_points, details_type, details, axis = _QUANTIZATION_FIELDS.read(params)
        if details_type == _BLOCKWISE_QUANTIZATION:
            if not details:
                raise ModelError(f"{label} has blockwise quantization without its details table.")
            details = Table(self.file, details, f"{label} blockwise quantization")
            scales, zero_points, block_size = (details.scalar(slot, INT32) for slot in _Blockwise)
            for tensor_index, what in ((scales, "scales"), (zero_points, "zero_points")):
                if not (0 <= tensor_index < num_tensors or (what == "zero_points" and tensor_index == -1)):
                    raise ModelError(
                        f"{label} has blockwise quantization {what} tensor {tensor_index} out of range."
                    )
            return BlockwiseQuantization(scales, zero_points, block_size, axis)
        if details_type == _MULTI_AXIS_QUANTIZATION:
            raise ModelError(f"{label} uses MultiAxisQuantization, which pytflite does not support yet.")
        if not scales:
            return None
        scales = array_at(params, scales, _FLOAT32, "scale")
        if scales.size == 0:
            return None
        if not zero_points:
            raise ModelError(f"{label}: Quantization parameters has non-null scale but null zero_point.")
        zero_points = _as_int32_values(array_at(params, zero_points, _INT64, "zero_point"))
        if zero_points.size != scales.size:
            raise ModelError(
                f"{label}: QuantizationParam has {zero_points.size} zero_point values and {scales.size} scale "
                "values. Must have same number."
            )
        if axis < 0 or (shape and axis >= len(shape)):
            raise ModelError(f"{label}: quantized_dimension must be in range [0, {len(shape)}). Was {axis}.")
        if scales.size != 1 and shape and scales.size != shape[axis]:
            raise ModelError(
                f"{label}: num_scales must be 1 for per-layer quantization, or {shape[axis]} for per-axis "
                f"quantization, but got {scales.size}."
            )
        return AffineQuantization(scales, zero_points, axis)

    def _sparsity(self, sparsity: Table, label: str) -> SparsityParameters:
        traversal_order = sparsity.int32s(_Sparsity.traversal_order)
        dim_metadata = sparsity.tables(_Sparsity.dim_metadata, f"{label} dim_metadata {{}}")
        if traversal_order is None or dim_metadata is None:
            raise ModelError(f"{label} has invalid sparsity parameters.")
        dims = []
        for i, meta in enumerate(dim_metadata):
            format_code = meta.scalar(_DimensionMetadata.format, INT8)
            try:
                dim_format = DimensionType(format_code)
            except ValueError:
                raise ModelError(f"{label}: the {i}th dimension has unknown type: {format_code}.") from None
            if dim_format == DimensionType.DENSE:
                dims.append(
                    DimensionMetadata(
                        dim_format, dense_size=meta.scalar(_DimensionMetadata.dense_size, INT32)
                    )
                )
                continue
            segments = self._sparse_index_vector(
                meta, _DimensionMetadata.array_segments_type, _DimensionMetadata.array_segments, label
            )
            indices = self._sparse_index_vector(
                meta, _DimensionMetadata.array_indices_type, _DimensionMetadata.array_indices, label
            )
            if segments is None or indices is None:
                raise ModelError(f"{label}: the {i}th sparse dimension has invalid parameters.")
            dims.append(DimensionMetadata(dim_format, array_segments=segments, array_indices=indices))
        block_map = sparsity.int32s(_Sparsity.block_map)
        return SparsityParameters(traversal_order, block_map, tuple(dims))

    def _sparse_index_vector(
        self, meta: Table, type_slot: enum.IntEnum, table_slot: enum.IntEnum, label: str
    ) -> np.ndarray | None:
        """A SparseIndexVector union (int32, uint16 or uint8 values) as an int32 array."""
        dtype = _SPARSE_INDEX_DTYPES.get(meta.scalar(type_slot, UINT8))
        table = None if dtype is None else meta.table(table_slot, f"{label} sparse index vector")
        if table is None:
            return None
        values = table.array(_IndexVector.values, dtype)
        return np.zeros(0, np.int32) if values is None else values.astype(np.int32)

    # --- signatures ----------------------------------------------------------------------------

    def _signature(self, signature: Table, index: int) -> SignatureDescription:
        key = signature.string(_SignatureDef.signature_key)
        if key is None:
            raise ModelError("Missing exported method name for SignatureDef")

        def tensor_map(slot: _SignatureDef) -> dict[str, int]:
            entries = signature.tables(slot, f"signature def {index} tensor map {{}}") or ()
            return {
                entry.string(_TensorMap.name) or "": entry.scalar(_TensorMap.tensor_index, UINT32)
                for entry in entries
            }

        return SignatureDescription(
            key,
            signature.scalar(_SignatureDef.subgraph_index, UINT32),
            tensor_map(_SignatureDef.inputs),
            tensor_map(_SignatureDef.outputs),
        )

"""Read a `.tflite` flatbuffer into plain, validated descriptions of the model.

Nothing downstream touches the flatbuffer: the runtime builds its subgraphs from these descriptions.
Every table is bounds-checked as it is read, and the finished description passes the structural
verifier (model/verifier.py: indices, shapes, memory, arity, subgraph cycles, execution order) before
anything uses it, so a malformed file fails with a ModelError (a ValueError) naming the field, index and
limit, instead of an IndexError somewhere deep inside. Constant buffers become read-only NumPy views on the model bytes —
on the memory-mapped file when loaded from a path — never copies.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
from tflite.Model import Model

from ..core.quantization import (
    AffineQuantization,
    BlockwiseQuantization,
    DimensionMetadata,
    DimensionType,
    SparsityParameters,
)
from ..core.strings import decode_string_buffer
from ..core.types import TensorType, storage_dtype, stored_shape
from ..errors import ModelError
from .options import read_options
from .verifier import (
    DEFAULT_LIMITS,
    NOT_A_FLATBUFFER,
    Limits,
    check_constant_size,
    check_shape,
    check_table,
    check_vector,
    op_label,
    verify_model,
)

MODEL_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
_NOT_A_FLATBUFFER = NOT_A_FLATBUFFER

# QuantizationDetails union members (schema.fbs)
_CUSTOM_QUANTIZATION, _BLOCKWISE_QUANTIZATION, _MULTI_AXIS_QUANTIZATION = 1, 2, 3


@dataclass(frozen=True)
class OperatorCodeDescription:
    builtin_code: int  # max(builtin_code, deprecated_builtin_code), possibly outside BuiltinOperator
    custom_code: str | None
    version: int


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


def open_model_file(path: str | os.PathLike) -> mmap.mmap:
    """Map a model file read-only; the errors read like LiteRT's."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise ModelError("mmap of size 0 requested.The model allocation is null/empty")
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise ModelError(
            f"Could not open '{path}'.The model allocation is null/empty ({e.strerror})"
        ) from None


def read_model(buffer: bytes | mmap.mmap, limits: Limits = DEFAULT_LIMITS) -> ModelDescription:
    """Parse and verify a whole model. `buffer` must stay unchanged while its views are in use."""
    if len(buffer) < 8 or bytes(buffer[4:8]) != MODEL_IDENTIFIER:
        raise ModelError(f"{_NOT_A_FLATBUFFER} (no {MODEL_IDENTIFIER.decode()} file identifier)")
    reader = _ModelReader(buffer, limits)
    try:
        model = reader.read()
    except ModelError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, UnicodeDecodeError) as e:
        raise ModelError(f"{_NOT_A_FLATBUFFER}: malformed {reader.where} ({e})") from None
    verify_model(model, limits)
    return model


def _int_tuple(table: Any, field_name: str) -> tuple[int, ...]:
    """An int vector field of a generated flatbuffer table as a tuple (empty when absent)."""
    if getattr(table, field_name + "IsNone")():
        return ()
    return tuple(getattr(table, field_name + "AsNumpy")().tolist())


def _string(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", errors="replace")


class _ModelReader:
    """Walks the flatbuffer once; `where` names the part being read, for error messages."""

    def __init__(self, buffer: bytes | mmap.mmap, limits: Limits):
        self.buffer = buffer
        self.size = len(buffer)
        self.limits = limits
        self.vtables: dict[int, int] = {}  # vtable offset -> table size, for vtables already checked
        self.where = "model header"
        self.model = self._table(Model.GetRootAs(buffer, 0), "model")
        self.buffer_spans: list[tuple[int, int]] = []  # (offset in file, size) per model buffer

    def _table(self, table: Any, what: str) -> Any:
        """A generated table object (or None), once its vtable and fields are known to lie in the file."""
        if table is not None:
            check_table(self.buffer, table._tab.Pos, self.size, what, self.vtables)
        return table

    def _count(self, length: int, what: str) -> int:
        # every vector element occupies at least one byte of the file, so a longer vector is corrupt
        if not 0 <= length <= self.size:
            raise ModelError(f"{_NOT_A_FLATBUFFER}: {what} has impossible length {length}")
        return length

    def read(self) -> ModelDescription:
        model = self.model
        version = model.Version()
        if version != SCHEMA_VERSION:
            raise ModelError(
                f"Model provided is schema version {version} not equal to supported version {SCHEMA_VERSION}."
            )
        self.where = "buffers"
        if model.BuffersIsNone():
            raise ModelError("No buffers in the model.")
        self.buffer_spans = [
            self._buffer_span(i) for i in range(self._count(model.BuffersLength(), "buffers"))
        ]
        self.where = "operator codes"
        operator_codes = tuple(
            self._operator_code(i) for i in range(self._count(model.OperatorCodesLength(), "operator_codes"))
        )
        num_subgraphs = self._count(model.SubgraphsLength(), "subgraphs")
        if num_subgraphs == 0:
            raise ModelError("No subgraph in the model.")
        subgraphs = tuple(self._subgraph(i, operator_codes) for i in range(num_subgraphs))
        self.where = "signature defs"
        signatures = tuple(
            self._signature(i) for i in range(self._count(model.SignatureDefsLength(), "signature_defs"))
        )
        self.where = "metadata"
        metadata = {}
        for i in range(self._count(model.MetadataLength(), "metadata")):
            entry = self._table(model.Metadata(i), f"metadata {i}")
            metadata[_string(entry.Name())] = bytes(self._buffer_bytes(entry.Buffer(), f"metadata {i}"))
        return ModelDescription(
            version=version,
            description=_string(model.Description()),
            operator_codes=operator_codes,
            subgraphs=subgraphs,
            signatures=signatures,
            metadata=metadata,
            size=self.size,
        )

    # --- buffers -------------------------------------------------------------------------------

    def _buffer_span(self, index: int) -> tuple[int, int]:
        self.where = f"buffer {index}"
        buffer = self._table(self.model.Buffers(index), f"buffer {index}")
        if not buffer.DataIsNone():
            start = buffer._tab.Vector(buffer._tab.Offset(4))
            return start, check_vector(start, buffer.DataLength(), 1, self.size, f"buffer {index} data")
        offset, size = buffer.Offset(), buffer.Size()
        if offset > 1:  # data stored after the flatbuffer (models over 2 GB); 0 and 1 mean "none"
            if offset + size > self.size:
                raise ModelError(
                    f"Constant buffer {index} specified an out of range offset: {offset} + size {size} is past "
                    f"the end of the {self.size}-byte file."
                )
            return offset, size
        return 0, 0

    def _buffer_bytes(self, index: int, user: str) -> np.ndarray:
        if not 0 <= index < len(self.buffer_spans):
            raise ModelError(
                f"{user} specifies out of range buffer {index} (only {len(self.buffer_spans)} buffers)."
            )
        start, length = self.buffer_spans[index]
        if start + length > self.size:
            raise ModelError(f"{_NOT_A_FLATBUFFER}: buffer {index} extends past the end of the file")
        return np.frombuffer(self.buffer, dtype=np.uint8, count=length, offset=start)

    # --- operator codes ------------------------------------------------------------------------

    def _operator_code(self, index: int) -> OperatorCodeDescription:
        self.where = f"operator code {index}"
        code = self._table(self.model.OperatorCodes(index), f"operator code {index}")
        builtin_code = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        custom = code.CustomCode()
        return OperatorCodeDescription(
            builtin_code, None if custom is None else _string(custom), code.Version()
        )

    # --- subgraphs -----------------------------------------------------------------------------

    def _subgraph(
        self, index: int, operator_codes: tuple[OperatorCodeDescription, ...]
    ) -> SubgraphDescription:
        self.where = f"subgraph {index}"
        subgraph = self._table(self.model.Subgraphs(index), f"subgraph {index}")
        if subgraph.TensorsIsNone():
            raise ModelError(f"Did not get tensors in subgraph {index}.")
        num_tensors = self._count(subgraph.TensorsLength(), f"subgraph {index} tensors")
        tensors = tuple(
            self._tensor(
                self._table(subgraph.Tensors(t), f"tensor {t} of subgraph {index}"), index, t, num_tensors
            )
            for t in range(num_tensors)
        )
        self.where = f"subgraph {index} inputs/outputs"
        inputs = _int_tuple(subgraph, "Inputs")
        outputs = _int_tuple(subgraph, "Outputs")
        operators = []
        for o in range(self._count(subgraph.OperatorsLength(), f"subgraph {index} operators")):
            self.where = f"subgraph {index} operator {o}"
            op = self._table(subgraph.Operators(o), self.where)
            opcode_index = op.OpcodeIndex()
            label = op_label(operator_codes[opcode_index]) if 0 <= opcode_index < len(operator_codes) else "?"
            where = f"operator {o} ({label})"
            operators.append(
                OperatorDescription(
                    opcode_index=opcode_index,
                    inputs=_int_tuple(op, "Inputs"),
                    outputs=_int_tuple(op, "Outputs"),
                    intermediates=_int_tuple(op, "Intermediates"),
                    builtin_options=self._builtin_options(op, where),
                    custom_options=self._custom_options(op, where),
                )
            )
        return SubgraphDescription(_string(subgraph.Name()), tensors, inputs, outputs, tuple(operators))

    def _builtin_options(self, op: Any, where: str) -> Any:
        try:
            if op.BuiltinOptionsType():
                return read_options(1, op.BuiltinOptionsType(), self._union(op.BuiltinOptions(), where))
            if op.BuiltinOptions2Type():
                return read_options(2, op.BuiltinOptions2Type(), self._union(op.BuiltinOptions2(), where))
        except ValueError as e:
            raise ModelError(f"Invalid builtin options of {where}: {e}") from None
        return None

    def _union(self, table: Any, where: str) -> Any:
        if table is not None:
            check_table(self.buffer, table.Pos, self.size, f"builtin options of {where}", self.vtables)
        return table

    def _custom_options(self, op: Any, where: str) -> bytes | None:
        if not op.CustomOptionsIsNone():
            return op.CustomOptionsAsNumpy().tobytes()
        offset, size = op.LargeCustomOptionsOffset(), op.LargeCustomOptionsSize()
        if offset > 1:
            if offset + size > self.size:
                raise ModelError(
                    f"Custom options of {where} are out of bounds of the file: {offset} + size {size} is past "
                    f"the end of the {self.size}-byte file."
                )
            return bytes(self.buffer[offset : offset + size])
        return None

    # --- tensors -------------------------------------------------------------------------------

    def _tensor(self, tensor: Any, subgraph_index: int, index: int, num_tensors: int) -> TensorDescription:
        label = f"Tensor {index} of subgraph {subgraph_index}"
        self.where = label.lower()
        name = _string(tensor.Name())
        try:
            tensor_type = TensorType(tensor.Type())
        except ValueError:
            raise ModelError(f"{label} ({name!r}) has unknown type {tensor.Type()}.") from None
        shape = _int_tuple(tensor, "Shape")
        signature = None if tensor.ShapeSignatureIsNone() else _int_tuple(tensor, "ShapeSignature")
        check_shape(f"{label} ({name!r})", shape, signature, self.limits)
        quantization = self._quantization(
            self._table(tensor.Quantization(), f"{label} quantization"), shape, label, num_tensors
        )
        sparsity_table = self._table(tensor.Sparsity(), f"{label} sparsity")
        sparsity = self._sparsity(sparsity_table, label) if sparsity_table is not None else None
        data = None
        raw = self._buffer_bytes(tensor.Buffer(), label) if tensor.Buffer() != 0 else None
        if raw is not None and raw.size > 0:
            if tensor.IsVariable():
                raise ModelError(f"{label} is a variable tensor with buffer. It's not supported now.")
            data = self._constant_data(raw, tensor_type, shape, sparsity is not None, label)
        return TensorDescription(
            name=name,
            type=tensor_type,
            shape=shape,
            shape_signature=signature,
            data=data,
            buffer_index=tensor.Buffer(),
            quantization=quantization,
            sparsity=sparsity,
            is_variable=bool(tensor.IsVariable()),
        )

    def _constant_data(
        self, raw: np.ndarray, tensor_type: TensorType, shape: tuple[int, ...], sparse: bool, label: str
    ) -> np.ndarray:
        if tensor_type == TensorType.STRING:
            return decode_string_buffer(raw.tobytes(), shape, label)
        dtype = storage_dtype(tensor_type)
        if sparse:  # the stored values of a sparse constant; DENSIFY expands them
            return raw[: raw.size - raw.size % dtype.itemsize].view(dtype)
        needed = check_constant_size(label, tensor_type, shape, raw.size)
        return raw[:needed].view(dtype).reshape(stored_shape(tensor_type, shape))

    def _quantization(self, params: Any, shape: tuple[int, ...], label: str, num_tensors: int):
        if params is None:
            return None
        details_type = params.DetailsType()
        if details_type == _BLOCKWISE_QUANTIZATION:
            details = params.Details()
            if details is None:
                raise ModelError(f"{label} has blockwise quantization without its details table.")
            check_table(self.buffer, details.Pos, self.size, f"{label} blockwise quantization")
            scales, zero_points, block_size = _int32_fields(details, count=3)
            for tensor_index, what in ((scales, "scales"), (zero_points, "zero_points")):
                if not (0 <= tensor_index < num_tensors or (what == "zero_points" and tensor_index == -1)):
                    raise ModelError(
                        f"{label} has blockwise quantization {what} tensor {tensor_index} out of range."
                    )
            return BlockwiseQuantization(scales, zero_points, block_size, params.QuantizedDimension())
        if details_type == _MULTI_AXIS_QUANTIZATION:
            raise ModelError(f"{label} uses MultiAxisQuantization, which pytflite does not support yet.")
        if params.ScaleIsNone() or params.ScaleLength() == 0:
            return None
        scales = params.ScaleAsNumpy()
        if params.ZeroPointIsNone():
            raise ModelError(f"{label}: Quantization parameters has non-null scale but null zero_point.")
        zero_points = params.ZeroPointAsNumpy()
        if zero_points.size != scales.size:
            raise ModelError(
                f"{label}: QuantizationParam has {zero_points.size} zero_point values and {scales.size} scale "
                "values. Must have same number."
            )
        axis = params.QuantizedDimension()
        if axis < 0 or (shape and axis >= len(shape)):
            raise ModelError(f"{label}: quantized_dimension must be in range [0, {len(shape)}). Was {axis}.")
        if scales.size != 1 and shape and scales.size != shape[axis]:
            raise ModelError(
                f"{label}: num_scales must be 1 for per-layer quantization, or {shape[axis]} for per-axis "
                f"quantization, but got {scales.size}."
            )
        return AffineQuantization(scales, zero_points, axis)

    def _sparsity(self, sparsity: Any, label: str) -> SparsityParameters:
        if sparsity.TraversalOrderIsNone() or sparsity.DimMetadataIsNone():
            raise ModelError(f"{label} has invalid sparsity parameters.")
        dims = []
        for i in range(self._count(sparsity.DimMetadataLength(), "dim_metadata")):
            meta = self._table(sparsity.DimMetadata(i), f"{label} dim_metadata {i}")
            try:
                dim_format = DimensionType(meta.Format())
            except ValueError:
                raise ModelError(f"{label}: the {i}th dimension has unknown type: {meta.Format()}.") from None
            if dim_format == DimensionType.DENSE:
                dims.append(DimensionMetadata(dim_format, dense_size=meta.DenseSize()))
            else:
                segments = self._sparse_index_vector(meta.ArraySegmentsType(), meta.ArraySegments(), label)
                indices = self._sparse_index_vector(meta.ArrayIndicesType(), meta.ArrayIndices(), label)
                if segments is None or indices is None:
                    raise ModelError(f"{label}: the {i}th sparse dimension has invalid parameters.")
                dims.append(DimensionMetadata(dim_format, array_segments=segments, array_indices=indices))
        block_map = None if sparsity.BlockMapIsNone() else _int_tuple(sparsity, "BlockMap")
        return SparsityParameters(_int_tuple(sparsity, "TraversalOrder"), block_map, tuple(dims))

    def _sparse_index_vector(self, vector_type: int, table: Any, label: str) -> np.ndarray | None:
        """SparseIndexVector union: Int32Vector (1), Uint16Vector (2) or Uint8Vector (3) -> int32 array."""
        dtypes = {1: np.int32, 2: np.uint16, 3: np.uint8}
        if vector_type not in dtypes or table is None:
            return None
        check_table(self.buffer, table.Pos, self.size, f"{label} sparse index vector")
        values = flatbuffers.table.Table(table.Bytes, table.Pos)
        offset = values.Offset(4)
        if offset == 0:
            return np.zeros(0, np.int32)
        start, dtype = values.Vector(offset), np.dtype(dtypes[vector_type])
        count = check_vector(
            start, values.VectorLen(offset), dtype.itemsize, self.size, f"{label} sparse index"
        )
        return np.frombuffer(values.Bytes, dtype, count, start).astype(np.int32)

    # --- signatures ----------------------------------------------------------------------------

    def _signature(self, index: int) -> SignatureDescription:
        self.where = f"signature def {index}"
        signature = self._table(self.model.SignatureDefs(index), f"signature def {index}")
        if signature.SignatureKey() is None:
            raise ModelError("Missing exported method name for SignatureDef")
        key = _string(signature.SignatureKey())

        def tensor_map(length: int, get) -> dict[str, int]:
            result = {}
            for i in range(self._count(length, "signature tensor map")):
                entry = self._table(get(i), f"signature def {index} tensor map {i}")
                result[_string(entry.Name())] = entry.TensorIndex()
            return result

        return SignatureDescription(
            key,
            signature.SubgraphIndex(),
            tensor_map(signature.InputsLength(), signature.Inputs),
            tensor_map(signature.OutputsLength(), signature.Outputs),
        )


def _int32_fields(table: Any, count: int) -> list[int]:
    """The first `count` int32 fields of a table the generated `tflite` package does not describe."""
    table = flatbuffers.table.Table(table.Bytes, table.Pos)
    values = []
    for slot in range(count):
        offset = table.Offset(4 + 2 * slot)
        values.append(table.Get(flatbuffers.number_types.Int32Flags, table.Pos + offset) if offset else 0)
    return values

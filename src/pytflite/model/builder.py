"""ModelBuilder: write `.tflite` models from Python.

    builder = ModelBuilder()
    x = builder.add_input("x", TensorType.FLOAT32, [1, 4])
    w = builder.add_constant("w", np.ones([3, 4], np.float32))
    y = builder.add_tensor("y", TensorType.FLOAT32, [1, 3])
    builder.add_operator(BuiltinOperator.FULLY_CONNECTED, [x, w, -1], [y], {"fused_activation_function": "RELU"})
    builder.add_output(y)
    model_bytes = builder.build()

Operators take their builtin options as an options dataclass (model/options.py) or a dict of its fields;
custom operators are named by a string and take `custom_options` as bytes or as a dict (written as a
flexbuffer map). The result loads in ai-edge-litert as well as in pytflite.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any

import flatbuffers
import numpy as np
import tflite as fb  # the schema's generated builder functions (fb.TensorStart, ...)

from ..core.quantization import AffineQuantization, DimensionType, SparsityParameters
from ..core.sparsity import sparsify
from ..core.strings import encode_string_buffer
from ..core.types import BuiltinOperator, TensorType, storage_dtype, tensor_type_for_dtype
from .custom_options import encode_custom_options
from .options import options_class_for_operator, write_options
from .reader import MODEL_IDENTIFIER, SCHEMA_VERSION

_PLACEHOLDER_FOR_GREATER_OP_CODES = 127  # deprecated_builtin_code holds codes up to this


@dataclasses.dataclass
class _TensorSpec:
    name: str
    type: TensorType
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    buffer: int
    quantization: AffineQuantization | None
    is_variable: bool
    sparsity: SparsityParameters | None = None


@dataclasses.dataclass
class _OperatorSpec:
    opcode_index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    options: Any
    custom_options: bytes | None


class SubgraphBuilder:
    """Tensors, operators, inputs and outputs of one subgraph under construction."""

    def __init__(self, model: ModelBuilder, name: str):
        self._model = model
        self.name = name
        self.tensors: list[_TensorSpec] = []
        self.operators: list[_OperatorSpec] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def add_tensor(
        self,
        name: str,
        tensor_type: TensorType,
        shape: Sequence[int],
        *,
        data: Any = None,
        shape_signature: Sequence[int] | None = None,
        quantization: AffineQuantization | tuple | None = None,
        is_variable: bool = False,
        sparsity: SparsityParameters | None = None,
    ) -> int:
        """Add a tensor (a constant when `data` is given: with `sparsity`, its stored values only);
        returns its index."""
        tensor_type = TensorType(tensor_type)
        buffer = 0 if data is None else self._model._add_buffer(_tensor_bytes(tensor_type, shape, data))
        self.tensors.append(
            _TensorSpec(
                name,
                tensor_type,
                tuple(int(d) for d in shape),
                None if shape_signature is None else tuple(int(d) for d in shape_signature),
                buffer,
                _as_quantization(quantization),
                is_variable,
                sparsity,
            )
        )
        return len(self.tensors) - 1

    def add_sparse_constant(
        self,
        name: str,
        value: Any,
        formats: Sequence[DimensionType | str],
        *,
        traversal_order: Sequence[int] | None = None,
        block_map: Sequence[int] = (),
        block_size: Sequence[int] = (),
        tensor_type: TensorType | None = None,
        quantization: Any = None,
    ) -> int:
        """Add a constant stored sparse (as the converter's sparsification writes it; DENSIFY expands
        it): `formats` has one DENSE / SPARSE_CSR per dimension, blocks split `block_map`'s dimensions
        into `block_size` pieces."""
        array = np.asarray(value)
        if tensor_type is None:
            tensor_type = tensor_type_for_dtype(array.dtype)
        formats = [DimensionType[f] if isinstance(f, str) else DimensionType(f) for f in formats]
        values, sparsity = sparsify(array, formats, traversal_order, block_map, block_size)
        return self.add_tensor(
            name, tensor_type, array.shape, data=values, quantization=quantization, sparsity=sparsity
        )

    def add_constant(
        self, name: str, value: Any, tensor_type: TensorType | None = None, quantization: Any = None
    ) -> int:
        """Add a constant tensor holding `value`; its type follows the array's dtype unless given."""
        array = np.asarray(value)
        if tensor_type is None:
            tensor_type = tensor_type_for_dtype(array.dtype)
            if tensor_type is None:
                raise ValueError(f"no tensor type for dtype {array.dtype}; pass tensor_type")
        return self.add_tensor(name, tensor_type, array.shape, data=array, quantization=quantization)

    def add_input(self, name: str, tensor_type: TensorType, shape: Sequence[int], **kwargs: Any) -> int:
        """Add a tensor and make it the subgraph's next input."""
        index = self.add_tensor(name, tensor_type, shape, **kwargs)
        self.inputs.append(index)
        return index

    def add_output(self, index: int) -> int:
        """Make an existing tensor the subgraph's next output."""
        self.outputs.append(index)
        return index

    def add_operator(
        self,
        op: BuiltinOperator | str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: Any = None,
        *,
        version: int = 1,
        custom_options: bytes | dict | None = None,
        intermediates: Sequence[int] = (),
    ) -> int:
        """Add an operator: a BuiltinOperator with options, or a custom op by name; returns its index."""
        if isinstance(op, str):
            opcode = self._model._opcode(BuiltinOperator.CUSTOM, op, version)
            if isinstance(custom_options, dict):
                custom_options = encode_custom_options(custom_options)
            built_options = None
        else:
            op = BuiltinOperator(op)
            opcode = self._model._opcode(op, None, version)
            built_options = _as_options(op, options)
        self.operators.append(
            _OperatorSpec(
                opcode,
                tuple(int(i) for i in inputs),
                tuple(int(o) for o in outputs),
                tuple(int(i) for i in intermediates),
                built_options,
                None if custom_options is None else bytes(custom_options),
            )
        )
        return len(self.operators) - 1


class ModelBuilder:
    """Builds a whole model: subgraphs (the first is the main one), signatures and metadata."""

    def __init__(self, description: str = "pytflite.ModelBuilder"):
        self.description = description
        self.subgraphs: list[SubgraphBuilder] = []
        self._buffers: list[bytes] = [b""]  # buffer 0 is the empty sentinel by convention
        self._opcodes: dict[tuple[int, str | None, int], int] = {}
        self._signatures: list[tuple[str, int, dict[str, int], dict[str, int]]] = []
        self._metadata: dict[str, bytes] = {}

    def add_subgraph(self, name: str = "") -> SubgraphBuilder:
        subgraph = SubgraphBuilder(self, name)
        self.subgraphs.append(subgraph)
        return subgraph

    @property
    def main(self) -> SubgraphBuilder:
        """Subgraph 0, created on first use."""
        return self.subgraphs[0] if self.subgraphs else self.add_subgraph("main")

    # Shortcuts that build the main subgraph.
    def add_tensor(self, *args: Any, **kwargs: Any) -> int:
        return self.main.add_tensor(*args, **kwargs)

    def add_constant(self, *args: Any, **kwargs: Any) -> int:
        return self.main.add_constant(*args, **kwargs)

    def add_sparse_constant(self, *args: Any, **kwargs: Any) -> int:
        return self.main.add_sparse_constant(*args, **kwargs)

    def add_input(self, *args: Any, **kwargs: Any) -> int:
        return self.main.add_input(*args, **kwargs)

    def add_output(self, index: int) -> int:
        return self.main.add_output(index)

    def add_operator(self, *args: Any, **kwargs: Any) -> int:
        return self.main.add_operator(*args, **kwargs)

    def add_signature(
        self, key: str, inputs: dict[str, int], outputs: dict[str, int], subgraph_index: int = 0
    ) -> None:
        """A SignatureDef mapping names to tensor indices of one subgraph."""
        self._signatures.append((key, subgraph_index, dict(inputs), dict(outputs)))

    def add_metadata(self, name: str, data: bytes) -> None:
        self._metadata[name] = bytes(data)

    def _add_buffer(self, data: bytes) -> int:
        self._buffers.append(data)
        return len(self._buffers) - 1

    def _opcode(self, op: BuiltinOperator, custom_code: str | None, version: int) -> int:
        key = (int(op), custom_code, int(version))
        return self._opcodes.setdefault(key, len(self._opcodes))

    def save(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self.build())

    def build(self, buffers_after_flatbuffer: bool = False) -> bytes:
        """Serialize the model as `.tflite` flatbuffer bytes.

        With `buffers_after_flatbuffer`, constant data is appended after the flatbuffer and located by
        offset and size, the layout the converter uses for models over 2 GB.
        """
        if not buffers_after_flatbuffer:
            return self._build(None)
        # The offsets are not known before the flatbuffer's length is; every offset field is present
        # in both passes, so the second pass has the same length as the first.
        probe = self._build([2**40] * len(self._buffers))
        offsets, position = [], _align16(len(probe))
        for data in self._buffers:
            offsets.append(position if data else 0)
            position = _align16(position + len(data))
        model = bytearray(self._build(offsets))
        for offset, data in zip(offsets, self._buffers):
            if data:
                model.extend(b"\0" * (offset - len(model)))
                model.extend(data)
        return bytes(model)

    def _build(self, buffer_offsets: list[int] | None) -> bytes:
        b = flatbuffers.Builder(1024)
        buffers = [
            self._write_buffer(b, data, None if buffer_offsets is None else buffer_offsets[i])
            for i, data in enumerate(self._buffers)
        ]
        metadata = []
        for name, data in self._metadata.items():
            buffer_index = len(buffers)
            buffers.append(self._write_buffer(b, data, None))
            name_offset = b.CreateString(name)
            fb.MetadataStart(b)
            fb.MetadataAddName(b, name_offset)
            fb.MetadataAddBuffer(b, buffer_index)
            metadata.append(fb.MetadataEnd(b))
        opcodes = [self._write_opcode(b, *key) for key in self._opcodes]
        subgraphs = [self._write_subgraph(b, s) for s in self.subgraphs]
        signatures = [self._write_signature(b, *s) for s in self._signatures]
        description = b.CreateString(self.description)
        vectors = {
            name: _offset_vector(b, items)
            for name, items in (
                ("opcodes", opcodes),
                ("subgraphs", subgraphs),
                ("buffers", buffers),
                ("metadata", metadata),
                ("signatures", signatures),
            )
        }
        fb.ModelStart(b)
        fb.ModelAddVersion(b, SCHEMA_VERSION)
        fb.ModelAddOperatorCodes(b, vectors["opcodes"])
        fb.ModelAddSubgraphs(b, vectors["subgraphs"])
        fb.ModelAddDescription(b, description)
        fb.ModelAddBuffers(b, vectors["buffers"])
        fb.ModelAddMetadata(b, vectors["metadata"])
        fb.ModelAddSignatureDefs(b, vectors["signatures"])
        b.Finish(fb.ModelEnd(b), file_identifier=MODEL_IDENTIFIER)
        return bytes(b.Output())

    @staticmethod
    def _write_buffer(b: flatbuffers.Builder, data: bytes, external_offset: int | None) -> int:
        """A Buffer table: the data inline, or (external_offset given) its offset and size in the file."""
        data_offset = None
        if data and external_offset is None:
            b.StartVector(1, len(data), 16)  # constants 16-byte aligned, as the converter writes them
            b.head = b.Head() - len(data)
            b.Bytes[b.Head() : b.Head() + len(data)] = data
            data_offset = b.EndVector()
        fb.BufferStart(b)
        if data_offset is not None:
            fb.BufferAddData(b, data_offset)
        if data and external_offset is not None:
            fb.BufferAddOffset(b, external_offset)
            fb.BufferAddSize(b, len(data))
        return fb.BufferEnd(b)

    @staticmethod
    def _write_opcode(b: flatbuffers.Builder, code: int, custom_code: str | None, version: int) -> int:
        custom = b.CreateString(custom_code) if custom_code is not None else None
        fb.OperatorCodeStart(b)
        fb.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, _PLACEHOLDER_FOR_GREATER_OP_CODES))
        fb.OperatorCodeAddBuiltinCode(b, code)
        fb.OperatorCodeAddVersion(b, version)
        if custom is not None:
            fb.OperatorCodeAddCustomCode(b, custom)
        return fb.OperatorCodeEnd(b)

    def _write_subgraph(self, b: flatbuffers.Builder, subgraph: SubgraphBuilder) -> int:
        tensors = [_write_tensor(b, t) for t in subgraph.tensors]
        operators = [_write_operator(b, o) for o in subgraph.operators]
        tensors_vector = _offset_vector(b, tensors)
        operators_vector = _offset_vector(b, operators)
        inputs = _int_vector(b, subgraph.inputs)
        outputs = _int_vector(b, subgraph.outputs)
        name = b.CreateString(subgraph.name)
        fb.SubGraphStart(b)
        fb.SubGraphAddTensors(b, tensors_vector)
        fb.SubGraphAddInputs(b, inputs)
        fb.SubGraphAddOutputs(b, outputs)
        fb.SubGraphAddOperators(b, operators_vector)
        fb.SubGraphAddName(b, name)
        return fb.SubGraphEnd(b)

    @staticmethod
    def _write_signature(
        b: flatbuffers.Builder, key: str, subgraph_index: int, inputs: dict[str, int], outputs: dict[str, int]
    ) -> int:
        def tensor_maps(mapping: dict[str, int]) -> int:
            entries = []
            for name, index in mapping.items():
                name_offset = b.CreateString(name)
                fb.TensorMapStart(b)
                fb.TensorMapAddName(b, name_offset)
                fb.TensorMapAddTensorIndex(b, index)
                entries.append(fb.TensorMapEnd(b))
            return _offset_vector(b, entries)

        inputs_vector, outputs_vector = tensor_maps(inputs), tensor_maps(outputs)
        key_offset = b.CreateString(key)
        fb.SignatureDefStart(b)
        fb.SignatureDefAddInputs(b, inputs_vector)
        fb.SignatureDefAddOutputs(b, outputs_vector)
        fb.SignatureDefAddSignatureKey(b, key_offset)
        fb.SignatureDefAddSubgraphIndex(b, subgraph_index)
        return fb.SignatureDefEnd(b)


def _write_tensor(b: flatbuffers.Builder, tensor: _TensorSpec) -> int:
    shape = _int_vector(b, tensor.shape)
    signature = None if tensor.shape_signature is None else _int_vector(b, tensor.shape_signature)
    name = b.CreateString(tensor.name)
    quantization = None
    if tensor.quantization is not None:
        scales = b.CreateNumpyVector(tensor.quantization.scale.astype(np.float32))
        zero_points = b.CreateNumpyVector(tensor.quantization.zero_point.astype(np.int64))
        fb.QuantizationParametersStart(b)
        fb.QuantizationParametersAddScale(b, scales)
        fb.QuantizationParametersAddZeroPoint(b, zero_points)
        fb.QuantizationParametersAddQuantizedDimension(b, tensor.quantization.quantized_dimension)
        quantization = fb.QuantizationParametersEnd(b)
    sparsity = None if tensor.sparsity is None else _write_sparsity(b, tensor.sparsity)
    fb.TensorStart(b)
    fb.TensorAddShape(b, shape)
    fb.TensorAddType(b, tensor.type)
    fb.TensorAddBuffer(b, tensor.buffer)
    fb.TensorAddName(b, name)
    if quantization is not None:
        fb.TensorAddQuantization(b, quantization)
    if tensor.is_variable:
        fb.TensorAddIsVariable(b, True)
    if signature is not None:
        fb.TensorAddShapeSignature(b, signature)
    if sparsity is not None:
        fb.TensorAddSparsity(b, sparsity)
    return fb.TensorEnd(b)


_INT32_VECTOR = 1  # the SparseIndexVector union's Int32Vector member


def _write_sparsity(b: flatbuffers.Builder, sparsity: SparsityParameters) -> int:
    def index_vector(values: np.ndarray) -> int:
        contents = _int_vector(b, values)
        fb.Int32VectorStart(b)
        fb.Int32VectorAddValues(b, contents)
        return fb.Int32VectorEnd(b)

    dimensions = []
    for meta in sparsity.dim_metadata:
        csr = meta.format == DimensionType.SPARSE_CSR
        segments = index_vector(meta.array_segments) if csr else None
        indices = index_vector(meta.array_indices) if csr else None
        fb.DimensionMetadataStart(b)
        fb.DimensionMetadataAddFormat(b, int(meta.format))
        fb.DimensionMetadataAddDenseSize(b, meta.dense_size)
        if csr:
            fb.DimensionMetadataAddArraySegmentsType(b, _INT32_VECTOR)
            fb.DimensionMetadataAddArraySegments(b, segments)
            fb.DimensionMetadataAddArrayIndicesType(b, _INT32_VECTOR)
            fb.DimensionMetadataAddArrayIndices(b, indices)
        dimensions.append(fb.DimensionMetadataEnd(b))
    order = _int_vector(b, sparsity.traversal_order)
    block_map = None if sparsity.block_map is None else _int_vector(b, sparsity.block_map)
    metadata = _offset_vector(b, dimensions)
    fb.SparsityParametersStart(b)
    fb.SparsityParametersAddTraversalOrder(b, order)
    if block_map is not None:
        fb.SparsityParametersAddBlockMap(b, block_map)
    fb.SparsityParametersAddDimMetadata(b, metadata)
    return fb.SparsityParametersEnd(b)


def _write_operator(b: flatbuffers.Builder, operator: _OperatorSpec) -> int:
    inputs = _int_vector(b, operator.inputs)
    outputs = _int_vector(b, operator.outputs)
    intermediates = _int_vector(b, operator.intermediates) if operator.intermediates else None
    custom = b.CreateByteVector(operator.custom_options) if operator.custom_options is not None else None
    options = write_options(b, operator.options) if operator.options is not None else None
    fb.OperatorStart(b)
    fb.OperatorAddOpcodeIndex(b, operator.opcode_index)
    fb.OperatorAddInputs(b, inputs)
    fb.OperatorAddOutputs(b, outputs)
    if options is not None:
        union, union_type, offset = options
        if union == 1:
            fb.OperatorAddBuiltinOptionsType(b, union_type)
            fb.OperatorAddBuiltinOptions(b, offset)
        else:
            fb.OperatorAddBuiltinOptions2Type(b, union_type)
            fb.OperatorAddBuiltinOptions2(b, offset)
    if custom is not None:
        fb.OperatorAddCustomOptions(b, custom)
    if intermediates is not None:
        fb.OperatorAddIntermediates(b, intermediates)
    return fb.OperatorEnd(b)


def _align16(position: int) -> int:
    return -(-position // 16) * 16


def _offset_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _int_vector(b: flatbuffers.Builder, values: Sequence[int]) -> int:
    return b.CreateNumpyVector(np.array(values, dtype=np.int32).reshape(-1))


def _as_quantization(quantization: AffineQuantization | tuple | None) -> AffineQuantization | None:
    """Accept an AffineQuantization, or (scale, zero_point[, quantized_dimension]) of scalars or lists."""
    if quantization is None or isinstance(quantization, AffineQuantization):
        return quantization
    return AffineQuantization(*quantization)


def _as_options(op: BuiltinOperator, options: Any) -> Any:
    """The options object to write: as given, from a dict of fields, or the op's defaults."""
    expected = options_class_for_operator(op)
    if options is None:
        return expected() if expected is not None else None
    if isinstance(options, dict):
        if expected is None:
            raise ValueError(f"{op.name} takes no builtin options, got {options!r}")
        fields = {f.name: f.type for f in dataclasses.fields(expected)}
        values = {}
        for name, value in options.items():
            if name not in fields:
                raise ValueError(f"{expected.__name__} has no field {name!r}; fields: {sorted(fields)}")
            field_type = fields[name]
            is_enum = isinstance(field_type, type) and issubclass(field_type, enum.IntEnum)
            values[name] = field_type[value] if is_enum and isinstance(value, str) else value
        return expected(**values)
    return options


def _tensor_bytes(tensor_type: TensorType, shape: Sequence[int], data: Any) -> bytes:
    """A constant's buffer contents in the tensor's storage layout."""
    if tensor_type == TensorType.STRING:
        return encode_string_buffer(np.asarray(data, dtype=object).reshape(tuple(shape)))
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    return np.ascontiguousarray(np.asarray(data, dtype=storage_dtype(tensor_type))).tobytes()

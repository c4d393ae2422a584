"""Gather, scatter, selection and index ops.

GATHER, GATHER_ND, EMBEDDING_LOOKUP      rows or slices picked by index tensors (np.take on a 2-D view)
SCATTER_ND                               slices added into zeros (np.add.at, so duplicates accumulate)
SELECT, SELECT_V2                        a condition choosing x or y (masked copies; bitwise when large)
WHERE, UNIQUE                            outputs whose shape depends on input values (dynamic outputs)
ONE_HOT, BUCKETIZE                       index encodings
SEGMENT_SUM, UNSORTED_SEGMENT_*          segment reductions (ufunc.at in TFLite's element order)
MATRIX_DIAG, MATRIX_SET_DIAG             diagonals written through a strided view

Prepare validates like TFLite (same conditions and messages), computes the output shape and reduces
every index computation to a flat row index into a 2-D view of the data, so invoke is a bounds check
plus one NumPy call. Indices are checked before any copy: out-of-range indices fail at invoke with
TFLite's message. Where TFLite resolves a value-dependent shape in prepare (constant inputs), so do we;
otherwise the output is dynamic and resized at invoke. GATHER of two constants is computed once in
prepare into a persistent read-only output, as TFLite does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.quantization import AffineQuantization
from ..core.types import AllocationType, BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_types_eq
from .common import as_indices, check_arity, input_tensor, is_constant, output_tensor
from .registry import register_builtin

T = TensorType

_INDEX_TYPES = (T.INT16, T.INT32, T.INT64)
_GATHER_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.UINT8,
    T.INT4,
    T.INT8,
    T.INT16,
    T.INT64,
    T.INT32,
    T.BOOL,
    T.STRING,
)
_GATHER_ND_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.UINT8,
    T.INT8,
    T.INT16,
    T.INT64,
    T.INT32,
    T.BOOL,
    T.STRING,
)
_SCATTER_TYPES = (T.FLOAT32, T.UINT8, T.BOOL, T.INT8, T.INT64, T.INT32)
# Row copies: every type with whole-byte elements.
_EMBEDDING_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.FLOAT64,
    T.INT8,
    T.UINT8,
    T.INT16,
    T.UINT16,
    T.INT32,
    T.UINT32,
    T.INT64,
    T.UINT64,
    T.BOOL,
    T.COMPLEX64,
    T.COMPLEX128,
)
# SELECT switches on the element size: 8, 16, 32 or 64 bits.
_SELECT_TYPES = tuple(t for t in _EMBEDDING_TYPES if t != T.COMPLEX128)
_WHERE_TYPES = (T.BOOL, T.FLOAT32, T.INT64, T.INT32, T.INT8, T.UINT8, T.UINT32)
# TFLite's prepare also lets INT16 through, but its invoke has no INT16 case and fails.
_ONE_HOT_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT8, T.UINT8, T.BOOL)
_UNIQUE_TYPES = (T.INT8, T.INT16, T.INT32, T.INT64, T.FLOAT32, T.UINT8)
_SEGMENT_TYPES = (T.FLOAT32, T.INT32)
_DIAG_TYPES = (T.FLOAT32, T.INT64, T.INT32, T.INT16, T.INT8, T.UINT8)
_BUCKETIZE_TYPES = (T.FLOAT32, T.FLOAT64, T.INT32, T.INT64)


def _unsupported(tensor, message: str) -> KernelError:
    """TFLite's "... of type 'X' ..." error, `message` holding one %s for the type name."""
    return KernelError(message % type_name(tensor.type))


def _ensure_eq(actual, expected, condition: str) -> None:
    """TF_LITE_ENSURE_EQ's message: `condition` reads "a != b", the values follow in parentheses."""
    if actual != expected:
        raise KernelError(f"{condition} ({actual} != {expected})")


def _ensure_type(tensor, expected: TensorType, condition: str) -> None:
    """TF_LITE_ENSURE_TYPES_EQ's message, with the type names."""
    if tensor.type != expected:
        raise KernelError(f"{condition} ({type_name(tensor.type)} != {type_name(expected)})")


def _row_strides(dims: tuple[int, ...]) -> np.ndarray:
    """Row-major strides (in elements) of an array of shape `dims`, as int64."""
    strides = np.ones(len(dims), np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    return strides


# --- GATHER -----------------------------------------------------------------------------------------


@dataclass
class GatherData:
    noop: bool  # both inputs constant: the output was written in prepare
    params_shape: tuple[int, ...]  # params as (outer, axis, inner) or (batch*outer*axis, inner)
    indices_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    axis_size: int
    check_bounds: bool  # TFLite never reaches its bounds check when there is no outer row
    row_base: np.ndarray | None  # batch_dims > 0: first flat row of each (batch, outer) pair


def gather_prepare(context, node):
    check_arity(node, 2)
    params, positions = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    if positions.type not in _INDEX_TYPES:
        raise _unsupported(positions, "Positions of type '%s' are not supported by gather.")
    if params.type not in _GATHER_TYPES:
        raise _unsupported(params, "Type '%s' is not supported by gather.")
    ensure_types_eq(output, params, "GATHER output type")
    rank, positions_rank = len(params.shape), len(positions.shape)
    if params.type == T.STRING:
        _ensure_eq(rank, 1, "NumDimensions(input) != 1")
    options = node.builtin_data
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(0 <= axis < rank, "0 <= axis && axis < NumDimensions(input) was not true.")
    batch_dims = options.batch_dims + positions_rank if options.batch_dims < 0 else options.batch_dims
    ensure(batch_dims <= axis, "batch_dims <= axis was not true.")
    ensure(0 <= batch_dims < rank, "0 <= batch_dims && batch_dims < NumDimensions(input) was not true.")
    ensure(batch_dims <= positions_rank, "batch_dims <= NumDimensions(positions) was not true.")
    for i in range(batch_dims):
        _ensure_eq(params.shape[i], positions.shape[i], "input->dims->data[i] != positions->dims->data[i]")
    shape = params.shape[:axis] + positions.shape[batch_dims:] + params.shape[axis + 1 :]

    batch = math.prod(params.shape[:batch_dims])
    outer = math.prod(params.shape[batch_dims:axis])
    axis_size = params.shape[axis]
    inner = math.prod(params.shape[axis + 1 :])
    coords = math.prod(positions.shape[batch_dims:])
    if params.type == T.INT4:  # two values a byte: whole rows are copied as bytes
        ensure(inner % 2 == 0, "GATHER of INT4 params needs an even number of elements after the axis")
        inner //= 2
    if batch_dims == 0:
        data = GatherData(
            False, (outer, axis_size, inner), (coords,), (outer, coords, inner), axis_size, outer > 0, None
        )
    else:
        base = (
            np.arange(batch, dtype=np.int64)[:, None] * outer + np.arange(outer, dtype=np.int64)
        ) * axis_size
        data = GatherData(
            False,
            (batch * outer * axis_size, inner),
            (batch, 1, coords),
            (batch, outer, coords, inner),
            axis_size,
            batch * outer > 0,
            base[:, :, None],
        )
    node.user_data = data
    if is_constant(params) and is_constant(positions):
        context.set_tensor_to_persistent_ro(output)
        context.resize_tensor(output, shape)
        _gather(context, node, data)
        data.noop = True
    else:
        context.resize_tensor(output, shape)


def _gather(context, node, data: GatherData) -> None:
    tensors = context.tensors
    params = tensors[node.inputs[0]]
    indices = tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    if indices.size:
        if indices.min() < 0:
            context.report_error("indices_has_only_positive_elements was not true.")
            raise KernelError("gather index out of bounds")
        if indices.max() >= data.axis_size and data.check_bounds:
            if params.type == T.STRING:
                context.report_error("pos < num_strings was not true.")
            raise KernelError("gather index out of bounds")
    if out.size == 0:
        return
    source = params.data.reshape(data.params_shape)
    if data.row_base is None:
        np.take(
            source,
            as_indices(indices.reshape(data.indices_shape)),
            axis=1,
            out=out.reshape(data.output_shape),
            mode="clip",
        )
    else:
        rows = as_indices(data.row_base + indices.reshape(data.indices_shape))
        np.take(source, rows, axis=0, out=out.reshape(data.output_shape), mode="clip")


def gather_invoke(context, node):
    data = node.user_data
    if not data.noop:
        _gather(context, node, data)


# --- GATHER_ND --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GatherNdData:
    slices: int
    depth: int  # indices_nd: how many leading params dimensions an index addresses
    rows_shape: tuple[int, int]  # params as (addressable rows, slice size)
    limits: np.ndarray  # the addressed dimensions, for the bounds check
    strides: np.ndarray  # row stride of each addressed dimension


def gather_nd_prepare(context, node):
    check_arity(node, 2)
    params, indices = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    if params.type not in _GATHER_ND_TYPES:
        raise _unsupported(params, "Params of type '%s' are not supported by gather_nd.")
    if indices.type not in _INDEX_TYPES:
        raise _unsupported(indices, "Indices of type '%s' are not supported by gather_nd.")
    ensure_types_eq(output, params, "GATHER_ND output type")
    params_rank, indices_rank = len(params.shape), len(indices.shape)
    ensure(params_rank >= 1, "Params must be at least a vector.")
    ensure(indices_rank >= 1, "Indices must be at least a vector.")
    depth = indices.shape[-1]
    ensure(depth <= params_rank, "Index innermost dimension length must be in [0, params rank].")
    shape = indices.shape[:-1] + params.shape[depth:]
    context.resize_tensor(output, shape)
    addressed = params.shape[:depth]
    node.user_data = GatherNdData(
        slices=math.prod(indices.shape[:-1]),
        depth=depth,
        rows_shape=(math.prod(addressed), math.prod(params.shape[depth:])),
        limits=np.array(addressed, np.int64),
        strides=_row_strides(addressed),
    )


def gather_nd_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    params = tensors[node.inputs[0]].data
    indices = tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    ensure(
        params.size > 0 or indices.size == 0,
        "(NumElements(params) == 0 && NumElements(indices) == 0) || NumElements(params) > 0 was not true.",
    )
    if indices.size and indices.min() < 0:
        raise KernelError("indices_has_only_positive_elements was not true.")
    if data.slices == 0:
        return
    coords = indices.reshape(data.slices, data.depth)
    if data.depth and (coords >= data.limits).any():
        raise KernelError("gather_nd index out of bounds")
    if out.size == 0:
        return
    rows = as_indices(coords @ data.strides) if data.depth else np.zeros(data.slices, np.intp)
    np.take(params.reshape(data.rows_shape), rows, axis=0, out=out.reshape(data.slices, -1), mode="clip")


# --- SCATTER_ND -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScatterPlan:
    slices: int
    depth: int
    slice_size: int
    rows: int
    limits: np.ndarray
    strides: np.ndarray


def _scatter_plan(indices_shape, updates_shape, shape_values) -> tuple[tuple[int, ...], ScatterPlan]:
    """TFLite's CheckShapes, then the output shape and the row arithmetic for it."""
    outer = len(indices_shape) - 1
    for i in range(min(outer, len(updates_shape))):
        _ensure_eq(indices_shape[i], updates_shape[i], "indices.Dims(i) != updates.Dims(i)")
    ensure(len(updates_shape) >= outer, "updates rank is less than indices rank - 1")
    depth = indices_shape[outer]
    _ensure_eq(
        len(updates_shape) - outer,
        len(shape_values) - depth,
        "updates.DimensionsCount() - outer_dims != shape_shape.Dims(0) - ix",
    )
    for i in range(len(updates_shape) - outer):
        _ensure_eq(
            updates_shape[outer + i],
            shape_values[depth + i],
            "updates.Dims(i + outer_dims) != shape_data[ix + i]",
        )
    shape = tuple(int(d) for d in shape_values)
    addressed = shape[:depth]
    plan = ScatterPlan(
        slices=math.prod(indices_shape[:outer]),
        depth=depth,
        slice_size=math.prod(updates_shape[outer:]),
        rows=math.prod(addressed),
        limits=np.array(addressed, np.int64),
        strides=_row_strides(addressed),
    )
    return shape, plan


@dataclass(frozen=True)
class ScatterNdData:
    plan: ScatterPlan | None  # None: the shape tensor is computed at run time


def scatter_nd_prepare(context, node):
    check_arity(node, 3)
    indices, updates, shape = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    if updates.type not in _SCATTER_TYPES:
        raise _unsupported(updates, "Updates of type '%s' are not supported by scatter_nd.")
    ensure(indices.type == shape.type, "Indices and shape must have the same type.")
    if indices.type != T.INT32:
        raise _unsupported(indices, "Indices of type '%s' are not supported by scatter_nd.")
    ensure_types_eq(output, updates, "SCATTER_ND output type")
    ensure(
        len(indices.shape) >= 1 and len(updates.shape) >= 1 and len(shape.shape) == 1,
        "(indices.DimensionsCount() >= 1) && (updates.DimensionsCount() >= 1) && "
        "(shape_shape.DimensionsCount() == 1) was not true.",
    )
    if not is_constant(shape):
        node.user_data = ScatterNdData(None)
        context.set_tensor_to_dynamic(output)
        return
    out_shape, plan = _scatter_plan(indices.shape, updates.shape, shape.data.tolist())
    node.user_data = ScatterNdData(plan)
    context.resize_tensor(output, out_shape)


def scatter_nd_invoke(context, node):
    tensors = context.tensors
    indices, updates = tensors[node.inputs[0]].data, tensors[node.inputs[1]].data
    output = tensors[node.outputs[0]]
    plan = node.user_data.plan
    if plan is None:
        shape, plan = _scatter_plan(indices.shape, updates.shape, tensors[node.inputs[2]].data.tolist())
        context.resize_tensor(output, shape)
    out = output.data
    out.fill(0)
    coords = indices.reshape(plan.slices, plan.depth)
    if coords.size and (coords.min() < 0 or (coords >= plan.limits).any()):
        raise KernelError("scatter_nd index out of bounds")
    if out.size == 0 or plan.slices == 0:
        return
    rows = coords @ plan.strides if plan.depth else np.zeros(plan.slices, np.int64)
    np.add.at(out.reshape(plan.rows, plan.slice_size), rows, updates.reshape(plan.slices, plan.slice_size))


# --- EMBEDDING_LOOKUP -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HybridLookupData:
    """A dequantizing lookup: int8/uint8/int4/int2 rows times their scale into float32/float16."""

    columns: int  # values per row
    scales: np.ndarray | None  # per-row scales (float32), or None for the per-tensor `scale`
    scale: np.float32
    packed: T | None  # INT4/INT2: rows unpacked at invoke
    packed_scale: np.float32  # the scale divided by 16 (int4) or 64 (int2), as TFLite unpacks


_HYBRID_LOOKUP_VALUES = (T.UINT8, T.INT8, T.INT4, T.INT2)


def embedding_lookup_prepare(context, node):
    check_arity(node, 2)
    lookup, value = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    _ensure_eq(len(lookup.shape), 1, "NumDimensions(lookup) != 1")
    _ensure_type(lookup, T.INT32, "lookup->type != kTfLiteInt32")
    ensure(len(value.shape) >= 2, "NumDimensions(value) >= 2 was not true.")
    quantization = value.quantization
    if quantization is not None and not isinstance(quantization, AffineQuantization):
        raise KernelError("EMBEDDING_LOOKUP of a table with blockwise quantization is not supported")
    float_output = output.type in (T.FLOAT32, T.FLOAT16)
    if isinstance(quantization, AffineQuantization):
        if value.type in _HYBRID_LOOKUP_VALUES and output.type == T.FLOAT32:
            ensure(
                quantization.zero_point.size and quantization.zero_point[0] == 0,
                "qparams->zero_point->data[0] == 0 was not true.",
            )
        if quantization.scale.size > 1:
            ensure(
                value.type in _HYBRID_LOOKUP_VALUES,
                "value->type == kTfLiteUInt8 || value->type == kTfLiteInt8 || value->type == kTfLiteInt4 || "
                "value->type == kTfLiteInt2 was not true.",
            )
            ensure(
                float_output,
                "output->type == kTfLiteFloat32 || output->type == kTfLiteFloat16 was not true.",
            )
            ensure(quantization.quantized_dimension == 0, "qparams->quantized_dimension == 0 was not true.")
            ensure(
                quantization.scale.size == value.shape[0], "qparams->scale->size == row_size was not true."
            )
            ensure(
                quantization.zero_point.size in (value.shape[0], 1),
                "qparams->zero_point->size == row_size || qparams->zero_point->size == 1 was not true.",
            )
    data = None
    if value.type != output.type and float_output:
        # TFLite's hybrid lookup reads the table as int8 bytes (uint8 values' bits included)
        if value.type not in _HYBRID_LOOKUP_VALUES:
            raise _unsupported(value, "Type '%s' is not supported by a dequantizing embedding_lookup.")
        per_row = isinstance(quantization, AffineQuantization) and quantization.scale.size > 1
        scale = np.float32(value.params.scale)
        packed = value.type if value.type in (T.INT4, T.INT2) else None
        divisor = np.float32(16 if value.type == T.INT4 else 64)
        data = HybridLookupData(
            math.prod(value.shape[1:]),
            quantization.scale.astype(np.float32) if per_row else None,
            scale,
            packed,
            scale / divisor,
        )
    else:
        if value.type not in _EMBEDDING_TYPES:
            raise _unsupported(value, "Type '%s' is not supported by embedding_lookup.")
        ensure_types_eq(output, value, "EMBEDDING_LOOKUP output type")
    node.user_data = data
    context.resize_tensor(output, lookup.shape + value.shape[1:])


def embedding_lookup_invoke(context, node):
    tensors = context.tensors
    ids = tensors[node.inputs[0]].data
    table = tensors[node.inputs[1]]
    rows = table.shape[0]
    if rows == 0:
        return
    if ids.size and (ids.min() < 0 or ids.max() >= rows):
        bad = ids[(ids < 0) | (ids >= rows)][0]
        raise KernelError(f"Embedding Lookup: index out of bounds. Got {bad}, and bounds are [0, {rows - 1}]")
    out = tensors[node.outputs[0]].data
    data = node.user_data
    if data is None:
        np.take(table.data, ids, axis=0, out=out, mode="clip")
        return
    _hybrid_lookup(data, table, ids, out.reshape(ids.size, data.columns))


def _hybrid_lookup(data: HybridLookupData, table, ids: np.ndarray, out: np.ndarray) -> None:
    """out[i] = row ids[i] of the table times its scale, each product rounded to float32 (then to
    float16 for a float16 output), as TFLite's EvalHybrid."""
    columns = data.columns
    if data.packed is None:
        rows = np.take(table.data.reshape(-1, columns).view(np.int8), ids, axis=0).astype(np.float32)
        scale = data.scale if data.scales is None else data.scales[ids][:, None]
    else:
        # TFLite starts a row at the byte holding its first element and unpacks from that byte's low
        # bits, so with an odd row length (int4), or one not a multiple of 4 (int2), a row starts at
        # the byte's first element. Values are unpacked as 16 * v (int4) or 64 * v (int2), times the
        # scale divided by 16 or 64.
        bits = 4 if data.packed == T.INT4 else 2
        per_byte = 8 // bits
        starts = ids.astype(np.int64) * columns
        starts -= starts % per_byte
        elements = starts[:, None] + np.arange(columns)
        raw = table.data.reshape(-1).view(np.uint8)
        fields = (raw[elements // per_byte] >> ((elements % per_byte) * bits).astype(np.uint8)) & (
            (1 << bits) - 1
        )
        signed = ((fields << (8 - bits)).astype(np.uint8)).view(np.int8)  # the value times 2**(8 - bits)
        rows = signed.astype(np.float32)
        if data.scales is None:
            scale = data.packed_scale
        else:
            divisor = np.float32(16 if data.packed == T.INT4 else 64)
            scale = (data.scales[ids] / divisor)[:, None]
    np.multiply(rows, scale, out=out, casting="unsafe")


# --- SELECT, SELECT_V2 ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelectData:
    single: bool  # all of condition, x, y and output hold one element
    condition_shape: tuple[int, ...] | None  # SELECT's rank-1 condition reshaped to broadcast by rows
    bits: np.dtype | None  # large outputs: the unsigned type of the element size, for a branch-free select


# Below this many output elements two masked copies are quickest; above it, a branch-free bitwise select
# (whose speed does not depend on how predictable the condition is).
_BITWISE_SELECT_SIZE = 2048


def _select_prepare(op_name: str, broadcast: bool):
    def prepare(context, node):
        check_arity(node, 3)
        condition, x, y = (input_tensor(context, node, i) for i in range(3))
        output = output_tensor(context, node)
        _ensure_type(condition, T.BOOL, "input_condition->type != kTfLiteBool")
        _ensure_type(y, x.type, "input_x->type != input_y->type")
        if x.type not in _SELECT_TYPES:
            raise _unsupported(x, f"Type '%s' is not supported by {op_name}.")
        ensure_types_eq(output, x, f"{op_name} output type")
        sizes = (math.prod(condition.shape), math.prod(x.shape), math.prod(y.shape), math.prod(output.shape))
        if sizes == (1, 1, 1, 1):  # TFLite keeps the output's own (one-element) shape here
            node.user_data = SelectData(True, None, None)
            context.resize_tensor(output, output.shape)
            return
        condition_shape = None
        if condition.shape == x.shape == y.shape:
            shape = x.shape
        elif not broadcast:
            rank_one = len(condition.shape) == 1 and len(x.shape) >= 1 and condition.shape[0] == x.shape[0]
            ensure(len(condition.shape) == 0 or rank_one, "data->has_low_rank_input_condition was not true.")
            ensure(x.shape == y.shape, "HaveSameShapes(input_x, input_y) was not true.")
            shape = x.shape
            condition_shape = condition.shape + (1,) * (len(shape) - len(condition.shape))
        else:
            try:
                shape = tuple(np.broadcast_shapes(condition.shape, x.shape, y.shape))
            except ValueError:
                shapes = ", ".join(f"[{','.join(map(str, s))}]" for s in (condition.shape, x.shape))
                raise KernelError(
                    f"Given shapes, {shapes} and [{','.join(map(str, y.shape))}], are not broadcastable."
                ) from None
            ensure(len(shape) <= 8, "output_size->size <= 8 was not true.")
        bits = None
        if math.prod(shape) >= _BITWISE_SELECT_SIZE:
            bits = np.dtype(f"u{np.dtype(output.dtype).itemsize}")
        node.user_data = SelectData(False, condition_shape, bits)
        context.resize_tensor(output, shape)

    return prepare


def select_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    condition = tensors[node.inputs[0]].data
    x, y = tensors[node.inputs[1]].data, tensors[node.inputs[2]].data
    out = tensors[node.outputs[0]].data
    if data.single:
        out.reshape(-1)[0] = x.reshape(-1)[0] if condition.reshape(-1)[0] else y.reshape(-1)[0]
        return
    if data.condition_shape is not None:
        condition = condition.reshape(data.condition_shape)
    if data.bits is None:
        np.copyto(out, y)
        np.copyto(out, x, where=condition)
        return
    # out = y ^ ((x ^ y) & mask), the mask all ones where the condition holds
    mask = condition.astype(data.bits)
    np.negative(mask, out=mask)
    bits_out, bits_y = out.view(data.bits), y.view(data.bits)
    np.bitwise_xor(x.view(data.bits), bits_y, out=bits_out)
    np.bitwise_and(bits_out, mask, out=bits_out)
    np.bitwise_xor(bits_out, bits_y, out=bits_out)


# --- WHERE ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WhereData:
    coords: np.ndarray | None  # the answer, when the condition is constant


def _true_coords(condition: np.ndarray) -> np.ndarray:
    return np.argwhere(condition) if condition.ndim else np.zeros((int(bool(condition)), 0), np.int64)


def where_prepare(context, node):
    check_arity(node, 1)
    condition, output = input_tensor(context, node, 0), output_tensor(context, node)
    if condition.type not in _WHERE_TYPES:
        raise _unsupported(condition, "Condition tensor has unsupported type: '%s'.")
    ensure(output.type == T.INT64, f"WHERE output type {type_name(output.type)} != INT64")
    if not is_constant(condition):
        node.user_data = WhereData(None)
        context.set_tensor_to_dynamic(output)
        return
    coords = _true_coords(condition.data)
    node.user_data = WhereData(coords)
    context.resize_tensor(output, coords.shape)


def where_invoke(context, node):
    tensors = context.tensors
    condition = tensors[node.inputs[0]].data
    output = tensors[node.outputs[0]]
    coords = node.user_data.coords
    if coords is None:
        coords = _true_coords(condition)
        context.resize_tensor(output, coords.shape)
    ensure(condition.ndim > 0, "Where op requires condition w/ rank > 0")
    np.copyto(output.data, coords)


# --- ONE_HOT ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OneHotData:
    axis: int
    depth: int | None  # None: the depth tensor is computed at run time


def _one_hot_shape(indices_shape: tuple[int, ...], axis: int, depth: int) -> tuple[int, ...]:
    ensure(depth >= 0, "*op_context.depth->data.i32 >= 0 was not true.")
    return (*indices_shape[:axis], depth, *indices_shape[axis:])


def one_hot_prepare(context, node):
    check_arity(node, 4)
    indices, depth, on_value, off_value = (input_tensor(context, node, i) for i in range(4))
    output = output_tensor(context, node)
    if on_value.type not in _ONE_HOT_TYPES:
        raise _unsupported(on_value, "Unknown output data type: %s")
    ensure(
        indices.type in (T.INT32, T.INT64),
        "op_context.indices->type == kTfLiteInt32 || op_context.indices->type == kTfLiteInt64 was not true.",
    )
    rank = len(indices.shape)
    axis = rank if node.builtin_data.axis == -1 else node.builtin_data.axis
    ensure(
        0 <= axis <= rank, "op_context.axis >= 0 && op_context.axis < op_context.output_dims was not true."
    )
    ensure(depth.type == T.INT32, f"ONE_HOT depth type {type_name(depth.type)} != INT32")
    _ensure_eq(math.prod(depth.shape), 1, "NumElements(op_context.depth) != 1")
    _ensure_eq(math.prod(on_value.shape), 1, "NumElements(op_context.on_value) != 1")
    _ensure_eq(math.prod(off_value.shape), 1, "NumElements(op_context.off_value) != 1")
    _ensure_type(off_value, on_value.type, "op_context.off_value->type != op_context.dtype")
    ensure_types_eq(output, on_value, "ONE_HOT output type")
    if not is_constant(depth):
        node.user_data = OneHotData(axis, None)
        context.set_tensor_to_dynamic(output)
        return
    count = int(depth.data.reshape(-1)[0])
    node.user_data = OneHotData(axis, count)
    context.resize_tensor(output, _one_hot_shape(indices.shape, axis, count))


def one_hot_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    indices = tensors[node.inputs[0]].data
    output = tensors[node.outputs[0]]
    depth = data.depth
    if depth is None:
        depth = int(tensors[node.inputs[1]].data.reshape(-1)[0])
        context.resize_tensor(output, _one_hot_shape(indices.shape, data.axis, depth))
    out = output.data
    if out.size == 0:
        return
    prefix = math.prod(indices.shape[: data.axis])
    suffix = indices.size // prefix
    if indices.dtype == np.int64:  # TFLite compares static_cast<int>(index) with the position
        indices = indices.astype(np.int32)
    hot = indices.reshape(prefix, 1, suffix) == np.arange(depth, dtype=np.int32).reshape(1, depth, 1)
    out3 = out.reshape(prefix, depth, suffix)
    np.copyto(out3, tensors[node.inputs[3]].data.reshape(()))
    np.copyto(out3, tensors[node.inputs[2]].data.reshape(()), where=hot)


# --- UNIQUE -----------------------------------------------------------------------------------------


def unique_prepare(context, node):
    check_arity(node, 1, outputs=2)
    source = input_tensor(context, node, 0)
    values, index = output_tensor(context, node, 0), output_tensor(context, node, 1)
    index_type = node.builtin_data.idx_out_type
    if index_type not in (T.INT32, T.INT64):
        raise KernelError(
            f"Unique index output array can only be Int32 or Int64, requested: {type_name(T(index_type))}"
        )
    if source.type not in _UNIQUE_TYPES:
        raise _unsupported(source, "Currently Unique doesn't support type: %s")
    _ensure_type(values, source.type, "output_unique_tensor->type != input->type")
    _ensure_type(index, T(index_type), "output_index_tensor->type != params->index_out_type")
    _ensure_eq(len(source.shape), 1, "NumDimensions(input) != 1")
    context.set_tensor_to_dynamic(values)
    context.resize_tensor(index, source.shape)


def unique_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]].data
    values = tensors[node.outputs[0]]
    index = tensors[node.outputs[1]].data
    if source.size == 0:
        context.resize_tensor(values, (0,))
        return
    _, first, inverse = np.unique(source, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # unique values in order of first occurrence
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    context.resize_tensor(values, (len(order),))
    np.take(source, first[order], out=values.data, mode="clip")
    np.copyto(index, rank[inverse.reshape(-1)], casting="unsafe")


# --- SEGMENT_SUM ------------------------------------------------------------------------------------


def _segment_sum_shape(data_shape: tuple[int, ...], ids: np.ndarray) -> tuple[int, ...]:
    """TFLite's ValidateSegmentIds: ids start at 0 and rise by 0 or 1; the output has max id + 1 rows."""
    ensure(len(data_shape) >= 1, "NumDimensions(&data) >= 1 was not true.")
    _ensure_eq(ids.ndim, 1, "NumDimensions(&segment_ids) != 1")
    _ensure_eq(ids.size, data_shape[0], "segment_id_size != data.dims->data[0]")
    if ids.size == 0:
        return (0, *data_shape[1:])
    _ensure_eq(int(ids[0]), 0, "current_segment_id != 0")
    steps = np.diff(ids.astype(np.int64))
    ensure(((steps == 0) | (steps == 1)).all(), "delta == 0 || delta == 1 was not true.")
    return (int(ids[-1]) + 1, *data_shape[1:])


def segment_sum_prepare(context, node):
    check_arity(node, 2)
    data, ids = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(
        data.type in _SEGMENT_TYPES,
        "data->type == kTfLiteInt32 || data->type == kTfLiteFloat32 was not true.",
    )
    _ensure_type(ids, T.INT32, "segment_ids->type != kTfLiteInt32")
    ensure_types_eq(output, data, "SEGMENT_SUM output type")
    if not (is_constant(data) and is_constant(ids)):
        context.set_tensor_to_dynamic(output)
        return
    context.resize_tensor(output, _segment_sum_shape(data.shape, ids.data))


def segment_sum_invoke(context, node):
    tensors = context.tensors
    data = tensors[node.inputs[0]].data
    ids = tensors[node.inputs[1]].data
    output = tensors[node.outputs[0]]
    shape = _segment_sum_shape(data.shape, ids)  # validates the ids, as TFLite does at every invoke
    if output.allocation_type == AllocationType.DYNAMIC:
        context.resize_tensor(output, shape)
    out = output.data
    out.fill(0)
    if out.size:
        np.add.at(out.reshape(shape[0], -1), ids, data.reshape(ids.size, -1))


# --- UNSORTED_SEGMENT_SUM / PROD / MAX / MIN --------------------------------------------------------


def _unsorted_segment_shape(data_shape, ids_shape, ids: np.ndarray, num_segments) -> tuple[int, ...]:
    ensure(len(ids_shape) <= len(data_shape), "segment_ids_rank <= data_rank was not true.")
    for i, d in enumerate(ids_shape):
        _ensure_eq(d, data_shape[i], "SizeOfDimension(&segment_ids, i) != SizeOfDimension(&data, i)")
    ensure(
        num_segments.shape in ((1,), ()),
        "(num_segments.dims->size == 1 && num_segments.dims->data[0] == 1) || num_segments.dims->size == 0 "
        "was not true.",
    )
    count = int(num_segments.data.reshape(-1)[0])
    ensure(count >= 0, "num_segments_ >= 0 was not true.")
    ensure(ids.size == 0 or int(ids.max()) < count, "max_index < num_segments_ was not true.")
    return (count, *data_shape[len(ids_shape) :])


def _unsorted_segment(op_name: str, combine: Callable[[np.dtype], tuple[np.ufunc, object]]):
    def prepare(context, node):
        check_arity(node, 3)
        data, ids, num_segments = (input_tensor(context, node, i) for i in range(3))
        output = output_tensor(context, node)
        ensure(
            data.type in _SEGMENT_TYPES,
            "data->type == kTfLiteInt32 || data->type == kTfLiteFloat32 was not true.",
        )
        _ensure_type(ids, T.INT32, "segment_ids->type != kTfLiteInt32")
        _ensure_type(num_segments, T.INT32, "num_segments->type != kTfLiteInt32")
        ensure_types_eq(output, data, f"{op_name} output type")
        node.user_data = combine(output.dtype)  # the ufunc and the value empty segments get
        if data.allocation_type == AllocationType.DYNAMIC or not (
            is_constant(ids) and is_constant(num_segments)
        ):
            context.set_tensor_to_dynamic(output)
            return
        context.resize_tensor(output, _unsorted_segment_shape(data.shape, ids.shape, ids.data, num_segments))

    def invoke(context, node):
        tensors = context.tensors
        data = tensors[node.inputs[0]].data
        ids = tensors[node.inputs[1]].data
        output = tensors[node.outputs[0]]
        if output.allocation_type == AllocationType.DYNAMIC:
            shape = _unsorted_segment_shape(data.shape, ids.shape, ids, tensors[node.inputs[2]])
            context.resize_tensor(output, shape)
        out = output.data
        if out.size == 0:
            return
        ufunc, identity = node.user_data
        out.fill(identity)
        ids = ids.reshape(-1)
        rows = data.reshape(ids.size, -1) if ids.size else data.reshape(0, out.size // out.shape[0])
        if ids.size and ids.min() < 0:  # negative ids are dropped
            keep = ids >= 0
            ids, rows = ids[keep], rows[keep]
        ufunc.at(out.reshape(out.shape[0], -1), ids, rows)

    return prepare, invoke


def _extreme(float_ufunc: np.ufunc, int_ufunc: np.ufunc, lowest: bool):
    """max/min starting from the type's lowest/highest finite value; NaN data never wins (std::max)."""

    def combine(dtype):
        limits = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        return (float_ufunc if dtype.kind == "f" else int_ufunc), (limits.min if lowest else limits.max)

    return combine


_UNSORTED_SEGMENTS = {
    BuiltinOperator.UNSORTED_SEGMENT_SUM: lambda dtype: (np.add, 0),
    BuiltinOperator.UNSORTED_SEGMENT_PROD: lambda dtype: (np.multiply, 1),
    BuiltinOperator.UNSORTED_SEGMENT_MAX: _extreme(np.fmax, np.maximum, lowest=True),
    BuiltinOperator.UNSORTED_SEGMENT_MIN: _extreme(np.fmin, np.minimum, lowest=False),
}


# --- MATRIX_DIAG, MATRIX_SET_DIAG -------------------------------------------------------------------


def matrix_diag_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure(len(source.shape) >= 1, "input_dims_size >= 1 was not true.")
    if source.type not in _DIAG_TYPES:
        raise _unsupported(source, "Type '%s' is not supported by matrix_diag.")
    ensure_types_eq(output, source, "MATRIX_DIAG output type")
    context.resize_tensor(output, source.shape + source.shape[-1:])


def matrix_diag_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    n = source.shape[-1]
    batches = out.size // (n * n) if n else 0
    out.fill(0)
    if batches:
        out.reshape(batches, n * n)[:, :: n + 1] = source.reshape(batches, n)


@dataclass(frozen=True)
class SetDiagData:
    batches: int
    rows: int
    cols: int
    length: int  # min(rows, cols): diagonal elements per matrix


def matrix_set_diag_prepare(context, node):
    check_arity(node, 2)
    source, diagonal = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(len(source.shape) >= 2, "input_dims_size >= 2 was not true.")
    if source.type not in _DIAG_TYPES:
        raise _unsupported(source, "Type '%s' is not supported by matrix_set_diag.")
    ensure_types_eq(diagonal, source, "MATRIX_SET_DIAG diagonal type")
    ensure_types_eq(output, source, "MATRIX_SET_DIAG output type")
    rows, cols = source.shape[-2:]
    batches = math.prod(source.shape[:-2])
    length = min(rows, cols)
    # TFLite reads the diagonal as a flat run of batches * min(rows, cols) values without checking it.
    ensure(
        math.prod(diagonal.shape) >= batches * length,
        f"MATRIX_SET_DIAG diagonal has {math.prod(diagonal.shape)} elements, needs {batches * length}",
    )
    node.user_data = SetDiagData(batches, rows, cols, length)
    context.resize_tensor(output, source.shape)


def matrix_set_diag_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    out = tensors[node.outputs[0]].data
    np.copyto(out, tensors[node.inputs[0]].data)
    if data.batches and data.length:
        diagonal = tensors[node.inputs[1]].data.reshape(-1)[: data.batches * data.length]
        step = data.cols + 1
        view = out.reshape(data.batches, data.rows * data.cols)[:, : data.length * step : step]
        view[...] = diagonal.reshape(data.batches, data.length)


# --- BUCKETIZE --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BucketizeData:
    boundaries: np.ndarray  # float32, or float64 for a float64 input
    cast: np.dtype | None  # integers compare as float32 against float boundaries (C++ promotion)


def bucketize_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    boundaries = np.array(node.builtin_data.boundaries or (), np.float32)
    ensure(not (boundaries[1:] < boundaries[:-1]).any(), "Expected sorted boundaries")
    if source.type not in _BUCKETIZE_TYPES:
        raise _unsupported(source, "Type '%s' is not supported by bucketize.")
    ensure(output.type == T.INT32, f"BUCKETIZE output type {type_name(output.type)} != INT32")
    if source.type == T.FLOAT64:
        node.user_data = BucketizeData(boundaries.astype(np.float64), None)
    else:
        cast = None if source.type == T.FLOAT32 else np.dtype(np.float32)
        node.user_data = BucketizeData(boundaries, cast)
    context.resize_tensor(output, source.shape)


def bucketize_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source = tensors[node.inputs[0]].data
    if data.cast is not None:
        source = source.astype(data.cast)
    np.copyto(
        tensors[node.outputs[0]].data,
        np.searchsorted(data.boundaries, source, side="right"),
        casting="unsafe",
    )


# --- registration -----------------------------------------------------------------------------------

Op = BuiltinOperator
register_builtin(Op.GATHER, (1, 8), types=_GATHER_TYPES, prepare=gather_prepare, invoke=gather_invoke)
register_builtin(
    Op.GATHER_ND, (1, 6), types=_GATHER_ND_TYPES, prepare=gather_nd_prepare, invoke=gather_nd_invoke
)
register_builtin(
    Op.SCATTER_ND, (1, 1), types=_SCATTER_TYPES, prepare=scatter_nd_prepare, invoke=scatter_nd_invoke
)
register_builtin(
    Op.EMBEDDING_LOOKUP,
    (1, 5),
    types=_EMBEDDING_TYPES,
    prepare=embedding_lookup_prepare,
    invoke=embedding_lookup_invoke,
)
register_builtin(
    Op.SELECT, (1, 4), types=_SELECT_TYPES, prepare=_select_prepare("SELECT", False), invoke=select_invoke
)
register_builtin(
    Op.SELECT_V2,
    (1, 2),
    types=_SELECT_TYPES,
    prepare=_select_prepare("SELECT_V2", True),
    invoke=select_invoke,
)
register_builtin(Op.WHERE, (1, 2), types=_WHERE_TYPES, prepare=where_prepare, invoke=where_invoke)
register_builtin(Op.ONE_HOT, (1, 1), types=_ONE_HOT_TYPES, prepare=one_hot_prepare, invoke=one_hot_invoke)
register_builtin(Op.UNIQUE, (1, 1), types=_UNIQUE_TYPES, prepare=unique_prepare, invoke=unique_invoke)
register_builtin(
    Op.SEGMENT_SUM, (1, 1), types=_SEGMENT_TYPES, prepare=segment_sum_prepare, invoke=segment_sum_invoke
)
for _op, _combine in _UNSORTED_SEGMENTS.items():
    _prepare, _invoke = _unsorted_segment(_op.name, _combine)
    register_builtin(_op, (1, 1), types=_SEGMENT_TYPES, prepare=_prepare, invoke=_invoke)
register_builtin(
    Op.MATRIX_DIAG, (1, 1), types=_DIAG_TYPES, prepare=matrix_diag_prepare, invoke=matrix_diag_invoke
)
register_builtin(
    Op.MATRIX_SET_DIAG,
    (1, 1),
    types=_DIAG_TYPES,
    prepare=matrix_set_diag_prepare,
    invoke=matrix_set_diag_invoke,
)
register_builtin(
    Op.BUCKETIZE, (1, 1), types=_BUCKETIZE_TYPES, prepare=bucketize_prepare, invoke=bucketize_invoke
)

"""Shape and data-movement kernels: RESHAPE, SQUEEZE, EXPAND_DIMS, SHAPE, RANK, FILL, RANGE, BROADCAST_TO,
BROADCAST_ARGS, TRANSPOSE, CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, TILE, REVERSE_V2.

None of them computes on values: they copy elements into a new arrangement. Prepare works the output
shapes out and everything a copy needs (permutations, slices, broadcast views); invoke is one NumPy copy
per output. Quantized values are copied as stored: TFLite requires equal input/output quantization
only of EXPAND_DIMS, FILL, PACK, UNPACK and int8 CONCATENATION (int16 CONCATENATION: zero points 0), and
ignores the output's parameters elsewhere. The one exception is uint8 CONCATENATION, whose inputs
quantized unlike the output are requantized (ConcatenationWithScaling) through a 256-entry table each.

When an output shape depends on a tensor's values (a shape, axis, perm or multiples tensor), a constant
value is resolved in prepare and a computed one makes the output dynamic: it is resized in invoke before
the copy. RESHAPE instead reports OUTPUT_SHAPE_NOT_KNOWN and the runtime prepares the downstream nodes
after it ran (TFLite's lazy prepare).

As in TFLite, some outputs are known entirely in prepare and are written there, as persistent read-only
tensors that downstream kernels treat as constants: SHAPE and RANK always (shapes are known in prepare,
even those of dynamic tensors), RANGE, TILE, CONCATENATION and BROADCAST_ARGS when their inputs are all
constant. Their invoke does nothing.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.types import (
    BuiltinOperator,
    Status,
    TensorType,
    type_name,
)
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import (
    ANY_TYPE,
    check_arity,
    input_tensor,
    is_constant,
    optional_input_tensor,
    output_tensor,
)
from .registry import register_builtin

T = TensorType

# Element types whose width is 8, 16, 32 or 64 bits: what TFLite's copy kernels switch on.
_SIZED = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.FLOAT64,
    T.COMPLEX64,
    T.INT8,
    T.UINT8,
    T.INT16,
    T.UINT16,
    T.INT32,
    T.UINT32,
    T.INT64,
    T.UINT64,
    T.BOOL,
    T.FLOAT8_E4M3FN,
    T.FLOAT8_E5M2,
)
_INDEX = (T.INT32, T.INT64)

# TfLiteType's numbering, for the few messages where TFLite prints a type as a number.
_C_TYPE_NUMBER = {
    T.FLOAT32: 1,
    T.INT32: 2,
    T.UINT8: 3,
    T.INT64: 4,
    T.STRING: 5,
    T.BOOL: 6,
    T.INT16: 7,
    T.COMPLEX64: 8,
    T.INT8: 9,
    T.FLOAT16: 10,
    T.FLOAT64: 11,
    T.COMPLEX128: 12,
    T.UINT64: 13,
    T.RESOURCE: 14,
    T.VARIANT: 15,
    T.UINT32: 16,
    T.UINT16: 17,
    T.INT4: 18,
    T.BFLOAT16: 19,
    T.INT2: 20,
    T.UINT4: 21,
    T.FLOAT8_E4M3FN: 22,
    T.FLOAT8_E5M2: 23,
}


# --- helpers ---------------------------------------------------------------------------------------------


def _set_persistent_ro(context, tensor, shape: Sequence[int]) -> None:
    """An output written in prepare and constant afterwards, so that downstream kernels can read it
    in their prepare (SetTensorToPersistentRo)."""
    context.set_tensor_to_persistent_ro(tensor)
    context.resize_tensor(tensor, shape)


def _set_type(tensor, tensor_type: TensorType) -> None:
    """Give an output the type the kernel produces, as TFLite kernels do (`output->type = ...`)."""
    if tensor.type != tensor_type:
        tensor.type = tensor_type
        tensor.data = None  # memory of the old type is dropped; the following resize gives new memory


def _ensure_same_quantization(source, output, op: str) -> None:
    ensure_eq(source.params.scale, output.params.scale, f"{op} input/output scale")
    ensure_eq(source.params.zero_point, output.params.zero_point, f"{op} input/output zero point")


def _values(tensor) -> list[int]:
    """The integer values of a shape/axis/multiples tensor."""
    return [int(v) for v in tensor.data.reshape(-1).tolist()]


def _scalar_value(tensor) -> int:
    """The first element of an int32 or int64 axis tensor (TFLite reads element 0)."""
    values = _values(tensor)
    ensure(len(values) > 0, "axis tensor is empty")
    return values[0]


def _copy(context, node) -> None:
    """Invoke for a kernel whose output holds the input's elements in the same order."""
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    np.copyto(out, tensors[node.inputs[0]].data.reshape(out.shape))


def _noop(context, node) -> None:
    """Invoke for a kernel whose output was written in prepare."""


# --- RESHAPE ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReshapeData:
    shape_known: bool


def _requested_shape(context, node) -> list[int]:
    shape_tensor = optional_input_tensor(context, node, 1)
    if shape_tensor is not None and len(shape_tensor.shape) == 1 and shape_tensor.type == TensorType.INT32:
        return [int(d) for d in shape_tensor.data]
    requested = list(node.builtin_data.new_shape)
    if requested == [0]:  # legacy converters wrote [0] for a scalar
        requested = []
    return requested


def _prod64(dims) -> int:
    """int(np.prod(dims, dtype=np.int64)) without NumPy's per-call cost (which prepare pays at every
    WHILE iteration that re-prepares a RESHAPE); NumPy's wrap-around is kept for overflowing products."""
    product = math.prod(dims)
    return product if -(2**63) <= product < 2**63 else int(np.prod(dims, dtype=np.int64))


def resolve_reshape(input_shape: tuple[int, ...], requested: list[int]) -> tuple[int, ...]:
    """Fill in the one -1 dimension and check the element counts agree (reshape_utils)."""
    count = _prod64(input_shape)
    nonzero_count = _prod64([d for d in input_shape if d != 0])
    stretch = [i for i, d in enumerate(requested) if d == -1]
    ensure(len(stretch) <= 1, "Reshape: only one dimension may be -1")
    ensure(
        all(d >= 0 for i, d in enumerate(requested) if i not in stretch),
        "output shape contains negative dimension",
    )
    shape = list(requested)
    if stretch:
        known = [d for i, d in enumerate(requested) if i != stretch[0]]
        known_nonzero = _prod64([d for d in known if d != 0])
        if count == 0 and _prod64(known) != 0:
            shape[stretch[0]] = 0
        else:
            shape[stretch[0]] = nonzero_count // known_nonzero if known_nonzero else 0
    total = _prod64(shape)
    if total != count:
        raise KernelError(f"num_input_elements != num_output_elements ({count} != {total})")
    return tuple(shape)


def reshape_prepare(context, node):
    check_arity(node, (1, 2))
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_eq(source.type, output.type, "RESHAPE input/output type")
    shape_tensor = optional_input_tensor(context, node, 1)
    if shape_tensor is None or is_constant(shape_tensor):
        node.user_data = ReshapeData(shape_known=True)
        context.resize_tensor(output, resolve_reshape(source.shape, _requested_shape(context, node)))
        return Status.OK
    node.user_data = ReshapeData(shape_known=False)
    return Status.OUTPUT_SHAPE_NOT_KNOWN


def reshape_invoke(context, node):
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    if not node.user_data.shape_known:
        context.set_tensor_to_dynamic(output)
        context.resize_tensor(output, resolve_reshape(source.shape, _requested_shape(context, node)))
    output.data[...] = source.data.reshape(output.data.shape)


# --- SQUEEZE, EXPAND_DIMS ----------------------------------------------------------------------------------


def squeeze_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "SQUEEZE")
    ensure_types_eq(source, output, "SQUEEZE input/output types")
    shape = source.shape
    rank = len(shape)
    ensure(rank <= 8, "input_num_dims <= 8 was not true.")
    requested = list(node.builtin_data.squeeze_dims or ())
    if not requested:
        squeezed = {i for i, d in enumerate(shape) if d == 1}
    else:
        squeezed = set()
        for dim in requested:
            current = dim + rank if dim < 0 else dim
            ensure(
                0 <= current < rank and shape[current] == 1,
                f"SQUEEZE: squeeze_dims entry {dim} is not a dimension of size 1 of an input of shape "
                f"{list(shape)} (current >= 0 && current < input_num_dims && "
                "input_dims->data[current] == 1 was not true.)",
            )
            squeezed.add(current)
    context.resize_tensor(output, tuple(d for i, d in enumerate(shape) if i not in squeezed))


def _expanded_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    if axis < 0:
        axis += len(shape) + 1
    ensure(axis <= len(shape), "axis <= input_dims.size was not true.")
    ensure(axis >= 0, "axis >= 0 was not true.")
    return (*shape[:axis], 1, *shape[axis:])


def _expand_dims_axis(axis) -> int:
    ensure_eq(len(_values(axis)), 1, "EXPAND_DIMS axis element count")
    return _scalar_value(axis)


@dataclass(frozen=True)
class DynamicShapeData:
    dynamic: bool  # the output shape is computed from a runtime tensor at each invoke


def expand_dims_prepare(context, node):
    check_arity(node, 2)
    source, axis, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, ANY_TYPE, "input", "EXPAND_DIMS")
    ensure_type(axis, _INDEX, "axis", "EXPAND_DIMS")
    _set_type(output, source.type)
    _ensure_same_quantization(source, output, "EXPAND_DIMS")
    if source.type == T.INT16:
        ensure_eq(source.params.zero_point, 0, "EXPAND_DIMS int16 input zero point")
    if is_constant(axis):
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _expanded_shape(source.shape, _expand_dims_axis(axis)))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def expand_dims_invoke(context, node):
    tensors = context.tensors
    if node.user_data.dynamic:
        source = tensors[node.inputs[0]]
        axis = _expand_dims_axis(tensors[node.inputs[1]])
        context.resize_tensor(tensors[node.outputs[0]], _expanded_shape(source.shape, axis))
    _copy(context, node)


# --- SHAPE, RANK -------------------------------------------------------------------------------------------


def shape_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "SHAPE")
    out_type = node.builtin_data.out_type
    if out_type not in _INDEX:
        raise KernelError(f"Unknown shape output data type: {_C_TYPE_NUMBER.get(out_type, 0)}")
    _set_type(output, out_type)
    _set_persistent_ro(context, output, (len(source.shape),))
    output.data[...] = source.shape


def rank_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, ANY_TYPE, "input", "RANK")
    _set_type(output, T.INT32)
    _set_persistent_ro(context, output, ())
    output.data[...] = len(source.shape)


# --- FILL --------------------------------------------------------------------------------------------------

_FILL_TYPES = (*_SIZED, T.STRING)


def _fill_shape(dims) -> tuple[int, ...]:
    shape = _values(dims)
    if any(d < 0 for d in shape):
        raise KernelError(f"Fill dimensions must be >= 0 got {_C_TYPE_NUMBER[dims.type]}")
    return tuple(shape)


def fill_prepare(context, node):
    check_arity(node, 2)
    dims, value, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_eq(len(dims.shape), 1, "FILL dims rank")
    ensure_type(dims, _INDEX, "dims", "FILL")
    ensure_eq(len(value.shape), 0, "FILL value rank")
    ensure_type(value, _FILL_TYPES, "value", "FILL")
    _set_type(output, value.type)
    _ensure_same_quantization(value, output, "FILL")
    if value.type == T.INT16:
        ensure_eq(value.params.zero_point, 0, "FILL int16 value zero point")
    if is_constant(dims):
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _fill_shape(dims))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def fill_invoke(context, node):
    tensors = context.tensors
    output = tensors[node.outputs[0]]
    if node.user_data.dynamic:
        context.resize_tensor(output, _fill_shape(tensors[node.inputs[0]]))
    np.copyto(output.data, tensors[node.inputs[1]].data)


# --- RANGE -------------------------------------------------------------------------------------------------

_RANGE_TYPES = (T.FLOAT32, T.INT32, T.INT64)


def _range_size(start, limit, delta) -> int:
    """The element count of [start, limit) by delta, computed as TFLite does for the element type."""
    ensure(delta != 0, "!std::equal_to<T>()(delta, 0) was not true.")
    ensure(
        (start >= limit and delta < 0) or (start <= limit and delta > 0),
        "(start >= limit && delta < 0) || (start <= limit && delta > 0) was not true.",
    )
    if isinstance(start, np.floating):
        with np.errstate(all="ignore"):
            size = np.ceil(np.abs((limit - start) / delta))
        ensure(np.isfinite(size), f"RANGE: the element count {size} is not finite")
        return int(size)
    start, limit, delta = int(start), int(limit), int(delta)
    return (abs(limit - start) + abs(delta) - 1) // abs(delta)


def _range_fill(context, node) -> None:
    tensors = context.tensors
    start, limit, delta = (tensors[i].data.reshape(()) for i in node.inputs)
    output = tensors[node.outputs[0]]
    context.resize_tensor(output, (_range_size(start[()], limit[()], delta[()]),))
    out = output.data
    if out.size:
        out[0] = start
        out[1:] = delta
        np.add.accumulate(out, out=out)  # TFLite adds delta step by step: the same float rounding


def range_prepare(context, node):
    check_arity(node, 3)
    start, limit, delta = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_eq(len(start.shape), 0, "RANGE start rank")
    ensure_eq(len(limit.shape), 0, "RANGE limit rank")
    ensure_eq(len(delta.shape), 0, "RANGE delta rank")
    if start.type not in _RANGE_TYPES:
        raise KernelError(f"Unknown index output data type: {type_name(start.type)}")
    ensure_types_eq(limit, start, "RANGE limit/start types")
    ensure_types_eq(delta, start, "RANGE delta/start types")
    _set_type(output, start.type)
    if is_constant(start) and is_constant(limit) and is_constant(delta):
        context.set_tensor_to_persistent_ro(output)
        node.user_data = DynamicShapeData(False)
        _range_fill(context, node)
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def range_invoke(context, node):
    if node.user_data.dynamic:
        _range_fill(context, node)


# --- BROADCAST_TO, BROADCAST_ARGS ---------------------------------------------------------------------------

_BROADCAST_TO_TYPES = (*_SIZED, T.COMPLEX128)


def _broadcast_to_shape(source_shape: tuple[int, ...], shape_tensor) -> tuple[int, ...]:
    ensure_eq(len(shape_tensor.shape), 1, "BROADCAST_TO shape rank")
    target = _values(shape_tensor)
    message = "Output shape must be broadcastable from input shape."
    ensure(len(source_shape) <= len(target), message)
    extra = len(target) - len(source_shape)
    for i, d in enumerate(source_shape):
        ensure(d == 1 or d == target[extra + i], message)
    return tuple(target)


def broadcast_to_prepare(context, node):
    check_arity(node, 2)
    source, shape, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(shape, _INDEX, "shape", "BROADCAST_TO")
    ensure_types_eq(source, output, "BROADCAST_TO input/output types")
    ensure_type(source, _BROADCAST_TO_TYPES, "input", "BROADCAST_TO")
    if is_constant(shape):
        node.user_data = DynamicShapeData(False)
        context.resize_tensor(output, _broadcast_to_shape(source.shape, shape))
    else:
        node.user_data = DynamicShapeData(True)
        context.set_tensor_to_dynamic(output)


def broadcast_to_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    if node.user_data.dynamic:
        context.resize_tensor(output, _broadcast_to_shape(source.shape, tensors[node.inputs[1]]))
    np.copyto(output.data, source.data)


def _broadcast_args(context, node) -> None:
    tensors = context.tensors
    first, second = (tensors[i].data for i in node.inputs)
    out = tensors[node.outputs[0]].data
    n = out.shape[0]
    a = np.concatenate([np.ones(n - first.shape[0], first.dtype), first])
    b = np.concatenate([np.ones(n - second.shape[0], second.dtype), second])
    if np.any((a != 1) & (b != 1) & (a != b)):
        raise KernelError(
            f"BROADCAST_ARGS: shapes {first.tolist()} and {second.tolist()} are not broadcastable"
        )
    np.copyto(out, np.where(a == 1, b, a))


def broadcast_args_prepare(context, node):
    check_arity(node, 2)
    first, second, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(first, _INDEX, "shape1", "BROADCAST_ARGS")
    ensure_types_eq(first, second, "BROADCAST_ARGS shape1/shape2 types")
    ensure_types_eq(first, output, "BROADCAST_ARGS shape1/output types")
    ensure_eq(len(first.shape), 1, "BROADCAST_ARGS shape1 rank")
    ensure_eq(len(second.shape), 1, "BROADCAST_ARGS shape2 rank")
    shape = (max(first.shape[0], second.shape[0]),)
    if is_constant(first) and is_constant(second):
        _set_persistent_ro(context, output, shape)
        node.user_data = DynamicShapeData(False)
        _broadcast_args(context, node)
    else:
        node.user_data = DynamicShapeData(True)
        context.resize_tensor(output, shape)


def broadcast_args_invoke(context, node):
    if node.user_data.dynamic:
        _broadcast_args(context, node)


# --- TRANSPOSE ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransposeData:
    perm: tuple[int, ...] | None  # None: the perm tensor is computed at run time


def _resolve_perm(shape: tuple[int, ...], perm_tensor) -> tuple[int, ...]:
    rank = len(shape)
    ensure_eq(len(perm_tensor.shape), 1, "TRANSPOSE perm rank")
    ensure_eq(perm_tensor.shape[0], rank, "TRANSPOSE perm size vs input rank")
    perm = []
    for value in _values(perm_tensor):
        ensure(-rank <= value < rank, "Transpose op permutations array is out of bounds.")
        perm.append(value + rank if value < 0 else value)
    ensure(len(set(perm)) == rank, f"Transpose op permutations array {perm} repeats a dimension.")
    return tuple(perm)


def transpose_prepare(context, node):
    check_arity(node, 2)
    source, perm, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure(len(source.shape) <= 8, "Transpose op only supports 1D-8D input arrays.")
    ensure_types_eq(source, output, "TRANSPOSE input/output types")
    ensure_type(source, _SIZED, "input", "TRANSPOSE")
    ensure_type(perm, T.INT32, "perm", "TRANSPOSE")
    if not is_constant(perm):
        node.user_data = TransposeData(None)
        context.set_tensor_to_dynamic(output)
        return
    resolved = _resolve_perm(source.shape, perm)
    node.user_data = TransposeData(resolved)
    context.resize_tensor(output, tuple(source.shape[p] for p in resolved))


def transpose_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]]
    perm = node.user_data.perm
    output = tensors[node.outputs[0]]
    if perm is None:
        perm = _resolve_perm(source.shape, tensors[node.inputs[1]])
        context.resize_tensor(output, tuple(source.shape[p] for p in perm))
    np.copyto(output.data, source.data.transpose(perm))


# --- CONCATENATION -----------------------------------------------------------------------------------------

_CONCATENATION_TYPES = (
    T.FLOAT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.UINT8,
    T.INT8,
    T.INT16,
    T.INT32,
    T.INT64,
    T.BOOL,
    T.UINT32,
)


@dataclass(frozen=True)
class AxisData:
    axis: int


@dataclass(frozen=True)
class ConcatenationData:
    axis: int
    inputs: tuple[int, ...]  # the inputs with elements: empty ones add nothing
    folded: bool  # the output was written in prepare
    # uint8 inputs whose quantization differs from the output's: (input, output region, 256-entry
    # requantization table) for every nonempty input, in order; None when every input is copied as is
    rescaled: tuple[tuple[int, tuple, np.ndarray | None], ...] | None = None


def _concatenate(context, node) -> None:
    tensors = context.tensors
    data = node.user_data
    if data.rescaled is not None:
        out = tensors[node.outputs[0]].data
        for index, region, table in data.rescaled:
            if table is None:
                out[region] = tensors[index].data
            else:
                out[region] = table[tensors[index].data]
    elif data.inputs:
        np.concatenate(
            [tensors[i].data for i in data.inputs], axis=data.axis, out=tensors[node.outputs[0]].data
        )


def _uint8_rescale_table(source, output) -> np.ndarray:
    """TFLite's ConcatenationWithScaling for one uint8 input, over every input value: in float32,
    round(q * scale + bias) + output zero point, with scale = input scale * (1 / output scale) and
    bias = -input zero point * scale, rounded half away from zero and clamped to [0, 255]."""
    f32 = np.float32
    scale = f32(source.params.scale) * (f32(1) / f32(output.params.scale))
    bias = f32(-source.params.zero_point) * scale
    values = np.arange(256, dtype=np.float32) * scale + bias
    whole = np.trunc(values)
    rounded = whole + np.where(np.abs(values - whole) >= f32(0.5), np.sign(values), f32(0))
    return np.clip(rounded.astype(np.int64) + output.params.zero_point, 0, 255).astype(np.uint8)


def _concatenation_rescaling(inputs, node_inputs, output, axis: int):
    """The per-input copy plan of a uint8 concatenation when some input needs requantizing, else None."""
    if output.type != T.UINT8 or all(
        t.params.scale == output.params.scale and t.params.zero_point == output.params.zero_point
        for t in inputs
    ):
        return None
    plan, begin = [], 0
    for index, t in zip(node_inputs, inputs):
        size = t.shape[axis]
        if size > 0:
            same = t.params.scale == output.params.scale and t.params.zero_point == output.params.zero_point
            region = (slice(None),) * axis + (slice(begin, begin + size),)
            plan.append((index, region, None if same else _uint8_rescale_table(t, output)))
        begin += size
    return tuple(plan)


def concatenation_prepare(context, node):
    options = node.builtin_data
    ensure(len(node.inputs) >= 1, "CONCATENATION needs at least one input")
    check_arity(node, len(node.inputs))
    inputs = [input_tensor(context, node, i) for i in range(len(node.inputs))]
    first, output = inputs[0], output_tensor(context, node)
    rank = len(first.shape)
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(axis >= 0, "axis >= 0 was not true.")
    ensure(
        axis < rank or (rank == 0 and axis == 0),
        "axis < t0->dims->size || (t0->dims->size == 0 && axis == 0) was not true.",
    )
    ensure_eq(
        ActivationFunctionType(options.fused_activation_function).name,
        "NONE",
        "CONCATENATION fused activation",
    )
    ensure_type(first, _CONCATENATION_TYPES, "input", "CONCATENATION")
    all_constant = all(is_constant(t) for t in inputs)
    if all_constant and rank == 0:  # constant scalars make a vector, copied without requantizing
        for t in inputs[1:]:
            ensure_eq(len(t.shape), 0, "CONCATENATION input rank")
            ensure_types_eq(t, first, "CONCATENATION input types")
        ensure_types_eq(output, first, "CONCATENATION output/input types")
        _set_persistent_ro(context, output, (len(inputs),))
        node.user_data = ConcatenationData(0, (), folded=True)
        np.copyto(output.data, [t.data.reshape(()) for t in inputs])
        return
    ensure(rank > 0, "t0->dims->size > 0 was not true.")
    total = first.shape[axis]
    for t in inputs[1:]:
        ensure_eq(len(t.shape), rank, "CONCATENATION input rank")
        ensure_types_eq(t, first, "CONCATENATION input types")
        for d in range(rank):
            if d == axis:
                total += t.shape[d]
            else:
                ensure_eq(t.shape[d], first.shape[d], f"CONCATENATION input dimension {d}")
    shape = (*first.shape[:axis], total, *first.shape[axis + 1 :])
    ensure_types_eq(output, first, "CONCATENATION output/input types")
    if first.type == T.INT8:  # uint8 inputs are requantized; int8 ones must not need it
        for t in inputs:
            ensure_eq(t.params.scale, output.params.scale, f"CONCATENATION input {t.index} / output scale")
            ensure_eq(
                t.params.zero_point,
                output.params.zero_point,
                f"CONCATENATION input {t.index} / output zero point",
            )
    if first.type == T.INT16:
        for t in inputs:
            ensure_eq(t.params.zero_point, 0, "CONCATENATION int16 input zero point")
        ensure_eq(output.params.zero_point, 0, "CONCATENATION int16 output zero point")
    nonempty = tuple(i for i, t in zip(node.inputs, inputs) if t.shape[axis] > 0)
    empty = _prod64(shape) == 0
    node.user_data = ConcatenationData(
        axis,
        () if empty else nonempty,
        all_constant,
        None if empty else _concatenation_rescaling(inputs, node.inputs, output, axis),
    )
    if all_constant:
        _set_persistent_ro(context, output, shape)
        _concatenate(context, node)
    else:
        context.resize_tensor(output, shape)


def concatenation_invoke(context, node):
    if not node.user_data.folded:
        _concatenate(context, node)


# --- SPLIT, SPLIT_V ----------------------------------------------------------------------------------------

_SPLIT_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)


@dataclass(frozen=True)
class SplitData:
    slices: tuple[tuple[slice, ...], ...] | None  # None: computed at each invoke


def _split_axis(axis_tensor, rank: int) -> int:
    axis = _scalar_value(axis_tensor)
    if axis < 0:
        axis += rank
    ensure(axis >= 0, "axis_value >= 0 was not true.")
    ensure(axis < rank, "axis_value < NumDimensions(input) was not true.")
    return axis


def _split_slices(shape: tuple[int, ...], axis: int, sizes: Sequence[int]) -> tuple[tuple[slice, ...], ...]:
    slices, begin = [], 0
    for size in sizes:
        slices.append((slice(None),) * axis + (slice(begin, begin + size),))
        begin += size
    return tuple(slices)


def _resize_split_outputs(context, node, shape, axis, sizes) -> tuple[tuple[slice, ...], ...]:
    for i, size in zip(node.outputs, sizes):
        context.resize_tensor(context.tensors[i], (*shape[:axis], size, *shape[axis + 1 :]))
    return _split_slices(shape, axis, sizes)


def _split_plan(context, node) -> tuple[tuple[slice, ...], ...]:
    axis_tensor, source = input_tensor(context, node, 0), input_tensor(context, node, 1)
    axis = _split_axis(axis_tensor, len(source.shape))
    count = node.builtin_data.num_splits
    ensure(count != 0, "num_splits != 0 was not true.")
    ensure(source.shape[axis] % count == 0, "Not an even split")
    return _resize_split_outputs(context, node, source.shape, axis, [source.shape[axis] // count] * count)


def _prepare_split_outputs(context, node, source, known: bool, plan) -> None:
    for i in node.outputs:
        _set_type(context.tensors[i], source.type)
    if known:
        node.user_data = SplitData(plan(context, node))
    else:
        node.user_data = SplitData(None)
        for i in node.outputs:
            context.set_tensor_to_dynamic(context.tensors[i])


def split_prepare(context, node):
    ensure_eq(len(node.inputs), 2, "SPLIT input count")
    ensure_eq(len(node.outputs), node.builtin_data.num_splits, "SPLIT output count vs num_splits")
    axis, source = input_tensor(context, node, 0), input_tensor(context, node, 1)
    ensure_type(source, _SPLIT_TYPES, "input", "SPLIT")
    ensure_type(axis, _INDEX, "axis", "SPLIT")
    _prepare_split_outputs(context, node, source, is_constant(axis), _split_plan)


def _split_copy(context, node, source_index: int, plan) -> None:
    tensors = context.tensors
    slices = node.user_data.slices
    if slices is None:
        slices = plan(context, node)
    source = tensors[node.inputs[source_index]].data
    for i, where in zip(node.outputs, slices):
        np.copyto(tensors[i].data, source[where])


def split_invoke(context, node):
    _split_copy(context, node, 1, _split_plan)


def _split_v_plan(context, node) -> tuple[tuple[slice, ...], ...]:
    source, size_splits, axis_tensor = (input_tensor(context, node, i) for i in range(3))
    axis = _scalar_value(axis_tensor)
    if axis < 0:
        axis += len(source.shape)
    sizes = _values(size_splits)
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise KernelError("The size_splits contains more than one -1.")
    known_sum = sum(s for s in sizes if s != -1)
    ensure(axis >= 0, "axis_value >= 0 was not true.")
    ensure(axis < len(source.shape), "axis_value < NumDimensions(input) was not true.")
    size = source.shape[axis]
    if unknown:
        if known_sum > size:
            raise KernelError("The sum of size_splits must be less than the dimension of value.")
        sizes[unknown[0]] = size - known_sum
    elif known_sum != size:
        raise KernelError("The size_splits must sum to the dimension of value along axis.")
    ensure(all(s >= 0 for s in sizes), f"SPLIT_V: size_splits {sizes} contains a negative size")
    return _resize_split_outputs(context, node, source.shape, axis, sizes)


def split_v_prepare(context, node):
    ensure_eq(len(node.inputs), 3, "SPLIT_V input count")
    ensure_eq(len(node.outputs), node.builtin_data.num_splits, "SPLIT_V output count vs num_splits")
    source, size_splits, axis = (input_tensor(context, node, i) for i in range(3))
    ensure_type(source, _SPLIT_TYPES, "input", "SPLIT_V")
    if size_splits.type not in _INDEX:
        raise KernelError("size_splits only support type int32|int64.")
    ensure_type(axis, _INDEX, "axis", "SPLIT_V")
    ensure_eq(len(size_splits.shape), 1, "SPLIT_V size_splits rank")
    ensure_eq(len(node.outputs), size_splits.shape[0], "SPLIT_V output count vs size_splits size")
    known = is_constant(size_splits) and is_constant(axis)
    _prepare_split_outputs(context, node, source, known, _split_v_plan)


def split_v_invoke(context, node):
    _split_copy(context, node, 0, _split_v_plan)


# --- PACK, UNPACK ------------------------------------------------------------------------------------------

_PACK_TYPES = (T.INT32, T.FLOAT32, T.UINT8, T.UINT32, T.INT8, T.INT16, T.INT64)
_UNPACK_TYPES = (T.INT32, T.FLOAT32, T.FLOAT16, T.BFLOAT16, T.UINT8, T.INT8, T.INT16, T.BOOL)


def pack_prepare(context, node):
    options = node.builtin_data
    ensure_eq(len(node.inputs), options.values_count, "PACK input count vs values_count")
    check_arity(node, len(node.inputs))
    inputs = [input_tensor(context, node, i) for i in range(len(node.inputs))]
    first, output = inputs[0], output_tensor(context, node)
    rank = len(first.shape) + 1
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(len(first.shape) >= axis, "NumDimensions(input0) >= data->axis was not true.")
    ensure(axis >= 0, "data->axis >= 0 was not true.")
    if first.type not in _PACK_TYPES:
        raise KernelError(f"Type '{type_name(first.type)}' is not supported by pack.")
    for t in inputs[1:]:
        ensure(t.shape == first.shape, f"PACK: input shapes {list(first.shape)} and {list(t.shape)} differ")
        ensure_types_eq(first, t, "PACK input types")
    ensure_types_eq(output, first, "PACK output/input types")
    for t in inputs:
        _ensure_same_quantization(t, output, "PACK")
    node.user_data = AxisData(axis)
    context.resize_tensor(output, (*first.shape[:axis], len(inputs), *first.shape[axis:]))


def pack_invoke(context, node):
    tensors = context.tensors
    np.stack(
        [tensors[i].data for i in node.inputs], axis=node.user_data.axis, out=tensors[node.outputs[0]].data
    )


@dataclass(frozen=True)
class UnpackData:
    slices: tuple[tuple, ...]


def unpack_prepare(context, node):
    options = node.builtin_data
    check_arity(node, 1, len(node.outputs))
    ensure_eq(len(node.outputs), options.num, "UNPACK output count vs num")
    source = input_tensor(context, node, 0)
    shape = source.shape
    ensure(int(np.prod(shape, dtype=np.int64)) > 0, "NumElements(input) > 0 was not true.")
    rank = len(shape)
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(0 <= axis < rank, "0 <= axis && axis < NumDimensions(input) was not true.")
    if source.type not in _UNPACK_TYPES:
        raise KernelError(f"Type '{type_name(source.type)}' is not supported by unpack.")
    ensure_eq(options.num, shape[axis], "UNPACK num vs input dimension")
    out_shape = shape[:axis] + shape[axis + 1 :]
    for i in range(len(node.outputs)):
        output = output_tensor(context, node, i)
        ensure_types_eq(output, source, "UNPACK output/input types")
        _ensure_same_quantization(source, output, "UNPACK")
        context.resize_tensor(output, out_shape)
    node.user_data = UnpackData(tuple((slice(None),) * axis + (i,) for i in range(options.num)))


def unpack_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]].data
    for i, where in zip(node.outputs, node.user_data.slices):
        np.copyto(tensors[i].data, source[where])


# --- TILE --------------------------------------------------------------------------------------------------

_TILE_TYPES = (*_SIZED, T.STRING)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class TilePlan:
    source_view: tuple[int, ...]  # the input as (1, d0, 1, d1, ...)
    output_view: tuple[int, ...]  # the output as (m0, d0, m1, d1, ...): copying broadcasts the input


@dataclass(frozen=True)
class TileData:
    plan: TilePlan | None  # None: multiples computed at run time
    folded: bool  # the output was written in prepare


def _tile_plan(context, node) -> TilePlan:
    tensors = context.tensors
    source, multiples, output = tensors[node.inputs[0]], tensors[node.inputs[1]], tensors[node.outputs[0]]
    shape = source.shape
    counts = _values(multiples)
    ensure_eq(len(shape), len(counts), "TILE input rank vs multiples count")
    out_shape = []
    for d, m in zip(shape, counts):
        if m < 0:
            raise KernelError("Multipliers must be non-negative.")
        if d < 0 or (d > 0 and m > _INT32_MAX // d):
            raise KernelError(
                f"Cannot multiply {d} and {m}. Output shape dimensions must be in range [0, INT32_MAX]."
            )
        out_shape.append(d * m)
    context.resize_tensor(output, out_shape)
    return TilePlan(
        tuple(x for d in shape for x in (1, d)),
        tuple(x for d, m in zip(shape, counts) for x in (m, d)),
    )


def _tile(context, node, plan: TilePlan) -> None:
    tensors = context.tensors
    np.copyto(
        tensors[node.outputs[0]].data.reshape(plan.output_view),
        tensors[node.inputs[0]].data.reshape(plan.source_view),
    )


def tile_prepare(context, node):
    check_arity(node, 2)
    source, multiples, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_types_eq(source, output, "TILE input/output types")
    if multiples.type not in _INDEX:
        raise KernelError(f"Multipliers of type '{type_name(multiples.type)}' are not supported by tile.")
    ensure_type(source, _TILE_TYPES, "input", "TILE")
    if not is_constant(multiples):
        node.user_data = TileData(None, False)
        context.set_tensor_to_dynamic(output)
        return
    folded = is_constant(source)
    if folded:
        context.set_tensor_to_persistent_ro(output)
    plan = _tile_plan(context, node)
    node.user_data = TileData(plan, folded)
    if folded:
        _tile(context, node, plan)


def tile_invoke(context, node):
    data = node.user_data
    if data.folded:
        return
    plan = data.plan
    if plan is None:
        plan = _tile_plan(context, node)
    _tile(context, node, plan)


# --- REVERSE_V2 --------------------------------------------------------------------------------------------

_REVERSE_TYPES = (T.INT32, T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT64, T.BOOL, T.FLOAT16, T.BFLOAT16)


@dataclass(frozen=True)
class ReverseData:
    axes: tuple[int, ...] | None  # None: resolved at each invoke
    error: str | None = None  # a constant axis tensor TFLite rejects when the node is invoked


def _reverse_axes(values: list[int], rank: int) -> tuple[int, ...]:
    ensure(len(values) <= 8, "num_axes <= 8 was not true.")
    axes = []
    for value in values:
        axis = value + rank if value < 0 else value
        ensure(0 <= axis < rank, "axes[i] >= 0 && axes[i] < rank was not true.")
        axes.append(axis)
    axes.sort()
    if any(a + 1 != b for a, b in itertools.pairwise(axes)):
        raise KernelError("Non-contiguous `axes` not supported")
    return tuple(axes)


def reverse_prepare(context, node):
    check_arity(node, 2)
    source, axis, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_eq(len(axis.shape), 1, "REVERSE_V2 axis rank")
    ensure(len(source.shape) <= 8, "NumDimensions(input) <= 8 was not true.")
    ensure(len(source.shape) >= axis.shape[0], "NumDimensions(input) >= NumElements(axis) was not true.")
    if source.type not in _REVERSE_TYPES:
        raise KernelError(f"Type '{type_name(source.type)}' is not supported by reverse.")
    if axis.type != T.INT32:
        raise KernelError(f"Axis Type '{type_name(axis.type)}' is not supported by reverse.")
    ensure_types_eq(output, source, "REVERSE_V2 output/input types")
    context.resize_tensor(output, source.shape)
    if not is_constant(axis):
        node.user_data = ReverseData(None)
        return
    try:  # TFLite checks the axes when it invokes the node: so do we, with the constant resolved now
        node.user_data = ReverseData(_reverse_axes(_values(axis), len(source.shape)))
    except KernelError as error:
        node.user_data = ReverseData(None, str(error))


def reverse_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    if data.error is not None:
        raise KernelError(data.error)
    source = tensors[node.inputs[0]].data
    axes = data.axes
    if axes is None:
        axes = _reverse_axes(_values(tensors[node.inputs[1]]), source.ndim)
    np.copyto(tensors[node.outputs[0]].data, np.flip(source, axes) if axes else source)


# --- registration ------------------------------------------------------------------------------------------

B = BuiltinOperator
register_builtin(B.RESHAPE, (1, 1), types=ANY_TYPE, prepare=reshape_prepare, invoke=reshape_invoke)
register_builtin(B.SQUEEZE, (1, 2), types=ANY_TYPE, prepare=squeeze_prepare, invoke=_copy)
register_builtin(
    B.EXPAND_DIMS, (1, 1), types=ANY_TYPE, prepare=expand_dims_prepare, invoke=expand_dims_invoke
)
register_builtin(B.SHAPE, (1, 1), types=ANY_TYPE, prepare=shape_prepare, invoke=_noop)
register_builtin(B.RANK, (1, 1), types=ANY_TYPE, prepare=rank_prepare, invoke=_noop)
register_builtin(B.FILL, (1, 5), types=_FILL_TYPES, prepare=fill_prepare, invoke=fill_invoke)
register_builtin(B.RANGE, (1, 2), types=_RANGE_TYPES, prepare=range_prepare, invoke=range_invoke)
register_builtin(
    B.BROADCAST_TO,
    (2, 4),
    types=_BROADCAST_TO_TYPES,
    prepare=broadcast_to_prepare,
    invoke=broadcast_to_invoke,
)
register_builtin(
    B.BROADCAST_ARGS, (1, 1), types=_INDEX, prepare=broadcast_args_prepare, invoke=broadcast_args_invoke
)
register_builtin(B.TRANSPOSE, (1, 9), types=_SIZED, prepare=transpose_prepare, invoke=transpose_invoke)
register_builtin(
    B.CONCATENATION,
    (1, 7),
    types=_CONCATENATION_TYPES,
    prepare=concatenation_prepare,
    invoke=concatenation_invoke,
)
register_builtin(B.SPLIT, (1, 5), types=_SPLIT_TYPES, prepare=split_prepare, invoke=split_invoke)
register_builtin(B.SPLIT_V, (1, 3), types=_SPLIT_TYPES, prepare=split_v_prepare, invoke=split_v_invoke)
register_builtin(B.PACK, (1, 5), types=_PACK_TYPES, prepare=pack_prepare, invoke=pack_invoke)
register_builtin(B.UNPACK, (1, 6), types=_UNPACK_TYPES, prepare=unpack_prepare, invoke=unpack_invoke)
register_builtin(B.TILE, (1, 3), types=_TILE_TYPES, prepare=tile_prepare, invoke=tile_invoke)
register_builtin(B.REVERSE_V2, (1, 4), types=_REVERSE_TYPES, prepare=reverse_prepare, invoke=reverse_invoke)

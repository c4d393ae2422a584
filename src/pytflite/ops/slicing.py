"""Slicing and padding: SLICE, STRIDED_SLICE, PAD, PADV2, MIRROR_PAD, DYNAMIC_UPDATE_SLICE, REVERSE_SEQUENCE.

These kernels only move elements, so they copy raw values of any element type their TFLite kernel
accepts (quantized values keep their quantization). Prepare turns begin/size/end/strides/paddings into
NumPy slice tuples when those tensors are constant; invoke is then one slicing copy into the output. A
computed index tensor makes the output dynamic (its shape depends on values): the plan is made at
invoke and the output resized first.

STRIDED_SLICE follows TFLite's index arithmetic exactly: the ellipsis and new-axis masks are expanded
into an "effective" input shape, begin/end are normalised and clamped per axis (to [0, n] going forward,
[-1, n-1] going backward), masks override them, and shrunk axes are dropped from the output. With
constant input, begin, end and strides the subgraph computes the result once after prepare, into a
persistent constant, as TFLite does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import AllocationType, BuiltinOperator, TensorType, num_elements, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import MirrorPadMode
from .common import (
    ANY_TYPE,
    check_arity,
    copy_step,
    ensure_same_quantization,
    input_tensor,
    optional_input_tensor,
    output_tensor,
)
from .registry import register_builtin

_PACKED = (TensorType.INT4, TensorType.UINT4, TensorType.INT2)  # sub-byte types are stored packed
_INDEX_TYPES = (TensorType.INT32, TensorType.INT64)

# TFLite copies these by element size (8/16/32/64 bits), strings by reference.
SLICE_TYPES = tuple(t for t in ANY_TYPE if t not in (*_PACKED, TensorType.COMPLEX128))
# Everything with a whole-byte element size.
UPDATE_TYPES = tuple(t for t in ANY_TYPE if t not in (*_PACKED, TensorType.STRING))
MIRROR_PAD_TYPES = tuple(t for t in UPDATE_TYPES if t != TensorType.COMPLEX128)
PAD_TYPES = (
    TensorType.FLOAT32,
    TensorType.FLOAT16,
    TensorType.BFLOAT16,
    TensorType.UINT8,
    TensorType.INT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
    TensorType.BOOL,
)
REVERSE_SEQUENCE_TYPES = (
    TensorType.FLOAT32,
    TensorType.UINT8,
    TensorType.INT16,
    TensorType.INT32,
    TensorType.INT64,
)
_QUANTIZED = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)


def _ints(tensor) -> list[int]:
    return tensor.data.reshape(-1).tolist() if tensor.data is not None else []


def _ensure_vector(tensor, what: str, op_name: str) -> None:
    ensure_eq(len(tensor.shape), 1, f"{op_name} {what} rank")


# --- SLICE ----------------------------------------------------------------------------------------


def plan_slice(shape: tuple[int, ...], begin: list[int], size: list[int]) -> tuple[tuple[int, ...], tuple]:
    """Output shape and slice tuple for SLICE; size -1 runs to the end of the axis."""
    out_shape, index = [], []
    for dim, start, extent in zip(shape, begin, size):
        if extent < 0:
            if extent != -1:
                raise KernelError("Invalid size.")
            extent = dim - start
        if start < 0 or extent < 0 or start + extent > dim:
            raise KernelError("Invalid begin and size.")
        out_shape.append(extent)
        index.append(slice(start, start + extent))
    return tuple(out_shape), tuple(index)


@dataclass(frozen=True, slots=True)
class SliceData:
    index: tuple  # the slice tuple that reads the output from the input


def slice_prepare(context, node):
    check_arity(node, 3)
    source, begin, size = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_type(source, SLICE_TYPES, "input", "SLICE")
    ensure_types_eq(source, output, "SLICE input/output types")
    ensure_type(begin, _INDEX_TYPES, "begin", "SLICE")
    ensure_type(size, _INDEX_TYPES, "size", "SLICE")
    _ensure_vector(begin, "begin", "SLICE")
    _ensure_vector(size, "size", "SLICE")
    ensure_eq(num_elements(begin.shape), num_elements(size.shape), "SLICE begin/size element counts")
    ensure_eq(num_elements(begin.shape), len(source.shape), "SLICE begin element count vs input rank")
    if not (begin.is_constant_or_persistent and size.is_constant_or_persistent):
        node.user_data = None
        context.set_tensor_to_dynamic(output)
        return
    out_shape, index = plan_slice(source.shape, _ints(begin), _ints(size))
    node.user_data = SliceData(index)
    context.resize_tensor(output, out_shape)


def slice_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    data = node.user_data
    if data is None:
        out_shape, index = plan_slice(
            source.shape, _ints(tensors[node.inputs[1]]), _ints(tensors[node.inputs[2]])
        )
        context.resize_tensor(output, out_shape)
    else:
        index = data.index
    output.data[...] = source.data[index]


register_builtin(
    BuiltinOperator.SLICE,
    (1, 8),
    types=SLICE_TYPES,
    op_data=SliceData,
    prepare=slice_prepare,
    invoke=slice_invoke,
)


# --- STRIDED_SLICE --------------------------------------------------------------------------------

_INT32_MIN = -(2**31)


def _bit(mask: int, i: int) -> bool:
    return i < 32 and bool((mask >> i) & 1)


def _clamp(value: int, low: int, high: int) -> int:
    return high if value > high else low if value < low else value


@dataclass(frozen=True)
class _Axis:
    """One axis of the effective (mask-expanded) input."""

    size: int
    begin: int
    end: int
    stride: int
    begin_mask: bool
    end_mask: bool
    shrink: bool


def _effective_axes(shape, begin, end, strides, options, with_indices: bool) -> list[_Axis]:
    """Expand the ellipsis and new-axis masks into per-axis parameters (TFLite's BuildStridedSliceParams)."""
    rank = len(shape)
    count = len(strides)
    ellipsis_mask = options.ellipsis_mask & 0xFFFFFFFF
    new_axis_mask = options.new_axis_mask & 0xFFFFFFFF
    added_axes = sum(1 for i in range(count) if not _bit(ellipsis_mask, i) and _bit(new_axis_mask, i))
    dims = rank + added_axes

    ellipsis_axes, new_axes = set(), set()
    ellipsis_start, expanded = dims, 0
    i = 0
    while i < dims:
        if _bit(ellipsis_mask, i):
            ellipsis_start = i
            stop = max(i + 1, min(i + 1 + added_axes + rank - count, dims))
            expanded = stop - ellipsis_start - 1
            ellipsis_axes.update(range(i, stop))
            i = stop
            continue
        if _bit(new_axis_mask, i - expanded):
            new_axes.add(i)
        i += 1

    axes: list[_Axis] = []
    added_ellipsis = inserted = 0
    for i in range(dims):
        if i in new_axes and i not in ellipsis_axes:
            axes.append(_Axis(1, 0, 1, 1, False, False, False))
            inserted += 1
            continue
        ensure(0 <= i - inserted < rank, "StridedSlice: the masks address more axes than the input has")
        size = shape[i - inserted]
        if i in ellipsis_axes:
            added_ellipsis = max(0, i - ellipsis_start)
            axes.append(_Axis(size, 0, 0, 1, True, True, False))
        elif i >= count + expanded:
            axes.append(_Axis(size, 0, 0, 1, True, True, False))
        else:
            j = i - added_ellipsis
            axes.append(
                _Axis(
                    size,
                    begin[j] if with_indices else 0,
                    end[j] if with_indices else 0,
                    strides[j],
                    _bit(options.begin_mask & 0xFFFFFFFF, j),
                    _bit(options.end_mask & 0xFFFFFFFF, j),
                    _bit(options.shrink_axis_mask & 0xFFFFFFFF, j),
                )
            )
    ensure(inserted == added_axes, "StridedSlice: new_axis_mask sets bits beyond the begin/end/strides given")
    return axes


def _start(axis: _Axis) -> int:
    start = axis.begin + axis.size if axis.begin < 0 else axis.begin
    start = _clamp(start, 0, axis.size) if axis.stride > 0 else _clamp(start, -1, axis.size - 1)
    if axis.begin_mask:
        start = 0 if axis.stride > 0 else axis.size - 1
    return start


def _stop(axis: _Axis, start: int, offset: bool) -> int:
    if axis.shrink:
        return start if start >= axis.size else start + 1
    end = axis.end + start if offset else axis.end
    if end < 0:
        end += axis.size
    end = _clamp(end, 0, axis.size) if axis.stride > 0 else _clamp(end, -1, axis.size - 1)
    if axis.end_mask:
        end = axis.size if axis.stride > 0 else -1
    return end


def _steps(start: int, stop: int, stride: int) -> int:
    """How many of start, start + stride, ... lie before stop (TFLite's loop condition)."""
    if stride > 0:
        return max(0, -(-(stop - start) // stride))
    return max(0, -(-(start - stop) // -stride))


def strided_slice_shape(shape, begin, end, strides, options) -> tuple[int, ...]:
    """The output shape as TFLite's ResizeOutputTensor computes it (with `offset`, end holds sizes)."""
    axes = _effective_axes(shape, begin, end, strides, options, with_indices=not options.offset)
    out_shape = []
    for idx, axis in enumerate(axes):
        ensure(axis.stride != 0, "stride value has to be non-zero")
        if axis.shrink:
            continue
        if options.offset:
            ensure(idx < len(end), "StridedSlice: offset slicing needs one size per output axis")
            extent = end[idx]
        else:
            start = _start(axis)
            extent = _stop(axis, start, False) - start
        ensure(axis.stride != _INT32_MIN, "stride value INT32_MIN is not supported")
        if (extent < 0) != (axis.stride < 0):
            extent = 0
        elif axis.stride < 0:
            extent = (extent + 1) // axis.stride + 1
        else:
            extent = 0 if extent == 0 else (extent - 1) // axis.stride + 1
        ensure(extent <= 2**31 - 1, f"StridedSlice: integer overflow computing output dim at axis {idx}")
        out_shape.append(extent)
    return tuple(out_shape)


@dataclass(frozen=True)
class StridedPlan:
    effective_shape: tuple[int, ...]
    index: tuple | None  # None: nothing to copy
    regroup: bool = False  # the visited elements fill the output in order, in another shape


def plan_strided_slice(shape, begin, end, strides, options, out_shape) -> StridedPlan:
    """The effective input shape and the index tuple that reads the output from it.

    TFLite writes the elements its loops visit, in order, into the output it sized beforehand. The two
    can disagree (a shrunk axis with nothing to select, an `offset` slice clamped at the input's end):
    when the counts still match the visited elements fill the output in order; otherwise TFLite
    leaves elements unwritten or writes past the output, and this fails instead."""
    axes = _effective_axes(shape, begin, end, strides, options, with_indices=True)
    index, counts, visited = [], [], 1
    for axis in axes:
        start = _start(axis)
        n = _steps(start, _stop(axis, start, options.offset), axis.stride)
        visited *= n
        if axis.shrink:
            index.append(start if n == 1 else slice(0, 0))
            if n != 1:
                counts.append(None)  # never equal to a shape: the check below fails unless all is empty
            continue
        counts.append(n)
        if n == 0:
            index.append(slice(0, 0))
        else:
            last = start + (n - 1) * axis.stride
            stop = last + 1 if axis.stride > 0 else last - 1
            index.append(slice(start, stop if stop >= 0 else None, axis.stride))
    if tuple(counts) != tuple(out_shape):
        if not visited and not num_elements(out_shape):
            return StridedPlan((), None)  # nothing read, nothing written
        if visited == num_elements(out_shape):  # TFLite writes the visited elements in order
            return StridedPlan(tuple(a.size for a in axes), tuple(index), regroup=True)
        raise KernelError(
            f"StridedSlice: the slice visits {[c for c in counts if c is not None]} elements per axis"
            f"{' and a shrunk axis selects none' if None in counts else ''} but the output shape is "
            f"{list(out_shape)}"
        )
    return StridedPlan(tuple(a.size for a in axes), tuple(index))


def _strided_inputs(context, node):
    return [_ints(context.tensors[node.inputs[i]]) for i in (1, 2, 3)]


def strided_slice_prepare(context, node):
    check_arity(node, 4)
    source, begin, end, strides = (input_tensor(context, node, i) for i in range(4))
    output = output_tensor(context, node)
    ensure_type(source, SLICE_TYPES, "input", "STRIDED_SLICE")
    ensure_types_eq(source, output, "STRIDED_SLICE input/output types")
    for tensor, what in ((begin, "begin"), (end, "end"), (strides, "strides")):
        ensure_type(tensor, TensorType.INT32, what, "STRIDED_SLICE")
        _ensure_vector(tensor, what, "STRIDED_SLICE")
    ensure_eq(num_elements(begin.shape), num_elements(end.shape), "STRIDED_SLICE begin/end element counts")
    ensure_eq(
        num_elements(begin.shape), num_elements(strides.shape), "STRIDED_SLICE begin/strides element counts"
    )
    ensure(num_elements(begin.shape) <= 31, "StridedSlice op only supports up to 31 indices.")
    options = node.builtin_data
    # With `offset` the shape needs only end (sizes) and strides. TFLite then reads end in prepare even
    # when it is computed (and crashes); a computed end makes the output dynamic here.
    shape_known = (
        strides.is_constant_or_persistent
        and end.is_constant_or_persistent
        and (options.offset or begin.is_constant_or_persistent)
    )
    if not shape_known:
        node.user_data = None
        context.set_tensor_to_dynamic(output)
        return
    values = _strided_inputs(context, node)
    if (
        not begin.is_constant_or_persistent
    ):  # offset mode: the shape does not depend on begin, known only at invoke
        values[0] = [0] * num_elements(begin.shape)
    out_shape = strided_slice_shape(source.shape, *values, options)
    indices_known = begin.is_constant_or_persistent and end.is_constant_or_persistent
    # None: begin known only at invoke
    node.user_data = plan_strided_slice(source.shape, *values, options, out_shape) if indices_known else None
    context.resize_tensor(output, out_shape)


def _strided_values(x: np.ndarray, plan: StridedPlan, out: np.ndarray) -> np.ndarray:
    """What `plan` selects of `x`, as `out` takes it (a view, unless regrouping copies)."""
    values = x.reshape(plan.effective_shape)[plan.index]
    return values.reshape(out.shape) if plan.regroup else values


def _strided_copy(x: np.ndarray, plan: StridedPlan, out: np.ndarray) -> None:
    if plan.index is not None:
        out[...] = _strided_values(x, plan, out)


def strided_slice_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = node.user_data
    if plan is None:
        values = _strided_inputs(context, node)
        options = node.builtin_data
        if output.allocation_type == AllocationType.DYNAMIC:
            context.resize_tensor(output, strided_slice_shape(source.shape, *values, options))
        plan = plan_strided_slice(source.shape, *values, options, output.shape)
    _strided_copy(source.data, plan, output.data)


def strided_slice_bind(context, node):
    """With the indices known in prepare: the copy from the view they select."""
    plan = node.user_data
    if plan is None or plan.index is None:
        return strided_slice_invoke
    source, out = context.tensors[node.inputs[0]].data, context.tensors[node.outputs[0]].data
    return copy_step(out, _strided_values(source, plan, out), source) or strided_slice_invoke


register_builtin(
    BuiltinOperator.STRIDED_SLICE,
    (1, 8),
    types=SLICE_TYPES,
    op_data=StridedPlan,
    prepare=strided_slice_prepare,
    invoke=strided_slice_invoke,
    bind=strided_slice_bind,
)


# --- PAD / PADV2 ----------------------------------------------------------------------------------

_PADDING_TYPES = (TensorType.INT32, TensorType.INT64, TensorType.INT8, TensorType.INT16, TensorType.BOOL)
_PAD_MAX_RANK = 5


@dataclass(frozen=True)
class PadPlan:
    shape: tuple[int, ...]
    center: tuple  # where the input lands in the output
    borders: tuple[tuple, ...]  # the output regions that get the pad value


def _padding_pairs_shape_check(paddings, rank: int, op_name: str) -> None:
    ensure_eq(len(paddings.shape), 2, f"{op_name} paddings rank")
    ensure_eq(paddings.shape[1], 2, f"{op_name} paddings dimension 1")
    ensure_eq(paddings.shape[0], rank, f"{op_name} paddings dimension 0 vs input rank")


def _padding_pairs(paddings, rank: int, op_name: str) -> list[tuple[int, int]]:
    _padding_pairs_shape_check(paddings, rank, op_name)
    values = _ints(paddings)
    return [(values[2 * i], values[2 * i + 1]) for i in range(rank)]


def plan_pad(shape: tuple[int, ...], pairs: list[tuple[int, int]]) -> PadPlan:
    out_shape, center, borders = [], [], []
    for axis, (dim, (before, after)) in enumerate(zip(shape, pairs)):
        ensure(before >= 0 and after >= 0, "Pad value has to be greater than equal to 0.")
        out_shape.append(dim + before + after)
        center.append(slice(before, before + dim))
        lead = (slice(None),) * axis
        if before:
            borders.append((*lead, slice(0, before)))
        if after:
            borders.append((*lead, slice(before + dim, None)))
    return PadPlan(tuple(out_shape), tuple(center), tuple(borders))


@dataclass(frozen=True)
class PadData:
    plan: PadPlan | None  # None: paddings known only at invoke
    value: object  # the fill value, or None to read the constant_values input at invoke


def _pad_value(source, output, constant):
    """The fill value fixed by the tensors' types and quantization, or None when read from `constant`."""
    quantized = source.type == TensorType.UINT8 or (
        source.type in _QUANTIZED and source.quantization is not None
    )
    if constant is None:
        if not quantized:
            return 0
        zero_point = output.params.zero_point
        limits = np.iinfo(output.dtype)
        ensure(limits.min <= zero_point <= limits.max, f"output zero_point {zero_point} is out of range")
        return zero_point
    if quantized:
        ensure(
            output.params.zero_point == constant.params.zero_point,
            f"output zero_point {output.params.zero_point} != constant_values zero_point "
            f"{constant.params.zero_point}",
        )
        ensure(
            output.params.scale == constant.params.scale,
            f"output scale {output.params.scale} != constant_values scale {constant.params.scale}",
        )
    return None


def pad_prepare(context, node):
    op_name = "PADV2" if len(node.inputs) == 3 and node.inputs[2] >= 0 else "PAD"
    check_arity(node, (2, 3))
    source, paddings, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    constant = optional_input_tensor(context, node, 2)
    ensure_type(source, PAD_TYPES, "input", op_name)
    ensure_types_eq(source, output, f"{op_name} input/output types")
    ensure_type(paddings, _PADDING_TYPES, "paddings", op_name)
    if constant is not None:
        ensure_types_eq(source, constant, f"{op_name} input/constant_values types")
        ensure_eq(num_elements(constant.shape), 1, f"{op_name} constant_values element count")
    rank = len(source.shape)
    ensure(rank <= _PAD_MAX_RANK, f"{op_name} supports up to {_PAD_MAX_RANK} dimensions, got {rank}")
    value = _pad_value(source, output, constant)
    if not paddings.is_constant_or_persistent:
        _padding_pairs_shape_check(paddings, rank, op_name)
        node.user_data = PadData(None, value)
        context.set_tensor_to_dynamic(output)
        return
    plan = plan_pad(source.shape, _padding_pairs(paddings, rank, op_name))
    node.user_data = PadData(plan, value)
    context.resize_tensor(output, plan.shape)


def pad_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = data.plan
    if plan is None:
        plan = plan_pad(source.shape, _padding_pairs(tensors[node.inputs[1]], len(source.shape), "PAD"))
        context.resize_tensor(output, plan.shape)
    value = data.value
    if value is None:
        value = tensors[node.inputs[2]].data.reshape(-1)[0]
    out = output.data
    for border in plan.borders:
        out[border] = value
    out[plan.center] = source.data


for _op in (BuiltinOperator.PAD, BuiltinOperator.PADV2):
    register_builtin(_op, (1, 6), types=PAD_TYPES, op_data=PadData, prepare=pad_prepare, invoke=pad_invoke)


# --- MIRROR_PAD -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MirrorPlan:
    shape: tuple[int, ...]
    center: tuple
    copies: tuple[tuple[tuple, tuple], ...]  # (destination, source) regions of the output, in order


def plan_mirror_pad(shape: tuple[int, ...], pairs: list[tuple[int, int]], offset: int) -> MirrorPlan:
    """Fill the borders axis by axis from the output itself: reflect (offset 1) skips the edge element,
    symmetric (offset 0) repeats it. Axes after the current one are restricted to the input's extent;
    they are filled later from regions that already hold the mirrored values."""
    out_shape = [d + b + a for d, (b, a) in zip(shape, pairs)]
    center = tuple(slice(b, b + d) for d, (b, _) in zip(shape, pairs))
    copies = []
    for axis, (dim, (before, after)) in enumerate(zip(shape, pairs)):
        ensure(before >= 0 and after >= 0, "MirrorPad paddings must be non-negative.")
        limit = dim - offset
        ensure(
            before <= limit and after <= limit,
            "MirrorPad paddings must be no greater than the input dimension size minus the mode offset. "
            f"Dimension {axis} has input size {dim}, mode offset {offset}, max padding {limit}, "
            f"left padding {before}, and right padding {after}.",
        )
        lead, rest = (slice(None),) * axis, center[axis + 1 :]
        if before:
            first = 2 * before + offset - 1  # the output position mirrored into position 0
            low = before + offset - 1
            copies.append(
                (
                    (*lead, slice(0, before), *rest),
                    (*lead, slice(first, low if low >= 0 else None, -1), *rest),
                )
            )
        if after:
            top = before + dim - 1 - offset  # mirrored into the first position after the input
            low = top - after
            copies.append(
                (
                    (*lead, slice(before + dim, None), *rest),
                    (*lead, slice(top, low if low >= 0 else None, -1), *rest),
                )
            )
    return MirrorPlan(tuple(out_shape), center, tuple(copies))


def _mirror_offset(node) -> int:
    mode = node.builtin_data.mode
    ensure(mode in (MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC), f"Unknown MirrorPad mode {int(mode)}")
    return 1 if mode == MirrorPadMode.REFLECT else 0


def mirror_pad_prepare(context, node):
    check_arity(node, 2)
    source, paddings, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, MIRROR_PAD_TYPES, "input", "MIRROR_PAD")
    ensure_types_eq(source, output, "MIRROR_PAD input/output types")
    offset = _mirror_offset(node)
    ensure_type(paddings, _INDEX_TYPES, "paddings", "MIRROR_PAD")
    _padding_pairs_shape_check(paddings, len(source.shape), "MIRROR_PAD")
    if source.type in _QUANTIZED:
        ensure_same_quantization(source, output)
    if not paddings.is_constant_or_persistent:
        node.user_data = None
        context.set_tensor_to_dynamic(output)
        return
    plan = plan_mirror_pad(source.shape, _padding_pairs(paddings, len(source.shape), "MIRROR_PAD"), offset)
    node.user_data = plan
    context.resize_tensor(output, plan.shape)


def mirror_pad_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = node.user_data
    if plan is None:
        pairs = _padding_pairs(tensors[node.inputs[1]], len(source.shape), "MIRROR_PAD")
        plan = plan_mirror_pad(source.shape, pairs, _mirror_offset(node))
        context.resize_tensor(output, plan.shape)
    out = output.data
    out[plan.center] = source.data
    for destination, origin in plan.copies:
        out[destination] = out[origin]


register_builtin(
    BuiltinOperator.MIRROR_PAD,
    (1, 3),
    types=MIRROR_PAD_TYPES,
    op_data=MirrorPlan,
    prepare=mirror_pad_prepare,
    invoke=mirror_pad_invoke,
)


# --- DYNAMIC_UPDATE_SLICE -------------------------------------------------------------------------


def plan_update(shape: tuple[int, ...], update_shape: tuple[int, ...], starts: list[int]) -> tuple:
    """Where the update lands: each start clamped to [0, dim - update dim], as TFLite does."""
    index = []
    for dim, extent, start in zip(shape, update_shape, starts):
        start = min(max(0, start), dim - extent)
        index.append(slice(start, start + extent))
    return tuple(index)


@dataclass(frozen=True, slots=True)
class UpdateSliceData:
    index: tuple  # where the update lands in the output


def dynamic_update_slice_prepare(context, node):
    check_arity(node, 3)
    operand, update, starts = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_type(operand, UPDATE_TYPES, "operand", "DYNAMIC_UPDATE_SLICE")
    ensure_types_eq(operand, update, "DYNAMIC_UPDATE_SLICE operand/update types")
    ensure_types_eq(operand, output, "DYNAMIC_UPDATE_SLICE operand/output types")
    ensure_type(starts, _INDEX_TYPES, "start_indices", "DYNAMIC_UPDATE_SLICE")
    rank = len(operand.shape)
    ensure(len(starts.shape) == 1, "DYNAMIC_UPDATE_SLICE start_indices must be a vector")
    ensure(
        starts.shape[0] == rank,
        f"DYNAMIC_UPDATE_SLICE start_indices has {starts.shape[0]} values for an operand of rank {rank}",
    )
    ensure(
        len(update.shape) == rank,
        f"DYNAMIC_UPDATE_SLICE update rank {len(update.shape)} != operand rank {rank}",
    )
    ensure(
        all(u <= d for u, d in zip(update.shape, operand.shape)),
        f"DYNAMIC_UPDATE_SLICE update shape {list(update.shape)} exceeds operand shape {list(operand.shape)}",
    )
    node.user_data = (
        UpdateSliceData(plan_update(operand.shape, update.shape, _ints(starts)))
        if starts.is_constant_or_persistent
        else None
    )
    context.resize_tensor(output, operand.shape)


def dynamic_update_slice_invoke(context, node):
    tensors = context.tensors
    operand, update = tensors[node.inputs[0]], tensors[node.inputs[1]]
    out = tensors[node.outputs[0]].data
    data = node.user_data
    if data is None:
        index = plan_update(operand.shape, update.shape, _ints(tensors[node.inputs[2]]))
    else:
        index = data.index
    out[...] = operand.data
    out[index] = update.data


register_builtin(
    BuiltinOperator.DYNAMIC_UPDATE_SLICE,
    (1, 6),
    types=UPDATE_TYPES,
    op_data=UpdateSliceData,
    prepare=dynamic_update_slice_prepare,
    invoke=dynamic_update_slice_invoke,
)


# --- REVERSE_SEQUENCE -----------------------------------------------------------------------------


def plan_reverse_sequence(shape, lengths: np.ndarray, seq_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Fancy indices (batch, position), both broadcasting to [batch, seq], into the input with its batch
    and sequence axes moved to the front: row b has its first lengths[b] items reversed, the rest (and
    rows of length 0 or less) stay in place."""
    lengths = lengths.reshape(-1).astype(np.int64)
    ensure(
        bool(np.all(lengths <= shape[seq_dim])),
        f"ReverseSequence: seq_lengths must be <= {shape[seq_dim]}, the size of dimension {seq_dim}",
    )
    steps = np.arange(shape[seq_dim])
    positions = np.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)
    return np.arange(len(lengths))[:, None], positions


@dataclass(frozen=True, slots=True)
class ReverseSequenceData:
    index: tuple[np.ndarray, np.ndarray]  # plan_reverse_sequence's (batch, position) indices


def reverse_sequence_prepare(context, node):
    check_arity(node, 2)
    source, lengths, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure(
        source.type in REVERSE_SEQUENCE_TYPES,
        f"Type '{type_name(source.type)}' is not supported by reverse_sequence.",
    )
    ensure(
        lengths.type in _INDEX_TYPES,
        f"Seq_lengths type '{type_name(lengths.type)}' is not supported by reverse_sequence.",
    )
    ensure_types_eq(source, output, "REVERSE_SEQUENCE input/output types")
    ensure_eq(len(lengths.shape), 1, "REVERSE_SEQUENCE seq_lengths rank")
    options = node.builtin_data
    seq_dim, batch_dim, rank = options.seq_dim, options.batch_dim, len(source.shape)
    ensure(0 <= seq_dim < rank, f"ReverseSequence: seq_dim {seq_dim} is out of range for rank {rank}")
    ensure(0 <= batch_dim < rank, f"ReverseSequence: batch_dim {batch_dim} is out of range for rank {rank}")
    ensure(seq_dim != batch_dim, "ReverseSequence: seq_dim and batch_dim must differ")
    ensure_eq(lengths.shape[0], source.shape[batch_dim], "REVERSE_SEQUENCE seq_lengths size vs batch size")
    node.user_data = (
        ReverseSequenceData(plan_reverse_sequence(source.shape, lengths.data, seq_dim))
        if lengths.is_constant_or_persistent
        else None
    )
    context.resize_tensor(output, source.shape)


def reverse_sequence_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    options = node.builtin_data
    data = node.user_data
    if data is None:
        plan = plan_reverse_sequence(source.shape, tensors[node.inputs[1]].data, options.seq_dim)
    else:
        plan = data.index
    front = (options.batch_dim, options.seq_dim), (0, 1)
    np.moveaxis(output.data, *front)[...] = np.moveaxis(source.data, *front)[plan]


register_builtin(
    BuiltinOperator.REVERSE_SEQUENCE,
    (1, 1),
    types=REVERSE_SEQUENCE_TYPES,
    op_data=ReverseSequenceData,
    prepare=reverse_sequence_prepare,
    invoke=reverse_sequence_invoke,
)

"""STRIDED_SLICE, with TFLite's index arithmetic (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import INT32_MIN, AllocationType, BuiltinOperator, TensorType, num_elements
from ...errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..common import check_arity, copy_calls, input_tensor, output_tensor
from ..registry import register_builtin
from .common import SLICE_TYPES, ensure_vector, ints


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
        ensure(axis.stride != INT32_MIN, "stride value INT32_MIN is not supported")
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
    return [ints(context.tensors[node.inputs[i]]) for i in (1, 2, 3)]


def strided_slice_prepare(context, node):
    check_arity(node, 4)
    source, begin, end, strides = (input_tensor(context, node, i) for i in range(4))
    output = output_tensor(context, node)
    ensure_type(source, SLICE_TYPES, "input", "STRIDED_SLICE")
    ensure_types_eq(source, output, "STRIDED_SLICE input/output types")
    for tensor, what in ((begin, "begin"), (end, "end"), (strides, "strides")):
        ensure_type(tensor, TensorType.INT32, what, "STRIDED_SLICE")
        ensure_vector(tensor, what, "STRIDED_SLICE")
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


def strided_slice_calls(context, node):
    """With the indices known in prepare: the copy from the view they select."""
    plan = node.user_data
    if plan is None or plan.index is None:
        return None
    source, out = context.tensors[node.inputs[0]].data, context.tensors[node.outputs[0]].data
    return copy_calls(out, _strided_values(source, plan, out), source)


register_builtin(
    BuiltinOperator.STRIDED_SLICE,
    (1, 8),
    types=SLICE_TYPES,
    op_data=StridedPlan,
    prepare=strided_slice_prepare,
    invoke=strided_slice_invoke,
    calls=strided_slice_calls,
)

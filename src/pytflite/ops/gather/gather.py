"""GATHER: rows of params picked along an axis by a positions tensor (np.take on a 3-D view), with
batch_dims; both inputs constant, the subgraph computes the output once, right after prepare."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.step_program import Written
from ...errors import KernelError, ensure, ensure_condition_eq, ensure_types_eq
from ..common import as_indices, check_arity, input_tensor, output_tensor
from ..jit import compiled, read_only
from ..registry import register_builtin
from .common import INDEX_TYPES, Op, T, unsupported_type

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


@dataclass(frozen=True, slots=True)
class GatherData:
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
    if positions.type not in INDEX_TYPES:
        raise unsupported_type(positions, "Positions of type '%s' are not supported by gather.")
    if params.type not in _GATHER_TYPES:
        raise unsupported_type(params, "Type '%s' is not supported by gather.")
    ensure_types_eq(output, params, "GATHER output type")
    rank, positions_rank = len(params.shape), len(positions.shape)
    if params.type == T.STRING:
        ensure_condition_eq(rank, 1, "NumDimensions(input) != 1")
    options = node.builtin_data
    axis = options.axis + rank if options.axis < 0 else options.axis
    ensure(0 <= axis < rank, "0 <= axis && axis < NumDimensions(input) was not true.")
    batch_dims = options.batch_dims + positions_rank if options.batch_dims < 0 else options.batch_dims
    ensure(batch_dims <= axis, "batch_dims <= axis was not true.")
    ensure(0 <= batch_dims < rank, "0 <= batch_dims && batch_dims < NumDimensions(input) was not true.")
    ensure(batch_dims <= positions_rank, "batch_dims <= NumDimensions(positions) was not true.")
    for i in range(batch_dims):
        ensure_condition_eq(
            params.shape[i], positions.shape[i], "input->dims->data[i] != positions->dims->data[i]"
        )
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
            (outer, axis_size, inner), (coords,), (outer, coords, inner), axis_size, outer > 0, None
        )
    else:
        base = (
            np.arange(batch, dtype=np.int64)[:, None] * outer + np.arange(outer, dtype=np.int64)
        ) * axis_size
        data = GatherData(
            (batch * outer * axis_size, inner),
            (batch, 1, coords),
            (batch, outer, coords, inner),
            axis_size,
            batch * outer > 0,
            base[:, :, None],
        )
    node.user_data = data
    context.resize_tensor(output, shape)


def _check_positions(context, data, params, low: int, high: int) -> None:
    """TFLite's bounds checks, given the smallest and largest position."""
    if low < 0:
        context.report_error("indices_has_only_positive_elements was not true.")
        raise KernelError("gather index out of bounds")
    if high >= data.axis_size and data.check_bounds:
        if params.type == T.STRING:
            context.report_error("pos < num_strings was not true.")
        raise KernelError("gather index out of bounds")


def gather_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    params = tensors[node.inputs[0]]
    indices = tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    if indices.size == 1 and data.row_base is None:
        _gather_one(context, data, params, _by_position(params.data, data), indices, out)
        return
    if indices.size:
        _check_positions(context, data, params, indices.min(), indices.max())
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


def _by_position(params: np.ndarray, data: GatherData) -> np.ndarray:
    """params as (axis, outer, inner) (a view): one position's values are one row of it."""
    return params.reshape(data.params_shape).transpose(1, 0, 2)


def _gather_one(context, data, params, rows: np.ndarray, indices: np.ndarray, out: np.ndarray) -> None:
    """One position (batch_dims 0): checked as a Python int, copied as one row of `rows`."""
    position = indices.item()
    _check_positions(context, data, params, position, position)
    if out.size:
        out.reshape(rows.shape[1:])[...] = rows[position]


def gather_calls(context, node):
    """The views made once (batch_dims 0, no strings): one position (the loop bodies' time-step GATHER)
    checked as a Python int, several in one reduction; other gathers run their invoke."""
    data = node.user_data
    tensors = context.tensors
    params = tensors[node.inputs[0]]
    indices = tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    if (
        data.row_base is not None
        or out.size == 0
        or params.type == T.STRING
        or not (params.data.flags.c_contiguous and out.flags.c_contiguous)  # views, not copies
    ):
        return None
    if indices.size != 1:
        return _gather_positions_calls(context, data, params, indices, out)
    rows = _by_position(params.data, data)
    target = out.reshape(rows.shape[1:])

    def gather_one():
        position = indices.item()
        if position < 0 or position >= data.axis_size:
            _check_positions(context, data, params, position, position)
        target[...] = rows[position]

    return (gather_one,)


def _gather_positions_calls(context, data, params, indices, out):
    """Several positions: compiled (gather_compiled.gather_rows: checked and copied as bytes in one
    call) where compiled kernels run, else bounds-checked by one maximum of their bits read unsigned (a
    negative position reads as a large one) before the take."""
    kernel = compiled("gather.gather_compiled", "gather_rows")
    if kernel is not None and params.type != T.INT4 and indices.flags.writeable:
        table = read_only(params.data.reshape(data.params_shape).view(np.uint8))
        positions, rows = indices.reshape(-1), out.reshape(data.output_shape).view(np.uint8)

        def check(context):
            _check_positions(context, data, params, indices.min(), indices.max())

        def gather_rows():
            if kernel(table, positions, rows) >= 0:
                check(context)

        return Written(
            "{kernel}({table}, {positions}, {rows}) < 0 or {check}({context})",
            gather_rows,
            kernel=kernel,
            table=table,
            positions=positions,
            rows=rows,
            check=check,
            context=context,
        )
    source = params.data.reshape(data.params_shape)
    positions = indices.reshape(data.indices_shape)
    unsigned = indices.reshape(-1).view(np.dtype(f"u{indices.itemsize}"))
    target = out.reshape(data.output_shape)
    size = data.axis_size

    def gather_positions():
        if _MAX(unsigned) >= size:
            _check_positions(context, data, params, indices.min(), indices.max())
        np.take(source, as_indices(positions), axis=1, out=target, mode="clip")

    return (gather_positions,)


_MAX = np.maximum.reduce  # (without ndarray.max's Python layer)


register_builtin(
    Op.GATHER,
    (1, 8),
    types=_GATHER_TYPES,
    op_data=GatherData,
    prepare=gather_prepare,
    invoke=gather_invoke,
    calls=gather_calls,
)

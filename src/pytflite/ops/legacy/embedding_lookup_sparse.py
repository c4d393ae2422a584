"""EMBEDDING_LOOKUP_SPARSE: a sparse tensor of ids (ids, their [n, rank] indices, its dense shape) and
weights; output cell c is the weighted sum of the value rows looked up by the ids whose index (without
its last coordinate) is c, divided by the weights' sum (MEAN) or the root of their squares' sum (SQRTN).

TFLite walks the ids once, in order, combining a run of ids that fall into the same cell and finishing
(dividing) it when the cell changes; a cell visited again later gets a second run added to its finished
value, and that sum is divided again. invoke reproduces exactly that: runs are grouped by how many
earlier runs their cell had, and each group is added (np.add.at, in id order, float32 products and sums
as TFLite's) and finished before the next.
"""

from __future__ import annotations

import math

import numpy as np

from ...core.types import TFLITE_TYPE_NUMBER, BuiltinOperator, TensorType
from ...errors import KernelError, ensure, ensure_condition_eq, ensure_type_condition
from ...model.options import CombinerType
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin

T = TensorType


def _ensure_type_number(tensor, expected: TensorType, condition: str) -> None:
    """TF_LITE_ENSURE_EQ on a type: TFLite prints the TfLiteType numbers."""
    ensure_condition_eq(TFLITE_TYPE_NUMBER.get(tensor.type, 0), TFLITE_TYPE_NUMBER[expected], condition)


def embedding_lookup_sparse_prepare(context, node):
    check_arity(node, 5)
    ids, indices, shape, weights, values = (input_tensor(context, node, i) for i in range(5))
    ensure_condition_eq(len(ids.shape), 1, "NumDimensions(ids) != 1")
    _ensure_type_number(ids, T.INT32, "ids->type != kTfLiteInt32")
    ensure_condition_eq(len(indices.shape), 2, "NumDimensions(indices) != 2")
    _ensure_type_number(indices, T.INT32, "indices->type != kTfLiteInt32")
    ensure_condition_eq(len(shape.shape), 1, "NumDimensions(shape) != 1")
    _ensure_type_number(shape, T.INT32, "shape->type != kTfLiteInt32")
    ensure_condition_eq(len(weights.shape), 1, "NumDimensions(weights) != 1")
    _ensure_type_number(weights, T.FLOAT32, "weights->type != kTfLiteFloat32")
    ensure_condition_eq(
        indices.shape[0], ids.shape[0], "SizeOfDimension(indices, 0) != SizeOfDimension(ids, 0)"
    )
    ensure_condition_eq(
        indices.shape[0], weights.shape[0], "SizeOfDimension(indices, 0) != SizeOfDimension(weights, 0)"
    )
    ensure(len(values.shape) >= 2, "NumDimensions(value) >= 2 was not true.")
    output = output_tensor(context, node)
    ensure_type_condition(output, T.FLOAT32, "output->type != kTfLiteFloat32")
    ensure(
        values.type == T.FLOAT32, f"EMBEDDING_LOOKUP_SPARSE values must be FLOAT32, not {values.type.name}"
    )
    ensure(indices.shape[1] >= 1, "EMBEDDING_LOOKUP_SPARSE indices need at least one coordinate")
    context.set_tensor_to_dynamic(output)


def embedding_lookup_sparse_invoke(context, node):
    tensors = context.tensors
    ids, indices, dense_shape, weights, values = (tensors[i].data for i in node.inputs)
    output = tensors[node.outputs[0]]
    lookup_rank = indices.shape[1]
    ensure_condition_eq(dense_shape.shape[0], lookup_rank, "SizeOfDimension(dense_shape, 0) != lookup_rank")
    cells_shape = tuple(int(d) for d in dense_shape[: lookup_rank - 1])
    context.resize_tensor(output, cells_shape + values.shape[1:])
    rows = values.shape[0]
    bad = (ids < 0) | (ids >= rows)
    if bad.any():
        raise KernelError(
            f"Embedding Lookup Sparse: index out of bounds. Got {ids[bad][0]}, and bounds are [0, {rows - 1}]"
        )
    width = math.prod(values.shape[1:])
    out = output.data.reshape(math.prod(cells_shape), width)
    out[...] = 0
    if ids.size == 0 or width == 0:
        return
    cells = indices[:, : lookup_rank - 1].astype(np.int64) @ _strides(cells_shape)
    _combine(out, cells, values.reshape(rows, width)[ids], weights, node.builtin_data.combiner)


def _strides(shape: tuple[int, ...]) -> np.ndarray:
    strides = np.ones(len(shape), np.int64)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides


def _combine(out: np.ndarray, cells: np.ndarray, rows: np.ndarray, weights: np.ndarray, combiner) -> None:
    """Add each looked-up row times its weight into its cell, run by run, finishing runs as TFLite."""
    starts = np.r_[True, cells[1:] != cells[:-1]]
    run = np.cumsum(starts) - 1
    run_cell = cells[starts]
    # how many earlier runs went to the same cell: runs of one such generation never share a cell
    order = np.argsort(run_cell, kind="stable")
    first = np.r_[True, run_cell[order][1:] != run_cell[order][:-1]]
    position = np.arange(order.size)
    generation = np.empty(order.size, np.int64)
    generation[order] = position - np.maximum.accumulate(np.where(first, position, 0))
    # TFLite skips the cells outside the output (and would finish them out of bounds: not reproduced)
    inside = (run_cell >= 0) & (run_cell < out.shape[0])
    products = rows * weights[:, None]
    for level in range(int(generation.max()) + 1):
        runs = np.flatnonzero((generation == level) & inside)
        entries = np.flatnonzero(np.isin(run, runs))
        np.add.at(out, cells[entries], products[entries])
        if combiner == CombinerType.SUM:
            continue
        totals = np.zeros(run_cell.size, np.float32)
        if combiner == CombinerType.MEAN:
            np.add.at(totals, run[entries], weights[entries])
            divisors = totals[runs]
        else:
            np.add.at(totals, run[entries], weights[entries] * weights[entries])
            divisors = np.sqrt(totals[runs])
        with np.errstate(divide="ignore", invalid="ignore"):
            out[run_cell[runs]] /= divisors[:, None]


register_builtin(
    BuiltinOperator.EMBEDDING_LOOKUP_SPARSE,
    (1, 1),
    types=(T.FLOAT32,),
    prepare=embedding_lookup_sparse_prepare,
    invoke=embedding_lookup_sparse_invoke,
)

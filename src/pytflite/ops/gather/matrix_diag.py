"""MATRIX_DIAG and MATRIX_SET_DIAG: diagonals written through a strided view."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import ensure, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import Op, T, unsupported_type

_DIAG_TYPES = (T.FLOAT32, T.INT64, T.INT32, T.INT16, T.INT8, T.UINT8)


def matrix_diag_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure(len(source.shape) >= 1, "input_dims_size >= 1 was not true.")
    if source.type not in _DIAG_TYPES:
        raise unsupported_type(source, "Type '%s' is not supported by matrix_diag.")
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
        raise unsupported_type(source, "Type '%s' is not supported by matrix_set_diag.")
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


register_builtin(
    Op.MATRIX_DIAG, (1, 1), types=_DIAG_TYPES, prepare=matrix_diag_prepare, invoke=matrix_diag_invoke
)
register_builtin(
    Op.MATRIX_SET_DIAG,
    (1, 1),
    types=_DIAG_TYPES,
    op_data=SetDiagData,
    prepare=matrix_set_diag_prepare,
    invoke=matrix_set_diag_invoke,
)

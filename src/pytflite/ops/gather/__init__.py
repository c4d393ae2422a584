"""Gather, scatter, selection and index ops.

GATHER, GATHER_ND, EMBEDDING_LOOKUP      rows or slices picked by index tensors (np.take on a 2-D view)
SCATTER_ND                               slices added into zeros (np.add.at, so duplicates accumulate)
SELECT, SELECT_V2                        a condition choosing x or y (masked copies; bitwise when large)
WHERE, UNIQUE                            outputs whose shape depends on input values (dynamic outputs)
ONE_HOT, BUCKETIZE                       index encodings
SPARSE_TO_DENSE                          listed positions set in a tensor of a default value
SEGMENT_SUM, UNSORTED_SEGMENT_*          segment reductions (ufunc.at in TFLite's element order)
MATRIX_DIAG, MATRIX_SET_DIAG             diagonals written through a strided view

Prepare validates like TFLite (same conditions and messages), computes the output shape and reduces
every index computation to a flat row index into a 2-D view of the data, so invoke is a bounds check
plus one NumPy call. Indices are checked before any copy: out-of-range indices fail at invoke with
TFLite's message. Where TFLite resolves a value-dependent shape in prepare (constant inputs), so do we;
otherwise the output is dynamic and resized at invoke. A node whose inputs are all constants (GATHER
of two constants, WHERE of a constant condition) is computed once by the subgraph, right after prepare,
into a persistent read-only output, as TFLite does in its prepare.

Modules: gather.py, gather_nd.py, scatter_nd.py, embedding_lookup.py, select.py (SELECT, SELECT_V2),
where.py, one_hot.py, unique.py, segments.py (SEGMENT_SUM, UNSORTED_SEGMENT_*), matrix_diag.py
(MATRIX_DIAG, MATRIX_SET_DIAG), sparse_to_dense.py and bucketize.py register the kernels; common.py holds
the index types, TFLite's check messages and row strides they share.
"""

from . import (  # noqa: F401  (importing them registers their kernels)
    bucketize,
    embedding_lookup,
    gather,
    gather_nd,
    matrix_diag,
    one_hot,
    scatter_nd,
    segments,
    select,
    sparse_to_dense,
    unique,
    where,
)

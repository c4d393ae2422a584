"""HASHTABLE_LOOKUP: rows of a value table found by int32 key: output row i is the value row whose key
equals lookup[i] (zeros, or an empty string, when none does), and hits[i] says whether one did.

TFLite finds keys with C's bsearch over the key tensor (its comparator subtracts the keys, but as
compiled it orders even keys whose difference overflows int32 correctly: measured against LiteRT); the
keys are meant to be sorted. invoke runs that same binary search for all lookups at once, so unsorted or
duplicate keys give the rows TFLite gives.
"""

from __future__ import annotations

import numpy as np

from ...core.types import TFLITE_TYPE_NUMBER, BuiltinOperator, TensorType
from ...errors import ensure, ensure_condition_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin

T = TensorType
_PACKED = (T.INT4, T.UINT4, T.INT2)
_VALUE_TYPES = tuple(t for t in T if t not in (T.RESOURCE, T.VARIANT, *_PACKED))


def _ensure_type_eq(first: TensorType, second: TensorType, condition: str) -> None:
    """TF_LITE_ENSURE_EQ on types: TFLite prints their TfLiteType numbers."""
    ensure_condition_eq(TFLITE_TYPE_NUMBER.get(first, 0), TFLITE_TYPE_NUMBER.get(second, 0), condition)


def hashtable_lookup_prepare(context, node):
    check_arity(node, 3, 2)
    lookup, keys, values = (input_tensor(context, node, i) for i in range(3))
    ensure_condition_eq(len(lookup.shape), 1, "NumDimensions(lookup) != 1")
    _ensure_type_eq(lookup.type, T.INT32, "lookup->type != kTfLiteInt32")
    ensure_condition_eq(len(keys.shape), 1, "NumDimensions(key) != 1")
    _ensure_type_eq(keys.type, T.INT32, "key->type != kTfLiteInt32")
    ensure(len(values.shape) >= 1, "NumDimensions(value) >= 1 was not true.")
    ensure_condition_eq(
        keys.shape[0], values.shape[0], "SizeOfDimension(key, 0) != SizeOfDimension(value, 0)"
    )
    if values.type == T.STRING:
        ensure_condition_eq(len(values.shape), 1, "NumDimensions(value) != 1")
    hits = output_tensor(context, node, 1)
    _ensure_type_eq(hits.type, T.UINT8, "hits->type != kTfLiteUInt8")
    output = output_tensor(context, node, 0)
    _ensure_type_eq(values.type, output.type, "value->type != output->type")
    ensure(values.type in _VALUE_TYPES, f"HASHTABLE_LOOKUP does not support {values.type.name} values")
    if output.type != T.STRING:  # a string output gets its shape when it is written
        context.resize_tensor(output, (lookup.shape[0], *values.shape[1:]))
    context.resize_tensor(hits, (lookup.shape[0],))


def _bsearch(targets: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The index C's bsearch returns for each target (-1: not found), run for every target at once."""
    low = np.zeros(targets.shape, np.int64)
    high = np.full(targets.shape, keys.size, np.int64)
    found = np.full(targets.shape, -1, np.int64)
    searching = low < high
    targets = targets.astype(np.int64)
    while searching.any():
        middle = (low + high) // 2
        difference = targets - keys[np.minimum(middle, keys.size - 1)]
        hit = searching & (difference == 0)
        found[hit] = middle[hit]
        high = np.where(searching & (difference < 0), middle, high)
        low = np.where(searching & (difference > 0), middle + 1, low)
        searching &= ~hit & (low < high)
    return found


def hashtable_lookup_invoke(context, node):
    tensors = context.tensors
    lookup = tensors[node.inputs[0]].data
    keys = tensors[node.inputs[1]].data
    values = tensors[node.inputs[2]]
    output = tensors[node.outputs[0]]
    ensure(values.shape[0] != 0, "num_rows != 0 was not true.")
    rows = _bsearch(lookup, keys)
    hit = rows >= 0
    tensors[node.outputs[1]].data[:] = hit
    if output.type == T.STRING:
        context.resize_tensor(output, lookup.shape)
        output.data[:] = b""
        output.data[hit] = values.data[rows[hit]]
        return
    out = output.data
    if out.size == 0:
        return
    out[...] = 0
    out[hit] = values.data[rows[hit]]


register_builtin(
    BuiltinOperator.HASHTABLE_LOOKUP,
    (1, 1),
    types=_VALUE_TYPES,
    prepare=hashtable_lookup_prepare,
    invoke=hashtable_lookup_invoke,
)

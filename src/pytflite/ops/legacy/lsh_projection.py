"""LSH_PROJECTION: locality-sensitive hashing of the input's rows into bits (DENSE: one int32 0/1 per
seed) or into one bucket id per hash function (SPARSE: the bits of a row of seeds, plus the row's
offset of 2**bits).

Each bit is the sign of sum_i weight[i] * double(int64(Fingerprint64(seed bytes + bytes of row i)));
the seed is the float32 hash value itself. The sum runs in float64 in row order, as TFLite's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.strings import encode_string_buffer
from ...core.types import BuiltinOperator, TensorType
from ...errors import KernelError, ensure, ensure_condition_eq
from ...model.options import LSHProjectionType
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .farmhash import fingerprint64

T = TensorType
_INPUT_TYPES = tuple(t for t in T if t not in (T.RESOURCE, T.VARIANT, T.INT4, T.UINT4, T.INT2))


@dataclass(frozen=True)
class LshData:
    sparse: bool
    weighted: bool


def lsh_projection_prepare(context, node):
    ensure(len(node.inputs) in (2, 3), "NumInputs(node) == 2 || NumInputs(node) == 3 was not true.")
    check_arity(node, len(node.inputs))
    seeds, source = input_tensor(context, node, 0), input_tensor(context, node, 1)
    ensure_condition_eq(len(seeds.shape), 2, "NumDimensions(hash) != 2")
    ensure(seeds.shape[1] <= 32, "SizeOfDimension(hash, 1) <= 32 was not true.")
    ensure(seeds.type == T.FLOAT32, f"LSH_PROJECTION hash seeds must be FLOAT32, not {seeds.type.name}")
    ensure(len(source.shape) >= 1, "NumDimensions(input) >= 1 was not true.")
    ensure(source.shape[0] >= 1, "SizeOfDimension(input, 0) >= 1 was not true.")
    ensure(source.type in _INPUT_TYPES, f"LSH_PROJECTION cannot hash a {source.type.name} input")
    weighted = len(node.inputs) == 3
    if weighted:
        weight = input_tensor(context, node, 2)
        ensure_condition_eq(len(weight.shape), 1, "NumDimensions(weight) != 1")
        ensure_condition_eq(
            weight.shape[0], source.shape[0], "SizeOfDimension(weight, 0) != SizeOfDimension(input, 0)"
        )
        ensure(weight.type == T.FLOAT32, f"LSH_PROJECTION weights must be FLOAT32, not {weight.type.name}")
    output = output_tensor(context, node)
    ensure(output.type == T.INT32, f"LSH_PROJECTION output must be INT32, not {output.type.name}")
    kind = node.builtin_data.type
    if kind == LSHProjectionType.SPARSE:
        shape = (seeds.shape[0],)
    elif kind == LSHProjectionType.DENSE:
        shape = (seeds.shape[0] * seeds.shape[1],)
    else:
        raise KernelError(f"LSH_PROJECTION: unknown projection type {int(kind)}")
    node.user_data = LshData(kind == LSHProjectionType.SPARSE, weighted)
    context.resize_tensor(output, shape)


def _row_bytes(source) -> np.ndarray:
    """The input's bytes cut into one equal chunk per row (uint8 [rows, chunk]), as TFLite cuts its
    buffer: `bytes / rows` each; a string tensor's buffer is its serialized form, header included."""
    if source.type == T.STRING:
        raw = np.frombuffer(encode_string_buffer(source.data), np.uint8)
    else:
        raw = np.ascontiguousarray(source.data).reshape(-1).view(np.uint8)
    rows = source.shape[0]
    chunk = raw.size // rows
    return raw[: rows * chunk].reshape(rows, chunk)


def _sign_bits(seeds: np.ndarray, rows: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """One 0/1 per seed: whether the (weighted) sum of the rows' signed fingerprints is positive."""
    keys = np.empty((seeds.size, rows.shape[0], 4 + rows.shape[1]), np.uint8)
    keys[:, :, :4] = seeds.reshape(-1, 1).view(np.uint8)[:, None, :]
    keys[:, :, 4:] = rows[None]
    running = fingerprint64(keys.reshape(-1, keys.shape[2])).view(np.int64).astype(np.float64)
    running = running.reshape(seeds.size, rows.shape[0])
    if weight is not None:
        running *= weight.astype(np.float64)
    # cumsum adds left to right, as TFLite's loop does (a plain sum would pair terms up)
    score = np.cumsum(running, axis=1)[:, -1]
    return (score > 0).astype(np.int32)


def lsh_projection_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    seeds = tensors[node.inputs[0]].data.astype(np.float32, copy=False)
    weight = tensors[node.inputs[2]].data if data.weighted else None
    bits = _sign_bits(np.ascontiguousarray(seeds), _row_bytes(tensors[node.inputs[1]]), weight)
    out = tensors[node.outputs[0]].data
    if not data.sparse:
        out[:] = bits
        return
    count, width = seeds.shape
    # the bits of a row, first bit highest, then the row's bucket offset i * (1 << width); int32
    # arithmetic wraps, and x86 shifts by width mod 32
    places = np.left_shift(np.int64(1), np.arange(width - 1, -1, -1, dtype=np.int64))
    signature = bits.reshape(count, width).astype(np.int64) @ places
    offsets = np.arange(count, dtype=np.int64) * (np.int64(1) << np.int64(width & 31))
    out[:] = _wrap32(signature + offsets)


def _wrap32(values: np.ndarray) -> np.ndarray:
    return (values & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


register_builtin(
    BuiltinOperator.LSH_PROJECTION,
    (1, 1),
    types=_INPUT_TYPES,
    op_data=LshData,
    prepare=lsh_projection_prepare,
    invoke=lsh_projection_invoke,
)

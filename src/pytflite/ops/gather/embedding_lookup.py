"""EMBEDDING_LOOKUP: rows of a table picked by id, copied as they are or dequantized (the hybrid
lookup of an int8/uint8/int4/int2 table into float32 or float16)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.quantization import AffineQuantization
from ...errors import KernelError, ensure, ensure_condition_eq, ensure_type_condition, ensure_types_eq
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .common import EMBEDDING_TYPES, Op, T, unsupported_type


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
    ensure_condition_eq(len(lookup.shape), 1, "NumDimensions(lookup) != 1")
    ensure_type_condition(lookup, T.INT32, "lookup->type != kTfLiteInt32")
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
            raise unsupported_type(value, "Type '%s' is not supported by a dequantizing embedding_lookup.")
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
        if value.type not in EMBEDDING_TYPES:
            raise unsupported_type(value, "Type '%s' is not supported by embedding_lookup.")
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


register_builtin(
    Op.EMBEDDING_LOOKUP,
    (1, 5),
    types=EMBEDDING_TYPES,
    op_data=HybridLookupData,
    prepare=embedding_lookup_prepare,
    invoke=embedding_lookup_invoke,
)

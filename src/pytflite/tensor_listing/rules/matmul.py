"""The matrix products (FULLY_CONNECTED, BATCH_MATMUL): what LiteRT 2.3's kernels add at their first
prepare, and when XNNPACK takes the node instead.

FULLY_CONNECTED adds six tensors and types them only for a hybrid product (float32 input, 8/4/2-bit
weights): the quantized input, per-row scaling factors, the int32 accumulator, per-row input offsets and
the weights' row sums, plus a ledger ('FC_ledger') for sparse weights. The optimized kernel runs constant
int4 weights of some shapes through its 4-bit kernel, which pads rows and columns to its tiles and
leaves the row sums untyped. BATCH_MATMUL adds seven: the transposed LHS and RHS
('BatchMatMul_scratch_buffer'), always typed, and for a hybrid product (float32 LHS, int8 RHS) the same
five as FULLY_CONNECTED's, sized per batch of matrices.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...core.types import BuiltinOperator, TensorType
from ...model.options import FullyConnectedOptionsWeightsFormat
from . import LiteRTKernels, Temporary, emulates, hybrid_input_scratch, input_tensor
from .xnnpack import (
    clamping_activation,
    filter_type,
    float_or_channelwise_int8,
    float_or_quantized_8bit,
    is_float,
    per_channel,
    positive_shape,
    quantized_int32,
    static,
)

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

_LOW_BIT_WEIGHTS = (TensorType.INT8, TensorType.INT4, TensorType.INT2)
_HYBRID_FC_WEIGHTS = (TensorType.UINT8, *_LOW_BIT_WEIGHTS)
_FC_SLOTS = ("input_quantized", "scaling_factors", "accumulator", "input_offsets", "row_sums", "ledger")

# LiteRT's x86 4-bit kernel: weight tiles of 4 rows by 32 columns, inputs packed by up to 4 rows
_FOUR_BIT_TILE_ROWS = 4
_FOUR_BIT_TILE_DEPTH = 32
_FOUR_BIT_MAX_INPUT_ROWS = 4


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _fully_connected_xnnpack_takes(context: Context, node: Node) -> bool:
    """VisitFullyConnectedNode in 2.3's XNNPACK delegate (dynamic weights refused: the delegate's
    dynamic fully-connected support is off by default; sparse weights, version 8, refused)."""
    options = node.builtin_data
    if options.weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
        return False
    if not 2 <= len(node.inputs) <= 3 or len(node.outputs) != 1:
        return False
    source, weights, bias = (input_tensor(context, node, i) for i in range(3))
    output = context.tensors[node.outputs[0]]
    if source is None or weights is None or weights.sparsity is not None:
        return False
    if not float_or_quantized_8bit(source) or not float_or_quantized_8bit(output):
        return False
    if not positive_shape(weights, 2) or not filter_type(weights, 0) or not static(weights):
        return False
    units, depth = weights.shape
    if bias is not None:
        if math.prod(bias.shape) != units or not static(bias):
            return False
        if not (is_float(bias) or quantized_int32(bias)):
            return False
        if is_float(weights) and bias.type != weights.type and weights.type != TensorType.FLOAT16:
            return False
    dynamically_quantized = is_float(source) and weights.type in _LOW_BIT_WEIGHTS
    static_int8 = source.type == TensorType.INT8 and weights.type in _LOW_BIT_WEIGHTS
    if source.type != output.type:
        return False
    if source.type != weights.type and not (dynamically_quantized or static_int8):
        return False
    if not dynamically_quantized and weights.type == TensorType.INT8 and weights.params.zero_point != 0:
        return False
    if (weights.type == TensorType.INT4 and depth % 2) or (weights.type == TensorType.INT2 and depth % 4):
        return False
    return clamping_activation(options.fused_activation_function)


def _four_bit_temporaries(batch: int, depth: int, units: int) -> tuple[Temporary, ...]:
    """The 4-bit kernel's temporaries: inputs padded to its row packing and depth tile, the accumulator
    to its weight tile; the row sums stay untyped."""
    packing = next(rows for rows in (4, 2, 1) if rows <= min(batch, _FOUR_BIT_MAX_INPUT_ROWS))
    rows = _round_up(batch, packing)
    columns = _round_up(depth, _FOUR_BIT_TILE_DEPTH)
    return (
        Temporary("input_quantized", TensorType.INT8, (rows, columns)),
        Temporary("scaling_factors", TensorType.FLOAT32, (rows,)),
        Temporary("accumulator", TensorType.INT32, (rows, _round_up(units, _FOUR_BIT_TILE_ROWS))),
        Temporary("input_offsets", TensorType.INT32, (rows,)),
        Temporary("row_sums"),
        Temporary("ledger"),
    )


@emulates(BuiltinOperator.FULLY_CONNECTED, xnnpack=_fully_connected_xnnpack_takes)
def fully_connected_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    untyped = tuple(Temporary(slot) for slot in _FC_SLOTS)
    hybrid = source.type == TensorType.FLOAT32 and weights.type in _HYBRID_FC_WEIGHTS
    if not hybrid or len(weights.shape) != 2 or weights.shape[1] == 0:
        return untyped
    units, depth = weights.shape
    batch = math.prod(source.shape) // depth
    if (
        kernels is LiteRTKernels.BUILTIN
        and weights.type == TensorType.INT4
        and weights.is_constant
        and batch > 0
        and depth % 2 == 0
        and units >= _FOUR_BIT_TILE_ROWS
        and depth >= _FOUR_BIT_TILE_DEPTH
    ):
        return _four_bit_temporaries(batch, depth, units)
    ledger = Temporary("ledger")
    if weights.sparsity is not None:
        blocks = weights.sparsity.dim_metadata[1]
        size = blocks.array_indices.size + blocks.array_segments.size - 1
        ledger = Temporary("ledger", TensorType.UINT8, (size,), "FC_ledger")
    return (
        *_hybrid_temporaries(source.shape, batch, (units, batch), units),
        ledger,
    )


def _hybrid_temporaries(
    source_shape: tuple[int, ...], rows: int, accumulator: tuple[int, int], row_sums: int
) -> tuple[Temporary, ...]:
    """The scratch of a hybrid product over `rows` input rows: quantized input, scaling factors,
    accumulator, input offsets, row sums."""
    return (
        *hybrid_input_scratch(source_shape, rows),
        Temporary("accumulator", TensorType.INT32, accumulator),
        Temporary("input_offsets", TensorType.INT32, (rows,)),
        Temporary("row_sums", TensorType.INT32, (row_sums,)),
    )


def _batch_matmul_xnnpack_takes(context: Context, node: Node) -> bool:
    """VisitBatchMatMulNode in 2.3's XNNPACK delegate."""
    options = node.builtin_data
    lhs, rhs = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = context.tensors[node.outputs[0]]
    if lhs is None or rhs is None or len(lhs.shape) < 2 or len(rhs.shape) < 2:
        return False
    rhs_channels = len(rhs.shape) - 2 if options.adj_y else len(rhs.shape) - 1
    if not float_or_quantized_8bit(lhs) or not float_or_channelwise_int8(rhs, rhs_channels):
        return False
    if not float_or_quantized_8bit(output):
        return False
    if lhs.type == TensorType.FLOAT32 and rhs.type == TensorType.INT8:
        return True  # dynamically quantized
    if rhs.type == TensorType.INT8 and int(rhs.quantization.zero_point[0]) != 0:
        return False
    # statically quantized or float: one XNNPACK type for both, which a per-channel RHS is not
    return lhs.type == rhs.type and not per_channel(rhs)


def _swap_last_two(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2])


@emulates(BuiltinOperator.BATCH_MATMUL, xnnpack=_batch_matmul_xnnpack_takes)
def batch_matmul_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    lhs, rhs = input_tensor(context, node, 0), input_tensor(context, node, 1)
    hybrid_slots = ("input_quantized", "scaling_factors", "accumulator", "input_offsets", "row_sums")
    if len(lhs.shape) < 2 or len(rhs.shape) < 2:
        return tuple(Temporary(slot) for slot in ("lhs_transposed", "rhs_transposed", *hybrid_slots))
    transposed = (
        Temporary("lhs_transposed", lhs.type, _swap_last_two(lhs.shape)),
        Temporary("rhs_transposed", rhs.type, _swap_last_two(rhs.shape), "BatchMatMul_scratch_buffer"),
    )
    if not (lhs.type == TensorType.FLOAT32 and rhs.type == TensorType.INT8):
        return (*transposed, *(Temporary(slot) for slot in hybrid_slots))
    options = node.builtin_data
    rows = lhs.shape[-1] if options.adj_x else lhs.shape[-2]
    units = rhs.shape[-2] if options.adj_y else rhs.shape[-1]
    all_rows = math.prod(lhs.shape[:-2]) * rows
    return (
        *transposed,
        *_hybrid_temporaries(lhs.shape, all_rows, (units, rows), math.prod(rhs.shape[:-2]) * units),
    )

"""Sparse FULLY_CONNECTED weights: which layouts TFLite's optimized kernels accept, densified once in prepare."""

from __future__ import annotations

import numpy as np

from ...core.quantization import DimensionType, SparsityParameters
from ...core.sparsity import densify
from ...errors import ensure
from ..kernel_type import OPTIMIZED, KernelType


def canonical(sparsity: SparsityParameters, block: int | None) -> bool:
    """The layout TFLite's optimized sparse kernels assume: rows DENSE then CSR over columns (or column
    blocks of `block` values, DENSE), traversed in order."""
    levels = sparsity.dim_metadata
    if block is None:
        return len(levels) == 2 and tuple(sparsity.traversal_order) == (0, 1) and not sparsity.block_map
    return (
        len(levels) == 3
        and tuple(sparsity.traversal_order) == (0, 1, 2)
        and tuple(sparsity.block_map or ()) == (1,)
        and levels[2].format == DimensionType.DENSE
        and levels[2].dense_size == block
    )


def supported_sparsity(sparsity: SparsityParameters) -> bool:
    """TFLite's SupportedSparsityFormat: rows DENSE, then columns CSR."""
    levels = sparsity.dim_metadata
    return (
        len(levels) >= 2
        and levels[0].format == DimensionType.DENSE
        and levels[1].format == DimensionType.SPARSE_CSR
    )


def _valid_sparsity(sparsity: SparsityParameters, batch: int, depth: int, units: int) -> bool:
    """TFLite's VerifySparsity: the rows fit the output, the column indices the input."""
    levels = sparsity.dim_metadata
    indices = levels[1].array_indices
    return batch * units >= (batch - 1) * units + levels[0].dense_size and (
        not indices.size or int(indices.max()) < depth
    )


def densify_float_weights(weights, batch, depth, units, kernel_type: KernelType) -> np.ndarray:
    ensure(weights.is_constant_or_persistent, "FULLY_CONNECTED sparse weights must be a constant tensor")
    sparsity = weights.sparsity
    if kernel_type is OPTIMIZED:
        unsupported = "Unsupported sparse fully-connected weight format."
        ensure(supported_sparsity(sparsity), unsupported)
        ensure(_valid_sparsity(sparsity, batch, depth, units), "Invalid sparse fully-connected format.")
        ensure(canonical(sparsity, None) or canonical(sparsity, 4), unsupported)
    return densify(weights.data.reshape(-1), weights.shape, sparsity)


def densify_int8_weights(weights, batch, depth, units) -> np.ndarray:
    """int8 sparse weights of an int8 FULLY_CONNECTED: TFLite's 1x16 block kernel only."""
    ensure(weights.is_constant_or_persistent, "FULLY_CONNECTED sparse weights must be a constant tensor")
    ensure(
        weights.params.zero_point == 0,
        "Quantized and sparse fully-connected format supports symmetric weight quantization only.",
    )
    sparsity = weights.sparsity
    ensure(
        supported_sparsity(sparsity) and _valid_sparsity(sparsity, batch, depth, units),
        "Invalid quantized and sparse fully-connected format.",
    )
    ensure(canonical(sparsity, 16), "Unsupported sparse fully-connected weight format.")
    return densify(weights.data.reshape(-1), weights.shape, sparsity)

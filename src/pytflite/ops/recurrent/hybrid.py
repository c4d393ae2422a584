"""Hybrid products (int8 weights times float activations quantized on the fly), shared by the hybrid
LSTM, RNN and SVDF kernels."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...fidelity.arithmetic import HostArithmetic
from ...fidelity.sse import sign_transfer_correction, sign_transfer_mask
from ..jit import compiled, read_only
from ..quant.hybrid_inputs import (
    quantize_rows_asymmetric,
    quantize_rows_symmetric,
)
from ..quant.integer_gemm import exact_float_type
from .common import F32


@dataclass(frozen=True)
class HybridMatrix:
    """Int8 weights [rows, cols] prepared for TFLite's hybrid MatrixBatchVectorMultiplyAccumulate:
    transposed to [cols, rows] as floats whose BLAS products of int8 values are exact (float32 while
    every sum stays below 2**24, else float64), the weight row sums (for asymmetric inputs; on x86,
    SseReductionSumVector's int16 lanes that wrap), the mask of the weights of -128 the x86 SSE kernel's
    16-value blocks multiply with the wrong sign (None elsewhere), and one float32 scale per output column."""

    weights_t: np.ndarray
    row_sums: np.ndarray
    mask: np.ndarray | None
    scales: np.ndarray

    @functools.cached_property
    def rows_product(self):
        """rnn_compiled.hybrid_rows_product where compiled kernels run (looked up once: the lookup reads
        the environment, a microsecond an invoke)."""
        return compiled("recurrent.rnn_compiled", "hybrid_rows_product")

    @functools.cached_property
    def compiled_operands(self) -> tuple[np.ndarray, ...]:
        """The matrix as the compiled recurrences take it (rnn_compiled.HYBRID_MATRIX): int8 weights
        [depth, units], the SSE quirk's int8 mask (0 x 0 without), int64 row sums, float32 scales;
        read-only and C-contiguous, made once."""
        mask = np.zeros((0, 0)) if self.mask is None else self.mask
        return tuple(
            read_only(np.ascontiguousarray(values.astype(dtype)))
            for values, dtype in (
                (self.weights_t, np.int8),
                (mask, np.int8),
                (self.row_sums, np.int64),
                (self.scales, F32),
            )
        )


def hybrid_matrix(
    blocks: list, arithmetic: HostArithmetic, sums_cache: dict | None = None, key: str = ""
) -> HybridMatrix:
    """Stack several int8 weight matrices (each with its scale) along their output rows, for the host of
    `arithmetic` (read in prepare). TFLite sums the weight rows on the first invoke after
    prepare only: with `sums_cache` (op data that prepare renews) the row sums of `key` are computed once
    and reused, stale if runtime weights change afterwards."""
    weights = np.concatenate([np.asarray(w).view(np.int8) for w, _ in blocks], axis=0)
    columns = weights.shape[1]
    dtype = exact_float_type(columns * 128 * 128 + 256 * 128 * columns)  # products + sign corrections
    scales = np.concatenate([np.full(np.asarray(w).shape[0], s, F32) for w, s in blocks])
    if sums_cache is not None and key in sums_cache:
        row_sums = sums_cache[key]
    else:
        row_sums = arithmetic.hybrid_row_sums(weights).astype(dtype)
        if sums_cache is not None:
            sums_cache[key] = row_sums
    mask = sign_transfer_mask(weights, arithmetic.sign_lost_columns(columns))
    return HybridMatrix(np.ascontiguousarray(weights.T.astype(dtype)), row_sums, mask, scales)


def hybrid_terms(bias: np.ndarray, rows: int, products: list, asymmetric: bool) -> np.ndarray:
    """bias + the hybrid product of each (matrix, values [rows, depth]) in turn, as float32 [rows, units]:
    a sequence's input terms. Where compiled kernels run, one call of rnn_compiled.hybrid_rows_product
    per product (the same arithmetic), else hybrid_product's NumPy calls."""
    out = np.empty((rows, bias.size), F32)
    out[...] = bias
    kernel = products[0][0].rows_product if products else None
    if kernel is not None:
        if all(
            kernel(read_only(np.ascontiguousarray(values, F32)), *matrix.compiled_operands, out, asymmetric)
            for matrix, values in products
        ):
            return out
        out[...] = bias  # a value that is not finite: NumPy's recipe for all of it
    for matrix, values in products:
        out += hybrid_product(matrix, values, asymmetric)
    return out


def hybrid_product(matrix: HybridMatrix, values: np.ndarray, asymmetric: bool) -> np.ndarray:
    """float32 sum * (row factor * weight scale) for each row of `values` [rows, n] and each output
    column: TFLite's hybrid MatrixBatchVectorMultiplyAccumulate term before it is added. The rows are
    quantized as BatchQuantizeFloats does (quant/hybrid_inputs.py)."""
    if asymmetric:
        quantized, factor, offset = quantize_rows_asymmetric(values)
    else:
        quantized, factor = quantize_rows_symmetric(values)
    dtype = matrix.weights_t.dtype
    sums = quantized.astype(dtype, copy=False) @ matrix.weights_t  # exact (see HybridMatrix)
    if matrix.mask is not None:
        sums += sign_transfer_correction(quantized, matrix.mask).astype(dtype, copy=False)
    if asymmetric:
        sums -= offset[:, None].astype(dtype) * matrix.row_sums
    product = sums.astype(F32, copy=False)
    product *= factor[:, None] * matrix.scales
    return product

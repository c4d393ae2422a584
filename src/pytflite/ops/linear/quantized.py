"""Quantized FULLY_CONNECTED (uint8, int8 and int16 activations): exact integer accumulators and the
requantization of the kernel LiteRT runs (fidelity/ruy.py picks it by host and shape)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.packed import unpack_packed
from ...core.quantization import AffineQuantization
from ...core.types import TensorType
from ...errors import ensure, ensure_eq
from ...fidelity.neon_pairs import weight_pairs
from ...fidelity.ruy import gemm_rounding
from ..kernel_type import OPTIMIZED, REFERENCE, KernelType
from ..quant.fixed_point import activation_range, quantize_multiplier, quantize_multipliers, wrap
from ..quant.integer_gemm import (
    double_rounding_requantizer,
    exact_float_type,
    float_scale_requantizer,
    gemm_requantizer,
    int64_requantizer,
)
from .common import (
    INT32_LIMIT,
    PACKED_WEIGHTS,
    RANGES,
    Kernel,
    T,
    largest,
    per_channel_scales,
    requantize_into,
    weight_values,
)
from .sparse import densify_int8_weights


@dataclass(frozen=True, slots=True)
class Scales:
    """The accumulator's scale to the output's: TFLite's fixed-point multiplier(s) and shift(s), the
    float64 ratio its float-scale requantization uses, and the weights' zero point."""

    multiplier: Any
    shift: Any
    effective: Any
    weights_zero_point: int


@dataclass(frozen=True, slots=True)
class Requantization:
    """Which TFLite kernel runs, and so how the accumulator is requantized and how wide it is."""

    requantize: Callable
    int64_accumulator: bool = False
    rounding: str | None = None  # cpu_backend_gemm's, where it runs the 8-bit product


@dataclass(frozen=True, slots=True)
class QuantizedFCKernel:
    """kernel(x, w, bias, out): the exact integer product (in a float type wide enough, see
    exact_float_type), requantized as LiteRT's kernel does."""

    float_type: type
    fixed: np.ndarray | None  # constant weights, prepared once
    weights_zero_point: int
    input_zero_point: int
    output_zero_point: int
    low: int
    high: int
    requantize: Callable
    overflows: bool  # TFLite's int32 sum may wrap
    pairs: Any  # ARM's int16 product pairs' correction, or None
    packed_shape: tuple[int, ...] | None  # the weights' shape where they are stored packed
    weights_type: TensorType

    def prepared_weights(self, raw) -> np.ndarray:
        matrix = raw.astype(self.float_type)
        if self.weights_zero_point:
            matrix -= self.weights_zero_point
        return matrix.T

    def __call__(self, x, w, bias_values, out) -> None:
        if self.fixed is not None:
            matrix = self.fixed
        elif self.packed_shape is not None:
            shape = self.packed_shape
            matrix = self.prepared_weights(
                unpack_packed(w, math.prod(shape), self.weights_type).reshape(shape)
            )
        else:
            matrix = self.prepared_weights(w)
        lhs = x.astype(self.float_type)
        if self.input_zero_point:
            lhs -= self.input_zero_point
        acc = np.matmul(lhs, matrix).astype(np.int64)  # exact: see exact_float_type
        if self.pairs is not None:
            acc -= self.pairs.correction(x)
        if bias_values is not None:
            acc += bias_values
        if self.overflows:
            acc = wrap(acc)
        requantize_into(out, acc, self.requantize, self.output_zero_point, self.low, self.high)


def quantized_fc_kernel(
    source, weights, bias, output, options, kernel_type: KernelType, batch, depth, host
) -> Kernel:
    """FULLY_CONNECTED's kernel for uint8, int8 and int16 activations, checked as TFLite's Prepare does."""
    ensure(isinstance(source.quantization, AffineQuantization), f"{_WHAT} input has no affine quantization")
    ensure(
        isinstance(weights.quantization, AffineQuantization) and weights.quantization.scale.size > 0,
        f"{_WHAT} weights have no affine quantization",
    )
    scales = _scales(source, weights, bias, output)
    low, high = activation_range(
        options.fused_activation_function, output.params.scale, output.params.zero_point, *RANGES[output.type]
    )
    _check_zero_points(source, output)
    chosen = _requantization(source, weights, bias, output, options, kernel_type, batch, depth, host, scales)
    if weights.sparsity is not None:
        ensure(
            source.type == T.INT8 and weights.type == T.INT8,
            "Sparse FULLY_CONNECTED weights are supported for float32 and int8 only",
        )
        values, constant = densify_int8_weights(weights, batch, depth, weights.shape[0]), True
        chosen = Requantization(double_rounding_requantizer(scales.multiplier, scales.shift))
    else:
        constant = weights.is_constant_or_persistent
        values = weight_values(weights) if constant else None
    input_zero_point = source.params.zero_point
    products = (
        depth * largest(source.type, input_zero_point) * largest(weights.type, scales.weights_zero_point)
    )
    if bias is None:
        bias_bound = 0
    elif bias.is_constant_or_persistent:
        bias_bound = int(np.max(np.abs(bias.data.astype(np.int64)), initial=0))
    else:
        bias_bound = INT32_LIMIT
    # ARM's ruy / gemmlowp kernels add product pairs in int16 (not the custom GEMV: "simd")
    pairs = None
    if chosen.rounding not in (None, "simd") and constant and weights.sparsity is None:
        uint8 = source.type == T.UINT8
        pairs = weight_pairs(host, values, uint8, scales.weights_zero_point, input_zero_point)
    kernel = QuantizedFCKernel(
        exact_float_type(products),
        None,
        scales.weights_zero_point,
        input_zero_point,
        output.params.zero_point,
        low,
        high,
        chosen.requantize,
        # TFLite sums in int32 (wrapping) unless its kernel uses an int64 accumulator
        not chosen.int64_accumulator and products + bias_bound >= INT32_LIMIT,
        pairs,
        tuple(weights.shape) if weights.type in PACKED_WEIGHTS else None,
        weights.type,
    )
    return dataclasses.replace(kernel, fixed=kernel.prepared_weights(values)) if constant else kernel


_WHAT = "FULLY_CONNECTED"


def _scales(source, weights, bias, output) -> Scales:
    """TFLite's requantization scales, per channel (int8/int16 inputs) or per tensor, with its checks."""
    units = weights.shape[0]
    input_scale, output_scale = source.params.scale, output.params.scale
    channel_scales = per_channel_scales(weights)
    if channel_scales is not None:
        ensure(
            source.type in (T.INT8, T.INT16),
            "input->type == kTfLiteInt8 || input->type == kTfLiteInt16 was not true.",
        )
        ensure_eq(weights.quantization.quantized_dimension, 0, f"{_WHAT} weights quantized_dimension")
        ensure_eq(channel_scales.size, units, f"{_WHAT} per-channel weight scales")
        effective = np.float64(input_scale) * channel_scales.astype(np.float64) / np.float64(output_scale)
        multiplier, shift = quantize_multipliers(effective)
        return Scales(multiplier, shift, effective, 0)  # symmetric: TFLite ignores their zero points
    weights_scale = float(weights.quantization.scale[0])
    if bias is not None:
        product = np.float64(input_scale) * np.float64(weights_scale)
        difference = abs(product - np.float64(bias.params.scale))
        ensure(
            difference / np.float64(output_scale) <= 0.02, "scale_diff / output_scale <= 0.02 was not true."
        )
    product = np.float64(np.float32(input_scale) * np.float32(weights_scale))
    ensure(product >= 0, "input_product_scale >= 0 was not true.")
    multiplier, shift = quantize_multiplier(float(product / np.float64(output_scale)))
    effective = np.float64(input_scale) * np.float64(weights_scale) / np.float64(output_scale)
    return Scales(multiplier, shift, effective, weights.params.zero_point)


def _check_zero_points(source, output) -> None:
    """int16 activations are symmetric (and an int16 output of uint8 inputs too), as TFLite requires."""
    input_zero_point, output_zero_point = source.params.zero_point, output.params.zero_point
    if source.type == T.INT16:
        ensure_eq(input_zero_point, 0, f"{_WHAT} int16 input zero point")
        ensure_eq(output_zero_point, 0, f"{_WHAT} int16 output zero point")
    if source.type == T.UINT8 and output.type == T.INT16:
        ensure_eq(output_zero_point, 0, f"{_WHAT} int16 output zero point")


def _requantization(
    source, weights, bias, output, options, kernel_type, batch, depth, host, scales: Scales
) -> Requantization:
    """The requantization of the kernel TFLite runs for these types, zero points, host and shape."""
    units, arithmetic = weights.shape[0], host.arithmetic
    if source.type == T.INT16:
        bias_type = _int16_bias_type(options, bias)
        nonzero = bool(source.params.zero_point or weights.params.zero_point or output.params.zero_point)
        if weights.type == T.INT16:
            # the 16x16 kernel: an int64 accumulator and the scalar int64 fixed-point multiply
            return Requantization(int64_requantizer(scales.multiplier, scales.shift), int64_accumulator=True)
        if kernel_type is REFERENCE or nonzero or bias_type == T.INT64:
            return Requantization(
                float_scale_requantizer(scales.effective, arithmetic), int64_accumulator=bias_type != T.INT32
            )
        rounding = _gemm_rounding(host, source.type, batch, units, depth)
        return Requantization(gemm_requantizer(rounding, scales.multiplier, scales.shift))
    if kernel_type is OPTIMIZED:
        rounding = _gemm_rounding(host, source.type, batch, units, depth)
        return Requantization(gemm_requantizer(rounding, scales.multiplier, scales.shift), rounding=rounding)
    return Requantization(float_scale_requantizer(scales.effective, arithmetic))


def _int16_bias_type(options, bias) -> TensorType | None:
    """The bias type TFLite's int16 kernels read: quantized_bias_type when set (the bias must then have
    it), else the bias's own type. (Without quantized_bias_type TFLite's reference int16 kernel reads an
    int32 bias as int64, and its 16x16 kernel an int64 bias as int32, i.e. garbage; the bias is read as
    what it is here.)"""
    declared = options.quantized_bias_type
    if declared not in (None, T.FLOAT32, 0):
        declared = T(declared)
        ensure(
            declared in (T.INT32, T.INT64),
            "params->quantized_bias_type == kTfLiteInt32 || params->quantized_bias_type == kTfLiteInt64 "
            "was not true.",
        )
        ensure(
            bias is None or bias.type == declared,
            "(bias == nullptr) || bias->type == params->quantized_bias_type was not true.",
        )
        return declared
    if bias is None:
        return None
    return bias.type


def _gemm_rounding(host, source_type, batch, units, depth) -> str:
    """The requantization of cpu_backend_gemm's kernel for this product on this host (fidelity/ruy.py)."""
    return gemm_rounding(
        host,
        int16=source_type == T.INT16,
        uint8=source_type == T.UINT8,
        one_column=batch == 1,
        rows=units,
        depth=depth,
    )

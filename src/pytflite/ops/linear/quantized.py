"""Quantized FULLY_CONNECTED (uint8, int8 and int16 activations): exact integer accumulators and the
requantization of the kernel LiteRT runs (fidelity/ruy.py picks it by host and shape)."""

from __future__ import annotations

import math

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


def quantized_fc_kernel(
    source, weights, bias, output, options, kernel_type: KernelType, batch, depth, host
) -> Kernel:
    what = "FULLY_CONNECTED"
    ensure(isinstance(source.quantization, AffineQuantization), f"{what} input has no affine quantization")
    ensure(
        isinstance(weights.quantization, AffineQuantization) and weights.quantization.scale.size > 0,
        f"{what} weights have no affine quantization",
    )
    units = weights.shape[0]
    input_scale, output_scale = source.params.scale, output.params.scale
    channel_scales = per_channel_scales(weights)
    per_channel = channel_scales is not None
    if per_channel:
        ensure(
            source.type in (T.INT8, T.INT16),
            "input->type == kTfLiteInt8 || input->type == kTfLiteInt16 was not true.",
        )
        ensure_eq(weights.quantization.quantized_dimension, 0, f"{what} weights quantized_dimension")
        ensure_eq(channel_scales.size, units, f"{what} per-channel weight scales")
        effective = np.float64(input_scale) * channel_scales.astype(np.float64) / np.float64(output_scale)
        multiplier, shift = quantize_multipliers(effective)
        weights_zero_point = 0  # per-channel weights are symmetric: TFLite ignores their zero points
    else:
        weights_scale = float(weights.quantization.scale[0])
        if bias is not None:
            product = np.float64(input_scale) * np.float64(weights_scale)
            difference = abs(product - np.float64(bias.params.scale))
            ensure(
                difference / np.float64(output_scale) <= 0.02,
                "scale_diff / output_scale <= 0.02 was not true.",
            )
        product = np.float64(np.float32(input_scale) * np.float32(weights_scale))
        ensure(product >= 0, "input_product_scale >= 0 was not true.")
        multiplier, shift = quantize_multiplier(float(product / np.float64(output_scale)))
        effective = np.float64(input_scale) * np.float64(weights_scale) / np.float64(output_scale)
        weights_zero_point = weights.params.zero_point
    low, high = RANGES[output.type]
    low, high = activation_range(
        options.fused_activation_function, output_scale, output.params.zero_point, low, high
    )
    input_zero_point, output_zero_point = source.params.zero_point, output.params.zero_point
    if source.type == T.INT16:
        ensure_eq(input_zero_point, 0, f"{what} int16 input zero point")
        ensure_eq(output_zero_point, 0, f"{what} int16 output zero point")
    if source.type == T.UINT8 and output.type == T.INT16:
        ensure_eq(output_zero_point, 0, f"{what} int16 output zero point")

    # Which TFLite kernel runs, and so how the accumulator is requantized and how wide it is.
    int64_accumulator = False
    rounding = None  # cpu_backend_gemm's, where it runs the 8-bit product
    if source.type == T.INT16:
        bias_type = _int16_bias_type(options, bias)
        nonzero = bool(input_zero_point or weights.params.zero_point or output_zero_point)
        if weights.type == T.INT16:
            # the 16x16 kernel: an int64 accumulator and the scalar int64 fixed-point multiply
            requantize = int64_requantizer(multiplier, shift)
            int64_accumulator = True
        elif kernel_type is REFERENCE or nonzero or bias_type == T.INT64:
            requantize = float_scale_requantizer(effective, host.arithmetic)
            int64_accumulator = bias_type != T.INT32
        else:
            requantize = gemm_requantizer(
                _gemm_rounding(host, source.type, batch, units, depth), multiplier, shift
            )
    elif kernel_type is OPTIMIZED:
        rounding = _gemm_rounding(host, source.type, batch, units, depth)
        requantize = gemm_requantizer(rounding, multiplier, shift)
    else:
        requantize = float_scale_requantizer(effective, host.arithmetic)

    if weights.sparsity is not None:
        ensure(
            source.type == T.INT8 and weights.type == T.INT8,
            "Sparse FULLY_CONNECTED weights are supported for float32 and int8 only",
        )
        values = densify_int8_weights(weights, batch, depth, units)
        requantize = double_rounding_requantizer(multiplier, shift)
        constant = True
    else:
        values = None
        constant = weights.is_constant_or_persistent
        if constant:
            values = weight_values(weights)

    products = depth * largest(source.type, input_zero_point) * largest(weights.type, weights_zero_point)
    float_type = exact_float_type(products)
    if bias is None:
        bias_bound = 0
    elif bias.is_constant_or_persistent:
        bias_bound = int(np.max(np.abs(bias.data.astype(np.int64)), initial=0))
    else:
        bias_bound = INT32_LIMIT
    # TFLite sums in int32 (wrapping) unless its kernel uses an int64 accumulator
    overflows = not int64_accumulator and products + bias_bound >= INT32_LIMIT

    def prepared_weights(raw) -> np.ndarray:
        matrix = raw.astype(float_type)
        if weights_zero_point:
            matrix -= weights_zero_point
        return matrix.T

    fixed = prepared_weights(values) if constant else None
    # ARM's ruy / gemmlowp kernels add product pairs in int16 (not the custom GEMV: "simd")
    pairs = None
    if rounding not in (None, "simd") and constant and weights.sparsity is None:
        uint8 = source.type == T.UINT8
        pairs = weight_pairs(host, values, uint8, weights_zero_point, input_zero_point)
    packed = weights.type in PACKED_WEIGHTS
    weights_shape = tuple(weights.shape)
    weights_type = weights.type

    def kernel(x, w, bias_values, out):
        if fixed is not None:
            matrix = fixed
        elif packed:
            matrix = prepared_weights(
                unpack_packed(w, math.prod(weights_shape), weights_type).reshape(weights_shape)
            )
        else:
            matrix = prepared_weights(w)
        lhs = x.astype(float_type)
        if input_zero_point:
            lhs -= input_zero_point
        acc = np.matmul(lhs, matrix).astype(np.int64)  # exact: see exact_float_type
        if pairs is not None:
            acc -= pairs.correction(x)
        if bias_values is not None:
            acc += bias_values
        if overflows:
            acc = wrap(acc)
        requantize_into(out, acc, requantize, output_zero_point, low, high)

    return kernel


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

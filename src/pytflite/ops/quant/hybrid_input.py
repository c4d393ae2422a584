"""Dynamic (per-batch) quantization of float32 inputs to int8, as TFLite's hybrid kernels do it.

Hybrid kernels (float32 activations, int8 weights) quantize each batch row of their input on the fly with
tensor_utils::SymmetricQuantizeFloats or AsymmetricQuantizeFloats. LiteRT's x86 build runs the NEON
versions of both (through its NEON-to-SSE translation): whole blocks of 8 values are scaled by a float32
reciprocal and rounded as trunc(v + copysign(0.5, v)) *in float32* (the pre-ARMv8 RoundToNearest), and the
last size % 8 values by std::round (halves away from zero, exactly). The two differ when v + 0.5 rounds up
in float32 (v = 0.49999997 gives 1 in a block, 0 in the tail).

Both functions take a [batches, size] float32 array and return the quantized values as a float32 array
of integers (exact), the per-batch float32 scaling factors and (asymmetric) the per-batch zero points.
"""

from __future__ import annotations

import numpy as np

from .fixed_point import round_half_away

_BLOCK = 8  # two float32x4 vectors per iteration
_HALF = np.float32(0.5)


def _round_rows(products: np.ndarray) -> np.ndarray:
    """Round each row of a float32 array in place as the NEON code does: trunc(p +- 0.5) in float32
    over whole blocks of 8, std::round (half away from zero) over the rest."""
    size = products.shape[-1]
    blocked = size - size % _BLOCK
    if blocked:
        head = products[:, :blocked] if blocked < size else products
        half = np.copysign(_HALF, head)  # -0.0 gets -0.5: trunc(-0.5) is 0 as trunc(0.5) is
        np.add(head, half, out=head)
        np.trunc(head, out=head)
    if blocked < size:
        products[:, blocked:] = round_half_away(products[:, blocked:])
    return products


def symmetric_quantize_floats(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SymmetricQuantizeFloats per row: scale = max(|min|, |max|) / 127 (float32), values scaled by the
    float32 127 / range, rounded and clamped to [-127, 127]; an all-zero row gives zeros and a scale
    of 1. Returns (values [rows, size] float32, scales [rows] float32)."""
    values = np.asarray(values, np.float32)
    with np.errstate(all="ignore"):
        ranges = np.maximum(np.abs(values.min(axis=1)), np.abs(values.max(axis=1)))
        zero = ranges == 0
        safe = np.where(zero, np.float32(1), ranges).astype(np.float32)
        scales = np.where(zero, np.float32(1), safe / np.float32(127)).astype(np.float32)
        inverse = np.where(zero, np.float32(0), np.float32(127) / safe).astype(np.float32)
        quantized = _round_rows(values * inverse[:, None])
    np.clip(quantized, -127, 127, out=quantized)
    return quantized, scales


def asymmetric_parameters(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AsymmetricQuantizeFloats' per-row parameters: (scales float32, zero points int64, float32
    reciprocals of the scales). The range [min(0, min), max(0, max)] maps onto [-128, 127]: the scale is
    float32(max - min) / 255 in double, the zero point the nudged one of whichever end loses less,
    rounded half away from zero. A row whose range is empty gets a scale of 1, a zero point of 0 and a
    reciprocal of 0 (so that its values quantize to 0)."""
    lows = np.minimum(values.min(axis=1), np.float32(0))
    highs = np.maximum(values.max(axis=1), np.float32(0))
    flat = lows == highs
    spread = (highs - lows).astype(np.float64)  # the subtraction is float32, as in C
    scale = np.where(flat, 255.0, spread) / 255.0
    low, high = lows.astype(np.float64), highs.astype(np.float64)
    with np.errstate(all="ignore"):
        from_min = -128.0 - low / scale
        from_max = 127.0 - high / scale
        error_min = 128.0 + np.abs(low / scale)
        error_max = 127.0 + np.abs(high / scale)
        zero_point = np.where(error_min < error_max, from_min, from_max)
        nudged = np.where(zero_point <= -128.0, -128.0, np.where(zero_point >= 127.0, 127.0, zero_point))
        offsets = np.where(flat, 0, round_half_away(nudged)).astype(np.int64)
        scales = np.where(flat, np.float32(1), scale.astype(np.float32)).astype(np.float32)
        inverse = np.where(flat, 0.0, 1.0 / scales.astype(np.float64)).astype(np.float32)
    return scales, offsets, inverse


def asymmetric_quantize_floats(
    values: np.ndarray, centered: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AsymmetricQuantizeFloats per row: round(value / scale) + zero point, clamped to [-128, 127].
    Returns (values [rows, size] float32, scales [rows] float32, zero points [rows] int64); with
    `centered` the values come back minus their zero point (what a hybrid kernel multiplies)."""
    values = np.asarray(values, np.float32)
    scales, offsets, inverse = asymmetric_parameters(values)
    with np.errstate(all="ignore"):
        quantized = _round_rows(values * inverse[:, None])
    column = offsets[:, None].astype(np.float32)
    if centered:  # clamp(r + zp, -128, 127) - zp == clamp(r, -128 - zp, 127 - zp)
        np.clip(quantized, -128 - column, 127 - column, out=quantized)
    else:
        np.add(quantized, column, out=quantized)
        np.clip(quantized, -128, 127, out=quantized)
    return quantized, scales, offsets

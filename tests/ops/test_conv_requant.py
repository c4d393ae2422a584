"""Requant's float64 path (ops/conv/requant.py) against TFLite's NEON requantization in int64
(fixed_point.multiply_by_quantized_multiplier_simd), at the edges its exactness argument relies on:
multipliers near 2**30 and 2**31, right and left shifts, extreme zero points and clamp ranges, and
accumulators at the bound the kernel declared, for int8, uint8 and int16 outputs; in NumPy calls and in
the compiled kernels of requant_compiled.py (the `kernels` fixture)."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite.ops.conv.requant import Requant
from pytflite.ops.quant.fixed_point import multiply_by_quantized_multiplier_simd

RANGES = {np.int8: (-128, 127), np.uint8: (0, 255), np.int16: (-32768, 32767)}


def _reference(acc, terms, multiplier, shift, zero_point, low, high):
    values = multiply_by_quantized_multiplier_simd(acc + terms, multiplier, shift) + zero_point
    return np.clip(values, low, high)


def _accumulators(rng, pixels: int, channels: int, bound: int) -> np.ndarray:
    """Random accumulators in [-bound, bound] with both ends, 0 and +-1 in every channel."""
    acc = rng.integers(-bound, bound + 1, (pixels, channels))
    acc[:5] = np.array([-bound, bound, 0, 1, -1])[:, None]
    return acc


CASES = [
    # dtype, multipliers (per channel), shifts, zero point, clamp (None: the type's range), bound
    (np.int8, [2**30, 2**31 - 1, 1518500250], [-7, -1, 0], -128, None, 2**20),
    (np.int8, [2**31 - 1], [-8], 127, None, 2**20),
    (np.int8, [1073741825, 2**31 - 2], [2, 0], 0, (0, 127), 2**12),  # left shifts, ReLU
    (np.int8, [1395864371], [-9], -5, (-5, 1), 2**18),  # a narrow ReLU6-like range
    (np.int8, [1395864371], [-9], 3, (3, 3), 2**18),  # a single-value range
    (np.uint8, [2**30, 1717986918], [-8, -3], 0, None, 2**19),
    (np.uint8, [2**31 - 1], [-12], 255, (200, 255), 2**21),
    (np.int16, [1288490189, 2**30], [-4, -6], 0, None, 2**21),  # lifted in int32
    # a shift of 45: a lift of 256 would leave 2**53, so -low (128) lifts and is added back
    (np.int8, [2**31 - 1], [-14], 0, None, 2**20),
]


def test_cases_cover_every_finish():
    """The cases reach each finish: values cast to int16 and to int32, the lift wrapped away by the
    cast and added back."""
    seen = set()
    for dtype, multipliers, shifts, zero_point, clamp, bound in CASES:
        low, high = clamp if clamp is not None else RANGES[dtype]
        requant = Requant(np.array(multipliers), np.array(shifts), zero_point, low, high, dtype)
        requant.product_bound = bound
        fast = requant.float_constants(None)
        seen.add((fast.low.dtype.name, fast.back is not None))
    assert {("int16", False), ("int32", False), ("int16", True)} <= seen


@pytest.mark.parametrize("dtype, multipliers, shifts, zero_point, clamp, bound", CASES)
def test_float_path_matches_simd_rounding(dtype, multipliers, shifts, zero_point, clamp, bound, kernels):
    rng = np.random.default_rng(abs(hash((str(dtype), zero_point, bound))) % 2**32)
    channels = 2 * len(multipliers)
    multiplier = np.resize(np.array(multipliers, np.int64), channels)
    shift = np.resize(np.array(shifts, np.int64), channels)
    low, high = clamp if clamp is not None else RANGES[dtype]
    terms = rng.integers(-1000, 1000, channels)
    for pixels in (7, 3000):  # one row, and several rows with a tail (rows.py)
        acc = _accumulators(rng, pixels, channels, bound)
        requant = Requant(multiplier, shift, zero_point, low, high, dtype)
        requant.product_bound = bound
        assert requant.float_constants(terms) is not None, "the float64 path must be the one tested"
        out = np.empty((1, pixels, channels), dtype)
        wide = np.empty(out.shape, np.int64)
        product = acc.astype(np.float32).reshape(out.shape)
        one_call = len(requant.float_calls(product, terms, wide, out)) == 1
        assert one_call == (kernels == "compiled")
        requant.requantize(
            acc.astype(np.float32 if bound < 2**24 else np.float64).reshape(out.shape), terms, wide, out
        )
        expected = _reference(acc, terms, multiplier, shift, zero_point, low, high)
        np.testing.assert_array_equal(out.reshape(pixels, channels), expected)


@pytest.mark.parametrize("dtype, multipliers, shifts, zero_point, clamp, bound", CASES)
def test_folded_product_finish_matches_simd_rounding(
    dtype, multipliers, shifts, zero_point, clamp, bound, kernels
):
    """CONV_2D's scaled path: the product already multiplied by m' and offset by c' (as the weights and
    the bias row carry them), then Requant.finish_calls."""
    rng = np.random.default_rng(bound)
    channels = len(multipliers)
    multiplier, shift = np.array(multipliers, np.int64), np.array(shifts, np.int64)
    low, high = clamp if clamp is not None else RANGES[dtype]
    terms = rng.integers(-1000, 1000, channels)
    acc = _accumulators(rng, 500, channels, bound)
    requant = Requant(multiplier, shift, zero_point, low, high, dtype)
    requant.product_bound = bound
    fast = requant.float_constants(terms)
    scaled = acc * fast.scale + fast.constant  # exact: the integer numerators stay below 2**53
    out = np.empty(acc.shape, dtype)
    calls = requant.finish_calls(scaled, out, np.empty(acc.shape, np.int32), terms)
    assert (len(calls) == 1) == (kernels == "compiled")
    for call in calls:
        call()
    np.testing.assert_array_equal(out, _reference(acc, terms, multiplier, shift, zero_point, low, high))

"""AsymmetricRowQuantizer against quantize_rows_asymmetric, bit for bit (values, scales, zero points),
with its NumPy steps and with its compiled kernel (the `kernels` fixture)."""

import numpy as np
import pytest

from pytflite.ops.quant.hybrid_inputs import AsymmetricRowQuantizer, quantize_rows_asymmetric

# products that round differently in NEON blocks and in the scalar tail (see hybrid_inputs)
TIES = np.array([0.49999997, -0.49999997, 2.5, -2.5, 1.4999999, 0.5, -0.5, 126.5], np.float32)


def rows_of(rng, rows: int, size: int, kind: str) -> np.ndarray:
    x = (rng.standard_normal((rows, size)) * 2.0 ** rng.uniform(-20, 20)).astype(np.float32)
    if kind == "positive":
        x = np.abs(x)
    elif kind == "ties" and size > 2:  # inverse scale 1: range [-128, 127]
        x[:, 0], x[:, -1] = 127, -128
        for row in x:
            positions = rng.permutation(np.arange(1, size - 1))[: TIES.size]
            row[positions] = TIES[: positions.size]
    elif kind == "zero row":  # scale 1, zero point 0: the general recipe
        x[rng.integers(0, rows)] = 0
    elif kind == "not finite":
        x[rng.integers(0, rows), 0] = rng.choice([np.nan, np.inf, -np.inf, 3e38, 1e-44])
    return x


@pytest.mark.parametrize("kind", ["normal", "positive", "ties", "zero row", "not finite"])
@pytest.mark.parametrize("centered", [False, True])
def test_quantizer_matches_general_recipe(kind, centered, kernels):
    rng = np.random.default_rng(len(kind) + centered)
    for _ in range(60):
        rows, size = int(rng.integers(1, 24)), int(rng.choice([1, 7, 8, 9, 32, 33, 100, 1000]))
        x = rows_of(rng, rows, size, kind)
        quantizer = AsymmetricRowQuantizer(rows, size, centered)
        assert (quantizer._compiled is not None) == (kernels == "compiled")
        with np.errstate(all="ignore"):
            expected = quantize_rows_asymmetric(x, centered)
            for out in (None, None, np.empty_like(x)):  # the second call reuses the quantizer's arrays
                got = quantizer(x, out)
                assert out is None or got[0] is out
                for ours, theirs in zip(got, expected):
                    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
                # the quantized values are integers: -0.0 (a product in (-0.5, 0) rounded) and 0.0 alike
                assert np.array_equal(got[0], expected[0], equal_nan=True), (rows, size)
                for ours, theirs in zip(got[1:], expected[1:]):
                    assert ours.tobytes() == theirs.tobytes(), (rows, size)


# ranges whose two zero-point candidates (-128 - low / scale, 127 - high / scale) round to different
# integers: the float32 spread puts them ~1e-5 apart, straddling a half
STRADDLING = [
    (-14.821787, 5.123098),
    (-3.4153228, 9.487008),
    (-21.810843, 5.3860517),
    (-0.76224935, 4.037099),
]


@pytest.mark.parametrize("centered", [False, True])
def test_quantizer_chooses_the_end_when_the_candidates_straddle_a_half(centered, kernels):
    rng = np.random.default_rng(7)
    for low, high in STRADDLING:
        x = rng.uniform(low, high, (3, 16)).astype(np.float32)
        x[1, 0], x[1, 5] = low, high
        expected = quantize_rows_asymmetric(x, centered)
        for ours, theirs in zip(AsymmetricRowQuantizer(3, 16, centered)(x), expected):
            assert ours.tobytes() == theirs.tobytes(), (low, high)

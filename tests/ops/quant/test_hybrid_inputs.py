"""AsymmetricRowQuantizer against quantize_rows_asymmetric, bit for bit (values, scales, zero points)."""

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
def test_quantizer_matches_general_recipe(kind, centered):
    rng = np.random.default_rng(len(kind) + centered)
    for _ in range(60):
        rows, size = int(rng.integers(1, 24)), int(rng.choice([1, 7, 8, 9, 32, 33, 100]))
        x = rows_of(rng, rows, size, kind)
        quantizer = AsymmetricRowQuantizer(rows, size, centered)
        with np.errstate(all="ignore"):
            expected = quantize_rows_asymmetric(x, centered)
            for _ in range(2):  # the second call reuses the quantizer's arrays
                got = quantizer(x)
                for ours, theirs in zip(got, expected):
                    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
                    assert ours.tobytes() == theirs.tobytes(), (rows, size)

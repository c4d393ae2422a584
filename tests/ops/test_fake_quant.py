"""FAKE_QUANT against LiteRT, bit for bit: nudged ranges (zero on a level, ranges not containing zero),
bit widths, values on and between the levels, halves, the range's ends, infinities and NaN; refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import litert, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

RANGES = [
    (-1.0, 1.0, 8),
    (-0.3, 5.7, 8),
    (0.0, 6.0, 8),
    (-6.0, 0.0, 4),
    (-2.5, 3.25, 16),
    (0.5, 2.0, 8),
    (-1e-3, 7e-3, 2),
]


def model(low: float, high: float, bits: int, x: np.ndarray, narrow: bool = False) -> SingleOpModel:
    options = {"min": low, "max": high, "num_bits": bits, "narrow_range": narrow}
    return SingleOpModel(Op.FAKE_QUANT, [Operand(x)], [T.FLOAT32], options, output_shapes=[list(x.shape)])


def _inputs(low: float, high: float, bits: int) -> np.ndarray:
    """Levels, halfway points (and their float neighbours), the ends and beyond, and special values."""
    step = (high - low) / ((1 << bits) - 1)
    grid = np.linspace(low - 3 * step, high + 3 * step, 301, dtype=np.float32)
    halves = (grid + np.float32(step / 2)).astype(np.float32)
    around = np.concatenate(
        [np.nextafter(halves, np.float32(np.inf)), np.nextafter(halves, np.float32(-np.inf))]
    )
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, low, high, 1e30, -1e30], np.float32)
    return np.concatenate([grid, halves, around, special]).astype(np.float32)


@pytest.mark.parametrize(("low", "high", "bits"), RANGES)
def test_fake_quant_as_litert(low, high, bits):
    x = _inputs(low, high, bits)
    model(low, high, bits, x).check(rtol=0, scale=1e-30)


@settings(max_examples=40, deadline=None)
@given(
    low=st.floats(-100, 0, width=32),
    width=st.floats(2**-10, 200, width=32),
    bits=st.integers(2, 16),
    x=st.lists(st.floats(-300, 300, width=32), min_size=1, max_size=50),
)
def test_fake_quant_random_ranges(low, width, bits, x):
    high = float(np.float32(low) + np.float32(width))
    values = np.array(x, np.float32)
    ours_and_theirs = model(float(np.float32(low)), high, bits, values).build()
    model_bytes, feeds = ours_and_theirs
    mine = run(pytflite.Interpreter(model_content=model_bytes), feeds)
    theirs = run(
        litert.Interpreter(
            model_content=model_bytes,
            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        ),
        feeds,
    )
    np.testing.assert_array_equal(mine[0], theirs[0])


def test_narrow_range_is_refused_as_litert_refuses_it():
    model(-1.0, 1.0, 8, np.zeros(3, np.float32), narrow=True).fails(
        "narrow_range FakeQuant is not currently supported"
    )


def test_bad_options_and_types_are_refused_with_a_reason():
    model(1.0, 1.0, 8, np.zeros(3, np.float32)).fails("FAKE_QUANT min 1.0 is not below max 1.0")
    model(-1.0, 1.0, 17, np.zeros(3, np.float32)).fails(r"FAKE_QUANT num_bits 17 is not in \[2, 16\]")
    SingleOpModel(
        Op.FAKE_QUANT,
        [Operand(np.zeros(3, np.int32))],
        [T.INT32],
        {"min": -1.0, "max": 1.0, "num_bits": 8, "narrow_range": False},
    ).fails("FAKE_QUANT")

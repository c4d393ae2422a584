"""RFFT2D, COMPLEX_ABS, REAL and IMAG against LiteRT: ranks, FFT sizes that crop and pad, constant and
run-time fft_length, TFLite's degenerate width-1 transform, complex64/complex128, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

powers_of_two = st.sampled_from([1, 2, 4, 8, 16, 32])


def rfft2d_model(x, fft_length, constant=True, output_type=T.COMPLEX64, length_type=np.int32):
    return SingleOpModel(
        Op.RFFT2D,
        [Operand(x), Operand(np.array(fft_length, length_type), constant=constant)],
        [output_type],
    )


@settings(max_examples=50, deadline=None)
@given(
    shape=hnp.array_shapes(min_dims=2, max_dims=4, min_side=1, max_side=9),
    fft_height=powers_of_two,
    fft_width=powers_of_two,
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_rfft2d(shape, fft_height, fft_width, constant, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    rfft2d_model(x, [fft_height, fft_width], constant).check()


def test_rfft2d_larger_sizes():
    x = np.random.default_rng(1).standard_normal([2, 50, 70]).astype(np.float32)
    rfft2d_model(x, [64, 128]).check()
    rfft2d_model(x, [32, 16], constant=False).check()


@pytest.mark.parametrize("fft_height", [1, 2, 4, 8, 16])
def test_rfft2d_width_one(fft_height):
    # fft_length[1] == 1 is not a DFT in TFLite (its Ooura FFT skips the column pass); we follow it.
    x = np.random.default_rng(fft_height).standard_normal([3, 5, 4]).astype(np.float32)
    rfft2d_model(x, [fft_height, 1]).check()


def prepare_error(model: SingleOpModel, match: str) -> None:
    content, _ = model.build()
    with pytest.raises(RuntimeError, match=match):
        pytflite.Interpreter(model_content=content).allocate_tensors()


def test_rfft2d_errors():
    x = np.zeros([4, 4], np.float32)
    prepare_error(rfft2d_model(x, [4, 6]), "fft_length\\[1\\] must be a power of two, got 6")
    prepare_error(rfft2d_model(x, [0, 4]), "fft_length\\[0\\] must be a power of two, got 0")
    prepare_error(rfft2d_model(x[0], [4, 4]), "input rank must be at least 2, got 1")
    prepare_error(rfft2d_model(x.astype(np.float64), [4, 4]), r"Type FLOAT64 \(input\) is unsupported")
    prepare_error(rfft2d_model(x, [4, 4], length_type=np.int64), r"Type INT64 \(fft_length\) is unsupported")
    prepare_error(rfft2d_model(x, [4, 4, 4]), "fft_length size 3 != 2")


def test_rfft2d_run_time_length_error():
    x = np.zeros([4, 4], np.float32)
    content, feeds = rfft2d_model(x, [4, 3], constant=False).build()
    interpreter = pytflite.Interpreter(model_content=content)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), feeds):
        interpreter.set_tensor(detail["index"], value)
    with pytest.raises(RuntimeError, match="fft_length\\[1\\] must be a power of two, got 3"):
        interpreter.invoke()


PARTS = [(Op.COMPLEX_ABS, np.abs), (Op.REAL, np.real), (Op.IMAG, np.imag)]


@pytest.mark.parametrize(("op", "numpy_op"), PARTS, ids=[op.name for op, _ in PARTS])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["complex64", "complex128"])
@settings(max_examples=10, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5), seed=st.integers(0, 2**16))
def test_complex_parts(op, numpy_op, dtype, shape, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    output_type = T.FLOAT32 if dtype == np.complex64 else T.FLOAT64
    (out,) = SingleOpModel(op, [Operand(x)], [output_type]).check()
    np.testing.assert_allclose(out, numpy_op(x), rtol=1e-6)


def test_complex_special_values():
    x = np.array([np.inf + 1j, 1 - 1j * np.inf, np.nan + 0j, 3e38 + 3e38j, -0.0 - 0.0j], np.complex64)
    for op, _ in PARTS:
        SingleOpModel(op, [Operand(x)], [T.FLOAT32]).check()


def test_complex_part_errors():
    x = np.zeros([2, 2], np.complex64)
    prepare_error(
        SingleOpModel(Op.REAL, [Operand(x)], [T.FLOAT64]), r"Type FLOAT64 \(output\) is unsupported"
    )
    prepare_error(
        SingleOpModel(Op.COMPLEX_ABS, [Operand(x.real.copy())], [T.FLOAT32]),
        r"Type FLOAT32 \(input\) is unsupported by op COMPLEX_ABS",
    )

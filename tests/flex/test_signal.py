"""The Fourier and complex-number kernels (flex/kernels/signal.py) where the fixtures do not reach: TF's
checks of fft_length, cropping, empty and zero-length transforms, and Real, Imag and ComplexAbs (which
the converter always makes builtins). Expected values are TF 2.18.1's."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pytflite.flex
from pytflite.flex.dtypes import BY_NAME

C64 = {"Tcomplex": "complex64", "Treal": "float32"}
C128 = {"Tcomplex": "complex128", "Treal": "float64"}


def run(op: str, attrs: dict, *inputs):
    values = {k: BY_NAME[v] for k, v in attrs.items()}
    return pytflite.flex.kernel_for(op).compute(pytflite.flex.TfNode(op, op, values), *inputs)


def lengths(*values):
    return np.array(values, np.int32)


@pytest.mark.parametrize(("op", "rank"), [("FFT", 1), ("IFFT2D", 2), ("FFT3D", 3)])
def test_complex_transforms_over_the_innermost_dims(op, rank):
    x = (np.arange(24) * (1 + 0.5j)).reshape(2, 3, 4).astype(np.complex128)
    axes = tuple(range(-rank, 0))
    expected = (np.fft.ifftn if op.startswith("I") else np.fft.fftn)(x, axes=axes)
    result = run(op, {"Tcomplex": "complex128"}, x)
    assert result.dtype == np.complex128
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)


def test_complex64_stays_complex64_and_empty_passes_through():
    x = np.ones((3, 8), np.complex64)
    assert run("FFT", {"Tcomplex": "complex64"}, x).dtype == np.complex64
    assert run("IFFT", {"Tcomplex": "complex64"}, np.ones((3, 0), np.complex64)).shape == (3, 0)


def test_real_transforms_crop_their_input():
    x = np.arange(16.0).reshape(2, 8)
    np.testing.assert_allclose(run("RFFT", C128, x, lengths(5)), np.fft.rfft(x[:, :5]))
    spectrum = np.arange(12.0).reshape(3, 4) + 1j
    np.testing.assert_allclose(
        run("IRFFT2D", C128, spectrum, lengths(2, 5)), np.fft.irfft2(spectrum[:2, :3], (2, 5))
    )


def test_irfft_ignores_the_imaginary_part_of_the_first_bin():
    result = run("IRFFT", C64, np.ones((3, 4), np.complex64) * (1 + 2j), lengths(1))
    assert result.dtype == np.float32 and result.tolist() == [[1], [1], [1]]


def test_zero_lengths_and_empty_inputs_give_zeros():
    assert run("RFFT", C64, np.ones((3, 4), np.float32), lengths(0)).shape == (3, 0)
    assert run("IRFFT", C64, np.ones((3, 4), np.complex64), lengths(0)).shape == (3, 0)
    result = run("RFFT", C64, np.zeros((3, 0), np.float32), lengths(4))
    assert result.shape == (3, 3) and not result.any()


@pytest.mark.parametrize(
    ("op", "shape", "fft_length", "message"),
    [
        ("RFFT", (3, 8), (12,), "Input dimension 1 must have length of at least 12 but got: 8"),
        ("IRFFT", (3,), (6,), "Input dimension 0 must have length of at least 4 but got: 3"),
        ("RFFT2D", (2, 8), (3, 8), "Input dimension 0 must have length of at least 3 but got: 2"),
        ("RFFT", (3,), (2, 2), "fft_length must have shape [1]"),
        ("IRFFT", (3,), (-1,), "fft_length[0] must >= 0, but got: -1"),
        ("RFFT2D", (3,), (2, 2), "Input must have rank of at least 2 but got: [3]"),
    ],
)
def test_real_transforms_refuse_as_tf(op, shape, fft_length, message):
    x = np.ones(shape, np.complex64 if op.startswith("I") else np.float32)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        run(op, C64, x, lengths(*fft_length))


def test_complex_transforms_refuse_a_low_rank():
    with pytest.raises(ValueError, match=r"^Input must have rank of at least 2 but got: \[3\]$"):
        run("FFT2D", {"Tcomplex": "complex64"}, np.ones(3, np.complex64))


def test_complex_parts_as_tout():
    z = np.array([3 + 4j, 1e30 + 1e30j, complex(np.inf, np.nan)], np.complex64)
    parts = {"T": "complex64", "Tout": "float32"}
    assert run("Real", parts, z).dtype == np.float32
    np.testing.assert_array_equal(run("Imag", parts, z), np.array([4, 1e30, np.nan], np.float32))
    np.testing.assert_allclose(run("ComplexAbs", parts, z), [5, 1.4142135e30, np.inf])


def test_angle_keeps_signed_zeros():
    z = np.array([-1 + 0j, complex(-1, -0.0), complex(0, -0.0), complex(-0.0, -0.0)], np.complex128)
    result = run("Angle", {"T": "complex128", "Tout": "float64"}, z)
    np.testing.assert_array_equal(result, [np.pi, -np.pi, -0.0, -np.pi])
    assert np.signbit(result[2])


def test_complex_of_infinities_and_broadcast_shapes():
    result = run(
        "Complex", {"T": "float64", "Tout": "complex128"}, np.array([[1.0], [-np.inf]]), np.array([np.inf, 0])
    )
    assert result.shape == (2, 2)
    np.testing.assert_array_equal(result.real, [[1, 1], [-np.inf, -np.inf]])
    np.testing.assert_array_equal(result.imag, [[np.inf, 0], [np.inf, 0]])
    with pytest.raises(ValueError, match=r"^Incompatible shapes: \[2,2\] vs. \[3\]$"):
        run(
            "Complex",
            {"T": "float32", "Tout": "complex64"},
            np.ones((2, 2), np.float32),
            np.ones(3, np.float32),
        )

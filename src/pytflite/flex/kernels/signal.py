"""TF's discrete Fourier transforms over the innermost 1, 2 or 3 dimensions (FFT*, IFFT*, RFFT*,
IRFFT*) and its complex-number ops (Complex, Real, Imag, ComplexAbs, Angle, Conj).

The transforms are NumPy's (pocketfft); TF's are DUCC's, the same family of algorithms, so results
agree to rounding: complex64 in single precision on both sides (NumPy 2; NumPy 1 computes in double,
closer to the exact value). Inverses scale by 1/n. The real transforms take the fft_length input:
the innermost dims are cropped to it (the inverse's innermost to fft_length // 2 + 1), never padded:
TF refuses a shorter dimension (tf.signal pads before the op). An empty input gives zeros.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX
from ..node_def import TfNode
from ..registry import register
from .common import shape_text

_REAL = frozenset({"float32", "float64"})


def _transformable(x: np.ndarray, rank: int) -> tuple[int, ...]:
    """The axes a rank-`rank` transform works on, refusing an input of lower rank."""
    if x.ndim < rank:
        raise ValueError(f"Input must have rank of at least {rank} but got: {shape_text(x.shape)}")
    return tuple(range(-rank, 0))


def _complex_transform(op: str, rank: int, inverse: bool) -> None:
    transform = np.fft.ifftn if inverse else np.fft.fftn

    def compute(node: TfNode, x):
        axes = _transformable(x, rank)
        if x.size == 0:
            return np.zeros_like(x)
        return transform(x, axes=axes).astype(x.dtype, copy=False)

    direction = "inverse " if inverse else ""
    compute.__doc__ = f"{op}: the {direction}DFT over the innermost {rank} dimension(s)."
    register(op, compute, types={"Tcomplex": COMPLEX})


def _lengths(x: np.ndarray, fft_length: np.ndarray, rank: int, inverse: bool) -> tuple[int, ...]:
    """fft_length checked against x as TF checks it: one length per transformed dim, none negative,
    each input dim at least its length (an inverse's innermost at least length // 2 + 1) or 0."""
    _transformable(x, rank)
    if np.shape(fft_length) != (rank,):
        raise ValueError(f"fft_length must have shape [{rank}]")
    lengths = tuple(int(n) for n in fft_length)
    for i, length in enumerate(lengths):
        if length < 0:
            raise ValueError(f"fft_length[{i}] must >= 0, but got: {length}")
        least = length // 2 + 1 if inverse and i == rank - 1 else length
        axis = x.ndim - rank + i
        if x.shape[axis] != 0 and x.shape[axis] < least:
            raise ValueError(
                f"Input dimension {axis} must have length of at least {least} but got: {x.shape[axis]}"
            )
    return lengths


def _real_transform(op: str, rank: int, inverse: bool) -> None:
    def compute(node: TfNode, x, fft_length):
        lengths = _lengths(x, fft_length, rank, inverse)
        axes = tuple(range(-rank, 0))
        if inverse:
            kept = (*lengths[:-1], lengths[-1] // 2 + 1)
            shape = x.shape[:-rank] + lengths
            dtype = node.attr("Treal").numpy
        else:
            kept = lengths
            shape = (*x.shape[:-rank], *lengths[:-1], lengths[-1] // 2 + 1 if lengths[-1] else 0)
            dtype = node.attr("Tcomplex").numpy
        if x.size == 0 or 0 in lengths:
            return np.zeros(shape, dtype)
        cropped = x[(..., *(slice(0, n) for n in kept))]
        if inverse:
            return np.fft.irfftn(cropped, s=lengths, axes=axes).astype(dtype, copy=False)
        return np.fft.rfftn(cropped, axes=axes).astype(dtype, copy=False)

    compute.__doc__ = (
        f"{op}: the {'inverse ' if inverse else ''}DFT of a real signal over the innermost {rank} "
        "dimension(s) (fft_length)."
    )
    register(op, compute, types={"Treal": _REAL, "Tcomplex": COMPLEX})


for _rank, _suffix in ((1, ""), (2, "2D"), (3, "3D")):
    _complex_transform(f"FFT{_suffix}", _rank, inverse=False)
    _complex_transform(f"IFFT{_suffix}", _rank, inverse=True)
    _real_transform(f"RFFT{_suffix}", _rank, inverse=False)
    _real_transform(f"IRFFT{_suffix}", _rank, inverse=True)


def _complex_part(op: str, function, what: str) -> None:
    def compute(node: TfNode, x):
        return np.asarray(function(x)).astype(node.attr("Tout").numpy, copy=False)

    compute.__doc__ = f"{op}: {what} of each complex element, as Tout."
    register(op, compute, types={"T": COMPLEX, "Tout": _REAL})


_complex_part("Real", np.real, "the real part")
_complex_part("Imag", np.imag, "the imaginary part")
_complex_part("ComplexAbs", np.abs, "the magnitude")
_complex_part("Angle", np.angle, "the argument, atan2(imag, real),")


@register("Conj", types={"T": COMPLEX})
def _conj(node: TfNode, x):
    """Conj: the complex conjugate, elementwise."""
    return np.conj(x)


@register("Complex", types={"T": _REAL, "Tout": COMPLEX})
def _complex(node: TfNode, real, imag):
    """Complex: real + i * imag, broadcast (built part by part: inf * i would make a NaN)."""
    try:
        shape = np.broadcast_shapes(real.shape, imag.shape)
    except ValueError:
        raise ValueError(
            f"Incompatible shapes: {shape_text(real.shape)} vs. {shape_text(imag.shape)}"
        ) from None
    result = np.empty(shape, node.attr("Tout").numpy)
    result.real, result.imag = real, imag
    return result

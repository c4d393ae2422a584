"""Spectral ops: RFFT2D, and COMPLEX_ABS / REAL / IMAG on complex tensors.

RFFT2D transforms the two innermost dimensions of a float32 tensor of rank >= 2 with the fft_length
tensor's [height, width] (both powers of two): each innermost [H, W] slice is cropped or zero-padded to
[fft_height, fft_width] and transformed as TFLite does, in double precision, keeping the
fft_width / 2 + 1 non-negative frequencies of the last axis; the complex64 output has shape
[..., fft_height, fft_width / 2 + 1]. A non-constant fft_length makes the output dynamic. An fft_width
of 1 is not a DFT in TFLite (its FFT library's column pass needs width >= 2); we reproduce what it gives.

COMPLEX_ABS, REAL and IMAG map complex64 to float32 and complex128 to float64, elementwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure, ensure_eq, ensure_type
from .common import check_arity, input_tensor, output_tensor
from .registry import register_builtin

_COMPLEX = (TensorType.COMPLEX64, TensorType.COMPLEX128)
_PART_TYPE = {TensorType.COMPLEX64: TensorType.FLOAT32, TensorType.COMPLEX128: TensorType.FLOAT64}


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


@dataclass(frozen=True)
class Rfft2dData:
    fft_length: tuple[int, int] | None  # None: the fft_length tensor is computed at run time


def _fft_length(tensor) -> tuple[int, int]:
    height, width = (int(v) for v in tensor.data.reshape(-1)[:2])
    ensure(_is_power_of_two(height), f"RFFT2D fft_length[0] must be a power of two, got {height}")
    ensure(_is_power_of_two(width), f"RFFT2D fft_length[1] must be a power of two, got {width}")
    return height, width


def _rfft2d_shape(input_shape: tuple[int, ...], fft_length: tuple[int, int]) -> tuple[int, ...]:
    return (*input_shape[:-2], fft_length[0], fft_length[1] // 2 + 1)


def rfft2d_prepare(context, node):
    check_arity(node, 2)
    source, fft_length, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure(len(source.shape) >= 2, f"RFFT2D input rank must be at least 2, got {len(source.shape)}")
    ensure_type(source, TensorType.FLOAT32, "input", "RFFT2D")
    ensure_eq(len(fft_length.shape), 1, "RFFT2D fft_length rank")
    ensure_eq(fft_length.shape[0], 2, "RFFT2D fft_length size")
    ensure_type(fft_length, TensorType.INT32, "fft_length", "RFFT2D")
    ensure_type(output, TensorType.COMPLEX64, "output", "RFFT2D")
    if not fft_length.is_constant_or_persistent:
        node.user_data = Rfft2dData(None)
        context.set_tensor_to_dynamic(output)
        return
    lengths = _fft_length(fft_length)
    node.user_data = Rfft2dData(lengths)
    context.resize_tensor(output, _rfft2d_shape(source.shape, lengths))


def rfft2d_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    lengths = node.user_data.fft_length
    if lengths is None:
        lengths = _fft_length(tensors[node.inputs[1]])
        context.resize_tensor(output, _rfft2d_shape(source.shape, lengths))
    out = output.data
    if out.size == 0:
        return
    # TFLite's Ooura FFT works in double precision; crop/zero-pad to the FFT size like it does.
    x = source.data.astype(np.float64)
    if lengths[1] == 1:
        np.copyto(out, _width_one(x, lengths[0]), casting="same_kind")
    else:
        np.copyto(out, np.fft.rfft2(x, s=lengths, axes=(-2, -1)), casting="same_kind")


def _width_one(x: np.ndarray, height: int) -> np.ndarray:
    """What TFLite's kernel computes for fft_length [height, 1], which is not a DFT.

    With a one-column row, the Ooura routines skip the column transforms: each row's real FFT leaves
    (x, x) in the real/imaginary slots, the 2-D post-pass then pairs rows i and height - i, and TFLite's
    reordering (written for width >= 2) overlaps its own output column. This follows those steps.
    """
    column = np.zeros((*x.shape[:-2], height), np.float64)
    rows = min(height, x.shape[-2])
    if x.shape[-1] and rows:
        column[..., :rows] = x[..., :rows, 0]
    real, imag = column, column.copy()  # the row transform of [x, 0]: (x + 0, x - 0)
    half = height // 2
    i = np.arange(1, half)
    j = height - i
    pair = 0.5 * (real[..., i] - real[..., j])
    real[..., j] = pair
    real[..., i] -= pair
    pair = 0.5 * (imag[..., i] + imag[..., j])
    imag[..., j] = pair
    imag[..., i] -= pair
    i = np.arange(half + 1, height)
    k = height - i
    upper = imag[..., i].copy()
    imag[..., k] = upper
    real[..., i] = real[..., k]
    imag[..., i] = -upper
    first = imag[..., 0].copy()
    imag[..., half] = 0.0
    imag[..., 0] = first
    return (real - 1j * imag)[..., None]


register_builtin(
    BuiltinOperator.RFFT2D,
    (1, 1),
    types=(TensorType.FLOAT32,),
    op_data=Rfft2dData,
    prepare=rfft2d_prepare,
    invoke=rfft2d_invoke,
)


def _complex_part_prepare(op_name: str):
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_type(source, _COMPLEX, "input", op_name)
        ensure_type(output, (_PART_TYPE[source.type],), "output", op_name)
        context.resize_tensor(output, source.shape)

    return prepare


def _complex_abs_invoke(context, node):
    tensors = context.tensors
    np.abs(tensors[node.inputs[0]].data, out=tensors[node.outputs[0]].data)


def _real_invoke(context, node):
    tensors = context.tensors
    np.copyto(tensors[node.outputs[0]].data, tensors[node.inputs[0]].data.real)


def _imag_invoke(context, node):
    tensors = context.tensors
    np.copyto(tensors[node.outputs[0]].data, tensors[node.inputs[0]].data.imag)


for _op, _invoke in (
    (BuiltinOperator.COMPLEX_ABS, _complex_abs_invoke),
    (BuiltinOperator.REAL, _real_invoke),
    (BuiltinOperator.IMAG, _imag_invoke),
):
    register_builtin(_op, (1, 1), types=_COMPLEX, prepare=_complex_part_prepare(_op.name), invoke=_invoke)

"""AudioSpectrogram: the (squared) magnitude spectrogram of each channel of a [samples, channels] float32
waveform, output [channels, frames, fft_length / 2 + 1].

TFLite slides a window of `window_size` samples by `stride` (frames = 1 + (samples - window_size) //
stride, or 0 when the waveform is shorter than the window), multiplies it by a periodic Hann window,
zero-pads it to the next power of two and takes a real FFT, all in double precision; the squared
magnitude re*re + im*im is rounded to float32, and `magnitude_squared` false takes its float32 square
root. Our FFT is NumPy's, not TFLite's Ooura routine; both are double precision, so their last-bit
differences almost never survive the rounding to float32 (the tests find LiteRT's outputs bit for bit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ...core.types import TensorType
from ...errors import ensure, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from ..custom_op_options import as_bool, as_c_int, read_map
from ..registry import register_custom


@dataclass(frozen=True)
class SpectrogramData:
    window_size: int
    stride: int
    magnitude_squared: bool
    frames: int = 0  # the rest is set by prepare
    window: np.ndarray | None = None  # the periodic Hann window (float64); None when there are no frames
    fft_length: int = 0


def spectrogram_init(context, buffer, length):
    options = read_map("AudioSpectrogram", buffer)
    return SpectrogramData(
        as_c_int(options, "window_size"), as_c_int(options, "stride"), as_bool(options, "magnitude_squared")
    )


def periodic_hann(length: int) -> np.ndarray:
    """0.5 - 0.5 cos(2 pi i / length), with the C library's cos as TFLite's table uses."""
    return np.array([0.5 - 0.5 * math.cos(2.0 * math.pi * i / length) for i in range(length)])


def spectrogram_prepare(context, node):
    data = node.user_data
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    rank = len(source.shape)
    ensure_condition_eq(rank, 2, "NumDimensions(input) != 2")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    ensure_type_condition(source, output.type, "input->type != output->type")
    ensure(
        data.window_size >= 2 and data.stride >= 1,
        "params->spectrogram->Initialize(params->window_size, params->stride) was not true.",
    )
    samples, channels = source.shape
    frames = 0 if samples < data.window_size else 1 + (samples - data.window_size) // data.stride
    fft_length = 1 << (data.window_size - 1).bit_length()  # the next power of two
    window = periodic_hann(data.window_size) if frames else None
    node.user_data = replace(data, frames=frames, window=window, fft_length=fft_length)
    context.resize_tensor(output, (channels, frames, fft_length // 2 + 1))


def spectrogram_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    waveform = tensors[node.inputs[0]].data.T  # [channels, samples]
    frames = np.lib.stride_tricks.sliding_window_view(waveform, data.window_size, axis=-1)
    frames = frames[:, : data.frames * data.stride : data.stride]
    spectrum = np.fft.rfft(frames * data.window, n=data.fft_length, axis=-1)
    np.add(np.square(spectrum.real), np.square(spectrum.imag), out=out, casting="same_kind")
    if not data.magnitude_squared:
        np.sqrt(out, out=out)


register_custom(
    "AudioSpectrogram",
    (1, 1),
    types=(TensorType.FLOAT32,),
    op_data=SpectrogramData,
    init=spectrogram_init,
    prepare=spectrogram_prepare,
    invoke=spectrogram_invoke,
)

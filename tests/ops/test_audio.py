"""AudioSpectrogram and Mfcc (default custom ops) against LiteRT on speech-sized input: one second of
16 kHz audio framed as speech_commands does (window 480, stride 160), both magnitude settings, MFCCs
with the usual and other options, the two ops chained, and the errors.

The outputs are compared bit for bit. The arithmetic is TFLite's, in its precision and summation order,
except the FFT (NumPy's instead of Ooura's, both in double) and NumPy's log: their last-bit differences
in double are rounded away when the results become float32 (measured: none on these inputs).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import compare_with_litert, litert_interpreter, requires_litert, run

pytestmark = requires_litert

RATE = 16000
SPEECH = {"window_size": 480, "stride": 160}  # 30 ms frames every 10 ms
USUAL_MFCC = {  # TensorFlow's defaults
    "upper_frequency_limit": 4000,
    "lower_frequency_limit": 20,
    "filterbank_channel_count": 40,
    "dct_coefficient_count": 13,
}


def waveform(samples: int = RATE, channels: int = 1, seed: int = 0) -> np.ndarray:
    """A voiced-like tone with harmonics, a chirp and background noise, in [-1, 1]."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples)[:, None] / RATE
    pitch = 140.0 * (1 + np.arange(channels))
    voice = sum(0.2 / k * np.sin(2 * np.pi * k * pitch * t) for k in range(1, 6))
    chirp = 0.1 * np.sin(2 * np.pi * (300 + 2500 * t) * t)
    noise = 0.03 * rng.standard_normal((samples, channels))
    return (voice + chirp + noise).astype(np.float32)


def spectrogram_model(samples: int, channels: int, options: dict | None) -> bytes:
    builder = ModelBuilder()
    wav = builder.add_input("wav", T.FLOAT32, [samples, channels])
    out = builder.add_tensor("spectrogram", T.FLOAT32, [])
    builder.add_output(out)
    builder.add_operator("AudioSpectrogram", [wav], [out], custom_options=options)
    return builder.build()


def mfcc_model(shape, options: dict | None, rate: int | None = RATE) -> bytes:
    """Mfcc of a spectrogram input; the sample rate is a constant, or a model input when `rate` is None."""
    builder = ModelBuilder()
    spectrogram = builder.add_input("spectrogram", T.FLOAT32, list(shape))
    if rate is None:
        rate_tensor = builder.add_input("rate", T.INT32, [1])
    else:
        rate_tensor = builder.add_tensor("rate", T.INT32, [], data=np.array(rate, np.int32))
    out = builder.add_tensor("mfcc", T.FLOAT32, [])
    builder.add_output(out)
    builder.add_operator("Mfcc", [spectrogram, rate_tensor], [out], custom_options=options)
    return builder.build()


def speech_features_model(samples: int, spectrogram_options: dict, mfcc_options: dict) -> bytes:
    """speech_commands' front end: AudioSpectrogram (magnitude squared) -> Mfcc."""
    builder = ModelBuilder()
    wav = builder.add_input("wav", T.FLOAT32, [samples, 1])
    spectrogram = builder.add_tensor("spectrogram", T.FLOAT32, [])
    rate = builder.add_tensor("rate", T.INT32, [], data=np.array(RATE, np.int32))
    out = builder.add_tensor("mfcc", T.FLOAT32, [])
    builder.add_output(out)
    builder.add_operator("AudioSpectrogram", [wav], [spectrogram], custom_options=spectrogram_options)
    builder.add_operator("Mfcc", [spectrogram, rate], [out], custom_options=mfcc_options)
    return builder.build()


def litert_spectrogram(samples: np.ndarray, options: dict) -> np.ndarray:
    model = spectrogram_model(*samples.shape, options)
    return run(litert_interpreter(model), [samples])[0]


def exact(model: bytes, feeds) -> list[np.ndarray]:
    return compare_with_litert(model, feeds, rtol=0.0)


@pytest.mark.parametrize("magnitude_squared", [True, False])
def test_spectrogram_speech_commands(magnitude_squared):
    (out,) = exact(
        spectrogram_model(RATE, 1, {**SPEECH, "magnitude_squared": magnitude_squared}), [waveform()]
    )
    assert out.shape == (1, 98, 257)  # 512-point FFT of 480-sample windows


@pytest.mark.parametrize(
    "samples, channels, options",
    [
        (8000, 2, {"window_size": 256, "stride": 128, "magnitude_squared": True}),  # power-of-two window
        (8000, 3, {"window_size": 400, "stride": 100}),  # magnitude_squared absent: false
        (4000, 1, {"window_size": 300.9, "stride": 77.2, "magnitude_squared": 1}),  # read as integers
        (1000, 2, {"window_size": 1600, "stride": 10, "magnitude_squared": True}),  # no whole window
    ],
)
def test_spectrogram_shapes_and_options(samples, channels, options):
    exact(spectrogram_model(samples, channels, options), [waveform(samples, channels, seed=channels)])


@pytest.mark.parametrize(
    "options, rate",
    [
        (USUAL_MFCC, RATE),
        ({**USUAL_MFCC, "upper_frequency_limit": 7600, "dct_coefficient_count": 40}, RATE),
        (
            {
                "upper_frequency_limit": 7500,
                "lower_frequency_limit": 125,
                "filterbank_channel_count": 64,
                "dct_coefficient_count": 30,
            },
            RATE,
        ),
        ({**USUAL_MFCC, "upper_frequency_limit": 3999.9, "lower_frequency_limit": 20.9}, RATE),  # truncated
        ({**USUAL_MFCC, "lower_frequency_limit": 0, "filterbank_channel_count": 20}, 8000),
        ({**USUAL_MFCC, "upper_frequency_limit": 8100}, RATE),  # above Nyquist: TFLite outputs zeros
    ],
)
def test_mfcc_on_a_speech_spectrogram(options, rate):
    spectrogram = litert_spectrogram(waveform(), {**SPEECH, "magnitude_squared": True})
    (out,) = exact(mfcc_model(spectrogram.shape, options), [spectrogram])
    assert out.shape == (1, 98, options["dct_coefficient_count"])
    assert np.any(out) == (options["upper_frequency_limit"] <= rate / 2)


def test_mfcc_sample_rate_at_run_time_and_channels():
    spectrogram = litert_spectrogram(waveform(RATE // 2, 2), {**SPEECH, "magnitude_squared": True})
    exact(mfcc_model(spectrogram.shape, USUAL_MFCC, rate=None), [spectrogram, np.array([RATE], np.int32)])


def test_mfcc_of_silence_hits_the_log_floor():
    spectrogram = np.zeros((1, 5, 257), np.float32)
    (out,) = exact(mfcc_model(spectrogram.shape, USUAL_MFCC), [spectrogram])
    # DCT coefficient 0 of 40 equal channels: 40 * sqrt(2 / 40) * log(1e-12)
    assert out[0, 0, 0] == pytest.approx(np.sqrt(80) * np.log(1e-12), rel=1e-6)


def test_speech_features_chained():
    model = speech_features_model(
        RATE, {**SPEECH, "magnitude_squared": True}, {**USUAL_MFCC, "dct_coefficient_count": 40}
    )
    (out,) = exact(model, [waveform(seed=3)])
    assert out.shape == (1, 98, 40)


def test_mfcc_without_coefficients_is_empty():
    spectrogram = np.ones((1, 4, 257), np.float32)
    (out,) = exact(mfcc_model(spectrogram.shape, {**USUAL_MFCC, "dct_coefficient_count": 0}), [spectrogram])
    assert out.shape == (1, 4, 0)


def fails(model: bytes, feeds, message: str) -> None:
    """pytflite refuses the model with `message`, and LiteRT refuses it too."""
    with pytest.raises(RuntimeError, match=message):
        run(pytflite.Interpreter(model_content=model), feeds)
    with pytest.raises((RuntimeError, ValueError)):
        run(litert_interpreter(model), feeds)


@pytest.mark.parametrize("window_size, stride", [(1, 160), (480, 0)])
def test_spectrogram_rejects_bad_framing(window_size, stride):
    model = spectrogram_model(RATE, 1, {"window_size": window_size, "stride": stride})
    fails(model, [waveform()], r"Initialize\(params->window_size, params->stride\) was not true")


def test_spectrogram_rejects_a_waveform_of_rank_three():
    builder = ModelBuilder()
    wav = builder.add_input("wav", T.FLOAT32, [1, 100, 1])
    out = builder.add_tensor("spectrogram", T.FLOAT32, [])
    builder.add_output(out)
    builder.add_operator("AudioSpectrogram", [wav], [out], custom_options=SPEECH)
    fails(builder.build(), [np.zeros((1, 100, 1), np.float32)], r"NumDimensions\(input\) != 2 \(3 != 2\)")


@pytest.mark.parametrize(
    "change, why",
    [
        ({"upper_frequency_limit": 20}, "upper_frequency_limit 20 <= lower_frequency_limit 20"),
        ({"dct_coefficient_count": 41}, "dct_coefficient_count 41 > filterbank_channel_count 40"),
        ({"lower_frequency_limit": -5}, "lower_frequency_limit -5 < 0"),
    ],
)
def test_mfcc_rejects_parameters_at_invoke(change, why):
    spectrogram = np.ones((1, 3, 257), np.float32)
    model = mfcc_model(spectrogram.shape, {**USUAL_MFCC, **change})
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()  # TFLite sets the filterbank up in Eval
    count = {**USUAL_MFCC, **change}["dct_coefficient_count"]
    fails(model, [spectrogram], rf"\({why}\).*mfcc_output.size\(\) \({count} != 0\)")


def test_mfcc_rejects_a_rate_of_the_wrong_type():
    builder = ModelBuilder()
    spectrogram = builder.add_input("spectrogram", T.FLOAT32, [1, 3, 257])
    rate = builder.add_tensor("rate", T.FLOAT32, [], data=np.array(RATE, np.float32))
    out = builder.add_tensor("mfcc", T.FLOAT32, [])
    builder.add_output(out)
    builder.add_operator("Mfcc", [spectrogram, rate], [out], custom_options=USUAL_MFCC)
    model = builder.build()
    fails(model, [np.ones((1, 3, 257), np.float32)], r"input_rate->type != kTfLiteInt32 \(FLOAT32 != INT32\)")


def test_audio_ops_need_their_options():
    # LiteRT reads the options through a null flexbuffer map; we refuse the model.
    with pytest.raises(ValueError, match="Failed to initialize kernel"):
        pytflite.Interpreter(model_content=spectrogram_model(RATE, 1, None))

"""Audio ops: the AudioSpectrogram and Mfcc custom ops LiteRT's BuiltinOpResolver registers by default
(as TensorFlow's speech_commands models use them: waveform -> spectrogram -> MFCC features)."""

from . import mfcc, spectrogram  # noqa: F401  (importing registers the kernels)

"""LiteRT's quantized matrix products under each of ruy's x86 paths, reproduced on any machine.

tests/fixtures/litert_ruy_paths.npz holds LiteRT's outputs recorded with RUY_PATHS set to each path
(tests/fixtures/record_litert_ruy_paths.py); pytflite, given a profile restricted the same way, must
reproduce each bit for bit. The probes cover ruy's int8, uint8 and int8 x int16 kernels, per-tensor and
per-channel multipliers, a left shift, and TFLite's custom GEMV (batch 1), which ignores ruy's path.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite import KNOWN_PROFILES
from tests.oracle import CORPUS, run

RECORDING = np.load(Path(__file__).resolve().parents[1] / "fixtures" / "litert_ruy_paths.npz")
MASKS = {"standard_cpp": 0x1, "avx": 0x10, "avx2_fma": 0x20, "avx512": 0x40}
MODELS = sorted({key.split("__")[0] for key in RECORDING.files})
# the x86 CPU the recordings were made on (AVX-512), restricted by RUY_PATHS as LiteRT was
PROFILE = KNOWN_PROFILES["amd_zen4"]


def _model_and_inputs(name: str) -> tuple[bytes, list[np.ndarray]]:
    if f"{name}__model" in RECORDING.files:
        data, prefix = RECORDING, f"{name}__input_"
        model = data[f"{name}__model"].tobytes()
    else:
        if not (CORPUS / f"{name}.tflite").exists():
            pytest.skip(f"{name} is not in the corpus at {CORPUS}")
        data, prefix = np.load(CORPUS / f"{name}.npz"), "input_"
        model = (CORPUS / f"{name}.tflite").read_bytes()
    inputs = [data[key] for key in sorted(k for k in data.files if k.startswith(prefix))]
    return model, inputs


def _outputs(name: str, profile) -> list[np.ndarray]:
    model, inputs = _model_and_inputs(name)
    return run(pytflite.Interpreter(model_content=model, experimental_host_profile=profile), inputs)


@pytest.mark.parametrize("path", sorted(MASKS))
@pytest.mark.parametrize("name", MODELS)
def test_each_ruy_path_is_reproduced(name, path):
    profile = dataclasses.replace(PROFILE, ruy_paths=MASKS[path])
    assert profile.ruy_path == path
    for k, value in enumerate(_outputs(name, profile)):
        np.testing.assert_array_equal(
            value, RECORDING[f"{name}__{path}__output_{k}"], err_msg=f"{name} {path}"
        )


def test_the_recordings_tell_the_paths_apart():
    """ruy's portable kernel rounds differently from its SIMD ones, end to end on the int8 corpus model
    and on every ruy probe; TFLite's GEMV does not depend on the path (the test above can fail)."""
    differs = {
        name: not np.array_equal(
            RECORDING[f"{name}__standard_cpp__output_0"], RECORDING[f"{name}__avx512__output_0"]
        )
        for name in MODELS
    }
    assert (
        differs["mobilenet_v2_int8"] and differs["fc_int8"] and differs["conv_int8"] and differs["fc_int16"]
    )
    assert not differs["fc_int8_batch1_gemv"]
    # AVX has no int8 x int16 kernel: the int16 product falls back to the portable one
    assert np.array_equal(RECORDING["fc_int16__avx__output_0"], RECORDING["fc_int16__standard_cpp__output_0"])
    assert np.array_equal(RECORDING["fc_int8__avx__output_0"], RECORDING["fc_int8__avx512__output_0"])


def test_x86_without_avx():
    """Without AVX, ruy runs its portable kernel and TFLite sends uint8 products to gemmlowp, which
    rounds as TFLite's MultiplyByQuantizedMultiplier (recorded with LiteRT made to take that route)."""
    profile = pytflite.HostProfile("x86 without AVX", "x86_64", features=frozenset({"sse4_1"}))
    for name in MODELS:
        for k, value in enumerate(_outputs(name, profile)):
            expected = RECORDING[f"{name}__x86_without_avx__output_{k}"]
            np.testing.assert_array_equal(value, expected, err_msg=name)
    gemmlowp, ruy = (RECORDING[f"fc_uint8__{path}__output_0"] for path in ("x86_without_avx", "standard_cpp"))
    assert not np.array_equal(gemmlowp, ruy)

"""The 14 models of the mediapipe 0.10.21 wheel (the newest that ships them) on pytflite with the
MediaPipe op pack, against LiteRT where LiteRT can run them (issue 15).

The wheel is fetched once with `pip download --no-deps` (35 MB, from PyPI, as the test extras are) into
$PYTFLITE_CACHE (default ~/.cache/pytflite) and its .tflite files read from the zip: nothing of it lives in
the repository. Without network access locally the module is skipped with the reason; with CI=true that
is an error, as for the oracle (tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite.ops import mediapipe
from tests.oracle import assert_matches, litert

VERSION = "0.10.21"
MODELS = {  # name -> the LiteRT resolver that runs it (None: LiteRT cannot, it lacks the landmark ops)
    "face_detection_full_range_sparse": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "face_detection_short_range": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "face_landmark": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "face_landmark_with_attention": None,
    "hand_landmark_full": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "hand_landmark_lite": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "hand_recrop": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "iris_landmark": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "palm_detection_full": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "palm_detection_lite": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "pose_detection": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    "pose_landmark_full": "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    # Convolution2DTransposeBias: only LiteRT's XNNPACK path (AUTO) has it
    "selfie_segmentation": "AUTO",
    "selfie_segmentation_landscape": "AUTO",
}
# Deep float networks whose float sums run in another order than LiteRT's (and XNNPACK's for the
# selfie models): measured at most 1.2e-4 of the output's magnitude (pose_landmark_full), 1e-4 for
# selfie_segmentation against XNNPACK, below 5e-6 for the rest.
RTOL = 3e-4


@pytest.fixture(scope="module")
def wheel() -> zipfile.ZipFile:
    cache = (
        Path(os.environ.get("PYTFLITE_CACHE", Path.home() / ".cache" / "pytflite")) / f"mediapipe-{VERSION}"
    )
    found = sorted(cache.glob("mediapipe-*.whl"))
    if not found:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        result = subprocess.run(
            [*command, f"mediapipe=={VERSION}", "-d", str(cache)], capture_output=True, text=True, timeout=600
        )
        found = sorted(cache.glob("mediapipe-*.whl"))
        if not found:
            why = f"cannot download mediapipe {VERSION}: {result.stderr.strip().splitlines()[-1:]}"
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                pytest.fail(why)
            pytest.skip(why)
    return zipfile.ZipFile(found[-1])


def _model(wheel: zipfile.ZipFile, name: str) -> bytes:
    (path,) = [n for n in wheel.namelist() if n.endswith(f"/{name}.tflite")]
    return wheel.read(path)


def _resolver() -> pytflite.MutableOpResolver:
    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    mediapipe.register(resolver)
    return resolver


def test_the_wheel_ships_exactly_these_models(wheel):
    shipped = {Path(n).stem for n in wheel.namelist() if n.endswith(".tflite")}
    assert shipped == set(MODELS)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_runs_and_matches_litert(wheel, name):
    model = _model(wheel, name)
    ours = pytflite.Interpreter(model_content=model, op_resolver=_resolver())
    ours.allocate_tensors()
    rng = np.random.default_rng(0)
    feeds = [rng.uniform(0, 1, d["shape"]).astype(d["dtype"]) for d in ours.get_input_details()]
    for detail, value in zip(ours.get_input_details(), feeds):
        ours.set_tensor(detail["index"], value)
    ours.invoke()
    outputs = [ours.get_tensor(d["index"]) for d in ours.get_output_details()]
    assert all(np.isfinite(o).all() for o in outputs)
    resolver = MODELS[name]
    if resolver is None:  # LiteRT refuses it: the pack's ops are tested one by one in test_mediapipe.py
        with pytest.raises(RuntimeError, match="Encountered unresolved custom op: Landmarks2TransformMatrix"):
            pytflite.Interpreter(model_content=model).allocate_tensors()
        return
    if litert is None:
        pytest.skip("ai-edge-litert (the oracle) is not installed")
    reference = litert.Interpreter(
        model_content=model, experimental_op_resolver_type=getattr(litert.OpResolverType, resolver)
    )
    reference.allocate_tensors()
    for detail, value in zip(reference.get_input_details(), feeds):
        reference.set_tensor(detail["index"], value)
    reference.invoke()
    for i, (detail, ours_out) in enumerate(zip(reference.get_output_details(), outputs)):
        assert_matches(ours_out, reference.get_tensor(detail["index"]), RTOL, what=f"{name} output {i}")


def _drawn_face() -> np.ndarray:
    """A 192x192 face drawn with ellipses: skin, eyes with irises at (74, 84) and (118, 84), brows, nose,
    lips, in [0, 1] as the face models take their input."""
    yy, xx = np.mgrid[0:192, 0:192].astype(np.float32)

    def ellipse(cx, cy, rx, ry):
        return ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1

    image = np.full((192, 192, 3), [0.35, 0.45, 0.55], np.float32)
    image[ellipse(96, 100, 58, 76)] = [0.87, 0.70, 0.58]
    for cx in (74, 118):
        image[ellipse(cx, 84, 12, 6)] = [0.95, 0.95, 0.95]
        image[ellipse(cx, 84, 5, 5)] = [0.2, 0.12, 0.08]
        image[ellipse(cx, 68, 15, 3)] = [0.3, 0.2, 0.15]
    image[ellipse(96, 110, 6, 12)] = [0.80, 0.60, 0.50]
    image[ellipse(96, 140, 20, 6)] = [0.70, 0.30, 0.30]
    return image[None]


def _outputs(wheel, name: str, image: np.ndarray) -> dict[str, np.ndarray]:
    interpreter = pytflite.Interpreter(model_content=_model(wheel, name), op_resolver=_resolver())
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image)
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}


def test_face_landmark_with_attention_agrees_with_face_landmark_on_a_face(wheel):
    """LiteRT cannot run the attention model, so the check is against its sibling, which LiteRT can: both
    see a face, their 468-point meshes coincide within a few pixels, and the irises land where drawn."""
    image = _drawn_face()
    plain = _outputs(wheel, "face_landmark", image)
    attention = _outputs(wheel, "face_landmark_with_attention", image)
    mesh = next(v for v in plain.values() if v.size == 468 * 3).reshape(468, 3)
    attention_mesh = attention["output_mesh_identity"].reshape(468, 3)
    distance = np.linalg.norm(mesh[:, :2] - attention_mesh[:, :2], axis=1)
    assert distance.mean() < 2.5 and distance.max() < 6  # measured: mean 1.17 px, max 2.90 px
    assert float(attention["conv_faceflag"].ravel()[0]) > 5  # a face (logit; measured 27.6)
    for iris, drawn in (("output_left_iris", (74, 84)), ("output_right_iris", (118, 84))):
        centre = attention[iris].reshape(5, 2)[0]
        assert np.linalg.norm(centre - drawn) < 3, (iris, centre)  # measured within 0.8 px

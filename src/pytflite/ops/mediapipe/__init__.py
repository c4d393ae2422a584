"""MediaPipe's custom ops, for running MediaPipe's .tflite models (face, hand, pose landmarks; selfie
segmentation). Opt-in: LiteRT's default resolver does not have them, and neither does pytflite's.

    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    pytflite.ops.mediapipe.register(resolver)
    interpreter = pytflite.Interpreter(model_path="face_landmark_with_attention.tflite", op_resolver=resolver)

or on the command line, `pytflite run MODEL --custom-ops mediapipe`. The kernels follow MediaPipe's C++
ones (mediapipe/util/tflite/operations/), registered under the names and versions MediaPipe's own op
resolver (mediapipe/util/tflite/op_resolver.cc) gives them.
"""

from __future__ import annotations

from ..resolver import MutableOpResolver
from . import (
    landmarks_to_transform_matrix,
    max_pool_argmax,
    max_unpooling,
    transform_landmarks,
    transform_tensor_bilinear,
    transpose_conv_bias,
)

# (custom name, version, kernel)
OPS = (
    ("MaxPoolingWithArgmax2D", 1, max_pool_argmax.KERNEL),
    ("MaxUnpooling2D", 1, max_unpooling.KERNEL),
    ("Convolution2DTransposeBias", 1, transpose_conv_bias.KERNEL),
    ("TransformTensorBilinear", 2, transform_tensor_bilinear.KERNEL),
    ("TransformLandmarks", 2, transform_landmarks.KERNEL),
    ("Landmarks2TransformMatrix", 2, landmarks_to_transform_matrix.KERNEL),
)


def register(resolver: MutableOpResolver) -> None:
    """Add the six MediaPipe ops to `resolver` (replacing any it has under those names and versions)."""
    for name, version, kernel in OPS:
        resolver.add_custom(name, kernel, version)

"""Write the real-architecture benchmark models (issue 32) into benchmarks/.models/ (ignored by git):
keras.applications MobileNetV3Small, EfficientNetB0 and ResNet50 (weights=None: nothing is downloaded,
the weights are Keras's random initialization), a small UNet and a 1-D conv audio classifier, each
converted by TF's converter to float32, to float16 weights and to full int8 (a representative dataset of
random inputs). bench_architectures.py times them.

Run in a scratch venv with TensorFlow (never a project dependency):

    python3.11 -m venv /tmp/tf218 && /tmp/tf218/bin/pip install tensorflow-cpu==2.18.1
    /tmp/tf218/bin/python benchmarks/make_architectures.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

MODELS = Path(__file__).resolve().parent / ".models"
keras = tf.keras


def unet(size: int = 128) -> keras.Model:
    """A two-level UNet: conv blocks, max pooling down, transposed convolutions up, skip concatenations."""
    inputs = keras.Input((size, size, 3))
    skips, x = [], inputs
    for width in (16, 32):
        x = keras.layers.Conv2D(width, 3, padding="same", activation="relu")(x)
        x = keras.layers.Conv2D(width, 3, padding="same", activation="relu")(x)
        skips.append(x)
        x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    for width, skip in zip((32, 16), reversed(skips), strict=True):
        x = keras.layers.Conv2DTranspose(width, 2, strides=2, padding="same")(x)
        x = keras.layers.Concatenate()([x, skip])
        x = keras.layers.Conv2D(width, 3, padding="same", activation="relu")(x)
    outputs = keras.layers.Conv2D(2, 1, activation="softmax")(x)
    return keras.Model(inputs, outputs)


def audio_classifier(samples: int = 16000) -> keras.Model:
    """A 1-D conv keyword-spotting style classifier on raw audio."""
    inputs = keras.Input((samples, 1))
    x = inputs
    for width, stride in ((16, 4), (32, 2), (64, 2), (64, 2)):
        x = keras.layers.Conv1D(width, 9, strides=stride, padding="same", activation="relu")(x)
        x = keras.layers.MaxPooling1D(2)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(12)(x)
    return keras.Model(inputs, outputs)


ARCHITECTURES = {
    "mobilenet_v3_small": lambda: keras.applications.MobileNetV3Small(
        weights=None, input_shape=(224, 224, 3)
    ),
    "efficientnet_b0": lambda: keras.applications.EfficientNetB0(weights=None, input_shape=(224, 224, 3)),
    "resnet50": lambda: keras.applications.ResNet50(weights=None, input_shape=(224, 224, 3)),
    "unet": unet,
    "audio_conv1d": audio_classifier,
}


def convert(model: keras.Model, form: str) -> bytes:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if form == "fp16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    elif form == "int8":
        shape = [1, *model.input_shape[1:]]
        rng = np.random.default_rng(0)

        def representative():
            for _ in range(16):
                yield [rng.normal(size=shape).astype(np.float32)]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


if __name__ == "__main__":
    MODELS.mkdir(exist_ok=True)
    for name, build in ARCHITECTURES.items():
        tf.keras.utils.set_random_seed(1)
        model = build()
        for form in ("f32", "fp16", "int8"):
            path = MODELS / f"{name}_{form}.tflite"
            path.write_bytes(convert(model, form))
            print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB")

"""The MediaPipe op pack (pytflite.ops.mediapipe): one-op models from ModelBuilder, each op against a
NumPy reference written here from MediaPipe's C++ loops, Convolution2DTransposeBias also against
ai-edge-litert's default resolver (its XNNPACK delegate implements that op), and the errors.

Tolerances: the references sum in float64; the kernels in float32 (1e-5 of the output's magnitude), the
landmark matrix in float64 rounded to float32 (1e-6). XNNPACK sums in its own order (1e-5).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

import pytflite
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from pytflite.ops import mediapipe
from tests.oracle import assert_matches, litert, litert_interpreter, requires_litert, run

SAME, VALID = 1, 2  # TfLitePadding
RELU6 = 3  # TfLiteFusedActivation


def resolver() -> pytflite.MutableOpResolver:
    ops = pytflite.MutableOpResolver()
    ops.add_all(pytflite.BuiltinOpResolver())
    mediapipe.register(ops)
    return ops


def one_op(name, inputs, output_shapes, options=None, version=1) -> tuple[bytes, list[np.ndarray]]:
    """A model of one custom op; `inputs` are (array, is_constant) pairs; returns it and its feeds."""
    builder = ModelBuilder()
    indices, feeds = [], []
    for i, (value, constant) in enumerate(inputs):
        if constant:
            indices.append(builder.add_tensor(f"c{i}", T.FLOAT32, value.shape, data=value))
        else:
            indices.append(builder.add_input(f"in{i}", T.FLOAT32, value.shape))
            feeds.append(value)
    outputs = [builder.add_tensor(f"out{i}", T.FLOAT32, shape) for i, shape in enumerate(output_shapes)]
    for index in outputs:
        builder.add_output(index)
    builder.add_operator(name, indices, outputs, version=version, custom_options=options)
    return builder.build(), feeds


def run_ours(model: bytes, feeds) -> list[np.ndarray]:
    return run(pytflite.Interpreter(model_content=model, op_resolver=resolver()), feeds)


def pool_params(padding, stride, filter_size, activation=0) -> bytes:
    """TfLitePoolParams: padding, stride w/h, filter w/h, activation, computed padding (4 ints)."""
    return struct.pack(
        "<10i", padding, stride[1], stride[0], filter_size[1], filter_size[0], activation, 0, 0, 0, 0
    )


def random(shape, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_register_adds_mediapipes_six_ops_and_the_default_resolver_has_none():
    ops = pytflite.MutableOpResolver()
    mediapipe.register(ops)
    assert ops.custom_ops() == [
        ("Convolution2DTransposeBias", 1),
        ("Landmarks2TransformMatrix", 2),
        ("MaxPoolingWithArgmax2D", 1),
        ("MaxUnpooling2D", 1),
        ("TransformLandmarks", 2),
        ("TransformTensorBilinear", 2),
    ]
    default = pytflite.BuiltinOpResolver()
    assert all(default.find_custom(name, version) is None for name, version in ops.custom_ops())


# Convolution2DTransposeBias


def transpose_conv_reference(x, w, bias, stride, padding):
    """MediaPipe's loop: the bias, then every input pixel times every filter tap, inside the output."""
    batches, height, width, _ = x.shape
    _, fh, fw, _ = w.shape
    sh, sw = stride
    ph = max(0, fh - (height - 1) % sh - 1) if padding == SAME else 0
    pw = max(0, fw - (width - 1) % sw - 1) if padding == SAME else 0
    out_h, out_w = sh * (height - 1) + fh - ph, sw * (width - 1) + fw - pw
    out = np.broadcast_to(bias.astype(np.float64), (batches, out_h, out_w, bias.size)).copy()
    for n, iy, ix, fy, fx in np.ndindex(batches, height, width, fh, fw):
        oy, ox = iy * sh - ph // 2 + fy, ix * sw - pw // 2 + fx
        if 0 <= oy < out_h and 0 <= ox < out_w:
            out[n, oy, ox] += w[:, fy, fx, :].astype(np.float64) @ x[n, iy, ix]
    return out.astype(np.float32)


def transpose_conv_model(x, w, bias, stride, padding, constant_weights=True, out_shape=()):
    """The model; XNNPACK needs the output's shape declared (`out_shape`), MediaPipe computes it."""
    options = struct.pack("<3i", padding, stride[1], stride[0])
    return one_op(
        "Convolution2DTransposeBias",
        [(x, False), (w, constant_weights), (bias, constant_weights)],
        [list(out_shape)],
        options,
    )


@pytest.mark.parametrize(
    ("in_shape", "filter_hw", "stride", "padding"),
    [
        ((1, 6, 7, 3), (3, 3), (2, 2), SAME),
        ((2, 5, 4, 2), (4, 4), (2, 2), SAME),
        ((1, 5, 6, 3), (3, 2), (2, 3), VALID),
        ((1, 4, 4, 2), (2, 2), (1, 1), SAME),
        ((1, 3, 5, 2), (5, 3), (3, 1), SAME),  # the filter wider than the stride's period: trims both ends
    ],
)
def test_transpose_conv_bias_matches_mediapipes_loop(in_shape, filter_hw, stride, padding):
    x = random(in_shape, 1)
    w = random((4, *filter_hw, in_shape[3]), 2)
    bias = random((4,), 3)
    model, feeds = transpose_conv_model(x, w, bias, stride, padding, constant_weights=False)
    (ours,) = run_ours(model, feeds)
    assert_matches(ours, transpose_conv_reference(x, w, bias, stride, padding))


@requires_litert
@pytest.mark.parametrize(
    ("in_shape", "filter_hw", "stride", "padding", "out_channels"),
    [
        ((1, 32, 32, 16), (2, 2), (2, 2), SAME, 16),  # selfie segmentation's upsampling
        ((1, 16, 16, 32), (4, 4), (2, 2), SAME, 8),
        ((1, 15, 17, 8), (3, 3), (2, 2), SAME, 4),
        ((1, 12, 10, 8), (3, 3), (2, 2), VALID, 6),
        ((2, 9, 9, 4), (5, 5), (1, 1), SAME, 3),
    ],
)
def test_transpose_conv_bias_matches_litert_xnnpack(in_shape, filter_hw, stride, padding, out_channels):
    x = random(in_shape, 4)
    w = random((out_channels, *filter_hw, in_shape[3]), 5)
    bias = random((out_channels,), 6)
    expected = transpose_conv_reference(x, w, bias, stride, padding)
    model, feeds = transpose_conv_model(x, w, bias, stride, padding, out_shape=expected.shape)
    (reference,) = run(
        litert_interpreter(model, experimental_op_resolver_type=litert.OpResolverType.AUTO), feeds
    )
    (ours,) = run_ours(model, feeds)
    assert_matches(ours, reference)


# MaxPoolingWithArgmax2D and MaxUnpooling2D


def max_pool_argmax_reference(x, filter_size, stride, padding, relu6=False):
    """MediaPipe's loop: the first value strictly above the running maximum, from the lowest float."""
    fh, fw = filter_size
    sh, sw = stride
    batches, height, width, channels = x.shape
    if padding == SAME:
        out_h, out_w = -(-height // sh), -(-width // sw)
    else:
        out_h, out_w = (height - fh + sh) // sh, (width - fw + sw) // sw
    pad_h = max(0, ((out_h - 1) * sh + fh - height) // 2)
    pad_w = max(0, ((out_w - 1) * sw + fw - width) // 2)
    out = np.empty((batches, out_h, out_w, channels), np.float32)
    where = np.empty_like(out)
    lowest = np.finfo(np.float32).min
    for n, oy, ox, c in np.ndindex(out.shape):
        best, at = lowest, 0
        for fy, fx in np.ndindex(fh, fw):
            iy, ix = oy * sh - pad_h + fy, ox * sw - pad_w + fx
            if 0 <= iy < height and 0 <= ix < width and x[n, iy, ix, c] > best:
                best, at = x[n, iy, ix, c], fy * fw + fx
        out[n, oy, ox, c] = min(max(best, 0), 6) if relu6 else best
        where[n, oy, ox, c] = np.float32(at) + np.float32(0.1)
    return out, where


@pytest.mark.parametrize(
    ("shape", "filter_size", "stride", "padding"),
    [
        ((1, 8, 8, 3), (2, 2), (2, 2), SAME),
        ((2, 7, 9, 2), (3, 3), (2, 2), SAME),
        ((1, 7, 9, 2), (3, 2), (2, 1), VALID),
        ((1, 5, 5, 1), (4, 4), (3, 3), SAME),
    ],
)
def test_max_pool_argmax_matches_mediapipes_loop(shape, filter_size, stride, padding):
    x = np.round(random(shape, 7) * 2)  # rounded: ties, where the first maximum wins
    x[0, 0, 0, 0], x[0, 1, 1, 0], x[-1, -1, -1, -1] = np.nan, -np.inf, np.finfo(np.float32).min
    model, feeds = one_op(
        "MaxPoolingWithArgmax2D", [(x, False)], [[], []], pool_params(padding, stride, filter_size)
    )
    values, where = run_ours(model, feeds)
    expected_values, expected_where = max_pool_argmax_reference(x, filter_size, stride, padding)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(where, expected_where)


def test_max_pool_argmax_applies_its_fused_activation_and_gives_the_lowest_float_for_empty_windows():
    x = random((1, 6, 6, 2), 8) * 10
    x[0, :2, :2, 0] = -np.inf  # a window with no candidate
    model, feeds = one_op(
        "MaxPoolingWithArgmax2D", [(x, False)], [[], []], pool_params(SAME, (2, 2), (2, 2), RELU6)
    )
    values, where = run_ours(model, feeds)
    expected_values, expected_where = max_pool_argmax_reference(x, (2, 2), (2, 2), SAME, relu6=True)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(where, expected_where)
    assert values[0, 0, 0, 0] == 0 and where[0, 0, 0, 0] == np.float32(0.1)  # lowest, clamped to 0


def max_unpooling_reference(values, where, filter_size, stride):
    """MediaPipe's loop: zeros, then each value at its decoded position when inside (later ones win)."""
    fh, fw = filter_size
    sh, sw = stride
    batches, height, width, channels = values.shape
    out_h, out_w = height * fh, width * fw
    pad_h = max(0, ((height - 1) * sh + fh - out_h) // 2)
    pad_w = max(0, ((width - 1) * sw + fw - out_w) // 2)
    out = np.zeros((batches, out_h, out_w, channels), np.float32)
    for n, iy, ix, c in np.ndindex(values.shape):
        index = int(where[n, iy, ix, c])  # C's truncation
        row, column = int(index / fw), int(math.fmod(index, fw))
        oy, ox = iy * sh - pad_h + row, ix * sw - pad_w + column
        if 0 <= oy < out_h and 0 <= ox < out_w:
            out[n, oy, ox, c] = values[n, iy, ix, c]
    return out


@pytest.mark.parametrize(("filter_size", "stride"), [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((2, 3), (1, 2))])
def test_max_unpooling_matches_mediapipes_loop(filter_size, stride):
    values = random((2, 4, 5, 3), 9)
    rng = np.random.default_rng(10)
    where = rng.integers(-2, filter_size[0] * filter_size[1] + 3, values.shape) + np.float32(0.1)
    where = where.astype(np.float32)  # some positions out of the window, some negative
    model, feeds = one_op(
        "MaxUnpooling2D", [(values, False), (where, False)], [[]], pool_params(SAME, stride, filter_size)
    )
    (ours,) = run_ours(model, feeds)
    np.testing.assert_array_equal(ours, max_unpooling_reference(values, where, filter_size, stride))


def test_max_pooling_then_unpooling_keeps_each_maximum_in_place():
    x = random((1, 8, 10, 4), 11)
    builder = ModelBuilder()
    source = builder.add_input("x", T.FLOAT32, x.shape)
    pooled, where, out = (builder.add_tensor(name, T.FLOAT32, []) for name in ("pooled", "where", "out"))
    options = pool_params(SAME, (2, 2), (2, 2))
    builder.add_operator("MaxPoolingWithArgmax2D", [source], [pooled, where], custom_options=options)
    builder.add_operator("MaxUnpooling2D", [pooled, where], [out], custom_options=options)
    builder.add_output(out)
    (ours,) = run_ours(builder.build(), [x])
    windows = x.reshape(1, 4, 2, 5, 2, 4)
    is_max = windows == windows.max(axis=(2, 4), keepdims=True)
    np.testing.assert_array_equal(ours, np.where(is_max.reshape(x.shape), x, 0))


# Landmarks2TransformMatrix, TransformLandmarks, TransformTensorBilinear

MATRIX_OPTIONS = {
    "subset_idxs": [3, 7, 1, 9, 4],  # odd: MediaPipe pairs the last with itself
    "left_rotation_idx": 2,
    "right_rotation_idx": 5,
    "target_rotation_radians": 0.3,
    "output_height": 16,
    "output_width": 24,
    "scale_x": 1.5,
    "scale_y": 1.25,
}


def landmarks_matrix_reference(landmarks, o):
    """The crop matrix, step by step as MediaPipe builds it, with Python floats and 4x4 list products."""

    def product(a, b):
        return [[sum(a[r][k] * b[k][c] for k in range(4)) for c in range(4)] for r in range(4)]

    def affine(a, b, c, d, tx, ty):
        return [[a, b, 0, tx], [c, d, 0, ty], [0, 0, 1, 0], [0, 0, 0, 1]]

    points = landmarks.reshape(-1, 3).tolist()
    left, right = points[o["left_rotation_idx"]], points[o["right_rotation_idx"]]
    r = o["target_rotation_radians"] - math.atan2(right[1] - left[1], right[0] - left[0])
    rotated = [
        (math.cos(r) * p[0] - math.sin(r) * p[1], math.sin(r) * p[0] + math.cos(r) * p[1])
        for p in (points[i] for i in o["subset_idxs"])
    ]
    xs, ys = [p[0] for p in rotated], [p[1] for p in rotated]
    mx, my = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
    cx, cy = math.cos(-r) * mx - math.sin(-r) * my, math.sin(-r) * mx + math.cos(-r) * my
    q = -r
    t = affine(1, 0, 0, 1, cx, cy)
    t = product(t, affine(math.cos(q), -math.sin(q), math.sin(q), math.cos(q), 0, 0))
    sx = o["scale_x"] * (max(xs) - min(xs)) / o["output_width"]
    sy = o["scale_y"] * (max(ys) - min(ys)) / o["output_height"]
    t = product(t, affine(sx, 0, 0, sy, 0, 0))
    t = product(t, affine(1, 0, 0, 1, -o["output_width"] / 2, -o["output_height"] / 2))
    return np.array(t, np.float32)[None]


def face_like_landmarks(count=12, seed=12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    angle = np.linspace(0, 2 * np.pi, count, endpoint=False)
    xy = np.stack([120 + 40 * np.cos(angle), 100 + 55 * np.sin(angle)], axis=1) + rng.normal(0, 3, (count, 2))
    return np.concatenate([xy, rng.normal(0, 5, (count, 1))], axis=1).astype(np.float32)[None]


def test_landmarks_to_transform_matrix_matches_mediapipes_construction():
    landmarks = face_like_landmarks()
    model, feeds = one_op("Landmarks2TransformMatrix", [(landmarks, False)], [[]], MATRIX_OPTIONS, version=2)
    (ours,) = run_ours(model, feeds)
    expected = landmarks_matrix_reference(landmarks, MATRIX_OPTIONS)
    assert_matches(ours, expected, rtol=1e-6)
    # the crop's centre pixel lands on the box centre, which lies among the subset's landmarks
    centre = ours[0] @ [MATRIX_OPTIONS["output_width"] / 2, MATRIX_OPTIONS["output_height"] / 2, 0, 1]
    subset = landmarks[0, MATRIX_OPTIONS["subset_idxs"], :2]
    assert np.all(centre[:2] > subset.min(axis=0)) and np.all(centre[:2] < subset.max(axis=0))


@pytest.mark.parametrize("dimensions", [2, 3])
def test_transform_landmarks_matches_mediapipes_loop(dimensions):
    landmarks = face_like_landmarks(80)[..., :dimensions]
    matrix = landmarks_matrix_reference(face_like_landmarks(), MATRIX_OPTIONS)
    model, feeds = one_op("TransformLandmarks", [(landmarks, False), (matrix, False)], [[]], version=2)
    (ours,) = run_ours(model, feeds)
    expected = landmarks.astype(np.float64).copy()
    m = matrix[0].astype(np.float64)
    for k in range(landmarks.shape[1]):
        x, y = landmarks[0, k, :2]
        expected[0, k, 0] = m[0, 0] * x + m[0, 1] * y + m[0, 3]
        expected[0, k, 1] = m[1, 0] * x + m[1, 1] * y + m[1, 3]
    assert_matches(ours, expected.astype(np.float32))


def bilinear_reference(features, matrix, out_hw, channels):
    """Per output pixel: sample at the matrix's image of its centre; bilinear, 0 outside."""
    height, width = features.shape[1:3]
    m = matrix.reshape(4, 4).astype(np.float64)
    out = np.zeros((1, *out_hw, channels), np.float32)
    for oy, ox in np.ndindex(*out_hw):
        x = m[0, 0] * (ox + 0.5) + m[0, 1] * (oy + 0.5) + m[0, 3] - 0.5
        y = m[1, 0] * (ox + 0.5) + m[1, 1] * (oy + 0.5) + m[1, 3] - 0.5
        if not (0 <= x <= width - 1 and 0 <= y <= height - 1):
            continue
        x0, y0 = math.floor(x), math.floor(y)
        total = np.zeros(channels)
        for yy, xx in ((y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1)):
            if yy < height and xx < width:
                weight = (1 - abs(x - xx)) * (1 - abs(y - yy))
                total += weight * features[0, yy, xx, :channels]
        out[0, oy, ox] = total
    return out


@pytest.mark.parametrize("channels", [4, 3])
def test_transform_tensor_bilinear_matches_bilinear_sampling(channels):
    features = random((1, 20, 24, 4), 13)
    angle, scale = 0.4, 0.9
    matrix = np.eye(4, dtype=np.float32)
    matrix[:2, :2] = scale * np.array(
        [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
    )
    matrix[:2, 3] = [6.0, -2.0]  # partly outside the input: zeros there
    model, feeds = one_op(
        "TransformTensorBilinear",
        [(features, False), (matrix[None], False)],
        [[1, 16, 18, channels]],
        {"output_height": 16, "output_width": 18},
        version=2,
    )
    (ours,) = run_ours(model, feeds)
    expected = bilinear_reference(features, matrix, (16, 18), channels)
    assert_matches(ours, expected)
    assert np.count_nonzero(ours[0, :, :, 0] == 0) > 0 and np.count_nonzero(ours) > ours.size // 2


def test_transform_tensor_bilinear_with_an_identity_matrix_copies_the_input():
    features = random((1, 8, 8, 2), 14)
    model, feeds = one_op(
        "TransformTensorBilinear",
        [(features, False), (np.eye(4, dtype=np.float32)[None], False)],
        [[1, 8, 8, 2]],
        version=2,
    )
    (ours,) = run_ours(model, feeds)
    np.testing.assert_array_equal(ours, features)


# Errors


def prepare_error(model, feeds=()) -> str:
    interpreter = pytflite.Interpreter(model_content=model, op_resolver=resolver())
    with pytest.raises(RuntimeError) as raised:
        interpreter.allocate_tensors()
    return str(raised.value)


def test_the_default_resolver_leaves_the_ops_unresolved():
    model, _ = transpose_conv_model(random((1, 4, 4, 2)), random((3, 2, 2, 2)), random((3,)), (2, 2), SAME)
    interpreter = pytflite.Interpreter(model_content=model)
    with pytest.raises(RuntimeError, match="Encountered unresolved custom op: Convolution2DTransposeBias"):
        interpreter.allocate_tensors()


def test_transpose_conv_bias_errors():
    x, w = random((1, 4, 4, 2)), random((3, 2, 2, 2))
    model, _ = transpose_conv_model(x, w, random((4,)), (2, 2), SAME)
    assert "SizeOfDimension(weights, 0) != SizeOfDimension(bias, 0) (3 != 4)" in prepare_error(model)
    model, _ = transpose_conv_model(x, random((3, 2, 2, 5)), random((3,)), (2, 2), SAME)
    assert "SizeOfDimension(input, 3) != SizeOfDimension(weights, 3) (2 != 5)" in prepare_error(model)
    model, _ = transpose_conv_model(x, w, random((3,)), (0, 2), SAME)
    with pytest.raises(ValueError, match="strides must be positive"):
        pytflite.Interpreter(model_content=model, op_resolver=resolver())
    model, _ = one_op(
        "Convolution2DTransposeBias", [(x, False), (w, True), (random((3,)), True)], [[]], b"\1\0\0\0"
    )
    with pytest.raises(ValueError, match="needs its options as a 12-byte C struct, got 4 bytes"):
        pytflite.Interpreter(model_content=model, op_resolver=resolver())


def test_pooling_errors():
    x = random((1, 4, 4))
    model, _ = one_op("MaxPoolingWithArgmax2D", [(x, False)], [[], []], pool_params(SAME, (2, 2), (2, 2)))
    assert "NumDimensions(input) != 4 (3 != 4)" in prepare_error(model)
    x = random((1, 4, 4, 2))
    model, _ = one_op("MaxPoolingWithArgmax2D", [(x, False)], [[], []], pool_params(VALID, (1, 1), (7, 7)))
    assert "the filter does not fit the input" in prepare_error(model)
    model, _ = one_op(
        "MaxUnpooling2D", [(x, False), (x[:, :2], False)], [[]], pool_params(SAME, (2, 2), (2, 2))
    )
    assert "indices shape (1, 2, 4, 2) != input shape (1, 4, 4, 2)" in prepare_error(model)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"output_height": 0}, "Incorrect output_height: 0"),
        ({"scale_y": -1.0}, "Incorrect scale_y: -1.0"),
        ({"left_rotation_idx": -3}, "Incorrect left_rotation_idx: -3"),
        ({"subset_idxs": [1, -2]}, "Incorrect subset value: index = 1, value = -2"),
        ({"subset_idxs": []}, "Subset parameter is empty"),
        ({"right_rotation_idx": 12}, "landmark index 12 is out of range for 12 landmarks"),
    ],
)
def test_landmarks_to_transform_matrix_errors(change, message):
    model, _ = one_op(
        "Landmarks2TransformMatrix",
        [(face_like_landmarks(), False)],
        [[]],
        {**MATRIX_OPTIONS, **change},
        version=2,
    )
    assert message in prepare_error(model)


def test_transform_errors():
    matrix = np.eye(4, dtype=np.float32)[None]
    model, _ = one_op("TransformLandmarks", [(random((1, 5, 4)), False), (matrix, False)], [[]], version=2)
    assert "Incorrect dimensions size: 4" in prepare_error(model)
    model, _ = one_op(
        "TransformLandmarks", [(random((1, 5, 3)), False), (matrix[:, :1], False)], [[]], version=2
    )
    assert "the transform matrix needs 8 values" in prepare_error(model)
    model, _ = one_op(
        "TransformTensorBilinear", [(random((1, 6, 6, 2)), False), (matrix, False)], [[1, 4, 4, 3]], version=2
    )
    assert "is not [1, height, width, channels <= 2]" in prepare_error(model)


def test_the_cli_takes_the_pack_by_its_short_name():
    from pytflite.tools.loading import op_resolver

    ops = op_resolver(["mediapipe"])
    assert (
        ops.find_custom("TransformTensorBilinear", 2).invoke
        is mediapipe.transform_tensor_bilinear.KERNEL.invoke
    )
    assert ops.find_builtin(pytflite.BuiltinOperator.ADD, 1) is not None

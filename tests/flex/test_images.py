"""The image kernels (images.py, image_color.py, image_boxes.py) beyond what the images_* fixtures
reach: values recorded from TF 2.18.1 for edge paths (one-pixel-wide images in each fill mode, integer
images, a zero projection, NaN overlaps, nothing above the score threshold) and TF's refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite.flex import TfNode, kernel_for
from pytflite.flex.dtypes import BY_NAME
from pytflite.flex.kernels.image_boxes import _introsort, _std_sort


def run(op: str, attrs: dict, *inputs):
    values = {name: BY_NAME[v] if isinstance(v, str) and v in BY_NAME else v for name, v in attrs.items()}
    return kernel_for(op).compute(TfNode(op, "test", values), *(np.asarray(v) for v in inputs))


def f32(*values) -> np.ndarray:
    return np.array(values, np.float32)


def test_bicubic_of_an_integer_image():
    image = np.array([[[[1], [-7]], [[12], [100]]]], np.int32)
    got = run("ResizeBicubic", {"T": "int32", "half_pixel_centers": True}, image, np.array([3, 3], np.int32))
    expected = f32(
        1.2191019, -6.887441, -14.993983, 3.8644462, 26.5, 49.13555, 6.50979, 59.887436, 113.265076
    )
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.ravel(), expected)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("REFLECT", f32(1.4, 1, 1.6, 3.2, 4, 1.4, 1, 1.6, 3.2, 4)),
        ("WRAP", f32(3.2, 4, 1.6, 3.2, 1, 3.2, 4, 1.6, 3.2, 1)),
        ("NEAREST", f32(1, 1, 1.6, 3.2, 4, 1, 1, 1.6, 3.2, 4)),
        ("CONSTANT", f32(9, 7.08, 6.04, 6.6800003, 8.2, 9, 9, 9, 9, 9)),
    ],
)
def test_transform_fill_modes_on_a_one_row_image(mode, expected):
    """The row folds, wraps or clamps; its single row (height 1) maps every y to 0 but in CONSTANT."""
    image = np.array([[[[1.0], [2.0], [4.0]]]], np.float32)
    transform = f32([1.0, 0, -1.4, 0, 1, 0.6, 0, 0])
    attrs = {"dtype": "float32", "interpolation": b"BILINEAR", "fill_mode": mode.encode()}
    got = run(
        "ImageProjectiveTransformV3", attrs, image, transform, np.array([2, 5], np.int32), np.float32(9)
    )
    np.testing.assert_array_equal(got.ravel(), expected)


def test_transform_of_an_int64_image_truncates_toward_zero():
    image = np.array([[[[-5], [3]], [[10], [-8]]]], np.int64)
    transform = f32([1, 0, 0.3, 0, 1, 0.6, 0, 0])
    attrs = {"dtype": "int64", "interpolation": b"BILINEAR", "fill_mode": b"CONSTANT"}
    got = run(
        "ImageProjectiveTransformV3", attrs, image, transform, np.array([2, 2], np.int32), np.float32(-2.7)
    )
    assert got.dtype == np.int64 and got.ravel().tolist() == [1, -3, 0, -3]


def test_transform_where_the_projection_is_zero_fills():
    image = np.array([[[[1.0], [2.0], [4.0]]]], np.float32)
    attrs = {"dtype": "float32", "interpolation": b"NEAREST", "fill_mode": b"WRAP"}
    transform = f32([1, 0, 0, 0, 1, 0, -1.0, 0])
    got = run(
        "ImageProjectiveTransformV3", attrs, image, transform, np.array([1, 3], np.int32), np.float32(9)
    )
    np.testing.assert_array_equal(got.ravel(), f32(1, 9, 4))


def test_crop_and_resize_of_a_uint8_image_nearest():
    image = (np.arange(24, dtype=np.uint8).reshape(1, 2, 4, 3) * 10).astype(np.uint8)
    boxes = f32([0.0, 0.1, 1.0, 0.85])
    attrs = {"T": "uint8", "method": b"nearest"}
    got = run("CropAndResize", attrs, image, boxes, np.array([0], np.int32), np.array([2, 3], np.int32))
    expected = f32(0, 10, 20, 30, 40, 50, 90, 100, 110, 120, 130, 140, 150, 160, 170, 210, 220, 230)
    np.testing.assert_array_equal(got.ravel(), expected)


def test_hue_that_wraps_round_and_saturation_past_one():
    pixels = np.array([[[[0.9, 0.1, 0.4], [0.2, 0.3, 0.25]]]], np.float32)
    hue = run("AdjustHue", {"T": "float32"}, pixels, np.float32(0.95))
    np.testing.assert_array_equal(hue.ravel(), f32(0.9, 0.1, 0.64000016, 0.2, 0.3, 0.21999998))
    saturated = run("AdjustSaturation", {"T": "float32"}, pixels, np.float32(2.5))
    np.testing.assert_array_equal(saturated.ravel(), f32(0.9, 0, 0.33749998, 0.049999982, 0.3, 0.175))


def test_extract_patches_of_complex_values_pads_with_zeros():
    images = ((np.arange(18) - 5).reshape(1, 3, 3, 2) * (1 + 2j)).astype(np.complex64)
    attrs = {
        "T": "complex64",
        "ksizes": [1, 2, 2, 1],
        "strides": [1, 2, 2, 1],
        "rates": [1, 1, 1, 1],
        "padding": b"SAME",
    }
    got = run("ExtractImagePatches", attrs, images)
    assert got.shape == (1, 2, 2, 8) and got.dtype == np.complex64
    np.testing.assert_array_equal(
        got[0, 1, 1], np.array([11 + 22j, 12 + 24j, 0, 0, 0, 0, 0, 0], np.complex64)
    )


@pytest.mark.parametrize(("score_threshold", "expected"), [(-1.0, [0, 2, 1]), (0.0, [0, 2])])
def test_nan_overlaps_zero_a_score_without_suppressing(score_threshold, expected):
    """A NaN overlap weighs the candidate's score to 0 (TF's soft path): requeued above the threshold."""
    overlaps = f32([1.0, np.nan, 0.1], [np.nan, 1.0, 0.2], [0.1, 0.2, 1.0])
    inputs = (overlaps, f32(0.9, 0.8, 0.7), np.int32(3), np.float32(0.5), np.float32(score_threshold))
    assert run("NonMaxSuppressionWithOverlaps", {}, *inputs).tolist() == expected


def test_combined_nms_with_nothing_above_the_threshold():
    inputs = (
        np.zeros((1, 3, 1, 4), np.float32),
        np.full((1, 3, 2), 0.1, np.float32),
        np.int32(2),
        np.int32(4),
        np.float32(0.5),
        np.float32(0.5),
    )
    boxes, scores, classes, valid = run("CombinedNonMaxSuppression", {}, *inputs)
    assert boxes.shape == (1, 4, 4) and not boxes.any()
    assert scores.shape == classes.shape == (1, 4) and not scores.any() and not classes.any()
    assert valid.dtype == np.int32 and valid.tolist() == [0]


def test_std_sort_orders_whatever_path_it_takes():
    """libstdc++'s introsort with its insertion sort, and its heapsort (depth limit 0), both sort."""
    rng = np.random.default_rng(3)
    items = [(float(s), i) for i, s in enumerate(np.round(rng.random(300) * 7))]

    def descending(a, b):
        return b[0] < a[0]

    introsorted, heapsorted = list(items), list(items)
    _std_sort(introsorted, descending)
    _introsort(heapsorted, 0, len(heapsorted), 0, descending)
    for result in (introsorted, heapsorted):
        assert [s for s, _ in result] == sorted((s for s, _ in items), reverse=True)
        assert sorted(result) == sorted(items)


_IMAGE = np.zeros((1, 5, 6, 3), np.float32)


@pytest.mark.parametrize(
    ("op", "attrs", "inputs", "message"),
    [
        (
            "ResizeBicubic",
            {"align_corners": True, "half_pixel_centers": True},
            (_IMAGE, [3, 3]),
            "If half_pixel_centers is True, align_corners must be False.",
        ),
        ("ResizeBicubic", {}, (_IMAGE, [0, 3]), "output dimensions must be positive"),
        ("ResizeBilinear", {}, (_IMAGE, [3, 3, 3]), r"shape_t must have two elements\[3\]"),
        ("ResizeNearestNeighbor", {}, (_IMAGE[0], [3, 3]), r"input must be 4-dimensional\[5,6,3\]"),
        (
            "ResizeBicubic",
            {},
            (np.zeros((1, 0, 3, 3), np.float32), [3, 3]),
            "input image must be of non-zero size",
        ),
        (
            "CropAndResize",
            {},
            (_IMAGE, f32([0, 0, 1, 1]), np.array([1], np.int32), [2, 2]),
            r"box_index has values outside \[0, batch_size\)",
        ),
        (
            "CropAndResize",
            {},
            (_IMAGE, f32([0, 0, np.inf, 1]), np.array([0], np.int32), [2, 2]),
            "Boxes contains at least one element that is not finite",
        ),
        (
            "CropAndResize",
            {},
            (_IMAGE, f32([0, 0, 1, 1]), np.array([0, 0], np.int32), [2, 2]),
            "box_index has incompatible shape",
        ),
        (
            "ExtractImagePatches",
            {"ksizes": [1, 5, 5, 1], "strides": [1, 1, 1, 1], "rates": [1, 3, 3, 1], "padding": b"VALID"},
            (np.zeros((1, 4, 4, 1), np.float32),),
            r"Computed output size would be negative: -8 \[input_size: 4, effective_filter_size: 13, stride: 1\]",
        ),
        (
            "ExtractImagePatches",
            {"ksizes": [2, 1, 1, 1], "strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": b"VALID"},
            (_IMAGE,),
            "Only support ksizes across space.",
        ),
        (
            "Dilation2D",
            {"strides": [1, 1, 1, 1], "rates": [1, 1, 1, 1], "padding": b"SAME"},
            (np.zeros((1, 4, 4, 2), np.float32), np.zeros((3, 3, 1), np.float32)),
            "input and filter must have the same depth: 2 vs 1",
        ),
        (
            "RGBToHSV",
            {},
            (np.zeros((4, 2), np.float32),),
            "input must have 3 channels but input only has 2 channels.",
        ),
        ("HSVToRGB", {}, (np.float32(1),), r"input must be at least 1D\[\]"),
        (
            "AdjustHue",
            {},
            (np.zeros((6, 3), np.float32), np.float32(0)),
            r"input must be at least 3-D, got shape\[6,3\]",
        ),
        ("AdjustSaturation", {}, (_IMAGE, f32(0.1)), r"scale must be scalar: \[1\]"),
        ("AdjustContrastv2", {}, (_IMAGE, f32(0.1)), r"contrast_factor must be scalar: \[1\]"),
        (
            "NonMaxSuppressionV3",
            {"T": "float32", "T_threshold": "float32"},
            (
                np.zeros((6, 3), np.float32),
                np.zeros(6, np.float32),
                np.int32(3),
                np.float32(0.5),
                np.float32(0),
            ),
            r"boxes must have 4 columns \(Dimension must be 4 but is 3\)",
        ),
        (
            "NonMaxSuppressionV3",
            {"T": "float32", "T_threshold": "float32"},
            (
                np.zeros((6, 4), np.float32),
                np.zeros(6, np.float32),
                np.int32([3]),
                np.float32(0.5),
                np.float32(0),
            ),
            r"max_output_size must be 0-D, got shape \[1\] \(Shape must be rank 0 but is rank 1\)",
        ),
        (
            "NonMaxSuppressionV4",
            {"T": "float32", "T_threshold": "float32"},
            (
                np.zeros((6, 4), np.float32),
                np.zeros(6, np.float32),
                np.int32(-1),
                np.float32(0.5),
                np.float32(0),
            ),
            "output size must be non-negative",
        ),
        (
            "NonMaxSuppressionV5",
            {"T": "float32"},
            (np.zeros((6, 4), np.float32), np.zeros(6, np.float32), np.int32(3), *f32(0.5, 0, -1)),
            "soft_nms_sigma_val must be >= 0",
        ),
        (
            "CombinedNonMaxSuppression",
            {},
            (
                np.zeros((1, 3, 2, 4), np.float32),
                np.zeros((1, 3, 3), np.float32),
                np.int32(2),
                np.int32(4),
                *f32(0.5, 0),
            ),
            "third dimension of boxes must be either 1 or num classes",
        ),
    ],
)
def test_refusals(op, attrs, inputs, message):
    first = np.asarray(inputs[0])
    attrs = {"T": first.dtype.name, **attrs} if op not in ("CombinedNonMaxSuppression",) else attrs
    with pytest.raises(ValueError, match=message):
        run(op, attrs, *inputs)

"""TF's image resampling ops: ResizeBicubic, ResizeBilinear, ResizeNearestNeighbor, CropAndResize, the
projective transforms behind Keras' RandomRotation / RandomZoom / RandomTranslation
(ImageProjectiveTransformV2/V3), ExtractImagePatches and Dilation2D, on every dtype TF takes (TFLite's
builtins resize float32 only, so the converter leaves the others to Flex).

TF samples in float32 whatever the image's type, one output element at a time in a fixed order of
float32 operations; the code below does the same operations in the same order on whole arrays, so its
results are TF's bit for bit. Source coordinates: (x + 0.5) * scale - 0.5 with half_pixel_centers,
x * scale otherwise, scale = in / out, or (in - 1) / (out - 1) with align_corners.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import NUMBERS, REAL
from ..node_def import TfNode
from ..registry import register
from .common import shape_text

_F32 = np.float32
_HALF = _F32(0.5)
_TABLE_SIZE = 1024  # ResizeBicubic's cubic-kernel table: weights at 1/1024 steps


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's roundf: halves away from zero (np.round rounds them to even)."""
    whole = np.trunc(x)
    return whole + np.where(np.abs(x - whole) >= _HALF, np.sign(x), 0).astype(x.dtype)


def _as_index(x: np.ndarray, size: int) -> np.ndarray:
    """Whole-valued float coordinates as indices, those outside [0, size) kept outside as -1 or size."""
    return np.clip(np.nan_to_num(x, nan=-1.0), -1, size).astype(np.int64)


# Resizes.


def _resize_sizes(node: TfNode, images: np.ndarray, size: np.ndarray) -> tuple[int, int]:
    """The output height and width, the inputs checked as TF's resizers check them."""
    if node.attr("half_pixel_centers", False) and node.attr("align_corners", False):
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")
    if images.ndim != 4:
        raise ValueError(f"input must be 4-dimensional{shape_text(images.shape)}")
    if images.shape[3] <= 0:
        raise ValueError("image must have at least one channel")
    if images.shape[1] <= 0 or images.shape[2] <= 0:
        raise ValueError("input image must be of non-zero size")
    if size.ndim != 1:
        raise ValueError(f"shape_t must be 1-dimensional{shape_text(size.shape)}")
    if size.size != 2:
        raise ValueError(f"shape_t must have two elements{shape_text(size.shape)}")
    height, width = int(size[0]), int(size[1])
    if height <= 0 or width <= 0:
        raise ValueError("output dimensions must be positive")
    return height, width


def _source(node: TfNode, in_size: int, out_size: int, centered: bool) -> np.ndarray:
    """Each output position's float32 source coordinate (`centered`: half_pixel_centers subtracts 0.5;
    nearest neighbour's floor does without it)."""
    align = node.attr("align_corners", False) and in_size > 1 and out_size > 1
    scale = _F32(in_size - 1) / _F32(out_size - 1) if align else _F32(in_size) / _F32(out_size)
    positions = np.arange(out_size, dtype=_F32)
    if not node.attr("half_pixel_centers", False):
        return positions * scale
    shifted = (positions + _HALF) * scale
    return shifted - _HALF if centered else shifted


def _cubic_table(a: float) -> np.ndarray:
    """Keys' cubic kernel at 1025 steps of [0, 1]: column 0 the near taps' weight, column 1 the far
    taps' (computed in double, stored as float, as TF's table)."""
    x = np.arange(_TABLE_SIZE + 1, dtype=np.float64) / _TABLE_SIZE
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    return np.stack((near, far), axis=1).astype(_F32)


# half_pixel_centers uses Keys' a = -0.5; the legacy mode keeps a = -0.75.
_CUBIC_TABLES = {True: _cubic_table(-0.5), False: _cubic_table(-0.75)}


def _cubic_taps(node: TfNode, in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output position the four source indices (edge-clamped) and their float32 weights. With
    half_pixel_centers, taps outside the image weigh 0 and the rest are scaled to sum to 1."""
    keys = node.attr("half_pixel_centers", False)
    coord = _source(node, in_size, out_size, centered=True)
    whole = np.floor(coord)
    offset = np.rint((coord - whole) * _F32(_TABLE_SIZE)).astype(np.int64)  # lrintf: halves to even
    table = _CUBIC_TABLES[keys]
    far_side = _TABLE_SIZE - offset
    weights = np.stack((table[offset, 1], table[offset, 0], table[far_side, 0], table[far_side, 1]), axis=1)
    taps = whole.astype(np.int64)[:, None] + np.arange(-1, 3)
    indices = np.clip(taps, 0, in_size - 1)
    if keys:
        weights = np.where(indices == taps, weights, _F32(0))
        total = ((weights[:, 0] + weights[:, 1]) + weights[:, 2]) + weights[:, 3]
        usable = np.abs(total) >= _F32(1000) * np.finfo(_F32).tiny
        weights = np.where(
            usable[:, None], weights * (_F32(1) / np.where(usable, total, _F32(1)))[:, None], weights
        )
    return indices, weights


def _along(weights: np.ndarray, axis: int) -> np.ndarray:
    """A per-position vector shaped to broadcast along `axis` of an NHWC array."""
    shape = [1, 1, 1, 1]
    shape[axis] = weights.size
    return weights.reshape(shape)


def _cubic_pass(values: np.ndarray, indices: np.ndarray, weights: np.ndarray, axis: int) -> np.ndarray:
    """Four-tap interpolation along one axis: ((v0 w0 + v1 w1) + v2 w2) + v3 w3 in float32."""
    total = None
    for tap in range(4):
        term = np.take(values, indices[:, tap].astype(np.intp), axis=axis) * _along(weights[:, tap], axis)
        total = term if total is None else total + term
    return total


@register("ResizeBicubic", types={"T": REAL})
def _resize_bicubic(node: TfNode, images, size):
    """ResizeBicubic: cubic convolution, rows then columns; float32 output.

    Keys' a = -0.5 with half_pixel_centers (taps outside the image dropped), else a = -0.75."""
    height, width = _resize_sizes(node, images, size)
    rows, row_weights = _cubic_taps(node, images.shape[1], height)
    columns, column_weights = _cubic_taps(node, images.shape[2], width)
    values = images.astype(_F32)
    return _cubic_pass(_cubic_pass(values, rows, row_weights, 1), columns, column_weights, 2)


def _linear_taps(node: TfNode, in_size: int, out_size: int):
    coord = _source(node, in_size, out_size, centered=True)
    whole = np.floor(coord)
    lower = np.maximum(whole.astype(np.int64), 0)
    upper = np.minimum(np.ceil(coord).astype(np.int64), in_size - 1)
    return lower, upper, coord - whole


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    return a + (b - a) * t


@register("ResizeBilinear", types={"T": REAL})
def _resize_bilinear(node: TfNode, images, size):
    """ResizeBilinear: a + (b - a) * t along columns, then rows, in float32; float32 output."""
    height, width = _resize_sizes(node, images, size)
    values = images.astype(_F32)
    if (height, width) == images.shape[1:3]:
        return values
    top, bottom, y_lerp = _linear_taps(node, images.shape[1], height)
    left, right, x_lerp = _linear_taps(node, images.shape[2], width)
    x_lerp, y_lerp = _along(x_lerp, 2), _along(y_lerp, 1)
    upper, lower = values[:, top], values[:, bottom]
    upper = _lerp(upper[:, :, left], upper[:, :, right], x_lerp)
    lower = _lerp(lower[:, :, left], lower[:, :, right], x_lerp)
    return _lerp(upper, lower, y_lerp)


def _nearest_indices(node: TfNode, in_size: int, out_size: int) -> np.ndarray:
    coord = _source(node, in_size, out_size, centered=False)
    chosen = _round_half_away(coord) if node.attr("align_corners", False) else np.floor(coord)
    indices = np.minimum(chosen.astype(np.int64), in_size - 1)
    return np.maximum(indices, 0) if node.attr("half_pixel_centers", False) else indices


@register("ResizeNearestNeighbor", types={"T": REAL})
def _resize_nearest(node: TfNode, images, size):
    """ResizeNearestNeighbor: each output pixel copies its nearest input pixel; the image's dtype.

    The floor of its source coordinate, or that coordinate rounded with align_corners."""
    height, width = _resize_sizes(node, images, size)
    if images.shape[1] >= 1 << 24 or images.shape[2] >= 1 << 24:
        raise ValueError("nearest neighbor requires max height & width of 2^24")
    rows = _nearest_indices(node, images.shape[1], height)
    columns = _nearest_indices(node, images.shape[2], width)
    return images[:, rows][:, :, columns]


# CropAndResize.


def _crop_checks(image, boxes, box_index, crop_size) -> tuple[int, int]:
    """The crop height and width, the inputs checked in TF's order."""
    if image.ndim != 4:
        raise ValueError(f"input image must be 4-D{shape_text(image.shape)}")
    if image.shape[1] <= 0 or image.shape[2] <= 0:
        raise ValueError("image dimensions must be positive")
    if boxes.ndim != 2:
        raise ValueError(f"boxes must be 2-D, got: {shape_text(boxes.shape)}")
    if box_index.ndim != 1:
        raise ValueError(f"box_indices must be rank 1 but is shape {shape_text(box_index.shape)}")
    if boxes.size or box_index.size:
        if boxes.shape[1] != 4:
            raise ValueError("boxes must have 4 columns")
        if box_index.shape[0] != boxes.shape[0]:
            raise ValueError("box_index has incompatible shape")
    if crop_size.ndim != 1:
        raise ValueError(f"crop_size must be 1-D{shape_text(crop_size.shape)}")
    if crop_size.shape[0] != 2:
        raise ValueError(f"crop_size must have two elements{shape_text(crop_size.shape)}")
    height, width = int(crop_size[0]), int(crop_size[1])
    if height <= 0 or width <= 0:
        raise ValueError("crop dimensions must be positive")
    if np.any((box_index < 0) | (box_index >= image.shape[0])):
        raise ValueError("box_index has values outside [0, batch_size)")
    if not np.all(np.isfinite(boxes)):
        raise ValueError("Boxes contains at least one element that is not finite")
    return height, width


def _crop_coordinates(start: np.ndarray, end: np.ndarray, image_size: int, crop_size: int) -> np.ndarray:
    """Per box (rows) the float32 source coordinate of each crop position (columns)."""
    last = _F32(image_size - 1)
    if crop_size == 1:  # the box's centre, computed in double as TF's 0.5 * (y1 + y2) * (H - 1)
        return (0.5 * (start + end).astype(np.float64) * (image_size - 1)).astype(_F32)[:, None]
    step = (end - start) * last / _F32(crop_size - 1)
    return start[:, None] * last + np.arange(crop_size, dtype=_F32) * step[:, None]


@register("CropAndResize", types={"T": REAL})
def _crop_and_resize(node: TfNode, image, boxes, box_index, crop_size):
    """CropAndResize: normalized boxes cropped and resized to crop_size; float32.

    Each box (y1, x1, y2, x2 on image box_ind) gets a crop_size grid sampled bilinearly or by nearest
    pixel; positions outside the image get extrapolation_value."""
    method = node.text("method", "bilinear")
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"method must be 'bilinear' or 'nearest'{method}")
    height, width = _crop_checks(image, boxes, box_index, crop_size)
    boxes = boxes.astype(_F32).reshape(-1, 4)
    in_y = _crop_coordinates(boxes[:, 0], boxes[:, 2], image.shape[1], height)  # (boxes, height)
    in_x = _crop_coordinates(boxes[:, 1], boxes[:, 3], image.shape[2], width)  # (boxes, width)
    inside = ((in_y >= 0) & (in_y <= image.shape[1] - 1))[:, :, None] & (
        (in_x >= 0) & (in_x <= image.shape[2] - 1)
    )[:, None, :]
    picks = box_index.astype(np.int64)[:, None, None]

    def sample(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """The float32 pixels at whole coordinates (clamped: outside ones are masked afterwards)."""
        rows = np.clip(rows, 0, image.shape[1] - 1).astype(np.int64)[:, :, None]
        columns = np.clip(columns, 0, image.shape[2] - 1).astype(np.int64)[:, None, :]
        return image[picks, rows, columns].astype(_F32)

    if method == "nearest":
        crops = sample(_round_half_away(in_y), _round_half_away(in_x))
    else:
        top, left = np.floor(in_y), np.floor(in_x)
        y_lerp, x_lerp = (in_y - top)[:, :, None, None], (in_x - left)[:, None, :, None]
        upper = _lerp(sample(top, left), sample(top, np.ceil(in_x)), x_lerp)
        lower = _lerp(sample(np.ceil(in_y), left), sample(np.ceil(in_y), np.ceil(in_x)), x_lerp)
        crops = _lerp(upper, lower, y_lerp)
    extrapolation = _F32(node.attr("extrapolation_value", 0.0))
    return np.where(inside[..., None], crops, extrapolation).astype(_F32)


# Projective transforms.


def _reflect(c: np.ndarray, size: int) -> np.ndarray:
    """[abcd] -> [dcba|abcd|dcba], in TF's float32 arithmetic with integer multiples of 2 * size."""
    if size <= 1:
        return np.zeros_like(c)
    period = 2 * size
    low = c < 0
    folded = np.where(low, _F32(period) * np.trunc(-c / _F32(period)) + c, c)
    folded = np.where(low, np.where(folded < -size, folded + _F32(period), -folded - _F32(1)), folded)
    high = c > size - 1
    wrapped = np.where(high, c - _F32(period) * np.trunc(c / _F32(period)), folded)
    return np.where(high & (wrapped >= size), _F32(period) - wrapped - _F32(1), wrapped)


def _wrap(c: np.ndarray, size: int) -> np.ndarray:
    """[abcd] -> [abcd|abcd|abcd], in TF's arithmetic (which steps by size, counting size - 1 spans)."""
    if size <= 1:
        return np.zeros_like(c)
    span, step = _F32(size - 1), _F32(size)
    low = np.where(c < 0, c + step * (np.trunc(-c / span) + _F32(1)), c)
    return np.where(c > size - 1, c - step * np.trunc(c / span), low)


_FILL_MODES = {
    "REFLECT": _reflect,
    "WRAP": _wrap,
    "CONSTANT": None,
    "NEAREST": lambda c, size: c,
}


def _map_coordinate(mode: str, c: np.ndarray, size: int) -> np.ndarray:
    """An input coordinate folded into the image as fill_mode says (CONSTANT leaves it outside)."""
    if mode == "CONSTANT":
        return c
    return np.clip(_FILL_MODES[mode](c, size), _F32(0), _F32(size - 1)).astype(_F32)


def _transform_shape(images, transforms, output_shape) -> tuple[int, int]:
    if images.ndim != 4:
        raise ValueError("Input images must have rank 4")
    if transforms.ndim != 2 or transforms.shape[0] not in (images.shape[0], 1) or transforms.shape[1] != 8:
        raise ValueError("Input transform should be num_images x 8 or 1 x 8")
    if output_shape is None:
        return images.shape[1], images.shape[2]
    if output_shape.ndim != 1:
        raise ValueError(f"output shape must be 1-dimensional{shape_text(output_shape.shape)}")
    if output_shape.size != 2:
        raise ValueError(f"output shape must have two elements{shape_text(output_shape.shape)}")
    height, width = int(output_shape[0]), int(output_shape[1])
    if height <= 0 or width <= 0:
        raise ValueError("output dimensions must be positive")
    return height, width


def _projective_transform(node: TfNode, images, transforms, output_shape, fill_value=None):
    interpolation, mode = node.text("interpolation"), node.text("fill_mode", "CONSTANT")
    if interpolation not in ("NEAREST", "BILINEAR"):
        raise ValueError(f"Invalid interpolation {interpolation}. Supported types: NEAREST, BILINEAR")
    if mode not in _FILL_MODES:
        raise ValueError(f"Invalid mode {mode}. Supported types: REFLECT, WRAP, CONSTANT, NEAREST")
    height, width = _transform_shape(images, transforms, output_shape)
    if fill_value is not None and fill_value.ndim != 0:
        raise ValueError(f"fill_value must be a scalar{shape_text(fill_value.shape)}")
    dtype = images.dtype
    fill = _to_image_type(np.array(0 if fill_value is None else fill_value, _F32), dtype)
    batch, in_h, in_w = images.shape[:3]
    t = np.broadcast_to(transforms.astype(_F32), (batch, 8))[:, :, None, None].swapaxes(0, 1)
    x = np.arange(width, dtype=_F32)[None, None, :]
    y = np.arange(height, dtype=_F32)[None, :, None]
    projection = (t[6] * x + t[7] * y) + _F32(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        source_x = _map_coordinate(mode, ((t[0] * x + t[1] * y) + t[2]) / projection, in_w)
        source_y = _map_coordinate(mode, ((t[3] * x + t[4] * y) + t[5]) / projection, in_h)
    picks = np.arange(batch)[:, None, None]

    def read(rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """Pixels at whole coordinates, fill_value outside the image."""
        rows, columns = _as_index(rows, in_h), _as_index(columns, in_w)
        inside = (rows >= 0) & (rows < in_h) & (columns >= 0) & (columns < in_w)
        pixels = images[picks, np.clip(rows, 0, in_h - 1), np.clip(columns, 0, in_w - 1)]
        return np.where(inside[..., None], pixels, fill)

    if interpolation == "NEAREST":
        output = read(_round_half_away(source_y), _round_half_away(source_x))
    else:
        y0, x0 = np.floor(source_y), np.floor(source_x)
        y1, x1 = y0 + _F32(1), x0 + _F32(1)
        wy0, wy1 = (y1 - source_y)[..., None], (source_y - y0)[..., None]
        wx0, wx1 = (x1 - source_x)[..., None], (source_x - x0)[..., None]
        upper = wx0 * read(y0, x0).astype(_F32) + wx1 * read(y0, x1).astype(_F32)
        lower = wx0 * read(y1, x0).astype(_F32) + wx1 * read(y1, x1).astype(_F32)
        output = _to_image_type(wy0 * upper + wy1 * lower, dtype)
    return np.where((projection == 0)[..., None], fill, output).astype(dtype)


def _to_image_type(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float32 values as the image's type: C's conversion (integers truncate toward zero)."""
    if dtype.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(values).astype(dtype)
    return values.astype(dtype)


_TRANSFORM_TYPES = {"uint8", "int32", "int64", "float16", "float32", "float64"}


@register("ImageProjectiveTransformV2", types={"dtype": _TRANSFORM_TYPES})
def _transform_v2(node: TfNode, images, transforms, output_shape):
    """ImageProjectiveTransformV2: images resampled through a projective transform; fill value 0.

    Output pixel (x, y) samples the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
    k = c0 x + c1 y + 1, from each image's 8 transform values."""
    return _projective_transform(node, images, transforms, output_shape)


@register("ImageProjectiveTransformV3", types={"dtype": _TRANSFORM_TYPES})
def _transform_v3(node: TfNode, images, transforms, output_shape, fill_value):
    """ImageProjectiveTransformV3: ImageProjectiveTransformV2 with its fill_value an input."""
    return _projective_transform(node, images, transforms, output_shape, fill_value)


# Patches and morphology.


def _window(size: int, filter_size: int, rate: int, stride: int, padding: str) -> tuple[int, int]:
    """TF's windowed output size and padding before, for a filter dilated by `rate`."""
    effective = filter_size + (filter_size - 1) * (rate - 1)
    if stride <= 0:
        raise ValueError(f"Stride must be > 0, but got {stride}")
    if padding == "VALID":
        out, before = int((size - effective + stride) / stride), 0  # C's division truncates
    elif padding == "SAME":
        out = (size + stride - 1) // stride
        before = max(0, (out - 1) * stride + effective - size) // 2
    else:
        raise ValueError(f"padding {padding} is not supported")
    if out < 0:
        raise ValueError(
            f"Computed output size would be negative: {out} [input_size: {size}, "
            f"effective_filter_size: {effective}, stride: {stride}]"
        )
    return out, before


def _taps(values: np.ndarray, filter_hw, strides, rates, padding: str, fill) -> tuple:
    """The input pixel under each filter tap for each output position: a list of (tap (i, j), array
    [batch, out_rows, out_cols, depth]) with `fill` where the tap falls outside the image."""
    (out_rows, top), (out_cols, left) = (
        _window(values.shape[axis], filter_hw[axis - 1], rates[axis - 1], strides[axis - 1], padding)
        for axis in (1, 2)
    )
    reach_rows = (out_rows - 1) * strides[0] + (filter_hw[0] - 1) * rates[0] + 1
    reach_cols = (out_cols - 1) * strides[1] + (filter_hw[1] - 1) * rates[1] + 1
    padded = np.full(
        (
            values.shape[0],
            max(reach_rows, top + values.shape[1]),
            max(reach_cols, left + values.shape[2]),
            values.shape[3],
        ),
        fill,
        values.dtype,
    )
    padded[:, top : top + values.shape[1], left : left + values.shape[2]] = values
    taps = []
    for i in range(filter_hw[0]):
        for j in range(filter_hw[1]):
            r, c = i * rates[0], j * rates[1]
            window = padded[:, r : r + (out_rows - 1) * strides[0] + 1 : strides[0]]
            taps.append(((i, j), window[:, :, c : c + (out_cols - 1) * strides[1] + 1 : strides[1]]))
    return taps


def _spatial(node: TfNode, name: str, refusal: str) -> tuple[int, int]:
    values = node.attr(name)
    if values[0] != 1 or values[3] != 1:
        raise ValueError(refusal)
    return values[1], values[2]


@register("ExtractImagePatches", types={"T": NUMBERS})
def _extract_image_patches(node: TfNode, images):
    """ExtractImagePatches: each (dilated, strided) window flattened into the depth axis.

    ksizes windows dilated by rates, every strides, in (row, column, channel) order; zeros where SAME
    padding reaches outside the image."""
    ksizes, strides, rates = (
        _spatial(node, name, f"Only support {name} across space.") for name in ("ksizes", "strides", "rates")
    )
    for name, values in (("ksizes", ksizes), ("strides", strides), ("rates", rates)):
        if min(values) < 1:
            raise ValueError(f"{name} is out of range.")
    if images.ndim != 4:
        raise ValueError(f"input must be 4-dimensional{shape_text(images.shape)}")
    taps = _taps(images, ksizes, strides, rates, node.text("padding"), 0)
    patches = np.stack([window for _, window in taps], axis=3)
    return patches.reshape((*patches.shape[:3], -1))


@register("Dilation2D", types={"T": REAL})
def _dilation2d(node: TfNode, images, filter_):
    """Dilation2D: morphological dilation, the max over the window of input + filter.

    Positions outside the image take no part."""
    if len(node.attr("strides")) != 4:
        raise ValueError("Sliding window stride field must specify 4 dimensions")
    strides = _spatial(node, "strides", "Stride is only supported across spatial dimensions.")
    if len(node.attr("rates")) != 4:
        raise ValueError("Input stride (atrous rate) field must specify 4 dimensions")
    rates = _spatial(node, "rates", "Rate is only supported across spatial dimensions.")
    if images.ndim != 4:
        raise ValueError(f"input must be 4-dimensional{shape_text(images.shape)}")
    if filter_.ndim != 3:
        raise ValueError(f"filter must be 3-dimensional: {shape_text(filter_.shape)}")
    if filter_.shape[2] != images.shape[3]:
        raise ValueError(
            f"input and filter must have the same depth: {images.shape[3]} vs {filter_.shape[2]}"
        )
    padding = node.text("padding")
    inside = _taps(np.ones((*images.shape[:3], 1), bool), filter_.shape[:2], strides, rates, padding, False)
    values = _taps(images, filter_.shape[:2], strides, rates, padding, 0)
    lowest = np.finfo(images.dtype).min if images.dtype.kind == "f" else np.iinfo(images.dtype).min
    best = np.full(values[0][1].shape, lowest, images.dtype)
    for ((i, j), window), (_, valid) in zip(values, inside, strict=True):
        with np.errstate(over="ignore"):
            candidate = window + filter_[i, j]
        best = np.where(valid & (candidate > best), candidate, best)
    return best

"""TF's colour ops: RGBToHSV, HSVToRGB, AdjustHue, AdjustSaturation and AdjustContrastv2 (the kernels
tf.image.rgb_to_hsv, hsv_to_rgb, adjust_hue, adjust_saturation and adjust_contrast run).

Each is elementwise per pixel (contrast: per image and channel), in the float operations TF's CPU
kernels do, in their order, so results are TF's bit for bit. AdjustHue and AdjustSaturation have their
own HSV arithmetic, not RGBToHSV's: AdjustHue works on (hue, min, max) with hue in [0, 6), and
AdjustSaturation adds its hue offsets 2/6 and 4/6 in double precision.
"""

from __future__ import annotations

import numpy as np

from ..node_def import TfNode
from ..registry import register
from .common import shape_text

_F32 = np.float32
_HSV_TYPES = {"float32", "float64"}


def _channels(image: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return image[..., 0], image[..., 1], image[..., 2]


def _colour_planes(image: np.ndarray, refusal) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three channel planes of an image whose last axis must be 3 long."""
    if image.shape[-1] != 3:
        raise ValueError(refusal(image.shape[-1]))
    return _channels(image)


def _hsv_checks(image: np.ndarray) -> None:
    if image.ndim < 1:
        raise ValueError(f"input must be at least 1D{shape_text(image.shape)}")


@register("RGBToHSV", types={"T": _HSV_TYPES})
def _rgb_to_hsv(node: TfNode, images):
    """RGBToHSV: hue in [0, 1), saturation (max - min) / max, value max."""
    _hsv_checks(images)
    r, g, b = _colour_planes(images, lambda n: f"input must have 3 channels but input only has {n} channels.")
    one = images.dtype.type(1)
    value = np.maximum(np.maximum(r, g), b)
    spread = value - np.minimum(np.minimum(r, g), b)
    with np.errstate(divide="ignore", invalid="ignore"):
        saturation = np.where(value > 0, spread / value, 0).astype(images.dtype)
        norm = (one / spread) * (one / images.dtype.type(6))
        hue = np.where(
            r == value,
            norm * (g - b),
            np.where(
                g == value,
                norm * (b - r) + images.dtype.type(2) / 6,
                norm * (r - g) + images.dtype.type(4) / 6,
            ),
        )
    hue = np.where(spread > 0, hue, 0).astype(images.dtype)
    hue = np.where(hue < 0, hue + one, hue)
    return np.stack((hue, saturation, value), axis=-1)


@register("HSVToRGB", types={"T": _HSV_TYPES})
def _hsv_to_rgb(node: TfNode, images):
    """HSVToRGB: the inverse of RGBToHSV, by piecewise-linear channel ramps of hue * 6."""
    _hsv_checks(images)
    h, s, v = _colour_planes(images, lambda n: f"input must have 3 channels but input only has {n} channels.")
    t = images.dtype.type
    sixths = h * t(6)
    ramps = (
        np.abs(sixths - t(3)) - t(1),
        -np.abs(sixths - t(2)) + t(2),
        -np.abs(sixths - t(4)) + t(2),
    )
    grey = -s + t(1)
    return np.stack([(grey + s * np.clip(ramp, t(0), t(1))) * v for ramp in ramps], axis=-1)


def _adjust_checks(image: np.ndarray, amount: np.ndarray, name: str) -> None:
    if image.ndim < 3:
        raise ValueError(f"input must be at least 3-D, got shape{shape_text(image.shape)}")
    if amount.ndim != 0:
        raise ValueError(f"{name} must be scalar: {shape_text(amount.shape)}")
    if image.shape[-1] != 3:
        raise ValueError(f"input must have 3 channels but instead has {image.shape[-1]} channels.")


def _pick(category: np.ndarray, options) -> np.ndarray:
    """Per element the entry of `options` (one array per category, the last also the default)."""
    return np.select([category == k for k in range(len(options) - 1)], options[:-1], options[-1])


@register("AdjustHue", types={"T": {"float32"}})
def _adjust_hue(node: TfNode, images, delta):
    """AdjustHue: rotate hue by delta (a fraction of the colour circle), keeping each pixel's min and max."""
    _adjust_checks(images, delta, "delta")
    r, g, b = _channels(images)
    # Which channel is max / middle / min, numbered by the sextant of the hue circle it means.
    r_lt_g = r < g
    sextant = np.where(
        r_lt_g, np.where(b < r, 1, np.where(b > g, 3, 2)), np.where(b < g, 0, np.where(b > r, 4, 5))
    )
    high = _pick(sextant, [r, g, g, b, b, r])
    middle = _pick(sextant, [g, r, b, g, r, b])
    low = _pick(sextant, [b, b, r, r, g, g])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (middle - low) / (high - low)
    rising = sextant % 2 == 0
    hue = np.where(high == low, _F32(0), sextant.astype(_F32) + np.where(rising, ratio, _F32(1) - ratio))
    hue = hue + _F32(delta) * _F32(6)
    while np.any(hue < 0):
        hue = np.where(hue < 0, hue + _F32(6), hue)
    while np.any(hue >= 6):
        hue = np.where(hue >= 6, hue - _F32(6), hue)
    sextant = hue.astype(np.int64)
    ratio = hue - sextant.astype(_F32)
    ratio = np.where(sextant % 2 == 0, ratio, _F32(1) - ratio)
    middle = low + ratio * (high - low)
    return np.stack(
        (
            _pick(sextant, [high, middle, low, low, middle, high]),
            _pick(sextant, [middle, high, high, middle, low, low]),
            _pick(sextant, [low, low, middle, high, high, middle]),
        ),
        axis=-1,
    ).astype(_F32)


def _wide(values: np.ndarray) -> np.ndarray:
    """float32 values as float64, for TF's float + double sums (NumPy would add a Python float in float32)."""
    return values.astype(np.float64)


@register("AdjustSaturation", types={"T": {"float32"}})
def _adjust_saturation(node: TfNode, images, scale):
    """AdjustSaturation: multiply HSV saturation by scale (clamped to [0, 1]) and convert back."""
    _adjust_checks(images, scale, "scale")
    r, g, b = _channels(images)
    value = np.maximum(r, np.maximum(g, b))
    spread = value - np.minimum(r, np.minimum(g, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        saturation = np.where(value > 0, spread / value, _F32(0))
        norm = _F32(1) / (_F32(6) * spread)
        hue = np.where(
            r == value,
            norm * (g - b),
            np.where(g == value, _wide(norm * (b - r)) + 2.0 / 6.0, _wide(norm * (r - g)) + 4.0 / 6.0).astype(
                _F32
            ),
        )
    hue = np.where(spread <= 0, _F32(0), hue)
    hue = np.where(hue < 0, hue + _F32(1), hue)
    saturation = np.minimum(_F32(1), np.maximum(_F32(0), saturation * _F32(scale)))
    chroma = saturation * value
    offset = value - chroma
    sixths = hue * _F32(6)
    sextant = sixths.astype(np.int64)
    folded = sixths
    while np.any(folded <= 0):
        folded = np.where(folded <= 0, folded + _F32(2), folded)
    while np.any(folded >= 2):
        folded = np.where(folded >= 2, folded - _F32(2), folded)
    mixed = chroma * (_F32(1) - np.abs(folded - _F32(1)))
    zero = np.zeros_like(chroma)
    channels = (
        _pick(sextant, [chroma, mixed, zero, zero, mixed, chroma, zero]),
        _pick(sextant, [mixed, chroma, chroma, mixed, zero, zero, zero]),
        _pick(sextant, [zero, zero, mixed, chroma, chroma, mixed, zero]),
    )
    return np.stack([channel + offset for channel in channels], axis=-1).astype(_F32)


def _folded_sum(planes: np.ndarray) -> np.ndarray:
    """Sum over axis 1 of [batch, n, channels] as TF's contrast kernel sums: repeatedly add the second
    half of the rows onto the first (the middle row of an odd count stays), until one row is left."""
    rows = planes.shape[1]
    right = rows // 2
    left = rows - right
    total = np.concatenate((planes[:, left:] + planes[:, :right], planes[:, right:left]), axis=1)
    while left > 1:
        right = left // 2
        total[:, :right] += total[:, left - right : left]
        left -= right
    return total[:, 0]


@register("AdjustContrastv2", types={"T": {"float32"}})
def _adjust_contrast(node: TfNode, images, contrast_factor):
    """AdjustContrastv2: per image and channel, mean + factor * (x - mean)."""
    if images.ndim < 3:
        raise ValueError(f"input must be at least 3-D, got shape{shape_text(images.shape)}")
    if contrast_factor.ndim != 0:
        raise ValueError(f"contrast_factor must be scalar: {shape_text(contrast_factor.shape)}")
    if images.size == 0:
        return images.copy()
    height, width, channels = images.shape[-3:]
    planes = images.reshape(-1, height * width, channels)
    mean = (_folded_sum(planes) * (_F32(1) / _F32(height * width)))[:, None, :]
    return (mean + _F32(contrast_factor) * (planes - mean)).reshape(images.shape)

"""Input values for the commands: `--input name=file.npy|file.png|random|zeros`, an .npz of inputs, and
benchmark_model's random inputs.

An input is named by its tensor name, its signature name, or its position (0, 1, ...); a lone value with
no name goes to the only (or first unnamed) input. Images are resized (nearest) to the input's height and
width and scaled to the input's type: float to [0, 1] (or `--image-range LO,HI`), uint8 raw, int8 and
int16 through the input's quantization.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .loading import ToolError
from .png import decode_png

SEED = 0


def random_value(shape: Sequence[int], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    """Uniform values: [-1, 1) for floats, the whole range of 8- and 16-bit integers, 0..99 for wider ones."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    if dtype.kind in "iu":  # 8 and 16 bits: quantized data, any value; wider: counts and indices
        info = np.iinfo(dtype)
        low, high = (int(info.min), int(info.max)) if dtype.itemsize <= 2 else (0, 99)
        return rng.integers(low, high, shape, endpoint=True).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    if dtype.kind in "OSU":
        return np.array([b"pytflite"] * int(np.prod(shape)), dtype=object).reshape(shape)
    raise ToolError(f"cannot make random values of type {dtype}")


def image_value(path: str, detail: dict[str, Any], value_range: tuple[float, float] | None) -> np.ndarray:
    """A PNG scaled and resized to an image input of shape [1, H, W, C] (or [H, W, C])."""
    image = decode_png(Path(path).read_bytes())
    shape = [int(d) for d in detail["shape"]]
    if len(shape) not in (3, 4) or shape[-1] not in (1, 3, 4):
        raise ToolError(f"input {detail['name']} of shape {shape} does not take an image")
    height, width, channels = shape[-3], shape[-2], shape[-1]
    if image.shape[2] in (2, 4):  # drop alpha unless the model wants it
        image = image[:, :, :-1] if channels != 4 else image
    if channels == 1 and image.shape[2] == 3:
        image = image.mean(axis=2, keepdims=True).round().astype(np.uint8)
    elif channels == 3 and image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    rows = (np.arange(height) * image.shape[0] // height).clip(0, image.shape[0] - 1)
    cols = (np.arange(width) * image.shape[1] // width).clip(0, image.shape[1] - 1)
    image = image[rows][:, cols][:, :, :channels].reshape(shape)
    dtype = np.dtype(detail["dtype"])
    if dtype.kind == "f":
        low, high = value_range or (0.0, 1.0)
        return (image.astype(np.float64) / 255.0 * (high - low) + low).astype(dtype)
    scale, zero_point = detail["quantization"]
    if dtype == np.uint8 and (not scale or (abs(scale - 1 / 255) < 1e-6 and zero_point == 0)):
        return image.astype(np.uint8)
    if not scale:
        return (image.astype(np.int32) - 128).astype(dtype) if dtype == np.int8 else image.astype(dtype)
    low, high = value_range or (0.0, 1.0)
    real = image.astype(np.float64) / 255.0 * (high - low) + low
    info = np.iinfo(dtype)
    return np.clip(np.round(real / scale) + zero_point, info.min, info.max).astype(dtype)


def _find(details: list[dict[str, Any]], name: str, aliases: dict[str, int]) -> int:
    """The position of the input called `name` (tensor name, signature name or position)."""
    if name in aliases:
        return aliases[name]
    for position, detail in enumerate(details):
        if detail["name"] == name:
            return position
    if name.isdigit() and int(name) < len(details):
        return int(name)
    known = ", ".join(repr(d["name"]) for d in details)
    raise ToolError(f"the model has no input {name!r} (inputs: {known})")


def _load_value(source: str, detail: dict[str, Any], rng: np.random.Generator, image_range) -> np.ndarray:
    if source == "random":
        return random_value(detail["shape"], detail["dtype"], rng)
    if source in ("zeros", "ones"):
        return (np.zeros if source == "zeros" else np.ones)(detail["shape"], detail["dtype"])
    path = Path(source)
    if not path.is_file():
        raise ToolError(f"input file {source} does not exist (use a .npy or .png file, or 'random')")
    if path.suffix.lower() == ".png":
        return image_value(source, detail, image_range)
    if path.suffix.lower() == ".npy":
        return np.load(path, allow_pickle=False)
    raise ToolError(f"input file {source}: expected .npy or .png (an .npz goes without a name)")


def _npz_values(path: str, details: list[dict[str, Any]], names: list[str]) -> dict[int, np.ndarray]:
    """Inputs from an .npz keyed by input name, signature name, `input_<i>` or `input_<i>__...`."""
    data = np.load(path, allow_pickle=False)
    values = {}
    for position, detail in enumerate(details):
        for key in (names[position], detail["name"], f"input_{position}"):
            if key in data.files:
                values[position] = data[key]
                break
        else:
            prefixed = sorted(k for k in data.files if k.startswith(f"input_{position}__"))
            if prefixed:
                values[position] = data[prefixed[0]]
    return values


def resolve_inputs(
    specs: Sequence[str],
    details: list[dict[str, Any]],
    names: list[str] | None = None,
    image_range: tuple[float, float] | None = None,
    seed: int = SEED,
) -> list[np.ndarray]:
    """One value per input, in `details` order; inputs not given get random values.

    `names` are the names users may call the inputs by (signature names), aligned with `details`."""
    names = names or [d["name"] for d in details]
    aliases = {name: position for position, name in enumerate(names)}
    rng = np.random.default_rng(seed)
    values: dict[int, np.ndarray] = {}
    for spec in specs:
        name, sep, source = spec.partition("=")
        if not sep:
            name, source = "", spec
        if not name and source.lower().endswith(".npz"):
            values.update(_npz_values(source, details, names))
            continue
        if not name:
            missing = [i for i in range(len(details)) if i not in values]
            if not missing:
                raise ToolError(f"--input {spec}: every input already has a value; name it (name=...)")
            position = missing[0]
        else:
            position = _find(details, name, aliases)
        values[position] = _load_value(source, details[position], rng, image_range)
    result = []
    for position, detail in enumerate(details):
        value = values.get(position)
        if value is None:
            value = random_value(detail["shape"], detail["dtype"], rng)
        result.append(value)
    return result


def parse_shapes(text: str) -> list[list[int]]:
    """benchmark_model's --input_layer_shape: dims by ',' and inputs by ':' ("1,224,224,3:1,10")."""
    shapes = []
    for part in filter(None, text.split(":")):
        try:
            shapes.append([int(d) for d in part.split(",")])
        except ValueError:
            raise ToolError(f"--input_layer_shape {text!r}: dimensions must be integers") from None
    return shapes


def parse_range(text: str | None) -> tuple[float, float] | None:
    if not text:
        return None
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise ToolError(f"range {text!r} is not LO,HI") from None
    return low, high

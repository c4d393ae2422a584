"""TF's ops on shapes and the arrays made from them (Shape, ShapeN, Size, Rank, EnsureShape, Fill,
Empty, Range, LinSpace) and the pass-throughs (Identity, StopGradient, CheckNumerics, Bitcast), for any
dtype: the converter leaves them as Flex ops on the float64, complex and string tensors TFLite's
builtins lack, or around them.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOATS, NUMBERS
from ..node_def import TfNode
from ..registry import register
from .common import scalar, shape_text, sizes, zeros

_INDEX = frozenset({"int32", "int64"})


def _shape_of(node: TfNode, x: np.ndarray) -> np.ndarray:
    return np.asarray(x.shape, dtype=node.attr("out_type").numpy)


@register("Shape", types={"out_type": _INDEX})
def _shape(node: TfNode, x):
    """Shape: x's shape as a vector of out_type."""
    return _shape_of(node, x)


@register("ShapeN", types={"out_type": _INDEX})
def _shape_n(node: TfNode, *xs):
    """ShapeN: Shape of each input."""
    return tuple(_shape_of(node, x) for x in xs)


@register("Size", types={"out_type": _INDEX})
def _size(node: TfNode, x):
    """Size: x's number of elements, of out_type."""
    return np.asarray(x.size, dtype=node.attr("out_type").numpy)


@register("Rank")
def _rank(node: TfNode, x):
    """Rank: x's number of dimensions, an int32."""
    return np.asarray(x.ndim, dtype=np.int32)


def _pass_through(op: str, what: str) -> None:
    def compute(node: TfNode, x):
        return x

    compute.__doc__ = f"{op}: its input, {what}."
    register(op, compute)


_pass_through("Identity", "unchanged")
_pass_through("StopGradient", "unchanged (gradients are training's)")
_pass_through("PreventGradient", "unchanged (gradients are training's)")
_pass_through("Snapshot", "copied")


@register("IdentityN")
def _identity_n(node: TfNode, *xs):
    """IdentityN: its inputs, unchanged."""
    return xs


@register("EnsureShape")
def _ensure_shape(node: TfNode, x):
    """EnsureShape: x, refused unless its shape fits the `shape` attr (-1 dimensions fit any size).

    TF's message names the input as the Flex delegate names every input: dummy_input."""
    expected = node.attr("shape", None)
    if expected is not None and (
        len(expected) != x.ndim or any(e not in (-1, s) for e, s in zip(expected, x.shape))
    ):
        raise ValueError(
            f"Shape of tensor dummy_input {shape_text(x.shape)} is not compatible with expected shape "
            f"{shape_text(expected)}."
        )
    return x


def _as_float(x: np.ndarray) -> np.ndarray:
    """bfloat16 values (held as their uint16 bits) as float32; other floats as they are."""
    if x.dtype == np.uint16:
        return (x.astype(np.uint32) << 16).view(np.float32)
    return x


def _join_words(words: list[str]) -> str:
    if len(words) < 3:
        return " and ".join(words)
    return ", ".join(words[:-1]) + ", and " + words[-1]


def _check_numerics(op: str, tests) -> None:
    def compute(node: TfNode, x):
        values = _as_float(x)
        found = [word for word, test in tests if np.any(test(values))]
        if found:
            raise ValueError(f"{node.text('message', '')} : Tensor had {_join_words(found)} values")
        return x

    compute.__doc__ = f"{op}: x, refused with `message` if it holds a NaN or an infinity."
    register(op, compute, types={"T": FLOATS | {"bfloat16"}})


_check_numerics("CheckNumerics", (("Inf", np.isinf), ("NaN", np.isnan)))
_check_numerics("CheckNumericsV2", (("-Inf", np.isneginf), ("+Inf", np.isposinf), ("NaN", np.isnan)))


@register("Bitcast", types={"T": NUMBERS | {"bfloat16"}, "type": NUMBERS | {"bfloat16"}})
def _bitcast(node: TfNode, x):
    """Bitcast: the same bytes read as another type.

    A wider type takes the last dimension's elements (which must be as many as fit), a narrower one adds
    a last dimension."""
    source, target = node.attr("T"), node.attr("type")
    grow, shrink = source.numpy.itemsize, target.numpy.itemsize
    data = np.ascontiguousarray(x)
    if grow == shrink:
        return data.view(target.numpy)
    if grow > shrink:
        return data.view(target.numpy).reshape((*x.shape, grow // shrink))
    if x.ndim == 0 or x.shape[-1] * grow != shrink:
        raise ValueError(f"Cannot bitcast from {source.code} to {target.code}")
    return data.view(target.numpy).reshape(x.shape[:-1])


# --- arrays made from scalars ---------------------------------------------------------------------


@register("Fill")
def _fill(node: TfNode, dims, value):
    """Fill: an array of shape `dims` holding `value` everywhere."""
    if dims.ndim > 1:
        raise ValueError(f"dims must represent a vector, got shape {shape_text(dims.shape)}")
    element = scalar(value, "value must represent a scalar, got shape ")
    return np.full(sizes(dims), element, dtype=value.dtype)


@register("Empty")
def _empty(node: TfNode, shape):
    """Empty: an array of `shape` and type `dtype` (zeros: TF leaves it uninitialized unless `init`)."""
    if shape.ndim != 1:
        raise ValueError(f"shape must be a vector of int32, got shape {shape_text(shape.shape)}")
    return zeros(sizes(shape), node.attr("dtype").numpy)


def _tf_number(value) -> str:
    """A number as TF's StrCat writes it: the shortest %g form that reads back as the same value."""
    if isinstance(value, np.floating):
        for digits in (6, 9) if value.dtype.itemsize <= 4 else (15, 17):
            text = f"{float(value):.{digits}g}"
            if value.dtype.type(text) == value:
                return text
        return text
    return str(int(value))


_RANGE = frozenset({"float16", "float32", "float64", "int32", "int64"})  # TF's CPU kernels, less bfloat16


@register("Range", types={"Tidx": _RANGE})
def _range(node: TfNode, start, limit, delta):
    """Range: start, start + delta, ... up to (not including) limit; element i is start + i * delta."""
    first = scalar(start, "start must be a scalar, not shape ")
    last = scalar(limit, "limit must be a scalar, not shape ")
    step = scalar(delta, "delta must be a scalar, not shape ")
    text = f"{_tf_number(first)}/{_tf_number(last)}"
    if step == 0:
        raise ValueError(f"Requires delta != 0: {_tf_number(step)}")
    if step > 0 and first > last:
        raise ValueError(f"Requires start <= limit when delta > 0: {text}")
    if step < 0 and first < last:
        raise ValueError(f"Requires start >= limit when delta < 0: {text}")
    dtype = start.dtype
    if dtype.kind in "iu":
        span, stride = abs(int(last) - int(first)), abs(int(step))
        count = (span + stride - 1) // stride
        return (int(first) + np.arange(count, dtype=np.int64) * int(step)).astype(dtype)
    count = int(np.ceil(np.abs((last - first) / step)))  # in the input's precision, as TF
    return (first + np.arange(count).astype(dtype) * step).astype(dtype)


@register("LinSpace", types={"T": FLOATS, "Tidx": _INDEX})
def _lin_space(node: TfNode, start, stop, num):
    """LinSpace: num evenly spaced values from start to stop, both included (start + i * step)."""
    for name, value in (("start", start), ("stop", stop), ("num", num)):
        if value.ndim:
            raise ValueError(f"{name} must be a scalar, not shape {shape_text(value.shape)}")
    count = int(num)
    if count <= 0:
        raise ValueError(f"Requires num > 0: {count}")
    first, last = start[()], stop[()]
    if count == 1:
        return np.asarray([first], dtype=start.dtype)
    step = (last - first) / start.dtype.type(count - 1)
    result = (first + np.arange(count).astype(start.dtype) * step).astype(start.dtype)
    result[-1] = last
    return result

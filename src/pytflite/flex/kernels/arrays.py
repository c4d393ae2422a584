"""TF's layout ops (slicing, transposes, reshapes, concatenation, splits, tiles, broadcasts, reversals)
for any dtype: the converter leaves them as Flex ops on the float64, complex, string and bool tensors
TFLite's builtins lack.

They move elements without computing on them, so NumPy reproduces TF exactly; what takes care is TF's
index rules (StridedSlice's masks, Reshape's -1, each op's range checks), refused with TF's message.
The rest of the family: blocks.py (pads, SpaceToDepth, SpaceToBatchND...), indexing.py (gathers,
scatters, Where, Unique, segments, OneHot...), shapes.py (Shape, Fill, Range, Identity, EnsureShape...).
"""

from __future__ import annotations

import numpy as np

from ..node_def import TfNode
from ..registry import register
from .common import ints, scalar, shape_text

_INDEX = frozenset({"int32", "int64"})


# --- slicing --------------------------------------------------------------------------------------


def _dense_slice_spec(node: TfNode, rank: int, begin, end, strides):
    """StridedSlice's spec with the ellipsis expanded and new axes set apart: per input dimension
    (begin, end, stride, begin masked, end masked, shrink), and the output's dimensions in order as an
    input dimension or None for a new axis (shrunk dimensions left out)."""
    begin_mask, end_mask = node.attr("begin_mask", 0), node.attr("end_mask", 0)
    ellipsis_mask, new_axis_mask = node.attr("ellipsis_mask", 0), node.attr("new_axis_mask", 0)
    shrink_mask = node.attr("shrink_axis_mask", 0)
    if ellipsis_mask & (ellipsis_mask - 1):
        raise ValueError("Multiple ellipses in slice spec not allowed")
    count = len(strides)
    if not ellipsis_mask:  # an implied ellipsis after the last index
        ellipsis_mask, count = 1 << count, count + 1
    ellipsis_at = ellipsis_mask.bit_length() - 1
    new_after_ellipsis = sum(1 for i in range(ellipsis_at + 1, count) if new_axis_mask >> i & 1)
    dims, output = [], []
    for i in range(count):
        if ellipsis_mask >> i & 1:
            stop = min(rank - (count - i) + 1 + new_after_ellipsis, rank)
            for _ in range(len(dims), stop):
                output.append(len(dims))
                dims.append((0, 0, 1, True, True, False))
        elif new_axis_mask >> i & 1:
            output.append(None)
        else:
            if len(dims) == rank:
                if not rank:
                    raise ValueError("Attempting to slice scalar input.")
                raise ValueError(f"Index out of range using input dim {rank}; input has only {rank} dims")
            shrink = bool(shrink_mask >> i & 1)
            if not shrink:
                output.append(len(dims))
            dims.append(
                (begin[i], end[i], strides[i], bool(begin_mask >> i & 1), bool(end_mask >> i & 1), shrink)
            )
    return dims, output


def _slice_of(size: int, begin: int, end: int, stride: int, masked: tuple[bool, bool]):
    """One dimension's Python slice and length: a masked bound is the whole range in the stride's
    direction; others count from the end if negative and are clamped to [0, size] ([-1, size - 1]
    going backward)."""
    low, high = (0, size) if stride > 0 else (-1, size - 1)
    whole = (low, high) if stride > 0 else (high, low)

    def canonical(x: int, is_end: bool) -> int:
        if masked[is_end]:
            return whole[is_end]
        return min(max(x + size if x < 0 else x, low), high)

    start, stop = canonical(begin, False), canonical(end, True)
    length = max(0, -((start - stop) // stride))  # ceil((stop - start) / stride), 0 when backward
    if length == 0:
        return slice(0, 0), 0
    return slice(start, stop if stop >= 0 else None, stride), length


@register("StridedSlice")
def _strided_slice(node: TfNode, x, begin, end, strides):
    """StridedSlice: Python's x[b:e:s, ...] with TF's begin/end/ellipsis/new_axis/shrink_axis masks."""
    if not (begin.ndim == end.ndim == strides.ndim == 1 and begin.size == end.size == strides.size < 32):
        raise ValueError(
            "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
            f"{shape_text(begin.shape)}, {shape_text(end.shape)}, and {shape_text(strides.shape)} instead."
        )
    dims, output = _dense_slice_spec(node, x.ndim, ints(begin), ints(end), ints(strides))
    index, lengths = [], []
    for i, ((b, e, stride, begin_masked, end_masked, shrink), size) in enumerate(zip(dims, x.shape)):
        if stride == 0:
            raise ValueError(f"strides[{i}] must be non-zero")
        if shrink:
            if stride < 0:
                raise ValueError("only stride 1 allowed on non-range indexing.")
            at = b + size if b < 0 else b
            if not 0 <= at < size:
                raise ValueError(f"slice index {at} of dimension {i} out of bounds.")
            index.append(slice(at, at + 1))
            lengths.append(1)
        else:
            part, length = _slice_of(size, b, e, stride, (begin_masked, end_masked))
            index.append(part)
            lengths.append(length)
    shape = tuple(1 if d is None else lengths[d] for d in output)
    return np.asarray(x[tuple(index)]).reshape(shape)


@register("Slice")
def _slice(node: TfNode, x, begin, size):
    """Slice: x[begin : begin + size] per dimension, a size of -1 meaning the rest."""
    if not (begin.ndim == size.ndim == 1 and begin.size == size.size == x.ndim):
        raise ValueError(
            f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, but got shapes "
            f"{shape_text(begin.shape)} and {shape_text(size.shape)} instead."
        )
    index = []
    for i, (b, s, dim) in enumerate(zip(ints(begin), ints(size), x.shape)):
        s = dim - b if s == -1 else s
        if dim == 0 and (b, s) != (0, 0):
            raise ValueError(
                f"Expected begin[{i}] == 0 (got {b}) and size[{i}] == 0 (got {s}) when input.dim_size({i}) == 0"
            )
        if not 0 <= b <= dim:
            raise ValueError(f"Expected begin[{i}] in [0, {dim}], but got {b}")
        if not 0 <= s <= dim - b:
            raise ValueError(f"Expected size[{i}] in [0, {dim - b}], but got {s}")
        index.append(slice(b, b + s))
    return x[tuple(index)]


# --- layout ---------------------------------------------------------------------------------------


def _permutation(x: np.ndarray, perm: np.ndarray) -> list[int]:
    order = ints(perm)
    if perm.ndim != 1 or len(order) != x.ndim:
        raise ValueError(
            f"transpose expects a vector of size {x.ndim}. But input(1) is a vector of size {perm.size}"
        )
    for d in order:
        if not 0 <= d < x.ndim:
            raise ValueError(f"{d} is out of range [0 .. {x.ndim})")
    for d in range(x.ndim):
        if d not in order:
            raise ValueError(f"{d} is missing from {{{','.join(map(str, order))}}}.")
    return order


@register("Transpose")
def _transpose(node: TfNode, x, perm):
    """Transpose: output dimension i is input dimension perm[i]."""
    return np.transpose(x, _permutation(x, perm))


@register("ConjugateTranspose")
def _conjugate_transpose(node: TfNode, x, perm):
    """ConjugateTranspose: Transpose, complex values conjugated."""
    result = np.transpose(x, _permutation(x, perm))
    return np.conj(result) if x.dtype.kind == "c" else result


def reshaped_dims(x: np.ndarray, requested: list[int]) -> list[int]:
    """Reshape's target: at most one -1, inferred from the other sizes as TF infers it (with a 0 among
    them, from the nonzero sizes on both sides)."""
    unknown = [i for i, d in enumerate(requested) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"Only one input size may be -1, not both {unknown[0]} and {unknown[1]}")
    for i, d in enumerate(requested):
        if d < -1:
            raise ValueError(f"Size {i} must be non-negative, not {d}")
    dims = list(requested)
    known = [d for d in requested if d != -1]
    if unknown:
        if 0 in known:
            have = int(np.prod([d for d in x.shape if d], dtype=np.int64))
            dims[unknown[0]] = have // int(np.prod([d for d in known if d], dtype=np.int64))
        else:
            product = int(np.prod(known, dtype=np.int64))
            if x.size % product:
                raise ValueError(
                    f"Input to reshape is a tensor with {x.size} values, but the requested shape requires "
                    f"a multiple of {product}"
                )
            dims[unknown[0]] = x.size // product
    count = int(np.prod(dims, dtype=np.int64))
    if count != x.size:
        raise ValueError(
            f"Input to reshape is a tensor with {x.size} values, but the requested shape has {count}"
        )
    return dims


@register("Reshape")
def _reshape(node: TfNode, x, shape):
    """Reshape: the same elements in a new shape; one -1 takes what the others leave."""
    if shape.ndim > 1:
        raise ValueError(f"sizes input must be 1-D, not {shape_text(shape.shape)}")
    return x.reshape(reshaped_dims(x, ints(shape)))


@register("ExpandDims")
def _expand_dims(node: TfNode, x, axis):
    """ExpandDims: a dimension of size 1 inserted at `axis` (in [-rank - 1, rank])."""
    if axis.size != 1:
        raise ValueError("'dim' must be a tensor with a single value")
    at = int(axis.reshape(-1)[0])
    if not -x.ndim - 1 <= at <= x.ndim:
        raise ValueError(f"Tried to expand dim index {at} for tensor with {x.ndim} dimensions.")
    return np.expand_dims(x, at if at >= 0 else at + x.ndim + 1)


@register("Squeeze")
def _squeeze(node: TfNode, x):
    """Squeeze: the size-1 dimensions listed in squeeze_dims removed (all of them when none are)."""
    listed = node.attr("squeeze_dims", []) or []
    for d in listed:
        if not -x.ndim <= d < x.ndim:
            raise ValueError(f"Tried to squeeze dim index {d} for tensor with {x.ndim} dimensions.")
        if x.shape[d] != 1:
            raise ValueError(
                f"Can not squeeze dim[{d % x.ndim}], expected a dimension of 1, got {x.shape[d]}"
            )
    axes = {d % x.ndim for d in listed} if listed else {i for i, s in enumerate(x.shape) if s == 1}
    return x.reshape([s for i, s in enumerate(x.shape) if i not in axes])


def _concat(values: tuple[np.ndarray, ...], axis: np.ndarray, axis_name: str) -> np.ndarray:
    first = values[0]
    at = int(scalar(axis, f"{axis_name} tensor should be a scalar integer, but got shape "))
    if first.ndim == 0:
        raise ValueError("ConcatOp : Can't concatenate scalars (use tf.stack instead)")
    if not -first.ndim <= at < first.ndim:
        raise ValueError(
            f"ConcatOp : Expected concatenating dimensions in the range [{-first.ndim}, {first.ndim}), but got {at}"
        )
    at %= first.ndim
    for i, value in enumerate(values[1:], 1):
        if value.ndim != first.ndim:
            raise ValueError(
                "ConcatOp : Ranks of all input tensors should match: shape[0] = "
                f"{shape_text(first.shape)} vs. shape[{i}] = {shape_text(value.shape)}"
            )
        for d in range(first.ndim):
            if d != at and value.shape[d] != first.shape[d]:
                raise ValueError(
                    f"ConcatOp : Dimension {d} in both shapes must be equal: shape[0] = "
                    f"{shape_text(first.shape)} vs. shape[{i}] = {shape_text(value.shape)}"
                )
    return np.concatenate(values, axis=at)


@register("ConcatV2")
def _concat_v2(node: TfNode, *inputs):
    """ConcatV2: its inputs joined along the axis of its last input."""
    return _concat(inputs[:-1], inputs[-1], "axis")


@register("Concat")
def _concat_v1(node: TfNode, axis, *values):
    """Concat: ConcatV2 with the axis first."""
    return _concat(values, axis, "Concat dim")


@register("Pack")
def _pack(node: TfNode, *values):
    """Pack: inputs of one shape stacked along a new dimension `axis`."""
    first, axis = values[0], node.attr("axis", 0)
    if not -first.ndim - 1 <= axis <= first.ndim:
        raise ValueError(f"axis = {axis} not in [{-first.ndim - 1}, {first.ndim + 1})")
    for i, value in enumerate(values[1:], 1):
        if value.shape != first.shape:
            raise ValueError(
                f"Shapes of all inputs must match: values[0].shape = {shape_text(first.shape)} != "
                f"values[{i}].shape = {shape_text(value.shape)}"
            )
    return np.stack(values, axis=axis % (first.ndim + 1))


@register("Unpack")
def _unpack(node: TfNode, x):
    """Unpack: the `num` slices along `axis`, that dimension removed."""
    axis, num = node.attr("axis", 0), node.attr("num")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis = {axis} not in [{-x.ndim}, {x.ndim})")
    if x.shape[axis] != num:
        raise ValueError(
            f"Input shape axis {axis % x.ndim} must equal {num}, got shape {shape_text(x.shape)}"
        )
    return tuple(np.take(x, i, axis=axis) for i in range(num))


def _split_axis(x: np.ndarray, at: int) -> int:
    if not -x.ndim <= at < x.ndim:
        raise ValueError(f"-input rank(-{x.ndim}) <= split_dim < input rank ({x.ndim}), but got {at}")
    return at % x.ndim


@register("Split")
def _split(node: TfNode, axis, x):
    """Split: `num_split` equal parts along the axis of its first input."""
    if axis.ndim:
        raise ValueError(f"split_dim must be a scalar but has rank {axis.ndim}")
    at, parts = _split_axis(x, int(axis)), node.attr("num_split")
    if x.shape[at] % parts:
        raise ValueError(
            "Number of ways to split should evenly divide the split dimension, but got split_dim "
            f"{at} (size = {x.shape[at]}) and num_split {parts}"
        )
    return tuple(np.split(x, parts, axis=at))


@register("SplitV")
def _split_v(node: TfNode, x, size_splits, axis):
    """SplitV: parts of the listed sizes along an axis, one size of -1 taking the rest."""
    if axis.size != 1:
        raise ValueError("split_dim_tensor must have exactly one element.")
    at, sizes = _split_axis(x, int(axis.reshape(-1)[0])), ints(size_splits)
    if sizes.count(-1) > 1:
        raise ValueError("There can only be one -1 in the input.")
    given = sum(s for s in sizes if s != -1)
    if (-1 not in sizes and given != x.shape[at]) or (-1 in sizes and given > x.shape[at]):
        raise ValueError(
            "Determined shape must either match input shape along split_dim exactly if fully specified, or "
            f"be less than the size of the input along split_dim if not fully specified.  Got: {given}"
        )
    sizes = [x.shape[at] - given if s == -1 else s for s in sizes]
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=at))


@register("Tile")
def _tile(node: TfNode, x, multiples):
    """Tile: x repeated multiples[i] times along each dimension i."""
    times = ints(multiples)
    if multiples.ndim != 1 or len(times) != x.ndim:
        raise ValueError(
            f"Expected multiples argument to be a vector of length {x.ndim} but got length {multiples.size}"
        )
    for i, t in enumerate(times):
        if t < 0:
            raise ValueError(f"Expected multiples[{i}] >= 0, but got {t}")
    return np.tile(x, times) if x.ndim else x


def _broadcast_shape(s0: list[int], s1: list[int]) -> list[int]:
    try:
        return list(np.broadcast_shapes(tuple(s0), tuple(s1)))
    except ValueError:
        raise ValueError(f"Incompatible shapes: {shape_text(s0)} vs. {shape_text(s1)}") from None


@register("BroadcastTo")
def _broadcast_to(node: TfNode, x, shape):
    """BroadcastTo: x broadcast to `shape` as NumPy (and TF's BCast) broadcast."""
    target = ints(shape)
    if x.ndim > len(target):
        raise ValueError(
            f"Rank of input ({x.ndim}) must be no greater than rank of output shape ({len(target)})."
        )
    if _broadcast_shape(list(x.shape), target) != target:
        raise ValueError(f"Incompatible shapes: {shape_text(x.shape)} vs. {shape_text(target)}")
    return np.broadcast_to(x, target)


@register("BroadcastArgs", types={"T": _INDEX})
def _broadcast_args(node: TfNode, s0, s1):
    """BroadcastArgs: the shape two shapes broadcast to."""
    return np.asarray(_broadcast_shape(ints(s0), ints(s1)), dtype=s0.dtype)


@register("ReverseV2")
def _reverse_v2(node: TfNode, x, axis):
    """ReverseV2: x with the listed dimensions reversed."""
    seen = set()
    for i, a in enumerate(ints(axis)):
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"'axis'[{i}] = {a} is out of valid range [0, {x.ndim - 1}")
        if a % x.ndim in seen:
            raise ValueError(f"axis {a % x.ndim} specified more than once.")
        seen.add(a % x.ndim)
    return np.flip(x, tuple(seen)) if seen else x


@register("Roll")
def _roll(node: TfNode, x, shift, axis):
    """Roll: elements shifted cyclically along axes (shifts of a repeated axis add up)."""
    if shift.ndim > 1:
        raise ValueError("shift must be a scalar or a 1-D vector. Found: " + shape_text(shift.shape))
    if axis.ndim > 1:
        raise ValueError("axis must be a scalar or a 1-D vector. Found: " + shape_text(axis.shape))
    shifts, axes = ints(shift), ints(axis)
    if len(shifts) != len(axes):
        raise ValueError("shift and axis must have the same size")
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise ValueError(f"axis {a + x.ndim if a < 0 else a} is out of range")
    return np.roll(x, shifts, axes) if axes else x


@register("ReverseSequence")
def _reverse_sequence(node: TfNode, x, seq_lengths):
    """ReverseSequence: per index b along batch_dim, the first seq_lengths[b] entries reversed."""
    batch_dim, seq_dim = node.attr("batch_dim", 0), node.attr("seq_dim")
    if batch_dim == seq_dim:
        raise ValueError(f"batch_dim == seq_dim == {seq_dim}")
    for name, d in (("seq_dim", seq_dim), ("batch_dim", batch_dim)):
        if not 0 <= d < x.ndim:
            raise ValueError(f"{name} must be < input rank ( {d} vs. {x.ndim})")
    lengths = ints(seq_lengths)
    if seq_lengths.ndim != 1 or len(lengths) != x.shape[batch_dim]:
        raise ValueError(
            f"Length of seq_lengths != input.dims({batch_dim}), ({len(lengths)} vs. {x.shape[batch_dim]})"
        )
    result = x.copy()
    for b, length in enumerate(lengths):
        if length < 0:
            raise ValueError(f"seq_lens({b}) < 0")
        if length > x.shape[seq_dim]:
            raise ValueError(f"seq_lens({b}) > input.dims({seq_dim})")
        index = [slice(None)] * x.ndim
        index[batch_dim], index[seq_dim] = b, slice(0, length)
        result[tuple(index)] = np.flip(x[tuple(index)], seq_dim - (seq_dim > batch_dim))
    return result

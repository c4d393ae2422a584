"""TF's ops that select or place elements by index or by value: gathers, scatters, Where, Unique, TopK,
segment reductions, bincounts, Diag / DiagPart, OneHot, dynamic stitch / partition and set operations,
for any dtype (the converter leaves them as Flex ops on float64, complex, string and int64 tensors).

Every index is checked as TF checks it and an out-of-range one refused with TF's message, naming its
position in the index tensor ("indices[1,0] = 5 is not in [0, 4)"). Where TF leaves an order to its
implementation (TopK with sorted=False, a NaN among sorted values), pytflite gives the sorted one.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import BY_NAME, NUMBERS, REAL
from ..node_def import TfNode
from ..registry import register
from .common import ints, scalar, shape_text, sizes, zeros

_UNIQUE = REAL | {"bool", "string"}


def _position(index: tuple[int, ...]) -> str:
    return ",".join(map(str, index))


def _bad_index(indices: np.ndarray, limit: int):
    """The position and value of the first entry of `indices` outside [0, limit), or None."""
    bad = np.argwhere((indices < 0) | (indices >= limit))
    if not bad.size:
        return None
    at = tuple(int(i) for i in bad[0])
    return at, int(indices[at])


# --- gathers and scatters -------------------------------------------------------------------------


@register("GatherV2")
def _gather_v2(node: TfNode, params, indices, axis):
    """GatherV2: the slices of params along `axis` that indices pick (batch_dims: paired dimensions)."""
    if params.ndim < 1:
        raise ValueError("params must be at least 1 dimensional")
    if axis.ndim:
        raise ValueError("axis must be scalar")
    at = int(axis)
    if not -params.ndim <= at < params.ndim:
        raise ValueError(f"Expected axis in the range [{-params.ndim}, {params.ndim}), but got {at}")
    at %= params.ndim
    batch = node.attr("batch_dims", 0)
    if not -indices.ndim <= batch <= indices.ndim:
        raise ValueError(
            f"Expected batch_dims in the range [{-indices.ndim}, {indices.ndim}], but got {batch}"
        )
    batch = batch + indices.ndim if batch < 0 else batch
    if batch:
        if batch >= params.ndim:
            raise ValueError(f"batch_dims ({batch}) must be less than rank(params) ({params.ndim}).")
        if batch > at:
            raise ValueError(f"batch_dims ({batch}) must be less than or equal to axis ({at}).")
        for d in range(batch):
            if params.shape[d] != indices.shape[d]:
                raise ValueError(
                    f"params.shape[{d}]: {params.shape[d]} should be equal to indices.shape[{d}]: {indices.shape[d]}"
                )
    bad = _bad_index(indices, params.shape[at])
    if bad:
        raise ValueError(f"indices[{_position(bad[0])}] = {bad[1]} is not in [0, {params.shape[at]})")
    if not batch:
        return np.take(params, indices.astype(np.intp), axis=at)
    shape = params.shape[:at] + indices.shape[batch:] + params.shape[at + 1 :]
    result = np.empty(shape, dtype=params.dtype)
    for b in np.ndindex(params.shape[:batch]):
        result[b] = np.take(params[b], indices[b].astype(np.intp), axis=at - batch)
    return result


@register("Gather")
def _gather(node: TfNode, params, indices):
    """Gather: GatherV2 along axis 0."""
    return _gather_v2(TfNode("GatherV2", node.name, {}), params, indices, np.asarray(0))


@register("GatherNd")
def _gather_nd(node: TfNode, params, indices):
    """GatherNd: each innermost vector of indices picks an element (or a slice) of params."""
    if indices.ndim < 1:
        raise ValueError("indices must be at least a vector")
    depth = indices.shape[-1]
    if depth > params.ndim:
        raise ValueError(
            f"index innermost dimension length must be <= params rank; saw: {depth} vs. {params.ndim}"
        )
    # the Flex delegate names a node after its op
    what = f"param shape {shape_text(params.shape)}, node name: {node.op}"
    rows, inside = _checked_rows(node, indices, params.shape, what)
    picked = params[tuple(rows.T)] if depth else np.broadcast_to(params, (len(rows), *params.shape))
    if not inside.all():  # bad_indices_policy IGNORE: zeros
        picked = np.where(inside.reshape((-1,) + (1,) * (picked.ndim - 1)), picked, zeros((), params.dtype))
    return picked.reshape(indices.shape[:-1] + params.shape[depth:])


def _checked_rows(node: TfNode, indices: np.ndarray, shape: tuple[int, ...], what: str):
    """indices as rows of coordinates into `shape` (those outside it clamped to 0) and which rows are
    inside; one outside is refused ("... does not index into " + what) unless the node's
    bad_indices_policy is IGNORE."""
    depth = indices.shape[-1]
    rows = indices.reshape(int(np.prod(indices.shape[:-1])), depth).astype(np.int64)
    inside = np.all((rows >= 0) & (rows < np.asarray(shape[:depth], dtype=np.int64)), axis=1)
    if not inside.all() and node.text("bad_indices_policy", "") != "IGNORE":
        first = int(np.argmin(inside))
        at = tuple(int(i) for i in np.unravel_index(first, indices.shape[:-1] or (1,)))
        values = ", ".join(str(v) for v in rows[first])
        raise ValueError(f"indices[{_position(at)}] = [{values}] does not index into {what}")
    return np.where(inside[:, None], rows, 0).astype(np.intp), inside


def _scatter_nd_shapes(indices: np.ndarray, updates: np.ndarray, shape: tuple[int, ...]) -> None:
    """ScatterNd's check that updates is indices.shape[:-1] + shape[indices.shape[-1]:]."""
    outer, depth = indices.ndim - 1, indices.shape[-1]
    prefix = (
        f"Dimensions [0,{outer}) of indices[shape={shape_text(indices.shape)}] must match dimensions "
        f"[0,{outer}) of updates[shape={shape_text(updates.shape)}]"
    )
    suffix = (
        f"Dimensions [{depth},{len(shape)}) of input[shape={shape_text(shape)}] must match dimensions "
        f"[{outer},{updates.ndim}) of updates[shape={shape_text(updates.shape)}]"
    )
    if updates.ndim < outer:
        raise ValueError(prefix)
    if len(shape) < depth + updates.ndim - outer or updates.ndim != outer + len(shape) - depth:
        raise ValueError(suffix)
    if updates.shape[:outer] != indices.shape[:outer]:
        raise ValueError(prefix)
    if updates.shape[outer:] != tuple(shape[depth:]):
        raise ValueError(suffix)


def _tensor_scatter_shapes(indices: np.ndarray, updates: np.ndarray, shape: tuple[int, ...]) -> None:
    """The TensorScatter ops' check of the same, in their words."""
    outer, depth = indices.ndim - 1, indices.shape[-1]
    if updates.shape[:outer] != indices.shape[:outer]:
        raise ValueError(
            f"Outer dimensions of indices and update must match. Indices shape: {shape_text(indices.shape)}, "
            f"updates shape:{shape_text(updates.shape)}"
        )
    if updates.ndim - outer != len(shape) - depth:
        raise ValueError(
            "Inner dimensions of output shape must match inner dimensions of updates shape. Output: "
            f"{shape_text(shape)} updates: {shape_text(updates.shape)}"
        )
    if updates.shape[outer:] != tuple(shape[depth:]):
        raise ValueError(
            f"The inner {len(shape) - depth} dimensions of output.shape={shape_text(shape)} must match the "
            f"inner {updates.ndim - outer} dimensions of updates.shape={shape_text(updates.shape)}"
        )
    if indices.ndim == 1:  # TF then reads them as that many one-coordinate indices: no updates fit both
        _scatter_nd_shapes(indices.reshape(-1, 1), updates, shape)


def _scatter(node: TfNode, result: np.ndarray, indices, updates, check_shapes, combine) -> np.ndarray:
    """`result` (a new array) with updates combined into the places indices name, in order (combine
    None: assigned, a later duplicate winning)."""
    for name, value in (("Indices", indices), ("Updates", updates)):
        if value.ndim < 1:
            raise ValueError(f"{name} shape must have rank at least one. Found:{shape_text(value.shape)}")
    check_shapes(indices, updates, result.shape)
    depth = indices.shape[-1]
    rows, inside = _checked_rows(node, indices, result.shape, f"shape {shape_text(result.shape)}")
    if depth == 0 and len(rows):
        raise ValueError("Indices and updates specified for empty output shape")
    rows, values = rows[inside], updates.reshape((len(inside), *result.shape[depth:]))[inside]
    if combine is None:
        for row, value in zip(rows, values):
            result[tuple(row)] = value
    else:
        combine.at(result, tuple(rows.T), values)
    return result


@register("ScatterNd")
def _scatter_nd(node: TfNode, indices, updates, shape):
    """ScatterNd: zeros of `shape` with updates added at the places indices name.

    Duplicate indices add up (strings concatenate)."""
    dims = sizes(shape)
    if not np.prod(dims) and indices.size:
        raise ValueError(
            f"Indices and updates specified for empty output.  indices shape: {shape_text(indices.shape)}"
        )
    return _scatter(node, zeros(dims, updates.dtype), indices, updates, _scatter_nd_shapes, np.add)


def _tensor_scatter(op: str, combine, types) -> None:
    def compute(node: TfNode, tensor, indices, updates):
        return _scatter(node, tensor.copy(), indices, updates, _tensor_scatter_shapes, combine)

    verb = "assigned" if combine is None else f"combined by {combine.__name__}"
    compute.__doc__ = f"{op}: a copy of tensor with updates {verb} at the places indices name."
    register(op, compute, types={"T": types} if types else None)


_tensor_scatter("TensorScatterUpdate", None, None)
_tensor_scatter("TensorScatterAdd", np.add, NUMBERS)
_tensor_scatter("TensorScatterSub", np.subtract, NUMBERS)
_tensor_scatter("TensorScatterMax", np.maximum, REAL)
_tensor_scatter("TensorScatterMin", np.minimum, REAL)


# --- selection by value ---------------------------------------------------------------------------


@register("Where", types={"T": NUMBERS | {"bool"}})
def _where(node: TfNode, condition):
    """Where: the coordinates of the nonzero (true) elements, one int64 row each, in row-major order."""
    if condition.ndim == 0:
        raise ValueError("WhereOp : Unhandled input dimensions: 0")
    return np.argwhere(condition).astype(np.int64)


def _first_occurrences(x: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Where each distinct value of 1-D x first occurs (in order of occurrence) and, per element, the
    number of its value among them. Values compare as TF's hash map compares them: -0.0 equals 0.0,
    and a NaN equals nothing, itself included."""
    firsts, numbers, seen = [], np.empty(x.size, dtype=np.intp), {}
    for i, value in enumerate(x.tolist()):
        if value != value:  # NaN
            numbers[i] = len(firsts)
            firsts.append(i)
            continue
        number = seen.setdefault(value, len(firsts))
        if number == len(firsts):
            firsts.append(i)
        numbers[i] = number
    return firsts, numbers


def _unique(node: TfNode, x, with_counts: bool):
    if x.ndim != 1:
        raise ValueError("unique expects a 1D vector.")
    firsts, numbers = _first_occurrences(x)
    index_type = node.attr("out_idx").numpy
    outputs = (x[firsts], numbers.astype(index_type))
    if with_counts:
        outputs += (np.bincount(numbers, minlength=len(firsts)).astype(index_type),)
    return outputs


@register("Unique", types={"T": _UNIQUE})
def _unique_op(node: TfNode, x):
    """Unique: the distinct values in order of first occurrence, and each element's position among them."""
    return _unique(node, x, False)


@register("UniqueWithCounts", types={"T": _UNIQUE})
def _unique_with_counts(node: TfNode, x):
    """UniqueWithCounts: Unique and how often each value occurs."""
    return _unique(node, x, True)


@register("ListDiff")
def _list_diff(node: TfNode, x, y):
    """ListDiff: the elements of x not in y, in order, and their positions in x."""
    for name, value in (("x", x), ("y", y)):
        if value.ndim != 1:
            raise ValueError(f"{name} should be a 1D vector.")
    excluded = set(y.tolist())
    kept = [i for i, value in enumerate(x.tolist()) if value not in excluded]
    return x[kept], np.asarray(kept, dtype=node.attr("out_idx").numpy)


@register("TopKV2", types={"T": REAL})
def _top_k_v2(node: TfNode, x, k):
    """TopKV2: the k largest values of each last-dimension row, largest first (equal values by position)."""
    if k.ndim:
        raise ValueError(f"k must be scalar, got shape {shape_text(k.shape)}")
    count = int(k)
    if count < 0:
        raise ValueError(f"Need k >= 0, got {count}")
    if x.ndim < 1:
        raise ValueError(f"input must be >= 1-D, got shape {shape_text(x.shape)}")
    if x.shape[-1] < count:
        raise ValueError(f"input must have at least k columns. Had {x.shape[-1]}, needed {count}")
    index_type = node.attr("index_type", BY_NAME["int32"]).numpy
    # a stable ascending sort of the reversed row, read backward: descending, ties in index order
    order = x.shape[-1] - 1 - np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :count]
    return np.take_along_axis(x, order, axis=-1), order.astype(index_type)


# --- segment reductions ---------------------------------------------------------------------------


def _segment_ids(data: np.ndarray, segment_ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Sorted segment ids, checked as TF checks them, and the number of output rows (the last id + 1)."""
    if data.ndim < 1:
        raise ValueError("input must be at least rank 1")
    if segment_ids.ndim != 1:
        raise ValueError("segment_ids should be a vector.")
    if segment_ids.size != data.shape[0]:
        raise ValueError("segment_ids should be the same size as dimension 0 of input.")
    ids = segment_ids.astype(np.intp)  # indices: np.intp, which 32-bit NumPy's bincount and take need
    if ids.size and ids[-1] < 0:
        raise ValueError("segment ids must be >= 0")
    rows = int(ids[-1]) + 1 if ids.size else 0
    runs = [int(v) for i, v in enumerate(ids) if i == 0 or v != ids[i - 1]]
    for current, following in zip(runs, [*runs[1:], rows]):
        if current >= following:
            raise ValueError("segment ids are not increasing")
        if current < 0:
            raise ValueError(
                f"Segment id {current} out of range [0, {rows}), possibly because 'segment_ids' input is not sorted."
            )
    return ids, rows


def _reduce_into(initial, shape, dtype, ids: np.ndarray, data: np.ndarray, combine) -> np.ndarray:
    result = np.full(shape, initial, dtype=dtype)
    combine.at(result, ids, data)
    return result


# per reduction: NumPy's ufunc and the value of an empty segment (sorted ops; unsorted ones differ
# for Max and Min, whose empty segments hold the type's lowest and highest values)
_REDUCERS = {"Sum": (np.add, 0), "Prod": (np.multiply, 1), "Max": (np.maximum, 0), "Min": (np.minimum, 0)}


def _lowest(dtype: np.dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype):
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


def _sorted_segment(reduction: str) -> None:
    combine, empty = _REDUCERS[reduction]

    def compute(node: TfNode, data, segment_ids):
        ids, rows = _segment_ids(data, segment_ids)
        shape = (rows, *data.shape[1:])
        if reduction in ("Max", "Min"):  # an empty segment holds 0, a full one its extreme
            start = _lowest(data.dtype) if reduction == "Max" else _highest(data.dtype)
            result = _reduce_into(start, shape, data.dtype, ids, data, combine)
            result[np.bincount(ids, minlength=rows) == 0] = 0
            return result
        return _reduce_into(empty, shape, data.dtype, ids, data, combine)

    compute.__doc__ = f"Segment{reduction}: the {reduction.lower()} of each run of equal sorted segment ids."
    register(f"Segment{reduction}", compute, types={"T": NUMBERS if reduction in ("Sum", "Prod") else REAL})


for _reduction in _REDUCERS:
    _sorted_segment(_reduction)


@register("SegmentMean", types={"T": NUMBERS})
def _segment_mean(node: TfNode, data, segment_ids):
    """SegmentMean: each segment's sum over its count (integers truncated toward zero, as C divides)."""
    ids, rows = _segment_ids(data, segment_ids)
    total = _reduce_into(0, (rows, *data.shape[1:]), data.dtype, ids, data, np.add)
    counts = np.maximum(np.bincount(ids, minlength=rows), 1).reshape((rows,) + (1,) * (data.ndim - 1))
    if data.dtype.kind in "iu":
        return (np.sign(total) * (np.abs(total) // counts)).astype(data.dtype)
    return (total / counts).astype(data.dtype)


def _unsorted_segment(reduction: str) -> None:
    combine, empty = _REDUCERS[reduction]

    def compute(node: TfNode, data, segment_ids, num_segments):
        if num_segments.ndim:
            raise ValueError(f"num_segments should be a scalar, not shape {shape_text(num_segments.shape)}")
        count = int(num_segments)
        if count < 0:
            raise ValueError(f"Input num_segments == {count} must not be negative.")
        if data.shape[: segment_ids.ndim] != segment_ids.shape:
            raise ValueError(
                f"data.shape = {shape_text(data.shape)} does not start with segment_ids.shape = "
                f"{shape_text(segment_ids.shape)}"
            )
        over = np.argwhere(segment_ids >= count)
        if over.size:
            at = tuple(int(i) for i in over[0])
            raise ValueError(f"segment_ids[{_position(at)}] = {segment_ids[at]} is out of range [0, {count})")
        kept = segment_ids >= 0  # a negative id drops its row
        start = {"Max": _lowest, "Min": _highest}.get(reduction)
        initial = start(data.dtype) if start else empty
        shape = (count, *data.shape[segment_ids.ndim :])
        return _reduce_into(
            initial, shape, data.dtype, segment_ids[kept].astype(np.intp), data[kept], combine
        )

    compute.__doc__ = f"UnsortedSegment{reduction}: the {reduction.lower()} of the rows of each segment id."
    register(
        f"UnsortedSegment{reduction}", compute, types={"T": NUMBERS if reduction in ("Sum", "Prod") else REAL}
    )


for _reduction in _REDUCERS:
    _unsorted_segment(_reduction)


_BINCOUNT = frozenset({"int32", "int64", "float32", "float64"})


def _bincount(
    values: np.ndarray, size: int, weights: np.ndarray, binary: bool, dtype: np.dtype
) -> np.ndarray:
    """Per row of values (1-D: the one row), the weight total (or count) of each value below `size`."""
    if size < 0:
        raise ValueError(f"size ({size}) must be non-negative")
    if np.any(values < 0):
        raise ValueError("Input arr must be non-negative!")
    if weights.size and weights.shape != values.shape:
        raise ValueError(
            "`weights` must be the same shape as `arr` or a length-0 `Tensor`, in which case it acts as all "
            f"weights equal to 1. Received {shape_text(weights.shape)}"
        )
    rows = values if values.ndim == 2 else values.reshape(1, -1)
    row_weights = weights.reshape(rows.shape) if weights.size and not binary else np.ones(rows.shape)
    result = np.zeros((len(rows), size), dtype=dtype)
    for row, (counted, weight) in enumerate(zip(rows, row_weights)):
        inside = counted < size
        if binary:
            result[row, counted[inside]] = 1
        else:
            np.add.at(result[row], counted[inside], weight[inside].astype(dtype))
    return result if values.ndim == 2 else result.reshape(size)


@register("DenseBincount", types={"T": _BINCOUNT})
def _dense_bincount(node: TfNode, values, size, weights):
    """DenseBincount: per row of a 1-D or 2-D input, how often each value in [0, size) occurs.

    With weights, their total instead of the count; with binary_output, 1 for any; larger values are
    left out."""
    if values.ndim > 2:
        raise ValueError(f"Shape must be at most rank 2 but is rank {values.ndim}")
    binary = node.attr("binary_output", False)
    dtype = node.attr("T").numpy
    return _bincount(values, int(scalar(size, "size should be a scalar, not shape ")), weights, binary, dtype)


@register("Bincount", types={"T": _BINCOUNT})
def _bincount_v1(node: TfNode, values, size, weights):
    """Bincount: DenseBincount of any input shape, counted as one row."""
    count = int(scalar(size, "size should be a scalar, not shape "))
    return _bincount(values.reshape(-1), count, weights.reshape(-1), False, node.attr("T").numpy)


# --- diagonals ------------------------------------------------------------------------------------


@register("Diag", types={"T": NUMBERS})
def _diag(node: TfNode, diagonal):
    """Diag: zeros of shape s + s (s: the input's) holding the input where both halves of the index agree."""
    if diagonal.ndim < 1:
        raise ValueError(f"Input must be at least rank 1, got {diagonal.ndim}")
    result = np.zeros(diagonal.size * diagonal.size, dtype=diagonal.dtype)
    result[:: diagonal.size + 1] = diagonal.reshape(-1)
    return result.reshape(diagonal.shape * 2)


@register("DiagPart", types={"T": NUMBERS})
def _diag_part(node: TfNode, x):
    """DiagPart: Diag undone (the elements whose index halves agree)."""
    half = x.ndim // 2
    if x.ndim % 2:
        gap = " " * 42  # TF's message has a source line's indent inside it
        raise ValueError(
            f"The rank of the tensor should be{gap}even and positive, got shape {shape_text(x.shape)}"
        )
    for d in range(half):
        if x.shape[d] != x.shape[d + half]:
            raise ValueError(
                f"Invalid shape {shape_text(x.shape)}: dimensions {d} and {d + half} do not match."
            )
    size = int(np.prod(x.shape[:half]))
    return np.diagonal(x.reshape(size, size)).reshape(x.shape[:half])


# --- one-hot rows and permutations ----------------------------------------------------------------


@register("InvertPermutation", types={"T": {"int32", "int64"}})
def _invert_permutation(node: TfNode, x):
    """InvertPermutation: y with y[x[i]] = i."""
    if x.ndim != 1:
        raise ValueError("invert_permutation expects a 1D vector.")
    result = np.full(x.size, -1, dtype=x.dtype)
    for i, d in enumerate(ints(x)):
        if not 0 <= d < x.size:
            raise ValueError(f"{d} is not between 0 and {x.size}")
        if result[d] >= 0:
            raise ValueError(f"{d} is duplicated in the input.")
        result[d] = i
    return result


@register("OneHot", types={"TI": {"uint8", "int8", "int32", "int64"}})
def _one_hot(node: TfNode, indices, depth, on_value, off_value):
    """OneHot: a new dimension of depth holding on_value at each index, off_value elsewhere.

    An index outside [0, depth) gives a row of off_value."""
    for name, value in (("depth", depth), ("on_value", on_value), ("off_value", off_value)):
        if value.ndim:
            raise ValueError(f"{name} must be a scalar, but got: {shape_text(value.shape)}")
    size = int(depth)
    if size < 0:
        raise ValueError(f"depth must be non-negative, got: {size}")
    axis = node.attr("axis", -1)
    if not (axis == -1 or 0 <= axis <= indices.ndim):
        raise ValueError(f"Expected axis to be -1 or between [0, {indices.ndim + 1}).  But received: {axis}")
    hot = indices.astype(np.int64)[..., None] == np.arange(size)
    result = np.where(hot, on_value.reshape(()), off_value.reshape(()))  # 0-d arrays keep the dtype
    return result if axis == -1 else np.moveaxis(result, -1, axis)


# --- stitching and partitioning -------------------------------------------------------------------


def _dynamic_stitch(node: TfNode, *inputs):
    """DynamicStitch: result[indices[i][j]] = data[i][j], later inputs overwriting earlier ones.

    Positions no index names hold zeros."""
    half = len(inputs) // 2
    indices, data = inputs[:half], inputs[half:]
    for i, (index, values) in enumerate(zip(indices, data)):
        if values.shape[: index.ndim] != index.shape:
            raise ValueError(
                f"data[{i}].shape = {shape_text(values.shape)} does not start with indices[{i}].shape = "
                f"{shape_text(index.shape)}"
            )
    size = max((int(index.max()) for index in indices if index.size), default=-1) + 1
    inner = data[0].shape[indices[0].ndim :]
    result = zeros((size, *inner), data[0].dtype)
    for index, values in zip(indices, data):
        flat = index.reshape(-1)
        for j, position in enumerate(flat.tolist()):
            if not 0 <= position < size:
                raise ValueError(f"indices[{j}] is out of range")
        result[flat] = values.reshape((flat.size, *inner))
    return result


register("DynamicStitch", _dynamic_stitch)


@register("ParallelDynamicStitch")
def _parallel_dynamic_stitch(node: TfNode, *inputs):
    """ParallelDynamicStitch: DynamicStitch (of duplicate indices, the last input's value)."""
    return _dynamic_stitch(node, *inputs)


@register("DynamicPartition")
def _dynamic_partition(node: TfNode, data, partitions):
    """DynamicPartition: output i holds the slices of data whose partition number is i, in order."""
    count = node.attr("num_partitions")
    if data.shape[: partitions.ndim] != partitions.shape:
        raise ValueError(
            f"data.shape must start with partitions.shape, got data.shape = {shape_text(data.shape)}, "
            f"partitions.shape = {shape_text(partitions.shape)}"
        )
    bad = _bad_index(partitions, count)
    if bad:
        raise ValueError(f"partitions[{_position(bad[0])}] = {bad[1]} is not in [0, {count})")
    return tuple(data[partitions == i] for i in range(count))


_SET_TYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "string"})
_SET_OPERATIONS = {
    "a-b": lambda a, b: a - b,
    "b-a": lambda a, b: b - a,
    "intersection": lambda a, b: a & b,
    "union": lambda a, b: a | b,
}


@register("DenseToDenseSetOperation", types={"T": _SET_TYPES})
def _dense_to_dense_set_operation(node: TfNode, set1, set2):
    """DenseToDenseSetOperation: per row, a set operation of two rows' values, as a SparseTensor.

    A row is all dimensions but the last; its values come out sorted; the outputs are the sparse
    result's indices, values and dense shape."""
    operation = _SET_OPERATIONS.get(node.text("set_operation"))
    if operation is None:
        raise ValueError(f"Invalid set_operation {node.text('set_operation')}.")
    for value in (set1, set2):
        if value.ndim < 2:
            raise ValueError(f"Shape {shape_text(value.shape)} has rank {value.ndim} < 2")
    if set1.shape[:-1] != set2.shape[:-1]:
        raise ValueError(f"Mismatched shapes {shape_text(set1.shape[:-1])} vs {shape_text(set2.shape[:-1])}")
    groups = set1.shape[:-1]
    coordinates, values, widest = [], [], 0
    for group in np.ndindex(groups):
        members = sorted(operation(set(set1[group].tolist()), set(set2[group].tolist())))
        widest = max(widest, len(members))
        coordinates += [(*group, j) for j in range(len(members))]
        values += members
    indices = np.asarray(coordinates, dtype=np.int64).reshape(-1, len(groups) + 1)
    result = np.empty(len(values), dtype=set1.dtype)
    result[:] = values
    return indices, result, np.asarray((*groups, widest), dtype=np.int64)

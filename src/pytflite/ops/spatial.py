"""Spatial re-layout and resizing: RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND, all on NHWC tensors.

Resizing: prepare turns the size tensor (when constant) into gather indices and weights computed with
TFLite's float32 source coordinates (`(y + 0.5) * scale - 0.5` with half_pixel_centers, `y * scale`
otherwise, scale in float32). The arithmetic follows the kernels LiteRT runs:
- float32: an interpolation between rows and one between columns (SeparableBilinear), within a few ulps
  of the optimized kernel's corner sum `out += in * (wy * wx)`;
- uint8: the float sum of the four corners (y0,x0) (y0,x1) (y1,x0) (y1,x1) plus 0.5, truncated (four
  gathers over the H*W pixels and a weighted sum);
- int8, int16: TFLite's all-integer interpolation with 10 fractional bits and a 2^20 product, rounded
  half away from zero (the int8 optimized kernel is the reference one); the corner sum is exact in
  int32 for int8 inputs, int64 for int16.
Quantized inputs are interpolated as stored integers: TFLite checks no quantization parameters (an
output quantized differently gets the input's integers).
BuiltinRefOpResolver gets the reference kernel's float order, `(in * wy) * wx` summed over (y0,x0)
(y1,x0) (y0,x1) (y1,x1), which rounds uint8 differently in rare ties. Nearest neighbour on 8-bit types
without align_corners/half_pixel_centers uses the optimized kernel's 16.16 fixed-point scale (the
reference kernel, under BUILTIN_REF, uses floats); both options may be set together when the size is
only known at run time, as TFLite then never checks them.

Block re-layouts are reshape/transposes written straight into the output (DEPTH_TO_SPACE,
SPACE_TO_DEPTH), or a copy per block offset of strided slices (BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND,
3-D inputs treated as NH1C). Padding written by SPACE_TO_BATCH_ND is the output zero point's low byte
for 8- and 16-bit types (TFLite memsets it), zero otherwise. Non-constant size/block/crops/paddings
tensors make the output dynamic; its shape and plan are then computed at invoke.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from .common import check_arity, input_tensor, output_tensor
from .kernel_type import OPTIMIZED, REFERENCE, KernelType
from .registry import register_builtin

T = TensorType
# Element types by storage width, as TFLite's TfLiteTypeGetSizeBits type switches see them.
_BITS_8 = (T.UINT8, T.INT8, T.BOOL)
_BITS_16 = (T.INT16, T.UINT16, T.FLOAT16, T.BFLOAT16)
_BITS_32 = (T.FLOAT32, T.INT32, T.UINT32)
_BITS_64 = (T.INT64, T.UINT64, T.FLOAT64, T.COMPLEX64)

_BILINEAR_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16)
_NEAREST_TYPES = _BITS_8 + _BITS_16 + _BITS_32
_DEPTH_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT32, T.INT64)
_BATCH_TYPES = _BITS_8 + _BITS_16 + _BITS_32 + _BITS_64
_QUANTIZED = (T.UINT8, T.INT8, T.INT16)


def _cdiv(a: np.ndarray, b: int) -> np.ndarray:
    """C integer division (truncating toward zero) of an int64 array by a positive int."""
    return np.where(a >= 0, a // b, -((-a) // b))


# --------------------------------------------------------------------------------------------------
# Resizing


def _requested_size(size_tensor) -> tuple[int, int]:
    height, width = (int(v) for v in size_tensor.data.reshape(-1)[:2])
    return height, width


def _resize_common_prepare(context, node, op_name: str, types: tuple[TensorType, ...]):
    check_arity(node, 2)
    source, size, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, types, "input", op_name)
    ensure_types_eq(source, output, f"{op_name} input/output types")
    ensure_eq(len(source.shape), 4, f"{op_name} input rank")
    ensure_eq(len(size.shape), 1, f"{op_name} size rank")
    ensure_type(size, T.INT32, "size", op_name)
    ensure_eq(size.shape[0], 2, f"{op_name} size length")
    return source, size, output


class RunTimePlan:
    """The plan invoke made for the values in `key`, when prepare could not make one (a computed size,
    block_shape, crops or paddings tensor): mutable state kept between invokes, so that unchanged values
    reuse it."""

    __slots__ = ("key", "plan")

    def __init__(self):
        self.key: tuple | None = None
        self.plan: tuple | None = None


@dataclass(frozen=True)
class ResizeData:
    kernel_type: KernelType
    plan: tuple | None = None  # None: the size tensor is computed at run time
    run_time: RunTimePlan = field(default_factory=RunTimePlan)  # keyed by (input shape, size)
    scratch: dict = field(default_factory=dict)

    def work(self, shape: tuple[int, ...], dtype, slot: int) -> np.ndarray:
        """A work array of this shape and dtype, kept between invokes (fresh arrays cost page faults)."""
        key = (slot, np.dtype(dtype))
        array = self.scratch.get(key)
        if array is None or array.shape != shape:
            array = self.scratch[key] = np.empty(shape, dtype)
        return array


def _bilinear_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _bilinear_axis(in_size: int, out_size: int, align: bool, half: bool):
    """Lower/upper source index and the float32 fraction (source - lower) along one axis."""
    scale = _bilinear_scale(in_size, out_size, align)
    position = np.arange(out_size, dtype=np.float32)
    offset = np.float32(0.5 if half else 0.0)  # adding and subtracting 0 is exact
    scaled = (position + offset) * scale - offset
    lower = np.maximum(np.floor(scaled).astype(np.intp), 0)
    upper = np.minimum(np.ceil(scaled).astype(np.intp), in_size - 1)
    return lower, upper, (scaled - lower.astype(np.float32)).astype(np.float32)


def _bilinear_axis_integer(in_size: int, out_size: int, align: bool, half: bool):
    """The integer kernel's lower/upper index and fraction in units of 1/1024 along one axis."""
    if align and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = ((1 << 10) * in_size + out_size // 2) // out_size
    position = np.arange(out_size, dtype=np.int64)
    scaled = position * scale + (scale // 2 - (1 << 9) if half else 0)
    # TFLite leaves the lower index unclamped above: past the input only with upsampling ratios of
    # several hundred, where its rounded 10-bit scale overshoots and it reads out of bounds (undefined)
    lower = np.minimum(np.maximum(_cdiv(scaled, 1 << 10), 0), in_size - 1)
    upper = np.minimum(_cdiv(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
    return lower.astype(np.intp), upper.astype(np.intp), scaled - (lower << 10)


def _check_source_pixels(op_name: str, shape: tuple[int, ...], size: tuple[int, int]) -> None:
    if min(size) > 0:
        ensure(shape[1] > 0 and shape[2] > 0, f"{op_name} cannot resize an input with no pixels")


def _bilinear_plan(shape, size, options, source_type: TensorType, kernel_type: KernelType):
    _check_source_pixels("RESIZE_BILINEAR", shape, size)
    _, height, width, _ = shape
    out_h, out_w = size
    align, half = options.align_corners, options.half_pixel_centers
    integer = source_type in (T.INT8, T.INT16)
    axis = _bilinear_axis_integer if integer else _bilinear_axis
    y0, y1, dy = axis(height, out_h, align, half)
    x0, x1, dx = axis(width, out_w, align, half)
    one = np.int64(1 << 10) if integer else np.float32(1)
    wy, wx = (one - dy, dy), (one - dx, dx)
    reference = kernel_type is REFERENCE
    if source_type == T.FLOAT32 and not reference:
        return (out_h, out_w), SeparableBilinear(shape, size, (y0, y1, *wy), (x0, x1, *wx))
    ys, xs = (y0, y1), (x0, x1)
    # Corner order as the kernel accumulates: optimized (y0,x0) (y0,x1) (y1,x0) (y1,x1); reference
    # (y0,x0) (y1,x0) (y0,x1) (y1,x1).
    order = ((0, 0), (1, 0), (0, 1), (1, 1)) if reference else ((0, 0), (0, 1), (1, 0), (1, 1))
    index = np.stack([(ys[a][:, None] * width + xs[b][None, :]).reshape(-1) for a, b in order])
    if reference and not integer:
        # (in * wy) * wx: keep the two factors apart.
        weights = [(wy[a][:, None, None], wx[b][None, :, None]) for a, b in order]
    else:
        weights = np.stack([(wy[a][:, None] * wx[b][None, :]).reshape(-1, 1) for a, b in order])
    if integer:
        # TFLite sums the corner products in int64; int32 holds them (and the rounding term) whenever
        # the largest input magnitude times the summed |weights| stays below 2^31 - 2^19 (int8 inputs).
        magnitude = 128 if source_type == T.INT8 else 32768
        bound = magnitude * int(np.abs(weights).sum(axis=0).max(initial=0)) + (1 << 19)
        weights = weights.astype(np.int32 if bound < 2**31 else np.int64)
    if not isinstance(weights, list):  # repeated over the channels: NumPy buffers a broadcasting multiply
        weights = np.ascontiguousarray(np.broadcast_to(weights, (*weights.shape[:2], shape[3])))
    return (out_h, out_w), (index, weights)


@dataclass(frozen=True)
class Lerp:
    """Linear interpolation along one axis of an NHWC array: in[lower] * lower_weight + in[upper] *
    upper_weight, the weights shaped to broadcast over the dimensions after `axis`."""

    axis: int
    lower: np.ndarray
    upper: np.ndarray
    lower_weight: np.ndarray
    upper_weight: np.ndarray

    def apply(self, source: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
        # mode="clip": the indices are in range, and the default mode="raise" copies through a buffer
        source.take(self.lower, self.axis, out, mode="clip")
        out *= self.lower_weight
        source.take(self.upper, self.axis, scratch, mode="clip")
        scratch *= self.upper_weight
        out += scratch


class SeparableBilinear:
    """float32 bilinear resizing as an interpolation between rows and one between columns: half the
    work of the four-corner sum, in ten NumPy calls. It rounds differently from TFLite's corner sum
    (`out += in * (wy * wx)`), by a few ulps of the result's magnitude.

    Gathering columns moves pieces of C elements, much slower per element than gathering whole rows, so
    the columns are interpolated on the smaller of the two intermediates: first when the height grows.
    Their weights are repeated over the channels, so that each multiply runs along whole rows too."""

    def __init__(self, shape: tuple[int, ...], size: tuple[int, int], rows: tuple, columns: tuple):
        n, height, width, channels = shape
        y0, y1, wy0, wy1 = rows
        x0, x1, wx0, wx1 = columns
        self.rows = Lerp(1, y0, y1, wy0.reshape(-1, 1, 1), wy1.reshape(-1, 1, 1))
        self.columns = Lerp(2, x0, x1, *(np.repeat(w[:, None], channels, axis=1) for w in (wx0, wx1)))
        self.columns_first = size[0] > height
        between = (n, height, size[1], channels) if self.columns_first else (n, size[0], width, channels)
        self.between = np.empty((2, *between), np.float32)  # the first interpolation, and its scratch
        self.scratch = np.empty((n, *size, channels), np.float32)

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        between, scratch = self.between
        first, second = (self.columns, self.rows) if self.columns_first else (self.rows, self.columns)
        first.apply(x, between, scratch)
        second.apply(between, out, self.scratch)


def _bilinear_sum(data, x: np.ndarray, out_shape: tuple[int, ...], index: np.ndarray, weights: np.ndarray):
    """`sum_k in[index_k] * weights_k` of integer inputs in weights' type, corners in order, in a work
    array of `out_shape` (returned): the input converted once into a work array of that type, each
    corner gathered straight into its product's array (no gathered copy, no casting ufunc)."""
    staged = data.work(x.shape, weights.dtype, 3)
    np.copyto(staged, x)
    total, scratch = data.work(out_shape, weights.dtype, 0), data.work(out_shape, weights.dtype, 1)
    for k in range(4):
        target = total if k == 0 else scratch
        np.take(staged, index[k], axis=1, out=target, mode="clip")  # in range; "raise" would buffer
        np.multiply(target, weights[k], out=target)
        if k:
            np.add(total, scratch, out=total)
    return total


def _bilinear_reference_sum(x: np.ndarray, out_hw, index: np.ndarray, weights) -> np.ndarray:
    """The reference kernel's float32 `sum_k (in[index_k] * wy_k) * wx_k`, corners in its order."""
    n, _, c = x.shape
    total = None
    for k, (wy, wx) in enumerate(weights):
        term = np.take(x, index[k], axis=1).astype(np.float32, copy=False).reshape(n, *out_hw, c)
        term = term * wy
        term *= wx
        total = term if total is None else np.add(total, term, out=total)
    return total.reshape(n, -1, c)


def _resize_bilinear_invoke(context, node):
    tensors = context.tensors
    data: ResizeData = node.user_data
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = data.plan
    if plan is None:
        size = _requested_size(tensors[node.inputs[1]])
        key = (source.shape, size)
        run_time = data.run_time
        if run_time.key != key:
            ensure(size[0] > 0 and size[1] > 0, "RESIZE_BILINEAR size must be positive")
            run_time.plan = _bilinear_plan(
                source.shape, size, node.builtin_data, source.type, data.kernel_type
            )
            run_time.key = key
        plan = run_time.plan
        context.resize_tensor(output, (source.shape[0], *plan[0], source.shape[3]))
    out_hw, compute = plan
    out = output.data
    if out.size == 0:
        return
    if isinstance(compute, SeparableBilinear):
        compute.run(source.data, out)
        return
    index, weights = compute
    n, h, w, c = source.shape
    x = source.data.reshape(n, h * w, c)
    flat_out = out.reshape(n, -1, c)
    if source.type in (T.INT8, T.INT16):
        acc = _bilinear_sum(
            data, x, flat_out.shape, index, weights
        )  # exact: the integer sum in TFLite's order
        # (acc +- 2^19) / 2^20 truncated, the sign of acc's: (acc + 2^19 - [acc <= 0]) >> 20, where
        # -[acc <= 0] is (acc - 1) >> (bits - 1) (no bool array: adding one casts through a buffer)
        non_positive = data.work(flat_out.shape, acc.dtype, 1)
        np.subtract(acc, 1, out=non_positive)
        np.right_shift(non_positive, 8 * acc.itemsize - 1, out=non_positive)
        np.add(acc, 1 << 19, out=acc)
        np.add(acc, non_positive, out=acc)
        np.right_shift(acc, 20, out=acc)
        np.copyto(flat_out, acc, casting="unsafe")
        return
    if data.kernel_type is REFERENCE:
        total = _bilinear_reference_sum(x, out_hw, index, weights)
    else:
        total = _bilinear_sum(data, x, flat_out.shape, index, weights)
    if source.type == T.UINT8:  # + 0.5, then the C cast truncates
        total += np.float32(0.5)
    np.copyto(flat_out, total, casting="unsafe")


def _nearest_axis(in_size: int, out_size: int, align: bool, half: bool, fixed_point: bool) -> np.ndarray:
    """The source index of each output position along one axis, as np.intp (np.take's index type)."""
    if out_size == 0:
        return np.zeros(0, np.intp)
    position = np.arange(out_size, dtype=np.int64)
    if fixed_point:  # optimized 8-bit kernel: 16.16 fixed-point scale, plus one
        scale = (in_size << 16) // out_size + 1
        return np.minimum((position * scale) >> 16, in_size - 1).astype(np.intp)
    scale = _bilinear_scale(in_size, out_size, align)
    scaled = (position.astype(np.float32) + np.float32(0.5 if half else 0.0)) * scale
    if align:  # round half away from zero, exactly (float64 holds float32 + 0.5 exactly)
        wide = scaled.astype(np.float64)
        nearest = np.where(wide >= 0, np.floor(wide + 0.5), np.ceil(wide - 0.5))
    else:
        nearest = np.floor(scaled)
    index = np.minimum(nearest.astype(np.intp), in_size - 1)
    return np.maximum(index, 0) if half else index


def _nearest_plan(shape, size, options, source_type: TensorType, kernel_type: KernelType):
    _check_source_pixels("RESIZE_NEAREST_NEIGHBOR", shape, size)
    _, height, width, _ = shape
    out_h, out_w = size
    align, half = options.align_corners, options.half_pixel_centers
    fixed = kernel_type is OPTIMIZED and not align and not half and source_type in _BITS_8
    ys = _nearest_axis(height, out_h, align, half, fixed)
    xs = _nearest_axis(width, out_w, align, half, fixed)
    return (out_h, out_w), (ys[:, None] * width + xs[None, :]).reshape(-1)


def _resize_nearest_invoke(context, node):
    tensors = context.tensors
    data: ResizeData = node.user_data
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = data.plan
    if plan is None:
        size = _requested_size(tensors[node.inputs[1]])
        key = (source.shape, size)
        run_time = data.run_time
        if run_time.key != key:
            ensure(size[0] >= 0 and size[1] >= 0, "RESIZE_NEAREST_NEIGHBOR size must not be negative")
            run_time.plan = _nearest_plan(
                source.shape, size, node.builtin_data, source.type, data.kernel_type
            )
            run_time.key = key
        plan = run_time.plan
        context.resize_tensor(output, (source.shape[0], *plan[0], source.shape[3]))
    out = output.data
    if out.size == 0:
        return
    n, h, w, c = source.shape
    # mode="clip": the plan's indices are in range, and the default mode="raise" copies through a buffer
    np.take(source.data.reshape(n, h * w, c), plan[1], axis=1, out=out.reshape(n, -1, c), mode="clip")


def _resize_prepare(op_name: str, types, make_plan):
    """The prepare factory of a resize op: `make_plan` builds its plan for a constant size."""

    def prepare_for(kernel_type: KernelType):
        def prepare(context, node):
            source, size, output = _resize_common_prepare(context, node, op_name, types)
            if not size.is_constant_or_persistent:
                node.user_data = ResizeData(kernel_type)
                context.set_tensor_to_dynamic(output)
                return
            options = node.builtin_data
            if op_name == "RESIZE_BILINEAR" and options.half_pixel_centers and options.align_corners:
                raise KernelError("If half_pixel_centers is True, align_corners must be False.")
            requested = _requested_size(size)
            if op_name == "RESIZE_BILINEAR":
                ensure(requested[0] > 0 and requested[1] > 0, "RESIZE_BILINEAR size must be positive")
            else:
                ensure(min(requested) >= 0, "RESIZE_NEAREST_NEIGHBOR size must not be negative")
            # resize first: the runtime's size limit then refuses a huge output before its plan is built
            context.resize_tensor(output, (source.shape[0], *requested, source.shape[3]))
            node.user_data = ResizeData(
                kernel_type, make_plan(source.shape, requested, options, source.type, kernel_type)
            )

        return prepare

    return prepare_for


register_builtin(
    BuiltinOperator.RESIZE_BILINEAR,
    (1, 4),
    types=_BILINEAR_TYPES,
    op_data=ResizeData,
    prepare_for=_resize_prepare("RESIZE_BILINEAR", _BILINEAR_TYPES, _bilinear_plan),
    invoke=_resize_bilinear_invoke,
)
register_builtin(
    BuiltinOperator.RESIZE_NEAREST_NEIGHBOR,
    (1, 4),
    types=_NEAREST_TYPES,
    op_data=ResizeData,
    prepare_for=_resize_prepare("RESIZE_NEAREST_NEIGHBOR", _NEAREST_TYPES, _nearest_plan),
    invoke=_resize_nearest_invoke,
)


# --------------------------------------------------------------------------------------------------
# DEPTH_TO_SPACE / SPACE_TO_DEPTH


def _block_prepare(op_name: str, to_space: bool):
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_eq(len(source.shape), 4, f"{op_name} input rank")
        ensure_type(output, _DEPTH_TYPES, "output", op_name)
        ensure_types_eq(source, output, f"{op_name} input/output types")
        block = node.builtin_data.block_size
        ensure(block > 0, f"{op_name} block_size must be positive, got {block}")
        n, h, w, c = source.shape
        if to_space:
            ensure_eq(c % (block * block), 0, f"{op_name} input depth % (block_size * block_size)")
            shape = (n, h * block, w * block, c // (block * block))
        else:
            ensure_eq(h % block, 0, f"{op_name} input height % block_size")
            ensure_eq(w % block, 0, f"{op_name} input width % block_size")
            shape = (n, h // block, w // block, c * block * block)
        context.resize_tensor(output, shape)

    return prepare


def _depth_to_space_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    b = node.builtin_data.block_size
    n, h, w, _ = x.shape
    c = out.shape[3]
    # out[n, h*b + i, w*b + j, c] = in[n, h, w, (i*b + j)*C + c]
    np.copyto(out.reshape(n, h, b, w, b, c), x.reshape(n, h, w, b, b, c).transpose(0, 1, 3, 2, 4, 5))


def _space_to_depth_invoke(context, node):
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    b = node.builtin_data.block_size
    n, oh, ow, _ = out.shape
    c = x.shape[3]
    np.copyto(out.reshape(n, oh, ow, b, b, c), x.reshape(n, oh, b, ow, b, c).transpose(0, 1, 3, 2, 4, 5))


register_builtin(
    BuiltinOperator.DEPTH_TO_SPACE,
    (1, 2),
    types=_DEPTH_TYPES,
    prepare=_block_prepare("DEPTH_TO_SPACE", to_space=True),
    invoke=_depth_to_space_invoke,
)
register_builtin(
    BuiltinOperator.SPACE_TO_DEPTH,
    (1, 2),
    types=_DEPTH_TYPES,
    prepare=_block_prepare("SPACE_TO_DEPTH", to_space=False),
    invoke=_space_to_depth_invoke,
)


# --------------------------------------------------------------------------------------------------
# BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND


@dataclass(frozen=True)
class BatchSpaceData:
    """`plan` is (output shape, input and output shapes as NHWC, slice copies, pad byte or None), or
    None when block_shape/crops/paddings are known only at run time: then `run_time` holds the plan
    made at invoke, keyed by the input shape and those values."""

    plan: tuple | None
    run_time: RunTimePlan = field(default_factory=RunTimePlan)


def _strided(start: int, count: int, step: int) -> slice:
    return slice(start, start + (count - 1) * step + 1, step)


def _block_offsets(extent_in: int, extent_out: int, block: int, shift: int, before: int):
    """For one spatial axis and block offset: the rows i of the coarse grid whose fine position
    i*block + shift - before lies in [0, extent_out). Returns (first i, count, first fine position)."""
    first = max(0, -((shift - before) // block))
    last = min(extent_in, -((shift - before - extent_out) // block))  # exclusive
    return first, last - first, first * block + shift - before


def _batch_space_values(context, node, op_name: str):
    source = input_tensor(context, node, 0)
    block_tensor, pads_tensor = input_tensor(context, node, 1), input_tensor(context, node, 2)
    spatial = len(source.shape) - 2
    what = "crops" if op_name == "BATCH_TO_SPACE_ND" else "paddings"
    ensure_eq(len(block_tensor.shape), 1, f"{op_name} block_shape rank")
    ensure_eq(block_tensor.shape[0], spatial, f"{op_name} block_shape length")
    ensure_eq(len(pads_tensor.shape), 2, f"{op_name} {what} rank")
    ensure_eq(pads_tensor.shape[0], spatial, f"{op_name} {what} rows")
    ensure_eq(pads_tensor.shape[1], 2, f"{op_name} {what} columns")
    block = [int(v) for v in block_tensor.data.reshape(-1)]
    pads = [int(v) for v in pads_tensor.data.reshape(-1)]
    for value in block:
        ensure(value != 0, f"{op_name} block_shape must not contain 0")
        ensure(value > 0, f"{op_name} block_shape must be positive, got {block}")
    if spatial == 1:  # NHC is handled as NH1C
        block, pads = [*block, 1], [*pads, 0, 0]
    return block, pads


def _batch_to_space_plan(context, node):
    source = input_tensor(context, node, 0)
    block, crops = _batch_space_values(context, node, "BATCH_TO_SPACE_ND")
    ensure(all(c >= 0 for c in crops), "BATCH_TO_SPACE_ND crops must not be negative")
    shape4 = (
        source.shape if len(source.shape) == 4 else (source.shape[0], source.shape[1], 1, source.shape[2])
    )
    n_in, h, w, c = shape4
    blocks = block[0] * block[1]
    ensure_eq(n_in % blocks, 0, "BATCH_TO_SPACE_ND input batch % prod(block_shape)")
    n = n_in // blocks
    out_h, out_w = h * block[0] - crops[0] - crops[1], w * block[1] - crops[2] - crops[3]
    ensure(out_h >= 0 and out_w >= 0, "BATCH_TO_SPACE_ND crops exceed the block-scaled input")
    copies = []
    for sh in range(block[0]):
        ih, rows, oh = _block_offsets(h, out_h, block[0], sh, crops[0])
        for sw in range(block[1]):
            iw, cols, ow = _block_offsets(w, out_w, block[1], sw, crops[2])
            if rows <= 0 or cols <= 0 or n == 0:
                continue
            batch = (sh * block[1] + sw) * n
            src = (slice(batch, batch + n), slice(ih, ih + rows), slice(iw, iw + cols))
            dst = (slice(None), _strided(oh, rows, block[0]), _strided(ow, cols, block[1]))
            copies.append((dst, src))
    shape = (n, out_h, out_w, c) if len(source.shape) == 4 else (n, out_h, c)
    return shape, shape4, (n, out_h, out_w, c), tuple(copies), None


def _space_to_batch_plan(context, node):
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    block, pads = _batch_space_values(context, node, "SPACE_TO_BATCH_ND")
    shape4 = (
        source.shape if len(source.shape) == 4 else (source.shape[0], source.shape[1], 1, source.shape[2])
    )
    n, h, w, c = shape4
    padded_h, padded_w = h + pads[0] + pads[1], w + pads[2] + pads[3]
    ensure_eq(padded_h % block[0], 0, "SPACE_TO_BATCH_ND padded height % block_shape[0]")
    ensure_eq(padded_w % block[1], 0, "SPACE_TO_BATCH_ND padded width % block_shape[1]")
    out_h, out_w = padded_h // block[0], padded_w // block[1]
    ensure(out_h >= 0 and out_w >= 0, "SPACE_TO_BATCH_ND paddings give a negative output size")
    copies, covered = [], 0
    for sh in range(block[0]):
        oh, rows, ih = _block_offsets(out_h, h, block[0], sh, pads[0])
        for sw in range(block[1]):
            ow, cols, iw = _block_offsets(out_w, w, block[1], sw, pads[2])
            if rows <= 0 or cols <= 0 or n == 0:
                continue
            batch = (sh * block[1] + sw) * n
            dst = (slice(batch, batch + n), slice(oh, oh + rows), slice(ow, ow + cols))
            src = (slice(None), _strided(ih, rows, block[0]), _strided(iw, cols, block[1]))
            copies.append((dst, src))
            covered += n * rows * cols
    total = n * block[0] * block[1] * out_h * out_w
    fill = None
    if covered < total:  # TFLite memsets the pad value: the zero point's low byte for 8/16-bit types
        fill = output.params.zero_point & 0xFF if source.type in _BITS_8 + _BITS_16 else 0
    out4 = (n * block[0] * block[1], out_h, out_w, c)
    shape = out4 if len(source.shape) == 4 else (out4[0], out_h, c)
    return shape, shape4, out4, tuple(copies), fill


def _batch_space_prepare(op_name: str, make_plan):
    def prepare(context, node):
        check_arity(node, 3)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        block_tensor, pads_tensor = input_tensor(context, node, 1), input_tensor(context, node, 2)
        ensure(len(source.shape) >= 3, f"{op_name} input rank must be at least 3, got {len(source.shape)}")
        ensure(len(source.shape) <= 4, f"{op_name} input rank must be at most 4, got {len(source.shape)}")
        ensure_type(source, _BATCH_TYPES, "input", op_name)
        ensure_types_eq(source, output, f"{op_name} input/output types")
        if source.type in _QUANTIZED:
            ensure_eq(source.params.scale, output.params.scale, f"{op_name} input/output scale")
            ensure_eq(
                source.params.zero_point, output.params.zero_point, f"{op_name} input/output zero_point"
            )
        if source.type == T.INT16:
            ensure_eq(source.params.zero_point, 0, f"{op_name} int16 input zero_point")
        for tensor, role in ((block_tensor, "block_shape"), (pads_tensor, "crops/paddings")):
            ensure_type(tensor, T.INT32, role, op_name)
        if not (block_tensor.is_constant_or_persistent and pads_tensor.is_constant_or_persistent):
            node.user_data = BatchSpaceData(None)
            context.set_tensor_to_dynamic(output)
            return
        plan = make_plan(context, node)
        node.user_data = BatchSpaceData(plan)
        context.resize_tensor(output, plan[0])

    return prepare


def _batch_space_invoke(make_plan):
    def invoke(context, node):
        tensors = context.tensors
        data: BatchSpaceData = node.user_data
        source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
        plan = data.plan
        if plan is None:
            key = (
                source.shape,
                tensors[node.inputs[1]].data.tobytes(),
                tensors[node.inputs[2]].data.tobytes(),
            )
            run_time = data.run_time
            if run_time.key != key:
                run_time.plan, run_time.key = make_plan(context, node), key
            plan = run_time.plan
            context.resize_tensor(output, plan[0])
        _, in4, out4, copies, fill = plan
        out = output.data.reshape(out4)
        x = source.data.reshape(in4)
        if fill is not None:
            out.view(np.uint8).fill(fill)
        for dst, src in copies:
            out[dst] = x[src]

    return invoke


register_builtin(
    BuiltinOperator.BATCH_TO_SPACE_ND,
    (1, 4),
    types=_BATCH_TYPES,
    op_data=BatchSpaceData,
    prepare=_batch_space_prepare("BATCH_TO_SPACE_ND", _batch_to_space_plan),
    invoke=_batch_space_invoke(_batch_to_space_plan),
)
register_builtin(
    BuiltinOperator.SPACE_TO_BATCH_ND,
    (1, 4),
    types=_BATCH_TYPES,
    op_data=BatchSpaceData,
    prepare=_batch_space_prepare("SPACE_TO_BATCH_ND", _space_to_batch_plan),
    invoke=_batch_space_invoke(_space_to_batch_plan),
)

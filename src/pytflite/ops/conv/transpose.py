"""TRANSPOSE_CONV and CONV_3D_TRANSPOSE: one matrix product, then a sum of its columns per output.

One matrix product multiplies every input pixel by the whole filter: [pixels, taps*O], which is also
[pixels*taps, O], a row per (input pixel, tap). Output o of input i and tap k is o = i*stride +
k*dilation - pad. Then, chosen in prepare:
- "gather" (a constant output shape, a small output): every output pixel lists the rows that land on
  it (padded with a row of zeros, ended with a row holding the bias); one np.take gathers them and one
  reduction sums them. Two calls, whatever the kernel;
- "scatter": the output starts as the bias and each tap adds its rows into a strided slice of it (the
  tap plan read backwards), one call per tap and no index memory.
A quantized TRANSPOSE_CONV multiplies (input - zero point), as floats, and sums without its bias into a
float scratch; the bias is added to the exact int64 accumulators before the requantization.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.types import AllocationType, BuiltinOperator, TensorType, storage_dtype
from ...errors import KernelError, ensure, ensure_eq
from ...model.options import Padding
from ..common import (
    activation_clamp,
    add_scratch_tensors,
    check_arity,
    input_tensor,
    optional_input_tensor,
    output_tensor,
    scratch_tensor,
    set_temporaries,
)
from ..kernel_type import OPTIMIZED, REFERENCE, KernelType
from ..registry import register_builtin
from ..windows import output_size, padding_before_after, tap_plan
from .common import (
    ALL,
    CONV_TYPES,
    FLOAT_TYPES,
    INTEGER,
    RANGES,
    check_bias,
    check_float,
    check_uint8_bias_scale,
    constant_data,
    declared_bias_type,
    draft_of,
    ensure_positive,
    filter_zero_offset,
    float_dtype,
    integer_checks,
    may_leave_int32,
    output_activation_range,
    output_multipliers,
    tiled_bias,
)
from .requant import Requant


@dataclass(frozen=True)
class IntegerTranspose:
    requant: Requant
    input_zero_point: int
    filter_offset: int
    dtype: Any
    bias: int = -1  # the bias tensor, or -1
    bias_terms: np.ndarray | None = None  # int64 [O]: a constant bias


@dataclass(frozen=True)
class TransposePlan:
    """How the products are summed into an output of one shape."""

    shape: tuple[int, ...]  # the output shape the plan was made for
    mode: str  # "gather" or "scatter"
    steps: tuple[tuple[tuple, tuple], ...] = ()  # scatter: (output slice, rows)
    rows: np.ndarray | None = None  # gather: [R, output pixels], indices of product rows
    bias_row: np.ndarray | None = None  # scatter: the constant bias tiled over an output row


@dataclass(frozen=True)
class TransposeState:
    """TRANSPOSE_CONV's and CONV_3D_TRANSPOSE's op data: the temporaries made in init, and what prepare
    derived."""

    scratch: int  # the matrix product: [pixels, taps*O], then (gather) a zero row and a bias row
    gathered: int  # gather: the rows of every output pixel, [R, output pixels, O]
    acc: int = -1  # quantized: the float sums, [output shape]
    wide: int = -1  # quantized: the int64 accumulators, [output shape]
    shifted: int = -1  # quantized: the input minus its zero point, as floats
    op: str = ""
    spatial: int = 2
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    padding: Padding = Padding.SAME
    out_channels: int = 0
    taps: int = 1
    dtype: Any = np.float32
    weights: np.ndarray | None = None  # [I, taps*O] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    plan: TransposePlan | None = None  # for a constant output shape
    # a computed output shape: the plan of the last one ("plan"), made at invoke
    runtime: dict = field(default_factory=dict)
    clamp: Callable[[np.ndarray], None] | None = None
    bias: int = -1
    bias_data: np.ndarray | None = None  # a constant bias
    integer: IntegerTranspose | None = None


# Gather when the gathered rows, [R, output pixels, O], have at most this many elements.
_GATHER_ELEMENTS = 1 << 18


def transpose_init(context, buffer, length):
    scratch, gathered, acc, wide, shifted = add_scratch_tensors(context, 5)
    return TransposeState(scratch=scratch, gathered=gathered, acc=acc, wide=wide, shifted=shifted)


def _transpose_plan(
    state, source_shape: tuple[int, ...], requested: np.ndarray, gather: bool = False
) -> TransposePlan:
    """Validate the requested output shape against the input; plan the sums (gathered if `gather` and
    small enough). `state`: the TransposeState, or prepare's draft of it."""
    op, dims = state.op, state.spatial + 2
    shape = tuple(int(d) for d in np.asarray(requested).reshape(-1))
    ensure_eq(len(shape), dims, f"{op} output shape size")
    ensure(all(d >= 0 for d in shape), f"{op} output shape has a negative dimension: {list(shape)}")
    ensure_eq(shape[0], source_shape[0], f"{op} output batch vs input batch")
    ensure_eq(shape[-1], state.out_channels, f"{op} output channels vs filter output channels")
    if state.spatial == 2:
        ensure(shape[1] > 0 and shape[2] > 0, f"{op} output height and width must be positive")
    out_spatial = shape[1:-1]
    in_spatial = source_shape[1:-1]
    pads = []
    for i in range(state.spatial):
        computed = output_size(
            state.padding, out_spatial[i], state.kernel[i], state.strides[i], state.dilation[i], True
        )
        ensure_eq(
            computed, in_spatial[i], f"{op} input size computed from the output shape (dimension {i + 1})"
        )
        pads.append(
            padding_before_after(
                out_spatial[i], state.kernel[i], state.strides[i], state.dilation[i], computed
            )[0]
        )
    # The convolution's relation with input and output swapped: the tap plan over the output gives,
    # per tap, the inputs that land inside.
    taps = [
        (t, tap)
        for t, tap in enumerate(
            tap_plan(out_spatial, in_spatial, state.kernel, state.strides, state.dilation, pads)
        )
        if not tap.empty
    ]
    if gather and math.prod(shape[:-1]) * max(state.out_channels, 1) <= _GATHER_ELEMENTS:  # cheap to plan
        pixels = np.arange(int(np.prod(shape[:-1], dtype=np.int64))).reshape(shape[:-1])
        sources = np.arange(int(np.prod(source_shape[:-1], dtype=np.int64))).reshape(source_shape[:-1])
        counts = np.zeros(pixels.shape, np.int64)
        for _, tap in taps:
            counts[(ALL, *tap.source)] += 1
        depth = int(counts.max(initial=0)) + (state.bias >= 0)
        if depth * pixels.size * state.out_channels <= _GATHER_ELEMENTS:
            zero_row = sources.size * state.taps  # then the bias row
            rows = np.full((depth, pixels.size), zero_row, np.intp)
            if state.bias >= 0:
                rows[-1] = zero_row + 1
            filled = np.zeros(pixels.size, np.intp)
            for t, tap in taps:
                targets = pixels[(ALL, *tap.source)].reshape(-1)
                rows[filled[targets], targets] = sources[(ALL, *tap.out)].reshape(-1) * state.taps + t
                filled[targets] += 1
            return TransposePlan(shape, "gather", rows=rows)
    steps = tuple(((ALL, *tap.source, ALL), (ALL, *tap.out, t, ALL)) for t, tap in taps)
    bias_row = None if state.bias_data is None else tiled_bias(state.bias_data, shape[-2])
    return TransposePlan(shape, "scatter", steps, bias_row=bias_row)


def transpose_prepare(
    context,
    node,
    state,
    op: str,
    spatial: int,
    options,
    weight_dims: tuple[int, int],
    kernel_type: KernelType = OPTIMIZED,
) -> None:
    """Shared prepare, into `state`, a draft of the TransposeState (transpose_draft); `weight_dims`
    names the filter's (output channels, input channels) axes."""
    check_arity(node, (3, 4))
    shape_tensor, weights, source = (input_tensor(context, node, i) for i in range(3))
    bias = optional_input_tensor(context, node, 3) if len(node.inputs) == 4 else None
    output = output_tensor(context, node)
    ensure_eq(len(shape_tensor.shape), 1, f"{op} output shape rank")
    ensure_eq(len(source.shape), spatial + 2, f"{op} input rank")
    ensure_eq(len(weights.shape), spatial + 2, f"{op} filter rank")
    quantized = spatial == 2 and source.type in INTEGER
    if not quantized:
        check_float((source, weights, output), ("input", "filter", "output"), op)
    if shape_tensor.type != TensorType.INT32:
        raise KernelError(f"{op} output shape is {shape_tensor.type.name}, not int32.")
    ensure_eq(shape_tensor.shape[0], spatial + 2, f"{op} output shape size")
    o_axis, i_axis = weight_dims
    ensure_eq(source.shape[-1], weights.shape[i_axis], f"{op} input channels vs filter input channels")
    if spatial == 2:
        ensure(
            min(source.shape[1:]) > 0 and min(weights.shape[:3]) > 0, f"{op} needs non-empty input and filter"
        )
    state.op, state.spatial = op, spatial
    state.out_channels = weights.shape[o_axis]
    state.kernel = tuple(weights.shape[1:3]) if spatial == 2 else tuple(weights.shape[:3])
    if bias is not None:
        if quantized:
            ensure_eq(int(np.prod(bias.shape, dtype=np.int64)), state.out_channels, f"{op} bias size")
        else:
            check_bias(bias, state.out_channels, op)
    state.bias = node.inputs[3] if bias is not None and not quantized else -1
    if state.bias >= 0 and constant_data(bias) is not None:
        state.bias_data = np.array(bias.data, np.float32).reshape(-1)
    ensure_positive(state.strides, f"{op} strides")
    ensure_positive(state.dilation, f"{op} dilation")
    state.padding = options.padding
    state.taps = int(np.prod(state.kernel, dtype=np.int64))
    state.dtype = np.dtype(np.float32)
    constant = constant_data(weights)
    if quantized:
        _transpose_integer(state, options, source, weights, bias, output, kernel_type)
        state.integer.requant.share_constants(context, node, state.integer.bias_terms)
    elif constant is not None:
        state.weights = np.ascontiguousarray(state.layout(constant))
    state.clamp = activation_clamp(options.fused_activation_function) if not quantized else None
    pixels = int(np.prod(source.shape[:-1], dtype=np.int64))
    rows = pixels * state.taps
    temporaries = [state.scratch]
    if quantized:
        scratch_tensor(context, state.shifted, FLOAT_TYPES[state.dtype], source.shape)
        temporaries.append(state.shifted)
    float_type = FLOAT_TYPES[state.dtype]
    if shape_tensor.is_constant_or_persistent and shape_tensor.data is not None:
        state.plan = _transpose_plan(state, source.shape, shape_tensor.data, gather=True)
        shape = state.plan.shape
        context.resize_tensor(output, shape)
        if quantized:
            scratch_tensor(context, state.acc, float_type, shape)
            scratch_tensor(context, state.wide, TensorType.INT64, shape)
            temporaries += [state.acc, state.wide]
            state.integer.requant.prepare(math.prod(shape[:-1]), state.integer.bias_terms)
    else:
        context.set_tensor_to_dynamic(output)
    if state.plan is not None and state.plan.mode == "gather":
        rows += 2
        scratch_tensor(context, state.gathered, float_type, (*state.plan.rows.shape, state.out_channels))
        temporaries.append(state.gathered)
    scratch_tensor(context, state.scratch, float_type, (rows, state.out_channels))
    set_temporaries(context, node, _owned(state), temporaries)


def _transpose_integer(state, options, source, weights, bias, output, kernel_type: KernelType) -> None:
    """TRANSPOSE_CONV with uint8, int8 or int16 activations. LiteRT's optimized kernel requantizes the
    int8 and int16 (int32 bias) outputs 8 channels at a time in NEON code and the last C % 8 in scalar
    code, and uint8 outputs in flat blocks of 16 values and a scalar tail; int16 with an int64 bias runs
    the reference kernel."""
    op = "TRANSPOSE_CONV"
    bias_types = (
        (TensorType.INT32, TensorType.INT64) if source.type == TensorType.INT16 else (TensorType.INT32,)
    )
    integer_checks(source, weights, bias, output, op, bias_types)
    uint8 = source.type == TensorType.UINT8
    out_channels = state.out_channels
    wide_bias = False
    if source.type == TensorType.INT16:
        chosen = declared_bias_type(options, bias, op)
        ensure(
            bias is None or bias.type == TensorType.INT64 or chosen == TensorType.INT32,
            f"{op} with int16 input and an INT32 bias needs quantized_bias_type INT32 "
            "(TFLite would read the bias as int64)",
        )
        wide_bias = chosen != TensorType.INT32
    if uint8:
        check_uint8_bias_scale(source, weights, bias, output, op)
    multiplier, shift = output_multipliers(
        source, weights, output, out_channels, op, per_tensor_product=uint8
    )
    low, high = output_activation_range(options, output)
    scalar_from = None
    if wide_bias:
        rounding = "wide"
    elif kernel_type is REFERENCE:
        rounding = "scalar"
    else:
        rounding = "simd"
        scalar_from = None if uint8 else out_channels - out_channels % 8
    offset = filter_zero_offset(weights)
    zero_point = source.params.zero_point
    lowest, highest = RANGES[source.type]
    magnitude = max(abs(lowest - zero_point), abs(highest - zero_point))  # the input is offset first
    constant = constant_data(weights)
    if constant is not None:
        sums = np.abs(constant.astype(np.int64) - offset).reshape(out_channels, -1).sum(axis=1)
        weight_sum = int(sums.max(initial=0))
    else:
        weight_sum = int(np.prod(weights.shape[1:])) * (255 if uint8 else 128)
    dtype = float_dtype(magnitude * weight_sum)
    constant_bias = constant_data(bias)
    wrap = rounding != "wide" and may_leave_int32(source, weight_sum, constant_bias)
    zero_point_out, out_dtype = output.params.zero_point, storage_dtype(output.type)
    requant = Requant(
        multiplier, shift, zero_point_out, low, high, out_dtype, rounding, scalar_from, wrap=wrap
    )
    requant.product_bound = magnitude * weight_sum  # the input is offset: |x - zp| <= magnitude
    state.integer = IntegerTranspose(
        requant,
        zero_point,
        offset,
        dtype,
        bias.index if bias is not None else -1,
        None if constant_bias is None else constant_bias.reshape(-1).astype(np.int64),
    )
    state.dtype = np.dtype(dtype)
    if constant is not None:
        state.weights = np.ascontiguousarray(state.layout((constant.astype(np.int64) - offset).astype(dtype)))


def _transpose_sums(
    tensors, state: TransposeState, plan: TransposePlan, x: np.ndarray, w: np.ndarray, out: np.ndarray
) -> None:
    """out = the products of every input pixel with the filter, summed where they land (+ the bias)."""
    col = tensors[state.scratch].data
    pixels = x.size // x.shape[-1]
    if pixels:
        np.matmul(x.reshape(pixels, -1), w, out=col[: pixels * state.taps].reshape(pixels, -1))
    if plan.mode == "gather":
        col[-2] = 0
        if state.bias >= 0:
            col[-1] = tensors[state.bias].data
        gathered = tensors[state.gathered].data
        np.take(col, plan.rows, axis=0, out=gathered, mode="clip")
        np.add.reduce(gathered, axis=0, out=out.reshape(-1, state.out_channels))
    else:
        cols = col.reshape(*x.shape[:-1], state.taps, state.out_channels)
        if state.bias >= 0:
            bias_row = plan.bias_row
            if bias_row is None or bias_row.shape[0] != out.shape[-2] * out.shape[-1]:
                bias_row = tiled_bias(tensors[state.bias].data, out.shape[-2])
            np.copyto(out.reshape(-1, bias_row.shape[0]), bias_row)
        else:
            out.fill(0)
        for dst, src in plan.steps:
            region = out[dst]
            np.add(region, cols[src], out=region)


def transpose_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    source = tensors[node.inputs[2]]
    output = tensors[node.outputs[0]]
    dynamic = output.allocation_type == AllocationType.DYNAMIC
    plan = state.plan
    if dynamic:
        requested = tensors[node.inputs[0]].data
        shape = tuple(int(d) for d in np.asarray(requested).reshape(-1))
        plan = state.runtime.get("plan")
        if plan is None or shape != plan.shape:
            plan = state.runtime["plan"] = _transpose_plan(state, source.shape, requested)
        context.resize_tensor(output, plan.shape)
    out = output.data
    integer = state.integer
    if integer is None:
        w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
        _transpose_sums(tensors, state, plan, source.data, w, out)
        if state.clamp is not None:
            state.clamp(out)
        return
    w = state.weights
    if w is None:
        filt = tensors[node.inputs[1]].data.astype(np.int64) - integer.filter_offset
        w = np.ascontiguousarray(state.layout(filt.astype(state.dtype)))
    x = tensors[state.shifted].data
    np.copyto(x, source.data)  # then minus the zero point, exact (a cast inside would run buffered)
    np.subtract(x, integer.input_zero_point, out=x)
    if dynamic:
        acc, wide = np.empty(out.shape, state.dtype), np.empty(out.shape, np.int64)
    else:
        acc, wide = tensors[state.acc].data, tensors[state.wide].data
    _transpose_sums(tensors, state, plan, x, w, acc)
    terms = integer.bias_terms
    if terms is None and integer.bias >= 0:
        terms = tensors[integer.bias].data.reshape(-1).astype(np.int64)
    requant = integer.requant
    if requant.scalar_from is None and requant.rounding == "simd":  # uint8: flat blocks of 16
        requant.scalar_tail = out.size % 16
    requant.requantize(acc, terms, wide, out)


_OWNED = ("scratch", "gathered", "acc", "wide", "shifted")  # the temporaries init makes


def _owned(state) -> tuple[int, ...]:
    return tuple(getattr(state, name) for name in _OWNED)


def transpose_draft(node):
    """A fresh draft of the node's TransposeState for prepare (common._draft)."""
    return draft_of(node.user_data, *_OWNED)


def transpose_conv_prepare(kernel_type: KernelType):
    def prepare(context, node):
        options = node.builtin_data
        state = transpose_draft(node)
        state.strides, state.dilation = (options.stride_h, options.stride_w), (1, 1)

        def layout(filt: np.ndarray) -> np.ndarray:  # [O, KH, KW, I] -> [I, KH*KW*O]
            return (
                filt.reshape(filt.shape[0], -1, filt.shape[-1]).transpose(2, 1, 0).reshape(filt.shape[-1], -1)
            )

        state.layout = layout
        transpose_prepare(context, node, state, "TRANSPOSE_CONV", 2, options, (0, 3), kernel_type)
        node.user_data = TransposeState(**vars(state))

    return prepare


# BUILTIN_REF's kernels differ in how they round quantized outputs (the float ones are the same here)
register_builtin(
    BuiltinOperator.TRANSPOSE_CONV,
    (1, 5),
    types=CONV_TYPES,
    init=transpose_init,
    op_data=TransposeState,
    prepare_for=transpose_conv_prepare,
    invoke=transpose_invoke,
)

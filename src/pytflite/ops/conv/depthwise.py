"""DEPTHWISE_CONV_2D: one einsum over the taps of a padded copy of the input.

Output row h is sum over taps (i, j) of an input row segment times the tap's weights tiled over the
row: with the input laid out so that the segment of tap (i, j) for row h starts at a fixed offset
i*A + j*B + h*D and is contiguous, the taps form one strided view [N, KH, KW, OH, OW*C] and a single
np.einsum sums them, its inner loop running along whole output rows. With a column stride of 1 the
layout is the input padded (and cropped) to what the window reads; with a column stride s > 1 it is
[N, rows, KW, OW, C], the input columns tap j reads (ow*s + j*dilation) gathered per tap. A depth
multiplier > 1 repeats each input channel in that copy, so that the sum runs over output channels.
Quantized inputs are always staged (the copy converts them to floats), their padding holding the zero
point; the sum of at most KH*KW products of 8-bit values is exact in float32.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...core.quantization import AffineQuantization
from ...core.types import BuiltinOperator, TensorType, storage_dtype
from ...errors import KernelError, ensure, ensure_eq, ensure_type
from ...fidelity.depthwise import fast_3x3_kernel
from ..common import (
    activation_clamp,
    add_scratch_tensors,
    check_arity,
    clip,
    float_activation_range,
    input_tensor,
    make_calls,
    output_tensor,
    scratch_tensor,
    set_temporaries,
)
from ..jit import compiled, read_only
from ..kernel_type import OPTIMIZED, REFERENCE, KernelType
from ..quant.hybrid_inputs import AsymmetricRowQuantizer
from ..registry import register_builtin
from ..windows import (
    Staging,
    plan_window,
)
from .common import (
    CONV_TYPES,
    FLOAT,
    FLOAT_TYPES,
    INTEGER,
    check_uint8_bias_scale,
    constant_data,
    draft_of,
    ensure_positive,
    filter_zero_offset,
    float_dtype,
    input_magnitude,
    input_quantizer,
    integer_checks,
    may_leave_int32,
    output_activation_range,
    output_multipliers,
    quantize_input,
    shared_constant,
)
from .depthwise_sums import (
    depthwise_exact,
    depthwise_sums,
    plan_depthwise,
    plan_depthwise_sums,
    sums_call,
    tile_weights,
)
from .requant import Requant
from .rows import apply_row, bias_and_clamp_calls, channel_row, fill_row


@dataclass
class IntegerDepthwise:
    requant: Requant
    input_zero_point: int
    filter_offset: int
    dtype: Any
    bias: np.ndarray | None = None  # int64 [C]: bias - zp * sum over taps of w, when constant
    sums: np.ndarray | None = None  # int64 [C]: sum over taps of w, for a constant filter
    as_calls: bool = False  # constant filter and terms, float64 requantization: _integer_calls' calls

    def weights(self, filt: np.ndarray, width: int):
        values = filt.astype(np.int64) - self.filter_offset
        return tile_weights(values.astype(self.dtype), width), values.reshape(-1, values.shape[-1]).sum(
            axis=0
        )

    def bias_terms(self, bias: np.ndarray | None, sums: np.ndarray) -> np.ndarray:
        terms = -self.input_zero_point * sums
        return terms if bias is None else terms + bias.reshape(-1).astype(np.int64)


@dataclass
class HybridDepthwise:
    scales: np.ndarray  # float32 [C]: the filter's per-channel scales
    reference: bool  # BUILTIN_REF: acc * (filter scale * input scale); else NEON's order per channel
    low: float
    high: float
    # rows (rows.py) over one batch's outputs: the scales, which of them NEON takes in blocks of 4 (None:
    # all), the bias (refilled when not constant), and two rows of per-batch factors
    scale_row: np.ndarray | None = None
    blocked_row: np.ndarray | None = None
    bias_row: np.ndarray | None = None
    bias_constant: bool = False
    factors: tuple[np.ndarray, np.ndarray] = ()
    quantizer: AsymmetricRowQuantizer | None = None  # the input's (common._input_quantizer)
    # where compiled kernels run: hybrid_compiled.scale_back, with its order and scalar_from
    scale_back: Callable | None = None
    order: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class DepthwiseState:
    """DEPTHWISE_CONV_2D's op data: the temporaries made in init, and what prepare derived."""

    scratch: int  # the staged input
    acc: int = -1  # quantized and hybrid: the sums [N, OH, OW*C] (float32 or float64)
    wide: int = -1  # quantized: int64 accumulators [N, OH, OW, C]
    staging: Staging | None = None  # None: the input itself is the padded layout (VALID, stride-1 cols)
    pad_value: int = 0
    view: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # the taps' view: shape, byte strides
    dtype: Any = np.float32
    weights: np.ndarray | None = None  # [KH, KW, OW*C*M]: each tap's weights tiled over an output row
    bias: np.ndarray | None = None  # float: the bias tiled over a row (rows.py), refilled when not constant
    bias_constant: bool = False
    clamp: Callable[[np.ndarray], None] | None = None
    integer: IntegerDepthwise | None = None
    hybrid: HybridDepthwise | None = None
    # exact mode (float): the terms of each sum, [taps + 1, N, rows, OW*C] in `acc`, summed in order; the
    # bias is the first term (LiteRT's optimized kernel) or the last (its reference kernel)
    exact: bool = False
    bias_first: bool = True
    # float (either mode) and a hybrid kernel's float32 sums: depthwise_compiled.depthwise_float, where it runs
    compiled_float: Callable | None = None
    no_bias: np.ndarray | None = None  # zeros [C], read-only: depthwise_float's bias where there is none
    geometry: tuple[int, ...] = ()  # stride h, w, dilation h, w, pad top, left (the compiled kernels')
    as_calls: bool = False  # float, constant filter, not exact, not compiled: _float_calls' calls


def _depthwise_init(context, buffer, length):
    scratch, acc, wide = add_scratch_tensors(context, 3)
    return DepthwiseState(scratch=scratch, acc=acc, wide=wide)


_OWNED = ("scratch", "acc", "wide")  # the temporaries init makes


def depthwise_prepare(kernel_type: KernelType):
    def prepare(context, node):
        state = draft_of(node.user_data, *_OWNED)
        _depthwise_prepare(context, node, state, kernel_type)
        state.weights = shared_constant(context, node, "weights", state.weights)
        if state.bias_constant:
            state.bias = shared_constant(context, node, "bias row", state.bias)
        node.user_data = DepthwiseState(**vars(state))

    return prepare


def _depthwise_prepare(context, node, state, kernel_type: KernelType) -> None:
    op = "DEPTHWISE_CONV_2D"
    check_arity(node, (2, 3))
    options = node.builtin_data
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    # Three inputs need a real bias (TFLite's GetInputSafe); two mean none (LiteRT's optimized kernel
    # crashes on that, its reference kernel adds nothing, and so does this one).
    bias = input_tensor(context, node, 2) if len(node.inputs) == 3 else None
    output = output_tensor(context, node)
    ensure_eq(len(source.shape), 4, f"{op} input rank")
    ensure_eq(len(weights.shape), 4, f"{op} filter rank")
    dilation = (options.dilation_h_factor, options.dilation_w_factor)
    ensure_positive(dilation, f"{op} dilation")
    ensure_positive((options.stride_h, options.stride_w), f"{op} strides")
    for tensor, name in ((source, "input"), (weights, "filter")):  # TFLite's checks, in its order
        for axis in (1, 2, 3):
            ensure(tensor.shape[axis] > 0, f"SizeOfDimension({name}, {axis}) > 0 was not true.")
    ensure_type(source, CONV_TYPES, "input", op)
    hybrid = source.type == TensorType.FLOAT32 and weights.type != TensorType.FLOAT32
    if source.type == TensorType.FLOAT32 and not hybrid:
        for tensor, role in ((weights, "filter"), (output, "output")):
            ensure_type(tensor, FLOAT, role, op)
    ensure_eq(weights.shape[0], 1, f"{op} filter dimension 0")
    n, h, w, channels = source.shape
    _, kh, kw, out_channels = weights.shape
    ensure_eq(out_channels % channels, 0, f"{op} filter channels % input channels")
    if bias is not None:
        ensure_eq(len(bias.shape), 1, f"{op} bias rank")
        ensure_eq(bias.shape[0], out_channels, f"{op} bias size")
    window = plan_window(options, (h, w), (kh, kw), dilation, checked=True)
    context.resize_tensor(output, (n, *window.out, out_channels))
    state.geometry = (*window.strides, *window.dilation, window.pads[0][0], window.pads[1][0])
    if source.type in INTEGER:
        _depthwise_integer(context, node, state, options, source, weights, bias, output, window, kernel_type)
        return
    if hybrid:
        _depthwise_hybrid(context, node, state, options, source, weights, bias, output, window, kernel_type)
        return
    if bias is not None:
        ensure_type(bias, FLOAT, "bias", op)
    temporaries = []
    state.dtype = np.dtype(np.float32)
    state.exact, state.bias_first = False, kernel_type is OPTIMIZED
    if n * window.out[0] * window.out[1]:
        if plan_depthwise(context, state, source.shape, window, out_channels):
            temporaries.append(state.scratch)
        # compiled, the sums are the exact mode's in either mode: in place, LiteRT's order, and faster
        state.compiled_float = _compiled("depthwise_float", channels, out_channels)
        state.no_bias = read_only(np.zeros(out_channels, np.float32))
        if context.exact_float_summation:
            state.exact = True
            terms = kh * kw + 1
            row = n * window.out[1] * out_channels
            rows = max(1, min(window.out[0], _TERMS_AT_ONCE // (terms * row)))
            scratch_tensor(context, state.acc, TensorType.FLOAT32, (terms, n, rows, row // n))
            temporaries.append(state.acc)
    set_temporaries(context, node, (state.scratch, state.acc, state.wide), temporaries)
    width = window.out[1]
    constant = constant_data(weights)
    if constant is not None:
        state.weights = tile_weights(constant, width)
    if bias is not None and not state.exact:
        state.bias_constant = constant_data(bias) is not None
        values = bias.data if state.bias_constant else np.zeros(out_channels, np.float32)
        state.bias = channel_row(values, n * window.out[0] * window.out[1], np.float32)
    state.clamp = activation_clamp(options.fused_activation_function)
    if state.weights is not None and not state.exact and state.compiled_float is None:
        state.as_calls = True


def _compiled(name: str, channels: int, out_channels: int):
    """depthwise_compiled's `name` where compiled kernels run and there is no depth multiplier (its staged
    copy serves the NumPy path better), else None."""
    return compiled("conv.depthwise_compiled", name) if channels == out_channels else None


def _depthwise_multiplier(options, channels: int, out_channels: int, op: str) -> None:
    """The 16x8 and hybrid kernels read depth_multiplier from the options: it must be the real one."""
    ensure_eq(options.depth_multiplier, out_channels // channels, f"{op} depth_multiplier option")


def _depthwise_integer(context, node, state, options, source, weights, bias, output, window, kernel_type):
    """DEPTHWISE_CONV_2D with uint8, int8 or int16 activations. LiteRT's optimized int8 kernel
    requantizes 8 channels at a time in NEON code and the last C % 8 in scalar code; its uint8 one rounds
    as the scalar code does, but in the 3x3 kernel of LiteRT's aarch64 build (fidelity/depthwise.py);
    int16 (int64 bias) always runs the reference kernel."""
    op = "DEPTHWISE_CONV_2D"
    channels, out_channels = source.shape[3], weights.shape[3]
    bias_types = (TensorType.INT64,) if source.type == TensorType.INT16 else (TensorType.INT32,)
    integer_checks(source, weights, bias, output, op, bias_types)
    uint8 = source.type == TensorType.UINT8
    if source.type == TensorType.INT16:
        _depthwise_multiplier(options, channels, out_channels, op)
    if uint8:
        check_uint8_bias_scale(source, weights, bias, output, op)
    multiplier, shift = output_multipliers(
        source, weights, output, out_channels, op, per_tensor_product=uint8
    )
    low, high = output_activation_range(options, output)
    if source.type == TensorType.INT16:
        rounding, scalar_from = "wide", None
    elif source.type == TensorType.INT8 and kernel_type is OPTIMIZED:
        rounding, scalar_from = "simd", out_channels - out_channels % 8
    elif kernel_type is OPTIMIZED and fast_3x3_kernel(
        context.host,
        input_shape=tuple(source.shape),
        kernel_hw=window.kernel,
        strides=window.strides,
        dilation=window.dilation,
        pads_before=(window.pads[0][0], window.pads[1][0]),
        depth_multiplier=out_channels // channels,
        output_hw=window.out,
        shift=int(shift[0]),
    ):
        rounding, scalar_from = "simd", None
    else:
        rounding, scalar_from = "scalar", None
    offset = filter_zero_offset(weights)
    magnitude = input_magnitude(source)
    constant = constant_data(weights)
    taps = weights.shape[1] * weights.shape[2]
    if constant is not None:
        weight_sum = int(
            np.abs(constant.astype(np.int64) - offset).reshape(-1, out_channels).sum(axis=0).max()
        )
    else:
        weight_sum = taps * (255 if uint8 else 128)
    dtype = float_dtype(magnitude * weight_sum)
    constant_bias = constant_data(bias)
    wrap = rounding != "wide" and may_leave_int32(source, weight_sum, constant_bias)
    zero_point_out, out_dtype = output.params.zero_point, storage_dtype(output.type)
    requant = Requant(
        multiplier, shift, zero_point_out, low, high, out_dtype, rounding, scalar_from, wrap=wrap
    )
    requant.product_bound = magnitude * weight_sum  # the staged input is raw: |x| <= magnitude
    integer = IntegerDepthwise(requant, source.params.zero_point, offset, dtype)
    state.pad_value = source.params.zero_point
    width = window.out[1]
    if constant is not None:
        state.weights, integer.sums = integer.weights(constant, width)
        if bias is None or constant_bias is not None:
            integer.bias = integer.bias_terms(constant_bias, integer.sums)
    requant.share_constants(context, node, integer.bias)
    requant.prepare(source.shape[0] * window.out[0] * window.out[1], integer.bias)
    state.integer = integer
    temporaries = plan_depthwise_sums(context, node, state, source, window, out_channels, dtype, stage=True)
    if state.acc in temporaries:
        scratch_tensor(context, state.wide, TensorType.INT64, output.shape)
        temporaries.append(state.wide)
        if state.weights is not None and integer.bias is not None and requant.float_path(integer.bias):
            integer.as_calls = True
    set_temporaries(context, node, (state.scratch, state.acc, state.wide), temporaries)


def _depthwise_hybrid(context, node, state, options, source, weights, bias, output, window, kernel_type):
    """DEPTHWISE_CONV_2D of a float32 input with int8 weights (TFLite's EvalHybridPerChannel): each batch
    quantized asymmetrically, the exact sums scaled per channel. LiteRT's NEON code scales 4 channels at
    a time as (acc * filter scale) * input scale and the last C % 4 as (acc * input scale) * filter
    scale; BUILTIN_REF's as acc * (filter scale * input scale)."""
    op = "DEPTHWISE_CONV_2D"
    if weights.type != TensorType.INT8:
        raise KernelError(f"Type FLOAT32 with filter type {weights.type.name} not currently supported.")
    ensure_type(output, FLOAT, "output", op)
    if bias is not None:
        ensure_type(bias, FLOAT, "bias", op)
    channels, out_channels = source.shape[3], weights.shape[3]
    _depthwise_multiplier(options, channels, out_channels, op)
    quantization = weights.quantization
    ensure(
        isinstance(quantization, AffineQuantization) and quantization.scale.size > 0,
        f"{op} hybrid filter must have affine quantization with scales",
    )
    axis = quantization.quantized_dimension
    ensure(
        0 <= axis < 4 and quantization.scale.size == weights.shape[axis],
        f"{op} filter has {quantization.scale.size} scales for dimension {axis} of {list(weights.shape)}",
    )
    scales = np.broadcast_to(quantization.scale.astype(np.float32), (out_channels,)).copy()
    scales.flags.writeable = False
    low, high = float_activation_range(options.fused_activation_function)
    hybrid = state.hybrid = HybridDepthwise(scales, kernel_type is REFERENCE, low, high)
    hybrid.quantizer = input_quantizer(source, True)
    pixels = window.out[0] * window.out[1]  # per batch
    hybrid.scale_row = channel_row(scales, pixels)
    if out_channels % 4:
        hybrid.blocked_row = channel_row(np.arange(out_channels) < out_channels - out_channels % 4, pixels)
    hybrid.factors = (np.empty_like(hybrid.scale_row), np.empty_like(hybrid.scale_row))
    if bias is not None:
        hybrid.bias_constant = constant_data(bias) is not None
        values = bias.data if hybrid.bias_constant else np.zeros(out_channels)
        hybrid.bias_row = channel_row(values, pixels, np.float32)
    constant = constant_data(weights)
    taps = weights.shape[1] * weights.shape[2]
    if constant is not None:
        weight_sum = int(np.abs(constant.astype(np.int64)).reshape(-1, out_channels).sum(axis=0).max())
    else:
        weight_sum = taps * 128
    dtype = float_dtype(255 * weight_sum)
    if constant is not None:
        state.weights = tile_weights(constant.astype(dtype), window.out[1])
    if dtype == np.float32:
        state.compiled_float = _compiled("depthwise_float", channels, out_channels)
        state.no_bias = read_only(np.zeros(out_channels, np.float32))
        hybrid.scale_back = compiled("quant.hybrid_compiled", "scale_back")
        hybrid.order = (0, out_channels) if hybrid.reference else (1, out_channels - out_channels % 4)
    temporaries = plan_depthwise_sums(context, node, state, source, window, out_channels, dtype, stage=False)
    if state.acc in temporaries:  # the quantized input, as the sums' type (float32: quantized into it)
        scratch_tensor(context, state.wide, FLOAT_TYPES[np.dtype(dtype)], source.shape)
        temporaries.append(state.wide)
    set_temporaries(context, node, (state.scratch, state.acc, state.wide), temporaries)


# Exact mode makes the terms of this many outputs' sums at a time (the rows of the output in one batch).
_TERMS_AT_ONCE = 1 << 18


def _float_calls(state: DepthwiseState, x, out, scratch, bias) -> list:
    """depthwise_invoke's float32 sums, bias and activation as calls."""
    calls = []
    if state.staging is not None:
        calls += state.staging.calls(x, scratch, state.pad_value)
        x = scratch
    rows = out.reshape(out.shape[0], out.shape[1], -1)
    calls.append(sums_call(state, x, state.weights, rows))
    return calls + bias_and_clamp_calls(state.bias, state.bias_constant, bias, rows, state.clamp, out)


def _integer_calls(state: DepthwiseState, x, out, scratch, acc, wide) -> list:
    """The invoke of a quantized DEPTHWISE_CONV_2D with a constant filter and terms, as calls: the
    staging, the sums, the requantization; or, where compiled kernels run,
    depthwise_compiled.depthwise doing all three."""
    integer = state.integer
    kernel = _compiled("depthwise", x.shape[3], out.shape[3])
    if kernel is not None and x.flags.c_contiguous and out.flags.c_contiguous:  # one call for all
        requant = integer.requant
        fast = requant.float_constants(integer.bias)
        return [
            partial(
                kernel,
                x,
                integer.input_zero_point,
                read_only(state.weights),
                state.geometry,
                acc.reshape(-1)[: out.shape[2] * out.shape[3]],  # the sums of one output row
                read_only(fast.scale),
                read_only(fast.constant),
                requant.lifted_bounds(fast),
                out,
            )
        ]
    calls = state.staging.calls(x, scratch, state.pad_value)
    calls.append(sums_call(state, scratch, state.weights, acc))
    return calls + integer.requant.float_calls(acc.reshape(out.shape), integer.bias, wide, out)


def depthwise_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    if state.integer is not None:
        _depthwise_integer_invoke(context, node, state, out)
        return
    if state.hybrid is not None:
        _depthwise_hybrid_invoke(context, node, state, out)
        return
    if state.as_calls:
        make_calls(_bound_calls(tensors, node, state, out))
        return
    w = state.weights
    if w is None:
        w = tile_weights(tensors[node.inputs[1]].data, out.shape[2])
    rows = out.reshape(out.shape[0], out.shape[1], -1)
    x = tensors[node.inputs[0]].data
    bias = tensors[node.inputs[2]].data if len(node.inputs) == 3 else None
    if state.compiled_float is not None and x.flags.c_contiguous and out.flags.c_contiguous:
        bias = state.no_bias if bias is None else read_only(bias.reshape(-1))
        state.compiled_float(x, read_only(w), state.geometry, bias, state.bias_first, out)
    elif state.exact:
        depthwise_exact(tensors, state, x, w, bias, rows)
    else:
        depthwise_sums(tensors, state, x, w, rows)
        if bias is not None:
            apply_row(np.add, rows, state.bias if state.bias_constant else fill_row(state.bias, bias), rows)
    if state.clamp is not None:
        state.clamp(out)


def _depthwise_integer_invoke(context, node, state: DepthwiseState, out: np.ndarray) -> None:
    tensors = context.tensors
    integer = state.integer
    if integer.as_calls:
        make_calls(_bound_calls(tensors, node, state, out))
        return
    w, terms = state.weights, integer.bias
    bias = tensors[node.inputs[2]].data if len(node.inputs) == 3 else None
    if w is None:
        w, sums = integer.weights(tensors[node.inputs[1]].data, out.shape[2])
        terms = integer.bias_terms(bias, sums)
    elif terms is None:
        terms = integer.bias_terms(bias, integer.sums)
    acc = tensors[state.acc].data
    depthwise_sums(tensors, state, tensors[node.inputs[0]].data, w, acc)
    integer.requant.requantize(acc.reshape(out.shape), terms, tensors[state.wide].data, out)


def _depthwise_hybrid_invoke(context, node, state: DepthwiseState, out: np.ndarray) -> None:
    tensors = context.tensors
    hybrid = state.hybrid
    staged = tensors[state.wide].data
    into = staged if staged.dtype == np.float32 else None
    quantized, scales, _ = quantize_input(tensors[node.inputs[0]].data, hybrid.quantizer, into)
    if into is None:
        np.copyto(staged, quantized)
    quantized = staged
    w = state.weights
    if w is None:
        w = tile_weights(tensors[node.inputs[1]].data.astype(state.dtype), out.shape[2])
    acc = tensors[state.acc].data
    if state.compiled_float is not None:  # the same exact sums: 0 + the products
        sums = acc.reshape(out.shape) if hybrid.scale_back is None else out
        state.compiled_float(quantized, read_only(w), state.geometry, state.no_bias, True, sums)
        if hybrid.scale_back is not None:
            biased = len(node.inputs) == 3
            bias = read_only(tensors[node.inputs[2]].data.reshape(-1)) if biased else state.no_bias
            rows = out.reshape(out.shape[0], -1, out.shape[3])
            low, high = np.float32(hybrid.low), np.float32(hybrid.high)
            hybrid.scale_back(rows, scales, hybrid.scales, *hybrid.order, bias, biased, low, high, rows)
            return
    else:
        depthwise_sums(tensors, state, quantized, w, acc)
    rows = out.reshape(acc.shape)  # [N, OH, OW*C]
    np.copyto(rows, acc, casting="unsafe")  # float(int32 accumulator)
    bias_row = None
    if len(node.inputs) == 3:
        bias_row = hybrid.bias_row
        if not hybrid.bias_constant:
            fill_row(bias_row, tensors[node.inputs[2]].data)
    scale_row, (first, second) = hybrid.scale_row, hybrid.factors
    for batch, per_batch in zip(rows, scales.tolist()):
        per_batch = np.float32(per_batch)
        if hybrid.reference:  # acc * (filter scale * input scale)
            np.multiply(scale_row, per_batch, out=first)
            apply_row(np.multiply, batch, first, batch)
        elif hybrid.blocked_row is None:  # NEON blocks of 4 channels: (acc * filter scale) * input scale
            apply_row(np.multiply, batch, scale_row, batch)
            np.multiply(batch, per_batch, out=batch)
        else:  # and the last C % 4 channels in scalar code: (acc * input scale) * filter scale
            blocked = hybrid.blocked_row
            first.fill(per_batch)
            np.copyto(first, scale_row, where=blocked)
            second.fill(per_batch)
            np.copyto(second, scale_row, where=~blocked)
            apply_row(np.multiply, batch, first, batch)
            apply_row(np.multiply, batch, second, batch)
        if bias_row is not None:
            apply_row(np.add, batch, bias_row, batch)
    if hybrid.low > -np.inf or hybrid.high < np.inf:
        clip(rows, np.float32(hybrid.low), np.float32(hybrid.high), out=rows)


def _bound_calls(tensors, node, state: DepthwiseState, out: np.ndarray) -> list:
    """A float or quantized depthwise made of calls alone (their `as_calls`) as calls on the node's
    arrays: _float_calls or _integer_calls."""
    x, scratch = tensors[node.inputs[0]].data, tensors[state.scratch].data
    if state.integer is not None:
        return _integer_calls(state, x, out, scratch, tensors[state.acc].data, tensors[state.wide].data)
    bias = tensors[node.inputs[2]].data if state.bias is not None else None
    return _float_calls(state, x, out, scratch, bias)


def depthwise_calls(context, node):
    """Registration.calls: a float or quantized depthwise made of calls alone, its calls on the node's
    arrays (_bound_calls); a hybrid one with compiled kernels and a constant filter, the input's
    quantization, the sums and the scaling back as three compiled calls (_hybrid_calls); any other runs
    depthwise_invoke."""
    state = node.user_data
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if state.hybrid is not None:
        return _hybrid_calls(context, node, state, out)
    if not (state.integer.as_calls if state.integer is not None else state.as_calls):
        return None
    return () if out.size == 0 else tuple(_bound_calls(tensors, node, state, out))


def _hybrid_calls(context, node, state: DepthwiseState, out: np.ndarray) -> tuple | None:
    hybrid = state.hybrid
    tensors = context.tensors
    if hybrid.scale_back is None or state.compiled_float is None:
        return None
    if state.weights is None or hybrid.quantizer is None:
        return None
    x, staged = tensors[node.inputs[0]].data, tensors[state.wide].data
    kernel = hybrid.quantizer.compiled_kernel
    if kernel is None or out.size == 0 or not (x.flags.c_contiguous and staged.dtype == np.float32):
        return None
    quantize, scales, zero_points = kernel
    batches = x.shape[0]
    values, quantized = x.reshape(batches, -1), staged.reshape(batches, -1)
    sums, weights, geometry = state.compiled_float, read_only(state.weights), state.geometry
    biased = len(node.inputs) == 3
    bias = read_only(tensors[node.inputs[2]].data.reshape(-1)) if biased else state.no_bias
    rows = out.reshape(batches, -1, out.shape[3])
    scale_back = partial(
        hybrid.scale_back,
        rows,
        scales,
        hybrid.scales,
        *hybrid.order,
        bias,
        biased,
        np.float32(hybrid.low),
        np.float32(hybrid.high),
        rows,
    )

    def hybrid_depthwise():
        if not quantize(values, quantized, scales, zero_points, True):
            depthwise_invoke(context, node)
            return
        sums(staged, weights, geometry, state.no_bias, True, out)
        scale_back()

    return (hybrid_depthwise,)


# BUILTIN_REF's kernels differ in how they round quantized outputs (the float ones are the same here)
register_builtin(
    BuiltinOperator.DEPTHWISE_CONV_2D,
    (1, 7),
    types=CONV_TYPES,
    init=_depthwise_init,
    op_data=DepthwiseState,
    prepare_for=depthwise_prepare,
    invoke=depthwise_invoke,
    calls=depthwise_calls,
)

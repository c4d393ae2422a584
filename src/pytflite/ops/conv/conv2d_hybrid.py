"""The hybrid CONV_2D (float32 input, int8 filter): TFLite's EvalHybrid and EvalHybridPerChannel.

Its prepare (plan_hybrid_conv2d) picks how the input is quantized (symmetric per tensor, asymmetric per
channel or with groups) and how the exact products are scaled back; its invoke quantizes each batch,
runs the CONV_2D product (im2col.py) and scales back, with the x86 SSE kernel's sign quirk and the
per-channel kernel's stale row sums reproduced where LiteRT has them. With compiled kernels and a
constant filter, its calls (hybrid_conv2d_calls) are the input's quantization, the product's calls and
the scaling back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...core.quantization import AffineQuantization
from ...core.types import TensorType
from ...errors import KernelError, ensure, ensure_type
from ...fidelity.arithmetic import HostArithmetic
from ...fidelity.neon_pairs import WeightPairs, weight_pairs
from ...fidelity.sse import sign_transfer_split
from ..common import (
    clip,
    float_activation_range,
    make_calls,
    scratch_tensor,
    set_temporaries,
)
from ..jit import compiled, read_only
from ..kernel_type import REFERENCE
from ..quant.hybrid_inputs import AsymmetricRowQuantizer
from .common import (
    FLOAT,
    FLOAT_TYPES,
    constant_data,
    float_dtype,
    input_quantizer,
    quantize_input,
)
from .im2col import (
    ConvState,
    conv_product,
    im2col_scratch,
    owned,
    plan_conv2d,
    product_calls,
    staging_scratch,
)
from .rows import apply_row, channel_row, fill_row


@dataclass
class HybridConv:
    """A hybrid (float32 input, int8 filter) CONV_2D: how it quantizes its input and scales back."""

    per_channel: bool  # asymmetric input quantization and per-channel filter scales (else symmetric)
    scales: np.ndarray  # float32 [O] (per_channel) or [1]: the filter scales
    reference: bool  # per channel, BUILTIN_REF / grouped: (acc * filter scale) * input scale
    low: float
    high: float
    arithmetic: HostArithmetic  # the host's: its SSE kernels' quirks on x86
    # per tensor, O % 4 != 0, x86 (TFLite's SSE dot product, not ruy): the im2col columns it multiplies
    # in 16-value blocks, where a weight of -128 meets a negative input with the wrong sign; 0: exact
    blocked: int = 0
    row_sums: bool = False  # per channel, optimized: the zero point times the weight rows' sums
    flipped: np.ndarray | None = None  # [1, K, O]: the weights of -128 the SSE kernel flips (constant)
    stale: np.ndarray | None = None  # float64 [O]: exact row sums - the ones TFLite uses (None: equal)
    used_sums: np.ndarray | None = None  # int64 [O]: the row sums TFLite took (runtime filter)
    # rows (rows.py) over one batch's outputs: per channel, the filter scales and a row for them times
    # the input scale; the bias (refilled when not constant)
    scale_row: np.ndarray | None = None
    factors: np.ndarray | None = None
    bias_row: np.ndarray | None = None
    bias_constant: bool = False
    product_as_calls: bool = False  # constant filter: the product is _hybrid_product_calls' calls
    quantizer: AsymmetricRowQuantizer | None = None  # per channel: the input's (common._input_quantizer)
    # where compiled kernels run, float32 sums: hybrid_compiled.scale_back, its order and filter scales
    scale_back: Callable | None = None
    order: int = 0
    channel_scales: np.ndarray | None = None
    # per channel, optimized (ruy): the filter's pairs that ARM's int16 pair sums wrap (rare)
    pairs: WeightPairs | None = None

    def split(self, raw: np.ndarray, layout, dtype):
        """The filter [O, ...] as the product's matrix, and the matrix of its flipped weights (or None)."""
        flat = raw.reshape(raw.shape[0], -1)
        parts = sign_transfer_split(flat, self.blocked) if self.blocked else None
        if parts is None:
            return np.ascontiguousarray(layout(raw.astype(dtype))), None
        kept, flipped = (np.ascontiguousarray(layout(p.reshape(raw.shape).astype(dtype))) for p in parts)
        return kept, flipped

    def stale_sums(self, raw: np.ndarray) -> np.ndarray | None:
        """Exact row sums minus the ones TFLite subtracts (taken from the filter of the first invoke
        after prepare; on x86, SseReductionSumVector's, wrapping in int16 lanes), or None when they agree."""
        flat = raw.reshape(raw.shape[0], -1)
        if self.used_sums is None:
            self.used_sums = self.arithmetic.hybrid_row_sums(flat)
        difference = flat.astype(np.int64).sum(axis=1) - self.used_sums
        return difference.astype(np.float64) if difference.any() else None


def plan_hybrid_conv2d(context, node, state, options, source, weights, bias, output, window, kernel_type):
    """CONV_2D of a float32 input with int8 weights: TFLite's EvalHybrid (per-tensor filter scale,
    symmetric input quantization) or EvalHybridPerChannel (distinct per-channel scales, or groups:
    asymmetric input quantization)."""
    op = "CONV_2D"
    if weights.type != TensorType.INT8:
        raise KernelError(
            f"{op} of a FLOAT32 input with {weights.type.name} weights (hybrid quantization) is not supported yet"
        )
    ensure_type(output, FLOAT, "output", op)
    ensure_type(bias, FLOAT, "bias", op)
    out_channels = weights.shape[0]
    groups = source.shape[3] // weights.shape[3]
    per_channel, scales = _hybrid_filter_scales(weights, groups)
    low, high = float_activation_range(options.fused_activation_function)
    reference = per_channel and (kernel_type is REFERENCE or groups != 1)
    hybrid = state.hybrid = HybridConv(per_channel, scales, reference, low, high, context.host.arithmetic)
    hybrid.quantizer = input_quantizer(source, per_channel)
    depth = int(np.prod(weights.shape[1:]))
    # Per tensor, both resolvers run optimized_ops::HybridConv: ruy (exact) when O % 4 == 0, else the SSE
    # kernel on x86 (NEON's, exact, on ARM); per channel, the optimized kernel subtracts zero point times
    # the row sums.
    hybrid.blocked = hybrid.arithmetic.sign_lost_columns(depth) if not per_channel and out_channels % 4 else 0
    hybrid.row_sums = per_channel and not reference
    constant = constant_data(weights)
    # |q - offset| <= 255 (asymmetric) or 127 (symmetric); the flipped weights' product is bounded by
    # the same sum of |w| (they are split off the filter)
    magnitude = 255 if per_channel else 127
    if constant is not None:
        bound = magnitude * int(np.abs(constant.astype(np.int64)).reshape(out_channels, -1).sum(axis=1).max())
    else:
        bound = magnitude * 128 * depth
    if hybrid.row_sums and constant is not None:  # ruy's product of the raw quantized input
        hybrid.pairs = weight_pairs(context.host, constant.reshape(out_channels, -1), False, 0, 0)
    # (the pairs' correction leaves the float32 range of exact integers)
    dtype = np.float64 if hybrid.pairs is not None else float_dtype(bound)
    matrix = None
    if constant is not None:
        matrix, hybrid.flipped = hybrid.split(constant, state.layout, dtype)
        if hybrid.row_sums:
            hybrid.stale = hybrid.stale_sums(constant)
    temporaries = plan_conv2d(
        context,
        state,
        source,
        out_channels,
        window,
        groups,
        matrix,
        None,
        dtype,
        np.dtype(dtype).itemsize,
    )
    _hybrid_scale_back(hybrid, scales, bias, out_channels, window.out[0] * window.out[1], dtype)
    pixels = source.shape[0] * window.out[0] * window.out[1]
    if pixels:
        # the quantized input, as the product's type (float32: quantized into it)
        scratch_tensor(context, state.wide, FLOAT_TYPES[np.dtype(dtype)], source.shape)
        scratch_tensor(context, state.acc, FLOAT_TYPES[np.dtype(dtype)], (pixels, out_channels))
        temporaries += [state.wide, state.acc]
        if matrix is not None:
            hybrid.product_as_calls = True
    set_temporaries(context, node, owned(state), temporaries)


def _hybrid_filter_scales(weights, groups: int) -> tuple[bool, np.ndarray]:
    """(per channel, float32 scales): TFLite's hybrid Prepare wants a scale per output channel; equal
    scales and no groups take the per-tensor arithmetic (one scale)."""
    op, out_channels = "CONV_2D", weights.shape[0]
    quantization = weights.quantization
    ensure(
        isinstance(quantization, AffineQuantization) and quantization.scale.size > 0,
        f"{op} hybrid filter must have affine quantization with scales",
    )
    scales = quantization.scale.astype(np.float32)
    axis = quantization.quantized_dimension
    ensure(
        axis == 0 and scales.size == out_channels,
        f"{op} hybrid filter has {scales.size} scales for {out_channels} output channels "
        f"(quantized dimension {axis})",
    )
    per_channel = bool(scales.size > 1 and np.any(scales != scales[0])) or groups != 1
    return per_channel, (
        np.broadcast_to(scales, (out_channels,)).astype(np.float32) if per_channel else scales[:1]
    )


def _hybrid_scale_back(hybrid, scales: np.ndarray, bias, out_channels: int, per_batch: int, dtype) -> None:
    """The rows the hybrid kernel scales its accumulators back with, and the compiled scale-back."""
    if hybrid.per_channel:
        hybrid.scale_row = channel_row(scales, per_batch)
        hybrid.factors = np.empty_like(hybrid.scale_row)
    if dtype == np.float32:
        hybrid.scale_back = compiled("quant.hybrid_compiled", "scale_back")
        hybrid.order = 1 if hybrid.reference else 0  # per tensor: acc * (input scale * filter scale)
        hybrid.channel_scales = np.broadcast_to(scales, (out_channels,)).astype(np.float32)
        hybrid.channel_scales.flags.writeable = False
    hybrid.bias_constant = constant_data(bias) is not None
    values = bias.data if hybrid.bias_constant else np.zeros(out_channels)
    hybrid.bias_row = channel_row(values, per_batch, np.float32)


def _hybrid_product_calls(state: ConvState, quantized, stage, col, acc) -> list:
    """The product of a hybrid CONV_2D with a constant filter into acc [pixels, O], as calls."""
    return product_calls(state, quantized, stage, col, state.weights, acc)


def hybrid_conv2d_invoke(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    hybrid = state.hybrid
    staged = tensors[state.wide].data
    into = staged if staged.dtype == np.float32 else None
    quantized, scales, zero_points = quantize_input(tensors[node.inputs[0]].data, hybrid.quantizer, into)
    if into is None:
        np.copyto(staged, quantized)
    quantized = staged
    w, flipped, stale = state.weights, hybrid.flipped, hybrid.stale
    if w is None:
        raw = tensors[node.inputs[1]].data
        w, flipped = hybrid.split(raw, state.layout, state.dtype)
        stale = hybrid.stale_sums(raw) if hybrid.row_sums else None
    batches, channels = out.shape[0], out.shape[-1]
    acc = tensors[state.acc].data
    if hybrid.product_as_calls:
        make_calls(
            _hybrid_product_calls(
                state, quantized, staging_scratch(tensors, state), im2col_scratch(tensors, state), acc
            )
        )
    else:
        conv_product(tensors, state, quantized, w, acc.reshape(-1, channels))
    if hybrid.pairs is not None:  # the windows the product read, back to TFLite's raw values
        pixels = acc.shape[0]
        col = im2col_scratch(tensors, state)
        windows = quantized.reshape(pixels, -1) if col is None else col.T if state.mode == "im2col_t" else col
        raw = windows.reshape(pixels, -1) + np.repeat(zero_points, pixels // batches)[:, None]
        acc -= hybrid.pairs.correction(raw)
    rows = out.reshape(batches, -1)  # a batch's outputs, [OH*OW*C]
    sums = acc.reshape(rows.shape)
    if flipped is not None:  # the SSE kernel's -128 * |x| (rare: computed apart, exact)
        extra = np.empty_like(acc)
        conv_product(tensors, state, np.abs(quantized), flipped, extra.reshape(-1, channels))
        np.add(acc, extra, out=acc)
    if stale is not None:  # TFLite's int32 accumulators, in float64 (exact), then cast to float32
        sums = sums.reshape(batches, -1, channels) + zero_points[:, None, None] * stale
        sums = sums.reshape(rows.shape)
    if hybrid.scale_back is not None and sums.dtype == np.float32:
        shaped = out.reshape(batches, -1, channels)
        low, high = np.float32(hybrid.low), np.float32(hybrid.high)
        bias = read_only(tensors[node.inputs[2]].data.reshape(-1))
        sums = sums.reshape(shaped.shape)
        hybrid.scale_back(
            sums, scales, hybrid.channel_scales, hybrid.order, channels, bias, True, low, high, shaped
        )
        return
    if sums.dtype != np.float32:
        np.copyto(rows, sums, casting="unsafe")  # float(int32 accumulator)
        sums = rows
    bias_row = hybrid.bias_row
    if not hybrid.bias_constant:
        fill_row(bias_row, tensors[node.inputs[2]].data)
    for batch, (total, result) in enumerate(zip(sums, rows)):
        scale = scales[batch]
        if not hybrid.per_channel:  # MatrixBatchVectorMultiplyAccumulate: acc * (input scale * filter scale)
            np.multiply(total, scale * hybrid.scales[0], out=result)
        elif hybrid.reference:  # reference HybridConvPerChannel: acc * filter scale * input scale
            apply_row(np.multiply, total, hybrid.scale_row, result)
            np.multiply(result, scale, out=result)
        else:  # optimized HybridConvPerChannel: acc * (filter scale * input scale)
            np.multiply(hybrid.scale_row, scale, out=hybrid.factors)
            apply_row(np.multiply, total, hybrid.factors, result)
        apply_row(np.add, result, bias_row, result)
    if hybrid.low > -np.inf or hybrid.high < np.inf:
        clip(rows, np.float32(hybrid.low), np.float32(hybrid.high), out=rows)


def hybrid_conv2d_calls(context, node, state: ConvState) -> tuple | None:
    hybrid = state.hybrid
    if hybrid.scale_back is None or not hybrid.product_as_calls or hybrid.quantizer is None:
        return None
    if hybrid.flipped is not None or hybrid.stale is not None:
        return None
    tensors = context.tensors
    x, out, staged, acc = (tensors[i].data for i in (node.inputs[0], node.outputs[0], state.wide, state.acc))
    kernel = hybrid.quantizer.compiled_kernel
    if kernel is None or out.size == 0 or not (x.flags.c_contiguous and acc.dtype == np.float32):
        return None
    quantize, scales, zero_points = kernel
    batches, channels = out.shape[0], out.shape[-1]
    values, quantized = x.reshape(batches, -1), staged.reshape(batches, -1)
    product = _hybrid_product_calls(
        state, staged, staging_scratch(tensors, state), im2col_scratch(tensors, state), acc
    )
    shaped = out.reshape(batches, -1, channels)
    scale_back = partial(
        hybrid.scale_back,
        acc.reshape(shaped.shape),
        scales,
        hybrid.channel_scales,
        hybrid.order,
        channels,
        read_only(tensors[node.inputs[2]].data.reshape(-1)),
        True,
        np.float32(hybrid.low),
        np.float32(hybrid.high),
        shaped,
    )

    def hybrid_conv():
        if not quantize(values, quantized, scales, zero_points, True):
            hybrid_conv2d_invoke(context, node, state)
            return
        for call in product:
            call()
        scale_back()

    return (hybrid_conv,)

"""CONV_2D: float, integer (uint8, int8, int16x8 activations) and hybrid (float32 input, int8 weights)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...core.quantization import AffineQuantization
from ...core.types import BuiltinOperator, TensorType, storage_dtype
from ...errors import KernelError, ensure, ensure_eq, ensure_type
from ...fidelity.arithmetic import HostArithmetic
from ...fidelity.eigen_order import eigen_product_is_sequential
from ...fidelity.neon_pairs import WeightPairs, weight_pairs
from ...fidelity.ruy import gemm_rounding
from ...fidelity.sse import sign_transfer_split
from ..common import (
    activation_clamp,
    check_arity,
    clip,
    float_activation_range,
    input_tensor,
    output_tensor,
    scratch_tensor,
    set_temporaries,
)
from ..jit import compiled, read_only
from ..kernel_type import OPTIMIZED, REFERENCE, KernelType
from ..quant.hybrid_inputs import AsymmetricRowQuantizer
from ..registry import register_builtin
from ..windows import plan_window
from .common import (
    CONV_TYPES,
    FLOAT,
    FLOAT_TYPES,
    INTEGER,
    check_uint8_bias_scale,
    constant_data,
    declared_bias_type,
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
from .im2col import (
    ConvState,
    conv_compute,
    conv_draft,
    conv_init,
    conv_product,
    float_program,
    im2col_scratch,
    owned,
    plan_conv,
    plan_float_bias,
    product_calls,
    staging_scratch,
)
from .program import Program
from .requant import Requant
from .rows import apply_row, channel_row, fill_row


@dataclass
class IntegerConv:
    """A quantized CONV_2D's own plan: its requantization and the zero-point terms of its bias."""

    requant: Requant
    input_zero_point: int  # the padding holds it; sum(w * (x - zp)) = sum(w * x) - zp * sum(w)
    filter_offset: int  # uint8 filters: subtracted from the weights
    dtype: Any
    bias: np.ndarray | None = None  # int64 [O]: bias - zp * sum(w), for a constant bias and filter
    sums: np.ndarray | None = None  # int64 [O]: sum(w) per output channel, for a constant filter
    scaled: bool = False  # the product is the requantized value before its floor (Requant.finish)
    program: Program | None = None  # constant filter: the product as calls (program.py)
    requantizes: bool = False  # and the requantization too (constant terms, float64 arithmetic)
    # ARM's ruy / gemmlowp kernels add product pairs in int16: the filter's pairs that wrap (rare)
    pairs: WeightPairs | None = None

    def weights(self, filt: np.ndarray, layout: Callable[[np.ndarray], np.ndarray]):
        """The filter as the product's float matrix, and its sum per output channel."""
        values = filt.astype(np.int64) - self.filter_offset
        sums = values.reshape(values.shape[0], -1).sum(axis=1)
        return np.ascontiguousarray(layout(values.astype(self.dtype))), sums

    def bias_terms(self, bias: np.ndarray | None, sums: np.ndarray) -> np.ndarray:
        terms = -self.input_zero_point * sums
        return terms if bias is None else terms + bias.reshape(-1).astype(np.int64)


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
    product: Program | None = None  # constant filter: the calls of the product
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


# A quantized CONV_2D whose windows hold at most this many values, no more than it has output channels
# and no more than 8 per output pixel, folds its requantization into a float64 product (two passes over
# the output saved); the others keep a float32 im2col and product (half the cost of the copy, of the
# weights' reads and of the product) and requantize after it.
_SCALED_DEPTH = 128


def _conv2d_common(context, node):
    """The checks and geometry every CONV_2D variant shares."""
    check_arity(node, (2, 3))
    options = node.builtin_data
    ensure(len(node.inputs) == 3, "has_bias was not true.")  # TFLite's CONV_2D always needs its bias
    source, weights, bias = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_type(source, CONV_TYPES, "input", "CONV_2D")
    ensure_eq(len(source.shape), 4, "CONV_2D input rank")
    ensure_eq(len(weights.shape), 4, "CONV_2D filter rank")
    _, h, w, channels = source.shape
    out_channels, kh, kw, filter_channels = weights.shape
    for size, condition in (  # TFLite's checks, in its order
        (h, "input->dims->data[1] > 0"),
        (w, "input->dims->data[2] > 0"),
        (channels, "input_channel > 0"),
        (kh, "filter->dims->data[1] > 0"),
        (kw, "filter->dims->data[2] > 0"),
        (out_channels, "filter->dims->data[0] > 0"),
        (filter_channels, "filter_input_channel > 0"),
    ):
        ensure(size > 0, f"{condition} was not true.")
    ensure_eq(channels % filter_channels, 0, "CONV_2D input channels % filter input channels")
    groups = channels // filter_channels
    ensure_eq(out_channels % groups, 0, "CONV_2D output channels % groups")
    count = int(np.prod(bias.shape, dtype=np.int64))
    ensure_eq(count, out_channels, "CONV_2D bias size")
    dilation = (options.dilation_h_factor, options.dilation_w_factor)
    window = plan_window(options, (h, w), (kh, kw), dilation, checked=True)
    per_group = out_channels // groups

    def layout(filt: np.ndarray) -> np.ndarray:  # [O, KH, KW, Cg] -> [G, KH*KW*Cg, O/G]
        return filt.reshape(groups, per_group, -1).transpose(0, 2, 1)

    return options, source, weights, bias, output, window, layout


def conv2d_prepare(kernel_type: KernelType):
    def prepare(context, node):
        options, source, weights, bias, output, window, layout = _conv2d_common(context, node)
        state = conv_draft(node)
        state.layout = layout
        context.resize_tensor(output, (source.shape[0], *window.out, weights.shape[0]))
        if source.type in INTEGER:
            _conv2d_integer(context, node, state, options, source, weights, bias, output, window, kernel_type)
        elif weights.type in (TensorType.INT8, TensorType.UINT8, TensorType.INT4):
            _conv2d_hybrid(context, node, state, options, source, weights, bias, output, window, kernel_type)
        else:
            _conv2d_float(context, node, state, options, source, weights, bias, output, window, kernel_type)
        state.weights = shared_constant(context, node, "weights", state.weights)
        if state.bias_constant:
            state.bias_row = shared_constant(context, node, "bias row", state.bias_row)
        node.user_data = ConvState(**vars(state))

    return prepare


def _plan_conv2d(context, state, source, out_channels: int, window, groups: int, matrix, *args, **kwargs):
    """plan_conv (im2col.py) for a 2-D window: its geometry from the WindowGeometry."""
    pads = (window.pads[0][0], window.pads[1][0])
    geometry = (window.out, window.kernel, window.strides, window.dilation, pads)
    return plan_conv(
        context, state, tuple(source.shape), out_channels, *geometry, groups, matrix, *args, **kwargs
    )


# From this many output channels, the compiled exact CONV_2D runs its loop along them (conv_float); with
# fewer, along rows of pixels (conv_float_by_pixels: 8 channels of 24x24 pixels, 52 -> 2x faster)
_COMPILED_EXACT_UNITS = 32


def _conv2d_float(context, node, state, options, source, weights, bias, output, window, kernel_type):
    """The float32 CONV_2D: im2col and one matrix product per group (or LiteRT's order, im2col.py)."""
    out_channels = weights.shape[0]
    groups = source.shape[3] // weights.shape[3]
    for tensor, role in ((weights, "filter"), (output, "output"), (bias, "bias")):
        ensure_type(tensor, FLOAT, role, "CONV_2D")
    constant = constant_data(weights)
    matrix = state.layout(constant) if constant is not None else None
    temporaries = _plan_conv2d(
        context,
        state,
        source,
        out_channels,
        window,
        groups,
        matrix,
        constant_data(bias) if matrix is not None else None,
        exact=context.exact_float_summation,
    )
    # LiteRT runs its reference kernel for groups; Eigen's blocking depends on the host's caches
    state.eigen = context.host.caches_for_eigen if kernel_type is OPTIMIZED and groups == 1 else None
    pixels = source.shape[0] * window.out[0] * window.out[1]
    depth = int(np.prod(weights.shape[1:]))
    if (
        state.mode == "exact"
        and groups == 1
        and (state.eigen is None or eigen_product_is_sequential(depth, out_channels, pixels, state.eigen))
    ):
        # conv_float's loop runs along the output channels: with few of them, along rows of pixels
        state.compiled_by_pixels = out_channels < _COMPILED_EXACT_UNITS
        name = "conv_float_by_pixels" if state.compiled_by_pixels else "conv_float"
        state.compiled_exact = compiled("conv.conv2d_compiled", name)
        pads = (window.pads[0][0], window.pads[1][0])
        state.geometry = (window.kernel, (*window.strides, *window.dilation, *pads))
    plan_float_bias(state, bias, pixels)
    set_temporaries(context, node, owned(state), temporaries)
    state.clamp = activation_clamp(options.fused_activation_function)
    state.program = float_program(state)


def _conv2d_integer(context, node, state, options, source, weights, bias, output, window, kernel_type):
    """CONV_2D with uint8, int8 or int16 activations: the exact accumulators through ruy's (or, grouped
    and in BUILTIN_REF, the reference kernel's) requantization."""
    op = "CONV_2D"
    out_channels = weights.shape[0]
    _check_integer_conv2d(options, source, weights, bias, output)
    uint8 = source.type == TensorType.UINT8
    multiplier, shift = output_multipliers(
        source, weights, output, out_channels, op, per_tensor_product=uint8
    )
    low, high = output_activation_range(options, output)
    groups = source.shape[3] // weights.shape[3]
    rounding = _integer_rounding(context, source, weights, bias, window, kernel_type, groups)
    offset = filter_zero_offset(weights)
    magnitude = input_magnitude(source)
    zero_point = source.params.zero_point
    constant = constant_data(weights)
    if constant is not None:
        sums_abs = np.abs(constant.astype(np.int64) - offset).reshape(out_channels, -1).sum(axis=1)
        bound = magnitude * int(sums_abs.max(initial=0))
    else:
        bound = magnitude * int(np.prod(weights.shape[1:])) * (255 if uint8 else 128)
    pairs = None
    if constant is not None and kernel_type is OPTIMIZED and groups == 1 and rounding in ("neon", "scalar"):
        pairs = weight_pairs(context.host, constant.reshape(out_channels, -1), uint8, offset, zero_point)
    # (the pairs' correction leaves the float32 range of exact integers)
    dtype = np.float64 if pairs is not None else float_dtype(bound)
    constant_bias = constant_data(bias)
    wrap = rounding != "wide" and may_leave_int32(source, bound // magnitude, constant_bias)
    out_dtype = storage_dtype(output.type)
    requant = Requant(multiplier, shift, output.params.zero_point, low, high, out_dtype, rounding, wrap=wrap)
    requant.product_bound = bound  # the staged input is raw: |x| <= magnitude
    integer = IntegerConv(requant, zero_point, offset, dtype, pairs=pairs)
    matrix = fold = None
    if constant is not None:
        matrix, integer.sums = integer.weights(constant, state.layout)
        if constant_bias is not None:
            integer.bias = integer.bias_terms(constant_bias, integer.sums)
            requant.share_constants(context, node, integer.bias)
            matrix, fold = _fold_requantization(integer, requant, matrix, source, weights, window, groups)
            dtype = integer.dtype  # float64 where the requantization was folded in
    state.integer = integer
    state.pad_value = zero_point
    temporaries = _plan_conv2d(
        context,
        state,
        source,
        out_channels,
        window,
        groups,
        matrix,
        fold,  # otherwise the bias terms are added to the exact accumulators
        dtype,
        storage_dtype(source.type).itemsize,
        direct=False,  # im2col converts the integers to floats
    )
    pixels = source.shape[0] * window.out[0] * window.out[1]
    if pixels:
        scratch_tensor(context, state.acc, FLOAT_TYPES[np.dtype(dtype)], (pixels, out_channels))
        temporaries.append(state.acc)
        # int64 accumulators, or the scaled product's lifted integers (Requant.finish_calls)
        wide_type = TensorType.INT32 if integer.scaled else TensorType.INT64
        scratch_tensor(context, state.wide, wide_type, (pixels, out_channels))
        temporaries.append(state.wide)
    if not integer.scaled:
        requant.prepare(pixels, integer.bias)
    if pixels and matrix is not None and pairs is None:
        integer.requantizes = integer.scaled or requant.float_path(integer.bias)
        integer.program = Program(_integer_calls)
    set_temporaries(context, node, owned(state), temporaries)


def _check_integer_conv2d(options, source, weights, bias, output) -> None:
    """TFLite's Prepare checks of a quantized CONV_2D, and the bias type its 16x8 kernel reads."""
    op = "CONV_2D"
    wide_types = (
        (TensorType.INT32, TensorType.INT64) if source.type == TensorType.INT16 else (TensorType.INT32,)
    )
    integer_checks(source, weights, bias, output, op, wide_types)
    if source.type == TensorType.INT16:
        chosen = declared_bias_type(options, bias, op)
        # TFLite's 16x8 kernel reads the bias as int64 unless quantized_bias_type says INT32
        ensure(
            bias.type == TensorType.INT64 or chosen == TensorType.INT32,
            f"{op} with int16 input and an INT32 bias needs quantized_bias_type INT32 "
            "(TFLite would read the bias as int64)",
        )
    if source.type == TensorType.UINT8:
        check_uint8_bias_scale(source, weights, bias, output, op)


def _integer_rounding(context, source, weights, bias, window, kernel_type: KernelType, groups: int) -> str:
    """The requantization of the kernel LiteRT runs: an int64 bias and grouped convolutions take the
    reference kernel ("wide", "scalar"), the rest cpu_backend_gemm (fidelity/ruy.py, by host and shape)."""
    if bias.type == TensorType.INT64:
        return "wide"
    if kernel_type is OPTIMIZED and groups == 1:
        return gemm_rounding(
            context.host,
            int16=source.type == TensorType.INT16,
            uint8=source.type == TensorType.UINT8,
            one_column=source.shape[0] * window.out[0] * window.out[1] == 1,
            rows=weights.shape[0],
            depth=int(np.prod(weights.shape[1:])),
        )
    return "scalar"


def _fold_requantization(integer, requant, matrix, source, weights, window, groups: int):
    """(matrix, fold): where it pays, the requantization's float64 affine map rides in the product (the
    weights scaled by m', the constant c' in a row of the weights, exact for the same reason) and
    `integer` is marked scaled; else the matrix as it was and no fold."""
    fast = requant.float_constants(integer.bias)
    depth, out_channels = int(np.prod(weights.shape[1:])), weights.shape[0]
    pixels = source.shape[0] * window.out[0] * window.out[1]
    # (where compiled kernels run, requantizing costs one pass: a float32 product is faster)
    folds = compiled("conv.requant_compiled", "requantize") is None
    small = depth <= min(_SCALED_DEPTH, out_channels, 8 * pixels)
    if not (folds and fast is not None and small and integer.pairs is None):
        return matrix, None
    integer.dtype = np.float64
    integer.scaled = True
    return matrix.astype(np.float64) * fast.scale.reshape(groups, 1, -1), fast.constant


def _conv2d_hybrid(context, node, state, options, source, weights, bias, output, window, kernel_type):
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
    temporaries = _plan_conv2d(
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
            hybrid.product = Program(_hybrid_product_calls)
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
    """The product of a hybrid CONV_2D with a constant filter into acc [pixels, O], as calls (program.py)."""
    return product_calls(state, quantized, stage, col, state.weights, acc)


def _conv2d_hybrid_invoke(context, node, state: ConvState) -> None:
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
    if hybrid.product is not None:
        hybrid.product.run(
            state, quantized, staging_scratch(tensors, state), im2col_scratch(tensors, state), acc
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


def _integer_calls(state: ConvState, x, out, stage, col, acc, wide) -> list:
    """A quantized CONV_2D's product with its constant filter, and its requantization where that is
    float64 arithmetic on constant terms, as calls (program.py)."""
    integer = state.integer
    calls = product_calls(state, x, stage, col, state.weights, acc)  # acc: [pixels, O]
    if integer.scaled:
        return calls + integer.requant.finish_calls(acc, out, wide, integer.bias)
    if integer.requantizes:
        shaped = acc.reshape(out.shape)
        calls += integer.requant.float_calls(shaped, integer.bias, wide.reshape(out.shape), out)
    return calls


def _conv2d_integer_invoke(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    integer = state.integer
    x, acc = tensors[node.inputs[0]].data, tensors[state.acc].data
    wide = tensors[state.wide].data
    if integer.program is not None:
        integer.program.run(
            state, x, out, staging_scratch(tensors, state), im2col_scratch(tensors, state), acc, wide
        )
        if integer.requantizes:
            return
        terms = integer.bias
        if terms is None:
            terms = integer.bias_terms(tensors[node.inputs[2]].data, integer.sums)
    else:
        w, sums = integer.weights(tensors[node.inputs[1]].data, state.layout)
        terms = integer.bias_terms(tensors[node.inputs[2]].data, sums)
        conv_product(tensors, state, x, w, acc)
        if integer.pairs is not None:  # the windows the product read: im2col's [pixels, K] (or [K, pixels])
            col = im2col_scratch(tensors, state)
            windows = col.T if state.mode == "im2col_t" else col.reshape(acc.shape[0], -1)
            acc -= integer.pairs.correction(windows)
    integer.requant.requantize(acc.reshape(out.shape), terms, wide.reshape(out.shape), out)


def conv2d_invoke(context, node):
    state = node.user_data
    if state.integer is not None:
        _conv2d_integer_invoke(context, node, state)
    elif state.hybrid is not None:
        _conv2d_hybrid_invoke(context, node, state)
    else:
        conv_compute(context, node, state)


def conv2d_bind(context, node):
    """A hybrid CONV_2D with compiled kernels, a constant filter and exact row sums, for the memory its
    tensors have now: the input's quantization, the product's calls and the scaling back on arrays found
    once (Registration.bind); any other runs conv2d_invoke."""
    state = node.user_data
    hybrid = state.hybrid
    if hybrid is None or hybrid.scale_back is None or hybrid.product is None or hybrid.quantizer is None:
        return conv2d_invoke
    if hybrid.flipped is not None or hybrid.stale is not None:
        return conv2d_invoke
    tensors = context.tensors
    x, out, staged, acc = (tensors[i].data for i in (node.inputs[0], node.outputs[0], state.wide, state.acc))
    kernel = hybrid.quantizer.compiled_kernel
    if kernel is None or out.size == 0 or not (x.flags.c_contiguous and acc.dtype == np.float32):
        return conv2d_invoke
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

    def step(context, node):
        if not quantize(values, quantized, scales, zero_points, True):
            return conv2d_invoke(context, node)
        for call in product:
            call()
        scale_back()

    return step


# BUILTIN_REF's kernels differ in how they round quantized outputs (the float ones are the same here)
register_builtin(
    BuiltinOperator.CONV_2D,
    (1, 8),
    types=CONV_TYPES,
    init=conv_init,
    op_data=ConvState,
    prepare_for=conv2d_prepare,
    invoke=conv2d_invoke,
    bind=conv2d_bind,
)

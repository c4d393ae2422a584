"""CONV_2D: float, integer (uint8, int8, int16x8 activations) and hybrid (float32 input, int8 weights)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...core.types import BuiltinOperator, TensorType, storage_dtype
from ...errors import ensure, ensure_eq, ensure_type
from ...fidelity.eigen_order import eigen_product_is_sequential
from ...fidelity.neon_pairs import WeightPairs, weight_pairs
from ...fidelity.ruy import gemm_rounding
from ..common import (
    activation_clamp,
    check_arity,
    input_tensor,
    make_calls,
    output_tensor,
    scratch_tensor,
    set_temporaries,
)
from ..jit import compiled
from ..kernel_type import OPTIMIZED, KernelType
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
    exact_depth_chunks,
    filter_zero_offset,
    float_dtype,
    input_magnitude,
    integer_checks,
    may_leave_int32,
    output_activation_range,
    output_multipliers,
    shared_constant,
)
from .conv2d_hybrid import hybrid_conv2d_calls, hybrid_conv2d_invoke, plan_hybrid_conv2d
from .im2col import (
    ConvState,
    conv_compute,
    conv_draft,
    conv_init,
    conv_product,
    float_calls,
    im2col_scratch,
    made_of_calls,
    owned,
    plan_conv2d,
    plan_float_bias,
    product_calls,
    staging_scratch,
)
from .requant import Requant


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
    as_calls: bool = False  # constant filter: the product is _integer_calls' calls
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
            plan_hybrid_conv2d(
                context, node, state, options, source, weights, bias, output, window, kernel_type
            )
        else:
            _conv2d_float(context, node, state, options, source, weights, bias, output, window, kernel_type)
        state.weights = shared_constant(context, node, "weights", state.weights)
        if state.bias_constant:
            state.bias_row = shared_constant(context, node, "bias row", state.bias_row)
        node.user_data = ConvState(**vars(state))

    return prepare


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
    temporaries = plan_conv2d(
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
    state.as_calls = made_of_calls(state)


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
    pixels = source.shape[0] * window.out[0] * window.out[1]
    chunks = ()
    if matrix is not None and fold is None and pairs is None and groups == 1 and dtype == np.float64:
        chunks = exact_depth_chunks(matrix[0], magnitude)
    temporaries = plan_conv2d(
        context,
        state,
        source,
        out_channels,
        window,
        groups,
        matrix,
        fold,  # otherwise the bias terms are added to the exact accumulators
        np.float32 if chunks else dtype,  # im2col's, the weights' (the product's is `dtype`)
        storage_dtype(source.type).itemsize,
        direct=False,  # im2col converts the integers to floats
    )
    if chunks and pixels:
        state.depth_chunks = chunks
        state.chunk_product = np.empty((pixels, out_channels), np.float32)
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
        integer.as_calls = True
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


def _integer_calls(state: ConvState, x, out, stage, col, acc, wide) -> list:
    """A quantized CONV_2D's product with its constant filter, and its requantization where that is
    float64 arithmetic on constant terms, as calls."""
    integer = state.integer
    calls = product_calls(state, x, stage, col, state.weights, acc)  # acc: [pixels, O]
    if integer.scaled:
        return calls + integer.requant.finish_calls(acc, out, wide, integer.bias)
    if integer.requantizes:
        shaped = acc.reshape(out.shape)
        calls += integer.requant.float_calls(shaped, integer.bias, wide.reshape(out.shape), out)
    return calls


def _integer_node_calls(context, node) -> tuple:
    """A quantized CONV_2D with a constant filter (IntegerConv.as_calls) as calls on the node's arrays:
    _integer_calls, then the requantization where they leave it out."""
    tensors = context.tensors
    state = node.user_data
    integer = state.integer
    out = tensors[node.outputs[0]].data
    x, acc, wide = (tensors[i].data for i in (node.inputs[0], state.acc, state.wide))
    calls = _integer_calls(
        state, x, out, staging_scratch(tensors, state), im2col_scratch(tensors, state), acc, wide
    )
    if integer.requantizes:
        return tuple(calls)
    shaped, wide = acc.reshape(out.shape), wide.reshape(out.shape)
    if integer.bias is not None:
        return (*calls, partial(integer.requant.requantize, shaped, integer.bias, wide, out))
    bias = tensors[node.inputs[2]].data

    def requantize():
        integer.requant.requantize(shaped, integer.bias_terms(bias, integer.sums), wide, out)

    return (*calls, requantize)


def _conv2d_integer_invoke(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    integer = state.integer
    if integer.as_calls:
        make_calls(_integer_node_calls(context, node))
        return
    x, acc = tensors[node.inputs[0]].data, tensors[state.acc].data
    w, sums = integer.weights(tensors[node.inputs[1]].data, state.layout)
    terms = integer.bias_terms(tensors[node.inputs[2]].data, sums)
    conv_product(tensors, state, x, w, acc)
    if integer.pairs is not None:  # the windows the product read: im2col's [pixels, K] (or [K, pixels])
        col = im2col_scratch(tensors, state)
        windows = col.T if state.mode == "im2col_t" else col.reshape(acc.shape[0], -1)
        acc -= integer.pairs.correction(windows)
    integer.requant.requantize(
        acc.reshape(out.shape), terms, tensors[state.wide].data.reshape(out.shape), out
    )


def conv2d_invoke(context, node):
    state = node.user_data
    if state.integer is not None:
        _conv2d_integer_invoke(context, node, state)
    elif state.hybrid is not None:
        hybrid_conv2d_invoke(context, node, state)
    else:
        conv_compute(context, node, state)


def conv2d_calls(context, node):
    """Registration.calls: a float or quantized CONV_2D with a constant filter, its calls on the node's
    arrays (float_calls, _integer_node_calls); a hybrid one with compiled kernels and exact row sums,
    the input's quantization, the product's calls and the scaling back (_hybrid_calls); any other runs
    conv2d_invoke."""
    state = node.user_data
    if state.integer is not None:
        if not state.integer.as_calls:
            return None
        return () if context.tensors[node.outputs[0]].data.size == 0 else _integer_node_calls(context, node)
    if state.hybrid is not None:
        return hybrid_conv2d_calls(context, node, state)
    return float_calls(context, node)


# BUILTIN_REF's kernels differ in how they round quantized outputs (the float ones are the same here)
register_builtin(
    BuiltinOperator.CONV_2D,
    (1, 8),
    types=CONV_TYPES,
    init=conv_init,
    op_data=ConvState,
    prepare_for=conv2d_prepare,
    invoke=conv2d_invoke,
    calls=conv2d_calls,
)

"""The convolutions: the temporaries LiteRT 2.3's CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and
CONV_3D_TRANSPOSE kernels add at their first prepare, and which of these nodes XNNPACK takes.

CONV_2D's optimized kernel (x86 builds use the multithreaded one, not ruy) either transposes a float
filter once for Eigen ("Conv_hwcn_weights", with more than one thread, no dilation and a filter known
before invoke) or unfolds the input windows into an im2col buffer whenever the window is not a plain
1x1 stride-1 one; the reference kernel needs im2col for hybrid nodes only. Hybrid nodes (float input,
8-bit filter) quantize their input on the fly: the quantized input, per-row scaling factors and
accumulators, and for per-channel filters with distinct scales also input offsets and cached row sums.
No 1 GB im2col limit applies on this platform (it is for mobile builds). DEPTHWISE_CONV_2D only has the
hybrid scratch. TRANSPOSE_CONV's optimized kernel keeps a col2im product and the filter transposed to
HWOI, quantized ones an output-shaped accumulator, hybrid ones the quantization scratch; CONV_3D's
optimized kernel an im2col buffer, CONV_3D_TRANSPOSE's a col2im. Buffers sized from a computed output
shape or transposed from a computed filter are left dynamic and unsized until Eval, so not listed.

XNNPACK never takes a hybrid DEPTHWISE_CONV_2D (its filter type must be the input's), and the other
depthwise nodes have no temporaries, so DEPTHWISE_CONV_2D needs no claim; nor do the 3-D ones (no
XNNPACK support).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...core.quantization import AffineQuantization
from ...core.types import BuiltinOperator, TensorType
from ...model.options import Padding
from . import LiteRTKernels, Temporary, emulates, hybrid_input_scratch, input_tensor
from .xnnpack import (
    clamping_activation,
    float_or_channelwise_int8,
    float_or_quantized_8bit,
    is_float,
    positive_shape,
    producer,
    quantized_int32,
    static_or_unpacked,
)

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node
    from ...core.tensor import Tensor

_QUANTIZED = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)
_HYBRID_FILTERS = (TensorType.UINT8, TensorType.INT8, TensorType.INT4)  # with a float input


def _distinct_scales(weights: Tensor) -> bool:
    """Per-channel scales that are not all equal (what makes a hybrid CONV_2D per channel)."""
    quantization = weights.quantization
    return isinstance(quantization, AffineQuantization) and bool(
        np.any(quantization.scale != quantization.scale[0])
    )


def _static_bias(context: Context, bias: int) -> bool:
    """XNNPACK's bias checks: static (or unpacked by XNNPACK), 1-D, float or quantized int32."""
    tensor = context.tensors[bias]
    return (
        static_or_unpacked(context, bias)
        and positive_shape(tensor, 1)
        and (is_float(tensor) or quantized_int32(tensor))
    )


def _filter_before_invoke(context: Context, index: int) -> bool:
    """Whether LiteRT has the filter before invoke (not an arena tensor): a constant, or a DEQUANTIZE
    of one (its kernel keeps that output persistent). pytflite computes more ahead of time than LiteRT
    (any op of constants), so its allocation types cannot tell."""
    if context.tensors[index].is_constant:
        return True
    op, source = producer(context, index)
    return op == BuiltinOperator.DEQUANTIZE and source.is_constant


# --- CONV_2D -----------------------------------------------------------------------------------------


def _conv2d_xnnpack_takes(context: Context, node: Node) -> bool:
    """VisitConv2DNode: float, per-tensor 8-bit or dynamically quantized (float input, int8 filter)
    convolutions with static weights and a bias, 4-D, with a clamping activation."""
    if len(node.inputs) != 3 or len(node.outputs) != 1 or min(node.inputs) < 0:
        return False
    source, weights = context.tensors[node.inputs[0]], context.tensors[node.inputs[1]]
    output = context.tensors[node.outputs[0]]
    if not all(positive_shape(tensor, 4) for tensor in (source, weights, output)):
        return False
    if not (float_or_quantized_8bit(source) and float_or_quantized_8bit(output)):
        return False
    if not float_or_channelwise_int8(weights, 0):
        return False
    bias = context.tensors[node.inputs[2]]
    if not static_or_unpacked(context, node.inputs[1]) or not _static_bias(context, node.inputs[2]):
        return False
    if is_float(weights) and bias.type != weights.type:
        return False
    dynamically_quantized = source.type == TensorType.FLOAT32 and weights.type == TensorType.INT8
    if source.type != output.type or (source.type != weights.type and not dynamically_quantized):
        return False
    options = node.builtin_data
    return source.shape[3] // weights.shape[3] > 0 and clamping_activation(options.fused_activation_function)


@emulates(BuiltinOperator.CONV_2D, xnnpack=_conv2d_xnnpack_takes)
def conv2d_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = context.tensors[node.outputs[0]]
    options = node.builtin_data
    hybrid = source.type == TensorType.FLOAT32 and weights.type in _HYBRID_FILTERS
    dilated = options.dilation_h_factor != 1 or options.dilation_w_factor != 1
    windowed = dilated or options.stride_h != 1 or options.stride_w != 1 or weights.shape[1:3] != (1, 1)
    optimized = kernels is LiteRTKernels.BUILTIN
    # Eigen's multithreaded float path: no dilation, no hybrid, a filter LiteRT has before invoke
    hwcn = (
        optimized
        and source.type == TensorType.FLOAT32
        and not hybrid
        and not dilated
        and context.recommended_num_threads != 1
        and _filter_before_invoke(context, node.inputs[1])
    )
    batches, out_height, out_width, channels_out = output.shape
    window = math.prod(weights.shape[1:])
    temporaries = []
    if windowed and not hwcn and (optimized or hybrid):
        im2col_type = source.type
        if hybrid:  # it unfolds its quantized input: int8 for an int4 filter, else the filter's type
            im2col_type = TensorType.INT8 if weights.type == TensorType.INT4 else weights.type
        temporaries.append(Temporary("im2col", im2col_type, (batches, out_height, out_width, window)))
    if hwcn:
        temporaries.append(
            Temporary("hwcn_weights", source.type, (window, channels_out), "Conv_hwcn_weights")
        )
    if hybrid:
        groups = source.shape[3] // weights.shape[3]
        rows = math.prod(source.shape[:3]) * groups
        temporaries += hybrid_input_scratch(source.shape, rows)
        temporaries.append(
            Temporary("accum_scratch", TensorType.INT32, (channels_out, batches * out_height * out_width))
        )
        if weights.type != TensorType.UINT8 and _distinct_scales(weights):
            temporaries.append(Temporary("input_offsets", TensorType.INT32, (rows,)))
            temporaries.append(Temporary("row_sums", TensorType.INT32, (channels_out,), "Conv_row_sums"))
    return tuple(temporaries)


# --- DEPTHWISE_CONV_2D -------------------------------------------------------------------------------


@emulates(BuiltinOperator.DEPTHWISE_CONV_2D)
def depthwise_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    if source.type != TensorType.FLOAT32 or weights.type != TensorType.INT8:
        return ()
    batches = source.shape[0]
    return (
        *hybrid_input_scratch(source.shape, batches),
        Temporary("input_offsets", TensorType.INT32, (batches,)),
    )


# --- TRANSPOSE_CONV ----------------------------------------------------------------------------------


def _transpose_conv_xnnpack_takes(context: Context, node: Node) -> bool:
    """VisitTransposeConvNode: a constant 4-element output shape, static weights, float, per-tensor
    8-bit or dynamically quantized, an activation it clamps, and paddings it can express."""
    if len(node.inputs) not in (3, 4) or len(node.outputs) != 1:
        return False
    shape, weights, source = (input_tensor(context, node, i) for i in range(3))
    output = context.tensors[node.outputs[0]]
    if shape.type != TensorType.INT32 or not shape.is_constant or shape.shape != (4,):
        return False
    if not all(positive_shape(tensor, 4) for tensor in (source, weights, output)):
        return False
    if not (float_or_quantized_8bit(source) and float_or_quantized_8bit(output)):
        return False
    if not float_or_channelwise_int8(weights, 0):
        return False
    if not static_or_unpacked(context, node.inputs[1]):
        return False
    if len(node.inputs) == 4 and node.inputs[3] >= 0 and not _static_bias(context, node.inputs[3]):
        return False
    out_height, out_width, out_channels = (int(size) for size in shape.data[1:])
    if weights.shape[0] != out_channels or weights.shape[3] != source.shape[3]:
        return False
    options = node.builtin_data
    kernel, strides = weights.shape[1:3], (options.stride_h, options.stride_w)
    if options.padding == Padding.VALID:
        fits = kernel[0] <= out_height and kernel[1] <= out_width
    else:  # SAME: the input the output implies, and no stride beyond the kernel
        implied = tuple(-(-size // stride) for size, stride in zip((out_height, out_width), strides))
        fits = implied == source.shape[1:3] and all(k >= s for k, s in zip(kernel, strides))
    return fits and clamping_activation(options.fused_activation_function)


def _transpose_conv_after_eval(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    """Eval sizes what prepare left dynamic (col2im and the accumulator from the output shape it
    computes, the filter it transposes at every run), except a hybrid node's transposed filter."""
    return _transpose_conv(context, node, kernels, evaluated=True)


@emulates(
    BuiltinOperator.TRANSPOSE_CONV,
    xnnpack=_transpose_conv_xnnpack_takes,
    evaluated=_transpose_conv_after_eval,
)
def transpose_conv_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    return _transpose_conv(context, node, kernels, evaluated=False)


def _transpose_conv(
    context: Context, node: Node, kernels: LiteRTKernels, evaluated: bool
) -> tuple[Temporary, ...]:
    shape, weights, source = (input_tensor(context, node, i) for i in range(3))
    output = context.tensors[node.outputs[0]]
    hybrid = source.type == TensorType.FLOAT32 and weights.type == TensorType.INT8
    sized = evaluated or shape.is_constant
    transposed = weights.is_constant or (evaluated and not hybrid)
    temporaries = []
    if kernels is LiteRTKernels.BUILTIN:
        col2im_type = TensorType.FLOAT32 if source.type == TensorType.FLOAT32 else TensorType.INT32
        col2im_shape = (math.prod(source.shape[1:3]), math.prod(weights.shape[:3]))
        temporaries.append(Temporary("col2im", col2im_type if sized else None, col2im_shape))
        hwoi = (weights.shape[1], weights.shape[2], weights.shape[0], weights.shape[3])
        temporaries.append(Temporary("transposed_weights", weights.type if transposed else None, hwoi))
    if source.type in _QUANTIZED:
        bias_type = node.builtin_data.quantized_bias_type
        if source.type == TensorType.INT16 and bias_type in (TensorType.INT32, TensorType.INT64):
            scratch_type = bias_type
        else:
            scratch_type = TensorType.INT64 if source.type == TensorType.INT16 else TensorType.INT32
        temporaries.append(Temporary("scratch", scratch_type if sized else None, output.shape))
    if hybrid:
        rows = math.prod(source.shape) // weights.shape[3]
        temporaries += hybrid_input_scratch(source.shape, rows)
        temporaries.append(Temporary("input_offsets", TensorType.INT32, (rows,)))
    return tuple(temporaries)


# --- CONV_3D, CONV_3D_TRANSPOSE ----------------------------------------------------------------------


@emulates(BuiltinOperator.CONV_3D)
def conv3d_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = context.tensors[node.outputs[0]]
    options = node.builtin_data
    steps = (
        options.stride_d,
        options.stride_h,
        options.stride_w,
        options.dilation_d_factor,
        options.dilation_h_factor,
        options.dilation_w_factor,
    )
    if kernels is not LiteRTKernels.BUILTIN or (
        all(step == 1 for step in steps) and weights.shape[:3] == (1, 1, 1)
    ):
        return ()
    return (Temporary("im2col", source.type, (*output.shape[:4], math.prod(weights.shape[:4]))),)


def _conv3d_transpose_col2im(
    context: Context, node: Node, kernels: LiteRTKernels, sized: bool
) -> tuple[Temporary, ...]:
    weights, source = input_tensor(context, node, 1), input_tensor(context, node, 2)
    if kernels is not LiteRTKernels.BUILTIN:
        return ()
    col2im_shape = (math.prod(source.shape[1:4]), math.prod(weights.shape[:4]))
    return (Temporary("col2im", TensorType.FLOAT32 if sized else None, col2im_shape),)


def _conv3d_transpose_after_eval(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    """Eval sizes col2im with the output shape it reads."""
    return _conv3d_transpose_col2im(context, node, kernels, sized=True)


@emulates(BuiltinOperator.CONV_3D_TRANSPOSE, evaluated=_conv3d_transpose_after_eval)
def conv3d_transpose_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    return _conv3d_transpose_col2im(context, node, kernels, sized=input_tensor(context, node, 0).is_constant)

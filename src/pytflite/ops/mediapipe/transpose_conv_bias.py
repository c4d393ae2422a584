"""Convolution2DTransposeBias: TRANSPOSE_CONV with a bias and the output shape computed from the input
(MediaPipe's selfie and hair segmentation decoders), float32 only.

Inputs: data [N, H, W, Ci], weights [Co, fh, fw, Ci] (OHWI), bias [Co]; options: a
TfLiteTransposeConvParams struct (padding, strides; no activation is applied). The output is
[N, sh (H - 1) + fh - ph, sw (W - 1) + fw - pw, Co], where SAME padding trims
ph = max(0, fh - (H - 1) % sh - 1) rows (pw columns alike), ph // 2 of them at the top; any other padding
trims nothing. Each input pixel scatters input x weights into the output window it covers; the sum is
NumPy's order, not MediaPipe's bias-first loop (float32 rounding differs in the last bits).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ...core.node import Registration
from ...core.types import TensorType, type_name
from ...errors import KernelError, ensure, ensure_condition_eq
from ..common import check_arity, input_tensor, output_tensor
from .options import PADDING_SAME, TransposeConvOptions, transpose_conv_options

NAME = "Convolution2DTransposeBias"


@dataclass(frozen=True)
class TransposeConvBiasData:
    options: TransposeConvOptions
    trim_top: int = 0  # rows and columns of the full scatter before the output starts (set by prepare)
    trim_left: int = 0


def _init(context, buffer, length):
    return TransposeConvBiasData(transpose_conv_options(NAME, buffer))


def _trim(padding: int, filter_size: int, in_size: int, stride: int) -> int:
    """What SAME padding removes from the full scatter along one axis (MediaPipe's padding_size)."""
    return max(0, filter_size - (in_size - 1) % stride - 1) if padding == PADDING_SAME else 0


def _prepare(context, node):
    check_arity(node, 3)
    source, weights, bias = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    for name, tensor, rank in (("input", source, 4), ("weights", weights, 4), ("bias", bias, 1)):
        ensure_condition_eq(len(tensor.shape), rank, f"NumDimensions({name}) != {rank}")
    ensure_condition_eq(
        weights.shape[0], bias.shape[0], "SizeOfDimension(weights, 0) != SizeOfDimension(bias, 0)"
    )
    ensure(source.type == TensorType.FLOAT32, "data_type == kTfLiteFloat32 was not true.")
    for name, tensor in (("output", output), ("weights", weights), ("bias", bias)):
        if tensor.type != source.type:
            raise KernelError(f"{name}->type != data_type ({type_name(tensor.type)} != FLOAT32)")
    ensure_condition_eq(
        source.shape[3], weights.shape[3], "SizeOfDimension(input, 3) != SizeOfDimension(weights, 3)"
    )
    options = node.user_data.options
    batches, height, width, _ = source.shape
    out_channels, filter_height, filter_width, _ = weights.shape
    ensure(height > 0 and width > 0, f"{NAME}: the input is empty ({height}x{width})")
    trim_h = _trim(options.padding, filter_height, height, options.stride_height)
    trim_w = _trim(options.padding, filter_width, width, options.stride_width)
    out_height = options.stride_height * (height - 1) + filter_height - trim_h
    out_width = options.stride_width * (width - 1) + filter_width - trim_w
    node.user_data = replace(node.user_data, trim_top=trim_h // 2, trim_left=trim_w // 2)
    context.resize_tensor(output, (batches, out_height, out_width, out_channels))


def _invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source = tensors[node.inputs[0]].data
    weights = tensors[node.inputs[1]].data
    bias = tensors[node.inputs[2]].data
    out = tensors[node.outputs[0]].data
    batches, height, width, in_channels = source.shape
    out_channels, filter_height, filter_width, _ = weights.shape
    sh, sw = data.options.stride_height, data.options.stride_width
    # every (input pixel, filter tap) product, summed over input channels: [N, H, W, fh, fw, Co]
    taps = source.reshape(-1, in_channels) @ weights.transpose(3, 1, 2, 0).reshape(in_channels, -1)
    taps = taps.reshape(batches, height, width, filter_height, filter_width, out_channels)
    full = np.zeros(
        (batches, sh * (height - 1) + filter_height, sw * (width - 1) + filter_width, out_channels),
        np.float32,
    )
    for fy in range(filter_height):
        for fx in range(filter_width):
            full[:, fy : fy + sh * (height - 1) + 1 : sh, fx : fx + sw * (width - 1) + 1 : sw] += taps[
                :, :, :, fy, fx
            ]
    top, left = data.trim_top, data.trim_left
    np.add(full[:, top : top + out.shape[1], left : left + out.shape[2]], bias, out=out)


KERNEL = Registration(init=_init, prepare=_prepare, invoke=_invoke)

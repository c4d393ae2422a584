"""MaxUnpooling2D: puts each value back where MaxPoolingWithArgmax2D found it, zeros elsewhere.

Inputs: values [N, H, W, C] and positions of the same shape (floats, truncated to int: fy * fw + fx
inside the window); options: a TfLitePoolParams struct. The output is [N, H fh, W fw, C]; window (y, x)
starts at (y sh - pad_h, x sw - pad_w), the padding being ComputePadding with the input and output sizes
swapped, as MediaPipe computes it. A position that lands outside the output is skipped (so is a NaN or
infinite one, which C cannot convert); where two land on one element, the later one in input order wins.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.node import Registration
from ...core.types import TensorType
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from .options import compute_padding, pooling_init

NAME = "MaxUnpooling2D"


def _prepare(context, node):
    check_arity(node, 2)
    source, positions = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_condition_eq(len(positions.shape), 4, "NumDimensions(indices) != 4")
    ensure_condition_eq(len(source.shape), 4, "NumDimensions(input) != 4")
    ensure_type_condition(source, TensorType.FLOAT32, "input->type != kTfLiteFloat32")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    ensure_type_condition(positions, TensorType.FLOAT32, "indices->type != kTfLiteFloat32")
    if positions.shape != source.shape:  # MediaPipe reads the indices at the input's offsets
        raise KernelError(f"{NAME}: indices shape {positions.shape} != input shape {source.shape}")
    options = node.user_data.options
    batches, height, width, channels = source.shape
    out_height, out_width = height * options.filter_height, width * options.filter_width
    node.user_data = replace(
        node.user_data,
        pad_top=compute_padding(options.stride_height, out_height, options.filter_height, height),
        pad_left=compute_padding(options.stride_width, out_width, options.filter_width, width),
    )
    context.resize_tensor(output, (batches, out_height, out_width, channels))


def _invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    options = data.options
    values = tensors[node.inputs[0]].data
    positions = tensors[node.inputs[1]].data
    out = tensors[node.outputs[0]].data
    out.fill(0)
    if values.size == 0:
        return
    _, out_height, out_width, channels = out.shape
    usable = np.isfinite(positions) & (np.abs(positions) < 2**31)
    index = np.trunc(np.where(usable, positions, 0)).astype(np.int64)
    fw = options.filter_width
    row = np.sign(index) * (np.abs(index) // fw)  # C's / and % (truncating toward zero)
    column = index - row * fw
    b, y, x, c = np.indices(values.shape, sparse=True)
    out_y = y * options.stride_height - data.pad_top + row
    out_x = x * options.stride_width - data.pad_left + column
    inside = usable & (out_y >= 0) & (out_y < out_height) & (out_x >= 0) & (out_x < out_width)
    target = ((b * out_height + out_y) * out_width + out_x) * channels + c
    target, source = target[inside], values[inside]  # input order: C's loop order
    last = target.size - 1 - np.unique(target[::-1], return_index=True)[1]
    out.reshape(-1)[target[last]] = source[last]


KERNEL = Registration(init=pooling_init(NAME), prepare=_prepare, invoke=_invoke)

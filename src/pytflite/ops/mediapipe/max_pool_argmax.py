"""MaxPoolingWithArgmax2D: float32 max pooling that also outputs where each maximum was, for
MaxUnpooling2D to put it back (MediaPipe's older segmentation models).

Options: a TfLitePoolParams struct. Output sizes follow TensorFlow's windowed size (SAME: ceil(in / s);
VALID: (in - f + s) / s; unknown padding: 0) and the windows start `ComputePadding` before the input.
Output 0 holds each window's maximum (fused activation applied), output 1 its position inside the window,
fy * fw + fx, as a float plus 0.1f so that truncating it back gives the integer. As in MediaPipe's loop, the
first strictly greatest value counts, starting from the lowest finite float: NaN, -inf and the lowest
float itself never win, and a window holding only those gives the lowest float at position 0.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.node import Registration
from ...core.types import TensorType
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from .options import (
    PADDING_SAME,
    PADDING_VALID,
    c_div,
    compute_padding,
    fused_activation,
    pooling_init,
)

NAME = "MaxPoolingWithArgmax2D"
_LOWEST = np.finfo(np.float32).min


def windowed_size(padding: int, size: int, filter_size: int, stride: int) -> int:
    """TensorFlow's GetWindowedOutputSize, with C's integer division."""
    if padding == PADDING_SAME:
        return c_div(size + stride - 1, stride)
    if padding == PADDING_VALID:
        return c_div(size - filter_size + stride, stride)
    return 0


def _prepare(context, node):
    check_arity(node, 1, outputs=2)
    source = input_tensor(context, node, 0)
    output, indices = output_tensor(context, node, 0), output_tensor(context, node, 1)
    ensure_condition_eq(len(source.shape), 4, "NumDimensions(input) != 4")
    ensure_type_condition(source, TensorType.FLOAT32, "input->type != kTfLiteFloat32")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    ensure_type_condition(indices, TensorType.FLOAT32, "indices->type != kTfLiteFloat32")
    options = node.user_data.options
    batches, height, width, channels = source.shape
    out_height = windowed_size(options.padding, height, options.filter_height, options.stride_height)
    out_width = windowed_size(options.padding, width, options.filter_width, options.stride_width)
    if out_height < 0 or out_width < 0:
        raise KernelError(f"{NAME}: the filter does not fit the input (output {out_height}x{out_width})")
    node.user_data = replace(
        node.user_data,
        pad_top=compute_padding(options.stride_height, height, options.filter_height, out_height),
        pad_left=compute_padding(options.stride_width, width, options.filter_width, out_width),
    )
    shape = (batches, out_height, out_width, channels)
    context.resize_tensor(output, shape)
    context.resize_tensor(indices, shape)


def _invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    options = data.options
    source = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    where = tensors[node.outputs[1]].data
    if out.size == 0:
        return
    _, out_height, out_width, _ = out.shape
    fh, fw, sh, sw = options.filter_height, options.filter_width, options.stride_height, options.stride_width
    # pad with NaN (never a candidate) so that every window lies inside the array
    below = max(0, (out_height - 1) * sh + fh - data.pad_top - source.shape[1])
    right = max(0, (out_width - 1) * sw + fw - data.pad_left - source.shape[2])
    padded = np.pad(
        source, ((0, 0), (data.pad_top, below), (data.pad_left, right), (0, 0)), constant_values=np.nan
    )
    windows = np.lib.stride_tricks.sliding_window_view(padded, (fh, fw), axis=(1, 2))
    windows = windows[:, : out_height * sh : sh, : out_width * sw : sw].reshape(*out.shape, fh * fw)
    candidates = np.where(windows > _LOWEST, windows, -np.inf)
    position = np.argmax(candidates, axis=-1)
    best = np.take_along_axis(candidates, position[..., None], axis=-1)[..., 0]
    found = best != -np.inf
    np.copyto(out, np.where(found, best, _LOWEST))
    np.add(np.where(found, position, 0).astype(np.float32), np.float32(0.1), out=where)
    clamp = fused_activation(options.activation)
    if clamp is not None:
        clamp(out)


KERNEL = Registration(init=pooling_init(NAME), prepare=_prepare, invoke=_invoke)

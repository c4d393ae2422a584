"""TransformTensorBilinear (version 2): crops a rotated region out of a feature map by bilinear
sampling, with a 4x4 matrix mapping output pixels to input pixels (face_landmark_with_attention's
eye, lip and iris crops).

Inputs: features [1, H, W, C] and the matrix; the output keeps the shape the model gives it
([1, h, w, c], c <= C; MediaPipe's prepare does not resize it). Pixel centres are aligned: the matrix's
translation gains m00 / 2 + m01 / 2 - 1/2 (in double, stored as float). Output pixel (x, y) samples at
(m00 x + m01 y + m02 0 + m03, ...) in float32; outside [0, W - 1] x [0, H - 1] (or NaN) it is 0,
inside it mixes the four neighbours (those beyond the edge read 0) in MediaPipe's mixed float/double
order, reproduced step by step. The options (output_height, output_width) are not read on the CPU.
"""

from __future__ import annotations

import numpy as np

from ...core.node import Registration
from ...core.types import TensorType
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from .matrix import affine_rows, check_matrix

NAME = "TransformTensorBilinear"


def _prepare(context, node):
    check_arity(node, 2)
    source, matrix = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_condition_eq(len(source.shape), 4, "NumDimensions(input) != 4")
    ensure_type_condition(source, TensorType.FLOAT32, "input->type != kTfLiteFloat32")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    check_matrix(NAME, matrix)
    # MediaPipe aborts on an output of another rank, and reads past the input for extra channels
    if len(output.shape) != 4 or output.shape[0] != 1 or output.shape[3] > source.shape[3]:
        raise KernelError(
            f"{NAME}: the output shape {output.shape} is not [1, height, width, channels <= {source.shape[3]}]"
        )
    if source.shape[0] != 1:
        raise KernelError(f"{NAME}: the input batch is {source.shape[0]}, not 1")


def _sample_positions(x_row: np.ndarray, y_row: np.ndarray, height: int, width: int):
    """Where each output pixel samples, in float32 as MediaPipe computes it: (x, y), each [h, w]."""
    positions = []
    for row in (x_row, y_row):
        shift = np.float32(np.float64(row[3]) + (np.float64(row[0]) * 0.5 + np.float64(row[1]) * 0.5 - 0.5))
        out_y, out_x = np.indices((height, width), dtype=np.float32)
        positions.append(row[0] * out_x + row[1] * out_y + row[2] * np.float32(0) + shift)
    return positions


def _mix(weight: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """(1.0 - w) * first + w * second: the first product in double, the second in float, summed in
    double and stored as float, as C's promotions make it."""
    return ((1.0 - weight.astype(np.float64)) * first + (weight * second).astype(np.float64)).astype(
        np.float32
    )


def _invoke(context, node):
    tensors = context.tensors
    features = tensors[node.inputs[0]].data[0]
    out = tensors[node.outputs[0]].data
    _, height, width, channels = out.shape
    in_height, in_width, _ = features.shape
    x, y = _sample_positions(*affine_rows(tensors[node.inputs[1]].data), height, width)
    inside = (x >= 0) & (x <= in_width - 1) & (y >= 0) & (y <= in_height - 1)  # False for NaN
    x, y = np.where(inside, x, 0), np.where(inside, y, 0)
    left, top = np.floor(x), np.floor(y)
    column, row = left.astype(np.intp), top.astype(np.intp)
    padded = np.pad(features[:, :, :channels], ((0, 1), (0, 1), (0, 0)))  # the neighbours past the edge
    right_weight, lower_weight = (x - left)[..., None], (y - top)[..., None]
    upper = _mix(right_weight, padded[row, column], padded[row, column + 1])
    lower = _mix(right_weight, padded[row + 1, column], padded[row + 1, column + 1])
    # lower_contrib * lower (float) + (1.0 - lower_contrib) * upper (double)
    result = (lower_weight * lower).astype(np.float64) + (1.0 - lower_weight.astype(np.float64)) * upper
    out[0] = np.where(inside[..., None], result.astype(np.float32), np.float32(0))


KERNEL = Registration(prepare=_prepare, invoke=_invoke)

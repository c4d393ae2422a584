"""TransformLandmarks (version 2): maps landmarks found in a crop back into the image with the crop's
4x4 matrix (the one Landmarks2TransformMatrix made).

Inputs: landmarks [1, K, D] with D 2 (x, y) or 3 (x, y, z), and the matrix (its first two rows are
read); the output has the landmarks' shape. x' = m00 x + m01 y + m02 0 + m03 in float32, in that order,
as MediaPipe's dot product (y' from the second row); z is copied. MediaPipe transforms only the first of
several rows of landmarks and leaves the others unwritten; pytflite transforms them all. The options
are not read (version 2 takes D from the output's shape).
"""

from __future__ import annotations

import numpy as np

from ...core.node import Registration
from ...core.types import TensorType
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from .matrix import affine_rows, check_matrix

NAME = "TransformLandmarks"


def _prepare(context, node):
    check_arity(node, 2)
    source, matrix = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_condition_eq(len(source.shape), 3, "NumDimensions(input) != 3")
    ensure_type_condition(source, TensorType.FLOAT32, "input->type != kTfLiteFloat32")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    check_matrix(NAME, matrix)
    dimensions = source.shape[2]
    if dimensions not in (2, 3):
        raise KernelError(f"Incorrect dimensions size: {dimensions}")
    context.resize_tensor(output, source.shape)


def _invoke(context, node):
    tensors = context.tensors
    landmarks = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    x_row, y_row = affine_rows(tensors[node.inputs[1]].data)
    x, y = landmarks[..., 0], landmarks[..., 1]
    zero = np.float32(0)
    out[..., 0] = x_row[0] * x + x_row[1] * y + x_row[2] * zero + x_row[3]
    out[..., 1] = y_row[0] * x + y_row[1] * y + y_row[2] * zero + y_row[3]
    out[..., 2:] = landmarks[..., 2:]


KERNEL = Registration(prepare=_prepare, invoke=_invoke)

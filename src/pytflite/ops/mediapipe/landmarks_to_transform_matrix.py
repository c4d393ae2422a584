"""Landmarks2TransformMatrix (version 2): the 4x4 matrix that maps an output crop's pixels to the
rotated box around some landmarks, as face_landmark_with_attention crops eyes, lips and irises.

Input: landmarks [1, K, 3] (read as flat x, y, z triples); output: [1, 4, 4]. Options (a flexbuffer
map): subset_idxs (landmark indices whose box is taken), left_rotation_idx, right_rotation_idx,
target_rotation_radians, output_height, output_width, scale_x, scale_y. The rotation r turns the line
from the left to the right landmark to the target angle; the landmarks of the subset, rotated by r,
give a box (centre c, size w x h); the matrix is
    shift(c rotated back) . rotate(-r) . scale(scale_x w / output_width, scale_y h / output_height)
    . shift(-output_width / 2, -output_height / 2).
MediaPipe checks the options when the op runs; pytflite checks them in prepare, with MediaPipe's
messages, and also refuses indices beyond the landmarks (which MediaPipe reads past). The arithmetic is
float64, rounded to float32 at the end (MediaPipe's is float32 throughout).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...core.node import Registration
from ...core.types import TensorType
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from ..custom_op_options import as_c_int, read_map
from .options import as_float, as_int_list

NAME = "Landmarks2TransformMatrix"


@dataclass(frozen=True)
class LandmarksToMatrixData:
    subset: tuple[int, ...]
    left: int
    right: int
    target_rotation: float
    output_height: int
    output_width: int
    scale_x: float
    scale_y: float


def _init(context, buffer, length):
    options = read_map(NAME, buffer)
    return LandmarksToMatrixData(
        tuple(as_int_list(options, "subset_idxs")),
        as_c_int(options, "left_rotation_idx"),
        as_c_int(options, "right_rotation_idx"),
        as_float(options, "target_rotation_radians"),
        as_c_int(options, "output_height"),
        as_c_int(options, "output_width"),
        as_float(options, "scale_x"),
        as_float(options, "scale_y"),
    )


def _check_options(data: LandmarksToMatrixData, landmarks: int) -> None:
    """MediaPipe's checks, in its order and words, then the bounds it does not check."""
    for name, value in (("left_rotation_idx", data.left), ("right_rotation_idx", data.right)):
        if value < 0:
            raise KernelError(f"Incorrect {name}: {value}")
    for name, value in (
        ("output_height", data.output_height),
        ("output_width", data.output_width),
        ("scale_x", data.scale_x),
        ("scale_y", data.scale_y),
    ):
        if value <= 0:
            raise KernelError(f"Incorrect {name}: {value}")
    for counter, value in enumerate(data.subset):
        if value < 0:
            raise KernelError(f"Incorrect subset value: index = {counter}, value = {value}")
    if not data.subset:
        raise KernelError("Subset parameter is empty")
    largest = max(data.left, data.right, *data.subset)
    if largest >= landmarks:
        raise KernelError(f"{NAME}: landmark index {largest} is out of range for {landmarks} landmarks")


def _prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_condition_eq(len(source.shape), 3, "NumDimensions(input) != 3")
    ensure_type_condition(source, TensorType.FLOAT32, "input->type != kTfLiteFloat32")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    _check_options(node.user_data, math.prod(source.shape) // 3)
    context.resize_tensor(output, (1, 4, 4))


def _affine(linear: np.ndarray, shift=(0.0, 0.0)) -> np.ndarray:
    """A 4x4 matrix acting on (x, y) with `linear` (2x2) and `shift`, leaving z alone."""
    matrix = np.eye(4)
    matrix[:2, :2] = linear
    matrix[:2, 3] = shift
    return matrix


def _invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    flat = tensors[node.inputs[0]].data.reshape(-1).astype(np.float64)
    points = flat[: flat.size // 3 * 3].reshape(-1, 3)[:, :2]
    (left_x, left_y), (right_x, right_y) = points[data.left], points[data.right]
    rotation = data.target_rotation - math.atan2(right_y - left_y, right_x - left_x)
    turn = np.array([[math.cos(rotation), -math.sin(rotation)], [math.sin(rotation), math.cos(rotation)]])
    rotated = points[list(data.subset)] @ turn.T
    low, high = rotated.min(axis=0), rotated.max(axis=0)
    width, height = high - low
    centre = turn.T @ ((low + high) / 2)  # rotated back: turn's inverse is its transpose
    scale = np.diag([data.scale_x * width / data.output_width, data.scale_y * height / data.output_height])
    matrix = (
        _affine(np.eye(2), centre)
        @ _affine(turn.T)
        @ _affine(scale)
        @ _affine(np.eye(2), (-data.output_width / 2, -data.output_height / 2))
    )
    tensors[node.outputs[0]].data[0] = matrix


KERNEL = Registration(init=_init, prepare=_prepare, invoke=_invoke)

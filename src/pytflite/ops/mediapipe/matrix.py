"""The transform-matrix input of TransformLandmarks and TransformTensorBilinear: a 4x4 float32 matrix
of which both read only the first two rows (the x and y maps; MediaPipe does not check the tensor)."""

from __future__ import annotations

import math

import numpy as np

from ...core.types import TensorType
from ...errors import KernelError, ensure_type_condition


def check_matrix(op: str, matrix) -> None:
    ensure_type_condition(matrix, TensorType.FLOAT32, "matrix->type != kTfLiteFloat32")
    if math.prod(matrix.shape) < 8:
        raise KernelError(
            f"{op}: the transform matrix needs 8 values (two rows of 4x4), has shape {matrix.shape}"
        )


def affine_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The matrix's first two rows, as float32 4-vectors."""
    flat = matrix.reshape(-1)
    return flat[0:4], flat[4:8]

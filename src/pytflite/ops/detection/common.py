"""What the detection kernels share: TFLite's box overlap in float32."""

from __future__ import annotations

import numpy as np


def box_areas(corners: np.ndarray) -> np.ndarray:
    """(ymax - ymin) * (xmax - xmin) in float32, of corner boxes as columns: a [4, n] array of rows
    ymin, xmin, ymax, xmax."""
    return (corners[2] - corners[0]) * (corners[3] - corners[1])


def overlaps(box: np.ndarray, area: np.float32, corners: np.ndarray, areas: np.ndarray) -> np.ndarray:
    """Intersection over union of one box (ymin, xmin, ymax, xmax) with each of `corners` ([4, n]),
    in float32 as TFLite computes it: 0 where either box has no area."""
    iou = np.zeros(corners.shape[1], np.float32)
    if area <= 0:
        return iou
    height = np.minimum(box[2], corners[2]) - np.maximum(box[0], corners[0])
    width = np.minimum(box[3], corners[3]) - np.maximum(box[1], corners[1])
    intersection = np.maximum(height, np.float32(0)) * np.maximum(width, np.float32(0))
    return np.divide(intersection, (area + areas) - intersection, out=iou, where=~(areas <= 0))

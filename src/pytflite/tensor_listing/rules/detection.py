"""TFLite_Detection_PostProcess, the SSD post-processing custom op LiteRT's BuiltinOpResolver registers:
its kernel adds two temporaries in Init and, at each prepare, makes them the float32 decoded boxes
(anchors x 4) and the float32 class scores (anchors x classes, background included), whatever the
inputs' types and whether it runs fast or regular non-maximum suppression. XNNPACK does not take it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.types import TensorType
from . import LiteRTKernels, Temporary, emulates, input_tensor

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

_SLOTS = ("decoded_boxes", "scores")


@emulates("TFLite_Detection_PostProcess", at_init=lambda node: _SLOTS)
def postprocess_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    boxes, scores = input_tensor(context, node, 0), input_tensor(context, node, 1)
    return (
        Temporary("decoded_boxes", TensorType.FLOAT32, (boxes.shape[1], 4)),
        Temporary("scores", TensorType.FLOAT32, tuple(scores.shape[1:3])),
    )

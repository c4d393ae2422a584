"""NumericVerify (a default custom op of LiteRT's BuiltinOpResolver): its kernel adds one temporary at its
first prepare, the dequantized input (float32, the input's shape; dynamic, and sized there, so listed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.types import TensorType
from . import LiteRTKernels, Temporary, emulates, input_tensor

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node


@emulates("NumericVerify")
def numeric_verify_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    return (Temporary("dequantized", TensorType.FLOAT32, input_tensor(context, node, 0).shape),)

"""RFFT2D: LiteRT 2.3's kernel (optimized and reference alike) adds four temporaries at its first
prepare, the working areas of its FFT library: an int32 bit-reversal table, a float64 cosine/sine table
(typed int64), and int64 rows and data buffers. It sizes them from fft_length: at prepare when that is
constant, else only in Eval (until then they are dynamic, unsized and not listed). XNNPACK does not take
RFFT2D. The audio front ends (the custom ops Mfcc and AudioSpectrogram) add none.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...core.types import BuiltinOperator, TensorType
from . import LiteRTKernels, Temporary, emulates, input_tensor

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

_SLOTS = ("integer_area", "double_area", "rows", "data")


def _sized(context: Context, node: Node, op: int, kernels: LiteRTKernels) -> tuple[Temporary, ...]:
    height, width = (int(n) for n in input_tensor(context, node, 1).data.flat[:2])
    working = max(height, width // 2)
    return (
        Temporary("integer_area", TensorType.INT32, (2 + math.isqrt(working),)),
        Temporary("double_area", TensorType.INT64, (working // 2 + width // 4,)),
        Temporary("rows", TensorType.INT64, (height,)),
        Temporary("data", TensorType.INT64, (height, width + 2)),
    )


@emulates(BuiltinOperator.RFFT2D, evaluated=_sized)
def rfft2d_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    if input_tensor(context, node, 1).is_constant_or_persistent:
        return _sized(context, node, op, kernels)
    return tuple(Temporary(slot) for slot in _SLOTS)

"""STABLEHLO_REDUCE_WINDOW: LiteRT 2.3's kernel adds two temporaries in Init and, at each prepare, types
them as the input and sizes them to the base-dilated input and to that input padded (or cropped, for
negative padding), even where dilation and padding change nothing. XNNPACK does not take the op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.types import BuiltinOperator
from . import LiteRTKernels, Temporary, emulates, input_tensor

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

_SLOTS = ("dilated", "padded")


@emulates(BuiltinOperator.STABLEHLO_REDUCE_WINDOW, at_init=lambda node: _SLOTS)
def reduce_window_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source = input_tensor(context, node, 0)
    options = node.builtin_data
    rank = len(source.shape)
    base = [int(b) for b in options.base_dilations] or [1] * rank
    padding = [int(p) for p in options.padding] or [0] * (2 * rank)
    dilated = tuple((size - 1) * step + 1 for size, step in zip(source.shape, base))
    padded = tuple(size + low + high for size, low, high in zip(dilated, padding[0::2], padding[1::2]))
    return (Temporary("dilated", source.type, dilated), Temporary("padded", source.type, padded))

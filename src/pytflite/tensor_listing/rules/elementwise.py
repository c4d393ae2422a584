"""ADD_N: LiteRT 2.3's kernel (optimized and reference alike) adds one accumulator in Init and, at each
prepare, types it as the inputs and sizes it to one copy of an input per thread it will use: at least
two inputs a thread, at most the interpreter's threads. XNNPACK does not take ADD_N.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...core.types import BuiltinOperator
from . import LiteRTKernels, Temporary, emulates, input_tensor

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node


@emulates(BuiltinOperator.ADD_N, at_init=lambda node: ("scratch",))
def add_n_temporaries(context: Context, node: Node, op: int, kernels: LiteRTKernels) -> tuple[Temporary, ...]:
    first = input_tensor(context, node, 0)
    threads = min(max(1, len(node.inputs) // 2), context.recommended_num_threads)
    return (Temporary("scratch", first.type, (threads * math.prod(first.shape),)),)

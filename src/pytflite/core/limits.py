"""The caps that keep a hostile model from exhausting memory or time.

Read at load (the reader bounds each shape, the verifier the memory of all tensors) and at run time (the
runtime and kernels bound every resize and scratch array, WHILE bounds its iterations): core, below both
the model layer and the runtime's users, holds them (SubgraphConfig.limits).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ..errors import KernelError
from .types import NON_POD_TYPES, TensorType, bytes_required

_GIB = 1 << 30
_OBJECT_BYTES = 8  # a STRING/RESOURCE/VARIANT element is a Python object reference at run time


@dataclasses.dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile model from exhausting memory or time; the defaults admit real models.

    max_bytes: the declared bytes of all non-constant tensors together (checked at load), and of any one
        tensor whenever it is resized (allocate, invoke, resize_tensor_input) and of the primary arena.
    max_elements: elements of one tensor (TFLite's dimensions are int32).
    max_call_depth: nesting of control-flow subgraphs (IF/WHILE/CALL_ONCE calling each other).
    max_while_iterations: iterations of one WHILE node per invoke; None lets a loop run forever, as TFLite.
    """

    max_bytes: int = 4 * _GIB
    max_elements: int = 2**31 - 1
    max_call_depth: int = 64
    max_while_iterations: int | None = None

    def tensor_bytes(self, tensor_type: TensorType | None, shape: Sequence[int]) -> int:
        """Memory a tensor of this type and shape takes at run time (object references for non-POD)."""
        if tensor_type is None:
            return 0
        if tensor_type in NON_POD_TYPES:
            return math.prod(shape) * _OBJECT_BYTES
        return bytes_required(tensor_type, shape)

    def check_resize(self, tensor: Any, shape: Sequence[int]) -> None:
        """Runtime guard for Context.resize_tensor: a kernel may compute any shape from data."""
        self._check(f"resize_tensor: tensor {tensor.index}", shape, self.tensor_bytes(tensor.type, shape))

    def check_scratch(self, what: str, shape: Sequence[int], itemsize: int) -> None:
        """Runtime guard for an array a kernel makes for itself (an index plan, running sums), called
        before it is made: the same caps as a tensor's."""
        self._check(what, shape, math.prod(shape) * itemsize)

    def _check(self, what: str, shape: Sequence[int], size: int) -> None:
        elements = element_bound(shape)
        if elements > self.max_elements:
            raise KernelError(
                f"{what} shape {list(shape)} has {elements} elements, over the limit of {self.max_elements}"
            )
        if size > self.max_bytes:
            raise KernelError(
                f"{what} shape {list(shape)} needs {size} bytes, over the limit of {self.max_bytes} bytes"
            )


DEFAULT_LIMITS = Limits()


def element_bound(shape: Sequence[int]) -> int:
    """The elements a shape holds, zero dimensions left out: [0, 2**31-1, 2**31-1] holds nothing, but
    NumPy still refuses to make it ("array is too big"), so such a shape counts as its other dims."""
    return math.prod(d for d in shape if d)

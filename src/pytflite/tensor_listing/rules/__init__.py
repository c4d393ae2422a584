"""The temporaries LiteRT's builtin kernels add, so the Python API lists the tensors LiteRT lists.

LiteRT's get_tensor_details() lists every typed tensor of a subgraph, and its kernels add tensors in
their Init or first Prepare (context->AddTensors): im2col buffers, the scratch of hybrid quantization,
reduction accumulators... They take the indices after the model's tensors, in the order the nodes are
built and prepared; some are added but never typed (kTfLiteNoType), so they take an index and are not
listed. Which ones a node gets depends on LiteRT's kernel: its optimized kernels (BUILTIN), its
reference kernels (BUILTIN_REF), or none at all where XNNPACK, which LiteRT applies by default, takes
the node.

pytflite's kernels keep other scratch, hidden from the listing (Tensor.kernel_scratch). Each family
module here states, per op, what LiteRT 2.3's kernel adds (`emulates`: the temporaries after a prepare,
those its Eval sizes, those its Init adds, and whether XNNPACK takes the node); the listing
(../temporaries.py) looks a node's op up here and keeps tensors of those types and shapes that no kernel
uses. Ops without an entry add none.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core.types import TensorType

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

__all__ = [
    "LiteRTKernels",
    "Temporary",
    "TemporaryRules",
    "emulates",
    "hybrid_input_scratch",
    "input_tensor",
    "rules_for",
]


class LiteRTKernels(enum.Enum):
    """Which of LiteRT's kernels would run a node, as the interpreter's op resolver type chooses them."""

    XNNPACK = "the builtin kernels, with XNNPACK taking what it supports (AUTO, BUILTIN)"
    BUILTIN = "the builtin kernels alone (BUILTIN_WITHOUT_DEFAULT_DELEGATES)"
    REFERENCE = "the reference kernels (BUILTIN_REF)"


@dataclass(frozen=True)
class Temporary:
    """One tensor a LiteRT kernel adds. `slot` names it within the kernel (the op data's *_id field): a
    slot is added at the first prepare that needs it and retyped and resized at every later one.
    `type` None: added but never typed (not listed)."""

    slot: str
    type: TensorType | None = None
    shape: tuple[int, ...] = ()
    name: str = ""


TemporariesFn = Callable[["Context", "Node", int, LiteRTKernels], Sequence[Temporary]]
ClaimFn = Callable[["Context", "Node"], bool]
InitSlotsFn = Callable[["Node"], tuple[str, ...]]


def _none(*_: Any) -> tuple:
    return ()


@dataclass(frozen=True)
class TemporaryRules:
    """What LiteRT 2.3's kernel for one op adds. temporaries(context, node, op, kernels): after a prepare,
    in AddTensors order; evaluated(...): those its Eval types or sizes (prepare left them dynamic),
    listed once the node has run; at_init(node): the slots its Init adds, numbered as the node is built;
    xnnpack(context, node): whether LiteRT's default XNNPACK delegate takes the node."""

    temporaries: TemporariesFn
    evaluated: TemporariesFn = _none
    at_init: InitSlotsFn = _none
    xnnpack: ClaimFn | None = None

    def xnnpack_takes(self, context: Context, node: Node) -> bool:
        return self.xnnpack is not None and self.xnnpack(context, node)


_RULES: dict[int | str, TemporaryRules] = {}


def emulates(
    *ops: int | str,
    xnnpack: ClaimFn | None = None,
    evaluated: TemporariesFn | None = None,
    at_init: InitSlotsFn | None = None,
) -> Callable[[TemporariesFn], TemporariesFn]:
    """Register the decorated function as the temporaries of LiteRT's kernel for `ops` (builtin codes,
    or the names of the custom ops LiteRT's BuiltinOpResolver registers), with the other rules of
    TemporaryRules (None: the kernel has no such behaviour)."""

    def register(function: TemporariesFn) -> TemporariesFn:
        rules = TemporaryRules(function, evaluated or _none, at_init or _none, xnnpack)
        for op in ops:
            if op in _RULES:
                raise RuntimeError(f"temporaries of op {op} registered twice")
            _RULES[op] = rules
        return function

    return register


def rules_for(op: int | str) -> TemporaryRules | None:
    """The rules of LiteRT's kernel for `op` (a builtin code or a default custom op's name), or None
    when it adds no temporaries."""
    return _RULES.get(op)


def hybrid_input_scratch(shape: tuple[int, ...], rows: int) -> tuple[Temporary, Temporary]:
    """The first two temporaries of LiteRT's hybrid kernels (float input, 8-bit weights): the input
    quantized to int8, and one float scaling factor per row it is quantized by."""
    return (
        Temporary("input_quantized", TensorType.INT8, shape),
        Temporary("scaling_factors", TensorType.FLOAT32, (rows,)),
    )


def input_tensor(context: Context, node: Node, position: int) -> Any:
    """A node's input tensor, or None where the model leaves the optional input out."""
    index = node.inputs[position] if position < len(node.inputs) else -1
    return None if index < 0 else context.tensors[index]


from . import conv, detection, elementwise, matmul, quantize, recurrent, reduce, spectral, stablehlo  # noqa: E402,F401  (each family module registers its ops)

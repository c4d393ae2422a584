"""Where TFLite's lazy prepare stands in a subgraph's plan: the state Subgraph, its PlanRunner and its
Delegation share, behind one object (Subgraph.cursor).

TFLite prepares and allocates a plan up to the first node with a dynamic output, and invoke prepares the
rest when it gets there; a node that resizes a dynamic output during invoke sends preparation back to
the node after it. In a lazy prepare, a node with a pure prepare whose inputs are as its last prepare saw
them is not prepared again (PreparedInputs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .node import OPTIONAL_TENSOR

if TYPE_CHECKING:
    from .node import Node
    from .tensor import Tensor


class PrepareCursor:
    """The plan positions where preparation and allocation stopped, whether a node resized a dynamic
    output during this invoke, and each node's inputs as its last prepare saw them."""

    __slots__ = ("next_to_prepare", "next_to_allocate", "resized_during_invoke", "prepared_inputs")

    def __init__(self):
        self.next_to_prepare = 0  # plan position of the first node not yet prepared
        self.next_to_allocate = 0  # plan position of the first node whose outputs have no memory yet
        self.resized_during_invoke = False
        self.prepared_inputs: dict[int, PreparedInputs] = {}  # per node index

    def restart(self) -> None:
        """Prepare and allocate the whole plan again."""
        self.next_to_prepare = 0
        self.next_to_allocate = 0

    def prepare_again_after(self, position: int) -> None:
        """A node resized a dynamic output during invoke: the nodes after it prepare again when reached.
        TFLite drops the placements of the tensors first written after `position`; the arena holds no
        dynamic tensor, so they stay valid and are kept: the allocation places again only the tensors
        that grew."""
        self.next_to_prepare = position + 1
        self.next_to_allocate = min(self.next_to_allocate, self.next_to_prepare)

    def all_prepared(self, plan_length: int) -> bool:
        return self.next_to_prepare >= plan_length


class PreparedInputs:
    """A node's inputs as its last prepare saw them: shape, type, kind of memory, and the array of a
    constant (by identity: a folded node computed again gets new arrays, core/folding.py)."""

    __slots__ = ("inputs",)

    def __init__(self, tensors: list[Tensor], node: Node):
        self.inputs = tuple(
            (
                tensor,
                tensor.shape,
                tensor.type,
                tensor.allocation_type,
                tensor.data if tensor.is_constant_or_persistent else None,
            )
            for tensor in (tensors[t] for t in node.inputs if t != OPTIONAL_TENSOR)
        )

    def unchanged(self) -> bool:
        """Whether every input still has the shape, type, memory kind and constant array recorded."""
        for tensor, shape, type_, kind, constant in self.inputs:
            if (
                tensor.shape != shape
                or tensor.type != type_
                or tensor.allocation_type != kind
                or (constant is not None and tensor.data is not constant)
            ):
                return False
        return True

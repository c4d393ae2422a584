"""PlanRewrite: nodes of a subgraph's plan replaced by new ones, undoably.

Two things rewrite a plan this way, never as a mode of the Subgraph: delegation (core/delegation.py: each
claimed subset becomes one DELEGATE node) and a kernel that wants a pattern of nodes to run as one
(ops/row_write.py: the row write of a WHILE body). Each new node is added as any node is (its init runs,
the observer hears of it); the replaced nodes stay in the node list, off the plan. `undo` frees the added
nodes, drops them and restores the plan; the subgraph is then prepared again from scratch.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .node import Registration
    from .subgraph import Subgraph


class PlanRewrite:
    """One subgraph's plan as it was, and the nodes a rewrite added after it."""

    def __init__(self, subgraph: Subgraph):
        # weakly: a rewrite kept beside its subgraph (ops/row_write's table of bodies, weak in its keys)
        # must not keep the subgraph, and so every interpreter of it, alive
        self._subgraph = weakref.ref(subgraph)
        self.original = list(subgraph.execution_plan)
        self.first_added = len(subgraph.nodes)
        self.added: list[int] = []

    @property
    def subgraph(self) -> Subgraph:
        return self._subgraph()

    def add(
        self, registration: Registration, inputs: Sequence[int], outputs: Sequence[int], builtin_data: Any
    ) -> int:
        """A new node running `registration`, appended to the plan as any added node; returns its index."""
        index = self.subgraph.add_node_with_parameters(inputs, outputs, (), None, builtin_data, registration)
        self.added.append(index)
        return index

    def replace(
        self,
        replaced: Sequence[int],
        registration: Registration,
        inputs: Sequence[int],
        outputs: Sequence[int],
        builtin_data: Any,
    ) -> int:
        """Replace the plan's nodes `replaced` by one node running `registration`, at the plan position of
        the last of them; returns its index."""
        subgraph = self.subgraph
        index = self.add(registration, inputs, outputs, builtin_data)
        plan = [i for i in subgraph.execution_plan if i != index]
        last = max(plan.index(i) for i in replaced)
        plan[last] = index
        subgraph.execution_plan = [i for i in plan if i not in replaced]
        return index

    def undo(self) -> None:
        """Back to the plan before the rewrite: the added nodes freed and removed."""
        subgraph = self.subgraph
        for index in self.added:
            node, registration = subgraph.nodes[index]
            subgraph.free_node(node, registration)
        subgraph.execution_plan = self.original
        del subgraph.nodes[self.first_added :]
        self.added = []
        subgraph.invalidate()

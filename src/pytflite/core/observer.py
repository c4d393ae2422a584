"""SubgraphObserver: what a Subgraph tells a view kept beside it as its graph is built and prepared.

The interpreter layer's tensor listing (tensor_listing/) follows a subgraph this way, adding tensors of
its own as nodes are added and prepared, without core knowing what it lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .node import Node, Registration


class SubgraphObserver(Protocol):
    def node_added(self, node: Node, registration: Registration) -> None:
        """`node` was made and its kernel's init ran; it is not yet in the plan."""

    def node_prepared(self, node: Node, registration: Registration) -> None:
        """The kernel's prepare of `node` ran (on allocate, on resize, or lazily inside invoke)."""

"""TensorNumbering: a subgraph's tensors under the indices LiteRT's Python API gives them.

LiteRT numbers a subgraph's tensors in the order they were added: the model's, then those kernels and
delegates add (temporaries.py keeps tensors for what LiteRT's kernels add, where the listing is on). pytflite's own
kernels add scratch tensors LiteRT has no counterpart for (Tensor.kernel_scratch); the Python API skips
them, so every other tensor keeps the index LiteRT gives it. The model's tensors, added first, keep
their own index either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from ..core.subgraph import Subgraph
    from ..core.tensor import Tensor
    from .temporaries import ListedTemporaries


class TensorNumbering:
    """LiteRT's tensor indices for one subgraph, kept up to date as tensors are added."""

    def __init__(self, subgraph: Subgraph, listing: ListedTemporaries | None):
        self._subgraph = subgraph
        self._listing = listing  # None: LiteRT's kernel temporaries are not listed
        self._seen = 0  # how many of the subgraph's tensors `_listed` has gone over
        self._listed: list[Tensor] = []
        self._public: dict[int, int] = {}  # the subgraph's tensor index -> LiteRT's

    def _update(self) -> list[Tensor]:
        if self._listing is not None:
            self._listing.after_invoke()
        tensors = self._subgraph.tensors
        if len(tensors) != self._seen:  # tensors are only ever appended
            for tensor in tensors[self._seen :]:
                if not tensor.kernel_scratch:
                    self._public[tensor.index] = len(self._listed)
                    self._listed.append(tensor)
            self._seen = len(tensors)
        return self._listed

    def subgraph_ran(self) -> None:
        """The subgraph was invoked: the next look sizes what LiteRT's Eval sizes."""
        if self._listing is not None:
            self._listing.invoked = True

    def tensors(self) -> list[Tensor]:
        """Every tensor the Python API shows, position = LiteRT's index."""
        return self._update()

    def tensor(self, index: int) -> Tensor:
        """The tensor at LiteRT's `index`, refused with LiteRT's text when there is none."""
        listed = self._update()
        if not 0 <= index < len(listed):
            raise InvalidArgumentError(f"Invalid tensor index {index} exceeds max tensor index {len(listed)}")
        return listed[index]

    def index_of(self, tensor: Tensor) -> int:
        """LiteRT's index of one of the listed tensors."""
        self._update()
        return self._public[tensor.index]

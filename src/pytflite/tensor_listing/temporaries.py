"""ListedTemporaries: tensors standing for the temporaries LiteRT's kernels add, so that the Python API's
tensor listing (get_tensor_details) numbers and shows tensors as LiteRT does.

It observes one subgraph (core/observer.py). For a node of the builtin table's kernels it looks up the
TemporaryRules of the node's op (rules/: what LiteRT's kernel for it adds); a user's kernel, even under a
builtin code, is not LiteRT's and gets none. The slots LiteRT's Init adds get tensors as the node is
added; after each prepare, the first time a slot is needed a tensor is added for it (taking the next
index, as AddTensors does), and each prepare gives it the type and shape LiteRT's kernel gives its
temporary. No kernel reads or writes them: their data is zeros (np.zeros asks the system for untouched
pages, so a large one costs no resident memory until read). Under the default resolver a node XNNPACK
would take gets none, decided once, at the node's first prepare (XNNPACK is applied once, before LiteRT
prepares). Temporaries LiteRT's prepare leaves dynamic are sized by its Eval: once the subgraph has run
(`invoked`, set by the Python API's invoke), `after_invoke` gives them what Eval gives them.

The listing is a view, never a reason for a model to fail: a rule that raises on a node the rules did not
foresee leaves that node without listed temporaries, with a warning on the "pytflite" logger (a log
record, not a Python warning: under -W error that would fail the model after all).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.types import AllocationType, BuiltinOperator, bytes_required, storage_dtype
from ..ops.registry import is_builtin_kernel
from .rules import LiteRTKernels, TemporaryRules, rules_for

logger = logging.getLogger("pytflite")

if TYPE_CHECKING:
    from ..core.node import Node, Registration
    from ..core.subgraph import Subgraph
    from .rules import Temporary


def rules_of(registration: Registration) -> TemporaryRules | None:
    """The rules of LiteRT's kernel for a node's op; None for a kernel that is not the builtin table's."""
    if not is_builtin_kernel(registration):
        return None
    code = registration.builtin_code
    return rules_for(registration.custom_name if code == BuiltinOperator.CUSTOM else code)


class ListedTemporaries:
    """One subgraph's tensors for LiteRT's kernel temporaries, by node and slot (a SubgraphObserver)."""

    def __init__(self, subgraph: Subgraph, kernels: LiteRTKernels):
        self._subgraph = subgraph
        self._kernels = kernels
        self._rules: dict[int, TemporaryRules] = {}  # node -> its op's rules, for the nodes that have some
        self._slots: dict[int, dict[str, int] | None] = {}  # node -> slot -> tensor; None: none listed
        self.invoked = False  # the subgraph has run since after_invoke last looked

    def node_added(self, node: Node, registration: Registration) -> None:
        """Add the tensors LiteRT's kernel adds in its Init: they are numbered as the node is built."""
        rules = rules_of(registration)
        if rules is None:
            return
        self._rules[node.index] = rules
        slots = self._ask(node, registration, rules.at_init, node)
        if slots:
            self._slots[node.index] = dict(zip(slots, self._subgraph.add_tensors(len(slots))))

    def node_prepared(self, node: Node, registration: Registration) -> None:
        """Add, type and size the tensors for what LiteRT's kernel holds after preparing `node`."""
        rules = self._rules.get(node.index)
        if rules is None:
            return
        context = self._subgraph.context
        if node.index not in self._slots:  # XNNPACK, applied before LiteRT prepares, decides once
            self._slots[node.index] = {}
            if self._kernels is LiteRTKernels.XNNPACK and self._ask(
                node, registration, rules.xnnpack_takes, context, node
            ):
                self._slots[node.index] = None
        op, kind = registration.builtin_code, self._kernel_kind()
        self._apply(node, self._ask(node, registration, rules.temporaries, context, node, op, kind))

    def after_invoke(self) -> None:
        """Give the temporaries LiteRT's Eval types or sizes what it gives them, once the subgraph ran."""
        if not self.invoked:
            return
        self.invoked = False
        subgraph = self._subgraph
        for index in list(self._slots):
            rules = self._rules.get(index)
            if rules is not None and index < len(subgraph.nodes):
                node, registration = subgraph.nodes[index]
                op, kind = registration.builtin_code, self._kernel_kind()
                found = self._ask(node, registration, rules.evaluated, subgraph.context, node, op, kind)
                self._apply(node, found)

    def _ask(self, node: Node, registration: Registration, rule: Callable, *args: Any) -> Any:
        """A rule's answer; () when the node lists none, and from then on when the rule fails on it."""
        if self._slots.get(node.index, {}) is None:
            return ()
        try:
            return rule(*args)
        except Exception as error:  # a rule's bug must not fail the model: the listing only shows less
            self._slots[node.index] = None
            logger.warning(
                "pytflite cannot tell which temporaries LiteRT's kernel adds for node %d (%s): %s: %s; "
                "get_tensor_details() leaves them out",
                node.index,
                registration.op_name,
                type(error).__name__,
                error,
            )
            return ()

    def _kernel_kind(self) -> LiteRTKernels:
        """The LiteRT kernels that run a node XNNPACK did not take."""
        return LiteRTKernels.BUILTIN if self._kernels is LiteRTKernels.XNNPACK else self._kernels

    def _apply(self, node: Node, temporaries: Sequence[Temporary]) -> None:
        slots = self._slots.get(node.index)
        if slots is None:
            return
        subgraph = self._subgraph
        for temporary in temporaries:
            index = slots.get(temporary.slot)
            if index is None:
                (index,) = subgraph.add_tensors(1)
                slots[temporary.slot] = index
            if temporary.type is None:
                continue
            tensor = subgraph.tensors[index]
            tensor.name = temporary.name
            if tensor.type != temporary.type or tensor.shape != temporary.shape:
                tensor.type = temporary.type
                tensor.shape = temporary.shape
                tensor.bytes = bytes_required(temporary.type, temporary.shape)
                tensor.allocation_type = AllocationType.ARENA_RW
                tensor.data = np.zeros(temporary.shape, storage_dtype(temporary.type))

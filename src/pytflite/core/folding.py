"""Constant folding: which nodes the subgraph computes once, in prepare, instead of at every invoke.

The one folding mechanism of builtin kernels: a node whose inputs are all constants, or whose prepare
marked every output persistent read-only (context.set_tensor_to_persistent_ro: SHAPE of any input, a
shape computed from shapes), is invoked once right after its prepare, into persistent read-only
outputs, and skipped at invoke afterwards. TFLite's kernels compute such outputs in their own prepare,
one by one; doing it for every stateless builtin op also makes e.g. a shape computed from constants a
constant, so the nodes that use it stay static instead of being prepared again at every invoke.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .derived import DerivedConstants, derived_constants_of, derived_key
from .node import OPTIONAL_TENSOR, Node, Registration
from .tensor import Tensor
from .types import NON_POD_TYPES, AllocationType

if TYPE_CHECKING:
    from .context import Context

_CONSTANT = frozenset({AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO})
_FOLDABLE_OUTPUT = frozenset({AllocationType.ARENA_RW, AllocationType.PERSISTENT_RO})


def foldable_outputs(tensors: Sequence[Tensor], node: Node, registration: Registration) -> list[Tensor]:
    """The outputs of a just-prepared node to compute now, once; empty when it must run at invoke.

    Nodes with temporaries are left alone: their scratch memory is placed in the arena only after
    prepare, so they cannot run yet. (Runs after every prepare, also the lazy ones inside invoke: the
    common refusals come first.)"""
    if (
        not registration.stateless
        or node.might_have_side_effect
        or node.temporaries
        or registration.invoke is None
    ):
        return []
    outputs = [tensors[t] for t in node.outputs if t != OPTIONAL_TENSOR]
    if not _all_constant(tensors, node.inputs):
        for output in outputs:
            if output.allocation_type != AllocationType.PERSISTENT_RO:
                return []  # not marked by its prepare either
    if any(o.type in NON_POD_TYPES or o.allocation_type not in _FOLDABLE_OUTPUT for o in outputs):
        return []
    return outputs


def _all_constant(tensors: Sequence[Tensor], inputs: Sequence[int]) -> bool:
    """Whether a node has inputs and each is absent or constant (a plain loop: this runs at every lazy
    prepare inside invoke)."""
    for t in inputs:
        if t != OPTIONAL_TENSOR and tensors[t].allocation_type not in _CONSTANT:
            return False
    return bool(inputs)


def fold(context: Context, node: Node, outputs: list[Tensor], run: Callable) -> None:
    """Compute a node now into its `outputs` (foldable_outputs), made persistent read-only first;
    `run(context, node)` invokes it. A node computed from the model's constants alone gives the same
    outputs in every interpreter of the model: they are computed once and shared (core/derived.py)."""
    for output in outputs:
        context.set_tensor_to_persistent_ro(output)
    cache = derived_constants_of(context)
    if cache is None or not _from_model_constants(context.tensors, node, cache):
        _compute(context, node, outputs, run)
        return

    def compute() -> tuple:
        _compute(context, node, outputs, run)
        return tuple(output.data for output in outputs)

    shared = cache.get(derived_key(context, node, "outputs"), compute)
    for output, data in zip(outputs, shared):
        output.data = data


def _compute(context: Context, node: Node, outputs: list[Tensor], run: Callable) -> None:
    """Run the node into new arrays: a constant computed again (its node prepared again) is another array,
    which is how a lazy prepare sees that a constant input changed (Subgraph._prepare_loop)."""
    for output in outputs:
        output.data = None
        context.resize_tensor(output, output.shape)
    run(context, node)


def _from_model_constants(tensors: Sequence[Tensor], node: Node, cache: DerivedConstants) -> bool:
    """Whether every input is a model constant or a constant derived from them (shared)."""
    return all(
        t == OPTIONAL_TENSOR
        or tensors[t].allocation_type == AllocationType.MMAP_RO
        or cache.holds(tensors[t].data)
        for t in node.inputs
    )


def fold_if_known(context: Context, node: Node, registration: Registration) -> bool:
    """Right after a node's prepare, for delegate kernels that prepare the nodes they claim: fold it as the
    subgraph folds its own nodes, so they see the same constants; returns whether it did (then the node
    need not run again)."""
    outputs = foldable_outputs(context.tensors, node, registration)
    if outputs:
        fold(context, node, outputs, registration.invoke)
    return bool(outputs)

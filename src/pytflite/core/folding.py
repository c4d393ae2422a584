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

from .node import OPTIONAL_TENSOR, Node, Registration
from .tensor import Tensor
from .types import NON_POD_TYPES, AllocationType, BuiltinOperator

if TYPE_CHECKING:
    from .context import Context

_CONSTANT = frozenset({AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO})
_FOLDABLE_OUTPUT = frozenset({AllocationType.ARENA_RW, AllocationType.PERSISTENT_RO})

# Ops that must run at every invoke even when all their inputs are constants: they have state, side
# effects or randomness, or run code the runtime cannot see into.
_NEVER_FOLDED = frozenset(
    {
        BuiltinOperator.CUSTOM,
        BuiltinOperator.DELEGATE,
        BuiltinOperator.IF,
        BuiltinOperator.WHILE,
        BuiltinOperator.CALL,
        BuiltinOperator.CALL_ONCE,
        BuiltinOperator.VAR_HANDLE,
        BuiltinOperator.READ_VARIABLE,
        BuiltinOperator.ASSIGN_VARIABLE,
        BuiltinOperator.RANDOM_UNIFORM,
        BuiltinOperator.RANDOM_STANDARD_NORMAL,
        BuiltinOperator.MULTINOMIAL,
        BuiltinOperator.STABLEHLO_RNG_BIT_GENERATOR,
        BuiltinOperator.HASHTABLE,
        BuiltinOperator.HASHTABLE_FIND,
        BuiltinOperator.HASHTABLE_IMPORT,
        BuiltinOperator.HASHTABLE_SIZE,
        BuiltinOperator.HASHTABLE_LOOKUP,
    }
)


def foldable_outputs(tensors: Sequence[Tensor], node: Node, registration: Registration) -> list[Tensor]:
    """The outputs of a just-prepared node to compute now, once; empty when it must run at invoke.

    Nodes with temporaries are left alone: their scratch memory is placed in the arena only after
    prepare, so they cannot run yet."""
    if (
        registration.builtin_code in _NEVER_FOLDED
        or node.might_have_side_effect
        or node.temporaries
        or registration.invoke is None
    ):
        return []
    outputs = [tensors[t] for t in node.outputs if t != OPTIONAL_TENSOR]
    if any(o.type in NON_POD_TYPES or o.allocation_type not in _FOLDABLE_OUTPUT for o in outputs):
        return []
    marked = all(o.allocation_type == AllocationType.PERSISTENT_RO for o in outputs)
    if not marked and (
        not node.inputs
        or any(t != OPTIONAL_TENSOR and tensors[t].allocation_type not in _CONSTANT for t in node.inputs)
    ):
        return []
    return outputs


def fold_if_known(
    context: Context, node: Node, registration: Registration, run: Callable | None = None
) -> bool:
    """Right after a node's prepare: compute it now, into persistent read-only outputs, when its outputs
    are known; returns whether it did (then invoke skips the node). `run(context, node)` invokes it
    (default: the registration's invoke); the subgraph passes one that reports failures as TFLite does.
    Delegate kernels that prepare the nodes they claim call this too, so they see the same constants."""
    outputs = foldable_outputs(context.tensors, node, registration)
    if not outputs:
        return False
    for output in outputs:
        if output.allocation_type != AllocationType.PERSISTENT_RO:
            context.set_tensor_to_persistent_ro(output)
            context.resize_tensor(output, output.shape)
    (run or registration.invoke)(context, node)
    return True

"""Node, Registration and DelegateParams: an operator instance, its kernel, and a delegate's claim.

A `Registration` (TfLiteRegistration) is a kernel: plain functions for each lifecycle step.
    init(context, buffer, length) -> user_data   once per node at load; `buffer` is the typed builtin
                                                 options (length 0), the raw custom-options bytes, or
                                                 the DelegateParams of a delegate kernel (length 0)
    prepare(context, node)                       shapes, types, derived state; on allocate and resize
    invoke(context, node)                        compute, writing into the preallocated outputs
    free(context, user_data)                     teardown
    profiling_string(context, node) -> str       extra text for the profiler
    calls(context, node) -> calls                (pytflite's own, optional) after each allocation:
                                                 what invoke does, for the memory tensors have now,
                                                 as calls (see below), or None: invoke it is
    stateless: bool                              (pytflite's own) prepare and invoke depend on the
                                                 inputs alone: no state, side effects, randomness or
                                                 called subgraphs. Such a node with constant inputs is
                                                 folded (core/folding.py), and preparing it again with
                                                 inputs of the same shapes, types, memory kinds and
                                                 constant arrays changes nothing, so a lazy prepare
                                                 inside invoke may skip it (set for the builtin table's
                                                 kernels not registered `stateful`; False for any
                                                 other, which TFLite prepares and invokes as usual)
prepare and invoke may return None or Status.OK on success, another Status on failure, or raise.

`calls` is the one fast-path protocol, for kernels whose invoke is short next to looking up its tensors.
It returns either a tuple of calls of nothing (functools.partial objects over NumPy functions or compiled
kernels and the node's arrays, or closures), made in order, their results unread, a failure raised; or
one `core.step_program.Written` statement (one element's arithmetic as Python's own operations). The
calls may hold the input and output arrays themselves (and views of them): the check-free step list
they go into (core/plan_runner.py) is made again whenever memory may have moved, and the step program
writes each partial out as the call itself, with no Python frame around it. invoke still serves every
other caller (the careful loop, profilers, delegates' kernels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import KernelError
from .types import BuiltinOperator, Status

if TYPE_CHECKING:
    from .context import Context
    from .delegate import Delegate

OPTIONAL_TENSOR = -1  # kTfLiteOptionalTensor: an absent optional input or output

KernelFn = Callable[["Context", "Node"], Status | None]


@dataclass(frozen=True)
class Registration:
    """A kernel: its lifecycle functions and the operator it implements (builtin code or custom name)."""

    init: Callable[[Context, Any, int], Any] | None = None
    free: Callable[[Context, Any], None] | None = None
    prepare: KernelFn | None = None
    invoke: KernelFn | None = None
    profiling_string: Callable[[Context, Node], str] | None = None
    builtin_code: int = BuiltinOperator.CUSTOM
    custom_name: str | None = None
    version: int = 1
    calls: Callable[[Context, Node], Any] | None = None  # pytflite's own: see the module docstring
    stateless: bool = False  # pytflite's own: see the module docstring

    @property
    def op_name(self) -> str:
        """The operator's display name, as TFLite prints it in errors and profiles."""
        if self.builtin_code == BuiltinOperator.CUSTOM:
            return self.custom_name or "UnknownCustomOp"
        if self.builtin_code == BuiltinOperator.DELEGATE and self.custom_name:
            return self.custom_name
        return BuiltinOperator(self.builtin_code).name


class Node:
    """One operator instance in a subgraph (TfLiteNode); tensor lists hold indices, -1 for absent."""

    __slots__ = (
        "index",
        "inputs",
        "outputs",
        "intermediates",
        "temporaries",
        "user_data",
        "builtin_data",
        "custom_initial_data",
        "delegate",
        "might_have_side_effect",
    )

    def __init__(
        self,
        index: int,
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        intermediates: tuple[int, ...] = (),
        builtin_data: Any = None,
        custom_initial_data: bytes | None = None,
    ):
        self.index = index
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.intermediates = tuple(intermediates)
        self.temporaries: tuple[int, ...] = ()
        self.user_data: Any = None
        self.builtin_data = builtin_data
        self.custom_initial_data = custom_initial_data
        self.delegate: Delegate | None = None
        self.might_have_side_effect = False

    def __repr__(self) -> str:
        return f"Node(#{self.index} inputs={list(self.inputs)} outputs={list(self.outputs)})"


@dataclass(frozen=True)
class DelegateParams:
    """What a delegate kernel's init receives: the nodes it replaces and the subset's boundary tensors."""

    delegate: Delegate | None
    nodes_to_replace: tuple[int, ...]
    input_tensors: tuple[int, ...]
    output_tensors: tuple[int, ...]


def _unresolved_custom_op_invoke(context: Context, node: Node) -> None:
    raise KernelError("Encountered an unresolved custom op. Did you miss a custom op or delegate?")


def unresolved_custom_op(name: str) -> Registration:
    """Stand-in for a custom op the resolver lacks: loading succeeds (a delegate may still claim the
    node), preparing it fails with TFLite's "Encountered unresolved custom op" message."""
    return Registration(
        invoke=_unresolved_custom_op_invoke, builtin_code=BuiltinOperator.CUSTOM, custom_name=name
    )


FLEX_PREFIX = "Flex"  # a Select TF op's custom code: "Flex" + the TF op's name


def is_flex_op(custom_name: str | None) -> bool:
    """Whether a custom op is a Select TF op, which pytflite/flex runs (the builder gives it the Flex
    kernel when the resolver has nothing under that name)."""
    return bool(custom_name) and custom_name.startswith(FLEX_PREFIX)


def unresolved_op_message(name: str) -> str:
    """TFLite's report for preparing a custom op no resolver provides (Flex ops have their kernel:
    pytflite/flex)."""
    return (
        f"Encountered unresolved custom op: {name}.\n"
        "See instructions: https://www.tensorflow.org/lite/guide/ops_custom "
    )


def is_unresolved_custom_op(registration: Registration) -> bool:
    return (
        registration.builtin_code == BuiltinOperator.CUSTOM
        and registration.invoke is _unresolved_custom_op_invoke
    )

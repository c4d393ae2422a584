"""PlanRunner: what invoke runs for one prepared execution plan.

Built as one value by allocate_tensors from the plan and the prepared subgraph, and thrown away, never
patched, when the graph, its plan or its input shapes change (Subgraph.invalidate,
resize_input_tensor). Two loops:

- the fast one runs a precomputed list of (invoke, node) steps with no checks in between, as a
  StepProgram (core/step_program.py); it runs when everything is prepared and allocated and no tensor
  lives in a delegate's buffer;
- the careful one is TFLite's Subgraph::Invoke: it checks each node's inputs, copies stale delegate
  buffers back, prepares the rest of the plan lazily after a node with dynamic outputs, and reports to a
  profiler. Plan positions before the first dynamic output still run as fast steps (the prefix); the
  other nodes run their bound calls too where those still fit (_NodeStep), else their invoke.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from .delegate import DelegateFlags
from .node import OPTIONAL_TENSOR, Node
from .profiling import EventType
from .step_program import Direct, StepProgram, Steps, Written
from .types import NON_POD_TYPES, AllocationType, BuiltinOperator, Status

if TYPE_CHECKING:
    from .subgraph import Subgraph
    from .tensor import Tensor


class PlanRunner:
    """The invoke side of a prepared subgraph. `fast_steps`: the check-free step list, or None when the
    careful loop is needed (dynamic shapes, delegate buffers, inputs without data); `program`: those
    steps as one StepProgram (None with them)."""

    def __init__(self, subgraph: Subgraph):
        self._subgraph = subgraph
        self._context = subgraph.context
        self.fast_steps: Steps | None = self._fast_steps()
        self.program = None if self.fast_steps is None else self.make_program(self.fast_steps)
        self._prefix = None if self.fast_steps is not None else self._fast_prefix()
        self._arena_moves = subgraph.arena_moves  # the prefix's bound arrays are stale once it moves
        self._entries: list[tuple] | None = None  # per plan position, made on the first careful invoke
        self._suffixes: dict[int, _Suffix | None] = {}  # per plan position a lazy prepare starts at
        self._node_steps: dict[int, _NodeStep] = {}  # per node index the careful loop ran

    def invoke(self) -> None:
        """Run every node of the plan once; the caller ignores float errors (core/float_errors)."""
        program = self.program
        if program is None or self._context.profiler is not None:
            self._invoke_careful()
        else:
            program.run()

    # --- building ------------------------------------------------------------------------------------

    def _fast_steps(self) -> Steps | None:
        subgraph = self._subgraph
        if subgraph.cursor.next_to_prepare < len(subgraph.execution_plan) or subgraph.has_dynamic_tensors:
            return None
        steps = []
        for node_index in subgraph.execution_plan:
            if node_index in subgraph.folded_nodes:
                continue
            node, registration = subgraph.nodes[node_index]
            if registration.invoke is None or any(
                t != OPTIONAL_TENSOR and _held_elsewhere(subgraph.tensors[t]) for t in node.inputs
            ):
                return None
            steps.append((_step(subgraph, node, registration), node))
        return steps

    def make_program(self, steps: Steps) -> StepProgram:
        """`steps` (check-free steps of this subgraph) as a StepProgram reporting failures as invoke does."""
        return StepProgram(steps, self._context, self._failed)

    def _fast_prefix(self) -> tuple[StepProgram, int] | None:
        """For a graph the careful loop runs: the check-free steps of the plan positions before the first
        node with dynamic outputs (those are prepared and allocated once, never again during invoke), and
        the position after them; None when there are none. The last node prepared is never among them:
        prepare stopped after it because its outputs are dynamic or their shape is not known yet."""
        subgraph = self._subgraph
        if subgraph.delegation.pre_delegation_plan is not None or subgraph.delegation.applied:
            return None
        steps = []
        end = 0
        tensors = subgraph.tensors
        dynamic = AllocationType.DYNAMIC
        for position in range(min(subgraph.cursor.next_to_prepare, len(subgraph.execution_plan)) - 1):
            node_index = subgraph.execution_plan[position]
            node, registration = subgraph.nodes[node_index]
            if registration.invoke is None or any(
                t != OPTIONAL_TENSOR and tensors[t].allocation_type == dynamic for t in node.outputs
            ):
                break
            if node_index not in subgraph.folded_nodes:
                if any(t != OPTIONAL_TENSOR and _held_elsewhere(tensors[t]) for t in node.inputs):
                    break
                steps.append((_step(subgraph, node, registration), node))
            end = position + 1
        return (self.make_program(steps), end) if end else None

    def _suffix(self, first: int) -> _Suffix | None:
        """The check-free steps of the nodes a lazy prepare from plan position `first` just went over,
        up to the node with dynamic outputs it stopped after (which the careful loop runs, to notice its
        resize); None when they need the careful loop's checks. Kept while the arena stays and no bound
        node is prepared again (_Suffix.valid)."""
        subgraph = self._subgraph
        suffix = self._suffixes.get(first)
        if suffix is not None and suffix.valid(subgraph):
            return suffix
        suffix = self._suffixes[first] = _Suffix.build(subgraph, first, self.make_program)
        return suffix

    def _careful_entries(self) -> list[tuple]:
        """Per plan position: node, registration, its (position, index, Tensor) inputs, output Tensors."""
        if self._entries is None:
            subgraph = self._subgraph
            tensors = subgraph.tensors
            entries = []
            for node_index in subgraph.execution_plan:
                node, registration = subgraph.nodes[node_index]
                inputs = tuple((i, t, tensors[t]) for i, t in enumerate(node.inputs) if t != OPTIONAL_TENSOR)
                outputs = tuple(tensors[t] for t in node.outputs if t != OPTIONAL_TENSOR)
                entries.append((node, registration, inputs, outputs))
            self._entries = entries
        return self._entries

    # --- running -------------------------------------------------------------------------------------

    def _failed(self, node: Node, error: Exception | None = None, status: Any = Status.ERROR) -> NoReturn:
        subgraph = self._subgraph
        registration = subgraph.nodes[node.index][1]
        subgraph.kernel_failed("invoke", node, registration, status=Status(status), error=error)

    def _invoke_careful(self) -> None:
        subgraph = self._subgraph
        entries = self._careful_entries()
        context = self._context
        profiler = context.profiler
        start = 0
        if self._arena_moves != subgraph.arena_moves:  # a lazy allocation grew the arena: bind again
            self._arena_moves = subgraph.arena_moves
            self._prefix = self._fast_prefix()
        prefix = self._prefix
        if prefix is not None and profiler is None and subgraph.cursor.next_to_prepare >= prefix[1]:
            prefix[0].run()
            start = prefix[1]
        dynamic = AllocationType.DYNAMIC
        count = len(entries)
        next_position = start
        while next_position < count:
            position = next_position
            next_position += 1
            if position == subgraph.cursor.next_to_prepare:
                subgraph.prepare_ops_and_tensors(in_invoke=True)
                suffix = self._suffix(position) if profiler is None else None
                if suffix is not None:  # the nodes this prepare went over, without per-node checks
                    suffix.program.run()
                    next_position = suffix.end
                    continue
            node, registration, inputs, outputs = entries[position]
            if node.index in subgraph.folded_nodes:
                continue
            for input_ in inputs:
                tensor = input_[2]
                if tensor.delegate is not None or tensor.data is None:  # else nothing to copy or refuse
                    self._make_input_readable(node, registration, *input_)
            if registration.invoke is None:
                subgraph.fail(f"Node number {node.index} ({registration.op_name}) failed to invoke.")
            subgraph.cursor.resized_during_invoke = False
            if profiler is None:
                try:
                    status = self._node_step(node, registration)(context, node)
                except Exception as error:
                    subgraph.kernel_failed("invoke", node, registration, error=error)
                if status:  # None and Status.OK are falsy
                    subgraph.kernel_failed("invoke", node, registration, status=Status(status))
            else:
                self._invoke_profiled(node, registration, profiler)
            if subgraph.cursor.resized_during_invoke and any(o.allocation_type == dynamic for o in outputs):
                subgraph.cursor.prepare_again_after(position)

    def _make_input_readable(self, node: Node, registration: Any, i: int, t: int, tensor: Tensor) -> None:
        """Copy a stale delegate buffer back for a CPU consumer; refuse an input that has no data."""
        subgraph = self._subgraph
        if tensor.delegate is not None and tensor.delegate is not node.delegate and tensor.data_is_stale:
            subgraph.delegation.ensure_tensor_data_is_readable(t)
        if tensor.data is None and _lacks_data(tensor) and tensor.allocation_type != AllocationType.NON_CPU:
            if registration.builtin_code == BuiltinOperator.RESHAPE and i == 1 and len(tensor.shape) != 1:
                return  # RESHAPE may take its shape from options instead
            subgraph.fail(f"Input tensor {t} lacks data")

    def _node_step(self, node: Node, registration: Any) -> Callable:
        """What the careful loop calls for a node: its bound calls (_step) while they fit, else its
        invoke. They fit while the node was not prepared again (its recorded PreparedInputs is the same
        object), the arena did not move and its tensors have the arrays they were bound to (a delegate's
        copy back may give one a new array). A node without a pure prepare, or reading or writing a
        dynamic tensor, runs its invoke: its arrays may change at every call."""
        subgraph = self._subgraph
        prepared = subgraph.cursor.prepared_inputs.get(node.index)
        if prepared is None or registration.calls is None:
            return registration.invoke
        held = self._node_steps.get(node.index)
        if held is not None and held.fits(prepared, subgraph.arena_moves):
            return held.step
        held = self._node_steps[node.index] = _NodeStep(subgraph, node, registration, prepared)
        return held.step

    def _invoke_profiled(self, node: Node, registration: Any, profiler: Any) -> None:
        subgraph = self._subgraph
        step = self._node_step(node, registration)
        if not _profiled_as_one_node(profiler, node):
            subgraph.call_kernel("invoke", step, node, registration)
        else:
            handle = profiler.begin_event(
                registration.op_name, EventType.OPERATOR_INVOKE_EVENT, node.index, subgraph.index
            )
            try:
                subgraph.call_kernel("invoke", step, node, registration)
            finally:
                profiler.end_event(handle)


class _NodeStep:
    """One node's step for the careful loop (PlanRunner._node_step), with what it was bound for: the
    node's PreparedInputs, the arena's move count and the arrays of its tensors."""

    __slots__ = ("step", "prepared", "arena_moves", "arrays")

    def __init__(self, subgraph: Subgraph, node: Node, registration: Any, prepared: Any):
        tensors = [
            subgraph.tensors[t]
            for t in (*node.inputs, *node.outputs, *node.temporaries)
            if t != OPTIONAL_TENSOR
        ]
        dynamic = any(tensor.allocation_type == AllocationType.DYNAMIC for tensor in tensors)
        self.step = registration.invoke if dynamic else _step(subgraph, node, registration)
        self.prepared, self.arena_moves = prepared, subgraph.arena_moves
        self.arrays = tuple((tensor, tensor.data) for tensor in tensors)

    def fits(self, prepared: Any, arena_moves: int) -> bool:
        if prepared is not self.prepared or arena_moves != self.arena_moves:
            return False
        for tensor, array in self.arrays:  # noqa: SIM110 (a plain loop: this runs per node and invoke)
            if tensor.data is not array:
                return False
        return True


class _Suffix:
    """Check-free steps for plan positions [first, end) after a lazy prepare (PlanRunner._suffix).

    Every node in it has a pure prepare (so one prepared again had its inputs change) and no dynamic
    output. Bound steps (Registration.calls) are valid while the arena has not moved and their node was
    not prepared again: its recorded inputs (Subgraph.cursor.prepared_inputs) are still the same object. A node
    reading a dynamic tensor is prepared again at nearly every resize, so it runs its plain invoke, which
    looks its arrays up each time, and does not make the suffix be built again."""

    __slots__ = ("program", "end", "last", "arena_moves", "bound")

    def __init__(self, program: StepProgram, end: int, last: int, arena_moves: int, bound: tuple):
        self.program, self.end, self.last, self.arena_moves, self.bound = (
            program,
            end,
            last,
            arena_moves,
            bound,
        )

    @staticmethod
    def build(subgraph: Subgraph, first: int, make_program: Callable) -> _Suffix | None:
        delegation = subgraph.delegation
        if delegation.pre_delegation_plan is not None or delegation.applied:
            return None
        tensors = subgraph.tensors
        prepared = subgraph.cursor.prepared_inputs
        plan = subgraph.execution_plan
        last = subgraph.cursor.next_to_prepare - 1  # where the lazy prepare stopped
        dynamic = AllocationType.DYNAMIC
        end = last
        if last == len(plan) - 1:  # it reached the end: the last node is included unless it is dynamic
            node = subgraph.nodes[plan[last]][0]
            if all(t == OPTIONAL_TENSOR or tensors[t].data is not None for t in node.outputs) and not any(
                t != OPTIONAL_TENSOR and tensors[t].allocation_type == dynamic for t in node.outputs
            ):
                end = last + 1
        steps: Steps = []
        bound = []
        for position in range(first, end):
            node_index = plan[position]
            node, registration = subgraph.nodes[node_index]
            inputs = prepared.get(node_index)
            if inputs is None or registration.invoke is None:  # not a pure prepare, or nothing to run
                return None
            if any(t != OPTIONAL_TENSOR and _held_elsewhere(tensors[t]) for t in node.inputs):
                return None
            if node_index in subgraph.folded_nodes:
                bound.append((node_index, inputs))  # folded while prepared as it is now
                continue
            if any(t != OPTIONAL_TENSOR and tensors[t].allocation_type == dynamic for t in node.inputs):
                steps.append((registration.invoke, node))
            else:
                steps.append((_step(subgraph, node, registration), node))
                bound.append((node_index, inputs))
        if end == first:
            return None
        return _Suffix(make_program(steps), end, last, subgraph.arena_moves, tuple(bound))

    def valid(self, subgraph: Subgraph) -> bool:
        """Whether the steps still fit: the lazy prepare stopped at the same node, the arena did not move,
        and no bound node was prepared again."""
        if subgraph.cursor.next_to_prepare - 1 != self.last or subgraph.arena_moves != self.arena_moves:
            return False
        prepared = subgraph.cursor.prepared_inputs
        for node_index, inputs in self.bound:  # noqa: SIM110 (a plain loop: this runs per lazy prepare)
            if prepared.get(node_index) is not inputs:
                return False
        return True


def _profiled_as_one_node(profiler: Any, node: Node) -> bool:
    """As TFLite: a delegate flagged PER_OPERATOR_PROFILING reports its own per-op events instead,
    unless the profiler forces delegate nodes to be timed as a whole."""
    return (
        node.delegate is None
        or not DelegateFlags(node.delegate.flags) & DelegateFlags.PER_OPERATOR_PROFILING
        or getattr(profiler, "force_delegate_node_profiling", False)
    )


def _lacks_data(tensor: Tensor) -> bool:
    """No memory although the tensor has contents (a string tensor always has, even when empty)."""
    return tensor.data is None and (tensor.bytes > 0 or tensor.type in NON_POD_TYPES)


def _step(subgraph: Subgraph, node: Node, registration) -> Callable:
    """What a check-free step calls: the kernel's calls for the memory its tensors have now
    (Registration.calls, as a Direct step or its Written statement), or its invoke. A node reading or
    writing a string (or resource, variant) tensor is not bound: setting a string input gives the tensor
    a new array."""
    tensors = subgraph.tensors
    if registration.calls is None or any(
        t != OPTIONAL_TENSOR and tensors[t].type in NON_POD_TYPES for t in (*node.inputs, *node.outputs)
    ):
        return registration.invoke
    calls = registration.calls(subgraph.context, node)
    if calls is None:
        return registration.invoke
    return calls if isinstance(calls, Written) else Direct(*calls)


def _held_elsewhere(tensor: Tensor) -> bool:
    """An input the fast loop cannot read as is: in a delegate's buffer, or without data."""
    return tensor.delegate is not None or _lacks_data(tensor)

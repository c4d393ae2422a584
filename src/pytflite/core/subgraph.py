"""Subgraph: tensors, nodes and an execution plan, with TFLite's allocate / prepare / invoke lifecycle.

    allocate_tensors()  prepare nodes in plan order (stopping after a node with dynamic outputs),
                        plan the arena, bind tensor data, zero the variables
    invoke()            run the plan; nodes after a dynamic output are prepared lazily when reached
    resize_input_tensor(i, shape) + allocate_tensors()   re-prepare everything for new input shapes

Once everything is prepared, invoke walks a precomputed list of (invoke, node) steps with no checks in
between; the careful loop with TFLite's per-node checks runs only when the graph needs it (dynamic
shapes, delegate buffers, a profiler, inputs without data).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from ..errors import ErrorReporter, InterpreterError, KernelError
from .arena import ArenaLimitError, ArenaPlanner
from .context import Context
from .delegate import DelegateFlags
from .delegation import Delegation
from .node import OPTIONAL_TENSOR, Node, Registration, is_unresolved_custom_op
from .resources import Resources
from .tensor import Tensor
from .types import (
    NON_POD_TYPES,
    OK_STATUSES,
    AllocationType,
    BuiltinOperator,
    Status,
    SubgraphState,
    TensorType,
    bytes_required,
    storage_dtype,
    stored_shape,
)

_RESIZABLE = frozenset(
    {
        AllocationType.ARENA_RW,
        AllocationType.DYNAMIC,
        AllocationType.ARENA_RW_PERSISTENT,
        AllocationType.PERSISTENT_RO,
        AllocationType.CUSTOM,
        AllocationType.NON_CPU,
    }
)
_ARENA = frozenset({AllocationType.ARENA_RW, AllocationType.ARENA_RW_PERSISTENT})
_CONSTANT = frozenset({AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO})
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


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """Bytes by kind of memory. arena_lower_bound_bytes is the most live rw-tensor bytes at any plan
    step; the arena can be no smaller, and TFLite-style placement keeps it close."""

    arena_bytes: int
    arena_lower_bound_bytes: int
    persistent_arena_bytes: int
    constant_bytes: int
    dynamic_bytes: int


class Subgraph:
    """One graph of a model (tflite::Subgraph)."""

    def __init__(
        self,
        index: int = 0,
        name: str = "",
        error_reporter: ErrorReporter | None = None,
        *,
        preserve_all_tensors: bool = False,
        metadata: dict[str, bytes] | None = None,
        resources: Resources | None = None,
    ):
        self.index = index
        self.name = name
        self.error_reporter = error_reporter or ErrorReporter()
        # shared with the interpreter's other subgraphs (set by the builder): control flow calls them
        self.subgraphs: list[Subgraph] = [self]
        self.resources = resources if resources is not None else Resources()
        self.preserve_all_tensors = preserve_all_tensors
        self.metadata = metadata or {}
        self.tensors: list[Tensor] = []
        self.nodes: list[tuple[Node, Registration]] = []
        self.execution_plan: list[int] = []
        self.inputs: tuple[int, ...] = ()
        self.outputs: tuple[int, ...] = ()
        self.variables: tuple[int, ...] = ()
        self.context = Context(self)
        self.state = SubgraphState.UNINVOKABLE
        self.consistent = True
        self.has_dynamic_tensors = False
        self.limits: Any = None  # model.verifier.Limits from the Interpreter: caps tensor sizes, WHILE loops
        self._planner: ArenaPlanner | None = None
        self._next_to_prepare = 0  # plan position of the first node not yet prepared
        self._next_to_allocate = 0  # plan position of the first node whose outputs have no memory yet
        self._resized_during_invoke = False
        self._steps: list[tuple[Callable, Node]] | None = None  # the fast invoke path, when valid
        # with dynamic tensors: check-free steps for the plan positions before the first dynamic output,
        # and the position where the careful loop takes over
        self._prefix: tuple[list[tuple[Callable, Node]], int] | None = None
        self._folded: set[int] = set()  # nodes computed once in prepare: their inputs are all constant
        self._careful: list[tuple] | None = None  # per plan position, for the careful invoke loop
        self._careful_for: list[int] = []  # the plan _careful was built for
        self._plan_nodes_cache: tuple[list[int], list[Node]] | None = None
        self.delegation = Delegation(self)

    # --- building ----------------------------------------------------------------------------------

    def add_tensors(self, count: int) -> tuple[int, ...]:
        """Append `count` empty tensors (no type, no shape); returns their indices."""
        if count < 0:
            raise KernelError(f"add_tensors called with negative count {count}")
        first = len(self.tensors)
        self.tensors.extend(Tensor(first + i) for i in range(count))
        return tuple(range(first, first + count))

    def add_node_with_parameters(
        self,
        inputs: Sequence[int],
        outputs: Sequence[int],
        intermediates: Sequence[int],
        init_data: bytes | None,
        builtin_data: Any,
        registration: Registration,
    ) -> int:
        """Create a node, run its registration's init, and append it to the plan; returns its index."""
        if self.state == SubgraphState.INVOKABLE_AND_IMMUTABLE:
            self._fail("AddNodeWithParameters is disallowed when graph is immutable.")
        self._invalidate()
        self._check_tensor_indices("node inputs", inputs)
        self._check_tensor_indices("node outputs", outputs)
        if builtin_data is not None:  # builtin ops may not alias an input as an output; custom ops may
            for i, t in enumerate(inputs):
                if t in outputs and t != OPTIONAL_TENSOR:
                    self.consistent = False
                    self._fail(f"Tensor {t} is both input {i} and output {list(outputs).index(t)}\n")
        node = Node(len(self.nodes), tuple(inputs), tuple(outputs), tuple(intermediates), builtin_data)
        if registration.builtin_code == BuiltinOperator.CUSTOM:
            node.custom_initial_data = init_data
        if registration.init is not None:
            try:
                if init_data is not None:
                    node.user_data = registration.init(self.context, init_data, len(init_data))
                else:
                    node.user_data = registration.init(self.context, builtin_data, 0)
            except Exception as error:
                self.report_error(f"{registration.op_name} init raised {type(error).__name__}: {error}")
                self._fail("Failed to initialize kernel.", cause=error)
        node.might_have_side_effect = self._might_have_side_effect(node, registration)
        self.nodes.append((node, registration))
        self.execution_plan.append(node.index)
        return node.index

    def _check_tensor_indices(self, label: str, indices: Sequence[int]) -> None:
        for t in indices:
            if t != OPTIONAL_TENSOR and not 0 <= t < len(self.tensors):
                self.consistent = False
                self._fail(
                    f"Invalid tensor index {t} in {label}. The subgraph has {len(self.tensors)} tensors\n"
                )

    def _might_have_side_effect(self, node: Node, registration: Registration) -> bool:
        touches_resource = any(
            0 <= t < len(self.tensors) and self.tensors[t].type == TensorType.RESOURCE
            for t in node.inputs + node.outputs
        )
        control_flow = registration.builtin_code in (
            BuiltinOperator.IF,
            BuiltinOperator.WHILE,
            BuiltinOperator.CALL_ONCE,
        )
        return touches_resource or control_flow

    def node_and_registration(self, node_index: int) -> tuple[Node, Registration]:
        if not 0 <= node_index < len(self.nodes):
            raise KernelError(f"node index {node_index} out of range [0, {len(self.nodes)})")
        return self.nodes[node_index]

    def _invalidate(self) -> None:
        """The graph changed: it must be prepared and planned again before the next invoke."""
        self.state = SubgraphState.UNINVOKABLE
        self._planner = None
        self._steps = None
        self._prefix = None
        self._careful = None
        self._plan_nodes_cache = None
        self._folded = set()

    # --- errors --------------------------------------------------------------------------------------

    def report_error(self, message: str) -> None:
        self.error_reporter.report(message)

    def _fail(
        self, message: str | None, status: Status = Status.ERROR, cause: BaseException | None = None
    ) -> NoReturn:
        """Report `message` (if any) and raise the accumulated error text, as LiteRT's Python API does."""
        if message:
            self.report_error(message)
        raise InterpreterError(self.error_reporter.text, status) from cause

    def _call_kernel(self, step: str, function: Callable, node: Node, registration: Registration) -> Status:
        """Run a kernel's prepare or invoke; a failure is reported with TFLite's "Node number" line."""
        try:
            status = function(self.context, node)
        except Exception as error:
            self._kernel_failed(step, node, registration, error=error)
        if status in OK_STATUSES:
            return Status.OK
        if status == Status.OUTPUT_SHAPE_NOT_KNOWN and step == "prepare":
            return Status.OUTPUT_SHAPE_NOT_KNOWN
        self._kernel_failed(step, node, registration, status=Status(status))

    def _kernel_failed(
        self,
        step: str,
        node: Node,
        registration: Registration,
        status: Status = Status.ERROR,
        error: Exception | None = None,
    ) -> NoReturn:
        if error is not None:
            status = self._report_exception(error)
        op_name = registration.custom_name or BuiltinOperator(registration.builtin_code).name
        self._fail(f"Node number {node.index} ({op_name}) failed to {step}.", status, error)

    def _report_exception(self, error: Exception) -> Status:
        """Put a kernel's or delegate's exception into the error text; returns the status it carries."""
        if isinstance(error, KernelError):
            self.report_error(str(error))
            return error.status
        if isinstance(error, InterpreterError):  # a nested subgraph failed and already reported why
            return error.status
        self.report_error(f"{type(error).__name__}: {error}")  # a bug: its traceback stays as the cause
        return Status.ERROR

    # --- allocation and preparation ------------------------------------------------------------------

    def allocate_tensors(self) -> None:
        """Prepare all nodes and give every tensor memory (Subgraph::AllocateTensors)."""
        if not self.consistent:
            self._fail("AllocateTensors() called on inconsistent model.")
        self.delegation.redo_all_delegates()
        if self.state != SubgraphState.UNINVOKABLE and not self._has_dynamic(self.inputs):
            return  # shapes and memory plan are unchanged
        self._next_to_prepare = 0
        self._next_to_allocate = 0
        self._folded = set()
        if self._planner is not None:
            self._planner.reset_allocations()
        self._prepare_ops_and_tensors()
        self.state = SubgraphState.INVOKABLE
        self.reset_variable_tensors()
        self._steps = self._fast_steps()
        self._prefix = None if self._steps is not None else self._fast_prefix()

    def _plan_nodes(self) -> list[Node]:
        plan = self.execution_plan
        cached = self._plan_nodes_cache
        if cached is None or cached[0] != plan:
            cached = self._plan_nodes_cache = (list(plan), [self.nodes[i][0] for i in plan])
        return cached[1]

    def _prepare_ops_and_tensors(self, in_invoke: bool = False) -> None:
        """Prepare from the next unprepared node and allocate what it produced; `in_invoke`: called from
        inside invoke, where np.errstate is already set."""
        delegation = self.delegation
        if delegation.pre_delegation_plan is not None and any(
            DelegateFlags(d.flags) & DelegateFlags.REQUIRE_PROPAGATED_SHAPES for d in delegation.applied
        ):  # the delegate wants shapes as the original kernels compute them
            self._prepare_ops_starting_at(self._next_to_prepare, delegation.pre_delegation_plan)
        last = self._prepare_ops_starting_at(self._next_to_prepare, errstate=not in_invoke)
        self._next_to_prepare = last + 1
        plan_nodes = self._plan_nodes()
        if self._planner is None:
            max_bytes = None if self.limits is None else self.limits.max_bytes
            self._planner = ArenaPlanner(self.tensors, self.preserve_all_tensors, max_bytes)
            self._planner.plan_allocations(plan_nodes, self.inputs, self.outputs, self.variables)
        try:
            self._planner.execute_allocations(self._next_to_allocate, last, plan_nodes)
        except ArenaLimitError as error:  # reported, so a calling subgraph's error text says why
            self._fail(str(error))
        self._next_to_allocate = last + 1

    def _prepare_ops_starting_at(
        self, first: int, plan: list[int] | None = None, errstate: bool = True
    ) -> int:
        """Prepare plan nodes from `first`; stop after one with dynamic outputs. Returns the last position.
        `errstate` False: the caller already ignores NumPy floating-point warnings (inside invoke)."""
        plan = self.execution_plan if plan is None else plan
        if first == 0:
            self.has_dynamic_tensors = self._has_dynamic(self.outputs)
        if not errstate:
            return self._prepare_loop(first, plan)
        with np.errstate(all="ignore"):  # as in invoke: kernels computing in prepare (folding) give inf/NaN
            return self._prepare_loop(first, plan)

    def _prepare_loop(self, first: int, plan: list[int]) -> int:
        last = first
        nodes = self.nodes
        tensors = self.tensors
        dynamic = AllocationType.DYNAMIC
        for position in range(first, len(plan)):
            node, registration = nodes[plan[position]]
            status = self._prepare_node(node, registration)
            last = position
            if status == Status.OUTPUT_SHAPE_NOT_KNOWN or any(
                t != OPTIONAL_TENSOR and tensors[t].allocation_type == dynamic for t in node.outputs
            ):
                self.has_dynamic_tensors = True
                break
            self._fold_if_constant(node, registration)
        return last

    def _fold_if_constant(self, node: Node, registration: Registration) -> None:
        """Compute once, now, a node whose outputs are known in prepare, into persistent read-only
        outputs; invoke skips it afterwards. The one folding mechanism of builtin kernels: a node whose
        inputs are all constants, or whose prepare marked every output persistent read-only
        (context.set_tensor_to_persistent_ro: SHAPE of any input, a shape computed from shapes).

        TFLite's kernels compute such outputs in their prepare, one by one; doing it here for every
        stateless builtin op also makes e.g. a shape computed from constants a constant, so the nodes
        that use it stay static instead of being prepared again at every invoke.
        """
        tensors = self.tensors
        if (
            registration.builtin_code in _NEVER_FOLDED
            or node.might_have_side_effect
            or node.temporaries
            or registration.invoke is None
        ):
            return
        outputs = [tensors[t] for t in node.outputs if t != OPTIONAL_TENSOR]
        if not outputs or any(
            o.type in NON_POD_TYPES
            or o.allocation_type not in (AllocationType.ARENA_RW, AllocationType.PERSISTENT_RO)
            for o in outputs
        ):
            return
        marked = all(o.allocation_type == AllocationType.PERSISTENT_RO for o in outputs)
        if not marked and (
            not node.inputs
            or any(t != OPTIONAL_TENSOR and tensors[t].allocation_type not in _CONSTANT for t in node.inputs)
        ):
            return
        for output in outputs:
            if output.allocation_type != AllocationType.PERSISTENT_RO:
                self.context.set_tensor_to_persistent_ro(output)
                self.resize_tensor(output, output.shape)
        self._call_kernel("invoke", registration.invoke, node, registration)
        self._folded.add(node.index)

    def _prepare_node(self, node: Node, registration: Registration) -> Status:
        if registration.prepare is not None:
            return self._call_kernel("prepare", registration.prepare, node, registration)
        if is_unresolved_custom_op(registration):
            name = registration.custom_name or "UnknownOp"
            if name.startswith("Flex"):
                message = (
                    "Select TensorFlow op(s), included in the given model, is(are) not supported by this "
                    "interpreter. Make sure you apply/link the Flex delegate before inference. For the "
                    'Android, it can be resolved by adding "org.tensorflow:tensorflow-lite-select-tf-ops" '
                    "dependency. See instructions: https://www.tensorflow.org/lite/guide/ops_select"
                )
            else:
                message = (
                    f"Encountered unresolved custom op: {name}.\n"
                    "See instructions: https://www.tensorflow.org/lite/guide/ops_custom "
                )
            self.report_error(message)
            self._fail(f"Node number {node.index} ({name}) failed to prepare.", Status.UNRESOLVED_OPS)
        return Status.OK  # a resolved op may have no prepare

    def _has_dynamic(self, indices: Sequence[int]) -> bool:
        return any(
            t != OPTIONAL_TENSOR and self.tensors[t].allocation_type == AllocationType.DYNAMIC
            for t in indices
        )

    def resize_tensor(self, tensor: Tensor, new_shape: Sequence[int]) -> None:
        """Context.resize_tensor: set shape and byte size; (re)allocate dynamic tensors right away."""
        if (  # unchanged (kernels re-prepared after a dynamic resize mostly ask for the same shape)
            tensor.data is not None
            and type(new_shape) in (tuple, list)
            and tensor.shape == tuple(new_shape)
            and (tensor.type in NON_POD_TYPES or tensor.bytes == bytes_required(tensor.type, tensor.shape))
        ):
            return
        try:
            shape = tuple(int(d) for d in new_shape)
        except (TypeError, ValueError):
            raise KernelError(f"resize_tensor: shape {new_shape!r} is not a sequence of integers") from None
        if any(d < 0 for d in shape):
            raise KernelError(
                f"resize_tensor: negative dimension in shape {list(shape)} of tensor {tensor.index}"
            )
        if self.limits is not None:
            self.limits.check_resize(tensor, shape)
        pod = tensor.type not in NON_POD_TYPES
        if (
            tensor.data is not None
            and tensor.shape == shape
            and (not pod or tensor.bytes == bytes_required(tensor.type, shape))
        ):
            return
        if tensor.allocation_type not in _RESIZABLE:
            raise KernelError("Attempting to resize a fixed-size tensor.")
        if tensor.shape != shape:
            self._resized_during_invoke = True
        tensor.shape = shape
        if pod:
            tensor.bytes = bytes_required(tensor.type, shape)
        if tensor.allocation_type in _ARENA:
            tensor.data = None  # bound again when the arena is (re)planned
        elif tensor.allocation_type in (AllocationType.DYNAMIC, AllocationType.PERSISTENT_RO):
            tensor.data = _new_array(tensor)

    def resize_input_tensor(self, index: int, shape: Sequence[int], strict: bool = False) -> None:
        """Change a tensor's shape before the next allocate_tensors (Subgraph::ResizeInputTensor[Strict])."""
        if not 0 <= index < len(self.tensors):
            self._fail(
                f"tensor_index < context_.tensors_size && tensor_index >= 0 was not true (index {index})."
            )
        tensor = self.tensors[index]
        shape = tuple(int(d) for d in shape)
        if strict:
            if len(tensor.shape) != len(shape):
                self._fail(f"tensor->dims->size != dims.size() ({len(tensor.shape)} != {len(shape)})")
            for axis, (signature_dim, new_dim) in enumerate(zip(tensor.shape_signature, shape)):
                if signature_dim != -1 and signature_dim != new_dim:
                    self._fail(
                        f"Attempting to resize dimension {axis} of tensor {index} with value {signature_dim} to "
                        f"{new_dim}. ResizeInputTensorStrict only allows mutating unknown dimensions identified by -1."
                    )
        immutable = self.state == SubgraphState.INVOKABLE_AND_IMMUTABLE
        if immutable and not self.delegation.applied:
            self._fail("ResizeInputTensor is disallowed when graph is immutable.")
        if tensor.data is not None and tensor.shape == shape:
            return
        if immutable:
            self.delegation.undo_all_delegates()  # static delegates see fixed shapes: they are re-applied on allocate
        self.state = SubgraphState.UNINVOKABLE
        self._steps = None
        self._prefix = None
        try:
            self.resize_tensor(tensor, shape)
        except KernelError as error:
            self._fail(str(error))

    def reset_variable_tensors(self) -> None:
        """Zero every variable tensor (int8 variables to their zero point), as TFLite does."""
        for t in self.variables:
            tensor = self.tensors[t]
            if tensor.allocation_type == AllocationType.CUSTOM:
                continue
            if tensor.allocation_type != AllocationType.ARENA_RW_PERSISTENT or tensor.data is None:
                self._fail(f"Variable tensor {t} has no persistent memory to reset.")
            tensor.data[...] = tensor.params.zero_point if tensor.type == TensorType.INT8 else 0

    # --- invocation ----------------------------------------------------------------------------------

    def _fast_steps(self) -> list[tuple[Callable, Node]] | None:
        """The check-free invoke list, or None when the careful TFLite loop is needed."""
        if self._next_to_prepare < len(self.execution_plan) or self.has_dynamic_tensors:
            return None
        steps = []
        for node_index in self.execution_plan:
            if node_index in self._folded:
                continue
            node, registration = self.nodes[node_index]
            for t in node.inputs:
                if t == OPTIONAL_TENSOR:
                    continue
                tensor = self.tensors[t]
                if tensor.delegate is not None or _lacks_data(tensor):
                    return None
            if registration.invoke is None:
                return None
            steps.append((registration.invoke, node))
        return steps

    def _fast_prefix(self) -> tuple[list[tuple[Callable, Node]], int] | None:
        """For a graph the careful loop runs: the check-free steps of the plan positions before the first
        node with dynamic outputs (those are prepared and allocated once, never again during invoke), and
        the position after them; None when there are none. The last node prepared is never among them:
        prepare stopped after it because its outputs are dynamic or their shape is not known yet."""
        if self.delegation.pre_delegation_plan is not None or self.delegation.applied:
            return None
        steps = []
        end = 0
        tensors = self.tensors
        dynamic = AllocationType.DYNAMIC
        for position in range(min(self._next_to_prepare, len(self.execution_plan)) - 1):
            node_index = self.execution_plan[position]
            node, registration = self.nodes[node_index]
            if registration.invoke is None or any(
                t != OPTIONAL_TENSOR and tensors[t].allocation_type == dynamic for t in node.outputs
            ):
                break
            if node_index not in self._folded:
                if any(
                    t != OPTIONAL_TENSOR and (tensors[t].delegate is not None or _lacks_data(tensors[t]))
                    for t in node.inputs
                ):
                    break
                steps.append((registration.invoke, node))
            end = position + 1
        return (steps, end) if end else None

    def invoke(self) -> None:
        """Run every node of the plan once (Subgraph::Invoke)."""
        if not self.consistent:
            self._fail("Invoke called on model that is not consistent.")
        if self.state == SubgraphState.UNINVOKABLE:
            self._fail("Invoke called on model that is not ready.")
        # Overflow, division by zero and NaN are results here, as in TFLite, not warnings.
        with np.errstate(all="ignore"):
            if self._steps is not None and self.context.profiler is None:
                self._invoke_fast(self._steps)
            else:
                self._invoke_careful()

    def invoke_nested(self) -> None:
        """invoke() for a kernel running this subgraph from inside another subgraph's invoke (IF, WHILE):
        np.errstate is already set by the outer invoke, and entering it again costs a few microseconds."""
        if not self.consistent:
            self._fail("Invoke called on model that is not consistent.")
        if self.state == SubgraphState.UNINVOKABLE:
            self._fail("Invoke called on model that is not ready.")
        if self._steps is not None and self.context.profiler is None:
            self._invoke_fast(self._steps)
        else:
            self._invoke_careful()

    def _invoke_fast(self, steps: list[tuple[Callable, Node]]) -> None:
        context = self.context
        for invoke, node in steps:
            try:
                status = invoke(context, node)
            except Exception as error:
                self._kernel_failed("invoke", node, self.nodes[node.index][1], error=error)
            if status:  # None and Status.OK are falsy
                self._kernel_failed("invoke", node, self.nodes[node.index][1], status=Status(status))

    def _careful_entry(self, node_index: int) -> tuple:
        node, registration = self.nodes[node_index]
        tensors = self.tensors
        inputs = tuple((i, t, tensors[t]) for i, t in enumerate(node.inputs) if t != OPTIONAL_TENSOR)
        outputs = tuple(tensors[t] for t in node.outputs if t != OPTIONAL_TENSOR)
        return node, registration, node.inputs, inputs, outputs

    def _careful_entries(self) -> list[tuple]:
        """Per plan position: node, registration, and its input and output Tensor objects (cached while the
        plan stays the same; a node whose inputs were re-pointed gets a fresh entry when reached)."""
        plan = self.execution_plan
        if self._careful is None or self._careful_for != plan:
            self._careful = [self._careful_entry(i) for i in plan]
            self._careful_for = list(plan)
        return self._careful

    def _invoke_careful(self) -> None:
        plan = self.execution_plan
        entries = self._careful_entries()
        context = self.context
        profiler = context.profiler
        folded = self._folded
        dynamic = AllocationType.DYNAMIC
        start = 0
        prefix = self._prefix
        if prefix is not None and profiler is None and self._next_to_prepare >= prefix[1]:
            self._invoke_fast(prefix[0])
            start = prefix[1]
        for position in range(start, len(plan)):
            if position == self._next_to_prepare:
                self._prepare_ops_and_tensors(in_invoke=True)
            node, registration, inputs_key, inputs, outputs = entries[position]
            if node.inputs is not inputs_key or self.nodes[node.index][1] is not registration:
                entries[position] = self._careful_entry(plan[position])
                node, registration, inputs_key, inputs, outputs = entries[position]
            if node.index in folded:
                continue
            for i, t, tensor in inputs:
                if (
                    tensor.delegate is not None
                    and tensor.delegate is not node.delegate
                    and tensor.data_is_stale
                ):
                    self.delegation.ensure_tensor_data_is_readable(t)
                if (
                    tensor.data is None
                    and _lacks_data(tensor)
                    and tensor.allocation_type != AllocationType.NON_CPU
                ):
                    if (
                        registration.builtin_code == BuiltinOperator.RESHAPE
                        and i == 1
                        and len(tensor.shape) != 1
                    ):
                        continue  # RESHAPE may take its shape from options instead
                    self._fail(f"Input tensor {t} lacks data")
            if registration.invoke is None:
                self._fail(f"Node number {node.index} ({registration.op_name}) failed to invoke.")
            self._resized_during_invoke = False
            if profiler is None:
                try:
                    status = registration.invoke(context, node)
                except Exception as error:
                    self._kernel_failed("invoke", node, registration, error=error)
                if status:  # None and Status.OK are falsy
                    self._kernel_failed("invoke", node, registration, status=Status(status))
            elif not _profiled_as_one_node(profiler, node):
                self._call_kernel("invoke", registration.invoke, node, registration)
            else:
                handle = profiler.begin_event(
                    registration.op_name, _OPERATOR_INVOKE_EVENT, node.index, self.index
                )
                try:
                    self._call_kernel("invoke", registration.invoke, node, registration)
                finally:
                    profiler.end_event(handle)
            if self._resized_during_invoke and any(o.allocation_type == dynamic for o in outputs):
                self._next_to_prepare = position + 1
                if self._next_to_allocate > self._next_to_prepare:
                    # TFLite drops the placements of the tensors first written after `position`; the
                    # arena holds no dynamic tensor, so they stay valid and are kept: the allocation
                    # places again only the tensors that grew
                    self._next_to_allocate = self._next_to_prepare

    # --- teardown ------------------------------------------------------------------------------------

    def free(self) -> None:
        """Call every kernel's free with its user data (once) and free delegate buffer handles, as
        TFLite's subgraph destructor does."""
        for node, registration in self.nodes:
            self._free_node(node, registration)
        self.delegation.free_buffer_handles()

    def _free_node(self, node: Node, registration: Registration) -> None:
        if registration.free is not None and node.user_data is not None:
            registration.free(self.context, node.user_data)
        node.user_data = None

    def memory_report(self) -> MemoryReport:
        """Where the subgraph's bytes are, and how close the arena is to the best possible."""
        planner = self._planner
        by_type: dict[AllocationType, int] = {}
        for tensor in self.tensors:
            if tensor.data is not None and tensor.allocation_type not in _ARENA:
                by_type[tensor.allocation_type] = by_type.get(tensor.allocation_type, 0) + tensor.data.nbytes
        return MemoryReport(
            arena_bytes=0 if planner is None else planner.arena_bytes,
            arena_lower_bound_bytes=0 if planner is None else planner.lower_bound(len(self.execution_plan)),
            persistent_arena_bytes=0 if planner is None else planner.persistent_bytes,
            constant_bytes=by_type.get(AllocationType.MMAP_RO, 0),
            dynamic_bytes=by_type.get(AllocationType.DYNAMIC, 0)
            + by_type.get(AllocationType.PERSISTENT_RO, 0),
        )


_OPERATOR_INVOKE_EVENT = 2  # Profiler EventType.OPERATOR_INVOKE_EVENT (pytflite.tools.profiler)


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


def _new_array(tensor: Tensor) -> np.ndarray:
    """Fresh memory for a dynamic tensor of its current type and shape."""
    if tensor.type == TensorType.STRING:
        return np.full(tensor.shape, b"", dtype=object)
    return np.empty(stored_shape(tensor.type, tensor.shape), dtype=storage_dtype(tensor.type))

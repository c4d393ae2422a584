"""Subgraph: tensors, nodes and an execution plan, with TFLite's allocate / prepare / invoke lifecycle.

    allocate_tensors()  prepare nodes in plan order (stopping after a node with dynamic outputs),
                        plan the arena, bind tensor data, zero the variables
    invoke()            run the plan; nodes after a dynamic output are prepared lazily when reached
    resize_input_tensor(i, shape) + allocate_tensors()   re-prepare everything for new input shapes

The subgraph keeps the graph and its state machine; what invoke runs is a PlanRunner
(core/plan_runner.py) built by allocate_tensors, the delegates' rewrites live in a Delegation
(core/delegation.py), and the interpreter's options arrive as one SubgraphConfig (core/config.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from ..errors import ErrorReporter, InterpreterError, KernelError
from . import float_errors
from .arena import ArenaLimitError, ArenaPlanner, MemoryReport, memory_report
from .config import SubgraphConfig
from .context import Context
from .delegate import DelegateFlags
from .delegation import Delegation
from .derived import DerivedConstants
from .folding import fold, foldable_outputs
from .limits import Limits
from .node import OPTIONAL_TENSOR, Node, Registration, is_unresolved_custom_op, unresolved_op_message
from .observer import SubgraphObserver
from .plan_runner import PlanRunner
from .prepare_cursor import PrepareCursor, PreparedInputs
from .resources import Resources
from .step_program import Respecialize
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


class Subgraph:
    """One graph of a model (tflite::Subgraph)."""

    def __init__(
        self,
        index: int = 0,
        name: str = "",
        error_reporter: ErrorReporter | None = None,
        *,
        config: SubgraphConfig | None = None,
        metadata: dict[str, bytes] | None = None,
        resources: Resources | None = None,
        control_edges: list[tuple[int, int]] | None = None,
    ):
        self.index = index
        self.name = name
        self.error_reporter = error_reporter or ErrorReporter()
        self.config = config if config is not None else SubgraphConfig()
        # shared with the interpreter's other subgraphs (set by the builder): control flow calls them
        self.subgraphs: list[Subgraph] = [self]
        self.resources = resources if resources is not None else Resources()
        # the model's constants derived once for all its interpreters (interpreter_builder.py sets it)
        self.derived_constants: DerivedConstants | None = None
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
        self.folded_nodes: set[int] = set()  # computed once in prepare (core/folding.py)
        self._planner: ArenaPlanner | None = None
        self._runner: PlanRunner | None = None  # what invoke runs; None until allocate_tensors
        self.cursor = PrepareCursor()  # where the lazy prepare stands (core/prepare_cursor.py)
        # how often an allocation moved the arena: arrays bound before a move are stale (PlanRunner)
        self.arena_moves = 0
        self.delegation = Delegation(self, control_edges)
        # a view kept beside the subgraph, told of nodes as they are added and prepared (the Python
        # API's tensor listing); None: none
        self.observer: SubgraphObserver | None = None

    @property
    def limits(self) -> Limits | None:
        """The caps on tensor sizes, arena bytes and loop iterations, or None."""
        return self.config.limits

    @property
    def runner(self) -> PlanRunner | None:
        """What invoke runs: made anew by every allocation, None until the subgraph is allocated again
        after a change. Control flow binds a called subgraph's memory for as long as this stays the same."""
        return self._runner

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
            self.fail("AddNodeWithParameters is disallowed when graph is immutable.")
        self.invalidate()
        self._check_tensor_indices("node inputs", inputs)
        self._check_tensor_indices("node outputs", outputs)
        if builtin_data is not None:  # builtin ops may not alias an input as an output; custom ops may
            for i, t in enumerate(inputs):
                if t in outputs and t != OPTIONAL_TENSOR:
                    self.consistent = False
                    self.fail(f"Tensor {t} is both input {i} and output {list(outputs).index(t)}\n")
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
                self.fail("Failed to initialize kernel.", cause=error)
        if self.observer is not None:
            self.observer.node_added(node, registration)
        node.might_have_side_effect = self._might_have_side_effect(node, registration)
        self.nodes.append((node, registration))
        self.execution_plan.append(node.index)
        return node.index

    def _check_tensor_indices(self, label: str, indices: Sequence[int]) -> None:
        for t in indices:
            if t != OPTIONAL_TENSOR and not 0 <= t < len(self.tensors):
                self.consistent = False
                self.fail(
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

    def invalidate(self) -> None:
        """The graph changed: it must be prepared and planned again before the next invoke."""
        self.state = SubgraphState.UNINVOKABLE
        self._planner = None
        self._runner = None
        self.folded_nodes = set()
        self.cursor.prepared_inputs.clear()

    # --- errors --------------------------------------------------------------------------------------

    def report_error(self, message: str) -> None:
        self.error_reporter.report(message)

    def fail(
        self, message: str | None, status: Status = Status.ERROR, cause: BaseException | None = None
    ) -> NoReturn:
        """Report `message` (if any) and raise the accumulated error text, as LiteRT's Python API does."""
        if message:
            self.report_error(message)
        raise InterpreterError(self.error_reporter.text, status) from cause

    def call_kernel(self, step: str, function: Callable, node: Node, registration: Registration) -> Status:
        """Run a kernel's prepare or invoke; a failure is reported with TFLite's "Node number" line."""
        try:
            status = function(self.context, node)
        except Respecialize:  # a fused node's speculation failed: its caller runs the plan unfused
            raise
        except Exception as error:
            self.kernel_failed(step, node, registration, error=error)
        if status in OK_STATUSES:
            return Status.OK
        if status == Status.OUTPUT_SHAPE_NOT_KNOWN and step == "prepare":
            return Status.OUTPUT_SHAPE_NOT_KNOWN
        self.kernel_failed(step, node, registration, status=Status(status))

    def kernel_failed(
        self,
        step: str,
        node: Node,
        registration: Registration,
        status: Status = Status.ERROR,
        error: Exception | None = None,
    ) -> NoReturn:
        if error is not None:
            status = self.report_exception(error)
        op_name = registration.custom_name or BuiltinOperator(registration.builtin_code).name
        self.fail(f"Node number {node.index} ({op_name}) failed to {step}.", status, error)

    def report_exception(self, error: Exception) -> Status:
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
            self.fail("AllocateTensors() called on inconsistent model.")
        self.delegation.redo_all_delegates()
        if self.state != SubgraphState.UNINVOKABLE and not self._has_dynamic(self.inputs):
            return  # shapes and memory plan are unchanged
        self.cursor.restart()
        self.folded_nodes = set()
        if self._planner is not None:
            self._planner.reset_allocations()
        self.prepare_ops_and_tensors()
        self.state = SubgraphState.INVOKABLE
        self.reset_variable_tensors()
        self._runner = PlanRunner(self)

    def prepare_ops_and_tensors(self, in_invoke: bool = False) -> None:
        """Prepare from the next unprepared node and allocate what it produced; `in_invoke`: a lazy
        prepare from inside invoke (float errors ignored; unchanged pure prepares are skipped)."""
        delegation = self.delegation
        if delegation.pre_delegation_plan is not None and any(
            DelegateFlags(d.flags) & DelegateFlags.REQUIRE_PROPAGATED_SHAPES for d in delegation.applied
        ):  # the delegate wants shapes as the original kernels compute them
            self.prepare_ops_starting_at(self.cursor.next_to_prepare, delegation.pre_delegation_plan)
        last, allocate = self.prepare_ops_starting_at(self.cursor.next_to_prepare, in_invoke=in_invoke)
        self.cursor.next_to_prepare = last + 1
        if self._planner is None:
            limits = self.config.limits
            max_bytes = None if limits is None else limits.max_bytes
            self._planner = ArenaPlanner(self.tensors, self.config.preserve_all_tensors, max_bytes)
            plan_nodes = [self.nodes[i][0] for i in self.execution_plan]
            self._planner.plan_allocations(plan_nodes, self.inputs, self.outputs, self.variables)
        # Nodes not prepared again, or prepared again into the memory they had, leave nothing to allocate.
        if allocate:
            try:
                if self._planner.execute_allocations(self.cursor.next_to_allocate, last):
                    self.arena_moves += 1
            except ArenaLimitError as error:  # reported, so a calling subgraph's error text says why
                self.fail(str(error))
        self.cursor.next_to_allocate = last + 1

    def prepare_ops_starting_at(
        self, first: int, plan: list[int] | None = None, in_invoke: bool = False
    ) -> tuple[int, bool]:
        """Prepare plan nodes from `first`; stop after one with dynamic outputs. Returns the last position
        and whether the arena must place tensors (always, outside invoke). `in_invoke`: a lazy prepare
        inside invoke (float errors ignored)."""
        plan = self.execution_plan if plan is None else plan
        if first == 0:
            self.has_dynamic_tensors = self._has_dynamic(self.outputs)
        if in_invoke:
            return self._prepare_loop(first, plan, in_invoke)
        with np.errstate(all="ignore"):  # as in invoke: kernels computing in prepare (folding) give inf/NaN
            return self._prepare_loop(first, plan, in_invoke)

    def _prepare_loop(self, first: int, plan: list[int], in_invoke: bool) -> tuple[int, bool]:
        """prepare_ops_starting_at's loop. In a lazy prepare (`in_invoke`, after a dynamic resize) a node
        with a pure prepare whose inputs are as its last prepare saw them is not prepared again: it would
        give the same outputs, folded values and dynamic marks (PreparedInputs)."""
        last = first
        allocate = not in_invoke
        nodes = self.nodes
        tensors = self.tensors
        prepared = self.cursor.prepared_inputs
        for position in range(first, len(plan)):
            node, registration = nodes[plan[position]]
            last = position
            inputs = prepared.get(node.index) if in_invoke else None
            if inputs is not None and inputs.unchanged():
                # (its outputs lack memory when an allocation placed only the nodes before it)
                allocate = allocate or _lacks_memory(tensors, node)
                if _any_dynamic(tensors, node.outputs):
                    self.has_dynamic_tensors = True
                    break
                continue
            if self._prepare_node(node, registration) == Status.OUTPUT_SHAPE_NOT_KNOWN:
                self.has_dynamic_tensors = True
                allocate = True
                break
            if _prepares_the_same_again(node, registration):
                prepared[node.index] = PreparedInputs(tensors, node)
            allocate = allocate or _lacks_memory(tensors, node)
            if _any_dynamic(tensors, node.outputs):
                self.has_dynamic_tensors = True
                break
            self._fold_if_constant(node, registration)
            allocate = allocate or node.index in self.folded_nodes  # its outputs left the arena
        return last, allocate

    def _fold_if_constant(self, node: Node, registration: Registration) -> None:
        """Compute a node whose outputs are known in prepare once, now (core/folding.py)."""
        outputs = foldable_outputs(self.tensors, node, registration)
        if not outputs:
            return

        def run(context: Context, node: Node) -> None:  # failures read "Node number N (OP) failed to invoke."
            self.call_kernel("invoke", registration.invoke, node, registration)

        fold(self.context, node, outputs, run)
        self.folded_nodes.add(node.index)

    def _prepare_node(self, node: Node, registration: Registration) -> Status:
        if registration.prepare is not None:
            status = self.call_kernel("prepare", registration.prepare, node, registration)
            if self.observer is not None:
                self.observer.node_prepared(node, registration)
            return status
        if is_unresolved_custom_op(registration):
            name = registration.custom_name or "UnknownOp"
            self.report_error(unresolved_op_message(name))
            self.fail(f"Node number {node.index} ({name}) failed to prepare.", Status.UNRESOLVED_OPS)
        return Status.OK  # a resolved op may have no prepare

    def _has_dynamic(self, indices: Sequence[int]) -> bool:
        return _any_dynamic(self.tensors, indices)

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
            self.cursor.resized_during_invoke = True
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
            self.fail(
                f"tensor_index < context_.tensors_size && tensor_index >= 0 was not true (index {index})."
            )
        tensor = self.tensors[index]
        shape = tuple(int(d) for d in shape)
        if strict:
            if len(tensor.shape) != len(shape):
                self.fail(f"tensor->dims->size != dims.size() ({len(tensor.shape)} != {len(shape)})")
            for axis, (signature_dim, new_dim) in enumerate(zip(tensor.shape_signature, shape)):
                if signature_dim != -1 and signature_dim != new_dim:
                    self.fail(
                        f"Attempting to resize dimension {axis} of tensor {index} with value {signature_dim} to "
                        f"{new_dim}. ResizeInputTensorStrict only allows mutating unknown dimensions identified by -1."
                    )
        immutable = self.state == SubgraphState.INVOKABLE_AND_IMMUTABLE
        if immutable and not self.delegation.applied:
            self.fail("ResizeInputTensor is disallowed when graph is immutable.")
        if tensor.data is not None and tensor.shape == shape:
            return
        if immutable:
            self.delegation.undo_all_delegates()  # static delegates see fixed shapes: they are re-applied on allocate
        self.state = SubgraphState.UNINVOKABLE
        self._runner = None
        try:
            self.resize_tensor(tensor, shape)
        except KernelError as error:
            self.fail(str(error))

    def reset_variable_tensors(self) -> None:
        """Zero every variable tensor (int8 variables to their zero point), as TFLite does."""
        for t in self.variables:
            tensor = self.tensors[t]
            if tensor.allocation_type == AllocationType.CUSTOM:
                continue
            if tensor.allocation_type != AllocationType.ARENA_RW_PERSISTENT or tensor.data is None:
                self.fail(f"Variable tensor {t} has no persistent memory to reset.")
            tensor.data[...] = tensor.params.zero_point if tensor.type == TensorType.INT8 else 0

    # --- invocation ----------------------------------------------------------------------------------

    def invoke(self) -> None:
        """Run every node of the plan once (Subgraph::Invoke)."""
        if not self.consistent or self.state == SubgraphState.UNINVOKABLE:
            self._check_invokable()
        # Overflow, division by zero and NaN are results here, as in TFLite, not warnings.
        token = float_errors.ignore()
        try:
            self._runner.invoke()
        finally:
            float_errors.restore(token)

    def invoke_nested(self) -> None:
        """invoke() for a kernel running this subgraph from inside another subgraph's invoke (IF, WHILE):
        the outer invoke already ignores float errors (core/float_errors), and once is enough."""
        if not self.consistent or self.state == SubgraphState.UNINVOKABLE:  # (once per WHILE iteration)
            self._check_invokable()
        self._runner.invoke()

    def _check_invokable(self) -> None:
        if not self.consistent:
            self.fail("Invoke called on model that is not consistent.")
        if self.state == SubgraphState.UNINVOKABLE:
            self.fail("Invoke called on model that is not ready.")

    # --- teardown ------------------------------------------------------------------------------------

    def free(self) -> None:
        """Teardown, as TFLite's subgraph destructor: call every kernel's free with its user data (once),
        free delegate buffer handles, then let go of the nodes and the delegates, so that a delegate
        whose last user this was goes now, not when Python's cycle collector runs (a subgraph and its
        context refer to each other)."""
        for node, registration in self.nodes:
            self.free_node(node, registration)
        self.delegation.free_buffer_handles()
        self.delegation.applied = []
        self.nodes = []
        self._runner = None
        for tensor in self.tensors:
            tensor.delegate = None

    def free_node(self, node: Node, registration: Registration) -> None:
        if registration.free is not None and node.user_data is not None:
            registration.free(self.context, node.user_data)
        node.user_data = None

    def memory_report(self) -> MemoryReport:
        """Where the subgraph's bytes are, and how close the arena is to the best possible."""
        return memory_report(self.tensors, self._planner, len(self.execution_plan))


def _any_dynamic(tensors: list[Tensor], indices: Sequence[int]) -> bool:
    """Whether one of the tensors is dynamic. A plain loop, not any(): it runs at every lazy prepare
    inside invoke, where the generator costs more than the test."""
    for t in indices:  # noqa: SIM110
        if t != OPTIONAL_TENSOR and tensors[t].allocation_type == AllocationType.DYNAMIC:
            return True
    return False


def _lacks_memory(tensors: list[Tensor], node: Node) -> bool:
    """Whether a node just prepared has an output or temporary without data: resized (which unbinds an
    arena tensor), new, or made arena again, so the arena must place it."""
    for t in (*node.outputs, *node.temporaries):  # noqa: SIM110
        if t != OPTIONAL_TENSOR and tensors[t].data is None:
            return True
    return False


def _prepares_the_same_again(node: Node, registration: Registration) -> bool:
    """Whether preparing the node again with the same inputs changes nothing (Registration.stateless:
    the builtin table's kernels without state, effects or called subgraphs). Python custom ops, delegate
    kernels and user kernels under a builtin code are prepared again, as TFLite does."""
    return registration.stateless and registration.prepare is not None and not node.might_have_side_effect


def _new_array(tensor: Tensor) -> np.ndarray:
    """Fresh memory for a dynamic tensor of its current type and shape."""
    if tensor.type == TensorType.STRING:
        return np.full(tensor.shape, b"", dtype=object)
    return np.empty(stored_shape(tensor.type, tensor.shape), dtype=storage_dtype(tensor.type))

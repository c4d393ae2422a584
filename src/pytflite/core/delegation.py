"""Delegation: how delegates rewrite a subgraph's plan, and how that is undone and redone.

Each Subgraph has one (`subgraph.delegation`). A delegate's prepare calls back (through the Context) to
replace node subsets with DELEGATE nodes; the replaced nodes stay in the node list, off the plan, so a
resize can go back to the original plan and allocate_tensors can apply the delegates again, as TFLite's
ModifyGraphWithDelegate / UndoAllDelegates / RedoAllDelegates do. Tensors a delegate owns may hold their
data in the delegate's buffers; this module copies it back when the CPU needs it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from ..errors import InterpreterError, KernelError
from .delegate import DelegateFlags
from .node import DelegateParams, Registration
from .partition import NodeSubset, PartitionError, PlanNode, SubsetType, partition_graph
from .plan_rewrite import PlanRewrite
from .tensor import NULL_BUFFER_HANDLE
from .types import OK_STATUSES, AllocationType, BuiltinOperator, Status, SubgraphState, TensorType

if TYPE_CHECKING:
    from .delegate import Delegate
    from .subgraph import Subgraph


@dataclasses.dataclass(frozen=True)
class DelegatePartition:
    """One DELEGATE node of a plan and the original nodes it runs."""

    node_index: int
    delegate_name: str
    nodes: tuple[int, ...]
    op_names: tuple[str, ...]
    input_tensors: tuple[int, ...]
    output_tensors: tuple[int, ...]


class Delegation:
    """The delegates applied to one subgraph, the plan before them, and the partitioning options."""

    def __init__(self, subgraph: Subgraph, control_edges: list[tuple[int, int]] | None = None):
        self._subgraph = subgraph
        self.control_edges = control_edges  # the model's explicit control dependencies, if any
        self.applied: list[Delegate] = []
        self._rewrite: PlanRewrite | None = None  # the DELEGATE nodes replacing subsets, undoably
        self._undone = False

    @property
    def pre_delegation_plan(self) -> list[int] | None:
        """The execution plan before the delegates replaced nodes (None: no delegate is applied)."""
        return None if self._rewrite is None else self._rewrite.original

    def modify_graph_with_delegate(self, delegate: Delegate) -> None:
        """Let `delegate` replace the nodes it supports with its kernels (ModifyGraphWithDelegate).

        A failure of the delegate or of its kernels' prepare restores the original plan, so the subgraph
        stays usable on the CPU kernels, and raises with status DELEGATE_ERROR.
        """
        subgraph = self._subgraph
        if delegate is None:
            subgraph.fail("Null delegate.", Status.DELEGATE_ERROR)
        self.redo_all_delegates()
        flags = DelegateFlags(delegate.flags)
        allows_dynamic = bool(flags & DelegateFlags.ALLOW_DYNAMIC_TENSORS)
        fully_delegated_hint = bool(flags & DelegateFlags.HINT_FULLY_DELEGATED_TO_SINGLE_DELEGATE)
        state_before = subgraph.state
        if subgraph.state == SubgraphState.INVOKABLE_AND_IMMUTABLE:
            subgraph.state = SubgraphState.UNINVOKABLE  # shapes are static already: just re-allocate later
        elif not allows_dynamic and not fully_delegated_hint:
            subgraph.prepare_ops_starting_at(0)  # propagate shapes to find dynamic tensors
            if subgraph.has_dynamic_tensors:
                dynamic = next(
                    (
                        t.index
                        for t in subgraph.tensors
                        if t.allocation_type == AllocationType.DYNAMIC and t.index not in subgraph.inputs
                    ),
                    -1,
                )
                self._ensure_memory_allocations()
                subgraph.fail(
                    "Attempting to use a delegate that only supports static-sized tensors with a graph that has "
                    f"dynamic-sized tensors (tensor#{dynamic} is a dynamic-sized tensor).",
                    Status.APPLICATION_ERROR,
                )
        if not self.applied:
            self._rewrite = PlanRewrite(subgraph)

        subgraph.context.delegate_depth += 1
        error = None
        try:
            if delegate.prepare is None:
                raise KernelError(f"delegate {delegate.name} has no prepare")
            status = delegate.prepare(subgraph.context, delegate)
        except Exception as caught:  # the delegate's own failure; the graph must be restored
            status, error = subgraph.report_exception(caught), caught
        finally:
            subgraph.context.delegate_depth -= 1
        if status not in OK_STATUSES:
            self._restore_after_delegate_failure(error)

        if fully_delegated_hint and not self.is_fully_delegated:
            subgraph.fail(
                "Hint fully delegated to single delegate is set, but the graph is not fully delegated.",
                Status.APPLICATION_ERROR,
            )
        if not allows_dynamic:
            if not fully_delegated_hint:
                subgraph.state = SubgraphState.UNINVOKABLE
                self._allocate_or_restore()
            subgraph.state = SubgraphState.INVOKABLE_AND_IMMUTABLE
        elif state_before == SubgraphState.INVOKABLE_AND_IMMUTABLE:
            try:
                subgraph.prepare_ops_starting_at(0)
            except InterpreterError as caught:
                self._restore_after_delegate_failure(caught)
            if subgraph.has_dynamic_tensors:
                self.remove_all_delegates()
                subgraph.fail(
                    "Cannot allow dynamic tensors due to previous delegation, resetting to original execution plan.",
                    Status.APPLICATION_ERROR,
                )
            self._allocate_or_restore()
            subgraph.state = SubgraphState.INVOKABLE_AND_IMMUTABLE
        elif state_before == SubgraphState.INVOKABLE:
            self._allocate_or_restore()
        self.applied.append(delegate)

    def _allocate_or_restore(self) -> None:
        try:
            self._ensure_memory_allocations()  # runs the delegate kernels' prepare
        except InterpreterError as caught:
            self._restore_after_delegate_failure(caught)

    def _restore_after_delegate_failure(self, cause: BaseException | None) -> NoReturn:
        self.remove_all_delegates()
        self._subgraph.fail(
            "Restored original execution plan after delegate application failure.",
            Status.DELEGATE_ERROR,
            cause,
        )

    def _ensure_memory_allocations(self) -> None:
        """Plan the current execution plan afresh and allocate (EnsureMemoryAllocations)."""
        self._subgraph.invalidate()
        self._subgraph.allocate_tensors()

    @property
    def is_fully_delegated(self) -> bool:
        subgraph = self._subgraph
        return all(subgraph.nodes[i][0].delegate is not None for i in subgraph.execution_plan)

    def undo_all_delegates(self) -> None:
        """Go back to the pre-delegation plan; delegates stay recorded for redo_all_delegates."""
        if self._rewrite is None:
            return
        self._rewrite.undo()
        self._rewrite = None
        self._undo_float16_remapping()
        self._undone = True

    def _undo_float16_remapping(self) -> None:
        """A delegate may have pointed nodes at float16 constants instead of their DEQUANTIZE outputs;
        the CPU kernels need the float32 tensors back (TFLite's FP16GraphPartitionHelper undo)."""
        subgraph = self._subgraph
        dequantized = {}
        for node_index in subgraph.execution_plan:
            node, registration = subgraph.nodes[node_index]
            if (
                registration.builtin_code == BuiltinOperator.DEQUANTIZE
                and len(node.inputs) == len(node.outputs) == 1
                and subgraph.tensors[node.inputs[0]].type == TensorType.FLOAT16
            ):
                dequantized[node.inputs[0]] = node.outputs[0]
        for node_index in subgraph.execution_plan:
            node, registration = subgraph.nodes[node_index]
            if registration.builtin_code != BuiltinOperator.DEQUANTIZE:
                node.inputs = tuple(dequantized.get(t, t) for t in node.inputs)

    def redo_all_delegates(self) -> None:
        """Re-apply the delegates undone by a resize (RedoAllDelegates)."""
        if not self._undone:
            return
        self._undone = False
        delegates, self.applied = self.applied, []
        for delegate in delegates:
            self.modify_graph_with_delegate(delegate)

    def remove_all_delegates(self) -> None:
        """Undo every delegate for good and re-allocate on the original plan."""
        self.undo_all_delegates()
        self.applied = []
        self._undone = False
        self._ensure_memory_allocations()

    def _partition(self, nodes_to_replace: Sequence[int]) -> list[NodeSubset]:
        subgraph = self._subgraph
        config = subgraph.config
        nodes = subgraph.nodes
        plan = [
            PlanNode(i, nodes[i][0].inputs, nodes[i][0].outputs, nodes[i][0].might_have_side_effect)
            for i in subgraph.execution_plan
        ]
        try:
            return partition_graph(
                plan,
                len(subgraph.tensors),
                subgraph.outputs,
                nodes_to_replace,
                len(nodes),
                greedy=not config.disable_delegate_clustering,
                control_edges=self.control_edges,
                disable_node_fusion=config.preserve_all_tensors or config.disable_delegate_node_fusion,
            )
        except PartitionError as error:
            raise KernelError(f"Partitioning the graph for a delegate failed: {error}") from None

    def replace_node_subsets_with_delegate_kernels(
        self, registration: Registration, nodes_to_replace: Sequence[int], delegate: Delegate
    ) -> None:
        """Replace each independent subset of `nodes_to_replace` with one DELEGATE node running
        `registration`, whose init receives the subset's DelegateParams. Replaced nodes stay in the node
        list (off the plan), so delegation can be undone."""
        subgraph = self._subgraph
        registration = dataclasses.replace(registration, builtin_code=BuiltinOperator.DELEGATE)
        nodes_to_replace = [int(n) for n in nodes_to_replace]
        if not nodes_to_replace:
            return
        subsets = self._partition(nodes_to_replace)
        subgraph.execution_plan = []
        for subset in subsets:
            if subset.type == SubsetType.NON_PARTITION:
                subgraph.execution_plan.extend(subset.nodes)
                continue
            params = DelegateParams(
                delegate, tuple(subset.nodes), tuple(subset.input_tensors), tuple(subset.output_tensors)
            )
            node_index = self._rewrite.add(registration, subset.input_tensors, subset.output_tensors, params)
            for t in subset.output_tensors:
                tensor = subgraph.tensors[t]
                if tensor.delegate is not None and tensor.delegate is not delegate:
                    raise KernelError(f"tensor {t} already belongs to delegate {tensor.delegate.name}")
                tensor.delegate = delegate
            subgraph.nodes[node_index][0].delegate = delegate

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[DelegateParams]:
        """The DelegateParams (delegate None) each claimed subset would get; nothing is replaced."""
        return [
            DelegateParams(None, tuple(s.nodes), tuple(s.input_tensors), tuple(s.output_tensors))
            for s in self._partition([int(n) for n in nodes_to_replace])
            if s.type == SubsetType.PARTITION
        ]

    def delegate_partitions(self) -> list[DelegatePartition]:
        """What each DELEGATE node of the plan runs: for reports, profilers and graph pictures."""
        nodes = self._subgraph.nodes
        partitions = []
        for node_index in self._subgraph.execution_plan:
            node, registration = nodes[node_index]
            if node.delegate is None or not isinstance(node.builtin_data, DelegateParams):
                continue
            params = node.builtin_data
            partitions.append(
                DelegatePartition(
                    node_index=node_index,
                    delegate_name=registration.custom_name or "DELEGATE",
                    nodes=params.nodes_to_replace,
                    op_names=tuple(nodes[i][1].op_name for i in params.nodes_to_replace),
                    input_tensors=params.input_tensors,
                    output_tensors=params.output_tensors,
                )
            )
        return partitions

    # --- delegate buffers ----------------------------------------------------------------------------

    def set_buffer_handle(self, index: int, handle: int, delegate: Delegate) -> None:
        """Attach a delegate's buffer handle to a tensor, freeing any handle it had (SetBufferHandle)."""
        subgraph = self._subgraph
        tensor = subgraph.tensors[index]
        if tensor.delegate is not None and tensor.delegate is not delegate:
            subgraph.fail(f"Tensor {index} belongs to another delegate.")
        if tensor.buffer_handle != NULL_BUFFER_HANDLE and delegate.free_buffer_handle is not None:
            delegate.free_buffer_handle(subgraph.context, delegate, tensor.buffer_handle)
        tensor.delegate = delegate
        tensor.buffer_handle = handle

    def ensure_tensor_data_is_readable(self, index: int) -> None:
        """Copy a delegate-owned tensor back into `data` if the delegate marked it stale."""
        subgraph = self._subgraph
        tensor = subgraph.tensors[index]
        if not tensor.data_is_stale:
            return
        delegate = tensor.delegate
        if delegate is None or tensor.buffer_handle == -1 or delegate.copy_from_buffer_handle is None:
            subgraph.fail(f"Tensor {index} is stale but its delegate cannot copy it back.")
        status = delegate.copy_from_buffer_handle(subgraph.context, delegate, tensor.buffer_handle, tensor)
        if status not in OK_STATUSES:
            subgraph.fail(f"Copying tensor {index} from its delegate buffer failed.", Status(status))
        tensor.data_is_stale = False

    def free_buffer_handles(self) -> None:
        """Give every tensor's buffer handle back to its delegate (part of the subgraph's teardown)."""
        context = self._subgraph.context
        for tensor in self._subgraph.tensors:
            delegate = tensor.delegate
            if (
                tensor.buffer_handle != NULL_BUFFER_HANDLE
                and delegate is not None
                and delegate.free_buffer_handle
            ):
                delegate.free_buffer_handle(context, delegate, tensor.buffer_handle)
            tensor.buffer_handle = NULL_BUFFER_HANDLE

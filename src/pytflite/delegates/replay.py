"""ReplayDelegate: a delegate whose kernels run the claimed nodes with their own CPU kernels.

Its results equal the undelegated graph's bit for bit, which makes it the reference for testing
partitioning and delegate plumbing, a way to see which partitions a claim produces, and a template for
a real delegate (replace ReplayKernel.eval with a call into an accelerator).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

from ..core.context import Context
from ..core.delegate import DelegateFlags, SimpleDelegate, SimpleDelegateKernel
from ..core.folding import fold_if_known
from ..core.node import OPTIONAL_TENSOR, DelegateParams, Node, Registration
from ..core.profiling import EventType
from ..core.types import Status, storage_dtype, stored_shape


class ReplayKernel(SimpleDelegateKernel):
    """Runs one partition's original nodes in order, on memory of its own for their internal tensors.

    Tensors used only inside a partition belong to no node of the new plan, so the arena never gives
    them memory; the kernel does, after the inner nodes' prepare has sized them.
    """

    def init(self, context: Context, params: DelegateParams) -> Status | None:
        self.steps = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        produced = {t for node, _ in self.steps for t in node.outputs if t != OPTIONAL_TENSOR}
        self.internal = sorted(produced - set(params.output_tensors))
        flags = DelegateFlags(params.delegate.flags) if params.delegate is not None else DelegateFlags.NONE
        self.per_operator_profiling = bool(flags & DelegateFlags.PER_OPERATOR_PROFILING)
        return None

    def prepare(self, context: Context, node: Node) -> Status | None:
        self.folded = set()  # inner nodes computed once here, as the subgraph folds its own
        for inner, registration in self.steps:
            if registration.prepare is not None:
                status = registration.prepare(context, inner)
                if status not in (None, Status.OK):
                    return status
            if fold_if_known(context, inner, registration):
                self.folded.add(inner.index)
        private = list(self.internal) + [t for inner, _ in self.steps for t in inner.temporaries]
        for t in private:
            tensor = context.tensors[t]
            shape = stored_shape(tensor.type, tensor.shape)
            if tensor.data is None or tensor.data.shape != shape:
                tensor.data = np.zeros(shape, dtype=storage_dtype(tensor.type))
        return None

    def eval(self, context: Context, node: Node) -> Status | None:
        profiler = context.profiler if self.per_operator_profiling else None
        for inner, registration in self.steps:
            if inner.index in self.folded:
                continue
            if profiler is None:
                status = registration.invoke(context, inner)
            else:  # the delegate asked to report its ops one by one (PER_OPERATOR_PROFILING)
                handle = profiler.begin_event(
                    registration.op_name,
                    EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT,
                    inner.index,
                    context.subgraph.index,
                )
                try:
                    status = registration.invoke(context, inner)
                finally:
                    profiler.end_event(handle)
            if status not in (None, Status.OK):
                return status
        return None


class ReplayDelegate(SimpleDelegate):
    """Claims nodes by builtin op (`ops`) and/or a predicate `claim(context, node, registration)`."""

    name = "ReplayDelegate"

    def __init__(
        self,
        ops: Collection[int] = (),
        claim: Callable[[Context, Node, Registration], bool] | None = None,
        *,
        max_delegated_partitions: int = 0,
        min_nodes_per_partition: int = 0,
        flags: DelegateFlags | int | None = None,
    ):
        super().__init__(
            max_delegated_partitions=max_delegated_partitions,
            min_nodes_per_partition=min_nodes_per_partition,
            flags=flags,
        )
        self.ops = frozenset(int(op) for op in ops)
        self.claim = claim

    def is_node_supported(self, context: Context, node: Node, registration: Registration) -> bool:
        if registration.builtin_code in self.ops:
            return True
        return self.claim is not None and bool(self.claim(context, node, registration))

    def create_kernel(self) -> ReplayKernel:
        return ReplayKernel()

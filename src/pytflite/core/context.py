"""Context: everything a kernel or a delegate may see and call (TfLiteContext).

Each subgraph has one. Kernels use `tensors`, `resize_tensor`, `add_tensors`, `report_error`, the
configuration fields, and (control flow, variables) the interpreter's `subgraphs` and `resources`; delegates additionally use the graph-inspection and node-replacement functions,
which — as in TFLite — work only while a delegate's `prepare` is running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import KernelError
from ..fidelity.host import HostProfile
from .types import AllocationType

if TYPE_CHECKING:
    from .delegate import Delegate
    from .node import DelegateParams, Node, Registration
    from .resources import Resources
    from .subgraph import Subgraph
    from .tensor import Tensor

FORBIDDEN_OUTSIDE_DELEGATE = "The function is forbidden if not calling in delegate."


class Context:
    """The subgraph as kernels and delegates see it; attribute names follow TfLiteContext."""

    def __init__(self, subgraph: Subgraph):
        self._subgraph = subgraph
        self.tensors: list[Tensor] = subgraph.tensors  # the subgraph's own list: indices stay valid
        config = subgraph.config
        self.recommended_num_threads = config.num_threads
        self.allow_fp32_relax_to_fp16 = False
        # Float kernels that read this in prepare (CONV_2D, DEPTHWISE_CONV_2D) sum their products in
        # LiteRT's order, sequentially in float32, bit for bit, instead of a faster BLAS / einsum order
        # that differs by ~1e-7 relative. That matters before a hybrid op (float32 activations, int8
        # weights): it quantizes its input per batch, turning a 1e-7 difference on a rounding boundary
        # into a whole quantization step. From the subgraph's config (the Interpreter's
        # experimental_exact_float_summation; by default, True where the subgraph has a hybrid op).
        self.exact_float_summation = config.exact_float_summation
        # The machine whose LiteRT the host-dependent kernels reproduce (fidelity/host.py): this one
        # unless the Interpreter was given another profile. Read in prepare.
        self.host: HostProfile = config.host if config.host is not None else HostProfile.detect()
        self.profiler: Any = None
        self._external_contexts: dict[Any, Any] = {}
        self.delegate_depth = 0  # > 0 while a delegate's prepare runs

    @property
    def subgraph(self) -> Subgraph:
        """The subgraph behind this context (TfLiteContext.impl_)."""
        return self._subgraph

    @property
    def subgraphs(self) -> list[Subgraph]:
        """Every subgraph of the interpreter, by index: what control-flow kernels call (GetSubgraphs)."""
        return self._subgraph.subgraphs

    @property
    def resources(self) -> Resources:
        """The interpreter's resource variables, hash tables and CALL_ONCE record."""
        return self._subgraph.resources

    # --- kernel services ------------------------------------------------------------------------

    def resize_tensor(self, tensor: Tensor, new_shape: Sequence[int]) -> None:
        """Give `tensor` a new shape; arena tensors get memory at the next allocation, dynamic at once."""
        self._subgraph.resize_tensor(tensor, new_shape)

    def set_tensor_to_dynamic(self, tensor: Tensor) -> None:
        """Mark an output whose shape depends on input values; resize it in invoke (SetTensorToDynamic)."""
        if tensor.allocation_type != AllocationType.DYNAMIC:
            tensor.allocation_type = AllocationType.DYNAMIC
            tensor.data = None

    def set_tensor_to_persistent_ro(self, tensor: Tensor) -> None:
        """Mark an output a kernel computes once in prepare; downstream it counts as a constant
        (SetTensorToPersistentRo). Resize it afterwards to give it memory."""
        if tensor.allocation_type != AllocationType.PERSISTENT_RO:
            tensor.allocation_type = AllocationType.PERSISTENT_RO
            tensor.data = None

    def add_tensors(self, count: int) -> tuple[int, ...]:
        """Append `count` untyped tensors (e.g. for node.temporaries); returns their indices."""
        return self._subgraph.add_tensors(count)

    def report_error(self, message: str, *args: Any) -> None:
        """Add a message to the interpreter's error text (printf-style `args` are applied)."""
        self._subgraph.report_error(message % args if args else message)

    def get_tensor(self, index: int) -> Tensor:
        return self.tensors[index]

    def get_model_metadata(self, name: str) -> bytes | None:
        """The model's metadata buffer stored under `name`, or None."""
        return self._subgraph.metadata.get(name)

    def get_external_context(self, kind: Any) -> Any:
        return self._external_contexts.get(kind)

    def set_external_context(self, kind: Any, external_context: Any) -> None:
        self._external_contexts[kind] = external_context

    # --- delegate services (only during a delegate's prepare) -------------------------------------

    def _require_delegate(self) -> None:
        if self.delegate_depth <= 0:
            raise KernelError(FORBIDDEN_OUTSIDE_DELEGATE)

    def get_execution_plan(self) -> tuple[int, ...]:
        """Node indices in execution order."""
        self._require_delegate()
        return tuple(self._subgraph.execution_plan)

    def get_node_and_registration(self, node_index: int) -> tuple[Node, Registration]:
        self._require_delegate()
        return self._subgraph.node_and_registration(node_index)

    def replace_node_subsets_with_delegate_kernels(
        self, registration: Registration, nodes_to_replace: Sequence[int], delegate: Delegate
    ) -> None:
        """Partition `nodes_to_replace` into independent subsets; each becomes one delegate kernel node."""
        self._require_delegate()
        self._subgraph.delegation.replace_node_subsets_with_delegate_kernels(
            registration, nodes_to_replace, delegate
        )

    def preview_delegate_partitioning(self, nodes_to_replace: Sequence[int]) -> list[DelegateParams]:
        """The partitions replace_node_subsets_with_delegate_kernels would make, without replacing."""
        self._require_delegate()
        return self._subgraph.delegation.preview_delegate_partitioning(nodes_to_replace)

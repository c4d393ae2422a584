"""Delegates: objects that take over parts of a graph (TfLiteDelegate), and the helpers that make one
short to write (GraphPartitionHelper, SimpleDelegate / SimpleDelegateKernel).

Write one either by subclassing and overriding the methods, or by passing plain functions to the
constructor; both are called C-style, with the delegate passed explicitly:

    prepare(context, delegate)                                   claim nodes during ModifyGraphWithDelegate
    copy_from_buffer_handle(context, delegate, handle, tensor)   device -> tensor.data
    copy_to_buffer_handle(context, delegate, handle, tensor)     tensor.data -> device
    free_buffer_handle(context, delegate, handle)

A callback left as None is absent, as a null function pointer is in C.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import KernelError
from .node import DelegateParams, Registration
from .types import BuiltinOperator, Status

if TYPE_CHECKING:
    from .context import Context
    from .node import Node

logger = logging.getLogger("pytflite")


class DelegateFlags(enum.IntFlag):
    """TfLiteDelegateFlags."""

    NONE = 0
    ALLOW_DYNAMIC_TENSORS = 1
    REQUIRE_PROPAGATED_SHAPES = 2
    PER_OPERATOR_PROFILING = 4
    HINT_FULLY_DELEGATED_TO_SINGLE_DELEGATE = 8


class Delegate:
    """The delegate interface; see the module docstring for the callback signatures."""

    prepare = None
    copy_from_buffer_handle = None
    copy_to_buffer_handle = None
    free_buffer_handle = None
    flags = DelegateFlags.NONE
    data: Any = None

    def __init__(
        self,
        prepare=None,
        copy_from_buffer_handle=None,
        copy_to_buffer_handle=None,
        free_buffer_handle=None,
        flags: DelegateFlags | int | None = None,
        data: Any = None,
    ):
        callbacks = {
            "prepare": prepare,
            "copy_from_buffer_handle": copy_from_buffer_handle,
            "copy_to_buffer_handle": copy_to_buffer_handle,
            "free_buffer_handle": free_buffer_handle,
        }
        for name, function in callbacks.items():
            if function is not None:
                setattr(self, name, function)
        if flags is not None:
            self.flags = DelegateFlags(flags)
        if data is not None:
            self.data = data

    @property
    def name(self) -> str:
        return type(self).__name__


def _supported(result: Any) -> tuple[bool, str]:
    """is_node_supported may answer a bool, or (False, "why not")."""
    if isinstance(result, tuple):
        return bool(result[0]), str(result[1]) if len(result) > 1 else ""
    return bool(result), ""


class GraphPartitionHelper:
    """Finds the partitions a delegate could take and picks the largest (delegates/utils.h).

    `is_node_supported(context, node, registration)` returns a bool, or (False, reason) to explain a
    refusal in `unsupported_nodes_info`. Use it inside a delegate's prepare.
    """

    def __init__(self, context: Context, is_node_supported: Callable[[Context, Node, Registration], Any]):
        self._context = context
        self._is_node_supported = is_node_supported
        self.partitions: list[DelegateParams] = []
        self.supported_nodes: list[int] = []
        self.num_total_nodes = 0

    def partition(
        self,
        unsupported_nodes_info: set[str] | None = None,
        start_node_index: int = 0,
        end_node_index: int = 2**31 - 1,
    ) -> None:
        plan = list(self._context.get_execution_plan())  # a copy: the plan changes as delegates apply
        self.num_total_nodes = len(plan)
        self.supported_nodes = []
        for node_index in plan:
            node, registration = self._context.get_node_and_registration(node_index)
            supported, reason = _supported(self._is_node_supported(self._context, node, registration))
            if supported:
                if node_index < start_node_index:
                    continue
                if node_index > end_node_index:
                    break
                self.supported_nodes.append(node_index)
            elif unsupported_nodes_info is not None:
                unsupported_nodes_info.add(f"{registration.op_name}: {reason}")
        self.partitions = self._context.preview_delegate_partitioning(self.supported_nodes)

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)

    @property
    def num_supported_nodes(self) -> int:
        return len(self.supported_nodes)

    def first_n_largest_partitions(
        self, n: int = 0, min_nodes_per_partition: int = 0
    ) -> list[DelegateParams]:
        """Up to `n` partitions (all when n <= 0), largest first, stopping at the first one smaller
        than `min_nodes_per_partition`; equal sizes keep plan order."""
        limit = n if n > 0 else len(self.partitions)
        chosen = []
        for params in sorted(self.partitions, key=lambda p: -len(p.nodes_to_replace))[:limit]:
            if len(params.nodes_to_replace) < min_nodes_per_partition:
                break
            chosen.append(params)
        return chosen

    def nodes_of_first_n_largest_partitions(self, n: int = 0, min_nodes_per_partition: int = 0) -> list[int]:
        return [
            i for p in self.first_n_largest_partitions(n, min_nodes_per_partition) for i in p.nodes_to_replace
        ]


class SimpleDelegateKernel:
    """One delegated partition (SimpleDelegateKernelInterface). Methods may return a Status or raise."""

    def init(self, context: Context, params: DelegateParams) -> Status | None:
        return None

    def prepare(self, context: Context, node: Node) -> Status | None:
        return None

    def eval(self, context: Context, node: Node) -> Status | None:
        raise NotImplementedError(f"{type(self).__name__} must implement eval(context, node)")


class SimpleDelegate(Delegate):
    """A delegate from three decisions (SimpleDelegateInterface): which nodes it supports, what its
    kernel is, and its name. Partitioning, partition selection and node replacement are done for you:

        class MyDelegate(SimpleDelegate):
            def is_node_supported(self, context, node, registration):
                return registration.builtin_code in (BuiltinOperator.CONV_2D, BuiltinOperator.MEAN)

            def create_kernel(self):
                return MyKernel()

    `max_delegated_partitions` (<= 0: unlimited) and `min_nodes_per_partition` choose among the
    partitions exactly as TFLite's GraphPartitionHelper does.
    """

    def __init__(
        self,
        *,
        max_delegated_partitions: int = 0,
        min_nodes_per_partition: int = 0,
        flags: DelegateFlags | int | None = None,
    ):
        super().__init__(flags=flags)
        self.max_delegated_partitions = max_delegated_partitions
        self.min_nodes_per_partition = min_nodes_per_partition

    def is_node_supported(self, context: Context, node: Node, registration: Registration) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement is_node_supported")

    def initialize(self, context: Context) -> Status | None:
        """Called at the start of every prepare (each time the delegate is applied)."""
        return None

    def create_kernel(self) -> SimpleDelegateKernel:
        raise NotImplementedError(f"{type(self).__name__} must implement create_kernel")

    def prepare(self, context: Context, delegate: Delegate) -> Status | None:
        status = self.initialize(context)
        if status not in (None, Status.OK):
            return status
        helper = GraphPartitionHelper(context, self.is_node_supported)
        helper.partition()
        nodes = helper.nodes_of_first_n_largest_partitions(
            self.max_delegated_partitions, self.min_nodes_per_partition
        )
        logger.info(
            "%s delegate: %d nodes delegated out of %d nodes with %d partitions.",
            self.name,
            len(nodes),
            helper.num_total_nodes,
            helper.num_partitions,
        )
        context.replace_node_subsets_with_delegate_kernels(self.kernel_registration(), nodes, delegate)
        return None

    def kernel_registration(self) -> Registration:
        """The DELEGATE-node registration whose user data is one SimpleDelegateKernel per partition."""
        return Registration(
            init=_simple_kernel_init,
            prepare=_simple_kernel_prepare,
            invoke=_simple_kernel_invoke,
            builtin_code=BuiltinOperator.DELEGATE,
            custom_name=self.name,
            version=1,
        )


def _simple_kernel_init(context: Context, params: DelegateParams, length: int) -> SimpleDelegateKernel:
    if params is None:
        raise KernelError("NULL TfLiteDelegateParams passed.")
    kernel = params.delegate.create_kernel()
    status = kernel.init(context, params)
    if status not in (None, Status.OK):
        raise KernelError(f"{params.delegate.name} kernel init failed with {Status(status).name}")
    return kernel


def _simple_kernel_prepare(context: Context, node: Node) -> Status | None:
    if node.user_data is None:
        raise KernelError("Delegate kernel was not initialized")
    return node.user_data.prepare(context, node)


def _simple_kernel_invoke(context: Context, node: Node) -> Status | None:
    return node.user_data.eval(context, node)

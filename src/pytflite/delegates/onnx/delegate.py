"""OnnxRuntimeDelegate: claims the nodes ONNX expresses exactly and runs each partition as one ONNX
Runtime session.

Per partition and per set of input shapes, the claimed nodes are translated into one ONNX model
(PartitionGraph + the translator table) and compiled once; the sessions live in the delegate, keyed
by (subgraph, partition, input shapes), so a resize back to shapes seen before costs no compilation.
On the CPU, inputs and outputs are bound to the arena's arrays (ONNX Runtime reads and writes them in
place); with a GPU provider, outputs stay on the device as OrtValues behind buffer handles, marked
stale until a CPU consumer or the user needs them (copy_from_buffer_handle).
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnxruntime as ort

from ...core.context import Context
from ...core.delegate import DelegateFlags, SimpleDelegate, SimpleDelegateKernel
from ...core.folding import fold_if_known
from ...core.node import OPTIONAL_TENSOR, DelegateParams, Node, Registration
from ...core.tensor import NULL_BUFFER_HANDLE, Tensor
from ...core.types import AllocationType, BuiltinOperator, Status, storage_dtype
from ...errors import KernelError
from . import ops_array, ops_math, ops_nn  # noqa: F401  (they fill the translator table)
from .graph import PartitionGraph, Unsupported
from .registry import TRANSLATORS
from .session import DEFAULT_PROVIDERS, Binding, device_of, make_session, provider_names, to_float16

logger = logging.getLogger("pytflite")

_UNUSABLE = (AllocationType.DYNAMIC,)
_KNOWN = (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO)  # constants


def from_shapes_tensors(context: Context, plan: Sequence[int]) -> frozenset[int]:
    """The outputs of the plan's nodes whose values follow from constants and tensor shapes alone: a
    SHAPE of a tensor that is not dynamic, or a stateless builtin (no temporaries, no side effect) of
    constant or such inputs. pytflite folds them in prepare (core/folding.py; the delegate kernel's
    prepare folds those it claims, in order), so a node reading one reads a constant by the time its
    partition's session is made: the shape a Keras Reshape computes as PACK(STRIDED_SLICE(SHAPE(x)))."""
    tensors = context.tensors
    known: set[int] = set()
    for index in plan:
        node, registration = context.get_node_and_registration(index)
        if not registration.stateless or node.temporaries or node.might_have_side_effect:
            continue
        inputs = [t for t in node.inputs if t != OPTIONAL_TENSOR]
        computed = all(t in known or tensors[t].allocation_type in _KNOWN for t in inputs)
        static_shape = all(tensors[t].allocation_type not in _UNUSABLE for t in inputs)
        if (registration.builtin_code == BuiltinOperator.SHAPE and static_shape) or (inputs and computed):
            known.update(t for t in node.outputs if t != OPTIONAL_TENSOR)
    return frozenset(known)


class OnnxRuntimeDelegate(SimpleDelegate):
    """Runs delegated partitions with ONNX Runtime.

    providers: ONNX Runtime execution providers, first preferred (default: CPU); names or
        (name, options) tuples, e.g. [("CUDAExecutionProvider", {"device_id": 0}), "CPUExecutionProvider"].
    num_threads: intra-op threads; default: the interpreter's num_threads.
    max_delegated_partitions / min_nodes_per_partition: as TFLite's SimpleDelegate options.
    allow_fp32_relax_to_fp16: run float32 partitions in float16 on a GPU provider (ignored on the CPU).
    allow_quantized: also claim int8/uint8 quantized nodes, run as ONNX QDQ graphs (QLinearConv,
        QLinearMatMul, ...): results then differ from TFLite's integer kernels by a few LSB.
    keep_outputs_on_device: keep partition outputs as OrtValues behind buffer handles (default: with a
        GPU provider); on the CPU this exercises the same path with host OrtValues.
    session_config: extra ONNX Runtime session config entries.
    """

    name = "OnnxRuntimeDelegate"

    def __init__(
        self,
        providers: Sequence[Any] | None = None,
        num_threads: int | None = None,
        max_delegated_partitions: int = 0,
        min_nodes_per_partition: int = 1,
        allow_fp32_relax_to_fp16: bool = False,
        *,
        allow_quantized: bool = False,
        keep_outputs_on_device: bool | None = None,
        session_config: dict[str, str] | None = None,
    ):
        super().__init__(
            max_delegated_partitions=max_delegated_partitions,
            min_nodes_per_partition=min_nodes_per_partition,
            flags=DelegateFlags.ALLOW_DYNAMIC_TENSORS,
        )
        self.providers = list(providers) if providers else list(DEFAULT_PROVIDERS)
        available = set(ort.get_available_providers())
        missing = [p for p in provider_names(self.providers) if p not in available]
        if missing:
            raise ValueError(
                f"ONNX Runtime providers not available: {missing} (available: {sorted(available)})"
            )
        self.num_threads = num_threads
        self.device, self.device_id = device_of(self.providers)
        self.allow_fp32_relax_to_fp16 = bool(allow_fp32_relax_to_fp16)
        self.allow_quantized = bool(allow_quantized)
        self.keep_outputs_on_device = (
            self.device != "cpu" if keep_outputs_on_device is None else bool(keep_outputs_on_device)
        )
        self.session_config = dict(session_config or {})
        # context -> {(nodes, input shapes): (session, input tensors)}: survives undo/redo of the delegate
        self._sessions: weakref.WeakKeyDictionary[Context, dict[Any, Any]] = weakref.WeakKeyDictionary()
        self.device_values: dict[int, Any] = {}  # buffer handle -> OrtValue
        self._handles = itertools.count(1)
        self.compilations = 0  # sessions created (tests and reports read it)
        # context -> (plan, the tensors of that plan computed from constants and shapes)
        self._shape_values: weakref.WeakKeyDictionary[Context, tuple] = weakref.WeakKeyDictionary()

    # --- SimpleDelegate ----------------------------------------------------------------------------

    @property
    def relax_fp16(self) -> bool:
        return self.allow_fp32_relax_to_fp16 and self.device != "cpu"

    def is_node_supported(self, context: Context, node: Node, registration: Registration) -> Any:
        op = registration.builtin_code
        translate = TRANSLATORS.get(op)
        if translate is None or op == BuiltinOperator.CUSTOM:
            return False, "no ONNX translation"
        for t in (*node.inputs, *node.outputs):
            if t != OPTIONAL_TENSOR and context.tensors[t].allocation_type in _UNUSABLE:
                return False, "dynamic tensor"
        graph = PartitionGraph(
            context.tensors, allow_quantized=self.allow_quantized, from_shapes=self._from_shapes(context)
        )
        try:
            translate(graph, node, op)
        except Unsupported as why:
            return False, str(why)
        except Exception as error:  # a translator bug must not break delegation: leave it on the CPU
            logger.debug("ONNX translation of node %d failed", node.index, exc_info=True)
            return False, f"{type(error).__name__}: {error}"
        return True

    def _from_shapes(self, context: Context) -> frozenset[int]:
        """from_shapes_tensors of the context's current plan, made once per plan."""
        plan = tuple(context.get_execution_plan())
        cached = self._shape_values.get(context)
        if cached is None or cached[0] != plan:
            cached = self._shape_values[context] = (plan, from_shapes_tensors(context, plan))
        return cached[1]

    def create_kernel(self) -> OnnxRuntimeKernel:
        return OnnxRuntimeKernel(self)

    # --- sessions ------------------------------------------------------------------------------------

    def session_for(self, context: Context, params: DelegateParams, steps: list[tuple[Node, Registration]]):
        """(Binding-ready session, its fed input tensors) for the partition at the current shapes."""
        tensors = context.tensors
        shapes = tuple((t, tuple(tensors[t].shape)) for t in params.input_tensors)
        threads = self.num_threads or max(int(context.recommended_num_threads), 1)
        key = (params.nodes_to_replace, params.output_tensors, shapes, threads)
        cache = self._sessions.setdefault(context, {})
        if key not in cache:
            graph = translate_partition(
                tensors, steps, params.output_tensors, self.allow_quantized, self.relax_fp16
            )
            model = graph.model(f"partition_{params.nodes_to_replace[0]}")
            if self.relax_fp16:
                model = to_float16(model)
            cache[key] = (
                make_session(model, self.providers, threads, self.session_config),
                graph.input_tensors,
            )
            self.compilations += 1
        return cache[key]

    def cached_sessions(self, context: Context) -> int:
        return len(self._sessions.get(context, {}))

    # --- buffer handles ------------------------------------------------------------------------------

    def new_handle(self) -> int:
        return next(self._handles)

    def copy_from_buffer_handle(self, context: Context, delegate: Any, handle: int, tensor: Tensor) -> Status:
        value = self.device_values.get(handle)
        if value is None or tensor.data is None:
            return Status.ERROR
        np.copyto(tensor.data, value.numpy().reshape(tensor.data.shape), casting="no")
        return Status.OK

    def copy_to_buffer_handle(self, context: Context, delegate: Any, handle: int, tensor: Tensor) -> Status:
        value = self.device_values.get(handle)
        if value is None:
            return Status.ERROR
        value.update_inplace(np.ascontiguousarray(tensor.data))
        return Status.OK

    def free_buffer_handle(self, context: Context, delegate: Any, handle: int) -> None:
        self.device_values.pop(handle, None)


def translate_partition(
    tensors: Sequence[Tensor],
    steps: Sequence[tuple[Node, Registration]],
    outputs: Sequence[int],
    allow_quantized: bool = False,
    relax_fp16: bool = False,
) -> PartitionGraph:
    """The ONNX graph of a partition: its nodes in plan order, its output tensors as graph outputs."""
    graph = PartitionGraph(tensors, allow_quantized=allow_quantized, relax_fp16=relax_fp16)
    for node, registration in steps:
        live = [t for t in node.outputs if t != OPTIONAL_TENSOR]
        if live and all(graph.is_constant(t) for t in live):
            continue  # folded while shapes were propagated: a constant now
        TRANSLATORS[registration.builtin_code](graph, node, registration.builtin_code)
    for t in outputs:
        graph.add_output(t)
    return graph


class OnnxRuntimeKernel(SimpleDelegateKernel):
    """One delegated partition: its session (at the current shapes) and IO binding."""

    def __init__(self, delegate: OnnxRuntimeDelegate):
        self.delegate = delegate
        self.binding: Binding | None = None
        self._prepared_for: Any = None  # the input shapes of the last prepare

    def init(self, context: Context, params: DelegateParams) -> Status | None:
        self.params = params
        self.steps = [context.get_node_and_registration(i) for i in params.nodes_to_replace]
        return None

    def prepare(self, context: Context, node: Node) -> Status | None:
        delegate = self.delegate
        shapes = tuple(tuple(context.tensors[t].shape) for t in self.params.input_tensors)
        if shapes == self._prepared_for and self.binding is not None:
            return None  # same input shapes (e.g. a loop body prepared again): same session and binding
        for inner, registration in self.steps:  # the claimed nodes' own shape inference, at current shapes
            if registration.prepare is not None:
                status = registration.prepare(context, inner)
                if status not in (None, Status.OK):
                    return status
            if any(t != OPTIONAL_TENSOR and context.tensors[t].is_dynamic for t in inner.outputs):
                raise KernelError(f"node {inner.index} has a data-dependent output shape")
            fold_if_known(context, inner, registration)  # a shape computed from shapes: a constant
        session, inputs = delegate.session_for(context, self.params, self.steps)
        outputs = list(self.params.output_tensors)
        self.binding = Binding(session, inputs, outputs)
        self.inputs = inputs
        self.outputs = outputs
        self.device_outputs: list[Any] | None = None
        if delegate.keep_outputs_on_device:
            self.device_outputs = []
            for t in outputs:
                tensor = context.tensors[t]
                value = ort.OrtValue.ortvalue_from_shape_and_type(
                    list(tensor.shape), storage_dtype(tensor.type), delegate.device, delegate.device_id
                )
                if tensor.buffer_handle == NULL_BUFFER_HANDLE or tensor.delegate is not delegate:
                    context.subgraph.delegation.set_buffer_handle(t, delegate.new_handle(), delegate)
                delegate.device_values[tensor.buffer_handle] = value
                self.device_outputs.append(value)
        self._prepared_for = shapes
        return None

    def eval(self, context: Context, node: Node) -> Status | None:
        binding = self.binding
        tensors = context.tensors
        delegate = self.delegate
        for k, t in enumerate(self.inputs):
            tensor = tensors[t]
            if tensor.data_is_stale and tensor.delegate is delegate:  # another partition's device value
                binding.bind_input(k, delegate.device_values[tensor.buffer_handle])
            else:
                binding.bind_input(k, tensor.data)
        if self.device_outputs is None:
            for k, t in enumerate(self.outputs):
                binding.bind_output(k, tensors[t].data)
            binding.run()
        else:
            for k, value in enumerate(self.device_outputs):
                binding.bind_output(k, value)
            binding.run()
            for t in self.outputs:
                tensors[t].data_is_stale = True
        return None

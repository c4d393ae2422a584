"""Calling a subgraph of the model, as IF, WHILE, CALL_ONCE and the StableHLO calls do.

A called subgraph is prepared with the shapes and types of the values passed to it (its inputs resized
and its tensors allocated), then run by copying those values into its inputs, invoking it and copying its
outputs out (Call). When the values' shapes change, the subgraph is resized and allocated again before it
runs, and the node's outputs are dynamic: resized at invoke to what the subgraph produced. TFLite shares
memory between the node and the subgraph where it can; copying gives the same results.

Most calls have fixed shapes. For those a call is bound (Bound): the called subgraph's input and output
arrays and its check-free step list are looked up once and kept while its PlanRunner stays the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..core.node import OPTIONAL_TENSOR
from ..core.subgraph import Subgraph
from ..core.tensor import Tensor
from ..core.types import AllocationType, SubgraphState
from ..errors import ensure
from .row_write import is_rewritten, stop_rewriting


def called_subgraph(context, index: int, role: str) -> Subgraph:
    subgraphs = context.subgraphs
    ensure(
        0 <= index < len(subgraphs),
        f"{role} subgraph index {index} out of range ({len(subgraphs)} subgraphs)",
    )
    return subgraphs[index]


def prepare_call(target: Subgraph, sources: Sequence[Tensor | None], role: str) -> None:
    """Give `target`'s inputs the types and shapes of `sources` and allocate it (CopyTensorsShapeAndType)."""
    for position, (index, source) in enumerate(zip(target.inputs, sources)):
        if index == OPTIONAL_TENSOR or source is None:
            continue
        tensor = target.tensors[index]
        ensure(
            tensor.type == source.type,
            f"{role} subgraph input {position} is {tensor.type.name}, the value passed is {source.type.name}",
        )
        ensure(
            not tensor.is_constant_or_persistent,
            f"{role} subgraph input {position} is a constant tensor, it cannot receive a value",
        )
        first = target.inputs.index(index)
        ensure(
            first == position,  # two values, maybe of different shapes, for one tensor
            f"{role} subgraph input {position} is tensor {index}, already its input {first}",
        )
        target.resize_input_tensor(index, source.shape)
    target.allocate_tensors()
    written = written_tensors(target).union(target.inputs)
    for position, index in enumerate(target.outputs):
        ensure(
            index in written or target.tensors[index].data is not None,  # else a constant or a variable
            f"{role} subgraph output {position} (tensor {index}) is never written",
        )


def check_output_types(context, node, target: Subgraph, role: str) -> None:
    """The node's outputs have the types of the values `target` produces (they are copied, not cast)."""
    for position, (index, produced) in enumerate(zip(node.outputs, target.outputs)):
        if index == OPTIONAL_TENSOR:
            continue
        output, value = context.tensors[index], target.tensors[produced]
        ensure(
            output.type == value.type,
            f"{role} subgraph output {position} is {value.type.name}, the node's output {output.type.name}",
        )


class Call:
    """A prepared call of `target`: its input and output Tensor objects looked up once, so that running
    it (every WHILE iteration) only compares shapes, copies values and invokes.

    `skip_unread` leaves out the inputs no node of `target` reads and no output passes on (TFLite's
    RemoveUnusedInputs, done for a WHILE condition): their values are neither copied nor sized."""

    __slots__ = ("target", "inputs", "outputs", "outputs_are_inputs", "_bound")

    def __init__(self, target: Subgraph, skip_unread: bool = False):
        self.target = target
        tensors = target.tensors
        read = _read_tensors(target) if skip_unread else None
        self.inputs = [
            (p, tensors[i])
            for p, i in enumerate(target.inputs)
            if i != OPTIONAL_TENSOR and (read is None or i in read)
        ]
        self.outputs = [tensors[i] for i in target.outputs]
        # an output that is an input at another position would be overwritten while copying values in
        self.outputs_are_inputs = any(
            i in target.inputs and target.inputs.index(i) != p for p, i in enumerate(target.outputs)
        )
        self._bound: Bound | None = None

    def run(self, values: Sequence[np.ndarray | None], copy: bool = True) -> Sequence[np.ndarray]:
        """Copy `values` into the inputs (resizing and allocating the subgraph if their shapes changed),
        invoke it, and return its outputs. Runs inside the caller's invoke (float errors ignored). A fused
        subgraph stops fusing when a profiler listens (it sees every node).

        copy=False returns the output tensors' own arrays where that is safe: the caller must use them
        before this subgraph runs again, except as `values` of its next run (which reads them before
        anything overwrites them: inputs and outputs never share arena bytes).
        """
        bound = self.bound()
        if bound is not None and bound.accepts(values):
            outputs = bound.run(values)
            return [o.copy() for o in outputs] if copy else outputs
        target = self.target
        if target.context.profiler is not None and is_rewritten(target):
            stop_rewriting(target)  # a profiler sees every node
        count = len(values)
        inputs = [(t, values[p]) for p, t in self.inputs if p < count and values[p] is not None]
        resized = False
        for tensor, value in inputs:
            if tensor.shape != value.shape:
                if not resized:  # values may be views of this subgraph's memory, which is planned anew
                    resized = True
                    inputs = [(t, v.copy()) for t, v in inputs]
                target.resize_input_tensor(tensor.index, value.shape)
        if target.state == SubgraphState.UNINVOKABLE:
            target.allocate_tensors()
        for tensor, value in inputs:
            data = tensor.data
            if value is not data:  # a WHILE body's pass-through value is the input itself
                data[...] = value  # same type and shape (checked in prepare): a plain copy
        target.invoke_nested()
        outputs = []
        copy = copy or self.outputs_are_inputs
        for tensor in self.outputs:
            if tensor.data_is_stale:
                target.delegation.ensure_tensor_data_is_readable(tensor.index)
            outputs.append(tensor.data.copy() if copy else tensor.data)
        return outputs

    def bound(self) -> Bound | None:
        """This call with `target`'s current memory and step list bound, or None when it cannot run
        that way now (not allocated, dynamic shapes, delegate buffers, a profiler listening)."""
        target = self.target
        bound = self._bound
        if bound is None or bound.runner is not target.runner:
            bound = self._bound = Bound(self)
        if bound.program is None or target.context.profiler is not None:
            return None
        return bound


class Bound:
    """A call of a subgraph whose shapes are fixed, as the arrays it copies between and the check-free
    steps it runs. Valid while the subgraph keeps the PlanRunner it was made for: every allocation
    makes a new one (and a resize or a delegate drops it), so `runner` identity is the whole check."""

    __slots__ = ("runner", "program", "inputs", "shapes", "outputs")

    def __init__(self, call: Call):
        target = call.target
        runner = target.runner
        self.runner = runner
        self.inputs = tuple((p, t.data, copy_index(t.data)) for p, t in call.inputs)  # (copy_index)
        self.shapes = tuple((p, t.shape) for p, t in call.inputs)
        self.outputs = tuple(t.data for t in call.outputs)
        usable = (
            runner is not None
            and not call.outputs_are_inputs
            and all(t.delegate is None and t.data is not None for t in call.outputs)
            and all(t.data is not None for _, t in call.inputs)
        )
        self.program = runner.program if usable else None

    def accepts(self, values: Sequence[np.ndarray | None]) -> bool:
        """Every value is present and has its input's shape (else the subgraph must be resized)."""
        count = len(values)
        for p, shape in self.shapes:
            if p >= count or values[p] is None or values[p].shape != shape:
                return False
        return True

    def run(self, values: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Copy `values` in, run the steps, return the output arrays (the subgraph's own memory)."""
        for p, array, index in self.inputs:
            value = values[p]
            if value is not array:
                array[index] = value
        self.program.run()
        return self.outputs


def written_tensors(subgraph: Subgraph) -> set[int]:
    """The tensors some node of `subgraph` writes."""
    return {t for node, _ in subgraph.nodes for t in node.outputs}


def _read_tensors(subgraph: Subgraph) -> set[int]:
    """The tensors some node of `subgraph` reads or its outputs pass on."""
    read = set(subgraph.outputs)
    for node, _ in subgraph.nodes:
        read.update(node.inputs)
    return read


def reachable_subgraphs(subgraphs: Sequence[Subgraph], first: Subgraph) -> set[int]:
    """The subgraphs the nodes of `first` call, directly or through other calls."""
    found: set[int] = set()
    pending = [first]
    while pending:
        for node, _ in pending.pop().nodes:
            for index in _calls(node):
                if 0 <= index < len(subgraphs) and index not in found:
                    found.add(index)
                    pending.append(subgraphs[index])
    return found


def _calls(node) -> list[int]:
    """The subgraph indices a node's options name (IF, WHILE, CALL_ONCE, the StableHLO calls: every
    option named *subgraph_index or *subgraph_indices)."""
    options = node.builtin_data
    if options is None or not dataclasses.is_dataclass(options):
        return []
    found = []
    for field in dataclasses.fields(options):
        if "subgraph_ind" in field.name:
            value = getattr(options, field.name)
            found.extend(
                i for i in (value if isinstance(value, (tuple, list)) else (value,)) if isinstance(i, int)
            )
    return found


def call_count(subgraphs: Sequence[Subgraph], index: int) -> int:
    """How many times the model's nodes name subgraph `index` as one to call."""
    return sum(_calls(node).count(index) for subgraph in subgraphs for node, _ in subgraph.nodes)


def write_outputs(context, node, values: Sequence[np.ndarray], dynamic: bool) -> None:
    for index, value in zip(node.outputs, values):
        if index == OPTIONAL_TENSOR:
            continue
        output = context.tensors[index]
        if dynamic:
            context.resize_tensor(output, value.shape)
        output.data[...] = value


def values_of(context, indices: Sequence[int]) -> list[np.ndarray | None]:
    return [None if i == OPTIONAL_TENSOR else context.tensors[i].data for i in indices]


def sources_of(context, indices: Sequence[int]) -> list[Tensor | None]:
    return [None if i == OPTIONAL_TENSOR else context.tensors[i] for i in indices]


def resize_or_dynamic(context, node, shapes: Sequence[tuple[int, ...]] | None) -> None:
    """The node's outputs: dynamic when `shapes` is None, else resized to them."""
    for position, index in enumerate(node.outputs):
        if index == OPTIONAL_TENSOR:
            continue
        output = context.tensors[index]
        if shapes is None:
            context.set_tensor_to_dynamic(output)
        else:
            context.resize_tensor(output, shapes[position])


def output_shapes(subgraph: Subgraph) -> list[tuple[int, ...]]:
    return [subgraph.tensors[i].shape for i in subgraph.outputs]


def is_dynamic(tensor: Tensor) -> bool:
    return tensor.allocation_type == AllocationType.DYNAMIC


def copy_index(array: np.ndarray):
    """The index `array[index] = value` copies through: () sets a 0-d array's element directly, a few
    times faster than [...] (same dtype: the bits are kept). Not for object arrays, where a 0-d one's
    element would become the value array itself."""
    return ... if array.dtype == object else ()

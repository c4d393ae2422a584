"""Control flow: IF, WHILE and CALL_ONCE, which run other subgraphs of the model.

A called subgraph is prepared with the shapes and types of the values passed to it (its inputs resized
and its tensors allocated), then run by copying those values into its inputs, invoking it and copying its
outputs out. When the values' shapes change (an IF whose branches differ, a WHILE whose loop-carried
tensors grow), the subgraph is resized and allocated again before it runs, and the node's outputs are
dynamic: resized at invoke to what the subgraph produced. TFLite shares memory between the node and the
subgraph where it can; copying gives the same results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.node import OPTIONAL_TENSOR
from ..core.subgraph import Subgraph
from ..core.tensor import Tensor
from ..core.types import AllocationType, BuiltinOperator, SubgraphState, TensorType
from ..errors import ensure, ensure_eq
from .common import ANY_TYPE, input_tensor
from .registry import register_builtin

# --- calling a subgraph ------------------------------------------------------------------------------


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
    written = {t for node, _ in target.nodes for t in node.outputs}.union(target.inputs)
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
    it (every WHILE iteration) only compares shapes, copies values and invokes."""

    __slots__ = ("target", "inputs", "outputs", "outputs_are_inputs")

    def __init__(self, target: Subgraph):
        self.target = target
        tensors = target.tensors
        self.inputs = [(p, tensors[i]) for p, i in enumerate(target.inputs) if i != OPTIONAL_TENSOR]
        self.outputs = [tensors[i] for i in target.outputs]
        # an output that is an input at another position would be overwritten while copying values in
        self.outputs_are_inputs = any(
            i in target.inputs and target.inputs.index(i) != p for p, i in enumerate(target.outputs)
        )

    def run(self, values: Sequence[np.ndarray | None], copy: bool = True) -> list[np.ndarray]:
        """Copy `values` into the inputs (resizing and allocating the subgraph if their shapes changed),
        invoke it, and return its outputs. Runs inside the caller's invoke (np.errstate set).

        copy=False returns the output tensors' own arrays where that is safe: the caller must use them
        before this subgraph runs again, except as `values` of its next run (which reads them before
        anything overwrites them: inputs and outputs never share arena bytes).
        """
        target = self.target
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


def write_outputs(context, node, values: Sequence[np.ndarray], dynamic: bool) -> None:
    for index, value in zip(node.outputs, values):
        if index == OPTIONAL_TENSOR:
            continue
        output = context.tensors[index]
        if dynamic:
            context.resize_tensor(output, value.shape)
        np.copyto(output.data, value)


def _values(context, indices: Sequence[int]) -> list[np.ndarray | None]:
    return [None if i == OPTIONAL_TENSOR else context.tensors[i].data for i in indices]


def _sources(context, indices: Sequence[int]) -> list[Tensor | None]:
    return [None if i == OPTIONAL_TENSOR else context.tensors[i] for i in indices]


def _resize_or_dynamic(context, node, shapes: Sequence[tuple[int, ...]] | None) -> None:
    """The node's outputs: dynamic when `shapes` is None, else resized to them."""
    for position, index in enumerate(node.outputs):
        if index == OPTIONAL_TENSOR:
            continue
        output = context.tensors[index]
        if shapes is None:
            context.set_tensor_to_dynamic(output)
        else:
            context.resize_tensor(output, shapes[position])


def _output_shapes(subgraph: Subgraph) -> list[tuple[int, ...]]:
    return [subgraph.tensors[i].shape for i in subgraph.outputs]


def _is_dynamic(tensor: Tensor) -> bool:
    return tensor.allocation_type == AllocationType.DYNAMIC


# --- IF ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IfData:
    then_call: Call
    else_call: Call
    dynamic: bool  # the node's outputs are resized at invoke to what the branch produced


def if_prepare(context, node):
    options = node.builtin_data
    ensure(len(node.inputs) > 0, "IF needs a condition input")
    condition = input_tensor(context, node, 0)
    ensure_eq(condition.type.name, TensorType.BOOL.name, "IF condition type")
    ensure_eq(int(np.prod(condition.shape, dtype=np.int64)), 1, "IF condition element count")
    branches = (
        called_subgraph(context, options.then_subgraph_index, "IF then"),
        called_subgraph(context, options.else_subgraph_index, "IF else"),
    )
    sources = _sources(context, node.inputs[1:])
    for branch, role in zip(branches, ("IF then", "IF else")):
        ensure_eq(len(branch.inputs), len(sources), f"{role} subgraph input count")
        ensure_eq(len(branch.outputs), len(node.outputs), f"{role} subgraph output count")
        prepare_call(branch, sources, role)
        check_output_types(context, node, branch, role)
    then_shapes, else_shapes = (_output_shapes(b) for b in branches)
    dynamic = any(b.has_dynamic_tensors for b in branches) or then_shapes != else_shapes
    node.user_data = IfData(Call(branches[0]), Call(branches[1]), dynamic)
    _resize_or_dynamic(context, node, None if dynamic else then_shapes)


def if_invoke(context, node):
    data = node.user_data
    call = data.then_call if context.tensors[node.inputs[0]].data.reshape(-1)[0] else data.else_call
    write_outputs(context, node, call.run(_values(context, node.inputs[1:]), copy=False), data.dynamic)


# --- WHILE -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WhileData:
    condition: Call
    body: Call
    dynamic: bool  # the node's outputs are resized at invoke to what the loop produced


def _check_condition(tensor: Tensor) -> None:
    if tensor.type == TensorType.BOOL and tensor.shape in ((), (1,)):
        return  # the common case, without formatting the messages below
    ensure_eq(tensor.type.name, TensorType.BOOL.name, "WHILE condition output type")
    ensure(
        tensor.shape in ((), (1,)), f"WHILE condition output must hold one value, shape {list(tensor.shape)}"
    )


def while_prepare(context, node):
    options = node.builtin_data
    count = len(node.inputs)
    ensure_eq(len(node.outputs), count, "WHILE output count vs input count")
    ensure(
        options.cond_subgraph_index != options.body_subgraph_index,
        "WHILE condition and body must be different subgraphs",
    )
    condition = called_subgraph(context, options.cond_subgraph_index, "WHILE condition")
    body = called_subgraph(context, options.body_subgraph_index, "WHILE body")
    ensure_eq(len(condition.inputs), count, "WHILE condition subgraph input count")
    ensure_eq(len(condition.outputs), 1, "WHILE condition subgraph output count")
    ensure_eq(len(body.inputs), count, "WHILE body subgraph input count")
    ensure_eq(len(body.outputs), count, "WHILE body subgraph output count")
    sources = [input_tensor(context, node, i) for i in range(count)]  # each carried into an output
    prepare_call(condition, sources, "WHILE condition")
    condition_output = condition.tensors[condition.outputs[0]]
    if not _is_dynamic(condition_output):
        _check_condition(condition_output)
    prepare_call(body, sources, "WHILE body")
    check_output_types(context, node, body, "WHILE body")
    dynamic = body.has_dynamic_tensors
    for position, (i, o) in enumerate(zip(body.inputs, body.outputs)):
        before, after = body.tensors[i], body.tensors[o]
        ensure(
            before.type == after.type,
            f"WHILE body output {position} is {after.type.name}, its input {before.type.name}",
        )
        # A loop-carried value that changes shape makes the node's outputs dynamic; [] and [1] count as
        # alike. (TFLite's test also lets [0] -> [1] through, and such a loop then fails at invoke;
        # here it is dynamic and runs.)
        if before.shape != after.shape and {before.shape, after.shape} != {(), (1,)}:
            dynamic = True
    node.user_data = WhileData(Call(condition), Call(body), dynamic)
    _resize_or_dynamic(context, node, None if dynamic else _output_shapes(body))


def while_invoke(context, node):
    data = node.user_data
    condition, body = data.condition, data.body
    condition_output = condition.outputs[0]
    limits = context.subgraph.limits
    limit = None if limits is None else limits.max_while_iterations  # None: unbounded, as TFLite
    values = _values(context, node.inputs)
    iterations = 0
    while True:
        (keep_going,) = condition.run(values, copy=False)
        _check_condition(condition_output)
        if not keep_going.reshape(-1)[0]:
            break
        ensure(
            limit is None or iterations < limit,
            f"WHILE ran {iterations} iterations, the limit (Limits.max_while_iterations) is {limit}",
        )
        iterations += 1
        values = body.run(values, copy=False)
    write_outputs(context, node, values, data.dynamic)


# --- CALL_ONCE ---------------------------------------------------------------------------------------


def call_once_prepare(context, node):
    index = node.builtin_data.init_subgraph_index
    ensure(index != context.subgraph.index, "CALL_ONCE cannot call its own subgraph")
    if index in context.resources.initialized_subgraphs:
        return
    ensure_eq(len(node.inputs), 0, "CALL_ONCE input count")
    ensure_eq(len(node.outputs), 0, "CALL_ONCE output count")
    init = called_subgraph(context, index, "CALL_ONCE init")
    ensure_eq(len(init.inputs), 0, "CALL_ONCE init subgraph input count")
    ensure_eq(len(init.outputs), 0, "CALL_ONCE init subgraph output count")


def call_once_invoke(context, node):
    """Run the init subgraph the first time any CALL_ONCE of this interpreter names it."""
    index = node.builtin_data.init_subgraph_index
    done = context.resources.initialized_subgraphs
    if index in done:
        return
    init = context.subgraphs[index]
    init.allocate_tensors()
    init.invoke()
    done.add(index)


register_builtin(
    BuiltinOperator.IF, (1, 1), types=ANY_TYPE, op_data=IfData, prepare=if_prepare, invoke=if_invoke
)
register_builtin(
    BuiltinOperator.WHILE,
    (1, 1),
    types=ANY_TYPE,
    op_data=WhileData,
    prepare=while_prepare,
    invoke=while_invoke,
)
register_builtin(BuiltinOperator.CALL_ONCE, (1, 1), prepare=call_once_prepare, invoke=call_once_invoke)

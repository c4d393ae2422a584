"""The model rules: checks on a finished model description, before the runtime builds anything from it.

A model file is attacker-controlled input: TFLite's CVEs came from out-of-range indices, negative or huge
dimensions, buffers shorter than their tensors, graph cycles and control-flow recursion. The reader
(model/reader.py) owns the checks its reads need (flatbuffer bounds, tensor types, shapes, constant
buffer sizes) and calls `verify_model` once, on the description it built; this module never reads the
file. The rules: tensor indices, the memory of all non-constant tensors against `Limits`, operator
arity, acyclic control-flow subgraph references within `max_call_depth`, and execution order (TFLite's
VerifySubGraphConsistency).

Every failure is a ModelError (a ValueError, as LiteRT raises for a model it cannot build) whose message
names the field, the index and the limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.limits import DEFAULT_LIMITS, Limits
from ..errors import ModelError
from .arity import OPERATOR_ARITY

if TYPE_CHECKING:
    from .reader import ModelDescription, OperatorCodeDescription, SubgraphDescription

OPTIONAL_TENSOR = -1


def verify_model(model: ModelDescription, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check every structural rule of the module docstring; raise ModelError on the first violation."""
    _verify_memory(model, limits)
    for index, subgraph in enumerate(model.subgraphs):
        _verify_io(subgraph, index)
        _verify_operators(subgraph, index, model.operator_codes)
        _verify_execution_order(subgraph, index, model.operator_codes)
    _verify_signatures(model)
    _verify_call_graph(model, limits)


def _verify_memory(model: ModelDescription, limits: Limits) -> None:
    """The non-constant tensors of all subgraphs fit in `max_bytes` together (an arena bound)."""
    total = 0
    for index, subgraph in enumerate(model.subgraphs):
        for t, tensor in enumerate(subgraph.tensors):
            if tensor.data is None:
                total += limits.tensor_bytes(tensor.type, tensor.shape)
                if total > limits.max_bytes:
                    raise ModelError(
                        f"Tensor {t} of subgraph {index} ({tensor.name!r}) shape {list(tensor.shape)} brings "
                        f"the model's non-constant tensors to {total} bytes, over the limit of "
                        f"{limits.max_bytes} bytes."
                    )


def _check_indices(indices: Sequence[int], count: int, what: str, index: int, optional: bool) -> None:
    for i in indices:
        if not (0 <= i < count or (optional and i == OPTIONAL_TENSOR)):
            raise ModelError(
                f"Invalid tensor index {i} in {what} of subgraph {index}. The subgraph has {count} tensors"
            )


def _verify_io(subgraph: SubgraphDescription, index: int) -> None:
    count = len(subgraph.tensors)
    _check_indices(subgraph.inputs, count, "inputs", index, optional=False)
    _check_indices(subgraph.outputs, count, "outputs", index, optional=False)


def _verify_operators(
    subgraph: SubgraphDescription, index: int, codes: Sequence[OperatorCodeDescription]
) -> None:
    """Opcode and tensor indices in range; input and output counts within the op's arity."""
    count = len(subgraph.tensors)
    for o, op in enumerate(subgraph.operators):
        if not 0 <= op.opcode_index < len(codes):
            raise ModelError(
                f"Operator {o} of subgraph {index} has opcode_index {op.opcode_index}, "
                f"but the model has {len(codes)} operator codes."
            )
        code = codes[op.opcode_index]
        where = f"operator {o} ({code.name})"
        _check_indices(op.inputs, count, f"inputs of {where}", index, optional=True)
        _check_indices(op.outputs, count, f"outputs of {where}", index, optional=True)
        _check_indices(op.intermediates, count, f"intermediates of {where}", index, optional=True)
        arity = OPERATOR_ARITY.get(code.builtin_code)
        if arity is None:
            continue
        for kind, tensors, (low, high) in (
            ("inputs", op.inputs, arity[0]),
            ("outputs", op.outputs, arity[1]),
        ):
            if not low <= len(tensors) <= (high if high is not None else len(tensors)):
                allowed = f"{low}" if low == high else f"{low} to {'any' if high is None else high}"
                raise ModelError(
                    f"Operator {o} ({code.name}) of subgraph {index} has {len(tensors)} {kind}; "
                    f"{code.name} takes {allowed}."
                )


def _verify_execution_order(
    subgraph: SubgraphDescription, index: int, codes: Sequence[OperatorCodeDescription]
) -> None:
    """Each operator reads only graph inputs, constants, variables or outputs of earlier operators,
    and writes each tensor once (TFLite's VerifySubGraphConsistency, with its messages)."""
    tensors = subgraph.tensors
    constant = {t for t, d in enumerate(tensors) if d.data is not None}
    variable = {t for t, d in enumerate(tensors) if d.is_variable and d.data is None}
    graph_inputs = set(subgraph.inputs)
    # a tensor with no elements holds nothing to read (e.g. the empty shape of a RESHAPE to a scalar),
    # unless an operator writes it: then it may be resized, and read before it is written
    written = {t for op in subgraph.operators for t in op.outputs}
    empty = {t for t, d in enumerate(tensors) if 0 in d.shape and t not in written}
    available = constant | variable | graph_inputs | empty
    produced: set[int] = set()
    for o, op in enumerate(subgraph.operators):
        name = codes[op.opcode_index].name
        where = f"to op {o} ({name}) of subgraph {index}"
        for position, t in enumerate(op.inputs):
            if t == OPTIONAL_TENSOR or t in available or t in produced:
                continue
            if name == "RESHAPE" and position == 1 and len(tensors[t].shape) != 1:
                continue  # a placeholder shape input; RESHAPE then reads its options (as at invoke)
            raise ModelError(f"Input tensor {t} {where} is not produced")
        for t in op.outputs:
            if t == OPTIONAL_TENSOR or t in op.inputs:
                continue  # in-place: custom ops may alias; a builtin is refused by the builder, as TFLite does
            if t in constant:
                raise ModelError(f"Output tensor {t} {where} is a constant")
            if t in variable:
                raise ModelError(f"Output tensor {t} {where} is a variable")
            if t in graph_inputs:
                raise ModelError(f"Output tensor {t} {where} is a subgraph input")
            if t in produced:
                raise ModelError(
                    f"Output tensor {t} {where} is an output from another op. There is a cycle in the graph"
                )
            produced.add(t)


def _verify_signatures(model: ModelDescription) -> None:
    for signature in model.signatures:
        if not 0 <= signature.subgraph_index < len(model.subgraphs):
            raise ModelError(
                f"SignatureDef {signature.key!r} refers to subgraph {signature.subgraph_index}, "
                f"but the model has {len(model.subgraphs)}."
            )
        count = len(model.subgraphs[signature.subgraph_index].tensors)
        for name, t in (*signature.inputs.items(), *signature.outputs.items()):
            if not 0 <= t < count:
                raise ModelError(
                    f"SignatureDef {signature.key!r} maps {name!r} to tensor {t}, but "
                    f"subgraph {signature.subgraph_index} has {count} tensors."
                )


def subgraph_references(options: Any) -> list[tuple[str, int]]:
    """(field, subgraph index) for every `*_subgraph_index` field of an operator's options."""
    if options is None or not dataclasses.is_dataclass(options):
        return []
    return [
        (f.name, getattr(options, f.name))
        for f in dataclasses.fields(options)
        if f.name.endswith("subgraph_index")
    ]


def _verify_call_graph(model: ModelDescription, limits: Limits) -> None:
    """Control-flow subgraph references form no cycle and nest at most `max_call_depth` deep.

    An index out of range is left to the op's prepare, which reports it as TFLite does; a cycle would
    recurse without end (LiteRT overflows its stack), so it is refused here.
    """
    count = len(model.subgraphs)
    calls: list[list[tuple[int, str]]] = []
    for index, subgraph in enumerate(model.subgraphs):
        edges = []
        for o, op in enumerate(subgraph.operators):
            for field_name, target in subgraph_references(op.builtin_options):
                if 0 <= target < count:
                    name = model.operator_codes[op.opcode_index].name
                    edges.append((target, f"operator {o} ({name}) of subgraph {index} {field_name}={target}"))
        calls.append(edges)
    depth: list[int | None] = [None] * count  # longest call chain below each finished subgraph
    for root in range(count):
        if depth[root] is not None:
            continue
        # iterative DFS: a hostile model may nest deeper than Python's recursion limit
        path, on_path, stack = [root], {root}, [iter(calls[root])]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                node = path.pop()
                on_path.discard(node)
                stack.pop()
                depth[node] = max((1 + depth[t] for t, _ in calls[node]), default=0)
                continue
            target, via = step
            if target in on_path:
                raise ModelError(
                    f"Subgraph {target} calls itself through {via}: control-flow subgraphs cannot recurse."
                )
            if depth[target] is None:
                if len(path) > limits.max_call_depth:
                    raise ModelError(
                        f"Control-flow subgraphs nest deeper than the limit of {limits.max_call_depth} "
                        f"(at {via})."
                    )
                path.append(target)
                on_path.add(target)
                stack.append(iter(calls[target]))
        if depth[root] > limits.max_call_depth:
            raise ModelError(
                f"Control-flow subgraphs nest {depth[root]} deep below subgraph {root}, over the limit of "
                f"{limits.max_call_depth}."
            )

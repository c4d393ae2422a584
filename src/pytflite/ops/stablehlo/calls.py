"""STABLEHLO_COMPOSITE and STABLEHLO_CASE, which run other subgraphs of the model.

COMPOSITE names an operation (its name, version and attributes are for delegates that recognise it) and
runs its decomposition subgraph on the node's inputs. CASE runs the branch subgraph its int32 index
selects, the last branch for an index out of range. Both call subgraphs as IF does (ops/subgraph_calls.py):
the node's outputs are dynamic when the called subgraphs' output shapes are not known or not one set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.node import OPTIONAL_TENSOR
from ...core.types import BuiltinOperator, TensorType
from ...errors import KernelError, ensure, ensure_condition_eq, ensure_type_condition
from ..common import ANY_TYPE, input_tensor
from ..registry import register_builtin
from ..subgraph_calls import Call, called_subgraph, check_output_types, prepare_call, write_outputs


@dataclass(frozen=True, slots=True)
class CallsData:
    calls: tuple[Call, ...]  # COMPOSITE: its decomposition; CASE: the branches in index order
    dynamic: bool  # the node's outputs are resized at invoke to what the subgraph produced


def _prepare_calls(context, node, indices, arguments: list[int], role: str) -> CallsData:
    """Prepare each called subgraph for the tensors `arguments`; size the node's outputs."""
    sources = [None if i == OPTIONAL_TENSOR else context.tensors[i] for i in arguments]
    targets = []
    for index in indices:
        target = called_subgraph(context, index, role)
        ensure_condition_eq(
            len(arguments), len(target.inputs), f"num_inputs != {role} subgraph inputs().size()"
        )
        ensure_condition_eq(
            len(node.outputs), len(target.outputs), f"num_outputs != {role} subgraph outputs().size()"
        )
        prepare_call(target, sources, role)
        check_output_types(context, node, target, role)
        targets.append(target)
    shapes = {tuple(target.tensors[i].shape for i in target.outputs) for target in targets}
    dynamic = any(target.has_dynamic_tensors for target in targets) or len(shapes) != 1
    for position, index in enumerate(node.outputs):
        if index == OPTIONAL_TENSOR:
            continue
        output = context.tensors[index]
        if dynamic:
            context.set_tensor_to_dynamic(output)
        else:
            context.resize_tensor(output, next(iter(shapes))[position])
    return CallsData(tuple(Call(target) for target in targets), dynamic)


def _run(context, node, call: Call, arguments) -> None:
    values = [None if i == OPTIONAL_TENSOR else context.tensors[i].data for i in arguments]
    write_outputs(context, node, call.run(values, copy=False), node.user_data.dynamic)


def composite_prepare(context, node):
    options = node.builtin_data
    if options is None:
        raise KernelError("Could not get 'stablehlo.composite' operation parameters.")
    ensure(len(node.inputs) > 0, "node->inputs->size > 0 was not true.")
    index = options.decomposition_subgraph_index
    ensure(index != context.subgraph.index, "STABLEHLO_COMPOSITE cannot call its own subgraph")
    node.user_data = _prepare_calls(context, node, (index,), list(node.inputs), "decomposition")


def composite_invoke(context, node):
    _run(context, node, node.user_data.calls[0], node.inputs)


def case_prepare(context, node):
    options = node.builtin_data
    if options is None:
        raise KernelError("Could not get 'stablehlo.case' params")
    branches = options.branch_subgraph_indices
    ensure(len(branches) > 0, "params->num_branches > 0 was not true.")
    ensure(context.subgraph.index not in branches, "STABLEHLO_CASE cannot call its own subgraph")
    ensure(len(node.inputs) > 0, "STABLEHLO_CASE needs an index input")
    index = input_tensor(context, node, 0)
    ensure_type_condition(index, TensorType.INT32, "index->type != kTfLiteInt32")
    ensure_condition_eq(int(np.prod(index.shape)), 1, "NumElements(index) != 1")
    node.user_data = _prepare_calls(context, node, branches, list(node.inputs[1:]), "branch")


def case_invoke(context, node):
    calls = node.user_data.calls
    chosen = int(context.tensors[node.inputs[0]].data.reshape(-1)[0])
    _run(context, node, calls[chosen if 0 <= chosen < len(calls) else -1], node.inputs[1:])


register_builtin(
    BuiltinOperator.STABLEHLO_COMPOSITE,
    (1, 1),
    types=ANY_TYPE,
    op_data=CallsData,
    prepare=composite_prepare,
    invoke=composite_invoke,
)
register_builtin(
    BuiltinOperator.STABLEHLO_CASE,
    (1, 1),
    types=ANY_TYPE,
    op_data=CallsData,
    prepare=case_prepare,
    invoke=case_invoke,
)

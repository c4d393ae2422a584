"""Build runnable subgraphs from a model description (TFLite's InterpreterBuilder).

It joins the layers below it (the runtime core, the model description and its options, the op
resolver), so it sits beside the Interpreter rather than in core.

Each operator code is resolved once: a builtin the resolver lacks fails the build with TFLite's
"Didn't find op for builtin opcode" error; a custom op it lacks gets a placeholder that fails only at
prepare, so that a delegate may still claim the node. Then every subgraph gets its tensors (constants
as read-only views on the model bytes) and its nodes, whose kernels' `init` runs here, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .core.node import Registration, unresolved_custom_op
from .core.resources import Resources
from .core.subgraph import Subgraph
from .core.tensor import Tensor
from .core.types import NON_POD_TYPES, AllocationType, BuiltinOperator, storage_dtype, stored_shape
from .errors import ErrorReporter, InterpreterError, ModelError
from .model.options import options_class_for_operator

if TYPE_CHECKING:
    from .model.reader import ModelDescription, OperatorDescription, SubgraphDescription, TensorDescription
    from .ops.resolver import OpResolver

_MAX_BUILTIN_CODE = max(BuiltinOperator)


def build_subgraphs(
    model: ModelDescription,
    resolver: OpResolver,
    error_reporter: ErrorReporter,
    preserve_all_tensors: bool = False,
) -> list[Subgraph]:
    registrations = [_resolve(code, resolver) for code in model.operator_codes]
    resources = Resources()  # one per interpreter: VAR_HANDLE's init numbers its variables in it
    subgraphs = []
    for index, description in enumerate(model.subgraphs):
        subgraph = Subgraph(
            index,
            description.name,
            error_reporter,
            preserve_all_tensors=preserve_all_tensors,
            metadata=model.metadata,
            resources=resources,
        )
        subgraph.subgraphs = subgraphs
        _add_tensors(subgraph, description)
        for operator in description.operators:
            _add_node(subgraph, operator, registrations[operator.opcode_index])
        subgraph.variables = tuple(t.index for t in subgraph.tensors if t.is_variable)
        subgraphs.append(subgraph)
    return subgraphs


def _resolve(code, resolver: OpResolver) -> Registration:
    if code.builtin_code > _MAX_BUILTIN_CODE or code.builtin_code < 0:
        raise ModelError(
            f"Op builtin_code out of range: {code.builtin_code}. Are you using old TFLite binary with newer model?"
        )
    op = BuiltinOperator(code.builtin_code)
    if op == BuiltinOperator.CUSTOM:
        if code.custom_code is None:
            raise ModelError("Operator with CUSTOM builtin_code has no custom_code.")
        found = resolver.find_custom(code.custom_code, code.version)
        return found if found is not None else unresolved_custom_op(code.custom_code)
    found = resolver.find_builtin(op, code.version)
    if found is None:
        raise ModelError(
            f"Didn't find op for builtin opcode '{op.name}' version '{code.version}'. An older version of this "
            "builtin might be supported. Are you using an old TFLite binary with a newer model?\nRegistration failed.\n"
        )
    return found


def _add_tensors(subgraph: Subgraph, description: SubgraphDescription) -> None:
    subgraph.tensors.extend(_tensor(i, spec, subgraph.index) for i, spec in enumerate(description.tensors))
    subgraph.inputs = description.inputs
    subgraph.outputs = description.outputs


def _tensor(index: int, spec: TensorDescription, subgraph_index: int) -> Tensor:
    """SetTensorParametersReadOnly / ReadWrite: constants map the file, the rest get memory later."""
    tensor = Tensor(
        index,
        spec.type,
        spec.shape,
        spec.name,
        shape_signature=spec.shape_signature,
        quantization=spec.quantization,
        sparsity=spec.sparsity,
        is_variable=spec.is_variable,
        buffer_index=spec.buffer_index,
    )
    if spec.data is not None:
        tensor.allocation_type = AllocationType.MMAP_RO
        tensor.data = spec.data
        tensor.bytes = 0 if spec.type in NON_POD_TYPES else spec.data.nbytes
    elif spec.type in NON_POD_TYPES:
        if spec.is_variable:
            raise ModelError(
                f"Tensor {index} of subgraph {subgraph_index}: String variable tensor isn't supported."
            )
        tensor.allocation_type = AllocationType.DYNAMIC
    else:
        tensor.allocation_type = (
            AllocationType.ARENA_RW_PERSISTENT if spec.is_variable else AllocationType.ARENA_RW
        )
        if tensor.bytes == 0:  # nothing to plan, but kernels still need an (empty) array to read
            tensor.data = np.zeros(stored_shape(spec.type, spec.shape), storage_dtype(spec.type))
    return tensor


def _add_node(subgraph: Subgraph, operator: OperatorDescription, registration: Registration) -> None:
    if registration.builtin_code == BuiltinOperator.CUSTOM:
        init_data, builtin_data = operator.custom_options, None
    else:
        init_data, builtin_data = None, _builtin_data(registration.builtin_code, operator.builtin_options)
    try:
        subgraph.add_node_with_parameters(
            operator.inputs, operator.outputs, operator.intermediates, init_data, builtin_data, registration
        )
    except InterpreterError as error:  # a malformed operator: the model cannot be built
        raise ModelError(str(error)) from error.__cause__


def _builtin_data(op: int, options):
    """The options a builtin kernel receives: the model's, or the op's defaults when they are absent
    or of another table (TFLite's ParseOpData does the same); None for ops that take no options."""
    expected = options_class_for_operator(op)
    if expected is None:
        return options
    return options if isinstance(options, expected) else expected()

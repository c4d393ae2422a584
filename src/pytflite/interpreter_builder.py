"""Build runnable subgraphs from a model description (TFLite's InterpreterBuilder).

It joins the layers below it (the runtime core, the model description and its options, the op
resolver), so it sits beside the Interpreter rather than in core.

The interpreter's options arrive as one SubgraphConfig, which each subgraph receives at construction,
with what only the model can decide filled in here: whether the subgraph sums floats in LiteRT's exact
order (where it has a hybrid op, on x86), and the model's explicit control dependencies.

Every subgraph shares the model's DerivedConstants (core/derived.py): constants that kernels derive from
the model's constants are computed once for all interpreters built from the same loaded model.

Each operator code is resolved once: a builtin the resolver lacks fails the build with TFLite's
"Didn't find op for builtin opcode" error; a custom op it lacks gets a placeholder that fails only at
prepare, so that a delegate may still claim the node. Then every subgraph gets its tensors (constants
as read-only views on the model bytes) and its nodes, whose kernels' `init` runs here, once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .core.config import SubgraphConfig
from .core.node import Registration, is_flex_op, unresolved_custom_op
from .core.resources import Resources
from .core.subgraph import Subgraph
from .core.tensor import Tensor
from .core.types import (
    NON_POD_TYPES,
    AllocationType,
    BuiltinOperator,
    TensorType,
    storage_dtype,
    stored_shape,
)
from .errors import ErrorReporter, InterpreterError, ModelError
from .fidelity.host import HostProfile
from .model.control_dependencies import METADATA_KEY as CONTROL_DEPENDENCIES_KEY
from .model.control_dependencies import parse_control_dependencies
from .model.options import options_class_for_operator

if TYPE_CHECKING:
    from .core.observer import SubgraphObserver
    from .model.reader import ModelDescription, OperatorDescription, SubgraphDescription, TensorDescription
    from .ops.resolver import OpResolver

_MAX_BUILTIN_CODE = max(BuiltinOperator)


def build_subgraphs(
    model: ModelDescription,
    resolver: OpResolver,
    error_reporter: ErrorReporter,
    config: SubgraphConfig,
    exact_float_summation: bool | None = None,
    observer_for: Callable[[Subgraph], SubgraphObserver] | None = None,
) -> list[Subgraph]:
    """The model's subgraphs, ready to allocate. `exact_float_summation` None: decided per subgraph
    (exact where it has a hybrid op, on every host: LiteRT-x86's order, which on ARM is within LiteRT's
    own x86-to-ARM spread, where BLAS's order would vary with the BLAS build). `observer_for(subgraph)`
    gives each subgraph its observer before any node is added (the tensor listing)."""
    registrations = [_resolve(code, resolver) for code in model.operator_codes]
    # one per interpreter: VAR_HANDLE's init numbers its variables in it
    resources = Resources(entry_subgraphs=frozenset({0, *(s.subgraph_index for s in model.signatures)}))
    host = config.host if config.host is not None else HostProfile.detect()
    control_edges = _control_edges(model)
    subgraphs = []
    for index, description in enumerate(model.subgraphs):
        exact = exact_float_summation
        if exact is None:
            exact = has_hybrid_op(description, model.operator_codes)
        subgraph = Subgraph(
            index,
            description.name,
            error_reporter,
            config=dataclasses.replace(config, host=host, exact_float_summation=bool(exact)),
            metadata=model.metadata,
            resources=resources,
            control_edges=None if control_edges is None else control_edges[index],
        )
        subgraph.subgraphs = subgraphs
        if observer_for is not None:
            subgraph.observer = observer_for(subgraph)
        # the model's derived constants, which kernels compute once for all its interpreters
        subgraph.derived_constants = model.derived_constants
        _add_tensors(subgraph, description)
        for operator in description.operators:
            _add_node(subgraph, operator, registrations[operator.opcode_index])
        subgraph.variables = tuple(t.index for t in subgraph.tensors if t.is_variable)
        subgraphs.append(subgraph)
    return subgraphs


def _control_edges(model: ModelDescription) -> list[list[tuple[int, int]]] | None:
    """The model's explicit control dependencies per subgraph; as TFLite, malformed or mismatched
    metadata is ignored."""
    edges = parse_control_dependencies(model.metadata.get(CONTROL_DEPENDENCIES_KEY, b""))
    return edges if edges is not None and len(edges) == len(model.subgraphs) else None


# Ops with a hybrid kernel: float32 activations meeting constant 8-bit (or 4-bit) weights.
_HYBRID_OPS = frozenset(
    {
        BuiltinOperator.FULLY_CONNECTED,
        BuiltinOperator.CONV_2D,
        BuiltinOperator.DEPTHWISE_CONV_2D,
        BuiltinOperator.BATCH_MATMUL,
        BuiltinOperator.SVDF,
        BuiltinOperator.RNN,
        BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN,
        BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN,
        BuiltinOperator.LSTM,
        BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
        BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM,
        BuiltinOperator.EMBEDDING_LOOKUP,
    }
)
_QUANTIZED_WEIGHTS = (TensorType.INT8, TensorType.UINT8, TensorType.INT4)


def has_hybrid_op(description: SubgraphDescription, operator_codes) -> bool:
    """Whether the subgraph has a hybrid kernel: one of _HYBRID_OPS with a constant 8-bit (or 4-bit)
    input and a float32 input or output. Such a kernel quantizes its float input per batch, so a float
    kernel before it that differs from LiteRT by one ulp can move a value across a rounding boundary: a
    whole quantization step at the output. Those subgraphs sum floats in LiteRT's order
    (Context.exact_float_summation)."""
    tensors = description.tensors
    for operator in description.operators:
        if operator_codes[operator.opcode_index].builtin_code not in _HYBRID_OPS:
            continue
        inputs = [tensors[i] for i in operator.inputs if i >= 0]
        outputs = [tensors[i] for i in operator.outputs if i >= 0]
        if any(t.type in _QUANTIZED_WEIGHTS and t.data is not None for t in inputs) and any(
            t.type == TensorType.FLOAT32 for t in inputs + outputs
        ):
            return True
    return False


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
        if found is None and is_flex_op(code.custom_code):  # as TF's interpreter applied its Flex delegate
            from .flex.kernel import flex_registration  # imports protobuf: only for Flex models

            found = flex_registration(code.custom_code, code.version)
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

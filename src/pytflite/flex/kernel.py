"""The TFLite kernel of a Flex node: it decodes the node's NodeDef at init and, at invoke, runs the TF
kernel of its op (registry.py) on its inputs' arrays and copies what it returns into its outputs.

As TensorFlow's Flex delegate does, every output is dynamic: a TF op's output shape is known only once
it has run (and TF computes it so), so the TFLite nodes after a Flex node are prepared lazily, in
TFLite's way. A Flex node whose op has no kernel, or none for its types, fails at allocate with the list
of every such op in the model and how to add one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.node import FLEX_PREFIX, OPTIONAL_TENSOR, Registration, is_flex_op
from ..core.types import BuiltinOperator, TensorType, storage_dtype
from ..errors import KernelError
from .node_def import TfNode, decode_flex_options
from .registry import TfKernel, kernel_for, type_settings


@dataclass(frozen=True)
class FlexData:
    """A Flex node's op data: its TfNode and kernel, or why it cannot run (`problem`)."""

    node: TfNode | None
    kernel: TfKernel | None
    problem: str | None


def flex_init(context, buffer: bytes | None, length: int) -> FlexData:
    try:
        node = decode_flex_options(buffer or b"")
    except ValueError as error:
        return FlexData(None, None, str(error))
    kernel = kernel_for(node.op)
    if kernel is None:
        return FlexData(node, None, f"{FLEX_PREFIX}{node.op} ({type_settings(node) or 'no type attrs'})")
    refused = kernel.refused_types(node)
    if refused:
        return FlexData(node, None, f"{FLEX_PREFIX}{node.op} ({', '.join(refused)})")
    return FlexData(node, kernel, None)


def flex_prepare(context, node) -> None:
    if node.user_data.problem is not None:
        raise KernelError(_missing_kernels_message(context))
    for t in node.outputs:
        if t != OPTIONAL_TENSOR:
            context.set_tensor_to_dynamic(context.tensors[t])


def flex_invoke(context, node) -> None:
    data: FlexData = node.user_data
    tensors = context.tensors
    inputs = [None if t == OPTIONAL_TENSOR else tensors[t].data for t in node.inputs]
    try:
        if data.kernel.uses_resources:
            results = data.kernel.compute(data.node, *inputs, resources=context.resources)
        else:
            results = data.kernel.compute(data.node, *inputs)
    except (ValueError, ArithmeticError, IndexError) as error:  # TF's InvalidArgument: bad input values
        raise KernelError(
            f"{error}\n\t (while executing '{data.node.op}' via pytflite's Flex kernel)"
        ) from error
    if not isinstance(results, tuple):
        results = (results,)
    if len(results) != len(node.outputs):
        raise KernelError(f"{data.node.op} gave {len(results)} outputs; the node has {len(node.outputs)}")
    for position, (t, value) in enumerate(zip(node.outputs, results, strict=True)):
        if t != OPTIONAL_TENSOR:
            _write_output(context, data.node, position, tensors[t], value)


def _write_output(context, node: TfNode, position: int, tensor, value: Any) -> None:
    """Resize `tensor` to the value's shape and copy it in, refusing a value of another type."""
    if tensor.type == TensorType.VARIANT and not isinstance(value, np.ndarray):
        value = _object_scalar(value)
    value = np.asarray(value)
    expected = storage_dtype(tensor.type)
    if value.dtype != expected:
        raise KernelError(
            f"{node.op} produced {value.dtype} for output {position}; its tensor {tensor.index} "
            f"('{tensor.name}') is {TensorType(tensor.type).name}"
        )
    context.resize_tensor(tensor, value.shape)
    np.copyto(tensor.data, value)


def _object_scalar(value: Any) -> np.ndarray:
    holder = np.empty((), dtype=object)
    holder[()] = value
    return holder


def _missing_kernels_message(context) -> str:
    """Every Flex op of the model that cannot run, once each, and how to add a kernel."""
    problems = []
    for subgraph in context.subgraphs:
        for node, registration in subgraph.nodes:
            data = node.user_data
            flex = is_flex_op(registration.custom_name) and isinstance(data, FlexData)
            if flex and data.problem and data.problem not in problems:
                problems.append(data.problem)
    return (
        "pytflite has no kernel for these Select TensorFlow ops of the model: "
        + "; ".join(problems)
        + '. Add one with pytflite.flex.register("OpName", compute) before building the interpreter '
        "(docs/flex.md lists the ops pytflite has)."
    )


_REGISTRATIONS: dict[tuple[str, int], Registration] = {}


def flex_registration(custom_name: str, version: int = 1) -> Registration:
    """The kernel of the Flex op `custom_name`, made once per name and version."""
    key = (custom_name, version)
    found = _REGISTRATIONS.get(key)
    if found is None:
        found = _REGISTRATIONS[key] = Registration(
            init=flex_init,
            prepare=flex_prepare,
            invoke=flex_invoke,
            builtin_code=BuiltinOperator.CUSTOM,
            custom_name=custom_name,
            version=version,
        )
    return found

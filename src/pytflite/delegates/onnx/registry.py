"""The translator table: builtin operator -> function(graph, node, op) that emits the node's ONNX nodes.

A translator reads its node's tensors and options, asks the PartitionGraph for input values (in the
layout it wants), appends ONNX nodes and defines its outputs. It raises Unsupported for anything it
does not translate exactly; the delegate's is_node_supported is "the translator succeeds on this node
alone", so support and translation cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.node import Node
from ...model.options import ActivationFunctionType
from .graph import PartitionGraph, Unsupported

Translator = Callable[[PartitionGraph, Node, int], None]
TRANSLATORS: dict[int, Translator] = {}


def translates(*ops: int) -> Callable[[Translator], Translator]:
    def register(function: Translator) -> Translator:
        for op in ops:
            TRANSLATORS[int(op)] = function
        return function

    return register


def activation(g: PartitionGraph, name: str, function: int) -> str:
    """Apply a fused activation to ONNX value `name`."""
    function = ActivationFunctionType(function or 0)
    if function == ActivationFunctionType.NONE:
        return name
    if function == ActivationFunctionType.RELU:
        return g.op("Relu", [name])
    if function == ActivationFunctionType.RELU6:
        return g.op("Clip", [name, g.const(0.0, "lo", "float32"), g.const(6.0, "hi", "float32")])
    if function == ActivationFunctionType.RELU_N1_TO_1:
        return g.op("Clip", [name, g.const(-1.0, "lo", "float32"), g.const(1.0, "hi", "float32")])
    if function == ActivationFunctionType.TANH:
        return g.op("Tanh", [name])
    raise Unsupported(f"fused activation {function.name}")


def fused(node: Node) -> int:
    options = node.builtin_data
    return getattr(options, "fused_activation_function", 0) or 0


def arity(node: Node, inputs: tuple[int, ...] | int, outputs: int = 1) -> None:
    counts = (inputs,) if isinstance(inputs, int) else inputs
    if len(node.inputs) not in counts or len(node.outputs) != outputs:
        raise Unsupported(f"{len(node.inputs)} inputs / {len(node.outputs)} outputs")

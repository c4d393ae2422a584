"""A model ready to invoke: the primary graph, or one SignatureDef's subgraph (`--signature KEY`).

The tools set inputs, invoke many times and read outputs the same way for both; a signature is run on
its own subgraph directly, without SignatureRunner's per-call resize and allocate, so timing it measures
the invoke alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.blas_threads import ONE_BLAS_THREAD
from ..core.node import OPTIONAL_TENSOR
from ..interpreter import Interpreter
from ..tensor_access import set_tensor_checked, tensor_details, tensor_value
from .loading import ToolError


class Session:
    def __init__(self, interpreter: Interpreter, signature: str | None = None):
        self.interpreter = interpreter
        self.signature = signature
        if signature is None:
            self.subgraph_index = 0
            subgraph = interpreter.subgraphs[0]
            inputs = {subgraph.tensors[t].name: t for t in subgraph.inputs}
            outputs = {subgraph.tensors[t].name: t for t in subgraph.outputs if t != OPTIONAL_TENSOR}
        else:
            signatures = interpreter._get_full_signature_list()
            if signature not in signatures:
                known = ", ".join(repr(k) for k in signatures) or "none"
                raise ToolError(f"the model has no signature {signature!r} (signatures: {known})")
            self.subgraph_index = interpreter.signature_subgraph_index(signature)
            inputs = signatures[signature]["inputs"]
            outputs = signatures[signature]["outputs"]
        self.subgraph = interpreter.subgraphs[self.subgraph_index]
        self.input_names = list(inputs)
        self.input_indices = list(inputs.values())
        self.output_names = list(outputs)
        self.output_indices = list(outputs.values())

    @property
    def input_details(self) -> list[dict[str, Any]]:
        return [tensor_details(self.subgraph, self.subgraph.tensors[t]) for t in self.input_indices]

    @property
    def output_details(self) -> list[dict[str, Any]]:
        return [tensor_details(self.subgraph, self.subgraph.tensors[t]) for t in self.output_indices]

    def allocate(self, shapes: Sequence[Sequence[int]] | None = None) -> None:
        """Resize the inputs (when shapes are given, in input order) and allocate."""
        try:
            for index, shape in zip(self.input_indices, shapes or ()):
                if list(self.subgraph.tensors[index].shape) != list(shape):
                    self.subgraph.resize_input_tensor(index, list(shape))
            if self.subgraph_index == 0:
                self.interpreter.allocate_tensors()
            else:
                self.subgraph.allocate_tensors()
        except (RuntimeError, ValueError) as error:  # TFLite's error text says what is wrong
            raise ToolError(str(error).strip()) from None

    def set_inputs(self, values: Sequence[np.ndarray]) -> None:
        shapes = [np.shape(v) for v in values]
        if any(tuple(self.subgraph.tensors[t].shape) != tuple(s) for t, s in zip(self.input_indices, shapes)):
            self.allocate(shapes)
        for name, index, value in zip(self.input_names, self.input_indices, values):
            try:
                set_tensor_checked(self.subgraph, index, value)
            except ValueError as error:
                raise ToolError(f"input {name}: {error}") from None

    def invoke(self) -> None:
        if self.subgraph_index == 0:
            self.interpreter.invoke()
            return
        with ONE_BLAS_THREAD:
            self.subgraph.invoke()

    def outputs(self) -> list[tuple[str, np.ndarray]]:
        result = []
        for name, index in zip(self.output_names, self.output_indices):
            self.subgraph.delegation.ensure_tensor_data_is_readable(index)
            result.append((name, tensor_value(self.subgraph, index)))
        return result


def run_reference(
    other: Any, session: Session, values: Sequence[np.ndarray]
) -> tuple[Callable[[], Any], list[np.ndarray]]:
    """Feed `values` (in `session`'s input order) to another tf.lite-style interpreter, e.g. LiteRT's,
    on the same graph or signature, resizing its inputs as needed, and run it once. Returns a callable
    that invokes it again and its outputs in `session`'s output order."""
    if session.signature:
        runner = other.get_signature_runner(session.signature)
        feeds = dict(zip(session.input_names, values))
        results = runner(**feeds)
        return functools.partial(runner, **feeds), [results[name] for name in session.output_names]
    for detail, value in zip(other.get_input_details(), values):
        if list(detail["shape"]) != list(value.shape):
            other.resize_tensor_input(detail["index"], list(value.shape))
    other.allocate_tensors()
    for detail, value in zip(other.get_input_details(), values):
        other.set_tensor(detail["index"], value)
    other.invoke()
    return other.invoke, [other.get_tensor(d["index"]) for d in other.get_output_details()]

"""ONNX Runtime sessions for translated partitions: options, providers, float16 relaxation, the
rewrites for the CPU's NCHWc kernels (nchwc.py), and the IO binding that feeds arena tensors and device
values without copies on the Python side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from . import nchwc

GPU_PROVIDERS = {"CUDAExecutionProvider": "cuda", "TensorrtExecutionProvider": "cuda"}
DEFAULT_PROVIDERS = ("CPUExecutionProvider",)


def provider_names(providers: Sequence[Any]) -> list[str]:
    return [p[0] if isinstance(p, tuple) else p for p in providers]


def device_of(providers: Sequence[Any]) -> tuple[str, int]:
    """Where the first provider keeps its tensors: ('cuda', device id) or ('cpu', 0)."""
    first = providers[0] if providers else "CPUExecutionProvider"
    name, options = first if isinstance(first, tuple) else (first, {})
    if name in GPU_PROVIDERS:
        return GPU_PROVIDERS[name], int(options.get("device_id", 0))
    return "cpu", 0


def make_session(
    model: Any, providers: Sequence[Any], num_threads: int, config: dict[str, str] | None = None
) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = max(int(num_threads), 1)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, str(value))
    if device_of(providers)[0] == "cpu":
        model = nchwc.for_cpu(model)
    return ort.InferenceSession(model.SerializeToString(), options, providers=list(providers))


def to_float16(model: Any) -> Any:
    """The same graph computing in float16: float32 initializers and casts become float16, float32
    inputs are cast on entry and outputs on exit. Graphs with Q/DQ nodes are left as they are."""
    graph = model.graph
    if any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in graph.node):
        return model
    for i, init in enumerate(graph.initializer):
        if init.data_type == TensorProto.FLOAT:
            array = numpy_helper.to_array(init).astype(np.float16)
            graph.initializer[i].CopyFrom(numpy_helper.from_array(array, init.name))
    for node in graph.node:
        if node.op_type == "Cast":
            for attr in node.attribute:
                if attr.name == "to" and attr.i == TensorProto.FLOAT:
                    attr.i = TensorProto.FLOAT16
    entry = []
    for value in graph.input:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            inner = value.name
            value.name = f"{inner}__f32"
            entry.append(helper.make_node("Cast", [value.name], [inner], to=TensorProto.FLOAT16))
    for value in graph.output:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            inner = f"{value.name}__f16"
            for node in graph.node:
                for k, out in enumerate(node.output):
                    if out == value.name:
                        node.output[k] = inner
            graph.node.append(helper.make_node("Cast", [inner], [value.name], to=TensorProto.FLOAT))
    for k, node in enumerate(entry):
        graph.node.insert(k, node)
    return model


class Binding:
    """One session's IO binding for one delegate kernel: tensors' arrays (or device values) bound by
    name, re-bound only when the array object behind a tensor changes."""

    def __init__(self, session: ort.InferenceSession, inputs: Sequence[int], outputs: Sequence[int]):
        self.session = session
        self.binding = session.io_binding()
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.input_types = [_NUMPY_BY_NAME[i.type] for i in session.get_inputs()]
        self.output_types = [_NUMPY_BY_NAME[o.type] for o in session.get_outputs()]
        # the graphs declare static shapes; 0-d values are declared [1] (bound by pointer as such)
        self.input_shapes = [list(i.shape) for i in session.get_inputs()]
        self.output_shapes = [list(o.shape) for o in session.get_outputs()]
        self._bound_in: list[Any] = [None] * len(self.inputs)
        self._bound_out: list[Any] = [None] * len(self.outputs)

    def bind_input(self, k: int, value: Any) -> None:
        """Bind a NumPy array (by pointer) or an OrtValue to input k, unless it is bound already."""
        if self._bound_in[k] is value:
            return
        if isinstance(value, np.ndarray):
            self.binding.bind_input(
                self.input_names[k], "cpu", 0, self.input_types[k], self.input_shapes[k], value.ctypes.data
            )
        else:
            self.binding.bind_ortvalue_input(self.input_names[k], value)
        self._bound_in[k] = value

    def bind_output(self, k: int, value: Any) -> None:
        if self._bound_out[k] is value:
            return
        if isinstance(value, np.ndarray):
            self.binding.bind_output(
                self.output_names[k], "cpu", 0, self.output_types[k], self.output_shapes[k], value.ctypes.data
            )
        else:
            self.binding.bind_ortvalue_output(self.output_names[k], value)
        self._bound_out[k] = value

    def run(self) -> None:
        self.session.run_with_iobinding(self.binding)


_NUMPY_BY_NAME = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}

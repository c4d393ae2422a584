"""Graph rewrites for ONNX Runtime's NCHWc CPU kernels, applied to a partition's ONNX model before its
CPU session is made (for_cpu).

ONNX Runtime's CPU provider (ORT_ENABLE_ALL) runs a convolution in its fast blocked NCHWc layout when
the convolution's input channels are a multiple of the CPU's channel block (16 with AVX-512, 8 with
AVX2); below one block it uses a direct kernel reading NCHW input, slow for 1x1 filters, and a count
above one block that is not a multiple (24 on AVX-512) leaves the blocked layout altogether, with a
reorder on each side. Small and mobile CNNs (MobileNetV2's narrow bottlenecks) are full of such values.

- fold_pointwise_pairs: a 1x1 convolution feeding only another 1x1 convolution, with nothing between
  (a linear bottleneck straight into the next expansion), is one 1x1 convolution with the product of
  the filters, computed in float64; folded where that is fewer multiply-adds than the pair at the block's
  padded width.
- widen_channels rounds the remaining narrow channel counts up to the block in the graph itself: the
  producing convolutions get zero filters (and zero biases) for the added channels, the consuming
  convolutions zero weights for them, and elementwise ops in between carry them along. The added
  channels hold finite values that every consumer multiplies by zero, so the real channels get the same
  sums as before (up to the kernels' summation order); the blocked kernels computed the padded output
  channels anyway.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
from collections import defaultdict
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

logger = logging.getLogger("pytflite")

# Elementwise ops ONNX Runtime runs in its blocked layout or fuses into the convolution before them;
# each keeps the added channels finite (f(0) is finite; no Div: 0/0). Other inputs must be scalar
# constants (Clip's bounds).
_ELEMENTWISE = frozenset(("Add", "Mul", "Relu", "Sigmoid", "Tanh", "Clip", "LeakyRelu", "HardSigmoid"))


@functools.cache
def nchwc_block_size() -> int:
    """The channel block ONNX Runtime's CPU kernels use on this machine (1: no NCHWc layout), read from
    how it pads a one-channel convolution's filter when optimizing a probe graph."""
    conv = helper.make_node("Conv", ["x", "w"], ["y"])
    graph = helper.make_graph(
        [conv],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])],
        [numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    try:
        with tempfile.TemporaryDirectory() as folder:
            options.optimized_model_filepath = os.path.join(folder, "probe.onnx")
            ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
            optimized = onnx.load(options.optimized_model_filepath)
    except Exception:  # a build that cannot save optimized graphs: leave the graphs as they are
        logger.debug("NCHWc block probe failed", exc_info=True)
        return 1
    if not any(node.domain.endswith("nchwc") for node in optimized.graph.node):
        return 1
    return max(int(init.dims[0]) for init in optimized.graph.initializer if len(init.dims) == 4)


def for_cpu(model: Any, block: int | None = None) -> Any:
    """Both rewrites, in place, for this machine's block unless `block` is given; returns the model."""
    block = nchwc_block_size() if block is None else block
    if block > 1:
        fold_pointwise_pairs(model, block)
        widen_channels(model, block)
        used = {name for node in model.graph.node for name in node.input}
        unused = [init for init in model.graph.initializer if init.name not in used]
        for init in unused:  # the filters and biases replaced by folded or widened ones
            model.graph.initializer.remove(init)
    return model


class _Convolutions:
    """The plain convolutions of a graph: group 1, 2-D, constant float32 filter and bias."""

    def __init__(self, graph: Any):
        self.graph = graph
        self.initializers = {init.name: init for init in graph.initializer}
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        for node in graph.node:
            for name in node.input:
                self.consumers[name].append(node)
        self.outputs = {value.name for value in graph.output}

    def filters(self, node: Any) -> Any:
        """The filter initializer of a plain convolution, else None."""
        if node.op_type != "Conv" or node.domain not in ("", "ai.onnx") or len(node.input) < 2:
            return None
        filters = self.initializers.get(node.input[1])
        bias = node.input[2] if len(node.input) > 2 else ""
        if (
            _attribute(node, "group", 1) != 1
            or filters is None
            or filters.data_type != TensorProto.FLOAT
            or len(filters.dims) != 4
            or not (bias == "" or bias in self.initializers)
        ):
            return None
        return filters

    def pointwise(self, node: Any) -> bool:
        """A plain 1x1 convolution without strides or pads (a matrix product per pixel)."""
        filters = self.filters(node)
        return (
            filters is not None
            and tuple(filters.dims[2:]) == (1, 1)
            and set(_attribute(node, "strides", [1])) == {1}
            and set(_attribute(node, "pads", [0])) == {0}
        )

    def bias(self, node: Any, channels: int) -> np.ndarray:
        """A plain convolution's bias in float64 (zeros when it has none)."""
        if len(node.input) > 2 and node.input[2]:
            return self.array(node.input[2]).astype(np.float64)
        return np.zeros(channels)

    def array(self, name: str) -> np.ndarray:
        return numpy_helper.to_array(self.initializers[name])

    def add(self, array: np.ndarray, name: str) -> str:
        """A new initializer (once per name: convolutions may share the one it derives from)."""
        if name not in self.initializers:
            self.initializers[name] = numpy_helper.from_array(np.ascontiguousarray(array), name)
            self.graph.initializer.append(self.initializers[name])
        return name


def _attribute(node: Any, name: str, default: Any) -> Any:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _rounded(count: int, block: int) -> int:
    return -(-count // block) * block


def fold_pointwise_pairs(model: Any, block: int) -> Any:
    """Fold 1x1 convolution pairs with nothing between them where that is cheaper (in place)."""
    graph = model.graph
    convs = _Convolutions(graph)
    folded = []
    for first in graph.node:
        out = first.output[0] if first.output else ""
        uses = convs.consumers[out]
        if not convs.pointwise(first) or out in convs.outputs or len(uses) != 1:
            continue
        second = uses[0]
        if not convs.pointwise(second) or list(second.input).count(out) != 1 or second.input[0] != out:
            continue
        w1 = convs.array(first.input[1])[:, :, 0, 0].astype(np.float64)
        w2 = convs.array(second.input[1])[:, :, 0, 0].astype(np.float64)
        (middle, inputs), outputs = w1.shape, w2.shape[0]
        if inputs * outputs > _rounded(middle, block) * (inputs + outputs):
            continue
        weights = (w2 @ w1).astype(np.float32)[:, :, None, None]
        bias = (w2 @ convs.bias(first, middle) + convs.bias(second, outputs)).astype(np.float32)
        second.input[0] = first.input[0]
        second.input[1] = convs.add(weights, f"{out}_folded_w")
        if len(second.input) > 2:
            second.input[2] = convs.add(bias, f"{out}_folded_b")
        else:
            second.input.append(convs.add(bias, f"{out}_folded_b"))
        folded.append(first)
    for node in folded:
        graph.node.remove(node)
    return model


def widen_channels(model: Any, block: int) -> Any:
    """Round the channel counts of convolution-to-convolution values up to a multiple of `block`
    (in place; returns the model). A group of values linked by elementwise ops is widened only when
    every value in it comes from a plain convolution or such an op, every use is one of those ops or a
    plain convolution's data input, and the wider convolutions are expected to be faster."""
    graph = model.graph
    convs = _Convolutions(graph)

    def scalar(name: str) -> bool:
        init = convs.initializers.get(name)
        return name == "" or (init is not None and int(np.prod(init.dims)) == 1)

    # channels of each candidate value, and groups (union-find) of values linked by elementwise ops
    channels: dict[str, int] = {}
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    bad: set[str] = set()
    for node in graph.node:
        filters = convs.filters(node)
        if filters is not None:
            out = node.output[0]
            channels[out] = int(filters.dims[0])
            parent[out] = out
            continue
        if node.op_type not in _ELEMENTWISE or len(node.output) != 1:
            continue
        linked = [name for name in node.input if name in channels]
        if not linked:
            continue
        out = node.output[0]
        parent[out] = out
        channels[out] = channels[linked[0]]
        for name in node.input:
            if name in channels:
                parent[root(name)] = root(out)
                if channels[name] != channels[out]:  # broadcasting across channels: not widenable
                    bad.add(out)
            elif not scalar(name):
                bad.add(out)
    for name, count in channels.items():
        if name in convs.outputs or count % block == 0:
            bad.add(name)
        for node in convs.consumers[name]:
            filters = convs.filters(node)
            if filters is not None and node.input[0] == name and name not in node.input[1:]:
                # below one block ONNX Runtime has a direct kernel, slow only for 1x1 filters;
                # widening pays there unless it more than doubles the work
                if count < block and (tuple(filters.dims[2:]) != (1, 1) or 2 * count < block):
                    bad.add(name)
            elif not (node.op_type in _ELEMENTWISE and node.output[0] in channels):
                bad.add(name)
    rejected = {root(name) for name in bad}
    wide = {name for name in channels if root(name) not in rejected}

    def padded(name: str, axis: int, size: int) -> str:
        array = convs.array(name)
        widths = [(0, 0)] * array.ndim
        widths[axis] = (0, size - array.shape[axis])
        return convs.add(np.pad(array, widths), f"{name}_wide{axis}")

    for node in graph.node:
        if convs.filters(node) is None:
            continue
        if node.output[0] in wide:
            size = _rounded(channels[node.output[0]], block)
            node.input[1] = padded(node.input[1], 0, size)
            if len(node.input) > 2 and node.input[2]:
                node.input[2] = padded(node.input[2], 0, size)
        if node.input[0] in wide:
            node.input[1] = padded(node.input[1], 1, _rounded(channels[node.input[0]], block))
    return model

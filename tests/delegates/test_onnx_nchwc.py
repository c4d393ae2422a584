"""The ONNX Runtime delegate's graph rewrites for NCHWc CPU kernels (delegates/onnx/nchwc.py): which
convolutions they fold or widen, and that ONNX Runtime computes the same outputs before and after.
Blocks are passed explicitly, so the cases do not depend on the machine's vector width."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from pytflite.delegates.onnx import nchwc

RNG = np.random.default_rng(11)


class Graph:
    """A small NCHW ONNX graph under construction: x [1, C, 6, 6] in, named outputs out."""

    def __init__(self, channels: int = 16):
        self.nodes, self.initializers = [], []
        self.input = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 6, 6])

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(self, x: str, out: str, cin: int, cout: int, k: int = 1) -> str:
        w = self.const(f"{out}_w", RNG.standard_normal((cout, cin, k, k)) * 0.3)
        b = self.const(f"{out}_b", RNG.standard_normal(cout))
        self.nodes.append(helper.make_node("Conv", [x, w, b], [out], pads=[k // 2] * 4))
        return out

    def op(self, op_type: str, inputs: list[str], out: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def model(self, *outputs: tuple[str, int]):
        values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, 6, 6]) for n, c in outputs]
        graph = helper.make_graph(self.nodes, "g", [self.input], values, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
        model.ir_version = 9
        return model


def run(model) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # no warnings about the initializers a rewrite replaced
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(3).standard_normal(session.get_inputs()[0].shape).astype(np.float32)
    return session.run(None, {"x": x})


def filters(model) -> dict[str, list[int]]:
    """Each Conv's output name -> its filter's shape."""
    shapes = {i.name: list(i.dims) for i in model.graph.initializer}
    return {n.output[0]: shapes[n.input[1]] for n in model.graph.node if n.op_type == "Conv"}


def rewritten(model, rewrite, block: int = 16):
    after = rewrite(copy.deepcopy(model), block)
    for a, b in zip(run(model), run(after)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5 * float(np.max(np.abs(a))))
    return after


def bottleneck(activation: str | None = "Clip", sink_kernel: int = 1, channels: int = 8):
    """x -> conv(16 -> c) [-> activation]  + conv(16 -> c) -> add -> conv(c -> 32) -> y."""
    g = Graph()
    a = g.conv("x", "a", 16, channels)
    if activation == "Clip":
        a = g.op("Clip", [a, g.const("lo", np.array(0.0)), g.const("hi", np.array(6.0))], "a_act")
    b = g.conv("x", "b", 16, channels)
    s = g.op("Add", [a, b], "s")
    g.conv(s, "y", channels, 32, sink_kernel)
    return g.model(("y", 32))


def test_narrow_values_between_convolutions_are_widened_to_the_block():
    after = rewritten(bottleneck(), nchwc.widen_channels)
    assert filters(after) == {"a": [16, 16, 1, 1], "b": [16, 16, 1, 1], "y": [32, 16, 1, 1]}
    assert filters(rewritten(bottleneck(channels=24), nchwc.widen_channels))["y"] == [32, 32, 1, 1]


@pytest.mark.parametrize(
    "model",
    [
        bottleneck(sink_kernel=3),  # the direct kernel is good for wide filters
        bottleneck(channels=4),  # more than doubles the work
        bottleneck(channels=16),  # already a multiple of the block
    ],
    ids=["3x3-consumer", "quarter-block", "aligned"],
)
def test_widening_leaves_values_where_it_would_not_pay(model):
    assert filters(rewritten(model, nchwc.widen_channels)) == filters(model)


def test_a_group_with_a_use_outside_convolutions_is_not_widened():
    g = Graph()
    a = g.conv("x", "a", 16, 8)
    g.conv(a, "y", 8, 32)
    output = g.model(("y", 32), ("a", 8))  # `a` is also a graph output
    assert filters(rewritten(output, nchwc.widen_channels)) == filters(output)
    g = Graph()
    a = g.conv("x", "a", 16, 8)
    m = g.op("Mul", [a, g.const("scale", RNG.standard_normal((1, 8, 1, 1)))], "m")  # per-channel
    g.conv(m, "y", 8, 32)
    scaled = g.model(("y", 32))
    assert filters(rewritten(scaled, nchwc.widen_channels)) == filters(scaled)


def test_pointwise_pairs_fold_into_one_convolution_when_cheaper():
    g = Graph()
    g.conv(g.conv("x", "a", 16, 8), "y", 8, 48)
    after = rewritten(g.model(("y", 48)), nchwc.fold_pointwise_pairs)
    assert filters(after) == {"y": [48, 16, 1, 1]}
    g = Graph(channels=64)
    g.conv(g.conv("x", "a", 64, 16), "y", 16, 64)  # 64*64 > 16*(64+64): kept apart
    kept = g.model(("y", 64))
    assert filters(rewritten(kept, nchwc.fold_pointwise_pairs)) == filters(kept)


def test_pointwise_pairs_with_something_between_or_beside_stay_apart():
    activated = bottleneck(activation="Clip")  # conv -> Clip -> ... and a second conv into the Add
    assert filters(rewritten(activated, nchwc.fold_pointwise_pairs)) == filters(activated)
    g = Graph()
    a = g.conv("x", "a", 16, 8)
    g.conv(a, "y", 8, 48)
    g.conv(a, "z", 8, 48)  # two consumers
    shared = g.model(("y", 48), ("z", 48))
    assert filters(rewritten(shared, nchwc.fold_pointwise_pairs)) == filters(shared)


def test_block_size_probe_and_no_rewrites_without_a_block():
    block = nchwc.nchwc_block_size()
    assert block >= 1 and block & (block - 1) == 0, block
    model = bottleneck()
    before = filters(model)
    assert filters(nchwc.for_cpu(model, block=1)) == before

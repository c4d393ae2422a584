"""The arena planner: tensors alive at the same plan step never share bytes, dead ones are reused,
placement is 64-byte aligned, and preserve-all keeps every intermediate alive."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.arena import UNASSIGNED, alignment_for
from pytflite.model.builder import ModelBuilder


def chain_model(widths: list[int]) -> tuple[bytes, list[int]]:
    """x -> relu -> relu ... with each step's width given; also adds a skip connection at the end."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [widths[0]])
    current, produced = x, [x]
    for i, width in enumerate(widths[1:]):
        # widen with ADD against a constant so every step has its own size
        constant = builder.add_constant(f"c{i}", np.full([width], 0.5, np.float32))
        broadcast = builder.add_tensor(f"b{i}", T.FLOAT32, [width])
        if width == widths[i]:
            builder.add_operator(Op.ADD, [current, constant], [broadcast])
        else:
            zero_width = builder.add_constant(f"z{i}", np.zeros([width], np.float32))
            builder.add_operator(Op.ADD, [constant, zero_width], [broadcast])
        out = builder.add_tensor(f"r{i}", T.FLOAT32, [width])
        builder.add_operator(Op.RELU, [broadcast], [out])
        current = out
        produced += [broadcast, out]
    builder.add_output(current)
    return builder.build(), produced


def live_sets(subgraph):
    planner = subgraph._planner
    positions = range(len(subgraph.execution_plan))
    for position in positions:
        yield [
            t
            for t, a in planner.allocations.items()
            if planner.first[t] <= position <= planner.last[t] and a.size
        ]


def assert_no_overlap_between_live_tensors(subgraph):
    planner = subgraph._planner
    for live in live_sets(subgraph):
        spans = sorted(
            (planner.allocations[t].offset, planner.allocations[t].offset + planner.allocations[t].size, t)
            for t in live
        )
        for (_, end_a, a), (start_b, _, b) in itertools.pairwise(spans):
            assert end_a <= start_b, f"tensors {a} and {b} overlap while both alive"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=2, max_size=12))
def test_live_tensors_never_overlap_and_results_are_right(widths):
    model, _ = chain_model(widths)
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    subgraph = interpreter.subgraphs[0]
    assert_no_overlap_between_live_tensors(subgraph)
    for allocation in subgraph._planner.allocations.values():
        assert allocation.offset % alignment_for(allocation.size) == 0
    for tensor in subgraph.tensors:
        if (
            tensor.data is not None
            and tensor.allocation_type == pytflite.AllocationType.ARENA_RW
            and tensor.bytes
        ):
            assert tensor.data.ctypes.data % alignment_for(tensor.bytes) == 0
    interpreter.set_tensor(0, np.linspace(-1, 1, widths[0], dtype=np.float32))
    interpreter.invoke()
    expected = np.linspace(-1, 1, widths[0], dtype=np.float32)
    for previous, width in itertools.pairwise(widths):
        expected = np.maximum(expected + 0.5, 0) if width == previous else np.full(width, 0.5, np.float32)
    np.testing.assert_allclose(
        interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), expected, rtol=1e-6
    )


def test_dead_tensors_are_reused():
    model, produced = chain_model([1000] * 8)
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    total = sum(interpreter.subgraphs[0].tensors[t].bytes for t in produced)
    report = interpreter.memory_report()
    assert report.arena_bytes < total / 3
    assert report.arena_lower_bound_bytes <= report.arena_bytes <= 1.1 * report.arena_lower_bound_bytes


def test_tensors_are_aligned_to_their_element_size_at_least():
    sizes = (1, 3, 4, 12, 16, 40, 48, 63, 64, 96, 4000, 4096, 150528)
    assert [alignment_for(n) for n in sizes] == [1, 1, 4, 4, 16, 8, 16, 1, 64, 32, 32, 64, 64]
    for itemsize in (1, 2, 4, 8, 16):
        for count in range(1, 40):
            assert alignment_for(count * itemsize) % itemsize == 0


def test_tiny_tensors_pack_close_to_the_lower_bound():
    model, _ = chain_model([1] * 12)  # 4-byte tensors: 64-byte slots would make the arena 16x the bound
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    report = interpreter.memory_report()
    assert report.arena_bytes <= 1.1 * report.arena_lower_bound_bytes


def test_lifetimes_follow_tflite():
    model, produced = chain_model([8, 8, 8])
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    planner = interpreter.subgraphs[0]._planner
    x, b0, _, _, r1 = produced
    assert (planner.first[x], planner.last[x]) == (0, UNASSIGNED)  # inputs live for the whole run
    assert (planner.first[b0], planner.last[b0]) == (0, 1)
    assert (planner.first[r1], planner.last[r1]) == (3, UNASSIGNED)  # outputs are never freed


def test_preserve_all_tensors_keeps_every_intermediate():
    model, produced = chain_model([64] * 6)
    interpreter = pytflite.Interpreter(model_content=model, experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.ones(64, np.float32))
    interpreter.invoke()
    for i, t in enumerate(produced[1:]):
        step = i // 2 + 1
        np.testing.assert_allclose(interpreter.get_tensor(t), np.full(64, 1 + 0.5 * step, np.float32))
    subgraph = interpreter.subgraphs[0]
    spans = sorted((a.offset, a.offset + a.size) for a in subgraph._planner.allocations.values() if a.size)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))


def test_arena_growth_keeps_live_contents():
    """A dynamic resize mid-invoke re-plans downstream tensors; upstream values must survive."""
    from tests.core.test_lifecycle import NonZero, interpreter_with

    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [4])
    kept = builder.add_tensor("kept", T.FLOAT32, [4])
    builder.add_operator(Op.RELU, [x], [kept])
    dynamic = builder.add_tensor("dynamic", T.FLOAT32, [4])
    builder.add_operator("NonZero", [x], [dynamic])
    wide = builder.add_tensor("wide", T.FLOAT32, [4])
    big = builder.add_constant("big", np.ones([5000, 1], np.float32))
    builder.add_operator(Op.MUL, [dynamic, big], [wide])
    result = builder.add_tensor("result", T.FLOAT32, [4])
    builder.add_operator(Op.ADD, [kept, kept], [result])
    builder.add_output(result)
    builder.add_output(wide)
    interpreter = interpreter_with(builder.build(), "NonZero", NonZero)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([1, -2, 3, 4], np.float32))
    interpreter.invoke()
    outputs = interpreter.get_output_details()
    np.testing.assert_array_equal(interpreter.get_tensor(outputs[0]["index"]), [2, 0, 6, 8])
    assert interpreter.get_tensor(outputs[1]["index"]).shape == (5000, 3)

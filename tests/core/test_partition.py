"""core/partition.py on hand-built graphs, and its invariants on random ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytflite.core.partition import NodeSubset, PartitionError, PlanNode, SubsetType, partition_graph

P, N = SubsetType.PARTITION, SubsetType.NON_PARTITION


def node(index, inputs, outputs, side_effect=False):
    return PlanNode(index, tuple(inputs), tuple(outputs), side_effect)


def summary(subsets: list[NodeSubset]):
    return [(s.type, s.nodes, s.input_tensors, s.output_tensors) for s in subsets]


def reference_graph():
    """The graph of TFLite's graph_info.h docstring: 0 -> 1 -> 2* -> 3*, 1 -> 4 -> 5, 2* -> 5.
    Tensor 0 is the graph input; node i writes tensor i + 1; tensors 4 and 6 are graph outputs."""
    return [
        node(0, [0], [1]),
        node(1, [1], [2]),
        node(2, [2], [3]),
        node(3, [3], [4]),
        node(4, [2], [5]),
        node(5, [5, 3], [6]),
    ]


def test_greedy_lets_independent_nodes_jump_ahead():
    subsets = partition_graph(reference_graph(), 7, [4, 6], [2, 3], 6)
    assert summary(subsets) == [
        (N, [0, 1, 4], [0], [2, 5]),
        (P, [2, 3], [2], [3, 4]),
        (N, [5], [3, 5], [6]),
    ]


def test_non_greedy_keeps_contiguous_runs():
    subsets = partition_graph(reference_graph(), 7, [4, 6], [2, 3], 6, greedy=False)
    assert [(s.type, s.nodes) for s in subsets] == [(N, [0, 1]), (P, [2, 3]), (N, [4, 5])]


def test_diamond():
    # a(0) -> b(1)*, a -> c(2), b + c -> d(3)
    plan = [node(0, [0], [1]), node(1, [1], [2]), node(2, [1], [3]), node(3, [2, 3], [4])]
    subsets = partition_graph(plan, 5, [4], [1], 4)
    assert summary(subsets) == [(N, [0, 2], [0], [1, 3]), (P, [1], [1], [2]), (N, [3], [2, 3], [4])]


def test_multi_output_nodes_feed_several_subsets():
    # split(0) -> (1, 2); 1 -> claimed(1) -> 3; 2 -> unclaimed(2) -> 4; concat(3) reads 3, 4
    plan = [node(0, [0], [1, 2]), node(1, [1], [3]), node(2, [2], [4]), node(3, [3, 4], [5])]
    subsets = partition_graph(plan, 6, [5], [1], 4)
    assert summary(subsets) == [(N, [0, 2], [0], [1, 4]), (P, [1], [1], [3]), (N, [3], [3, 4], [5])]


def test_optional_inputs_and_outputs_are_ignored():
    plan = [node(0, [0, -1], [1, -1]), node(1, [1, -1], [2])]
    subsets = partition_graph(plan, 3, [2], [1], 2)
    assert summary(subsets) == [(N, [0], [0], [1]), (P, [1], [1], [2])]


def test_constants_and_variables_are_inputs_and_sorted_unique():
    # tensor 5 is a constant, 4 a variable: never produced, always ready
    plan = [node(0, [0, 5], [1]), node(1, [1, 5, 4, 5], [2])]
    subsets = partition_graph(plan, 6, [2], [0, 1], 2)
    assert summary(subsets) == [(P, [0, 1], [0, 4, 5], [2])]


def test_graph_input_passed_through_as_output_is_skipped():
    plan = [node(0, [0], [1])]
    assert summary(partition_graph(plan, 2, [0, 1], [0], 1)) == [(P, [0], [0], [1])]


def test_side_effect_nodes_keep_their_order():
    # three independent side-effect nodes; 0 and 2 claimed
    plan = [node(0, [0], [1], True), node(1, [0], [2], True), node(2, [0], [3], True)]
    with_chain = partition_graph(plan, 4, [1, 2, 3], [0, 2], 3)
    assert [s.nodes for s in with_chain] == [[0], [1], [2]]
    unordered = [node(i, n.inputs, n.outputs, False) for i, n in enumerate(plan)]
    assert [s.nodes for s in partition_graph(unordered, 4, [1, 2, 3], [0, 2], 3)] == [[0, 2], [1]]


def test_explicit_control_edges():
    plan = [node(0, [0], [1]), node(1, [0], [2]), node(2, [0], [3])]
    # without edges the claimed 0 and 2 fuse; the edge 1 -> 2 forces 2 after the unclaimed 1
    assert [s.nodes for s in partition_graph(plan, 4, [1, 2, 3], [0, 2], 3)] == [[0, 2], [1]]
    subsets = partition_graph(plan, 4, [1, 2, 3], [0, 2], 3, control_edges=[(1, 2)])
    assert [s.nodes for s in subsets] == [[0], [1], [2]]


def test_disable_node_fusion_gives_single_node_subsets():
    subsets = partition_graph(reference_graph(), 7, [4, 6], [2, 3], 6, disable_node_fusion=True)
    assert all(len(s.nodes) == 1 for s in subsets)
    assert [s.nodes[0] for s in subsets] == [0, 1, 2, 3, 4, 5]


def test_errors():
    with pytest.raises(PartitionError, match="not in"):
        partition_graph(reference_graph(), 7, [6], [9], 6)
    with pytest.raises(PartitionError, match="outside the plan"):
        partition_graph(reference_graph(), 7, [6], [2], 6, control_edges=[(0, 8)])
    cycle = [node(0, [2], [1]), node(1, [1], [2])]
    with pytest.raises(PartitionError, match="cycle"):
        partition_graph(cycle, 3, [2], [0], 2)
    with pytest.raises(PartitionError, match="cycle"):
        partition_graph(reference_graph(), 7, [6], [2], 6, control_edges=[(5, 0)])


def check_invariants(plan, num_tensors, outputs, claimed, subsets, greedy=True):
    """Every node once, types right, data only flows forward, boundaries exactly the used tensors."""
    scheduled = [n for s in subsets for n in s.nodes]
    assert sorted(scheduled) == sorted(p.node_index for p in plan)
    by_index = {p.node_index: p for p in plan}
    produced_in = {}
    for i, subset in enumerate(subsets):
        assert all((n in claimed) == (subset.type == P) for n in subset.nodes)
        if i:
            assert subset.type != subsets[i - 1].type  # a new subset starts only when the type changes
        inside = set()
        for n in subset.nodes:
            for t in by_index[n].inputs:
                if t == -1:
                    continue
                assert t in inside or produced_in.get(t, -1) < i, "a node reads a tensor not yet produced"
            inside.update(t for t in by_index[n].outputs if t != -1)
        for t in inside:
            produced_in[t] = i
        read = {t for n in subset.nodes for t in by_index[n].inputs if t != -1}
        assert subset.input_tensors == sorted(read - inside)
    for i, subset in enumerate(subsets):
        later = {t for s in subsets[i + 1 :] for n in s.nodes for t in by_index[n].inputs}
        exported = {t for t in later | set(outputs) if produced_in.get(t) == i}
        assert subset.output_tensors == sorted(exported)


@st.composite
def random_graph(draw):
    count = draw(st.integers(1, 14))
    plan, tensors = [], [0]  # tensor 0: graph input
    for i in range(count):
        inputs = draw(st.lists(st.sampled_from(tensors), min_size=1, max_size=3))
        outputs = [len(tensors) + k for k in range(draw(st.integers(1, 2)))]
        tensors += outputs
        plan.append(node(i, inputs, outputs, draw(st.booleans()) and draw(st.booleans())))
    claimed = draw(st.sets(st.integers(0, count - 1)))
    graph_outputs = [plan[-1].outputs[0], *draw(st.lists(st.sampled_from(tensors), max_size=2))]
    return plan, len(tensors), graph_outputs, claimed


@settings(max_examples=200, deadline=None)
@given(random_graph(), st.booleans())
def test_random_graphs_partition_into_executable_subsets(graph, greedy):
    plan, num_tensors, outputs, claimed = graph
    subsets = partition_graph(plan, num_tensors, outputs, sorted(claimed), len(plan), greedy=greedy)
    check_invariants(plan, num_tensors, outputs, claimed, subsets)
    if not greedy:  # contiguous runs in plan order
        assert [n for s in subsets for n in s.nodes] == list(range(len(plan)))

"""Split an execution plan into independent node subsets (PartitionGraphIntoIndependentNodeSubsets).

Each subset holds either only nodes a delegate claimed (PARTITION) or only nodes it did not
(NON_PARTITION). Subsets come out in an executable order, and data flows only from earlier subsets to
later ones, so fusing each PARTITION subset into one node cannot create a cycle.

The sweep works in epochs. Tensors no plan node produces (graph inputs, constants, variables) are always
ready. Each epoch opens a subset and schedules every node whose inputs are ready and whose type matches
the subset's; greedy mode sweeps the plan repeatedly (independent nodes may jump ahead), non-greedy mode
stops at the first node that does not fit (contiguous runs). Side-effect nodes are chained by implicit
control edges so they keep their relative order.

This module is a pure function over plain data; the Subgraph adapts itself to it.
"""

from __future__ import annotations

import bisect
import enum
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

OPTIONAL_TENSOR = -1
_NOT_READY = -1
_ALWAYS_READY = -2


class SubsetType(enum.Enum):
    UNEXPLORED = 0
    PARTITION = 1  # claimed by the delegate
    NON_PARTITION = 2


@dataclass(frozen=True)
class PlanNode:
    """One execution-plan entry as partitioning sees it."""

    node_index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    might_have_side_effect: bool = False


@dataclass
class NodeSubset:
    type: SubsetType = SubsetType.UNEXPLORED
    nodes: list[int] = field(default_factory=list)  # node indices, in scheduling order
    input_tensors: list[int] = field(default_factory=list)  # sorted, unique
    output_tensors: list[int] = field(default_factory=list)  # sorted, unique


class PartitionError(ValueError):
    """The nodes or control edges are invalid, or the graph has a cycle."""


def partition_graph(
    plan: Sequence[PlanNode],
    num_tensors: int,
    graph_outputs: Sequence[int],
    nodes_to_partition: Sequence[int],
    num_total_nodes: int,
    *,
    greedy: bool = True,
    control_edges: Sequence[tuple[int, int]] | None = None,
    disable_node_fusion: bool = False,
) -> list[NodeSubset]:
    """Partition `plan` into subsets of claimed (`nodes_to_partition`) and unclaimed nodes.

    Control edges are (from, to) pairs of plan positions; None means "derive them": a chain through
    the side-effect nodes in greedy mode, nothing in non-greedy mode.
    """
    for node_index in nodes_to_partition:
        if not 0 <= node_index < num_total_nodes:
            raise PartitionError(f"node {node_index} to partition is not in [0, {num_total_nodes})")
    if control_edges is None:
        control_edges = _side_effect_chain(plan) if greedy else []
    for start, end in control_edges:
        if not (0 <= start < len(plan) and 0 <= end < len(plan)):
            raise PartitionError(f"control edge ({start}, {end}) lies outside the plan of {len(plan)} nodes")
    claimed = set(nodes_to_partition)
    return _Partitioner(
        plan, num_tensors, claimed, greedy, sorted(set(control_edges)), disable_node_fusion
    ).run(graph_outputs)


def _side_effect_chain(plan: Sequence[PlanNode]) -> list[tuple[int, int]]:
    positions = [p for p, node in enumerate(plan) if node.might_have_side_effect]
    return list(itertools.pairwise(positions))


class _Partitioner:
    def __init__(self, plan, num_tensors, claimed, greedy, control_edges, disable_node_fusion):
        self.plan = plan
        self.claimed = claimed
        self.greedy = greedy
        self.control_edges = control_edges
        self.disable_node_fusion = disable_node_fusion
        self.subsets: list[NodeSubset] = []
        self.tensor_epoch = [_ALWAYS_READY] * num_tensors
        self.node_epoch = [_NOT_READY] * len(plan)
        self.pending_edges = [0] * len(plan)
        for _, end in control_edges:
            self.pending_edges[end] += 1
        for node in plan:
            for t in node.outputs:
                if t != OPTIONAL_TENSOR:
                    self.tensor_epoch[t] = _NOT_READY

    def run(self, graph_outputs: Sequence[int]) -> list[NodeSubset]:
        while True:
            self.subsets.append(NodeSubset())
            self._fill_subset()
            if not self.subsets[-1].nodes:
                self.subsets.pop()
                break
        if any(epoch == _NOT_READY for epoch in self.node_epoch):
            raise PartitionError("the graph has a cycle or unsatisfiable control edges")
        for t in graph_outputs:
            epoch = self.tensor_epoch[t]
            if epoch == _ALWAYS_READY:
                continue  # a graph input passed straight through
            self.subsets[epoch].output_tensors.append(t)
        for subset in self.subsets:
            subset.input_tensors = sorted(set(subset.input_tensors))
            subset.output_tensors = sorted(set(subset.output_tensors))
        return self.subsets

    def _fill_subset(self) -> None:
        while True:
            scheduled_any = False
            for position in range(len(self.plan)):
                if self._schedule(position):
                    scheduled_any = True
                elif scheduled_any and not self.greedy:
                    return  # contiguous mode: the run ends at the first node that does not fit
            if not scheduled_any:
                return

    def _schedule(self, position: int) -> bool:
        subset = self.subsets[-1]
        if self.disable_node_fusion and subset.nodes:
            return False
        if self.node_epoch[position] != _NOT_READY or self.pending_edges[position]:
            return False
        node = self.plan[position]
        if any(t != OPTIONAL_TENSOR and self.tensor_epoch[t] == _NOT_READY for t in node.inputs):
            return False
        node_type = SubsetType.PARTITION if node.node_index in self.claimed else SubsetType.NON_PARTITION
        if subset.type == SubsetType.UNEXPLORED:
            subset.type = node_type
        if subset.type != node_type:
            return False
        epoch = len(self.subsets) - 1
        self.node_epoch[position] = epoch
        subset.nodes.append(node.node_index)
        for t in node.outputs:
            if t != OPTIONAL_TENSOR:
                self.tensor_epoch[t] = epoch
        for t in node.inputs:
            if t == OPTIONAL_TENSOR:
                continue
            input_epoch = self.tensor_epoch[t]
            if input_epoch != epoch:
                subset.input_tensors.append(t)
                if input_epoch >= 0:
                    self.subsets[input_epoch].output_tensors.append(t)
        start = bisect.bisect_left(self.control_edges, (position, -1))
        for edge_start, edge_end in self.control_edges[start:]:
            if edge_start != position:
                break
            self.pending_edges[edge_end] -= 1
        return True

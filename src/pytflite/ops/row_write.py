"""The row write of a WHILE body, fused: CONCATENATION(SLICE(x, 0, [k, -1..]), item, SLICE(x, [k+1, 0..], -1)).

TensorFlow writes each loop step's result into a sequence buffer `x` ([N, ...]) this way (a TensorArray
write of row k). The two SLICEs have computed begin/size, so TFLite marks their outputs dynamic and the
whole body is prepared again at every iteration, which also keeps the WHILE off the bound loop. Whenever
0 <= k < N the concatenation is just `x` with row k replaced by `item`, so its shape is `x`'s: RowWrite
prepares the CONCATENATION to that shape, leaves the two SLICEs unprepared and unrun (only the
concatenation reads them), and runs `out[...] = x; out[k] = item`.

The shape is a speculation that the values decide. A fused step that finds begin/size other than that
pattern raises Respecialize; the WHILE then stops fusing its body for good and runs the whole loop again
from its inputs with the original kernels, which give exactly their results, shapes and error texts. That
restart is sound because fusion is offered only to a body the one WHILE calls whose condition and body
have no state or side effects (ops/control_flow.py), so running them again changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.node import OPTIONAL_TENSOR, Node
from ..core.step_program import Respecialize
from ..core.subgraph import Unfusable
from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError
from ..model.options import ActivationFunctionType

_INDEX_TYPES = (TensorType.INT32, TensorType.INT64)
_COPYABLE = frozenset(
    {
        TensorType.FLOAT32,
        TensorType.FLOAT16,
        TensorType.BFLOAT16,
        TensorType.UINT8,
        TensorType.INT8,
        TensorType.INT32,
        TensorType.INT64,
        TensorType.BOOL,
        TensorType.UINT32,
    }
)


def is_pure(subgraph) -> bool:
    """Whether running `subgraph` again with the same inputs changes nothing and gives the same results:
    the builtin table's kernels only, none with state, side effects or randomness (the kernels marked
    Registration.stateless, the same test the lazy prepare trusts), and no variables. A user's kernel
    registered under a builtin code may keep state: it is not pure."""
    return not subgraph.variables and all(
        registration.stateless and not node.might_have_side_effect for node, registration in subgraph.nodes
    )


@dataclass(frozen=True, slots=True)
class RowWrite:
    """One matched pattern: the CONCATENATION node `concat`, its SLICE nodes `head` and `tail` over the
    buffer `x`, and `item`, the row written."""

    concat: Node
    head: Node
    tail: Node

    @property
    def x(self) -> int:
        return self.head.inputs[0]

    @property
    def item(self) -> int:
        return self.concat.inputs[1]


class RowWrites:
    """The row writes of one subgraph's plan and which of them its current preparation fused."""

    __slots__ = ("by_concat", "absorbed", "prepared")

    def __init__(self, writes: list[RowWrite]):
        self.by_concat = {w.concat.index: w for w in writes}
        self.absorbed = {n.index for w in writes for n in (w.head, w.tail)}
        self.prepared: set[int] = set()  # CONCATENATION nodes prepared fused

    def handles(self, node_index: int) -> bool:
        return node_index in self.absorbed or node_index in self.by_concat

    def prepare(self, context, node: Node) -> None:
        """Prepare a node of a row write: a SLICE is left alone, the CONCATENATION gets `x`'s shape.
        Raises Unfusable when shapes or types are not those of a row write."""
        write = self.by_concat.get(node.index)
        if write is None:
            return  # a SLICE: nothing reads its output while fused
        _check_fits(context.tensors, write)
        output = context.tensors[node.outputs[0]]
        try:
            context.resize_tensor(output, context.tensors[write.x].shape)
        except KernelError:  # (a limit): the original kernels report it as TFLite does
            raise Unfusable from None
        self.prepared.add(node.index)

    def complete(self) -> bool:
        """Whether the preparation fused every row write (it stops early at a dynamic node)."""
        return len(self.prepared) == len(self.by_concat)

    def as_planned(self, node: Node) -> Node | _Reads:
        """`node` as the arena planner must see it: a fused CONCATENATION also reads what its SLICEs read
        (they do not run), so those tensors live until it has run."""
        write = self.by_concat.get(node.index)
        return node if write is None else _Reads(node, write.head.inputs + write.tail.inputs)

    def step(self, context, node_index: int) -> Callable | None:
        """The fused step for a CONCATENATION, None for an absorbed SLICE (it does not run)."""
        write = self.by_concat.get(node_index)
        return None if write is None else _bind(context, write)


class _Reads:
    """A node with more inputs, for the arena planner's lifetimes (RowWrites.as_planned)."""

    __slots__ = ("node", "inputs")

    def __init__(self, node: Node, more: tuple[int, ...]):
        self.node = node
        self.inputs = node.inputs + more

    @property
    def outputs(self) -> tuple[int, ...]:
        return self.node.outputs

    @property
    def temporaries(self) -> tuple[int, ...]:
        return self.node.temporaries


def find_row_writes(subgraph) -> RowWrites | None:
    """The row-write patterns in `subgraph`'s plan (by structure only; prepare checks shapes), or None."""
    plan = subgraph.execution_plan
    nodes = [subgraph.nodes[i] for i in plan]
    producer: dict[int, tuple[Node, int]] = {}
    readers: dict[int, int] = {}
    for node, registration in nodes:
        for t in node.outputs:
            producer[t] = (node, registration.builtin_code)
        for t in node.inputs:
            readers[t] = readers.get(t, 0) + 1
    writes = []
    for node, registration in nodes:
        if (
            registration.builtin_code != BuiltinOperator.CONCATENATION
            or len(node.inputs) != 3
            or node.builtin_data.fused_activation_function != ActivationFunctionType.NONE
        ):
            continue
        head, item, tail = node.inputs
        sources = [producer.get(t, (None, None)) for t in (head, tail)]
        if any(code != BuiltinOperator.SLICE or len(n.inputs) != 3 for n, code in sources):
            continue
        (head_node, _), (tail_node, _) = sources
        x = head_node.inputs[0]
        if (
            tail_node.inputs[0] != x
            or head == tail
            or item in (x, OPTIONAL_TENSOR)
            or any(readers.get(t) != 1 or t in subgraph.outputs for t in (head, tail))
        ):
            continue
        writes.append(RowWrite(node, head_node, tail_node))
    return RowWrites(writes) if writes else None


def _check_fits(tensors, write: RowWrite) -> None:
    """The checks SLICE's and CONCATENATION's prepare would make, narrowed to a row write: same type and
    quantization throughout (a plain copy), rank >= 1, axis 0, item of one row of `x`."""
    x, item = tensors[write.x], tensors[write.item]
    output = tensors[write.concat.outputs[0]]
    sliced = [tensors[t] for n in (write.head, write.tail) for t in n.outputs]
    rank = len(x.shape)
    axis = write.concat.builtin_data.axis
    fits = (
        rank >= 1
        and x.shape[0] >= 1
        and axis in (0, -rank)
        and x.type in _COPYABLE
        and all(t.type == x.type for t in (item, output, *sliced))
        and all(_same_quantization(t, output) for t in (x, item))
        and item.shape == (1, *x.shape[1:])
        and all(
            tensors[t].type in _INDEX_TYPES and tensors[t].shape == (rank,)
            for n in (write.head, write.tail)
            for t in n.inputs[1:]
        )
    )
    if not fits:
        raise Unfusable


def _same_quantization(tensor, other) -> bool:
    return tensor.params.scale == other.params.scale and tensor.params.zero_point == other.params.zero_point


def _bind(context, write: RowWrite) -> Callable:
    """The fused step over the arrays the tensors have now (valid while the subgraph's runner is)."""
    tensors = context.tensors
    x = tensors[write.x].data
    item = tensors[write.item].data.reshape(x.shape[1:])
    out = tensors[write.concat.outputs[0]].data
    head_begin, head_size, tail_begin, tail_size = (
        tensors[t].data for n in (write.head, write.tail) for t in n.inputs[1:]
    )
    rows = x.shape[0]
    spans = list(x.shape[1:])  # sizes that take a whole axis, as -1 does
    rest = len(spans)
    zeros, whole = [0] * (rest + 1), [-1] * rest

    def row_write_step(context, node):
        k = head_size.item(0)
        if not (
            0 <= k < rows
            and tail_begin.item(0) == k + 1
            and tail_size.item(0) in (-1, rows - k - 1)
            and head_begin.tolist() == zeros
            and tail_begin.tolist()[1:] == zeros[1:]
            and _whole(head_size.tolist()[1:], whole, spans)
            and _whole(tail_size.tolist()[1:], whole, spans)
        ):
            raise Respecialize
        out[...] = x
        out[k] = item

    return row_write_step


def _whole(sizes: list[int], whole: list[int], spans: list[int]) -> bool:
    """Whether SLICE sizes take every element of their axes (-1 or the axis size)."""
    return sizes == whole or all(s in (-1, d) for s, d in zip(sizes, spans))

"""The row write of a WHILE body, fused: CONCATENATION(SLICE(x, 0, [k, -1..]), item, SLICE(x, [k+1, 0..], -1)).

TensorFlow writes each loop step's result into a sequence buffer `x` ([N, ...]) this way (a TensorArray
write of row k). The two SLICEs have computed begin/size, so TFLite marks their outputs dynamic and the
whole body is prepared again at every iteration, which also keeps the WHILE off the bound loop. Whenever
0 <= k < N the concatenation is just `x` with row k replaced by `item`, so its shape is `x`'s. The WHILE
asks for the fusion as a rewrite of its body's plan (core/plan_rewrite.py, rewrite_row_writes): one
ROW_WRITE node, reading `x`, `item` and the SLICEs' begin/size tensors, takes the place of the three
nodes; its prepare gives the output `x`'s shape and it runs `out[...] = x; out[k] = item`.

The shape is a speculation that the values decide. A fused node whose prepare finds other shapes or
types, or whose step finds begin/size other than that pattern (it raises Respecialize), makes the WHILE
undo the rewrite for good (stop_rewriting) and run the whole loop again from its inputs with the original
kernels, which give exactly their results, shapes and error texts. That restart is sound because the
fusion is asked for only in a body the one WHILE calls whose condition and body have no state or side
effects (ops/control_flow.py), so running them again changes nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

from ..core.node import OPTIONAL_TENSOR, Node, Registration
from ..core.plan_rewrite import PlanRewrite
from ..core.step_program import Respecialize
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


@dataclass(frozen=True, slots=True)
class RowWriteData:
    """The fused node's op data: whether its prepare found a row write's shapes and types."""

    fits: bool


def row_write_prepare(context, node) -> None:
    """The CONCATENATION's output gets `x`'s shape; shapes or types other than a row write's leave the
    output dynamic (the prepare stops there) and the WHILE undoes the rewrite (keeps_rewrite)."""
    write = node.builtin_data
    fits = _fits(context.tensors, write)
    output = context.tensors[node.outputs[0]]
    if fits:
        try:
            context.resize_tensor(output, context.tensors[write.x].shape)
        except KernelError:  # (a limit): the original kernels report it as TFLite does
            fits = False
    if not fits:
        context.set_tensor_to_dynamic(output)
    node.user_data = RowWriteData(fits)


def row_write_invoke(context, node) -> None:
    row_write_calls(context, node)[0]()


def row_write_calls(context, node) -> tuple[Callable[[], None]]:
    """The fused write over the arrays the tensors have now (valid while the subgraph's runner is)."""
    return (_row_write(context, node.builtin_data),)


ROW_WRITE = Registration(
    prepare=row_write_prepare,
    invoke=row_write_invoke,
    calls=row_write_calls,
    builtin_code=BuiltinOperator.CUSTOM,
    custom_name="pytflite_RowWrite",
    stateless=True,
)


@dataclass
class _BodyRewrite:
    """A WHILE body's row writes: the rewrite applied (or None), and whether the body gave it up."""

    rewrite: PlanRewrite | None = None
    given_up: bool = False


_BODIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def rewrite_row_writes(body) -> None:
    """Replace each row write of `body`'s plan by one fused node, once (not after stop_rewriting), and
    not while every tensor must stay readable or a delegate rewrote the plan (its kernels see the
    original nodes)."""
    state = _BODIES.setdefault(body, _BodyRewrite())
    delegation = body.delegation
    if (
        state.given_up
        or state.rewrite is not None
        or body.config.preserve_all_tensors
        or delegation.applied
        or delegation.pre_delegation_plan is not None
    ):
        return
    writes = find_row_writes(body)
    if not writes:
        return
    rewrite = PlanRewrite(body)
    for write in writes:
        head, tail = write.head, write.tail
        inputs = (write.x, write.item, *head.inputs[1:], *tail.inputs[1:])
        rewrite.replace(
            (head.index, tail.index, write.concat.index), ROW_WRITE, inputs, write.concat.outputs, write
        )
    state.rewrite = rewrite


def is_rewritten(body) -> bool:
    """Whether `body` runs its row writes fused."""
    state = _BODIES.get(body)
    return state is not None and state.rewrite is not None


def keeps_rewrite(body) -> bool:
    """Whether a prepared, fused `body` is worth running so: every fused node fits, nothing is dynamic,
    and the whole body runs as check-free steps (a fused body never runs the careful loop)."""
    fused = [body.nodes[i][0] for i in _BODIES[body].rewrite.added]
    return (
        all(isinstance(n.user_data, RowWriteData) and n.user_data.fits for n in fused)
        and not body.has_dynamic_tensors
        and body.runner is not None
        and body.runner.fast_steps is not None
    )


def stop_rewriting(body) -> None:
    """Run `body`'s own nodes from now on, prepared as TFLite prepares them."""
    state = _BODIES.setdefault(body, _BodyRewrite())
    state.given_up = True
    if state.rewrite is not None:
        state.rewrite.undo()
        state.rewrite = None


def find_row_writes(subgraph) -> list[RowWrite]:
    """The row-write patterns in `subgraph`'s plan (by structure only; the fused node's prepare checks
    shapes)."""
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
    return writes


def _fits(tensors, write: RowWrite) -> bool:
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
    return fits


def _same_quantization(tensor, other) -> bool:
    return tensor.params.scale == other.params.scale and tensor.params.zero_point == other.params.zero_point


def _row_write(context, write: RowWrite) -> Callable[[], None]:
    """The fused write as a call of nothing, the arrays looked up once."""
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

    def row_write():
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

    return row_write


def _whole(sizes: list[int], whole: list[int], spans: list[int]) -> bool:
    """Whether SLICE sizes take every element of their axes (-1 or the axis size)."""
    return sizes == whole or all(s in (-1, d) for s, d in zip(sizes, spans))

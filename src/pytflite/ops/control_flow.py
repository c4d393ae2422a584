"""Control flow: IF, WHILE and CALL_ONCE, which run other subgraphs of the model.

Each calls its subgraphs through ops/subgraph_calls.py (Call, and Bound where the shapes are fixed),
so an IF with a bound branch runs that branch's steps directly, and a WHILE whose condition and body are both bound runs as a
BoundLoop: each iteration copies the body's outputs into the inputs that read them and runs the two
step lists, with no shape checks, dispatch or error-state setup in between.

A WHILE whose condition and body are pure rewrites its body's plan so that the row writes TensorFlow's
loops make run fused (ops/row_write.py), which turns such a body static; the node's outputs stay dynamic,
as the unfused body's are, because a row write that meets other values makes the WHILE undo the rewrite
and run the loop again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from ..core.node import OPTIONAL_TENSOR
from ..core.step_program import Respecialize, Source, Staged, WrittenCode
from ..core.tensor import Tensor
from ..core.types import BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq
from .common import ANY_TYPE, input_tensor
from .registry import register_builtin
from .row_write import is_pure, is_rewritten, keeps_rewrite, rewrite_row_writes, stop_rewriting
from .subgraph_calls import (
    Bound,
    Call,
    call_count,
    called_subgraph,
    check_output_types,
    copy_index,
    is_dynamic,
    output_shapes,
    prepare_call,
    reachable_subgraphs,
    resize_or_dynamic,
    sources_of,
    values_of,
    write_outputs,
    written_tensors,
)

# --- IF ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IfData:
    then_call: Call
    else_call: Call
    arguments: tuple[int, ...]  # the node's inputs passed to the branch (all but the condition)
    dynamic: bool  # the node's outputs are resized at invoke to what the branch produced


def if_prepare(context, node):
    options = node.builtin_data
    ensure(len(node.inputs) > 0, "IF needs a condition input")
    condition = input_tensor(context, node, 0)
    ensure_eq(condition.type.name, TensorType.BOOL.name, "IF condition type")
    ensure_eq(int(np.prod(condition.shape, dtype=np.int64)), 1, "IF condition element count")
    branches = (
        called_subgraph(context, options.then_subgraph_index, "IF then"),
        called_subgraph(context, options.else_subgraph_index, "IF else"),
    )
    sources = sources_of(context, node.inputs[1:])
    for branch, role in zip(branches, ("IF then", "IF else")):
        ensure_eq(len(branch.inputs), len(sources), f"{role} subgraph input count")
        ensure_eq(len(branch.outputs), len(node.outputs), f"{role} subgraph output count")
        prepare_call(branch, sources, role)
        check_output_types(context, node, branch, role)
    then_shapes, else_shapes = (output_shapes(b) for b in branches)
    dynamic = any(b.has_dynamic_tensors for b in branches) or then_shapes != else_shapes
    node.user_data = IfData(Call(branches[0]), Call(branches[1]), tuple(node.inputs[1:]), dynamic)
    resize_or_dynamic(context, node, None if dynamic else then_shapes)


def if_invoke(context, node):
    data = node.user_data
    call = data.then_call if context.tensors[node.inputs[0]].data.item() else data.else_call
    write_outputs(context, node, call.run(values_of(context, data.arguments), copy=False), data.dynamic)


def if_calls(context, node):
    """Registration.calls of an IF with fixed output shapes, for the memory its tensors have now: the condition, argument and
    output arrays looked up once, and per branch, once per Bound (until the branch is allocated again),
    the copies in and out as pairs of arrays (_BranchRun); a branch that is not bound runs through
    if_invoke."""
    data = node.user_data
    if data.dynamic:
        return None
    tensors = context.tensors
    flag = tensors[node.inputs[0]].data.reshape(-1)
    values = values_of(context, data.arguments)
    outputs = tuple((p, tensors[i].data) for p, i in enumerate(node.outputs) if i != OPTIONAL_TENSOR)
    calls = (data.else_call, data.then_call)
    runs: list[_BranchRun | None] = [None, None]  # per branch: made for its Bound last seen

    def if_call():
        taken = 1 if flag[0] else 0
        bound = calls[taken].bound()
        run = runs[taken]
        if run is None or run.bound is not bound:
            if bound is None or not bound.accepts(values):
                if_invoke(context, node)
                return
            run = runs[taken] = _BranchRun(bound, values, outputs)
        run.run()

    return (if_call,)


class _BranchRun(Staged):
    """One IF branch's Bound with the IF's argument and output arrays: what to copy in, the steps, what to
    copy out, as (destination, index, source) triples (copy_index); from its second run on, all of it
    written out as one function."""

    __slots__ = ("bound", "copy_in", "program", "copy_out")

    def __init__(self, bound: Bound, values: Sequence[np.ndarray], outputs: Sequence[tuple[int, np.ndarray]]):
        super().__init__(self._run_plain, lambda: self._write().run)
        self.bound = bound
        self.copy_in = tuple(
            (array, index, values[p]) for p, array, index in bound.inputs if values[p] is not array
        )
        self.program = bound.program
        self.copy_out = tuple((out, copy_index(out), bound.outputs[p]) for p, out in outputs)

    def _run_plain(self) -> None:
        for array, key, value in self.copy_in:
            array[key] = value
        self.program.run()
        for out, key, result in self.copy_out:
            out[key] = result

    def _write(self) -> WrittenCode:
        source = Source()
        for array, key, value in self.copy_in:
            source.line("{array}[{key}] = {value}", array=array, key=key, value=value)
        source.program(self.program)
        for out, key, result in self.copy_out:
            source.line("{out}[{key}] = {result}", out=out, key=key, result=result)
        return source.compile()


# --- WHILE -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WhileData:
    loop: Loop


class Loop:
    """A WHILE's condition and body calls, and their bound form (BoundLoop) while one is valid."""

    __slots__ = ("condition", "body", "dynamic", "fixed", "_bound")

    def __init__(self, condition: Call, body: Call, dynamic: bool, fixed: bool):
        self.condition, self.body = condition, body
        self.dynamic = dynamic  # the node's outputs are resized at invoke to what the loop produced
        self.fixed = fixed  # the body's outputs have its inputs' shapes, as prepared: it may be bound
        self._bound: BoundLoop | None = None

    def bound(self) -> BoundLoop | None:
        """The loop with both subgraphs bound, or None when it must run call by call."""
        condition, body = self.condition.bound(), self.body.bound()
        bound = self._bound
        if bound is None or bound.condition is not condition or bound.body is not body:
            bound = self._bound = BoundLoop(self, condition, body)
        return bound if bound.usable else None

    def run_call_by_call(self, values: Sequence[np.ndarray], limit: int | None) -> Sequence[np.ndarray]:
        """The general loop: each iteration runs the condition and the body as calls, which resize and
        allocate them when the values' shapes change."""
        condition, body = self.condition, self.body
        condition_output = condition.outputs[0]
        iterations = 0
        while True:
            (keep_going,) = condition.run(values, copy=False)
            _check_condition(condition_output)
            if not keep_going.reshape(-1)[0]:
                return values
            if limit is not None and iterations >= limit:
                _too_many_iterations(iterations, limit)
            iterations += 1
            values = body.run(values, copy=False)


class BoundLoop(Staged):
    """A WHILE whose condition and body have fixed shapes, bound for many invokes: their memory and
    check-free steps (Bound), the condition's flag, and each iteration's copies as pairs of arrays:
    body outputs to the condition inputs it reads and to the body's inputs (TFLite's Eval_static).

    Valid while both calls keep their Bound. Nothing inside the loop can replace them: neither subgraph
    is called from the condition or the body (else `usable` is False and the loop runs call by call)."""

    __slots__ = ("condition", "body", "flag", "to_condition", "to_body", "usable")

    def __init__(self, loop: Loop, condition: Bound | None, body: Bound | None):
        super().__init__(self._run_plain, lambda: self._write().run)
        self.condition, self.body = condition, body
        self.usable = False
        if condition is None or body is None or not loop.fixed:
            return
        targets = (loop.condition.target.index, loop.body.target.index)
        subgraphs = loop.body.target.subgraphs
        called = set()
        for index in targets:
            called |= reachable_subgraphs(subgraphs, subgraphs[index])
        if called.intersection(targets):
            return
        _check_condition(loop.condition.outputs[0])
        outputs = body.outputs
        if any(outputs[p].size != array.size for p, array, _ in (*condition.inputs, *body.inputs)):
            return  # the condition was last sized by another caller: the next call sizes it again
        # A value the body passes on untouched (its output is its input, which no node writes) keeps what
        # the loop started with: it is copied into the condition once, before the first iteration.
        # (Nor does any node of the condition write the input it reads it from.)
        target, condition_inputs = loop.body.target, loop.condition.target.inputs
        written, condition_written = written_tensors(target), written_tensors(loop.condition.target)
        unchanged = {
            p
            for p, (i, o) in enumerate(zip(target.inputs, target.outputs))
            if i == o != OPTIONAL_TENSOR and i not in written and condition_inputs[p] not in condition_written
        }
        # [] and [1] count as alike (while_prepare): a value is copied through a view of its new shape
        self.to_condition = tuple(
            (array, index, outputs[p].reshape(array.shape))
            for p, array, index in condition.inputs
            if p not in unchanged
        )
        self.to_body = tuple(
            (array, index, outputs[p].reshape(array.shape))
            for p, array, index in body.inputs
            if outputs[p] is not array
        )
        self.flag = condition.outputs[0].reshape(-1)
        self.usable = True

    def _run_plain(self, values: list[np.ndarray], limit: int | None) -> Sequence[np.ndarray]:
        """Loop from the node's input `values` (in the bound inputs' shapes); returns the final values.
        (`run`: this the first time, then the loop written out as one function, _write.)"""
        condition, body, flag = self.condition, self.body, self.flag
        run_condition, run_body = condition.program.run, body.program.run
        for p, array, index in condition.inputs:
            array[index] = values[p]
        run_condition()
        if not flag[0]:
            return values
        for p, array, index in body.inputs:
            array[index] = values[p]
        to_condition, to_body = self.to_condition, self.to_body
        iterations = 0
        while True:
            if limit is not None and iterations >= limit:
                _too_many_iterations(iterations, limit)
            iterations += 1
            run_body()
            for array, index, value in to_condition:
                array[index] = value
            run_condition()
            if not flag[0]:
                return body.outputs
            for array, index, value in to_body:
                array[index] = value

    def _write(self) -> WrittenCode:
        """_run_plain as one function of (values, limit): the condition's and the body's steps written out
        (core/step_program.py) with the copies between them, the loop itself Python's."""
        source = Source("values, limit")
        condition, body = self.condition, self.body
        for p, array, index in condition.inputs:
            source.line(f"{{array}}[{{index}}] = values[{p}]", array=array, index=index)
        source.program(condition.program)
        source.line("if not {flag}[0]: return values", flag=self.flag)
        for p, array, index in body.inputs:
            source.line(f"{{array}}[{{index}}] = values[{p}]", array=array, index=index)
        source.line("iterations = 0")
        source.line("while True:")
        source.line(
            "if limit is not None and iterations >= limit: {fail}(iterations, limit)",
            2,
            fail=_too_many_iterations,
        )
        source.line("iterations += 1", 2)
        source.program(body.program, 2)
        for array, index, value in self.to_condition:
            source.line("{array}[{index}] = {value}", 2, array=array, index=index, value=value)
        source.program(condition.program, 2)
        source.line("if not {flag}[0]: return {outputs}", 2, flag=self.flag, outputs=body.outputs)
        for array, index, value in self.to_body:
            source.line("{array}[{index}] = {value}", 2, array=array, index=index, value=value)
        return source.compile()


def _check_condition(tensor: Tensor) -> None:
    if tensor.type == TensorType.BOOL and tensor.shape in ((), (1,)):
        return  # the common case, without formatting the messages below
    ensure_eq(tensor.type.name, TensorType.BOOL.name, "WHILE condition output type")
    ensure(
        tensor.shape in ((), (1,)), f"WHILE condition output must hold one value, shape {list(tensor.shape)}"
    )


def while_prepare(context, node):
    options = node.builtin_data
    count = len(node.inputs)
    ensure_eq(len(node.outputs), count, "WHILE output count vs input count")
    ensure(
        options.cond_subgraph_index != options.body_subgraph_index,
        "WHILE condition and body must be different subgraphs",
    )
    condition = called_subgraph(context, options.cond_subgraph_index, "WHILE condition")
    body = called_subgraph(context, options.body_subgraph_index, "WHILE body")
    ensure_eq(len(condition.inputs), count, "WHILE condition subgraph input count")
    ensure_eq(len(condition.outputs), 1, "WHILE condition subgraph output count")
    ensure_eq(len(body.inputs), count, "WHILE body subgraph input count")
    ensure_eq(len(body.outputs), count, "WHILE body subgraph output count")
    sources = [input_tensor(context, node, i) for i in range(count)]  # each carried into an output
    prepare_call(condition, sources, "WHILE condition")
    condition_output = condition.tensors[condition.outputs[0]]
    if not is_dynamic(condition_output):
        _check_condition(condition_output)
    # a pure loop whose body only this node calls (no other node, no signature) can run again from its
    # inputs (Respecialize)
    pure = (
        is_pure(condition)
        and is_pure(body)
        and call_count(context.subgraphs, body.index) == 1
        and body.index not in context.resources.entry_subgraphs
    )
    if pure:
        rewrite_row_writes(body)
    else:
        stop_rewriting(body)
    prepare_call(body, sources, "WHILE body")
    if is_rewritten(body) and not keeps_rewrite(body):
        stop_rewriting(body)
        prepare_call(body, sources, "WHILE body")
    check_output_types(context, node, body, "WHILE body")
    dynamic = body.has_dynamic_tensors
    alike = False  # a loop-carried value goes from [] to [1] or back
    for position, (i, o) in enumerate(zip(body.inputs, body.outputs)):
        before, after = body.tensors[i], body.tensors[o]
        ensure(
            before.type == after.type,
            f"WHILE body output {position} is {after.type.name}, its input {before.type.name}",
        )
        # A loop-carried value that changes shape makes the loop dynamic; [] and [1] count as alike: the
        # body stays bound, but the node's outputs are dynamic, as in TFLite, where they have the
        # inputs' shapes when the body never ran. (TFLite's test also lets [0] -> [1] through, and such
        # a loop then fails at invoke; here it is dynamic and runs.)
        if before.shape != after.shape:
            if {before.shape, after.shape} == {(), (1,)}:
                alike = True
            else:
                dynamic = True
    loop = Loop(
        Call(condition, skip_unread=True),
        Call(body),
        dynamic or alike or is_rewritten(body),
        not dynamic,
    )
    node.user_data = WhileData(loop)
    resize_or_dynamic(context, node, None if loop.dynamic else output_shapes(body))


def while_invoke(context, node):
    loop = node.user_data.loop
    limits = context.subgraph.limits
    limit = None if limits is None else limits.max_while_iterations  # None: unbounded, as TFLite
    inputs = values_of(context, node.inputs)
    try:
        bound = loop.bound()
        if bound is not None and bound.condition.accepts(inputs) and bound.body.accepts(inputs):
            values = bound.run(inputs, limit)
        else:
            values = loop.run_call_by_call(inputs, limit)
    except Respecialize:  # a fused row write met other values: the whole loop again, unfused
        values = None
    if values is None:  # (outside the except: a failure of the rerun is its own, not "during" the signal)
        stop_rewriting(loop.body.target)
        values = loop.run_call_by_call(inputs, limit)
    write_outputs(context, node, values, loop.dynamic)


def while_calls(context, node):
    """Registration.calls of a WHILE with fixed output shapes, for the memory its tensors have now: the input and output arrays
    looked up once, and the BoundLoop checked against the inputs once (until it is made again); a loop
    that is not bound runs through while_invoke."""
    loop = node.user_data.loop
    if loop.dynamic:  # (a fusing body makes the loop dynamic: no Respecialize reaches these calls; the
        return None  # outputs have the inputs' shapes, which the values copied in have)
    tensors = context.tensors
    values = values_of(context, node.inputs)
    outputs = tuple(
        (tensors[o].data, copy_index(tensors[o].data), p)
        for p, o in enumerate(node.outputs)
        if o != OPTIONAL_TENSOR
    )
    accepted: BoundLoop | None = None  # the BoundLoop last seen to accept `values`

    def while_call():
        nonlocal accepted
        bound = loop.bound()
        if bound is None or (
            bound is not accepted and not (bound.condition.accepts(values) and bound.body.accepts(values))
        ):
            while_invoke(context, node)
            return
        accepted = bound
        limits = context.subgraph.limits
        results = bound.run(values, None if limits is None else limits.max_while_iterations)
        for out, index, p in outputs:
            out[index] = results[p]

    return (while_call,)


def _too_many_iterations(iterations: int, limit: int) -> NoReturn:
    raise KernelError(
        f"WHILE ran {iterations} iterations, the limit (Limits.max_while_iterations) is {limit}"
    )


# --- CALL_ONCE ---------------------------------------------------------------------------------------


def call_once_prepare(context, node):
    index = node.builtin_data.init_subgraph_index
    ensure(index != context.subgraph.index, "CALL_ONCE cannot call its own subgraph")
    if index in context.resources.initialized_subgraphs:
        return
    ensure_eq(len(node.inputs), 0, "CALL_ONCE input count")
    ensure_eq(len(node.outputs), 0, "CALL_ONCE output count")
    init = called_subgraph(context, index, "CALL_ONCE init")
    ensure_eq(len(init.inputs), 0, "CALL_ONCE init subgraph input count")
    ensure_eq(len(init.outputs), 0, "CALL_ONCE init subgraph output count")


def call_once_invoke(context, node):
    """Run the init subgraph the first time any CALL_ONCE of this interpreter names it."""
    index = node.builtin_data.init_subgraph_index
    done = context.resources.initialized_subgraphs
    if index in done:
        return
    init = context.subgraphs[index]
    init.allocate_tensors()
    init.invoke()
    done.add(index)


register_builtin(
    BuiltinOperator.IF,
    (1, 1),
    types=ANY_TYPE,
    op_data=IfData,
    prepare=if_prepare,
    invoke=if_invoke,
    calls=if_calls,
    stateful=True,
)
register_builtin(
    BuiltinOperator.WHILE,
    (1, 1),
    types=ANY_TYPE,
    op_data=WhileData,
    prepare=while_prepare,
    invoke=while_invoke,
    calls=while_calls,
    stateful=True,
)
register_builtin(
    BuiltinOperator.CALL_ONCE, (1, 1), prepare=call_once_prepare, invoke=call_once_invoke, stateful=True
)

"""StepProgram: a check-free step list run as one generated Python function.

Walking a list of steps costs, per step, a loop iteration, the step's Python frame and its status check:
about 0.4 us, which on the small tensors of loop bodies and small graphs is most of a node's time. A list
that runs again is written out as straight-line code instead, one statement per step:

    s = step_3(context, node_3)         # a kernel's step, its status checked
    if s: stop(3, s)
    call_4_0(arg_4_0_0, arg_4_0_1, out=out_4_0)  # a Direct step: the NumPy call itself, nothing around it
    out_5[at_5] = operation_5(a_5[first_5], b_5[second_5])  # a Written step

A Direct step (`Direct(partial(np.add, a, b, out=out))`) is a bound step made only of calls that report
nothing, typically ufuncs writing into their bound output: in a program it costs just those calls. Called
as a plain step (the careful loop, a benchmark timing one node) it makes the same calls.

Writing a program costs about 25 us a statement (Python's compiler), so a list runs its first time as a
plain loop and is written out on its second run. Failures are reported as the plain loop reports them:
a step's exception or non-OK status names its node (found from the traceback's line in the program).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .node import Node

Steps = list[tuple[Callable, "Node"]]
Failed = Callable[..., NoReturn]  # failed(node, error=...) or failed(node, status=...): reports, raises


class Respecialize(Exception):
    """Raised by a fused step (Subgraph.allow_fusions) that met values its prepared shapes do not hold
    for: the subgraph must run again without fusions. It passes through the step loops unreported."""


class Direct:
    """A check-free step made of calls whose results the runner does not read, each a functools.partial
    of a function and its bound arrays and values (fixed until the step is bound again), made in order."""

    __slots__ = ("calls",)

    def __init__(self, *calls: partial):
        self.calls = calls

    def __call__(self, context, node) -> None:
        for call in self.calls:
            call()


class Written:
    """A check-free step a StepProgram writes as one Python statement: `text`, in which each {name} stands
    for values[name] (`"{out}[()] = {add}({a}[()], {b}[()])"`), for what costs more as calls than as
    Python's own operations (arithmetic on single elements); it may use the local name `x` for an
    intermediate value. As a plain step it calls `step`, which does the same."""

    __slots__ = ("step", "text", "values")

    def __init__(self, step: Callable, text: str, **values: Any):
        self.step, self.text, self.values = step, text, values

    def __call__(self, context, node) -> Any:
        return self.step(context, node)


class _Stopped(Exception):
    """A step of a written-out program returned a status other than OK."""

    def __init__(self, position: int, status: Any):
        super().__init__(position, status)
        self.position, self.status = position, status


def _stop(position: int, status: Any) -> NoReturn:
    raise _Stopped(position, status)


class StepProgram:
    """`steps` as one callable: `program()` runs them all, reporting a failing step through `failed` with
    its node, as run_steps does."""

    __slots__ = ("steps", "_context", "_failed", "_ran", "_function", "_code", "_positions")

    def __init__(self, steps: Steps, context, failed: Failed):
        self.steps, self._context, self._failed = steps, context, failed
        self._ran = False
        self._function: Callable | None = None  # the written-out form, from the second run on
        self._code = None
        self._positions: list[int] = []  # per line of the program, the position of its step

    def __call__(self) -> None:
        function = self._function
        if function is None:
            if not self._ran:
                self._ran = True
                run_steps(self.steps, self._context, self._failed)
                return
            function = self._function = self._write()
        try:
            function(self._context)
        except Respecialize:
            raise
        except _Stopped as stopped:
            self._failed(self.steps[stopped.position][1], status=stopped.status)
        except Exception as error:
            self._failed(self.steps[self._position(error)][1], error=error)

    def _write(self) -> Callable:
        lines = ["def program(context):"]
        positions = [-1]
        names: dict[str, Any] = {"stop": _stop}
        for position, (step, node) in enumerate(self.steps):
            if isinstance(step, Direct):
                for index, call in enumerate(step.calls):
                    lines.append(f"    {_written_call(call, f'{position}_{index}', names)}")
                    positions.append(position)
                continue
            if isinstance(step, Written):
                names.update((f"{name}_{position}", value) for name, value in step.values.items())
                lines.append(
                    "    " + step.text.format(**{name: f"{name}_{position}" for name in step.values})
                )
                positions.append(position)
                continue
            names[f"step_{position}"], names[f"node_{position}"] = step, node
            lines.append(f"    s = step_{position}(context, node_{position})")
            lines.append(f"    if s: stop({position}, s)")  # None and Status.OK are falsy
            positions.extend((position, position))
        if len(lines) == 1:
            lines.append("    pass")
        exec(compile("\n".join(lines), "<step program>", "exec"), names)
        function = names["program"]
        self._code, self._positions = function.__code__, positions
        return function

    def _position(self, error: BaseException) -> int:
        """The position of the step whose line in the program raised `error`."""
        traceback = error.__traceback__
        while traceback is not None and traceback.tb_frame.f_code is not self._code:
            traceback = traceback.tb_next
        if traceback is None:  # (cannot happen: the program's own frame is on the traceback)
            return 0
        return self._positions[traceback.tb_lineno - 1]


def _written_call(call: partial, suffix: str, names: dict[str, Any]) -> str:
    """The statement making `call`, its function and values put into `names` under names ending in
    `suffix`."""
    names[f"call_{suffix}"] = call.func
    written = []
    for i, value in enumerate(call.args):
        names[f"arg_{suffix}_{i}"] = value
        written.append(f"arg_{suffix}_{i}")
    for keyword, value in call.keywords.items():
        names[f"{keyword}_{suffix}"] = value
        written.append(f"{keyword}={keyword}_{suffix}")
    return f"call_{suffix}({', '.join(written)})"


def run_steps(steps: Steps, context, failed: Failed) -> None:
    """Run check-free steps one by one (a program's first run, a list run once)."""
    for step, node in steps:
        try:
            status = step(context, node)
        except Respecialize:
            raise
        except Exception as error:
            failed(node, error=error)
        if status:  # None and Status.OK are falsy
            failed(node, status=status)

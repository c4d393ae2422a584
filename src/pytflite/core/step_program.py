"""StepProgram: a check-free step list run as one generated Python function.

Walking a list of steps costs, per step, a loop iteration, the step's Python frame and its status check:
about 0.4 us, which on the small tensors of loop bodies and small graphs is most of a node's time. A list
that runs again is written out as straight-line code instead (Source), one statement per step:

    s = step_2(context_1, node_3)       # a kernel's invoke, its status checked
    if s: stop(2, s)
    call_6(arg_4, arg_5, out=out_7)     # a kernel's calls (Registration.calls): each call itself
    out_8[at_9] = operation_10(a_11[first_12], b_13[second_14])  # a Written statement

A kernel's calls become a Direct step (`Direct(partial(np.add, a, b, out=out))`): in a program it costs
just those calls. Called as a plain step (the careful loop, a benchmark timing one node) it makes the
same calls.

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
    """Raised by a fused node (a plan rewrite, core/plan_rewrite.py) that met values its prepared shapes
    do not hold for: whoever rewrote the plan undoes it and runs the subgraph again. It passes through
    the step loops and kernel calls unreported."""


class Direct:
    """The check-free step of a kernel's calls (Registration.calls): calls of nothing whose results the
    runner does not read, made in order; a program writes each functools.partial out as its function
    with its bound arrays and values (fixed until the step is bound again)."""

    __slots__ = ("calls",)

    def __init__(self, *calls: partial):
        self.calls = calls

    def __call__(self, context, node) -> None:
        for call in self.calls:
            call()


class Written:
    """A kernel's calls (Registration.calls) as one Python statement a StepProgram writes: `text`, in
    which each {name} stands for values[name] (`"{out}[()] = {add}({a}[()], {b}[()])"`), for what costs
    more as calls than as Python's own operations (arithmetic on single elements); it may use the local
    name `x` for an intermediate value. As a plain step it makes `call`, which does the same."""

    __slots__ = ("call", "text", "values")

    def __init__(self, text: str, call: Callable[[], object], **values: Any):
        self.call, self.text, self.values = call, text, values

    def __call__(self, context, node) -> None:
        self.call()


class _Stopped(Exception):
    """A step of a written-out program returned a status other than OK."""

    def __init__(self, line: int, status: Any):
        super().__init__(line, status)
        self.line, self.status = line, status


def _stop(line: int, status: Any) -> NoReturn:
    raise _Stopped(line, status)


class Source:
    """Python source being written for step lists: its lines, the values they name, and per line the
    step it runs with the `failed` that reports that step (None for the lines around steps). A StepProgram
    writes one list; a WHILE's loop writes its body's and condition's with the copies between them."""

    def __init__(self, parameters: str = ""):
        self._lines = [f"def written({parameters}):"]
        self._names: dict[str, Any] = {"stop": _stop}
        self._origins: list[tuple[Failed, Node] | None] = [None]

    def name(self, hint: str, value: Any) -> str:
        """A new name in the source for `value`."""
        name = f"{hint}_{len(self._names)}"
        self._names[name] = value
        return name

    def line(
        self, text: str, indent: int = 1, origin: tuple[Failed, Node] | None = None, **values: Any
    ) -> None:
        """A line of `text`, each {name} in it standing for values[name]."""
        named = {key: self.name(key, value) for key, value in values.items()}
        self._lines.append("    " * indent + text.format(**named))
        self._origins.append(origin)

    def program(self, program: StepProgram, indent: int = 1) -> None:
        """The lines of `program`'s steps."""
        self.steps(program.steps, program.context, program.failed, indent)

    def steps(self, steps: Steps, context, failed: Failed, indent: int = 1) -> None:
        """The lines of `steps`: a Direct step's calls, a Written statement, any other step's call with
        its status checked."""
        context_name = self.name("context", context)
        for step, node in steps:
            origin = (failed, node)
            if isinstance(step, Direct):
                for call in step.calls:
                    self._call(call, indent, origin)
            elif isinstance(step, Written):
                self.line(step.text, indent, origin, **step.values)
            else:
                name, node_name = self.name("step", step), self.name("node", node)
                self.line(f"s = {name}({context_name}, {node_name})", indent, origin)
                # (None and Status.OK are falsy; stop is told this line's index)
                self.line(f"if s: stop({len(self._lines)}, s)", indent, origin)

    def _call(self, call: Callable[[], object], indent: int, origin: tuple) -> None:
        if not isinstance(call, partial):
            self.line("{call}()", indent, origin, call=call)
            return
        written = [self.name("arg", value) for value in call.args]
        written += [f"{keyword}={self.name(keyword, value)}" for keyword, value in call.keywords.items()]
        self.line(f"{self.name('call', call.func)}({', '.join(written)})", indent, origin)

    def compile(self) -> WrittenCode:
        """The function of the source, with what reports its lines' failures."""
        exec(compile("\n".join([*self._lines, "    pass"]), "<step program>", "exec"), self._names)
        return WrittenCode(self._names["written"], self._origins)


class WrittenCode:
    """A function written by Source, and `run(*arguments)`, which calls it and reports a failing step as
    the plain loop does: through the `failed` of the step whose line raised (or returned a status), with
    its node. A line around the steps passes its exceptions on; Respecialize always passes."""

    __slots__ = ("function", "_origins")

    def __init__(self, function: Callable, origins: list):
        self.function, self._origins = function, origins

    def run(self, *arguments: Any) -> Any:
        try:
            return self.function(*arguments)
        except Respecialize:
            raise
        except _Stopped as stopped:
            failed, node = self._origins[stopped.line]
            failed(node, status=stopped.status)
        except Exception as error:
            origin = self._origins[self._line(error)]
            if origin is None:
                raise
            failed, node = origin
            failed(node, error=error)

    def _line(self, error: BaseException) -> int:
        """The line of the written function that raised `error`."""
        code = self.function.__code__
        traceback = error.__traceback__
        while traceback is not None and traceback.tb_frame.f_code is not code:
            traceback = traceback.tb_next
        return 0 if traceback is None else traceback.tb_lineno - 1


class Staged:
    """`run(...)`: the first time `plain(...)`, from the second time on the function `write()` returns
    (made then), which does the same. Writing costs more than running a few times, so nothing that
    runs once is written out."""

    __slots__ = ("run", "_plain", "_writer")

    def __init__(self, plain: Callable, write: Callable[[], Callable]):
        self._plain, self._writer = plain, write
        self.run = self._first

    def _first(self, *arguments: Any) -> Any:
        self.run = self._second
        return self._plain(*arguments)

    def _second(self, *arguments: Any) -> Any:
        run = self.run = self._writer()
        return run(*arguments)


class StepProgram(Staged):
    """`steps` as one function of nothing: `program.run()` runs them all, reporting a failing step
    through `failed` with its node, as run_steps does."""

    __slots__ = ("steps", "context", "failed")

    def __init__(self, steps: Steps, context, failed: Failed):
        self.steps, self.context, self.failed = steps, context, failed
        super().__init__(partial(run_steps, steps, context, failed), self._written)

    def _written(self) -> Callable:
        source = Source()
        source.program(self)
        return source.compile().run


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

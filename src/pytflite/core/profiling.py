"""The profiler interface of the runtime (tflite::Profiler): what it calls on `context.profiler`.

A profiler set on a subgraph's context switches its invoke to the careful loop, which reports every node
it runs with `begin_event` / `end_event`; the normal path stays untouched and pays nothing. Implementations
live above the runtime: the Profiler and its summary tables (tools/profiler.py), the DEBUG tracer
(debug.py), the compare tool's recorder.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from typing import Any


class EventType(enum.IntFlag):
    """tflite::Profiler::EventType."""

    DEFAULT = 1
    OPERATOR_INVOKE_EVENT = 2
    DELEGATE_OPERATOR_INVOKE_EVENT = 4
    DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT = 8
    GENERAL_RUNTIME_INSTRUMENTATION_EVENT = 16


class ProfilerHooks:
    """What the runtime calls on `context.profiler`: `begin_event(tag, event_type, node_index,
    subgraph_index) -> handle` and `end_event(handle)` around every node it runs, `add_event` for an
    event timed elsewhere; delegate kernels use `delegate_op_event`. Subclasses implement begin/end."""

    force_delegate_node_profiling = False  # True: time PER_OPERATOR_PROFILING delegate nodes as a whole

    def begin_event(self, tag: str, event_type: int, metadata1: int = 0, metadata2: int = 0) -> int:
        raise NotImplementedError

    def end_event(self, handle: int) -> None:
        raise NotImplementedError

    def add_event(
        self, tag: str, event_type: int, elapsed_us: float, metadata1: int = 0, metadata2: int = 0
    ) -> None:
        """An event timed elsewhere (e.g. on an accelerator); ignored unless a subclass records it."""

    @contextlib.contextmanager
    def delegate_op_event(self, tag: str, node_index: int, subgraph_index: int = 0) -> Iterator[None]:
        """For delegate kernels: time one op they run, reported among the graph's own nodes
        (DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT)."""
        handle = self.begin_event(
            tag, EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT, node_index, subgraph_index
        )
        try:
            yield
        finally:
            self.end_event(handle)

    def attach(self, interpreter: Any) -> None:
        """Set these hooks on every subgraph of `interpreter` (control flow runs the others)."""
        for subgraph in interpreter.subgraphs:
            subgraph.context.profiler = self

    def detach(self, interpreter: Any) -> None:
        for subgraph in interpreter.subgraphs:
            if subgraph.context.profiler is self:
                subgraph.context.profiler = None

    @contextlib.contextmanager
    def attached(self, interpreter: Any) -> Iterator[ProfilerHooks]:
        self.attach(interpreter)
        try:
            yield self
        finally:
            self.detach(interpreter)

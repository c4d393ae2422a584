"""Op-level profiling: a Profiler for `context.profiler` and benchmark_model's summary tables.

Setting a profiler on a subgraph's context switches its invoke to the careful loop, which times every
node with `begin_event` / `end_event` (the normal path stays untouched and pays nothing). A delegate
whose flags ask for PER_OPERATOR_PROFILING is not timed as one node; its kernel reports the ops it runs
itself, through `profiler.delegate_op_event(...)`:

    profiler = Profiler()
    profiler.attach(interpreter)
    for _ in range(10):
        with profiler.run():
            interpreter.invoke()
    summary = ProfileSummary.from_profiler(profiler, interpreter)
    print(summary.text())          # "Run Order", "Top by Computation Time", "Summary by node type"
    summary.csv()                  # the same tables as CSV (benchmark_model's profiling_output_csv_file)

The tables follow TFLite's ProfileSummarizer + StatsCalculator: node type is the op name (plus "/" and
the registration's `profiling_string` when it has one), node name is the output tensor names and the node
index, times are averaged over runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterator
from typing import Any

from ..core.node import OPTIONAL_TENSOR
from ..core.profiling import EventType, ProfilerHooks


@dataclasses.dataclass
class ProfileEvent:
    """One timed event; metadata1 is the node index, metadata2 the subgraph index (as in TFLite)."""

    tag: str
    event_type: EventType
    metadata1: int
    metadata2: int
    begin_ns: int
    end_ns: int = 0

    @property
    def elapsed_us(self) -> float:
        return (self.end_ns - self.begin_ns) / 1e3


class Profiler(ProfilerHooks):
    """Collects timed events; `run()` groups the events of one invoke."""

    def __init__(self) -> None:
        self.pending: list[ProfileEvent] = []
        self.runs: list[list[ProfileEvent]] = []

    def begin_event(self, tag: str, event_type: int, metadata1: int = 0, metadata2: int = 0) -> int:
        self.pending.append(
            ProfileEvent(tag, EventType(event_type), metadata1, metadata2, time.perf_counter_ns())
        )
        return len(self.pending) - 1

    def end_event(self, handle: int) -> None:
        self.pending[handle].end_ns = time.perf_counter_ns()

    def add_event(
        self, tag: str, event_type: int, elapsed_us: float, metadata1: int = 0, metadata2: int = 0
    ) -> None:
        """Record an event timed elsewhere (e.g. on an accelerator), ending now."""
        end = time.perf_counter_ns()
        self.pending.append(
            ProfileEvent(tag, EventType(event_type), metadata1, metadata2, end - int(elapsed_us * 1e3), end)
        )

    # --- for users --------------------------------------------------------------------------------

    def end_run(self) -> list[ProfileEvent]:
        """Close the current run: its events move from `pending` to `runs`."""
        events, self.pending = self.pending, []
        if events:
            self.runs.append(events)
        return events

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        try:
            yield
        finally:
            self.end_run()

    def reset(self) -> None:
        self.pending, self.runs = [], []


# --- statistics -----------------------------------------------------------------------------------


class Stat:
    """Running count / first / newest / min / max / mean / std of a series (tensorflow::Stat)."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def sum(self) -> float:
        return math.fsum(self.values)

    @property
    def avg(self) -> float:
        return self.sum / self.count if self.values else 0.0

    @property
    def std(self) -> float:
        if len(self.values) < 2:
            return 0.0
        mean = self.avg
        return math.sqrt(math.fsum((v - mean) ** 2 for v in self.values) / len(self.values))

    def percentile(self, q: float) -> float:
        ordered = sorted(self.values)
        if not ordered:
            return 0.0
        return ordered[min(len(ordered) - 1, int(q / 100.0 * len(ordered)))]

    def summary(self, percentiles: bool = False) -> str:
        """benchmark_model's one-line form: count=50 first=.. curr=.. min=.. max=.. avg=.. std=.."""
        if not self.values:
            return "count=0"
        v = self.values
        line = (
            f"count={len(v)} first={v[0]:.0f} curr={v[-1]:.0f} min={min(v):.0f} max={max(v):.0f} "
            f"avg={self.avg:.6g} std={self.std:.0f}"
        )
        if percentiles:
            line += (
                f" p5={self.percentile(5):.0f} median={self.percentile(50):.0f} p95={self.percentile(95):.0f}"
            )
        return line


@dataclasses.dataclass
class NodeDetail:
    """One row of the tables: a node (or a delegate's op) over all runs."""

    name: str
    type: str
    run_order: int
    node_index: int | None = None  # the node's index in its subgraph (None: not a node of the model's)
    start_us: Stat = dataclasses.field(default_factory=Stat)
    elapsed_us: Stat = dataclasses.field(default_factory=Stat)
    times_called: int = 0


@dataclasses.dataclass
class TypeRow:
    """One row of "Summary by node type"."""

    type: str
    count: int
    avg_ms: float
    percent: float
    cdf_percent: float
    times_called: int


class StatsTable:
    """The per-node statistics of one subgraph (or of a delegate's internals): tensorflow::StatsCalculator."""

    def __init__(self) -> None:
        self.details: dict[str, NodeDetail] = {}
        self.run_total_us = Stat()

    @property
    def num_runs(self) -> int:
        return max(self.run_total_us.count, 1)

    def add_node(
        self,
        name: str,
        node_type: str,
        run_order: int,
        start_us: float,
        elapsed_us: float,
        node_index: int | None = None,
    ) -> None:
        detail = self.details.get(name)
        if detail is None:
            detail = self.details[name] = NodeDetail(name, node_type, run_order, node_index)
        detail.start_us.add(start_us)
        detail.elapsed_us.add(elapsed_us)
        detail.times_called += 1

    def by_run_order(self) -> list[NodeDetail]:
        return sorted(self.details.values(), key=lambda d: d.run_order)

    def by_time(self) -> list[NodeDetail]:
        return sorted(self.details.values(), key=lambda d: (-d.elapsed_us.avg, d.run_order))

    def by_type(self) -> list[TypeRow]:
        """Time per run summed by node type, largest first, with percentages of the total."""
        count: dict[str, int] = {}
        per_run_us: dict[str, float] = {}
        called: dict[str, int] = {}
        for detail in self.details.values():
            count[detail.type] = count.get(detail.type, 0) + 1
            per_run_us[detail.type] = per_run_us.get(detail.type, 0.0) + detail.elapsed_us.sum / self.num_runs
            called[detail.type] = called.get(detail.type, 0) + detail.times_called // self.num_runs
        total = sum(per_run_us.values()) or 1.0
        rows, cdf = [], 0.0
        for node_type in sorted(per_run_us, key=lambda t: (-per_run_us[t], t)):
            percent = per_run_us[node_type] * 100.0 / total
            cdf += percent
            rows.append(
                TypeRow(
                    node_type, count[node_type], per_run_us[node_type] / 1e3, percent, cdf, called[node_type]
                )
            )
        return rows

    # --- text ----------------------------------------------------------------------------------

    def _node_rows(self, details: list[NodeDetail], csv: bool) -> list[str]:
        total = self.run_total_us.sum or 1.0
        lines, cumulative = [], 0.0
        for d in details:
            cumulative += d.elapsed_us.sum
            fields = (
                d.type,
                d.start_us.avg / 1e3,
                d.elapsed_us.values[0] / 1e3,
                d.elapsed_us.avg / 1e3,
                d.elapsed_us.sum * 100.0 / total,
                cumulative * 100.0 / total,
                0.0,
                d.times_called // self.num_runs,
                d.name,
            )
            if csv:
                lines.append("{}, {:.3f}, {:.3f}, {:.3f}, {:.3f}%, {:.3f}%, {:.3f}, {}, {}".format(*fields))
            else:
                lines.append(
                    "\t{:>24}\t{:>17.3f}\t{:>9.3f}\t{:>9.3f}\t{:>7.3f}%\t{:>7.3f}%\t{:>10.3f}\t{:>9}\t{}".format(
                        *fields
                    )
                )
        return lines

    def _table(self, title: str, details: list[NodeDetail], csv: bool) -> str:
        lines = [f"============================== {title} =============================="]
        if csv:
            lines.append("node type, start, first, avg_ms, %, cdf%, mem KB, times called, name")
        else:
            lines.append(
                "\t{:>24}\t{:>17}\t{:>9}\t{:>9}\t{:>8}\t{:>8}\t{:>10}\t{:>9}\t[Name]".format(
                    "[node type]",
                    "[start]",
                    "[first]",
                    "[avg ms]",
                    "[%]",
                    "[cdf%]",
                    "[mem KB]",
                    "[times called]",
                )
            )
        return "\n".join([*lines, *self._node_rows(details, csv), ""]) + "\n"

    def _type_table(self, csv: bool) -> str:
        lines = [
            f"Number of nodes executed: {len(self.details)}",
            "============================== Summary by node type ==============================",
        ]
        if csv:
            lines.append("node type, count, avg_ms, avg %, cdf %, mem KB, times called")
        else:
            lines.append(
                "\t{:>24}\t{:>9}\t{:>10}\t{:>11}\t{:>11}\t{:>10}\t{:>10}".format(
                    "[Node type]", "[count]", "[avg ms]", "[avg %]", "[cdf %]", "[mem KB]", "[times called]"
                )
            )
        for row in self.by_type():
            if csv:
                lines.append(
                    f"{row.type}, {row.count}, {row.avg_ms:.3f}, {row.percent:.3f}%, {row.cdf_percent:.3f}%, "
                    f"0.000, {row.times_called}"
                )
            else:
                lines.append(
                    f"\t{row.type:>24}\t{row.count:>9}\t{row.avg_ms:>10.3f}\t{row.percent:>10.3f}%"
                    f"\t{row.cdf_percent:>10.3f}%\t{0.0:>10.3f}\t{row.times_called:>9}"
                )
        return "\n".join([*lines, "", ""])

    def output_string(self, csv: bool = False, top: int = 10) -> str:
        return (
            self._table("Run Order", self.by_run_order(), csv)
            + self._table("Top by Computation Time", self.by_time()[:top], csv)
            + self._type_table(csv)
        )

    def short_summary(self) -> str:
        return (
            f"Timings (microseconds): {self.run_total_us.summary()}\n"
            "Memory (bytes): count=0\n"
            f"{len(self.details)} nodes observed\n"
        )


class ProfileSummary:
    """Events of many runs turned into TFLite's operator-wise tables (tflite::profiling::ProfileSummarizer)."""

    def __init__(self, interpreter: Any):
        self._interpreter = interpreter
        self.subgraphs: dict[int, StatsTable] = {0: StatsTable()}
        self.delegate = StatsTable()  # ops a delegate reported about its internals (DelegateOpInvoke)

    @classmethod
    def from_profiler(cls, profiler: Profiler, interpreter: Any) -> ProfileSummary:
        summary = cls(interpreter)
        for events in [*profiler.runs, profiler.pending]:
            summary.add_run(events)
        return summary

    def add_run(self, events: list[ProfileEvent]) -> None:
        if not events:
            return
        base_ns = min(e.begin_ns for e in events)
        totals: dict[int, float] = {}
        delegate_total = 0.0
        for run_order, event in enumerate(events):
            table = self.subgraphs.setdefault(event.metadata2, StatsTable())
            start_us = (event.begin_ns - base_ns) / 1e3
            elapsed = event.elapsed_us
            if event.event_type == EventType.OPERATOR_INVOKE_EVENT:
                node_type, outputs = self._operator_details(event)
                table.add_node(
                    f"{outputs}:{event.metadata1}", node_type, run_order, start_us, elapsed, event.metadata1
                )
            elif event.event_type == EventType.DELEGATE_OPERATOR_INVOKE_EVENT:
                name = f"Delegate/{event.tag}:{event.metadata1}"
                self.delegate.add_node(name, "DelegateOpInvoke", run_order, start_us, elapsed)
                delegate_total += elapsed
                continue
            elif event.event_type == EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT:
                table.add_node(
                    f"Delegate/{event.tag}:{event.metadata1}",
                    event.tag,
                    run_order,
                    start_us,
                    elapsed,
                    event.metadata1,  # the delegated node's own index
                )
            else:
                table.add_node(f"{event.tag}/{event.metadata2}", event.tag, run_order, start_us, elapsed)
            totals[event.metadata2] = totals.get(event.metadata2, 0.0) + elapsed
        for index, total in totals.items():
            self.subgraphs[index].run_total_us.add(total)
        if delegate_total:
            self.delegate.run_total_us.add(delegate_total)

    def _operator_details(self, event: ProfileEvent) -> tuple[str, str]:
        """(node type, "[output names]") of a node, with its registration's profiling string."""
        subgraphs = self._interpreter.subgraphs
        if not 0 <= event.metadata2 < len(subgraphs):
            return event.tag, "[]"
        subgraph = subgraphs[event.metadata2]
        node, registration = subgraph.nodes[event.metadata1]
        node_type = event.tag
        if registration.profiling_string is not None:
            extra = registration.profiling_string(subgraph.context, node)
            if extra:
                node_type += "/" + str(extra)
        names = [subgraph.tensors[t].name if t != OPTIONAL_TENSOR else "" for t in node.outputs]
        names = [name or "Unknown" for name in names]
        return node_type, "[" + ", ".join(names) + "]"

    # --- output ---------------------------------------------------------------------------------

    def _subgraph_name(self, index: int) -> str:
        subgraphs = self._interpreter.subgraphs
        return subgraphs[index].name if 0 <= index < len(subgraphs) else ""

    def text(self, csv: bool = False) -> str:
        """All tables, as benchmark_model prints them after "Operator-wise Profiling Info"."""
        parts = []
        shown = [i for i in sorted(self.subgraphs) if self.subgraphs[i].details] or [0]
        several = any(index != 0 for index in shown)
        for index in shown:
            table = self.subgraphs[index]
            if several:
                if index == 0:
                    parts.append(f"Primary graph (name: {self._subgraph_name(0)}) profile:\n")
                else:
                    parts.append(f"Subgraph (index: {index}, name: {self._subgraph_name(index)}) profile:\n")
            parts.append(table.output_string(csv))
            if index != 0:
                parts.append(f"Subgraph (index: {index}, name: {self._subgraph_name(index)}) ")
            parts.append(table.short_summary() + "\n")
        if self.delegate.details:
            parts.append("Delegate internal: \n")
            parts.append(self.delegate.output_string(csv))
            parts.append(self.delegate.short_summary() + "\n")
        return "".join(parts)

    def csv(self) -> str:
        return self.text(csv=True)

    def by_node_type(self, subgraph_index: int = 0) -> list[TypeRow]:
        return self.subgraphs.get(subgraph_index, StatsTable()).by_type()


def profile_interpreter(interpreter: Any, runs: int = 1, warmup: int = 1) -> ProfileSummary:
    """Invoke `runs` times with a profiler attached (after `warmup` unprofiled invokes) and summarize.

    Inputs must already be set; the profiler is detached afterwards, restoring the fast path."""
    for _ in range(warmup):
        interpreter.invoke()
    profiler = Profiler()
    profiler.attach(interpreter)
    try:
        for _ in range(runs):
            with profiler.run():
                interpreter.invoke()
    finally:
        profiler.detach(interpreter)
    return ProfileSummary.from_profiler(profiler, interpreter)

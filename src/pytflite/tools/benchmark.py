"""`pytflite benchmark`: TFLite's benchmark_model for pytflite.

The protocol and flags are benchmark_model's: warm-up runs (at least --warmup_runs and
--warmup_min_secs), then timed runs (at least --num_runs and --min_secs, stopping at --max_secs), each
reported as `count= first= curr= min= max= avg= std=`; --enable_op_profiling prints the operator-wise
tables. On top: min/median/mean/p90/max, the arena and peak RSS, a progress bar, and --compare-litert,
which times ai-edge-litert (builtin kernels and XNNPACK) on the same inputs and prints the ratios.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .format import human_bytes, table
from .inputs import parse_range, parse_shapes, resolve_inputs
from .loading import ToolError, build_interpreter, delegate_from_args
from .profiler import Profiler, ProfileSummary, Stat
from .session import Session, run_reference

if TYPE_CHECKING:
    from ..core.arena import MemoryReport
    from ..interpreter import Interpreter


def _proc_status_bytes(field: str) -> int | None:
    """A size field of /proc/self/status (Linux), in bytes; None where unavailable."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def rss_bytes() -> int:
    """Resident set size now (Linux /proc; 0 where unavailable)."""
    return _proc_status_bytes("VmRSS") or 0


def peak_rss_bytes() -> int:
    """This process's peak resident set size: Linux's VmHWM, else getrusage's (which Linux carries over
    from the parent across fork and exec, so that a tool started by a large process would report its
    parent's peak)."""
    peak = _proc_status_bytes("VmHWM")
    if peak is not None:
        return peak
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class Progress:
    """A one-line progress bar on stderr, redrawn at most ten times a second."""

    def __init__(self, enabled: bool, label: str, runs: int, min_secs: float, width: int = 30):
        self.enabled, self.label, self.runs, self.min_secs, self.width = enabled, label, runs, min_secs, width
        self._last = 0.0

    def update(self, done: int, elapsed: float, final: bool = False) -> None:
        if not self.enabled or (not final and time.perf_counter() - self._last < 0.1):
            return
        self._last = time.perf_counter()
        fraction = max(
            done / self.runs if self.runs > 0 else 1.0, elapsed / self.min_secs if self.min_secs > 0 else 1.0
        )
        filled = int(self.width * min(fraction, 1.0))
        bar = "#" * filled + "." * (self.width - filled)
        sys.stderr.write(f"\r{self.label} [{bar}] {done} runs {elapsed:6.2f} s")
        if final:
            sys.stderr.write("\n")
        sys.stderr.flush()


def timed_runs(
    invoke: Callable[[], None],
    min_runs: int,
    min_secs: float,
    max_secs: float,
    run_delay: float = -1.0,
    progress: Progress | None = None,
    on_run: Callable[[], Any] | None = None,
) -> Stat:
    """benchmark_model's loop: run while (fewer than min_runs or under min_secs) and within max_secs."""
    print(
        f"Running benchmark for at least {min_runs} iterations and at least {min_secs:g} seconds but terminate "
        f"if exceeding {max_secs:g} seconds."
    )
    stat = Stat()
    start = time.perf_counter()
    now = start
    while (stat.count < min_runs or now - start < min_secs) and now - start <= max_secs:
        begin = time.perf_counter()
        invoke()
        end = time.perf_counter()
        stat.add((end - begin) * 1e6)
        if on_run is not None:
            on_run()
        if run_delay > 0:
            time.sleep(run_delay)
        now = time.perf_counter()
        if progress is not None:
            progress.update(stat.count, now - start)
    if progress is not None:
        progress.update(stat.count, time.perf_counter() - start, final=True)
    print(stat.summary(percentiles=True))
    print()
    return stat


def distribution_ms(stat: Stat) -> dict[str, float]:
    values = np.array(stat.values) / 1e3
    if values.size == 0:
        return {k: float("nan") for k in ("min", "median", "mean", "p90", "max")}
    return {
        "min": float(values.min()),
        "median": float(np.median(values)),
        "mean": float(values.mean()),
        "p90": float(np.percentile(values, 90)),
        "max": float(values.max()),
    }


def _apply_shapes(session: Session, names_text: str, shapes_text: str) -> None:
    shapes = parse_shapes(shapes_text)
    if not shapes:
        return
    current = [list(d["shape"]) for d in session.input_details]
    names = [n for n in names_text.split(",") if n] if names_text else session.input_names[: len(shapes)]
    if len(names) != len(shapes):
        raise ToolError(
            f"--input_layer names {len(names)} inputs but --input_layer_shape gives {len(shapes)} shapes"
        )
    for name, shape in zip(names, shapes):
        candidates = [
            i for i, d in enumerate(session.input_details) if name in (d["name"], session.input_names[i])
        ]
        if not candidates:
            raise ToolError(f"--input_layer: the model has no input {name!r}")
        current[candidates[0]] = shape
    try:
        session.allocate(current)
    except (ValueError, RuntimeError) as error:
        raise ToolError(f"cannot resize the inputs to {shapes_text}: {str(error).strip()}") from None


def _litert_times(args: Any, session: Session, values: list[np.ndarray]) -> list[dict[str, Any]]:
    """Time ai-edge-litert's builtin kernels and XNNPACK on the same inputs, with the same protocol."""
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError:
        print("--compare-litert: ai-edge-litert is not installed (pip install ai-edge-litert); skipped")
        return []
    if args.custom_ops:
        print("--compare-litert: LiteRT cannot run Python custom ops; skipped")
        return []
    results = []
    threads = args.num_threads or 1
    model = Path(args.model).read_bytes()
    reference_outputs = [v for _, v in session.outputs()]
    for label, resolver in (
        ("LiteRT builtin", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"),
        ("LiteRT XNNPACK", "AUTO"),
    ):
        try:
            other = litert.Interpreter(
                model_content=model,
                experimental_op_resolver_type=getattr(litert.OpResolverType, resolver),
                num_threads=threads,
            )
            invoke, outputs = run_reference(other, session, values)
        except Exception as error:  # LiteRT's own failures: report, keep the pytflite results
            print(f"--compare-litert: {label} failed: {str(error).strip().splitlines()[0]}")
            continue
        print(f"{label}:")
        for _ in range(max(args.warmup_runs, 1)):
            invoke()
        stat = timed_runs(invoke, args.num_runs, args.min_secs, args.max_secs, args.run_delay)
        difference = max(
            (
                float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
                for a, b in zip(reference_outputs, outputs)
                if a.shape == b.shape and a.dtype.kind in "fiub"
            ),
            default=float("nan"),
        )
        results.append({"runtime": label, **distribution_ms(stat), "max_abs_output_difference": difference})
    return results


def _print_settings(args: Any, model: str) -> None:
    """benchmark_model's opening lines, so that a log shows the protocol its timings come from."""
    print("STARTING!")
    print(f"Min num runs: [{args.num_runs}]")
    print(f"Min runs duration (seconds): [{args.min_secs:g}]")
    print(f"Max runs duration (seconds): [{args.max_secs:g}]")
    print(f"Num threads: [{args.num_threads if args.num_threads is not None else -1}]")
    print(f"Min warmup runs: [{args.warmup_runs}]")
    print(f"Min warmup runs duration (seconds): [{args.warmup_min_secs:g}]")
    print(f"Graph: [{model}]")
    if args.enable_op_profiling:
        print("Enable op profiling: [1]")
    if args.max_delegated_partitions is not None:
        print(f"Max number of delegated partitions: [{args.max_delegated_partitions}]")
    if args.min_nodes_per_partition is not None:
        print(f"Min nodes per partition: [{args.min_nodes_per_partition}]")


def _load(args: Any, model: str) -> tuple[Interpreter, Session, float]:
    """Build, resize and allocate the interpreter: what benchmark_model times as the session's Init (us)."""
    init_begin = time.perf_counter()
    interpreter = build_interpreter(
        model, custom_ops=args.custom_ops, delegates=delegate_from_args(args), num_threads=args.num_threads
    )
    session = Session(interpreter, args.signature)
    _apply_shapes(session, args.input_layer, args.input_layer_shape)
    session.allocate()
    return interpreter, session, (time.perf_counter() - init_begin) * 1e6


def _report_loading(args: Any, model: str, interpreter: Interpreter, session: Session, init_us: float) -> int:
    """What loading gave (size, init time, the nodes the delegates took); returns the partition count."""
    print(f"Loaded model {model}")
    print(f"The input model file size (MB): {os.path.getsize(model) / 1e6:g}")
    print(f"Initialized session in {init_us / 1e3:.3f}ms.")
    partitions = interpreter.delegate_partitions(session.subgraph_index)
    if args.delegate:
        delegated = sum(len(p.nodes) for p in partitions)
        total = len(session.subgraph.execution_plan) - len(partitions) + delegated
        print(
            f"Applied {', '.join(args.delegate)}: {delegated} nodes delegated out of {total} nodes "
            f"with {len(partitions)} partitions."
        )
    return len(partitions)


def _set_inputs(args: Any, session: Session) -> list[np.ndarray]:
    """Set the inputs once: every run reuses them, and --compare-litert feeds LiteRT the same values."""
    values = resolve_inputs(
        args.input, session.input_details, session.input_names, parse_range(args.image_range), args.seed
    )
    try:
        session.set_inputs(values)
    except ValueError as error:
        raise ToolError(str(error)) from None
    return values


def _time_invokes(
    args: Any, interpreter: Interpreter, session: Session
) -> tuple[Stat, Stat, Profiler | None]:
    """Warm-up, then the timed runs; the op profiler (--enable_op_profiling) sees the timed runs only."""
    show = args.progress == "always" or (args.progress == "auto" and sys.stderr.isatty())
    try:
        warmup = timed_runs(
            session.invoke,
            args.warmup_runs,
            args.warmup_min_secs,
            args.max_secs,
            progress=Progress(show, "warm-up", args.warmup_runs, args.warmup_min_secs),
        )
        profiler = None
        if args.enable_op_profiling:
            profiler = Profiler()
            profiler.attach(interpreter)
        inference = timed_runs(
            session.invoke,
            args.num_runs,
            args.min_secs,
            args.max_secs,
            args.run_delay,
            Progress(show, "runs", args.num_runs, args.min_secs),
            on_run=profiler.end_run if profiler is not None else None,
        )
    except RuntimeError as error:
        raise ToolError(f"invoke failed: {str(error).strip()}") from None
    if profiler is not None:
        profiler.detach(interpreter)
    return warmup, inference, profiler


def _print_timings(
    init_us: float, warmup: Stat, inference: Stat, rss: tuple[int, int, int]
) -> dict[str, float]:
    """benchmark_model's summary lines (rss: at the start, after init, at the end), then the invoke times'
    distribution in ms, which the LiteRT ratios and the JSON reuse."""
    rss_start, rss_init, rss_end = rss
    print(
        f"Inference timings in us: Init: {init_us:.0f}, First inference: {(warmup.values or inference.values or [0])[0]:.0f}, "
        f"Warmup (avg): {warmup.avg:.6g}, Inference (avg): {inference.avg:.6g}"
    )
    print(
        "Memory footprint delta from the start of the tool (MB): "
        f"init={(rss_init - rss_start) / 2**20:.4g} overall={(rss_end - rss_start) / 2**20:.4g}"
    )
    times = distribution_ms(inference)
    print()
    print(
        table(
            [["pytflite", *(f"{times[k]:.3f}" for k in ("min", "median", "mean", "p90", "max"))]],
            header=["invoke ms", "min", "median", "mean", "p90", "max"],
        )
    )
    return times


def _print_memory(interpreter: Interpreter, session: Session) -> MemoryReport:
    """Where the memory goes (arena, constants, dynamic tensors, peak RSS); returns the MemoryReport."""
    memory = interpreter.memory_report(session.subgraph_index)
    print(
        f"Memory: arena {human_bytes(memory.arena_bytes)} (lower bound {human_bytes(memory.arena_lower_bound_bytes)}), "
        f"persistent {human_bytes(memory.persistent_arena_bytes)}, constants {human_bytes(memory.constant_bytes)} "
        f"(mapped from the file), dynamic {human_bytes(memory.dynamic_bytes)}; "
        f"peak RSS {human_bytes(peak_rss_bytes())}"
    )
    return memory


def _print_profile(args: Any, profiler: Profiler, interpreter: Interpreter) -> None:
    """--enable_op_profiling's operator-wise tables, and the CSV --profiling_output_csv_file asks for."""
    summary = ProfileSummary.from_profiler(profiler, interpreter)
    print()
    print("Operator-wise Profiling Info for Regular Benchmark Runs:")
    print(summary.text())
    if args.profiling_output_csv_file:
        Path(args.profiling_output_csv_file).write_text(summary.csv())
        print(f"wrote {args.profiling_output_csv_file}")


def _compare_litert(
    args: Any, session: Session, values: list[np.ndarray], times: dict[str, float]
) -> list[dict[str, Any]]:
    """--compare-litert: time LiteRT on the same inputs and print pytflite's median against each runtime's."""
    print()
    results = _litert_times(args, session, values)
    if results:
        rows = [["pytflite", *(f"{times[k]:.3f}" for k in ("median", "mean")), "1.00x", "-"]]
        for result in results:
            rows.append(
                [
                    result["runtime"],
                    f"{result['median']:.3f}",
                    f"{result['mean']:.3f}",
                    f"{times['median'] / result['median']:.2f}x",
                    f"{result['max_abs_output_difference']:.3g}",
                ]
            )
        print(table(rows, header=["runtime", "median ms", "mean ms", "pytflite / it", "max |out diff|"]))
    return results


def command(args: Any) -> int:
    model = args.graph or args.model
    args.model = model
    _print_settings(args, model)

    rss_start = rss_bytes()
    interpreter, session, init_us = _load(args, model)
    rss_init = rss_bytes()
    partition_count = _report_loading(args, model, interpreter, session, init_us)
    values = _set_inputs(args, session)
    warmup, inference, profiler = _time_invokes(args, interpreter, session)
    rss_end = rss_bytes()

    times = _print_timings(init_us, warmup, inference, (rss_start, rss_init, rss_end))
    memory = _print_memory(interpreter, session)
    if profiler is not None:
        _print_profile(args, profiler, interpreter)
    litert_results = _compare_litert(args, session, values, times) if args.compare_litert else []

    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "model": model,
                    "init_us": init_us,
                    "runs": inference.count,
                    "invoke_ms": times,
                    "warmup_first_us": (warmup.values or [0])[0],
                    "arena_bytes": memory.arena_bytes,
                    "arena_lower_bound_bytes": memory.arena_lower_bound_bytes,
                    "peak_rss_bytes": peak_rss_bytes(),
                    "delegate_partitions": partition_count,
                    "litert": litert_results,
                    "median_ratio_vs": {r["runtime"]: times["median"] / r["median"] for r in litert_results},
                },
                indent=1,
            )
        )
    return 0

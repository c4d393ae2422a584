"""`pytflite profile`: per-operator times as benchmark_model's --enable_op_profiling prints them, as CSV,
as a PNG bar chart of time by node type, and as Model Explorer node data (model_explorer.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .chart import bar_chart_png
from .inputs import parse_range, resolve_inputs
from .loading import ToolError, build_interpreter, delegate_from_args
from .model_explorer import write_node_data
from .profiler import ProfileSummary, profile_interpreter
from .session import Session


def plot_by_node_type(summary: ProfileSummary, title: str, subgraph_index: int = 0) -> bytes:
    rows = summary.by_node_type(subgraph_index)
    return bar_chart_png([r.type for r in rows], [r.avg_ms for r in rows], title=title)


def command(args: Any) -> int:
    interpreter = build_interpreter(
        args.model,
        custom_ops=args.custom_ops,
        delegates=delegate_from_args(args),
        num_threads=args.num_threads,
    )
    session = Session(interpreter, args.signature)
    session.allocate()
    values = resolve_inputs(
        args.input, session.input_details, session.input_names, parse_range(args.image_range), args.seed
    )
    session.set_inputs(values)
    model = interpreter.model
    if session.subgraph_index != 0:
        interpreter = _SignatureView(interpreter, session)
    try:
        summary = profile_interpreter(interpreter, runs=max(1, args.num_runs), warmup=args.warmup_runs)
    except RuntimeError as error:
        raise ToolError(f"invoke failed: {str(error).strip()}") from None
    print(f"Profiled {args.model}: {max(1, args.num_runs)} runs after {args.warmup_runs} warm-up run(s)")
    print("Operator-wise Profiling Info for Regular Benchmark Runs:")
    print(summary.text(), end="")
    if args.csv:
        Path(args.csv).write_text(summary.csv())
        print(f"wrote {args.csv}")
    if args.plot:
        name = Path(args.model).stem
        Path(args.plot).write_bytes(
            plot_by_node_type(summary, f"time by node type: {name} (avg ms per run)", session.subgraph_index)
        )
        print(f"wrote {args.plot}")
    if args.model_explorer:
        written = write_node_data(summary, model, args.model_explorer)
        paths = ",".join(map(str, written))
        print(f"wrote {paths}; to see them: model-explorer {args.model} --node_data_paths={paths}")
    return 0


class _SignatureView:
    """What profile_interpreter needs (subgraphs, invoke) for a signature's subgraph."""

    def __init__(self, interpreter: Any, session: Session):
        self.subgraphs = interpreter.subgraphs
        self.invoke = session.invoke

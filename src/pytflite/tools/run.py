"""`pytflite run`: invoke a model once on given (or random) inputs and show what came out.

Each output is summarized (dtype, shape, min/max/mean/std); an output that looks like a classifier's
scores (one row of at least two classes) also gets its top-k, with labels from `--labels` if given.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ..debug import DebugTracer, array_summary, level_from_env
from .inputs import parse_range, resolve_inputs
from .loading import ToolError, build_interpreter, delegate_from_args
from .session import Session


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k best classes of a [1, N] or [N] score vector, best first (ties: lower index first)."""
    flat = scores.reshape(-1).astype(np.float64)
    order = np.argsort(-flat, kind="stable")[:k]
    return [(int(i), float(flat[i])) for i in order]


def looks_like_scores(value: np.ndarray) -> bool:
    """A classifier's output: one row ([1, N]) of at least two numeric scores."""
    return value.dtype.kind in "fiu" and value.ndim == 2 and value.shape[0] == 1 and value.shape[1] >= 2


def dequantize(value: np.ndarray, detail: dict[str, Any]) -> np.ndarray:
    scale, zero_point = detail["quantization"]
    if scale and value.dtype.kind in "iu":
        return (value.astype(np.float64) - zero_point) * scale
    return value


def read_labels(path: str | None) -> list[str]:
    if not path:
        return []
    return [line.strip() for line in Path(path).read_text().splitlines()]


def command(args: Any) -> int:
    started = time.perf_counter()
    interpreter = build_interpreter(
        args.model,
        custom_ops=args.custom_ops,
        delegates=delegate_from_args(args),
        num_threads=args.num_threads,
    )
    loaded = time.perf_counter()
    session = Session(interpreter, args.signature)
    session.allocate()
    details = session.input_details
    values = resolve_inputs(
        args.input, details, session.input_names, parse_range(args.image_range), args.seed
    )
    session.set_inputs(values)
    allocated = time.perf_counter()

    subgraph = session.subgraph
    delegates = interpreter.delegate_partitions(session.subgraph_index)
    print(
        f"model: {args.model} ({interpreter.num_subgraphs()} subgraph(s), {len(subgraph.execution_plan)} nodes"
        + (f" after delegation into {len(delegates)} partition(s)" if delegates else "")
        + (f", signature {args.signature!r}" if args.signature else "")
        + ")"
    )
    for name, value in zip(session.input_names, values):
        print(f"input  {name}: {array_summary(value)}")

    level = args.debug if args.debug is not None else level_from_env()
    tracer = DebugTracer(interpreter, level).attach() if level > 0 else None
    invoke_times = []
    try:
        for _ in range(max(1, args.repeat)):
            begin = time.perf_counter()
            session.invoke()
            invoke_times.append(time.perf_counter() - begin)
            if tracer is not None:  # trace the first invoke only
                tracer.detach()
                tracer = None
    except RuntimeError as error:
        raise ToolError(f"invoke failed: {str(error).strip()}") from None

    outputs = session.outputs()
    output_details = session.output_details
    labels = read_labels(args.labels)
    for (name, value), detail in zip(outputs, output_details):
        print(f"output {name}: {array_summary(value)}")
        if args.top_k > 0 and looks_like_scores(value):
            scores = dequantize(value, detail)
            ranked = ", ".join(
                f"{index}{' ' + repr(labels[index]) if index < len(labels) else ''} ({score:.4g})"
                for index, score in top_k(scores, args.top_k)
            )
            print(f"  top-{min(args.top_k, value.shape[-1])}: {ranked}")
    if args.save:
        np.savez(args.save, **{f"output_{i}": v for i, (_, v) in enumerate(outputs)})
        print(f"saved outputs to {args.save}")
    times_ms = np.array(invoke_times) * 1e3
    timing = f"invoke {times_ms[0]:.3f} ms"
    if len(times_ms) > 1:
        timing = (
            f"invoke x{len(times_ms)}: first {times_ms[0]:.3f} ms, min {times_ms.min():.3f} ms, "
            f"median {np.median(times_ms):.3f} ms"
        )
    print(
        f"time: load {(loaded - started) * 1e3:.1f} ms, allocate {(allocated - loaded) * 1e3:.1f} ms, {timing}"
    )
    return 0

"""Time constructing an interpreter from a model file, pytflite against ai-edge-litert, in one run.

For every model of ../shared/corpus/public: the best of `--runs` constructions of
`Interpreter(model_path=...)` in pytflite (reading, verifying and building the subgraphs; kernels' init)
and in LiteRT (BUILTIN_WITHOUT_DEFAULT_DELEGATES, so no XNNPACK preparation is counted), then
`allocate_tensors()` on top, and the ratios. Prints the geometric mean of each ratio.

    .venv/bin/python benchmarks/bench_loading.py [--runs 20] [--models mobilenet_v2_f32,mlp]
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import time
from pathlib import Path

import pytflite

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "public"


def best_ms(make, runs: int, allocate: bool = False) -> float:
    """The fastest of `runs` calls of make() (and allocate_tensors() on what it made), in ms."""
    times = []
    for _ in range(runs):
        begin = time.perf_counter()
        interpreter = make()
        if allocate:
            interpreter.allocate_tensors()
        times.append(time.perf_counter() - begin)
    return min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
    args = parser.parse_args()
    from ai_edge_litert import interpreter as litert

    wanted = {m for m in args.models.split(",") if m}
    builtin = litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    ratios: dict[str, list[float]] = {"load": [], "load+allocate": []}
    print(
        f"{'model':28s} {'pytflite ms':>12s} {'LiteRT ms':>10s} {'ratio':>7s}   +allocate: pytflite / LiteRT"
    )
    for path in sorted(CORPUS.glob("*.tflite")):
        if wanted and path.stem not in wanted:
            continue
        ours = functools.partial(pytflite.Interpreter, model_path=str(path))
        theirs = functools.partial(
            litert.Interpreter, model_path=str(path), experimental_op_resolver_type=builtin
        )

        try:
            ours().allocate_tensors()
            theirs().allocate_tensors()
        except Exception as error:  # e.g. a custom op without its registration
            print(f"{path.stem:28s} skipped: {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        load = best_ms(ours, args.runs), best_ms(theirs, args.runs)
        full = (
            best_ms(ours, args.runs, allocate=True),
            best_ms(theirs, args.runs, allocate=True),
        )
        ratios["load"].append(load[0] / load[1])
        ratios["load+allocate"].append(full[0] / full[1])
        print(
            f"{path.stem:28s} {load[0]:12.2f} {load[1]:10.2f} {load[0] / load[1]:6.1f}x"
            f"   {full[0]:8.2f} / {full[1]:.2f} ms ({full[0] / full[1]:.1f}x)"
        )
    for what, values in ratios.items():
        if values:
            mean = math.exp(statistics.fmean(map(math.log, values)))
            print(f"geometric mean {what} pytflite/LiteRT over {len(values)} models: {mean:.1f}x")


if __name__ == "__main__":
    main()

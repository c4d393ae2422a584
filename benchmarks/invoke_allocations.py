"""Bytes each node allocates while it runs, over the corpus models that take the fast invoke path.

docs/architecture.md: invoke computes into memory prepared in advance. This measures how far that holds:
for every step of a model's check-free invoke list, the tracemalloc peak above the memory in use before
the step (NumPy reports its buffers to tracemalloc), summed per model and per op. LiteRT allocates nothing
at invoke, so the target is 0 and there is no ratio to print.

    .venv/bin/python benchmarks/invoke_allocations.py [--models mobilenet_v2_int8,small_cnn_int8]
"""

from __future__ import annotations

import argparse
import collections
import tracemalloc
from pathlib import Path

import numpy as np

import pytflite

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "public"


def transient_bytes(interpreter) -> list[tuple[str, int]] | None:
    """(op name, peak bytes above the start) per fast step of the primary subgraph; None without one."""
    subgraph = interpreter.subgraphs[0]
    steps = subgraph.runner.fast_steps
    if steps is None:
        return None
    found = []
    tracemalloc.start()
    try:
        for invoke, node in steps:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            invoke(subgraph.context, node)
            found.append((subgraph.nodes[node.index][1].op_name, tracemalloc.get_traced_memory()[1] - before))
    finally:
        tracemalloc.stop()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
    args = parser.parse_args()
    wanted = {m for m in args.models.split(",") if m}
    by_op: collections.Counter = collections.Counter()
    nodes: collections.Counter = collections.Counter()
    for path in sorted(CORPUS.glob("*.tflite")):
        data = np.load(path.with_suffix(".npz"))
        if (wanted and path.stem not in wanted) or "input_0" not in data.files:
            continue
        interpreter = pytflite.Interpreter(model_path=str(path), num_threads=1)
        try:
            interpreter.allocate_tensors()
        except RuntimeError as error:  # e.g. the Atan example's custom op, which needs its resolver
            print(f"{path.stem:24s} skipped: {str(error).splitlines()[0]}")
            continue
        for i, detail in enumerate(interpreter.get_input_details()):
            interpreter.set_tensor(detail["index"], data[f"input_{i}"])
        interpreter.invoke()  # warm: first-invoke caches are not the steady state
        found = transient_bytes(interpreter)
        if found is None:
            print(f"{path.stem:24s} (no fast path: careful loop)")
            continue
        for op, size in found:
            by_op[op] += size
            nodes[op] += size > 0
        print(f"{path.stem:24s} {sum(size for _, size in found) / 1024:9.1f} KiB per invoke")
    print("\nby op (KiB over the nodes that allocate):")
    for op, size in by_op.most_common(20):
        if size:
            print(f"  {op:28s} {size / 1024:9.1f} KiB over {nodes[op]} nodes")


if __name__ == "__main__":
    main()

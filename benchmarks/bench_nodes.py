"""Where an invoke's time goes, node by node: each check-free step of a corpus model timed alone.

For every subgraph with a check-free step list (core/plan_runner.py), each step is run `--calls` times on
the model's corpus inputs and its fastest call kept; the steps are summed per operator and the slowest
nodes listed, beside the whole model's median invoke time in pytflite and in LiteRT's builtin kernels
(BUILTIN_WITHOUT_DEFAULT_DELEGATES), measured in the same run, one thread.

    .venv/bin/python benchmarks/bench_nodes.py mobilenet_v2_int8 [--calls 200] [--top 10]
"""

from __future__ import annotations

import argparse
import collections
import json
import time

from bench_corpus import CORPUS, corpus_case, litert_interpreter, median_invoke_seconds, prepared

import pytflite


def fastest_call_us(step, context, node, calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        begin = time.perf_counter()
        step(context, node)
        best = min(best, time.perf_counter() - begin)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a corpus model's name")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--top", type=int, default=10, help="how many of the slowest nodes to list")
    args = parser.parse_args()
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    entry = next((e for e in manifest["models"] if e["name"] == args.model), None)
    if entry is None:
        raise SystemExit(f"no corpus model named {args.model}")
    case = corpus_case(entry)
    if isinstance(case, str):
        raise SystemExit(f"{args.model}: {case}")
    model, inputs = case
    ours = prepared(pytflite.Interpreter(model_content=model, num_threads=1), inputs)
    theirs = prepared(litert_interpreter(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", 1), inputs)
    ours_ms, theirs_ms = (median_invoke_seconds(i, 0.5) * 1e3 for i in (ours, theirs))
    print(
        f"{args.model}: invoke {ours_ms:.3f} ms, LiteRT builtin {theirs_ms:.3f} ms ({ours_ms / theirs_ms:.2f}x)"
    )
    by_op: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter = collections.Counter()
    nodes = []
    for subgraph in ours.subgraphs:
        runner = subgraph.runner
        if runner is None or runner.fast_steps is None:
            print(f"subgraph {subgraph.index}: no check-free step list (dynamic shapes), not timed")
            continue
        for step, node in runner.fast_steps:
            op = subgraph.nodes[node.index][1].op_name
            us = fastest_call_us(step, subgraph.context, node, args.calls)
            by_op[op] += us
            count[op] += 1
            shapes = [tuple(subgraph.tensors[t].shape) for t in node.inputs if t >= 0]
            nodes.append((us, subgraph.index, node.index, op, shapes))
    print(f"sum of the steps timed alone: {sum(by_op.values()):.1f} us")
    for op, us in sorted(by_op.items(), key=lambda item: -item[1]):
        print(f"  {op:<28}{us:9.1f} us over {count[op]} nodes")
    print(f"slowest {args.top} nodes:")
    for us, subgraph_index, node_index, op, shapes in sorted(nodes, reverse=True)[: args.top]:
        print(f"  {us:8.1f} us  subgraph {subgraph_index} node {node_index} {op} {shapes}")


if __name__ == "__main__":
    main()

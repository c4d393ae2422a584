"""Time pytflite against ai-edge-litert on the public corpus, in one run, with the same inputs.

For every model of ../shared/corpus/public that pytflite can run (the others are listed as skipped), this
measures the median invoke time of pytflite, of LiteRT's builtin kernels
(BUILTIN_WITHOUT_DEFAULT_DELEGATES) and of LiteRT with XNNPACK (AUTO), all with the same num_threads, and
prints the ratios, their geometric mean over the models where LiteRT's builtin kernels take >= 1 ms (and
>= 0.25 ms), per kind of model (float; integer: int8/int16x8 activations; hybrid: float activations with
int8 weights), whether each model stays within LiteRT's time + 5 us per node, and the arena against its lower bound.
It also measures the per-node overhead on a chain of 1000 tiny ADDs.

    .venv/bin/python benchmarks/bench_corpus.py [--threads 1] [--min-time 0.5] [--models mlp,small_cnn]
        [--numpy-only]

pytflite runs with its compiled kernels where numba is installed (the `jit` extra, in the test extra;
pytflite.ops.jit), as a user's install would; --numpy-only measures the NumPy kernels alone.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import pytflite
from pytflite import BuiltinOperator, TensorType
from pytflite.interpreter_builder import has_hybrid_op
from pytflite.model.builder import ModelBuilder
from pytflite.ops import jit

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "public"
NODE_BUDGET_S = 5e-6
# The speed target is set on models where LiteRT's builtin kernels take >= 1 ms; mobilenet_v2 measures
# right at 1 ms on some machines, so the mean over the models above 0.25 ms is printed as well.
HEAVY_MS = (1.0, 0.25)


def geometric_mean(ratios: list[float]) -> float:
    return math.exp(statistics.fmean(map(math.log, ratios)))


def median_invoke_seconds(interpreter, min_time: float) -> float:
    """Median of per-invoke times over at least `min_time` seconds (and at least 7 runs), after warm-up."""
    interpreter.invoke()
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < 7 or time.perf_counter() - started < min_time:
        begin = time.perf_counter()
        interpreter.invoke()
        samples.append(time.perf_counter() - begin)
    return statistics.median(samples)


def prepared(interpreter, inputs: list[np.ndarray]):
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), inputs):
        interpreter.set_tensor(detail["index"], value)
    return interpreter


_INTEGER = (TensorType.INT8, TensorType.UINT8, TensorType.INT16)
_WEIGHTED = (
    BuiltinOperator.CONV_2D,
    BuiltinOperator.DEPTHWISE_CONV_2D,
    BuiltinOperator.TRANSPOSE_CONV,
    BuiltinOperator.FULLY_CONNECTED,
    BuiltinOperator.BATCH_MATMUL,
)


def model_kind(interpreter) -> str:
    """integer (its matrix products write quantized activations), hybrid (float activations times int8
    weights) or float."""
    subgraphs = interpreter.subgraphs
    if any(
        subgraph.tensors[node.outputs[0]].type in _INTEGER
        for subgraph in subgraphs
        for node, registration in subgraph.nodes
        if registration.builtin_code in _WEIGHTED
    ):
        return "integer"
    model = interpreter.model
    hybrid = any(has_hybrid_op(subgraph, model.operator_codes) for subgraph in model.subgraphs)
    return "hybrid" if hybrid else "float"


def corpus_case(entry: dict) -> tuple[bytes, list[np.ndarray]] | str:
    """A manifest entry's model and its plain inputs, or why it cannot be timed as one invoke."""
    keys = entry.get("npz_keys", [])
    suffix = "" if "input_0" in keys else "__batch1" if "input_0__batch1" in keys else None
    if suffix is None or entry["name"] == "atan_custom":
        return "no plain inputs in the corpus (signatures/state/custom op)"
    data = np.load(CORPUS / entry["npz"])
    inputs = [data[f"input_{i}{suffix}"] for i in range(len(entry["inputs"]))]
    return (CORPUS / entry["file"]).read_bytes(), inputs


def litert_interpreter(model: bytes, resolver: str, threads: int):
    from ai_edge_litert import interpreter as litert

    kind = getattr(litert.OpResolverType, resolver)
    return litert.Interpreter(model_content=model, experimental_op_resolver_type=kind, num_threads=threads)


# Issue 17's speed targets, as (what, the models' ratios it covers, the bound each ratio or their mean
# must stay within); printed with the measured values so a run shows which ones hold.
_LOOPS = ("lstm", "gru", "control_flow")
PER_NODE_TARGET_US = 0.4


def target_lines(rows: list[dict], per_node_us: float) -> list[str]:
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    lines = []
    each = [
        (
            "integer models >= 1 ms, each <= 1.0x",
            lambda r: r["kind"] == "integer" and r["builtin_ms"] >= 1.0,
            1.0,
        ),
        ("hybrid models, each <= 1.5x", lambda r: r["kind"] == "hybrid", 1.5),
        ("lstm, gru, control_flow, each <= 3x", lambda r: r["model"] in _LOOPS, 3.0),
    ]
    for what, chosen, bound in each:
        picked = [r for r in rows if chosen(r)]
        values = ", ".join(f"{r['model']} {r['vs_builtin']:.2f}x" for r in picked) or "no model"
        held = bool(picked) and all(r["vs_builtin"] <= bound for r in picked)
        lines.append(f"target: {what}: {values}: {verdict(held)}")
    integer = [r["vs_builtin"] for r in rows if r["kind"] == "integer"]
    if integer:
        mean = geometric_mean(integer)
        lines.append(f"target: integer models' geometric mean <= 1.2x: {mean:.2f}x: {verdict(mean <= 1.2)}")
    lines.append(
        f"target: per-node overhead <= {PER_NODE_TARGET_US} us: {per_node_us:.2f} us: "
        + verdict(per_node_us <= PER_NODE_TARGET_US)
    )
    return lines


def markdown_rows(rows: list[dict]) -> list[str]:
    """The README's performance table, from one run."""
    lines = [
        "| model | kind | nodes | pytflite ms | NumPy only ms | LiteRT builtin ms | XNNPACK ms | / builtin "
        "| NumPy only / builtin |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        numpy_ms = r.get("numpy_ms", r["pytflite_ms"])
        lines.append(
            f"| {r['model']} | {r['kind']} | {r['nodes']} | {r['pytflite_ms']:.3f} | {numpy_ms:.3f} "
            f"| {r['builtin_ms']:.3f} | {r['xnnpack_ms']:.3f} | {r['vs_builtin']:.2f} | {r['numpy_vs_builtin']:.2f} |"
        )
    return lines


def tiny_add_chain(length: int) -> bytes:
    builder = ModelBuilder()
    current = builder.add_input("x", TensorType.FLOAT32, [1])
    one = builder.add_constant("one", np.ones([1], np.float32))
    for i in range(length):
        out = builder.add_tensor(f"t{i}", TensorType.FLOAT32, [1])
        builder.add_operator(BuiltinOperator.ADD, [current, one], [out])
        current = out
    builder.add_output(current)
    return builder.build()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of invokes per measurement")
    parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--markdown", action="store_true", help="also print the README's table")
    parser.add_argument(
        "--numpy-only", action="store_true", help="without the compiled kernels (pytflite.ops.jit)"
    )
    args = parser.parse_args()
    if args.numpy_only:
        jit.set_enabled(False)
    compiled = jit.compiled_kernels_run()

    manifest = json.loads((CORPUS / "manifest.json").read_text())
    wanted = set(filter(None, args.models.split(",")))
    rows, skipped = [], []
    for entry in manifest["models"]:
        name = entry["name"]
        if wanted and name not in wanted:
            continue
        case = corpus_case(entry)
        if isinstance(case, str):
            skipped.append((name, case))
            continue
        model, inputs = case
        try:
            ours = prepared(pytflite.Interpreter(model_content=model, num_threads=args.threads), inputs)
        except (ValueError, RuntimeError) as error:
            skipped.append((name, str(error).splitlines()[0][:90]))
            continue
        measured = [("pytflite", ours)]
        if compiled:  # the same model on the NumPy kernels alone, prepared (and first run) without them
            jit.set_enabled(False)
            try:
                numpy_only = prepared(
                    pytflite.Interpreter(model_content=model, num_threads=args.threads), inputs
                )
                numpy_only.invoke()
            finally:
                jit.set_enabled(None)
            measured.append(("numpy", numpy_only))
        builtin = prepared(
            litert_interpreter(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", args.threads), inputs
        )
        xnnpack = prepared(litert_interpreter(model, "AUTO", args.threads), inputs)
        nodes = len(ours.subgraphs[0].execution_plan)
        measured += [("builtin", builtin), ("xnnpack", xnnpack)]
        times = {k: median_invoke_seconds(i, args.min_time) for k, i in measured}
        report = ours.memory_report()
        rows.append(
            {
                "model": name,
                "kind": model_kind(ours),
                "nodes": nodes,
                **{f"{k}_ms": v * 1e3 for k, v in times.items()},
                "vs_builtin": times["pytflite"] / times["builtin"],
                "numpy_vs_builtin": times.get("numpy", times["pytflite"]) / times["builtin"],
                "vs_xnnpack": times["pytflite"] / times["xnnpack"],
                "within_node_budget": times["pytflite"] <= times["builtin"] + NODE_BUDGET_S * nodes,
                "arena_vs_lower_bound": report.arena_bytes / max(report.arena_lower_bound_bytes, 1),
            }
        )

    chain = 1000
    chain_model = tiny_add_chain(chain)
    x = [np.zeros([1], np.float32)]
    per_node = {
        "pytflite": median_invoke_seconds(
            prepared(pytflite.Interpreter(model_content=chain_model), x), args.min_time
        )
        / chain,
        "builtin": median_invoke_seconds(
            prepared(litert_interpreter(chain_model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", args.threads), x),
            args.min_time,
        )
        / chain,
    }

    kernels = "NumPy and compiled (numba)" if compiled else "NumPy only"
    print(f"pytflite vs ai-edge-litert, num_threads={args.threads}, median invoke time; kernels: {kernels}")
    if compiled:
        print("(numpy ms: pytflite on its NumPy kernels alone, in the same run)")
    print(
        f"{'model':<22}{'kind':>8}{'nodes':>6}{'pytflite ms':>13}{'numpy ms':>10}{'builtin ms':>12}{'xnnpack ms':>12}{'/builtin':>10}{'/xnnpack':>10}{'budget':>8}{'arena/LB':>10}"
    )
    for r in rows:
        print(
            f"{r['model']:<22}{r['kind']:>8}{r['nodes']:>6}{r['pytflite_ms']:>13.3f}{r.get('numpy_ms', r['pytflite_ms']):>10.3f}"
            f"{r['builtin_ms']:>12.3f}{r['xnnpack_ms']:>12.3f}"
            f"{r['vs_builtin']:>10.2f}{r['vs_xnnpack']:>10.2f}{'ok' if r['within_node_budget'] else 'over':>8}"
            f"{r['arena_vs_lower_bound']:>10.3f}"
        )
    for kind in ("float", "integer", "hybrid"):
        for threshold in HEAVY_MS:
            ratios = [r["vs_builtin"] for r in rows if r["kind"] == kind and r["builtin_ms"] >= threshold]
            print(
                f"geometric mean /builtin over the {len(ratios)} {kind} models with builtin >= {threshold} ms: "
                + (f"{geometric_mean(ratios):.2f}x" if ratios else "-")
            )
    if rows:
        print(
            f"geometric mean /builtin over all {len(rows)} models: {geometric_mean([r['vs_builtin'] for r in rows]):.2f}x"
        )
    print(
        f"per-node overhead (chain of {chain} ADDs of one element): pytflite {per_node['pytflite'] * 1e6:.2f} us, "
        f"LiteRT builtin {per_node['builtin'] * 1e6:.2f} us"
    )
    for line in target_lines(rows, per_node["pytflite"] * 1e6):
        print(line)
    for name, reason in skipped:
        print(f"skipped {name}: {reason}")
    if args.markdown:
        print("\n".join(markdown_rows(rows)))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"threads": args.threads, "models": rows, "per_node_s": per_node, "skipped": skipped},
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

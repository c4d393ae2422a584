"""Time the ONNX Runtime delegate against LiteRT's builtin kernels and LiteRT+XNNPACK on the public
corpus's float models, with 1 and 2 threads, in one run, on the same inputs.

For every float model of ../shared/corpus/public this prints the invoke time of pytflite with
OnnxRuntimeDelegate (num_threads = the interpreter's), LiteRT builtin and LiteRT+XNNPACK (the lowest
of --rounds medians, the three measured in alternation), the ratios, how many nodes were delegated,
the largest output difference from LiteRT's builtin kernels (relative to the output's magnitude, as
tests/oracle.assert_matches measures it) next to XNNPACK's, and the geometric mean of the ratio to
XNNPACK over the float CNNs and over all models.

    .venv/bin/python benchmarks/bench_ort.py [--threads 1,2] [--min-time 0.5] [--rounds 5]
        [--models mlp,small_cnn]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from bench_corpus import (
    _INTEGER,
    _WEIGHTED,
    CORPUS,
    corpus_case,
    geometric_mean,
    litert_interpreter,
    median_invoke_seconds,
    prepared,
)

import pytflite
from pytflite.delegates.onnxruntime import OnnxRuntimeDelegate

CNNS = ("mobilenet_v2_f32", "mobilenet_v2_fp16", "small_cnn")  # the float CNNs of the target


def model_kind(interpreter) -> str:
    """float, hybrid (float activations, int8 weights) or integer; TRANSPOSE_CONV's data is input 2."""
    kinds = set()
    for subgraph in interpreter.subgraphs:
        for node, registration in subgraph.nodes:
            if registration.builtin_code in _WEIGHTED:
                transposed = registration.builtin_code == pytflite.BuiltinOperator.TRANSPOSE_CONV
                data, weights = (node.inputs[2], node.inputs[1]) if transposed else node.inputs[:2]
                activations, weights = subgraph.tensors[data].type, subgraph.tensors[weights].type
                kinds.add(
                    "integer" if activations in _INTEGER else "hybrid" if weights != activations else "float"
                )
    return next((k for k in ("integer", "hybrid") if k in kinds), "float")


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    if not np.issubdtype(reference.dtype, np.floating):
        return 0.0 if np.array_equal(ours, reference) else float("inf")
    finite = np.isfinite(reference)
    scale = max(float(np.max(np.abs(reference[finite]), initial=0.0)), 1e-30)
    return float(np.max(np.abs(ours[finite].astype(np.float64) - reference[finite]), initial=0.0) / scale)


def alternating_medians(interpreters: dict, min_time: float, rounds: int) -> dict[str, float]:
    """The lowest of `rounds` median invoke times of each interpreter, measured in alternation (each
    median over min_time / rounds), so that a burst of load on a shared machine does not land on one."""
    best = dict.fromkeys(interpreters, math.inf)
    for _ in range(rounds):
        for key, interpreter in interpreters.items():
            best[key] = min(best[key], median_invoke_seconds(interpreter, min_time / rounds))
    return best


def outputs(interpreter) -> list[np.ndarray]:
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of invokes per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per measurement")
    parser.add_argument(
        "--models", default="", help="comma-separated model names (default: all float models)"
    )
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    manifest = json.loads((CORPUS / "manifest.json").read_text())
    wanted = set(filter(None, args.models.split(",")))
    rows, skipped = [], []
    for threads in [int(t) for t in args.threads.split(",")]:
        for entry in manifest["models"]:
            name = entry["name"]
            if wanted and name not in wanted:
                continue
            case = corpus_case(entry)
            if isinstance(case, str):
                skipped.append((name, case))
                continue
            model, inputs = case
            kind = model_kind(pytflite.Interpreter(model_content=model))
            if kind == "integer":
                skipped.append((name, "integer model (quantized nodes stay on the CPU by default)"))
                continue
            ours = prepared(
                pytflite.Interpreter(
                    model_content=model, num_threads=threads, experimental_delegates=[OnnxRuntimeDelegate()]
                ),
                inputs,
            )
            builtin = prepared(
                litert_interpreter(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", threads), inputs
            )
            xnnpack = prepared(litert_interpreter(model, "AUTO", threads), inputs)
            results = {}
            for key, interpreter in (("ort", ours), ("builtin", builtin), ("xnnpack", xnnpack)):
                interpreter.invoke()
                results[key] = outputs(interpreter)
            times = alternating_medians(
                {"ort": ours, "builtin": builtin, "xnnpack": xnnpack}, args.min_time, args.rounds
            )
            partitions = ours.delegate_partitions()
            total = len(ours.subgraphs[0].delegation.pre_delegation_plan or ours.subgraphs[0].execution_plan)
            rows.append(
                {
                    "model": name,
                    "kind": kind,
                    "threads": threads,
                    "delegated": f"{sum(len(p.nodes) for p in partitions)}/{total}",
                    "partitions": len(partitions),
                    **{f"{k}_ms": v * 1e3 for k, v in times.items()},
                    "vs_xnnpack": times["ort"] / times["xnnpack"],
                    "vs_builtin": times["ort"] / times["builtin"],
                    "err_ort": max(map(relative_error, results["ort"], results["builtin"]), default=0.0),
                    "err_xnnpack": max(
                        map(relative_error, results["xnnpack"], results["builtin"]), default=0.0
                    ),
                }
            )

    print(
        f"pytflite + OnnxRuntimeDelegate vs ai-edge-litert, invoke time (lowest of {args.rounds} alternating medians)"
    )
    print(
        f"{'model':<22}{'kind':>7}{'thr':>4}{'delegated':>11}{'parts':>6}{'ort ms':>9}{'builtin ms':>11}{'xnnpack ms':>11}"
        f"{'/xnnpack':>9}{'/builtin':>9}{'err ort':>10}{'err xnn':>10}"
    )
    for r in rows:
        print(
            f"{r['model']:<22}{r['kind']:>7}{r['threads']:>4}{r['delegated']:>11}{r['partitions']:>6}{r['ort_ms']:>9.3f}"
            f"{r['builtin_ms']:>11.3f}{r['xnnpack_ms']:>11.3f}{r['vs_xnnpack']:>9.2f}{r['vs_builtin']:>9.2f}"
            f"{r['err_ort']:>10.1e}{r['err_xnnpack']:>10.1e}"
        )
    for threads in sorted({r["threads"] for r in rows}):
        mine = [r for r in rows if r["threads"] == threads]
        cnn = [r["vs_xnnpack"] for r in mine if r["model"] in CNNS]
        print(
            f"threads={threads}: geometric mean /xnnpack over the float CNNs ({', '.join(CNNS)}): "
            + (f"{geometric_mean(cnn):.2f}x" if cnn else "-")
            + f"; over all {len(mine)} float and hybrid models: {geometric_mean([r['vs_xnnpack'] for r in mine]):.2f}x"
        )
    for name, reason in sorted(set(skipped)):
        print(f"skipped {name}: {reason}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "skipped": sorted(set(skipped))}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

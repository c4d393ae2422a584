"""Time constructing an interpreter from a model file, pytflite against ai-edge-litert, in one run.

For every model of ../shared/corpus/public: the best of `--runs` constructions of
`Interpreter(model_path=...)` in pytflite (reading, verifying and building the subgraphs; kernels' init)
and in LiteRT (BUILTIN_WITHOUT_DEFAULT_DELEGATES, so no XNNPACK preparation is counted), then
`allocate_tensors()` on top, and the ratios. Prints the geometric mean of each ratio.

Then big models written with ModelBuilder (issue 17's loading targets): a chain of FULLY_CONNECTED
layers with 54 MB of float32 weights, the same chain with 3 MB (construction must not depend on the
size), and the 54 MB chain stored as fp16 weights behind constant DEQUANTIZEs. For each: constructing
the first interpreter of the model (none other alive) and a second one while the first lives, each
against LiteRT; allocate_tensors of both; and the resident memory (RSS) the second interpreter adds,
allocated and invoked, against its arena plus 5% of the model's weights.

    .venv/bin/python benchmarks/bench_loading.py [--runs 20] [--models mobilenet_v2_f32,mlp] [--section big]
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import ModelBuilder
from pytflite import TensorType as T

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "public"


def best_ms(make, runs: int, allocate: bool = False) -> float:
    """The fastest of `runs` calls of make() (and allocate_tensors() on what it made), in ms, each with
    the earlier interpreters gone (pytflite shares a loaded model only among live interpreters)."""
    times = []
    for _ in range(runs):
        gc.collect()
        begin = time.perf_counter()
        interpreter = make()
        if allocate:
            interpreter.allocate_tensors()
        times.append(time.perf_counter() - begin)
        del interpreter
    return min(times) * 1e3


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(map(math.log, values)))


def bench_corpus(litert, runs: int, wanted: set[str]) -> None:
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
        load = best_ms(ours, runs), best_ms(theirs, runs)
        full = (
            best_ms(ours, runs, allocate=True),
            best_ms(theirs, runs, allocate=True),
        )
        ratios["load"].append(load[0] / load[1])
        ratios["load+allocate"].append(full[0] / full[1])
        print(
            f"{path.stem:28s} {load[0]:12.2f} {load[1]:10.2f} {load[0] / load[1]:6.1f}x"
            f"   {full[0]:8.2f} / {full[1]:.2f} ms ({full[0] / full[1]:.1f}x)"
        )
    for what, values in ratios.items():
        if values:
            print(
                f"geometric mean {what} pytflite/LiteRT over {len(values)} models: {geometric_mean(values):.1f}x"
            )


def fc_chain(width: int, layers: int = 13, fp16: bool = False) -> bytes:
    """x -> FULLY_CONNECTED x `layers` with random width x width weights (fp16 ones behind DEQUANTIZE)."""
    rng = np.random.default_rng(0)
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, width])
    for layer in range(layers):
        weights = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        if fp16:
            half = builder.add_constant(f"w{layer}_fp16", weights.astype(np.float16))
            w = builder.add_tensor(f"w{layer}", T.FLOAT32, [width, width])
            builder.add_operator(Op.DEQUANTIZE, [half], [w])
        else:
            w = builder.add_constant(f"w{layer}", weights)
        bias = builder.add_constant(f"b{layer}", np.zeros(width, np.float32))
        y = builder.add_tensor(f"y{layer}", T.FLOAT32, [1, width])
        builder.add_operator(Op.FULLY_CONNECTED, [x, w, bias], [y])
        x = y
    builder.add_output(x)
    return builder.build()


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def first_and_second_ms(make, runs: int, allocate: bool = False) -> tuple[float, float]:
    """Best times of making (and allocating) an interpreter of a model while none other is alive, and
    while another one is."""

    def timed(keep_alive: bool) -> float:
        times = []
        for _ in range(runs):
            alive = make() if keep_alive else None
            if alive is not None and allocate:
                alive.allocate_tensors()
            gc.collect()  # earlier ones really gone (interpreters hold reference cycles)
            begin = time.perf_counter()
            interpreter = make()
            if allocate:
                interpreter.allocate_tensors()
            times.append(time.perf_counter() - begin)
            del interpreter, alive
        return min(times) * 1e3

    return timed(False), timed(True)


def second_interpreter_bytes(path: Path, runtime: str) -> tuple[int, int]:
    """RSS a second interpreter adds, allocated and invoked, while the first lives; and its arena. Measured
    in a fresh process (`--probe`): memory that earlier runs freed would hide what the second one takes."""
    probe = [sys.executable, __file__, "--probe", runtime, str(path)]
    added, arena = subprocess.run(probe, check=True, capture_output=True, text=True).stdout.split()
    return int(added), int(arena)


def probe(runtime: str, path: str) -> None:
    """Print the RSS a second interpreter of `path` adds and its arena bytes (second_interpreter_bytes)."""
    if runtime == "pytflite":
        make = functools.partial(pytflite.Interpreter, model_path=path)
    else:
        from ai_edge_litert import interpreter as litert

        builtin = litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        make = functools.partial(litert.Interpreter, model_path=path, experimental_op_resolver_type=builtin)

    def ready():
        interpreter = make()
        interpreter.allocate_tensors()
        detail = interpreter.get_input_details()[0]
        interpreter.set_tensor(detail["index"], np.ones(detail["shape"], np.float32))
        interpreter.invoke()
        return interpreter

    first = ready()
    before = resident_bytes()
    second = ready()
    added = resident_bytes() - before
    report = getattr(second, "memory_report", None)
    arena = 0 if report is None else report().arena_bytes + report().persistent_arena_bytes
    print(added, arena)
    del first


def bench_big(litert, runs: int) -> None:
    builtin = litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    models = {
        "fc_54MB": fc_chain(1024),
        "fc_3MB": fc_chain(256),
        "fc_54MB_as_fp16": fc_chain(1024, fp16=True),
    }
    print(
        "\nbig ModelBuilder models: ms for the first interpreter of a model / a second while it lives; "
        "LiteRT builds each the same way"
    )
    with tempfile.TemporaryDirectory() as directory:
        for name, content in models.items():
            path = Path(directory) / f"{name}.tflite"
            path.write_bytes(content)
            ours = functools.partial(pytflite.Interpreter, model_path=str(path))
            theirs = functools.partial(
                litert.Interpreter, model_path=str(path), experimental_op_resolver_type=builtin
            )
            ours().allocate_tensors()  # warm: the kernel registry is imported once per process
            load, their_load = first_and_second_ms(ours, runs), first_and_second_ms(theirs, runs)
            full = first_and_second_ms(ours, max(3, runs // 4), allocate=True)
            their_full = first_and_second_ms(theirs, max(3, runs // 4), allocate=True)
            added, arena = second_interpreter_bytes(path, "pytflite")
            their_added, _ = second_interpreter_bytes(path, "litert")
            budget = arena + 0.05 * len(content)
            print(
                f"{name} ({len(content) / 1e6:.0f} MB): construct {load[0]:.2f} / {load[1]:.2f} ms, LiteRT "
                f"{their_load[0]:.2f} / {their_load[1]:.2f} ms ({load[0] / their_load[0]:.1f}x / "
                f"{load[1] / their_load[1]:.1f}x); +allocate {full[0]:.2f} / {full[1]:.2f} ms, LiteRT "
                f"{their_full[0]:.2f} / {their_full[1]:.2f} ms"
            )
            print(
                f"    second interpreter adds {added / 1e6:.3f} MB resident (LiteRT {their_added / 1e6:.2f} MB); "
                f"arena + 5% of weights = {budget / 1e6:.2f} MB: {added / budget:.2f}x the budget"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--models", default="", help="comma-separated corpus model names (default: all)")
    parser.add_argument("--section", choices=("all", "corpus", "big"), default="all")
    parser.add_argument("--probe", nargs=2, metavar=("RUNTIME", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(*args.probe)
        return
    from ai_edge_litert import interpreter as litert

    if args.section in ("all", "corpus"):
        bench_corpus(litert, args.runs, {m for m in args.models.split(",") if m})
    if args.section in ("all", "big"):
        bench_big(litert, args.runs)


if __name__ == "__main__":
    main()

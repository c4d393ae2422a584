"""Time pytflite against ai-edge-litert (builtin kernels and XNNPACK) on real architectures, in one run:
the models benchmarks/make_architectures.py writes into benchmarks/.models/ (MobileNetV3Small,
EfficientNetB0, ResNet50, a UNet and a 1-D conv audio classifier, each float32, float16-weight and
int8), with the ONNX Runtime delegate on the float ones, and issue 32's targets checked on the ratios:

- int8: each model of >= 1 ms (LiteRT builtin) at <= 1.0x LiteRT builtin, and their geometric mean;
- float (f32, fp16): pytflite's own kernels within 2x of XNNPACK;
- the ONNX Runtime delegate at <= 1.0x XNNPACK on each float model.

Each time is the lowest of --rounds medians, the interpreters measured in alternation. The int8 outputs
must equal LiteRT builtin's (pytflite reproduces this host's LiteRT), the float ones within 1e-5 of the
output's magnitude: the "exact" column.

    .venv/bin/python benchmarks/bench_architectures.py [--threads 1] [--min-time 1] [--rounds 3]
        [--models resnet50_int8,unet_f32] [--no-ort]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from bench_corpus import geometric_mean, litert_interpreter, prepared
from bench_ort import alternating_medians, outputs, relative_error

import pytflite
from pytflite.ops import jit

MODELS = Path(__file__).resolve().parent / ".models"


def inputs_for(interpreter) -> list[np.ndarray]:
    rng = np.random.default_rng(32)
    values = []
    for detail in interpreter.get_input_details():
        shape, dtype = detail["shape"], detail["dtype"]
        if np.issubdtype(dtype, np.integer):
            values.append(rng.integers(-128, 128, size=shape).astype(dtype))
        else:
            values.append(rng.normal(size=shape).astype(dtype))
    return values


def measure(path: Path, threads: int, min_time: float, rounds: int, ort: bool) -> dict:
    model = path.read_bytes()
    ours = pytflite.Interpreter(model_content=model, num_threads=threads)
    inputs = inputs_for(ours)
    interpreters = {
        "pytflite": prepared(ours, inputs),
        "builtin": prepared(litert_interpreter(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", threads), inputs),
        "xnnpack": prepared(litert_interpreter(model, "AUTO", threads), inputs),
    }
    integer = path.stem.endswith("_int8")
    if ort and not integer:
        from pytflite.delegates.onnxruntime import OnnxRuntimeDelegate

        delegated = pytflite.Interpreter(
            model_content=model, num_threads=threads, experimental_delegates=[OnnxRuntimeDelegate()]
        )
        interpreters["ort"] = prepared(delegated, inputs)
    for interpreter in interpreters.values():
        interpreter.invoke()
    reference = outputs(interpreters["builtin"])
    error = max(
        relative_error(o, r) for o, r in zip(outputs(interpreters["pytflite"]), reference, strict=True)
    )
    times = alternating_medians(interpreters, min_time, rounds)
    return {
        "model": path.stem,
        "integer": integer,
        **{f"{key}_ms": value * 1e3 for key, value in times.items()},
        "exact": error == 0.0 if integer else error <= 1e-5,
        "error": error,
    }


def target_lines(rows: list[dict]) -> list[str]:
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    lines = []
    heavy = [r for r in rows if r["integer"] and r["builtin_ms"] >= 1.0]
    ratios = [r["pytflite_ms"] / r["builtin_ms"] for r in heavy]
    if ratios:
        worst = max(ratios)
        lines.append(
            f"target: int8 models >= 1 ms, each <= 1.0x builtin: worst {worst:.2f}x: {verdict(worst <= 1.0)}"
        )
        mean = geometric_mean([r["pytflite_ms"] / r["builtin_ms"] for r in rows if r["integer"]])
        lines.append(f"target: int8 geometric mean <= 1.0x builtin: {mean:.2f}x: {verdict(mean <= 1.0)}")
    floats = [r for r in rows if not r["integer"]]
    if floats:
        worst = max(r["pytflite_ms"] / r["xnnpack_ms"] for r in floats)
        lines.append(
            f"target: float models within 2x of XNNPACK: worst {worst:.2f}x: {verdict(worst <= 2.0)}"
        )
    delegated = [r for r in floats if "ort_ms" in r]
    if delegated:
        worst = max(r["ort_ms"] / r["xnnpack_ms"] for r in delegated)
        lines.append(
            f"target: ORT delegate <= 1.0x XNNPACK on each: worst {worst:.2f}x: {verdict(worst <= 1.0)}"
        )
    inexact = [r["model"] for r in rows if not r["exact"]]
    lines.append(f"exactness against LiteRT builtin: {'all' if not inexact else 'NOT ' + ', '.join(inexact)}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--min-time", type=float, default=1.0, help="seconds of invokes per model and interpreter"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--no-ort", action="store_true", help="leave out the ONNX Runtime delegate")
    args = parser.parse_args()
    paths = sorted(MODELS.glob("*.tflite"))
    if not paths:
        print(f"no models in {MODELS}: run benchmarks/make_architectures.py (its docstring says how)")
        return 2
    wanted = set(filter(None, args.models.split(",")))
    rows = [
        measure(path, args.threads, args.min_time, args.rounds, not args.no_ort)
        for path in paths
        if not wanted or path.stem in wanted
    ]
    kernels = "NumPy and compiled (numba)" if jit.compiled_kernels_run() else "NumPy only"
    print(f"pytflite vs ai-edge-litert, num_threads={args.threads}; kernels: {kernels}")
    print(
        f"{'model':<26}{'pytflite ms':>12}{'builtin ms':>11}{'xnnpack ms':>11}{'ort ms':>9}{'/builtin':>9}{'/xnnpack':>9}{'ort/xnn':>8}  exact"
    )
    for r in rows:
        ort_ms = r.get("ort_ms", math.nan)
        print(
            f"{r['model']:<26}{r['pytflite_ms']:>12.2f}{r['builtin_ms']:>11.2f}{r['xnnpack_ms']:>11.2f}{ort_ms:>9.2f}"
            f"{r['pytflite_ms'] / r['builtin_ms']:>9.2f}{r['pytflite_ms'] / r['xnnpack_ms']:>9.2f}"
            f"{ort_ms / r['xnnpack_ms']:>8.2f}  {'yes' if r['exact'] else 'NO ' + format(r['error'], '.1e')}"
        )
    for line in target_lines(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

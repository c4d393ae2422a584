"""The ops of a squeeze-and-excitation block (EfficientNet, MobileNetV3) alone, against LiteRT.

Issue 17 measured an int8 EfficientNet-B0 whose MEAN (over H and W), broadcast MUL and LOGISTIC nodes
were slow. Each op is built as a one-op model (ModelBuilder) at the shapes of EfficientNet-B0's stages,
in int8 and float32, and timed in pytflite and in LiteRT's builtin kernels
(BUILTIN_WITHOUT_DEFAULT_DELEGATES) in the same process, one thread: the fastest of `--invokes` invokes.

    .venv/bin/python benchmarks/bench_se_ops.py [--invokes 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from ai_edge_litert import interpreter as litert

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder

STAGES = ((112, 32), (56, 96), (28, 144), (14, 480), (7, 1152))


def _q(scale: float, zero_point: int) -> AffineQuantization:
    return AffineQuantization(np.array([scale], np.float32), np.array([zero_point], np.int64))


def one_op(op, inputs, output_shape, options, quantized: bool, output_q=None, version=1) -> bytes:
    """inputs: (shape, quantization or None, constant value or None)."""
    builder = ModelBuilder()
    indices = []
    for i, (shape, quantization, value) in enumerate(inputs):
        if value is not None:
            indices.append(builder.add_tensor(f"c{i}", T.INT32, list(shape), data=value))
        else:
            kind = T.INT8 if quantized else T.FLOAT32
            indices.append(builder.add_input(f"x{i}", kind, list(shape), quantization=quantization))
    out = builder.add_tensor(
        "y", T.INT8 if quantized else T.FLOAT32, list(output_shape), quantization=output_q
    )
    builder.add_operator(op, indices, [out], options, version=version)
    builder.add_output(out)
    return builder.build()


def fastest_us(module, model: bytes, invokes: int, **kwargs) -> float:
    interpreter = module.Interpreter(model_content=model, num_threads=1, **kwargs)
    interpreter.allocate_tensors()
    rng = np.random.default_rng(0)
    for detail in interpreter.get_input_details():
        dtype = detail["dtype"]
        value = (
            rng.integers(-128, 128, detail["shape"]).astype(dtype)
            if dtype == np.int8
            else rng.standard_normal(detail["shape"]).astype(dtype)
        )
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    best = float("inf")
    for _ in range(invokes):
        begin = time.perf_counter()
        interpreter.invoke()
        best = min(best, time.perf_counter() - begin)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--invokes", type=int, default=300)
    args = parser.parse_args()
    print(f"{'op':10} {'type':7} {'shape':>16}  pytflite us  LiteRT us  ratio")
    for quantized in (True, False):
        qi, qo, qs = (_q(0.05, 3), _q(0.04, -5), _q(1 / 256, -128)) if quantized else (None, None, None)
        for size, channels in STAGES:
            x, s = (1, size, size, channels), (1, 1, 1, channels)
            axes = np.array([1, 2], np.int32)
            models = {
                "MEAN": one_op(
                    Op.MEAN, [(x, qi, None), ((2,), None, axes)], s, {"keep_dims": True}, quantized, qo, 2
                ),
                "MUL": one_op(Op.MUL, [(x, qi, None), (s, qs, None)], x, None, quantized, qo, 2),
                "LOGISTIC": one_op(Op.LOGISTIC, [(s, qi, None)], s, None, quantized, qs, 2),
            }
            for name, model in models.items():
                ours = fastest_us(pytflite, model, args.invokes)
                resolver = litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
                theirs = fastest_us(litert, model, args.invokes, experimental_op_resolver_type=resolver)
                kind = "int8" if quantized else "float32"
                print(
                    f"{name:10} {kind:7} {x if name != 'LOGISTIC' else s!s:>16}  {ours:11.1f}  {theirs:9.1f}  {ours / theirs:5.2f}"
                )


if __name__ == "__main__":
    main()

"""The sequence ops (UNIDIRECTIONAL/BIDIRECTIONAL_SEQUENCE_LSTM and _RNN), float and hybrid, against LiteRT.

Issue 17's target for loops and sequence-op models is 3x LiteRT builtin. Each case is a one-op model made
with ModelBuilder (random weights; hybrid: int8 weights as dynamic-range quantization writes them), run
on one random sequence in pytflite (with its compiled kernels, and with NumPy kernels only, as
`numpy us`) and in LiteRT's builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES) in the same process, one
thread: the fastest of `--invokes` invokes each.

    .venv/bin/python benchmarks/bench_sequence_ops.py [--invokes 300] [--steps 20] [--units 32]
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_corpus import litert_interpreter, median_invoke_seconds, prepared

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder
from pytflite.ops import jit

TARGET = 3.0


class _Model:
    """A one-op model being built: inputs, constants (float, or int8 with their scale), state."""

    def __init__(self, rng: np.random.Generator, hybrid: bool):
        self.builder, self.rng, self.hybrid = ModelBuilder(), rng, hybrid
        self.indices: list[int] = []
        self.feeds: list[np.ndarray] = []

    def sequence(self, shape) -> None:
        value = self.rng.uniform(-1, 1, shape).astype(np.float32)
        self.indices.append(self.builder.add_input(f"x{len(self.indices)}", T.FLOAT32, list(shape)))
        self.feeds.append(value)

    def weights(self, *shape) -> None:
        """Weights (int8 when hybrid), or an absent optional input when shape is None."""
        if shape[0] is None:
            self.indices.append(-1)
            return
        values = self.rng.uniform(-0.5, 0.5, shape).astype(np.float32)
        name = f"w{len(self.indices)}"
        if not self.hybrid:
            self.indices.append(self.builder.add_tensor(name, T.FLOAT32, list(shape), data=values))
            return
        scale = float(np.abs(values).max() / 127)
        quantization = AffineQuantization(np.array([scale], np.float32), np.array([0], np.int64))
        data = np.round(values / scale).astype(np.int8)
        self.indices.append(
            self.builder.add_tensor(name, T.INT8, list(shape), data=data, quantization=quantization)
        )

    def bias(self, size: int | None) -> None:
        if size is None:
            self.indices.append(-1)
            return
        values = self.rng.uniform(-0.5, 0.5, size).astype(np.float32)
        self.indices.append(self.builder.add_tensor(f"b{len(self.indices)}", T.FLOAT32, [size], data=values))

    def state(self, *shape) -> None:
        name = f"s{len(self.indices)}"
        self.indices.append(self.builder.add_tensor(name, T.FLOAT32, list(shape), is_variable=True))

    def build(self, op, options: dict, outputs: int) -> tuple[bytes, list[np.ndarray]]:
        outs = []
        for i in range(outputs):
            outs.append(self.builder.add_tensor(f"out{i}", T.FLOAT32, []))
            self.builder.add_output(outs[-1])
        self.builder.add_operator(op, self.indices, outs, options, version=2 if self.hybrid else 1)
        return self.builder.build(), self.feeds


def _lstm_cell(
    model: _Model, depth: int, n: int, n_output: int, cifg: bool, peephole: bool, projection: bool
):
    """Inputs 1-17 of one LSTM direction (gates i f c o)."""
    for gate in "ifco":
        model.weights(None if cifg and gate == "i" else n, depth)
    for gate in "ifco":
        model.weights(None if cifg and gate == "i" else n, n_output)
    for gate in "ifo":
        model.weights(n if peephole and not (cifg and gate == "i") else None)
    for gate in "ifco":
        model.bias(None if cifg and gate == "i" else n)
    model.weights(n_output if projection else None, n)
    model.bias(n_output if projection else None)


def lstm(rng, steps, units, hybrid, bidirectional, cifg=False, peephole=False, projection=False):
    model = _Model(rng, hybrid)
    n_output = units // 2 if projection else units
    model.sequence((steps, 1, units))
    for _ in range(2 if bidirectional else 1):
        _lstm_cell(model, units, units, n_output, cifg, peephole, projection)
    if not bidirectional:
        model.state(1, n_output)
        model.state(1, units)
        for _ in range(4):  # no layer norm
            model.weights(None)
        options = {"fused_activation_function": "TANH", "time_major": True}
        return model.build(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, options, 1)
    for _ in range(2):
        model.state(1, n_output)
        model.state(1, units)
    for _ in range(9):  # no aux input
        model.weights(None)
    options = {"fused_activation_function": "TANH", "time_major": True, "merge_outputs": True}
    return model.build(Op.BIDIRECTIONAL_SEQUENCE_LSTM, options, 1)


def rnn(rng, steps, units, hybrid, bidirectional):
    model = _Model(rng, hybrid)
    model.sequence((steps, 1, units))
    for _ in range(2 if bidirectional else 1):
        model.weights(units, units)
        model.weights(units, units)
        model.bias(units)
        model.state(1, units)
    options = {"fused_activation_function": "TANH", "time_major": True}
    if not bidirectional:
        return model.build(Op.UNIDIRECTIONAL_SEQUENCE_RNN, options, 1)
    for _ in range(3):  # no aux input
        model.weights(None)
    return model.build(Op.BIDIRECTIONAL_SEQUENCE_RNN, {**options, "merge_outputs": True}, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds of invokes per measurement")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--units", type=int, default=32)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    steps, units = args.steps, args.units
    cases = []
    for hybrid in (False, True):
        kind = "hybrid" if hybrid else "float"
        cases += [
            (f"UNIDIRECTIONAL_SEQUENCE_LSTM {kind}", lstm(rng, steps, units, hybrid, False)),
            (
                f"UNIDIRECTIONAL_SEQUENCE_LSTM {kind} cifg+peephole+projection",
                lstm(rng, steps, units, hybrid, False, True, True, True),
            ),
            (f"BIDIRECTIONAL_SEQUENCE_LSTM {kind}", lstm(rng, steps, units, hybrid, True)),
            (f"UNIDIRECTIONAL_SEQUENCE_RNN {kind}", rnn(rng, steps, units, hybrid, False)),
            (f"BIDIRECTIONAL_SEQUENCE_RNN {kind}", rnn(rng, steps, units, hybrid, True)),
        ]
    print(f"{steps} steps, batch 1, {units} units, one thread; median invoke over {args.min_time} s")
    print(f"{'case':<58}{'pytflite us':>12}{'numpy us':>10}{'builtin us':>12}{'/builtin':>10}")
    ratios = []

    def microseconds(interpreter, feeds) -> float:
        return median_invoke_seconds(prepared(interpreter, feeds), args.min_time) * 1e6

    for name, (model, feeds) in cases:
        ours = microseconds(pytflite.Interpreter(model_content=model, num_threads=1), feeds)
        jit.set_enabled(False)
        numpy_only = microseconds(pytflite.Interpreter(model_content=model, num_threads=1), feeds)
        jit.set_enabled(None)
        theirs = microseconds(litert_interpreter(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES", 1), feeds)
        ratios.append((name, ours / theirs))
        print(f"{name:<58}{ours:12.1f}{numpy_only:10.1f}{theirs:12.1f}{ours / theirs:9.2f}x")
    over = [f"{name} {ratio:.2f}x" for name, ratio in ratios if ratio > TARGET]
    print(
        f"target: each <= {TARGET:.0f}x LiteRT builtin: {'met' if not over else 'NOT met: ' + ', '.join(over)}"
    )


if __name__ == "__main__":
    main()

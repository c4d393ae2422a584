"""DEBUG: print every node as it runs, with a summary of its outputs (and inputs), like tinygrad's DEBUG.

    PYTFLITE_DEBUG=1 pytflite run model.tflite     # each node: op, time, outputs (min/max/mean/std)
    PYTFLITE_DEBUG=2 ...                           # inputs too
    PYTFLITE_DEBUG=3 ...                           # and the values themselves

or `pytflite run --debug 2 ...`, or `DebugTracer(interpreter, level=2).attach()` in Python. The tracer is a
profiler (it sits on `context.profiler`), so the normal invoke path is untouched when it is off; it
prints to stderr so stdout stays the command's own output. It sits beside the Interpreter, which
attaches it when PYTFLITE_DEBUG is set; the tools reuse its tensor summaries.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from .core.node import OPTIONAL_TENSOR
from .core.packed import PACKED_TYPES, unpack_packed
from .core.profiling import ProfilerHooks

ENV_VAR = "PYTFLITE_DEBUG"


def level_from_env() -> int:
    """The PYTFLITE_DEBUG level (0 when unset or not a number)."""
    try:
        return int(os.environ.get(ENV_VAR, "0") or 0)
    except ValueError:
        return 1


def tensor_value(subgraph: Any, index: int) -> np.ndarray | None:
    """A tensor's current contents as the user sees them (None when it has no data yet)."""
    tensor = subgraph.tensors[index]
    if tensor.data is None or tensor.data_is_stale:
        return None
    if tensor.type in PACKED_TYPES:
        return unpack_packed(tensor.data, int(np.prod(tensor.shape)), tensor.type).reshape(tensor.shape)
    return np.asarray(tensor.data)


def shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def array_summary(value: np.ndarray) -> str:
    """dtype[shape] and min / max / mean / std (non-finite counts when present), or the values if few."""
    value = np.asarray(value)
    head = f"{value.dtype.name}{shape_text(value.shape)}"
    if value.size == 0:
        return head + " (empty)"
    if value.dtype.kind in "OSUV":
        items = value.reshape(-1)[:3].tolist()
        return head + f" {items}{' ...' if value.size > 3 else ''}"
    if value.dtype.kind == "c":
        value = np.abs(value)
        head += " |z|"
    numbers = value.astype(np.float64)
    finite = np.isfinite(numbers)
    text = head
    if value.size <= 6:
        text += " " + np.array2string(value.reshape(-1), precision=6, separator=", ")
    if finite.any():
        shown = numbers[finite]
        text += f" min {shown.min():.6g} max {shown.max():.6g} mean {shown.mean():.6g} std {shown.std():.6g}"
    bad = value.size - int(finite.sum())
    if bad:
        nans = int(np.isnan(numbers).sum())
        text += f" ({nans} nan, {bad - nans} inf)"
    return text


class DebugTracer(ProfilerHooks):
    """Prints one block per node run; every subgraph of the interpreter is traced."""

    force_delegate_node_profiling = True  # print delegate nodes even when their kernels report ops

    def __init__(self, interpreter: Any, level: int = 1, stream: TextIO | None = None):
        self.interpreter = interpreter
        self.level = level
        self.stream = stream if stream is not None else sys.stderr
        self._open: list[tuple[str, int, int, int]] = []

    def attach(self, interpreter: Any = None) -> DebugTracer:
        super().attach(interpreter or self.interpreter)
        return self

    def detach(self, interpreter: Any = None) -> None:
        super().detach(interpreter or self.interpreter)

    # --- the profiler interface the runtime calls -----------------------------------------------

    def begin_event(self, tag: str, event_type: int, metadata1: int = 0, metadata2: int = 0) -> int:
        self._open.append((tag, metadata1, metadata2, time.perf_counter_ns()))
        if self.level >= 2:
            self._print_tensors(metadata2, metadata1, "in", inputs=True, header=(tag, None))
        return len(self._open) - 1

    def end_event(self, handle: int) -> None:
        tag, node_index, subgraph_index, begin = self._open[handle]
        elapsed_ms = (time.perf_counter_ns() - begin) / 1e6
        if handle == len(self._open) - 1:
            self._open.pop()
        self._print_tensors(subgraph_index, node_index, "out", inputs=False, header=(tag, elapsed_ms))

    def add_event(self, tag: str, event_type: int, elapsed_us: float, metadata1: int = 0, metadata2: int = 0):
        print(f"  {tag} (node {metadata1}) {elapsed_us / 1e3:.3f} ms", file=self.stream)

    # --- printing ---------------------------------------------------------------------------------

    def _print_tensors(
        self, subgraph_index: int, node_index: int, label: str, inputs: bool, header: tuple[str, float | None]
    ) -> None:
        subgraph = self.interpreter.subgraphs[subgraph_index]
        node, _ = subgraph.nodes[node_index]
        tag, elapsed_ms = header
        where = f"sg{subgraph_index} " if subgraph_index else ""
        if inputs or self.level < 2:
            timing = f"{elapsed_ms:8.3f} ms" if elapsed_ms is not None else ""
            print(f"{where}#{node_index:<4} {tag:<24} {timing}", file=self.stream)
        for t in node.inputs if inputs else node.outputs:
            if t == OPTIONAL_TENSOR:
                continue
            tensor = subgraph.tensors[t]
            value = tensor_value(subgraph, t)
            summary = "(no data)" if value is None else array_summary(value)
            print(f"    {label:<3} T#{t:<4} {tensor.name[:40]:<40} {summary}", file=self.stream)
            if self.level >= 3 and value is not None:
                text = np.array2string(value, threshold=64, precision=6)
                print("        " + text.replace("\n", "\n        "), file=self.stream)
        if not inputs and self.level >= 2:
            print(f"    {'':<3} {elapsed_ms:.3f} ms", file=self.stream)


def attach_from_env(interpreter: Any) -> DebugTracer | None:
    """Trace `interpreter` when PYTFLITE_DEBUG is set (>= 1); returns the tracer or None."""
    level = level_from_env()
    return DebugTracer(interpreter, level).attach() if level > 0 else None

"""The in-process batch job: read items, stack them into batches, predict, write each batch at once.

Items whose outputs already exist are skipped (a rerun resumes). An item that cannot be read, or that the
model cannot take, stops the job (`on_error="stop"`, the default: everything written so far stays) or is
skipped and listed in the report (`on_error="skip"`).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np

from .io import Item, ItemError, open_sink, open_source
from .predictor import BatchError, Predictor

ON_ERROR = ("stop", "skip")


@dataclass
class JobReport:
    """What a job did: items written now, items already done before it started, items that failed."""

    written: int = 0
    already_done: int = 0
    failed: list[str] = field(default_factory=list)  # "FILE: message", one an item


class Progress:
    """A one-line progress bar on a stream (stderr), redrawn at most ten times a second."""

    def __init__(self, total: int, enabled: bool, stream: TextIO | None = None):
        self.total = total
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self._start = self._drawn = time.perf_counter()

    def advance(self, count: int) -> None:
        self.done += count
        now = time.perf_counter()
        if self.enabled and (now - self._drawn >= 0.1 or self.done >= self.total):
            self._drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(fraction * 30)
        rate = self.done / max(now - self._start, 1e-9)
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {fraction:4.0%} {rate:.1f} items/s"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()


def run_local(
    predictor: Predictor,
    inputs: str | os.PathLike,
    output: str | os.PathLike,
    *,
    batch_size: int = 32,
    on_error: str = "stop",
    progress: bool | None = None,
) -> JobReport:
    """Score every item of `inputs` (see `io.open_source`) into `output` (see `io.open_sink`).
    `progress=None` draws the bar only when stderr is a terminal."""

    def score(keys: list[str], items: list[Item], sink, report: JobReport) -> None:
        predict_and_write(predictor, sink, keys, items, report)

    return run_job(predictor, inputs, output, score, batch_size, batch_size, on_error, progress)


def run_job(
    predictor, inputs, output, score, batch_size: int, chunk: int, on_error: str, progress
) -> JobReport:
    """The job loop both runners share: what is left to do, read in chunks of `chunk` items (an unreadable
    one stops the job after what was read is scored, or is skipped and listed), `score(keys, items, sink,
    report)` each chunk, progress."""
    if on_error not in ON_ERROR:
        raise BatchError(f"on_error must be one of {', '.join(ON_ERROR)}, not {on_error!r}")
    if batch_size < 1:
        raise BatchError(f"batch_size must be at least 1, not {batch_size}")
    source = open_source(inputs, predictor.input_names)
    sink = open_sink(output, predictor.output_names)
    done = sink.done_keys()
    todo = [key for key in source.keys if key not in done]
    report = JobReport(already_done=len(source.keys) - len(todo))
    bar = Progress(len(todo), sys.stderr.isatty() if progress is None else progress)
    try:
        for start in range(0, len(todo), chunk):
            keys, items = [], []
            for key in todo[start : start + chunk]:
                try:
                    item = source.load(key)
                    try:
                        predictor.check_item(item)
                    except BatchError as error:
                        raise ItemError(source.describe(key), str(error)) from None
                except ItemError as error:
                    if on_error == "stop":
                        score(keys, items, sink, report)  # keep what was read
                        raise
                    report.failed.append(str(error))
                    continue
                keys.append(key)
                items.append(item)
            score(keys, items, sink, report)
            bar.advance(len(todo[start : start + chunk]))
    finally:
        bar.close()
    return report


def predict_and_write(predictor: Predictor, sink, keys: list[str], items: list[Item], report: JobReport):
    for run_keys, run_items in same_shape_runs(keys, items):
        batch = {name: np.stack([item[name] for item in run_items]) for name in predictor.input_names}
        sink.write(run_keys, predictor(batch))
        report.written += len(run_keys)


def same_shape_runs(keys: list[str], items: list[Item]):
    """Consecutive items whose arrays have equal shapes (a model with dynamic item dimensions, e.g.
    images of several sizes, gets one batch per shape run)."""
    start = 0
    for end in range(1, len(items) + 1):
        if end == len(items) or _shapes(items[end]) != _shapes(items[start]):
            yield keys[start:end], items[start:end]
            start = end


def _shapes(item: Item) -> tuple:
    return tuple((name, np.shape(value)) for name, value in sorted(item.items()))

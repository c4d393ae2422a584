"""Batch inference: a model over a data set, in this process (`run_local`) or on Ray Data (`map_dataset`).

`import pytflite.batch` imports neither Ray nor pyarrow nor Pillow: `map_dataset` loads Ray on first use.
"""

from __future__ import annotations

from typing import Any

from .local import run_local
from .predictor import BatchError, Predictor

__all__ = ["BatchError", "Predictor", "map_dataset", "run_local"]


def __getattr__(name: str) -> Any:
    if name == "map_dataset":
        from .ray_data import map_dataset

        return map_dataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

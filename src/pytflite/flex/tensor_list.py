"""TensorFlow's TensorList: the value a VARIANT tensor holds between the list ops (kernels/lists.py).

A list is a value: every op that changes one returns a new TensorList (sharing the unchanged item
arrays, which no one writes), so a list read by two consumers, or carried through a WHILE loop, is never
changed under either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import DType


@dataclass(frozen=True)
class TensorList:
    """`element_dtype`; `element_shape`: a tuple with -1 for unknown dimensions, or None (unknown rank);
    `items`: one array per element, None for an element not set yet."""

    element_dtype: DType
    element_shape: tuple[int, ...] | None
    items: tuple[np.ndarray | None, ...]

    def __len__(self) -> int:
        return len(self.items)

"""Derived constants: arrays computed once per model from its constants, shared by its interpreters.

Kernels turn a model's constants into other arrays in prepare: a constant DEQUANTIZE's float32 weights
(fp16 models), a DENSIFY'd sparse weight, a filter laid out for the matrix product. Such an array
depends only on the model, the node's kernel (its Registration) and the interpreter's SubgraphConfig, so
every interpreter made from the same loaded model (model/loading.py) can use one copy instead of
computing and holding its own (tensorflow#48027). The model description owns the cache; each entry is
computed once, under its own lock, and frozen (read-only arrays), so interpreters on several threads can
share it safely.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .context import Context
    from .node import Node

Derived = Any  # an ndarray, or a tuple of them


class DerivedConstants:
    """One model's derived constants by key; `get` computes an entry the first time it is asked for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the dicts; each entry has its own lock for computing
        self._entries: dict[Hashable, _Entry] = {}
        self._held: set[int] = set()  # id() of every array held (kept alive here, so ids stay unique)

    def get(self, key: Hashable, compute: Callable[[], Derived]) -> Derived:
        """The entry for `key`, made by `compute()` (once, even when threads ask together) and frozen."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
        with entry.lock:
            if entry.value is None:
                value = _freeze(compute())
                with self._lock:
                    self._held.update(id(a) for a in _arrays(value))
                entry.value = value
        return entry.value

    def holds(self, array: np.ndarray | None) -> bool:
        """Whether `array` is one this cache holds (a derived constant, shared and read-only)."""
        return id(array) in self._held

    def __len__(self) -> int:
        with self._lock:
            return sum(entry.value is not None for entry in self._entries.values())


class _Entry:
    __slots__ = ("lock", "value")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.value: Derived = None


def derived_constant(context: Context, node: Node, what: str, compute: Callable[[], Derived]) -> Derived:
    """For kernels' prepare: an array (or tuple of arrays) that `compute()` derives from the node's
    constant inputs, options and the interpreter's config alone, computed once per model and shared,
    read-only, by every interpreter of it; `what` tells a node's derived constants apart. Subgraphs
    built without a model (by hand, in tests) have no cache: compute() every time."""
    cache = derived_constants_of(context)
    if cache is None:
        return _freeze(compute())
    return cache.get(derived_key(context, node, what), compute)


def derived_constants_of(context: Context) -> DerivedConstants | None:
    """The cache of the model the context's subgraph was built from (interpreter_builder.py sets it)."""
    return context.subgraph.derived_constants


def derived_key(context: Context, node: Node, what: str) -> Hashable:
    """What a derived constant depends on besides the model: the subgraph and node, the kernel that
    computes it (BUILTIN and BUILTIN_REF differ for some ops; a custom resolver may replace a kernel),
    the config (host, summation order, threads)."""
    subgraph = context.subgraph
    registration = subgraph.node_and_registration(node.index)[1]
    return (subgraph.index, node.index, registration, subgraph.config, what)


def _arrays(value: Derived) -> tuple[np.ndarray, ...]:
    return value if isinstance(value, tuple) else (value,)


def _freeze(value: Derived) -> Derived:
    for array in _arrays(value):
        array.flags.writeable = False
    return value

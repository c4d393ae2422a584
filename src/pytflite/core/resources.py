"""State shared by all subgraphs of one interpreter (TFLite's ResourceMap, ResourceIDMap and
InitializationStatusMap).

Resource variables and hash tables live here, keyed by an int resource id that RESOURCE tensors carry
from op to op (and into control-flow subgraphs). VAR_HANDLE numbers a variable by its (container,
shared_name) in order of first appearance across the model; HASHTABLE uses the table_id of its options;
both kinds share one id space, as in TFLite, and looking an id up as the wrong kind finds nothing.
Select TF ops' resources (TF's lookup tables, pytflite/flex) are shared by their (container,
shared_name) across the model's subgraphs, as in TF's resource manager, and numbered from 2**30 up,
clear of both. CALL_ONCE records here which init subgraphs have run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .types import TensorType

_SHARED_IDS_START = 1 << 30


@dataclass
class ResourceVariable:
    """A variable's current value: type, shape and data as last assigned (None before any assignment)."""

    type: TensorType | None = None
    value: np.ndarray | None = None

    def assign(self, tensor_type: TensorType, value: np.ndarray) -> None:
        self.type = tensor_type
        self.value = np.array(value, copy=True)


@dataclass
class StaticHashtable:
    """TFLite's only hash table: filled once by its first import, then read-only."""

    key_type: TensorType
    value_type: TensorType
    table: dict[Any, Any] = field(default_factory=dict)
    initialized: bool = False

    def import_items(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Later imports are ignored; a repeated key keeps its first value (std::map::insert)."""
        if self.initialized:
            return
        for key, value in zip(keys.reshape(-1).tolist(), values.reshape(-1).tolist()):
            self.table.setdefault(key, value)
        self.initialized = True

    def lookup(self, keys: np.ndarray, default: Any) -> list:
        return [self.table.get(key, default) for key in keys.reshape(-1).tolist()]


@dataclass
class Resources:
    """The interpreter-wide maps kernels reach through `context.resources`."""

    by_id: dict[int, Any] = field(default_factory=dict)  # ResourceVariable, StaticHashtable, a TF resource
    variable_ids: dict[tuple[str, str], int] = field(default_factory=dict)
    shared_ids: dict[tuple, int] = field(default_factory=dict)  # Select TF ops' resources by name
    initialized_subgraphs: set[int] = field(default_factory=set)
    # the subgraphs the Interpreter invokes itself: the primary one and every signature's
    entry_subgraphs: frozenset[int] = frozenset({0})

    def variable_id(self, container: str, shared_name: str) -> int:
        """The id of the variable (container, shared_name): a new one per new pair (VAR_HANDLE's init)."""
        return self.variable_ids.setdefault((container, shared_name), len(self.variable_ids))

    def shared(self, key: tuple, make: Callable[[], Any]) -> int:
        """The id of the TF resource shared under `key`, made by `make()` the first time it is asked for."""
        found = self.shared_ids.get(key)
        if found is None:
            found = self.shared_ids[key] = _SHARED_IDS_START + len(self.shared_ids)
            self.by_id[found] = make()
        return found

    def variable(self, resource_id: int, create: bool = False) -> ResourceVariable | None:
        if create and resource_id not in self.by_id:
            self.by_id[resource_id] = ResourceVariable()
        found = self.by_id.get(resource_id)
        return found if isinstance(found, ResourceVariable) else None

    def hashtable(
        self, resource_id: int, key_type: TensorType | None = None, value_type: TensorType | None = None
    ) -> StaticHashtable | None:
        """The table with this id; created (empty) when key and value types are given and it is new."""
        if key_type is not None and resource_id not in self.by_id:
            self.by_id[resource_id] = StaticHashtable(key_type, value_type)
        found = self.by_id.get(resource_id)
        return found if isinstance(found, StaticHashtable) else None

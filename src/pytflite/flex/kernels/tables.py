"""TF's lookup tables (tf.lookup.experimental.MutableHashTable, StaticHashTable as TF ops): a table op
makes a resource the RESOURCE tensor names by id, shared by (container, shared_name) across the model's
subgraphs as in TF's resource manager, so that an `insert` signature fills the table a `lookup`
signature reads. Checks and errors are TF 2.18.1's (its eager ops, recorded by hand).

LookupTableExportV2 gives the items in insertion order; TF gives its hash map's order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..dtypes import BY_NAME, DType
from ..node_def import TfNode
from ..registry import register
from .common import shape_text


@dataclass
class TfTable:
    """A table's items (key -> value array), its dtypes and value shape; a static table (HashTableV2)
    is filled once by its initializer and refuses inserts."""

    key_dtype: DType
    value_dtype: DType
    value_shape: tuple[int, ...] = ()
    static: bool = False
    items: dict[Any, np.ndarray] = field(default_factory=dict)
    initialized: bool = False


def _table_key(node: TfNode) -> tuple:
    """The name a table is shared by: (container, shared_name), the node's name when it asks for that,
    or the node itself (a table no other node shares)."""
    shared = node.text("shared_name", "")
    if not shared and node.attr("use_node_name_sharing", False):
        shared = node.name
    return (node.text("container", ""), shared) if shared else ("anonymous", id(node))


def _handle(resources, node: TfNode, **table: Any) -> np.ndarray:
    key = _table_key(node)
    resource_id = resources.shared(
        key, lambda: TfTable(node.attr("key_dtype"), node.attr("value_dtype"), **table)
    )
    return np.asarray(resource_id, np.int32)


@register("MutableHashTableV2", uses_resources=True)
def _mutable_table(node: TfNode, *, resources):
    """MutableHashTableV2: a table scalar keys map to scalar values in, shared by name."""
    return _handle(resources, node)


@register("MutableHashTableOfTensorsV2", uses_resources=True)
def _mutable_table_of_tensors(node: TfNode, *, resources):
    """MutableHashTableOfTensorsV2: a table whose values are tensors of `value_shape`."""
    return _handle(resources, node, value_shape=tuple(node.attr("value_shape", ())))


@register("HashTableV2", uses_resources=True)
def _static_table(node: TfNode, *, resources):
    """HashTableV2: a table filled once by its initializer (InitializeTableV2, LookupTableImportV2)."""
    return _handle(resources, node, static=True)


def _table(handle: np.ndarray, resources) -> TfTable:
    table = resources.by_id.get(int(handle.reshape(-1)[0]))
    if not isinstance(table, TfTable):
        raise ValueError(f"Resource handle {int(handle.reshape(-1)[0])} is not a lookup table")
    return table


def _type_string(array: np.ndarray) -> str:
    dtype = BY_NAME.get("string" if array.dtype == object else array.dtype.name)
    return dtype.type_string if dtype else str(array.dtype)


def _signature(table: TfTable, keys: np.ndarray, values: np.ndarray) -> None:
    """TF's signature check of a table op's keys and values (or default value) against the table."""
    have = f"resource, {_type_string(keys)}, {_type_string(values)}->{_type_string(values)}"
    value = table.value_dtype.type_string
    expected = f"resource, {table.key_dtype.type_string}, {value}->{value}"
    if have != expected:
        raise ValueError(f"Signature mismatch, have: {have} expected: {expected}")


def _key_list(keys: np.ndarray) -> list:
    return keys.reshape(-1).tolist()


def _values_for(table: TfTable, keys: np.ndarray, values: np.ndarray) -> list[np.ndarray]:
    """`values` as one array per key, refusing a shape other than keys.shape + value_shape."""
    expected = (*keys.shape, *table.value_shape)
    if values.shape != expected:
        raise ValueError(f"Expected shape {shape_text(expected)} for value, got {shape_text(values.shape)}")
    flat = values.reshape(len(_key_list(keys)), *table.value_shape)
    return [np.array(value, dtype=table.value_dtype.numpy) for value in flat]  # copies, kept by the table


@register("LookupTableFindV2", uses_resources=True)
def _find(node: TfNode, handle, keys, default_value, *, resources):
    """LookupTableFindV2: each key's value, the default value where a key is absent."""
    table = _table(handle, resources)
    _signature(table, keys, default_value)
    if table.static and not table.initialized:
        raise ValueError("Table not initialized.")
    shape = table.value_shape
    if default_value.shape not in (shape, (*keys.shape, *shape)):
        wanted = f"{shape_text(shape)} or {shape_text((*keys.shape, *shape))}" if shape else shape_text(shape)
        raise ValueError(f"Expected shape {wanted} for default value, got {shape_text(default_value.shape)}")
    flat_keys = _key_list(keys)
    defaults = np.broadcast_to(default_value, (*keys.shape, *shape)).reshape(len(flat_keys), *shape)
    result = np.empty((len(flat_keys), *shape), dtype=table.value_dtype.numpy)
    for i, key in enumerate(flat_keys):
        result[i] = table.items.get(key, defaults[i])
    return result.reshape((*keys.shape, *shape))


@register("LookupTableInsertV2", uses_resources=True)
def _insert(node: TfNode, handle, keys, values, *, resources):
    """LookupTableInsertV2: keys set to values (a later one of a repeated key wins)."""
    table = _table(handle, resources)
    _signature(table, keys, values)
    if table.static:
        raise ValueError("Insert not supported by InitializableLookupTable implementations")
    for key, value in zip(_key_list(keys), _values_for(table, keys, values), strict=True):
        table.items[key] = value
    return ()


@register("LookupTableRemoveV2", uses_resources=True)
def _remove(node: TfNode, handle, keys, *, resources):
    """LookupTableRemoveV2: the keys taken out (absent ones ignored)."""
    table = _table(handle, resources)
    if table.static:
        raise ValueError("Remove not supported by InitializableLookupTable implementations")
    for key in _key_list(keys):
        table.items.pop(key, None)
    return ()


@register("LookupTableSizeV2", uses_resources=True)
def _size(node: TfNode, handle, *, resources):
    """LookupTableSizeV2: the number of items (int64)."""
    return np.asarray(len(_table(handle, resources).items), np.int64)


@register("LookupTableExportV2", uses_resources=True)
def _export(node: TfNode, handle, *, resources):
    """LookupTableExportV2: every key and its value (in insertion order)."""
    table = _table(handle, resources)
    keys = np.empty(len(table.items), dtype=table.key_dtype.numpy)
    keys[:] = list(table.items)
    values = np.empty((len(table.items), *table.value_shape), dtype=table.value_dtype.numpy)
    for i, value in enumerate(table.items.values()):
        values[i] = value
    return keys, values


def _initialize(node: TfNode, handle, keys, values, resources) -> tuple:
    """A static table's one initialization; again with the same items is a no-op, as in TF."""
    table = _table(handle, resources)
    _signature(table, keys, values)
    items: dict[Any, np.ndarray] = {}
    for key, value in zip(_key_list(keys), _values_for(table, keys, values), strict=True):
        if key in items and not np.array_equal(items[key], value):
            shown = key.decode(errors="replace") if isinstance(key, bytes) else key
            raise ValueError(
                f"HashTable has different value for same key. Key {shown} has {_shown(items[key])} and trying "
                f"to add value {_shown(value)}"
            )
        items[key] = value
    if table.initialized:
        same = items.keys() == table.items.keys() and all(
            np.array_equal(items[k], table.items[k]) for k in items
        )
        if not same:
            raise ValueError("Table was already initialized with different data.")
        return ()
    table.items, table.initialized = items, True
    return ()


def _shown(value: np.ndarray) -> str:
    item = value.reshape(-1)[0] if value.size == 1 else value
    return item.decode(errors="replace") if isinstance(item, bytes) else str(item)


@register("InitializeTableV2", uses_resources=True)
def _initialize_table(node: TfNode, handle, keys, values, *, resources):
    """InitializeTableV2: a static table's items, once."""
    return _initialize(node, handle, keys, values, resources)


@register("LookupTableImportV2", uses_resources=True)
def _import(node: TfNode, handle, keys, values, *, resources):
    """LookupTableImportV2: a mutable table's items replaced; a static table initialized, once."""
    table = _table(handle, resources)
    if table.static:
        return _initialize(node, handle, keys, values, resources)
    _signature(table, keys, values)
    table.items = dict(zip(_key_list(keys), _values_for(table, keys, values), strict=True))
    return ()

"""Hash tables: HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND and HASHTABLE_SIZE.

TFLite has one kind of table, int64 -> string or string -> int64, kept in the interpreter's resources
(core/resources.py) under the table_id of HASHTABLE's options. The first HASHTABLE_IMPORT fills it and
later ones are ignored; HASHTABLE_FIND answers a missing key with the default value's first element.
"""

from __future__ import annotations

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure, ensure_eq
from .common import check_arity, input_tensor, output_tensor
from .registry import register_builtin

_KEY_VALUE_TYPES = ((TensorType.INT64, TensorType.STRING), (TensorType.STRING, TensorType.INT64))


def _check_pair(key_type: TensorType, value_type: TensorType, what: str) -> None:
    ensure(
        (key_type, value_type) in _KEY_VALUE_TYPES,
        f"{what}: keys {key_type.name} and values {value_type.name}; tables map INT64 to STRING or STRING to INT64",
    )


def _check_handle(context, node) -> None:
    handle = input_tensor(context, node, 0)
    ensure_eq(handle.type.name, TensorType.RESOURCE.name, "table handle type")
    ensure_eq(handle.shape, (1,), "table handle shape")


def _table(context, node, keys, values):
    resource_id = int(context.tensors[node.inputs[0]].data.reshape(-1)[0])
    table = context.resources.hashtable(resource_id)
    ensure(table is not None, f"resource {resource_id} is not a hash table")
    ensure(
        (table.key_type, table.value_type) == (keys.type, values.type),
        f"table {resource_id} maps {table.key_type.name} to {table.value_type.name}, not "
        f"{keys.type.name} to {values.type.name}",
    )
    return table


def hashtable_prepare(context, node):
    check_arity(node, 0)
    options = node.builtin_data
    _check_pair(TensorType(options.key_dtype), TensorType(options.value_dtype), "HASHTABLE")
    output = output_tensor(context, node)
    ensure_eq(output.type.name, TensorType.RESOURCE.name, "HASHTABLE output type")
    context.resize_tensor(output, (1,))


def hashtable_invoke(context, node):
    options = node.builtin_data
    context.tensors[node.outputs[0]].data[0] = options.table_id
    context.resources.hashtable(
        options.table_id, TensorType(options.key_dtype), TensorType(options.value_dtype)
    )


def hashtable_import_prepare(context, node):
    check_arity(node, 3, outputs=0)
    _check_handle(context, node)
    keys, values = input_tensor(context, node, 1), input_tensor(context, node, 2)
    _check_pair(keys.type, values.type, "HASHTABLE_IMPORT")
    ensure_eq(keys.shape, values.shape, "HASHTABLE_IMPORT keys shape vs values shape")


def hashtable_import_invoke(context, node):
    keys, values = context.tensors[node.inputs[1]], context.tensors[node.inputs[2]]
    _table(context, node, keys, values).import_items(keys.data, values.data)


def hashtable_find_prepare(context, node):
    check_arity(node, 3)
    _check_handle(context, node)
    keys, default = input_tensor(context, node, 1), input_tensor(context, node, 2)
    output = output_tensor(context, node)
    ensure_eq(default.type.name, output.type.name, "HASHTABLE_FIND default value type vs output type")
    _check_pair(keys.type, output.type, "HASHTABLE_FIND")
    context.resize_tensor(output, keys.shape)


def hashtable_find_invoke(context, node):
    keys, default = context.tensors[node.inputs[1]], context.tensors[node.inputs[2]]
    output = context.tensors[node.outputs[0]]
    table = _table(context, node, keys, output)
    ensure(table.initialized, "hashtable need to be initialized before using")
    ensure(default.data.size > 0, "HASHTABLE_FIND default value is empty")
    found = table.lookup(keys.data, default.data.reshape(-1)[0])
    output.data.reshape(-1)[:] = np.array(found, dtype=output.data.dtype) if found else []


def hashtable_size_prepare(context, node):
    check_arity(node, 1)
    _check_handle(context, node)
    output = output_tensor(context, node)
    ensure_eq(output.type.name, TensorType.INT64.name, "HASHTABLE_SIZE output type")
    context.resize_tensor(output, (1,))


def hashtable_size_invoke(context, node):
    resource_id = int(context.tensors[node.inputs[0]].data.reshape(-1)[0])
    table = context.resources.hashtable(resource_id)
    ensure(table is not None, f"resource {resource_id} is not a hash table")
    context.tensors[node.outputs[0]].data[0] = len(table.table)


register_builtin(
    BuiltinOperator.HASHTABLE, (1, 1), prepare=hashtable_prepare, invoke=hashtable_invoke, stateful=True
)
register_builtin(
    BuiltinOperator.HASHTABLE_IMPORT,
    (1, 1),
    types=(TensorType.RESOURCE,),
    prepare=hashtable_import_prepare,
    invoke=hashtable_import_invoke,
    stateful=True,
)
register_builtin(
    BuiltinOperator.HASHTABLE_FIND,
    (1, 1),
    types=(TensorType.RESOURCE,),
    prepare=hashtable_find_prepare,
    invoke=hashtable_find_invoke,
    stateful=True,
)
register_builtin(
    BuiltinOperator.HASHTABLE_SIZE,
    (1, 1),
    types=(TensorType.RESOURCE,),
    prepare=hashtable_size_prepare,
    invoke=hashtable_size_invoke,
    stateful=True,
)

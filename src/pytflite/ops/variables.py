"""Resource variables: VAR_HANDLE, READ_VARIABLE and ASSIGN_VARIABLE.

A variable lives in the interpreter's resources (core/resources.py), not in a tensor: VAR_HANDLE writes
its id into a RESOURCE tensor, and READ_VARIABLE / ASSIGN_VARIABLE look the variable up by that id, so
every subgraph (a CALL_ONCE initialiser, a loop body) reaches the same value. Assigning replaces type,
shape and value; reading one never assigned fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.types import BuiltinOperator, TensorType
from ..errors import ensure, ensure_eq
from .common import ANY_TYPE, check_arity, input_tensor, output_tensor
from .registry import register_builtin

_HANDLE_TYPES = (TensorType.RESOURCE, TensorType.INT32)


@dataclass(frozen=True, slots=True)
class VarHandleData:
    resource_id: int  # one per (container, shared_name), numbered as the model is built


def var_handle_init(context, options, length):
    return VarHandleData(context.resources.variable_id(options.container or "", options.shared_name or ""))


def var_handle_prepare(context, node):
    output = output_tensor(context, node)
    ensure(
        np.prod(output.shape, dtype=np.int64) > 0,
        f"VAR_HANDLE output shape {list(output.shape)} has no element to hold the resource id",
    )
    context.resize_tensor(output, output.shape)  # memory for the id


def var_handle_invoke(context, node):
    context.tensors[node.outputs[0]].data.reshape(-1)[0] = node.user_data.resource_id


def _check_handle(context, node) -> None:
    handle = input_tensor(context, node, 0)
    ensure(
        handle.type in _HANDLE_TYPES,
        f"variable handle is {handle.type.name}, not RESOURCE or INT32",
    )
    ensure_eq(int(np.prod(handle.shape, dtype=np.int64)), 1, "variable handle element count")


def _resource_id(context, node) -> int:
    return int(context.tensors[node.inputs[0]].data.reshape(-1)[0])


def read_variable_prepare(context, node):
    check_arity(node, 1)
    _check_handle(context, node)
    output = output_tensor(context, node)
    if len(output.shape) == 0:  # the converter leaves a variable's shape unknown this way
        context.set_tensor_to_dynamic(output)


def read_variable_invoke(context, node):
    resource_id = _resource_id(context, node)
    variable = context.resources.variable(resource_id)
    ensure(
        variable is not None and variable.value is not None,
        f"READ_VARIABLE of variable {resource_id}, which has not been assigned",
    )
    output = context.tensors[node.outputs[0]]
    ensure_eq(variable.type.name, output.type.name, "READ_VARIABLE variable type vs output type")
    if output.allocation_type.name == "DYNAMIC":
        context.resize_tensor(output, variable.value.shape)
    ensure_eq(variable.value.shape, output.shape, "READ_VARIABLE variable shape vs output shape")
    np.copyto(output.data, variable.value)


def assign_variable_prepare(context, node):
    check_arity(node, 2, outputs=0)
    _check_handle(context, node)
    input_tensor(context, node, 1)  # the value: present (TFLite's GetInputSafe refuses an optional one)


def assign_variable_invoke(context, node):
    value = context.tensors[node.inputs[1]]
    variable = context.resources.variable(_resource_id(context, node), create=True)
    ensure(variable is not None, f"resource {_resource_id(context, node)} is not a variable")
    variable.assign(value.type, value.data)


register_builtin(
    BuiltinOperator.VAR_HANDLE,
    (1, 1),
    op_data=VarHandleData,
    init=var_handle_init,
    prepare=var_handle_prepare,
    invoke=var_handle_invoke,
    stateful=True,
)
register_builtin(
    BuiltinOperator.READ_VARIABLE,
    (1, 1),
    types=_HANDLE_TYPES,
    prepare=read_variable_prepare,
    invoke=read_variable_invoke,
    stateful=True,
)
register_builtin(
    BuiltinOperator.ASSIGN_VARIABLE,
    (1, 1),
    types=ANY_TYPE,
    prepare=assign_variable_prepare,
    invoke=assign_variable_invoke,
    stateful=True,
)

"""The kernel convention (docs/architecture.md, Kernels), checked on every prepare the suite runs.

Each builtin kernel declares, when it registers, the frozen op-data class its prepare leaves in
`node.user_data` (or None: no user data). Registration already refuses a class that is not a frozen
dataclass; what only running the kernel shows is whether prepare keeps its word, so the suite wraps
Subgraph's per-node prepare and checks every builtin node it prepares, in every test.
"""

from __future__ import annotations

import dataclasses

from pytflite.core.subgraph import Subgraph
from pytflite.ops.registry import (
    builtin_kernels,
    custom_kernel_infos,
    default_custom_kernels,
    kernel_infos,
)


def _declared_op_data() -> dict[int, type | None]:
    """id(registration) -> its declared op-data class, for the registry's own registrations only (a test
    may register a kernel of its own for a builtin code)."""
    by_op = {}
    for info in kernel_infos():
        for version in range(info.versions[0], info.versions[1] + 1):
            by_op[(int(info.op), version)] = info.op_data
    declared = {}
    for table in (builtin_kernels(), builtin_kernels(reference=True)):
        for key, registration in table.items():
            declared[id(registration)] = by_op[key]
    by_name = {info.custom_name: info.op_data for info in custom_kernel_infos()}
    for (name, _), registration in default_custom_kernels().items():
        declared[id(registration)] = by_name[name]
    return declared


def op_data_violation(user_data, op_data: type | None) -> str | None:
    """Why `user_data` breaks the convention for a kernel declaring `op_data`; None when it keeps it."""
    if user_data is None:
        return None
    if op_data is None:
        return f"leaves {type(user_data).__name__} in user_data but declares no op_data"
    if not isinstance(user_data, op_data):
        return f"leaves {type(user_data).__name__} in user_data, declared op_data is {op_data.__name__}"
    if not (dataclasses.is_dataclass(user_data) and type(user_data).__dataclass_params__.frozen):
        return f"op data {type(user_data).__name__} is not a frozen dataclass"
    return None


def install() -> None:
    """Wrap Subgraph._prepare_node so that a kernel breaking the convention fails the test running it."""
    declared = _declared_op_data()
    prepare_node = Subgraph._prepare_node

    def checked_prepare_node(self, node, registration):
        status = prepare_node(self, node, registration)
        if id(registration) in declared:
            problem = op_data_violation(node.user_data, declared[id(registration)])
            if problem:
                raise AssertionError(f"{registration.op_name} v{registration.version} {problem}")
        return status

    Subgraph._prepare_node = checked_prepare_node

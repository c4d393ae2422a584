"""The TF kernels Flex nodes run, keyed by TF op name.

A kernel is `compute(node, *inputs)`: the TfNode (its attrs) and the input values as NumPy arrays (a
variant input holds its TensorList in a 0-d object array) -> the output value, or a tuple of them, which
the Flex node copies into its outputs. It never keeps an input array: those are the interpreter's memory.
`types` names, per type attr, the dtypes the kernel computes (TF registers a kernel per type the same way);
a node whose attrs name another gets no kernel and is reported with the missing ones. A kernel of an op
with state (a TF resource: lookup tables) is registered with `uses_resources=True` and also receives
`resources=`, the interpreter's Resources (core/resources.py), where such state lives and is shared by
name across the model's subgraphs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .dtypes import DType
from .node_def import TfNode

TfCompute = Callable[..., Any]


@dataclass(frozen=True)
class TfKernel:
    op: str
    compute: TfCompute
    types: Mapping[str, frozenset[str]] = field(default_factory=dict)
    doc: str = ""
    uses_resources: bool = False

    def refused_types(self, node: TfNode) -> list[str]:
        """The `attr=dtype` settings of `node` this kernel does not compute."""
        refused = []
        for name, allowed in self.types.items():
            value = node.attrs.get(name)
            values = value if isinstance(value, list) else [value]
            refused += [f"{name}={v.name}" for v in values if isinstance(v, DType) and v.name not in allowed]
        return refused


_KERNELS: dict[str, TfKernel] = {}


def register(
    op: str,
    compute: TfCompute | None = None,
    *,
    types: Mapping[str, Iterable[str]] | None = None,
    uses_resources: bool = False,
) -> Any:
    """Add the kernel of TF op `op` (replacing pytflite's own, if it has one); with `compute` omitted,
    a decorator. `types`: per type attr (e.g. "T"), the dtype names ("float64", "int64", "string", ...)
    it computes; attrs not named are not checked. `uses_resources`: compute also takes `resources=`."""

    def add(function: TfCompute) -> TfCompute:
        checked = {name: frozenset(allowed) for name, allowed in (types or {}).items()}
        doc = (function.__doc__ or "").strip().split("\n")[0]
        _KERNELS[op] = TfKernel(op, function, checked, doc, uses_resources)
        return function

    return add if compute is None else add(compute)


def unregister(op: str) -> None:
    """Remove the kernel of `op` (one a test or a user added)."""
    del _KERNELS[op]


def kernel_for(op: str) -> TfKernel | None:
    return _KERNELS.get(op)


def registered_kernels() -> dict[str, TfKernel]:
    """Every registered kernel by op name (a copy)."""
    return dict(_KERNELS)


def type_settings(node: TfNode) -> str:
    """`node`'s type attrs as TF prints them in a kernel lookup error: "T=float64, Tidx=int32"."""
    settings = []
    for name, value in sorted(node.attrs.items()):
        if isinstance(value, DType):
            settings.append(f"{name}={value.name}")
        elif isinstance(value, list) and value and all(isinstance(v, DType) for v in value):
            settings.append(f"{name}=[{', '.join(v.name for v in value)}]")
    return ", ".join(settings)

"""The builtin kernel table: each op family module registers its kernels here at import.

    register_builtin(BuiltinOperator.ADD, versions=(1, 6), prepare=..., invoke=...)

`versions` is the inclusive range of op versions the kernel accepts, matching what TFLite's
BuiltinOpResolver registers for that op; a model asking for another version fails to load with
TFLite's "Didn't find op for builtin opcode" error. A kernel registered with `reference=True` replaces
the default one only in BuiltinRefOpResolver (OpResolverType.BUILTIN_REF), for the few ops whose
reference and optimized TFLite kernels round differently.
"""

from __future__ import annotations

import dataclasses
import importlib

from ..core.node import Registration
from ..core.types import BuiltinOperator

# One module per op family; importing it registers its kernels.
_FAMILIES = ("activations", "conv", "elementwise", "linear", "reduce", "shape")

_DEFAULT: dict[tuple[int, int], Registration] = {}
_REFERENCE: dict[tuple[int, int], Registration] = {}


def register_builtin(
    op: BuiltinOperator,
    versions: tuple[int, int],
    *,
    reference: bool = False,
    **callbacks,
) -> Registration:
    """Add a kernel (its init/prepare/invoke/free/profiling_string functions) for a version range."""
    table = _REFERENCE if reference else _DEFAULT
    first, last = versions
    registration = Registration(builtin_code=op, **callbacks)
    for version in range(first, last + 1):
        key = (int(op), version)
        if key in table:
            raise RuntimeError(f"{op.name} version {version} registered twice")
        table[key] = dataclasses.replace(registration, version=version)
    return registration


def builtin_kernels(reference: bool = False) -> dict[tuple[int, int], Registration]:
    """All builtin kernels by (op code, version); BUILTIN_REF's variants when `reference` is set."""
    for family in _FAMILIES:
        importlib.import_module(f"{__package__}.{family}")
    return {**_DEFAULT, **_REFERENCE} if reference else dict(_DEFAULT)

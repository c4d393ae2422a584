"""The builtin kernel table: each op family module registers its kernels here at import.

    register_builtin(BuiltinOperator.ADD, (1, 6), types=(TensorType.FLOAT32, ...), prepare=..., invoke=...)

`versions` is the inclusive range of op versions the kernel accepts, matching what TFLite's
BuiltinOpResolver registers for that op; a model asking for another version fails to load with
TFLite's "Didn't find op for builtin opcode" error. A kernel registered with `reference=True` replaces
the default one only in BuiltinRefOpResolver (OpResolverType.BUILTIN_REF), for the few ops whose
reference and optimized TFLite kernels round differently. `types` lists the input element types the
kernel accepts; it feeds the generated table of supported ops (docs/ops.md), so kernels should check
their inputs against the same tuple.
"""

from __future__ import annotations

import dataclasses
import importlib

from ..core.node import Registration
from ..core.types import BuiltinOperator, TensorType

# One module per op family; importing it registers its kernels.
_FAMILIES = (
    "activations",
    "control_flow",
    "conv",
    "densify",
    "elementwise",
    "gather",
    "hashtable",
    "linear",
    "pooling",
    "quantize",
    "recurrent",
    "reduce",
    "shape",
    "slicing",
    "spatial",
    "spectral",
    "unary",
    "variables",
)

_DEFAULT: dict[tuple[int, int], Registration] = {}
_REFERENCE: dict[tuple[int, int], Registration] = {}


@dataclasses.dataclass(frozen=True)
class KernelInfo:
    """What the docs table says about one builtin kernel."""

    op: BuiltinOperator
    versions: tuple[int, int]
    types: tuple[TensorType, ...]
    source: str  # where its family lives: "ops/linear.py", or "ops/conv/" for a family package


_INFO: list[KernelInfo] = []


def register_builtin(
    op: BuiltinOperator,
    versions: tuple[int, int],
    *,
    types: tuple[TensorType, ...] = (),
    reference: bool = False,
    **callbacks,
) -> Registration:
    """Add a kernel (its init/prepare/invoke/free/profiling_string functions) for a version range."""
    table = _REFERENCE if reference else _DEFAULT
    if not reference:
        family, *inner = callbacks["invoke"].__module__.removeprefix(f"{__package__}.").split(".")
        source = f"ops/{family}/" if inner else f"ops/{family}.py"
        _INFO.append(KernelInfo(op, versions, tuple(types), source))
    first, last = versions
    registration = Registration(builtin_code=op, **callbacks)
    for version in range(first, last + 1):
        key = (int(op), version)
        if key in table:
            raise RuntimeError(f"{op.name} version {version} registered twice")
        table[key] = dataclasses.replace(registration, version=version)
    return registration


def register_builtin_and_reference(
    op: BuiltinOperator,
    versions: tuple[int, int],
    *,
    types: tuple[TensorType, ...],
    prepare_for,
    **callbacks,
) -> None:
    """Register the kernel LiteRT's optimized build runs and its BUILTIN_REF twin, which differ only in
    what `prepare_for(optimized)` sets up (e.g. how quantized outputs are rounded)."""
    for optimized in (True, False):
        register_builtin(
            op, versions, types=types, reference=not optimized, prepare=prepare_for(optimized), **callbacks
        )


def _load_families() -> None:
    for family in _FAMILIES:
        importlib.import_module(f"{__package__}.{family}")


def builtin_kernels(reference: bool = False) -> dict[tuple[int, int], Registration]:
    """All builtin kernels by (op code, version); BUILTIN_REF's variants when `reference` is set."""
    _load_families()
    return {**_DEFAULT, **_REFERENCE} if reference else dict(_DEFAULT)


def kernel_infos() -> list[KernelInfo]:
    """One entry per registered builtin kernel, sorted by op name (for the docs table)."""
    _load_families()
    return sorted(_INFO, key=lambda info: info.op.name)

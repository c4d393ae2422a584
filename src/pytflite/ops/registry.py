"""The builtin kernel table: each op family module registers its kernels here at import.

    register_builtin(BuiltinOperator.ADD, (1, 6), types=(TensorType.FLOAT32, ...), op_data=AddData,
                     prepare_for=add_prepare, invoke=add_invoke)

`versions` is the inclusive range of op versions the kernel accepts, matching what TFLite's
BuiltinOpResolver registers for that op; a model asking for another version fails to load with
TFLite's "Didn't find op for builtin opcode" error. `types` lists the input element types the kernel
accepts; it feeds the generated table of supported ops (docs/ops.md), so kernels should check their
inputs against the same tuple.

`op_data` is the frozen dataclass the kernel's prepare leaves in `node.user_data` (None: the kernel keeps
no user data), the convention of docs/architecture.md that a test checks for every registered kernel.
`prepare_for`, given instead of `prepare` for the ops whose reference and optimized TFLite kernels round
or sum differently, is a factory the registry calls once per resolver (ops/kernel_type.py):
`prepare_for(OPTIMIZED)` is BuiltinOpResolver's prepare, `prepare_for(REFERENCE)` that of its BUILTIN_REF
twin (BuiltinRefOpResolver); one call registers both, so the twins cannot drift apart. `stateful` marks
an op with state, side effects or randomness, or one that calls subgraphs: it is never folded.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable

from ..core.node import KernelFn, Registration
from ..core.types import BuiltinOperator, TensorType
from .kernel_type import OPTIMIZED, REFERENCE, KernelType

# One module per op family; importing it registers its kernels.
_FAMILIES = (
    "activations",
    "audio",
    "bitcast",
    "control_flow",
    "conv",
    "densify",
    "detection",
    "dilate",
    "elementwise",
    "gather",
    "hadamard",
    "hashtable",
    "legacy",
    "linear",
    "numeric_verify",
    "pooling",
    "quantize",
    "random",
    "recurrent",
    "reduce",
    "reduce_window",
    "shape",
    "slicing",
    "spatial",
    "spectral",
    "stablehlo",
    "unary",
    "variables",
)

_DEFAULT: dict[tuple[int, int], Registration] = {}
_REFERENCE: dict[tuple[int, int], Registration] = {}
_CUSTOM: dict[tuple[str, int], Registration] = {}  # the custom ops LiteRT's BuiltinOpResolver includes
_CUSTOM_REFERENCE: dict[tuple[str, int], Registration] = {}  # their BUILTIN_REF twins where they differ
_KERNELS: set[Registration] = set()  # every registration of the four tables (is_builtin_kernel)


@dataclasses.dataclass(frozen=True)
class KernelInfo:
    """What the docs table says about one builtin kernel."""

    op: BuiltinOperator
    versions: tuple[int, int]
    types: tuple[TensorType, ...]
    source: str  # where its family lives: "ops/pooling.py", or "ops/linear/" for a family package
    op_data: type | None  # what prepare leaves in node.user_data; None: nothing
    has_builtin_ref_twin: bool  # BUILTIN_REF runs a variant of this kernel
    custom_name: str | None = None  # set for the custom ops BuiltinOpResolver registers by default

    @property
    def name(self) -> str:
        return self.custom_name or self.op.name


_INFO: list[KernelInfo] = []
_CUSTOM_INFO: list[KernelInfo] = []


def register_builtin(
    op: BuiltinOperator,
    versions: tuple[int, int],
    *,
    types: tuple[TensorType, ...] = (),
    op_data: type | None = None,
    prepare_for: Callable[[KernelType], KernelFn] | None = None,
    stateful: bool = False,
    **callbacks: Callable,
) -> Registration:
    """Add a kernel (its init/prepare/invoke/free/profiling_string functions) for a version range, and
    its BUILTIN_REF twin when its prepare comes from `prepare_for` (see the module docstring)."""
    _check_op_data(op.name, op_data)
    source = _source(callbacks["invoke"])
    _INFO.append(KernelInfo(op, versions, tuple(types), source, op_data, prepare_for is not None))
    if prepare_for is not None:
        callbacks["prepare"] = prepare_for(OPTIMIZED)
    # a builtin prepare reads only shapes, types, quantization and constant values (one reading other
    # values makes its outputs dynamic), unless the op is stateful
    registration = Registration(
        builtin_code=op,
        stateless=not stateful,
        **callbacks,
    )
    _add(_DEFAULT, registration, versions)
    if prepare_for is not None:
        _add(_REFERENCE, dataclasses.replace(registration, prepare=prepare_for(REFERENCE)), versions)
    return registration


def register_custom(
    name: str,
    versions: tuple[int, int],
    *,
    types: tuple[TensorType, ...] = (),
    op_data: type | None = None,
    prepare_for: Callable[[KernelType], KernelFn] | None = None,
    **callbacks: Callable,
) -> Registration:
    """Add a custom op that LiteRT's BuiltinOpResolver registers by default (TFLite_Detection_PostProcess,
    AudioSpectrogram, Mfcc...): every resolver built from BuiltinOpResolver finds it under `name`. Its
    init receives the op's flexbuffer options (custom_initial_data), as any custom op's. `prepare_for`
    makes the prepare of it and of its BUILTIN_REF twin, as register_builtin's."""
    _check_op_data(name, op_data)
    reference_prepare = None
    if prepare_for is not None:
        callbacks["prepare"], reference_prepare = prepare_for(OPTIMIZED), prepare_for(REFERENCE)
    _CUSTOM_INFO.append(
        KernelInfo(
            BuiltinOperator.CUSTOM, versions, tuple(types), _source(callbacks["invoke"]), op_data, False, name
        )
    )
    registration = Registration(builtin_code=BuiltinOperator.CUSTOM, custom_name=name, **callbacks)
    for version in range(versions[0], versions[1] + 1):
        if (name, version) in _CUSTOM:
            raise RuntimeError(f"{name} version {version} registered twice")
        _CUSTOM[(name, version)] = dataclasses.replace(registration, version=version)
        _KERNELS.add(_CUSTOM[(name, version)])
        if reference_prepare is not None:
            _CUSTOM_REFERENCE[(name, version)] = dataclasses.replace(
                registration, version=version, prepare=reference_prepare
            )
            _KERNELS.add(_CUSTOM_REFERENCE[(name, version)])
    return registration


def _check_op_data(name: str, op_data: type | None) -> None:
    if op_data is not None and not _is_frozen_dataclass(op_data):
        raise TypeError(f"{name}: op_data {op_data!r} is not a frozen dataclass")


def _source(invoke: Callable) -> str:
    """Where a kernel's family lives: "ops/pooling.py", or "ops/linear/" for a family package."""
    family, *inner = invoke.__module__.removeprefix(f"{__package__}.").split(".")
    return f"ops/{family}/" if inner else f"ops/{family}.py"


def _add(table: dict[tuple[int, int], Registration], registration: Registration, versions) -> None:
    op = BuiltinOperator(registration.builtin_code)
    first, last = versions
    for version in range(first, last + 1):
        key = (int(op), version)
        if key in table:
            raise RuntimeError(f"{op.name} version {version} registered twice")
        table[key] = dataclasses.replace(registration, version=version)
        _KERNELS.add(table[key])


def _is_frozen_dataclass(kind: type) -> bool:
    return dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen


def _load_families() -> None:
    for family in _FAMILIES:
        importlib.import_module(f"{__package__}.{family}")


def builtin_kernels(reference: bool = False) -> dict[tuple[int, int], Registration]:
    """All builtin kernels by (op code, version); BUILTIN_REF's variants when `reference` is set."""
    _load_families()
    return {**_DEFAULT, **_REFERENCE} if reference else dict(_DEFAULT)


def default_custom_kernels(reference: bool = False) -> dict[tuple[str, int], Registration]:
    """The custom ops BuiltinOpResolver registers by default, by (name, version); BUILTIN_REF's twins
    when `reference` is set."""
    _load_families()
    return {**_CUSTOM, **_CUSTOM_REFERENCE} if reference else dict(_CUSTOM)


def is_builtin_kernel(registration: Registration) -> bool:
    """Whether `registration` is one of the table's kernels (or a resolver's equal copy of one) rather
    than a user's, even one registered under a builtin code. (Called for every node a model adds: the
    families are not loaded here, as any table registration exists only once they are.)"""
    try:
        return registration in _KERNELS
    except TypeError:  # a user's callback object that cannot be hashed
        return False


def kernel_infos() -> list[KernelInfo]:
    """One entry per registered builtin kernel, sorted by op name (for the docs table)."""
    _load_families()
    return sorted(_INFO, key=lambda info: info.op.name)


def custom_kernel_infos() -> list[KernelInfo]:
    """One entry per default custom op, sorted by name."""
    _load_families()
    return sorted(_CUSTOM_INFO, key=lambda info: info.name)

"""Op resolvers: map an operator code (or custom name) and version to a kernel Registration.

Lookups are exact on (op, version), as in TFLite: a model asking for ADD version 7 does not get the
version 6 kernel. MutableOpResolver is how users add Python custom ops and override builtins:

    resolver = MutableOpResolver()
    resolver.add_all(BuiltinOpResolver())
    resolver.add_custom("Atan", Registration(prepare=..., invoke=...))
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..core.node import Registration
from ..core.types import BuiltinOperator

_CALLBACKS = ("init", "free", "prepare", "invoke", "profiling_string")


class OpResolver:
    """Resolver interface (tflite::OpResolver): both lookups return None when nothing matches."""

    def find_builtin(self, op: int, version: int) -> Registration | None:
        return None

    def find_custom(self, name: str, version: int) -> Registration | None:
        return None

    def find_op(self, op: int | str, version: int) -> Registration | None:
        """FindOp for either kind: a builtin code or a custom op name."""
        if isinstance(op, str):
            return self.find_custom(op, version)
        return self.find_builtin(int(op), version)


def as_registration(kernel: Any) -> Registration:
    """A Registration, or any object (class, module, instance) with some of the callback attributes."""
    if isinstance(kernel, Registration):
        return kernel
    callbacks = {name: getattr(kernel, name) for name in _CALLBACKS if callable(getattr(kernel, name, None))}
    if "invoke" not in callbacks:
        raise TypeError(f"{kernel!r} is neither a Registration nor an object with an invoke(context, node)")
    return Registration(**callbacks)


def _version_range(min_version: int, max_version: int | None) -> range:
    last = min_version if max_version is None else max_version
    if min_version < 1 or last < min_version:
        raise ValueError(f"invalid version range [{min_version}, {last}]")
    return range(min_version, last + 1)


class MutableOpResolver(OpResolver):
    """A resolver you can add kernels to (tflite::MutableOpResolver); later additions replace earlier."""

    def __init__(self) -> None:
        self._builtins: dict[tuple[int, int], Registration] = {}
        self._customs: dict[tuple[str, int], Registration] = {}
        self._chained: list[OpResolver] = []

    def add_builtin(self, op: int, kernel: Any, min_version: int = 1, max_version: int | None = None) -> None:
        """Register (or override) a builtin op's kernel for versions min_version..max_version."""
        registration = as_registration(kernel)
        code = BuiltinOperator(op)
        for version in _version_range(min_version, max_version):
            self._builtins[(int(code), version)] = dataclasses.replace(
                registration, builtin_code=code, custom_name=None, version=version
            )

    def add_custom(
        self, name: str, kernel: Any, min_version: int = 1, max_version: int | None = None
    ) -> None:
        """Register a custom op under `name` (the model's custom_code) for versions min..max (default 1)."""
        registration = as_registration(kernel)
        for version in _version_range(min_version, max_version):
            self._customs[(name, version)] = dataclasses.replace(
                registration, builtin_code=BuiltinOperator.CUSTOM, custom_name=name, version=version
            )

    def add_all(self, other: OpResolver) -> None:
        """Take every registration of `other` (replacing ours for the same op and version).

        A MutableOpResolver's registrations are copied; any other resolver is consulted after ours.
        """
        if isinstance(other, MutableOpResolver):
            self._builtins.update(other._builtins)
            self._customs.update(other._customs)
            self._chained.extend(r for r in other._chained if r not in self._chained)
        else:
            self.chain_op_resolver(other)

    def chain_op_resolver(self, other: OpResolver) -> None:
        """Consult `other` for anything this resolver does not have (ChainOpResolver)."""
        self._chained.append(other)

    def find_builtin(self, op: int, version: int) -> Registration | None:
        found = self._builtins.get((int(op), version))
        for chained in self._chained:
            if found is not None:
                break
            found = chained.find_builtin(op, version)
        return found

    def find_custom(self, name: str, version: int) -> Registration | None:
        found = self._customs.get((name, version))
        for chained in self._chained:
            if found is not None:
                break
            found = chained.find_custom(name, version)
        return found

    def builtin_ops(self) -> list[tuple[BuiltinOperator, int]]:
        """Every (builtin op, version) this resolver has directly, sorted."""
        return sorted((BuiltinOperator(op), version) for op, version in self._builtins)

    def custom_ops(self) -> list[tuple[str, int]]:
        return sorted(self._customs)


class BuiltinOpResolver(MutableOpResolver):
    """Every builtin kernel pytflite implements (tflite::ops::builtin::BuiltinOpResolver), and the custom
    ops LiteRT's BuiltinOpResolver also registers (e.g. TFLite_Detection_PostProcess)."""

    _reference = False

    def __init__(self) -> None:
        super().__init__()
        from .registry import builtin_kernels, default_custom_kernels

        self._builtins.update(builtin_kernels(reference=self._reference))
        self._customs.update(default_custom_kernels(reference=self._reference))


class BuiltinRefOpResolver(BuiltinOpResolver):
    """Like BuiltinOpResolver, with TFLite's reference-kernel rounding where it differs."""

    _reference = True

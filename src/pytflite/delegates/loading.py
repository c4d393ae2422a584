"""`load_delegate(library, options)`: LiteRT's way of naming a delegate.

`library` is one of:
- a native shared library (`.so`, with `tflite_plugin_create_delegate`), as in LiteRT: run through
  TFLite's C ABI by delegates/native (64-bit Linux);
- `module:Factory` or `path/to/file.py:Factory`: `Factory(**options)` (a Delegate object named this way
  is returned as it is, and takes no options);
- `module` or `path/to/file.py` defining LiteRT's plugin entry, `tflite_plugin_create_delegate(options)`,
  called with the options dict;
- `replay:OP,OP`: the built-in ReplayDelegate claiming those builtin ops (handy to preview partitions).
Every failure is LiteRT's `ValueError: Failed to load delegate from <library>` and a line saying why, so
code that falls back to the CPU when a delegate is missing keeps working. The command line's `--delegate`
goes through here too, and its `--custom-ops` files through `import_module_from`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any

from ..core.delegate import Delegate
from ..core.types import BuiltinOperator

PLUGIN_ENTRY = "tflite_plugin_create_delegate"

SUPPORTED = (
    "pytflite loads Python delegates: 'module:Factory', 'path/to/file.py:Factory', or a module or .py file "
    f"defining {PLUGIN_ENTRY}(options); and native delegate libraries exporting {PLUGIN_ENTRY}"
)

# libedgetpu.so.1, delegate.dll, libmetal_delegate.dylib
_NATIVE_LIBRARY = re.compile(r"\.(so(\.\d+)*|dll|dylib)$", re.IGNORECASE)


class DelegateLoadError(ValueError, OSError):
    """load_delegate failed. A ValueError, as LiteRT raises when a library's delegate cannot be created;
    also an OSError, which LiteRT raises when the library file cannot be opened, so that fallback code
    catching either one works unchanged."""


def load_delegate(library: str | os.PathLike, options: dict[str, Any] | None = None) -> Delegate:
    """The delegate `library` names (see the module docstring), created with `options`."""
    spec = os.fspath(library)
    try:
        return _create(spec, dict(options or {}))
    except _Unloadable as error:
        raise DelegateLoadError(f"Failed to load delegate from {spec}\n{error}") from error.__cause__


class _Unloadable(Exception):
    """Why a spec gives no delegate (load_delegate adds LiteRT's first line)."""


def import_module_from(spec: str) -> Any:
    """A module by dotted name, or from a `.py` file path; ImportError if there is none."""
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        path = Path(spec)
        if not path.is_file():
            raise ImportError(f"no such Python file: {spec}")
        name = f"_pytflite_user_{path.stem}_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        module_spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(spec)
    except ImportError as error:
        raise ImportError(f"cannot import module {spec}: {error}") from None


def _create(spec: str, options: dict[str, Any]) -> Delegate:
    if _NATIVE_LIBRARY.search(spec):
        return _native(spec, options)
    module_name, _, attribute = spec.rpartition(":")
    if module_name == "replay":
        from .replay import ReplayDelegate

        return _call(spec, ReplayDelegate, ops=_builtin_ops(attribute), **options)
    if not (module_name and attribute.isidentifier()):  # a module or file (C:\dir\file.py too)
        return _from_plugin_entry(spec, options)
    module = _import(module_name)
    factory = getattr(module, attribute, None)
    if factory is None:
        raise _Unloadable(f"{module_name} has no attribute {attribute}")
    if isinstance(factory, Delegate):
        if options:
            raise _Unloadable(f"{spec} is a delegate object and takes no options")
        return factory
    return _checked(spec, _call(spec, factory, **options))


def _native(spec: str, options: dict[str, Any]) -> Delegate:
    from .native import LibraryNotOpened, NativeDelegate, NativeLoadError

    try:
        return NativeDelegate(spec, options)
    except LibraryNotOpened as error:
        raise _Unloadable(f"{error}; {SUPPORTED}.") from None
    except NativeLoadError as error:  # a plugin's own report stands alone, as in LiteRT
        raise _Unloadable(str(error)) from None


def _from_plugin_entry(spec: str, options: dict[str, Any]) -> Delegate:
    try:
        module = import_module_from(spec)
    except ImportError as error:
        raise _Unloadable(
            f"{spec} is not module:Factory and not an importable module ({error}); {SUPPORTED}."
        ) from None
    create = getattr(module, PLUGIN_ENTRY, None)
    if not callable(create):
        raise _Unloadable(f"{spec} defines no {PLUGIN_ENTRY}(options); {SUPPORTED}.")
    return _checked(spec, _call(spec, create, options))


def _import(module_name: str) -> Any:
    try:
        return import_module_from(module_name)
    except ImportError as error:
        raise _Unloadable(str(error)) from None


def _call(spec: str, factory: Any, /, *args: Any, **options: Any) -> Any:
    """The factory's delegate; its refusal of the options (TypeError, ValueError) is a load failure,
    as a native plugin's returning no delegate is in LiteRT."""
    try:
        return factory(*args, **options)
    except (TypeError, ValueError) as error:
        arguments = ", ".join(options) if options else ""
        raise _Unloadable(f"{spec}({arguments}): {error}") from error


def _checked(spec: str, delegate: Any) -> Delegate:
    if not isinstance(delegate, Delegate) and not callable(getattr(delegate, "prepare", None)):
        raise _Unloadable(f"{spec} did not return a delegate (got {type(delegate).__name__})")
    return delegate


def _builtin_ops(names: str) -> list[int]:
    ops = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        try:
            ops.append(BuiltinOperator[name.upper()])
        except KeyError:
            raise _Unloadable(f"unknown builtin operator {name!r}") from None
    return ops

"""What every command does first: build an Interpreter from a model path plus the user's Python code —
custom ops (`--custom-ops ops.py`) and delegates (`--delegate module:Factory`).

A custom-ops module exposes `register(resolver)`, which adds its ops to a MutableOpResolver that
already holds the builtins; the op packs pytflite ships go by a short name (`--custom-ops mediapipe`).
A delegate spec is what `pytflite.load_delegate` takes (`module:Factory`, `file.py:Factory`, a module
with LiteRT's plugin entry, `replay:OP,OP`), with the `--delegate-option key=value` pairs (values read as
Python literals) as its options.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.delegate import Delegate
from ..delegates import loading as delegate_loading
from ..interpreter import Interpreter
from ..ops.resolver import BuiltinOpResolver, MutableOpResolver


class ToolError(Exception):
    """A user mistake the CLI reports in one line (bad path, bad spec), without a traceback."""


def import_module_from(spec: str) -> Any:
    """A module by dotted name, or from a `.py` file path."""
    try:
        return delegate_loading.import_module_from(spec)
    except ImportError as error:
        raise ToolError(str(error)) from None


# The op packs pytflite ships (opt-in custom ops), by the short name --custom-ops takes for them.
OP_PACKS = {"mediapipe": "pytflite.ops.mediapipe"}


def op_resolver(custom_ops: Sequence[str] = ()) -> MutableOpResolver | None:
    """The builtins plus the ops each custom-ops module's `register(resolver)` adds (None: builtins only)."""
    if not custom_ops:
        return None
    resolver = MutableOpResolver()
    resolver.add_all(BuiltinOpResolver())
    for spec in custom_ops:
        module = import_module_from(OP_PACKS.get(spec, spec))
        register = getattr(module, "register", None)
        if not callable(register):
            raise ToolError(f"{spec} has no register(resolver) function")
        register(resolver)
    return resolver


def parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    """`key=value` strings as keyword arguments; values are Python literals when they parse as one."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.isidentifier():
            raise ToolError(f"delegate option {pair!r} is not key=value")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    return options


def load_delegate(spec: str, options: dict[str, Any] | None = None) -> Delegate:
    """The delegate `spec` names (pytflite.load_delegate's forms, see delegates/loading.py)."""
    try:
        return delegate_loading.load_delegate(spec, options)
    except delegate_loading.DelegateLoadError as error:
        raise ToolError(str(error).replace("\n", ": ", 1)) from None


def apply_partition_limits(delegate: Any, max_partitions: int | None, min_nodes: int | None) -> None:
    """benchmark_model's --max_delegated_partitions / --min_nodes_per_partition, for delegates built on
    SimpleDelegate (or any delegate with those attributes)."""
    for name, value in (("max_delegated_partitions", max_partitions), ("min_nodes_per_partition", min_nodes)):
        if value is not None and hasattr(delegate, name):
            setattr(delegate, name, value)


def build_interpreter(
    model: str,
    *,
    custom_ops: Sequence[str] = (),
    delegates: Sequence[Delegate] = (),
    num_threads: int | None = None,
    preserve_all_tensors: bool = False,
) -> Interpreter:
    """An Interpreter on `model` with the user's ops and delegates; load errors become ToolErrors."""
    if not Path(model).is_file():
        raise ToolError(f"no such model file: {model}")
    try:
        return Interpreter(
            model_path=model,
            op_resolver=op_resolver(custom_ops),
            experimental_delegates=list(delegates),
            num_threads=num_threads,
            experimental_preserve_all_tensors=preserve_all_tensors,
        )
    except (ValueError, RuntimeError) as error:
        raise ToolError(f"cannot load {model}: {str(error).strip()}") from None


def delegate_from_args(args: Any) -> list[Delegate]:
    """The delegates named by a parsed command line (`--delegate`, `--delegate-option`, partition limits)."""
    specs = getattr(args, "delegate", None) or []
    options = parse_options(getattr(args, "delegate_option", None) or [])
    delegates = []
    for spec in specs:
        delegate = load_delegate(spec, options)
        apply_partition_limits(
            delegate,
            getattr(args, "max_delegated_partitions", None),
            getattr(args, "min_nodes_per_partition", None),
        )
        delegates.append(delegate)
    return delegates

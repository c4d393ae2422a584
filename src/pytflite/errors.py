"""Exception types, the error reporter, and the ensure helpers kernels validate with.

The exception types follow LiteRT's Python API: a model that cannot be loaded raises ValueError, a failure
while allocating or invoking raises RuntimeError. Kernels report problems by raising KernelError (the
ensure helpers do it for them); the runtime then adds TFLite's "Node number N (OP) failed to ..." line.
"""

from __future__ import annotations

from typing import Any

from .core.types import Status, TensorType, type_name


class ModelError(ValueError):
    """The model file or buffer is malformed or cannot be built into an interpreter."""


class InterpreterError(RuntimeError):
    """A runtime call (allocate, invoke, resize, delegate) failed; `status` is the TfLiteStatus."""

    def __init__(self, message: str, status: Status = Status.ERROR):
        super().__init__(message)
        self.status = status


class KernelError(RuntimeError):
    """Raised by a kernel's prepare or invoke (or by the ensure helpers) to fail with a message."""

    def __init__(self, message: str, status: Status = Status.ERROR):
        super().__init__(message)
        self.status = status


class ErrorReporter:
    """Collects error messages the way LiteRT's Python error reporter does.

    LiteRT appends every report to one buffer that is never emptied, and raises the whole buffer; a
    second failure therefore repeats the first one's text. We keep that behaviour for drop-in fidelity
    (scripts compare messages), and expose `last` for the most recent report alone.
    """

    def __init__(self) -> None:
        self._messages: list[str] = []

    def report(self, message: str) -> None:
        self._messages.append(message)

    @property
    def text(self) -> str:
        return "".join(self._messages)

    @property
    def last(self) -> str:
        return self._messages[-1] if self._messages else ""


def ensure(condition: Any, message: str) -> None:
    """TF_LITE_ENSURE: fail the current kernel call with `message` unless `condition` holds."""
    if not condition:
        raise KernelError(message)


def ensure_eq(actual: Any, expected: Any, what: str) -> None:
    """TF_LITE_ENSURE_EQ: `what` names the checked quantity, e.g. "input count"."""
    if actual != expected:
        raise KernelError(f"{what} {actual} != {expected}")


def ensure_type(tensor: Any, allowed: TensorType | tuple[TensorType, ...], what: str, op: str) -> None:
    """Fail unless `tensor.type` is one of `allowed`, in TFLite's "Type X is unsupported by op Y." form."""
    allowed = allowed if isinstance(allowed, tuple) else (allowed,)
    if tensor.type not in allowed:
        raise KernelError(f"Type {type_name(tensor.type)} ({what}) is unsupported by op {op}.")


def ensure_types_eq(first: Any, second: Any, what: str) -> None:
    """TF_LITE_ENSURE_TYPES_EQ between two tensors."""
    if first.type != second.type:
        raise KernelError(f"{what}: {type_name(first.type)} != {type_name(second.type)}")


def ensure_condition_eq(actual: Any, expected: Any, condition: str) -> None:
    """TF_LITE_ENSURE_EQ in TFLite's own words: `condition` reads "a != b", the values follow in
    parentheses ("NumDimensions(input) != 2 (3 != 2)")."""
    if actual != expected:
        raise KernelError(f"{condition} ({actual} != {expected})")


def ensure_type_condition(tensor: Any, expected: TensorType, condition: str) -> None:
    """TF_LITE_ENSURE_TYPES_EQ in TFLite's own words, with the type names."""
    if tensor.type != expected:
        raise KernelError(f"{condition} ({type_name(tensor.type)} != {type_name(expected)})")


class InvalidArgumentError(ValueError):
    """A call of the Python API got an argument it cannot use (set_tensor's value, resize_tensor_input's
    shape, a signature runner's inputs, an index). A ValueError, as LiteRT raises; its own class lets a
    caller (or the fuzzer) tell pytflite's refusals from a bug's ValueError."""

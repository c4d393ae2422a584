"""One fuzz case: load a model, allocate, feed random inputs, invoke; classify what happened.

Only pytflite's deliberate refusals are acceptable failures: a ModelError at load, an InterpreterError
or KernelError at allocate/invoke, an InvalidArgumentError from the API, raised by a check. The runtime
wraps any exception a kernel raises in an InterpreterError (the original as its cause), so the type of
the error alone says nothing: a refusal is a pytflite error whose whole cause chain holds pytflite
errors only (a `raise ... from None` translation is deliberate and ends the chain). An error whose chain
holds anything else (IndexError, KeyError, a NumPy TypeError, a bare ValueError...) is a crash, and so is
any MemoryError, translated or not: under FUZZ_LIMITS an allocation the machine cannot give escaped the
limits. A case running past its time limit is a hang.
"""

from __future__ import annotations

import contextlib
import signal
import traceback
from dataclasses import dataclass

import numpy as np

import pytflite
from pytflite.errors import InterpreterError, InvalidArgumentError, KernelError, ModelError

PYTFLITE_ERRORS = (ModelError, InterpreterError, KernelError, InvalidArgumentError)

# Small caps keep every case cheap: a mutated shape cannot ask for gigabytes or loop forever.
FUZZ_LIMITS = pytflite.Limits(
    max_bytes=16 << 20, max_elements=4 << 20, max_call_depth=16, max_while_iterations=200
)
_MAX_INPUT_ELEMENTS = 1 << 20


class CaseTimeout(BaseException):
    """Raised by the alarm; a BaseException, so no kernel's `except Exception` can swallow it."""


@dataclass(frozen=True)
class Outcome:
    kind: str  # "ok", "rejected" (a deliberate pytflite error), "crash" or "hang"
    stage: str  # "load", "allocate", "inputs", "invoke" or "done"
    detail: str = ""


def cause_chain(error: BaseException, suppressed: bool = False) -> list[BaseException]:
    """`error` and what it was raised from, outermost first, as Python's traceback prints them: the
    explicit cause, else the implicit context, unless `raise ... from None` translated it on purpose
    (kept with `suppressed`)."""
    chain = [error]
    while True:
        last = chain[-1]
        hidden = last.__suppress_context__ and not suppressed
        following = last.__cause__ or (None if hidden else last.__context__)
        if following is None or any(following is seen for seen in chain):
            return chain
        chain.append(following)


def is_refusal(error: BaseException) -> bool:
    """A pytflite error raised by a check, not one wrapping a bug or an allocation the limits missed."""
    return all(isinstance(link, PYTFLITE_ERRORS) for link in cause_chain(error)) and not any(
        isinstance(link, MemoryError) for link in cause_chain(error, suppressed=True)
    )


def random_inputs(interpreter: pytflite.Interpreter, rng: np.random.Generator) -> None:
    """Fill every input with values of its type and current shape (small ints: they are often indices)."""
    for detail in interpreter.get_input_details():
        shape, dtype = tuple(int(d) for d in detail["shape"]), np.dtype(detail["dtype"])
        if np.prod(shape, dtype=np.int64) > _MAX_INPUT_ELEMENTS:
            continue
        if dtype.kind == "f":
            value = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            value = rng.integers(max(info.min, -4), min(info.max, 8), size=shape, endpoint=True).astype(dtype)
        elif dtype.kind == "b":
            value = rng.integers(0, 2, size=shape).astype(bool)
        elif dtype.kind == "c":
            value = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
        elif dtype.kind in "SO":
            value = np.array([b"ab", b"", b"xyz"] * (int(np.prod(shape)) // 3 + 1), dtype=object)
            value = value[: int(np.prod(shape))].reshape(shape)
        else:
            continue
        interpreter.set_tensor(detail["index"], value)


def run_model(
    model: bytes,
    seed: int,
    limits: pytflite.Limits = FUZZ_LIMITS,
    resolver: pytflite.OpResolverType = pytflite.OpResolverType.AUTO,
) -> Outcome:
    """Load, allocate, set random inputs and invoke (twice: the second run takes the fast path);
    `resolver` picks the kernels (BUILTIN_REF: TFLite's reference ones)."""
    stage = "load"
    try:
        interpreter = pytflite.Interpreter(
            model_content=model, limits=limits, experimental_op_resolver_type=resolver
        )
        stage = "allocate"
        interpreter.allocate_tensors()
        stage = "inputs"
        rng = np.random.default_rng(seed)
        random_inputs(interpreter, rng)
        stage = "invoke"
        interpreter.invoke()
        interpreter.invoke()
        for detail in interpreter.get_output_details():
            interpreter.get_tensor(detail["index"])
        return Outcome("ok", "done")
    except CaseTimeout:
        raise
    except Exception as error:  # the point: anything but a deliberate refusal is a bug to report
        if is_refusal(error):
            return Outcome("rejected", stage, f"{type(error).__name__}: {str(error)[:200]}")
        return Outcome("crash", stage, "".join(traceback.format_exception(error))[-3000:])


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise CaseTimeout in the main thread after `seconds` (SIGALRM; Unix)."""

    def expire(signum, frame):
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case_with_timeout(model: bytes, seed: int, seconds: float) -> Outcome:
    try:
        with time_limit(seconds):
            return run_model(model, seed)
    except CaseTimeout:
        return Outcome("hang", "timeout", f"over {seconds} s")

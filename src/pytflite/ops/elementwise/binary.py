"""BinaryOp, which a binary op's prepare describes the op with, the runner built from it (one call into
the preallocated output, after expanding inputs that broadcast on small outputs, then the clamp), and
BinaryData, the op data holding the runner that invoke calls."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from operator import setitem
from typing import Any

import numpy as np

from ...core.step_program import Written
from .. import jit
from ..common import Computation, add_scratch_tensors, calls_on, clip
from ..kernel_type import KernelType
from ..registry import register_builtin

Runner = Callable[[list, tuple, np.ndarray], None]  # run(tensors, node.inputs, output array)
# compute(first, second, output array): a function, or a Computation where it has its own calls
Compute = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
# calls(first, second, output array): the same computation as functools.partial calls (or a Written)
Calls = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple | Written]


@dataclass(frozen=True)
class BinaryOp:
    """What invoke computes: ufunc(first, second, out=output), then the clamp to [low, high] if low is set.

    An op's prepare returns this; _finish_prepare then turns it into the functions invoke calls."""

    ufunc: Callable[..., Any]
    low: Any = None
    high: Any = None
    # ufunc is elementwise in its two inputs (as any np.ufunc is): inputs that broadcast may be expanded
    elementwise: bool = False
    # a ufunc that is not an np.ufunc, without a clamp: the same computation as NumPy calls
    calls: Calls | None = None


@dataclass(frozen=True, slots=True)
class BinaryData:
    """The op data of the binary ops: the runner prepare built for the node's shapes and types, the
    temporaries init added where the op has a quantized path (quantized.py's index arrays), and, for the
    runners made from a BinaryOp, the same computation on the arrays themselves (whose calls
    Registration.calls returns)."""

    run: Runner | None
    scratch: tuple[int, ...] = ()
    compute: Compute | None = None


def binary_init_with_scratch(context, buffer, length):
    """init of the ops with a quantized lookup path: the arena temporary of its index, typed only when
    that path is taken."""
    return BinaryData(None, add_scratch_tensors(context, 1))


def binary_invoke(context, node):
    tensors = context.tensors
    node.user_data.run(tensors, node.inputs, tensors[node.outputs[0]].data)


def binary_calls(context, node):
    """The computation's calls on the node's arrays (Registration.calls); a quantized runner's one call."""
    data = node.user_data
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if data.compute is None:
        return (partial(data.run, tensors, node.inputs, out),)
    first, second = (tensors[i].data for i in node.inputs[:2])
    return calls_on(data.compute, first, second, out)


def _on_tensors(compute: Compute) -> Runner:
    """A runner that looks the inputs up and computes."""
    if isinstance(compute, Computation):
        compute = compute.run

    def run(tensors, inputs, out):
        compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out)

    return run


def _with_calls(compute: Compute, calls: Calls | None) -> Compute:
    """`compute`, as a Computation of `calls` where it has them."""
    return compute if calls is None else Computation(calls, compute)


# Up to this many output elements, an input that broadcasts is first expanded to the output's shape: a
# constant once in prepare, a computed input by one copy into a scratch array per call. NumPy's broadcasting
# loop costs 0.3-0.5 us more per call than a same-shape loop (and than the copy).
EXPANDED_LIMIT = 16384


def _compute(context, node, data: BinaryOp) -> Compute:
    """The function of (first, second, output array) that computes this BinaryOp for the node's shapes:
    a Computation where it has calls (a NumPy ufunc's, or a Written statement for one element).

    A plain ufunc on a small output gets its broadcasting inputs expanded (see EXPANDED_LIMIT). A
    one-element output of the arithmetic, comparisons and logic in _SCALAR_OPERATORS is computed on
    scalars (_scalar_compute). Another one-element output with a clamp is computed into a scratch
    element and clamped into the output: NumPy's in-place operations on one-element arrays take a slow
    path (about 0.5 us more)."""
    ufunc, low, high = data.ufunc, data.low, data.high
    tensors = context.tensors
    output = tensors[node.outputs[0]]
    shape = tuple(output.shape)
    total = math.prod(shape)
    compiled = _compiled_clamped(ufunc, low, high, output.dtype, total)
    constants: list[np.ndarray | None] = [None, None]  # an input expanded once, here
    buffers: list[np.ndarray | None] = [None, None]  # where an input is expanded at each call
    if (data.elementwise or isinstance(ufunc, np.ufunc)) and 1 < total <= EXPANDED_LIMIT:
        for i in (0, 1):
            tensor = tensors[node.inputs[i]]
            if tuple(tensor.shape) == shape:
                if compiled is not None and tensor.is_constant_or_persistent and tensor.data is not None:
                    constants[i] = tensor.data.copy()  # (the compiled kernel takes writable arrays)
                continue
            if tensor.is_constant_or_persistent and tensor.data is not None:
                constants[i] = np.ascontiguousarray(np.broadcast_to(tensor.data, shape))
            elif math.prod(tensor.shape) > 1:  # (a single value broadcasts at full speed)
                buffers[i] = np.empty(shape, tensor.dtype)
    if any(x is not None for x in (*constants, *buffers)):
        return _expanding_compute(ufunc, low, high, constants, buffers, _calls_of(data, compiled))
    if total == 1 and _on_scalars(ufunc, tensors[node.inputs[0]].dtype):
        ranks = [len(tensors[node.inputs[i]].shape) for i in (0, 1)]
        bounds = () if low is None else (low[()], high[()])
        return _scalar_compute(_SCALAR_OPERATORS[ufunc], bounds, (*ranks, len(shape)))
    calls = _calls_of(data, compiled)
    if low is None:

        def compute(a, b, out):
            ufunc(a, b, out=out)

        return _with_calls(compute, calls)
    if total == 1:
        scratch = np.empty(shape, output.dtype)

        def compute_one(a, b, out):
            ufunc(a, b, out=scratch)
            clip(scratch, low, high, out)

        return _with_calls(compute_one, calls and _ufunc_calls(ufunc, low, high, scratch))

    def compute_clamped(a, b, out):
        ufunc(a, b, out=out)
        clip(out, low, high, out)

    return _with_calls(compute_clamped, calls)


def _calls_of(data: BinaryOp, compiled: tuple | None) -> Calls | None:
    """The op's computation as NumPy calls (with its clamp), where it has them."""
    if isinstance(data.ufunc, np.ufunc):
        return _ufunc_calls(data.ufunc, data.low, data.high, compiled=compiled)
    return data.calls if data.low is None else None


# The float32 arithmetic whose clamped form has a compiled kernel (elementwise/binary_compiled.py)
_COMPILED_CLAMPED = {np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide"}


def _compiled_clamped(ufunc, low, high, dtype: np.dtype, total: int) -> tuple[Callable, np.ndarray] | None:
    """The compiled ufunc-and-clamp kernel for a float32 op with a clamp on a small output (one call
    instead of two), where compiled kernels run, and the bounds it takes; else None."""
    if (
        ufunc not in _COMPILED_CLAMPED
        or low is None
        or dtype != np.float32
        or not 1 < total <= EXPANDED_LIMIT
    ):
        return None
    kernel = jit.compiled("elementwise.binary_compiled", _COMPILED_CLAMPED[ufunc])
    if kernel is None:
        return None
    return kernel, np.array([low, high], np.float32)


def _ufunc_calls(
    ufunc: np.ufunc, low, high, scratch: np.ndarray | None = None, compiled: tuple | None = None
) -> Calls:
    """The calls of a ufunc into the output (or into `scratch`), then of the clamp into the output; or
    the one call of its `compiled` ufunc-and-clamp kernel (_compiled_clamped), for operands that are all
    contiguous, writable and of the output's size. The output is passed positionally (a keyword costs
    about 40 ns a call), except to np.maximum and np.minimum, which deprecate that."""
    by_keyword = ufunc in (np.maximum, np.minimum)

    def calls(a, b, out):
        if compiled is not None and all(
            x.flags.c_contiguous and x.flags.writeable and x.size == out.size for x in (a, b, out)
        ):
            kernel, bounds = compiled
            return (partial(kernel, a.reshape(-1), b.reshape(-1), bounds, out.reshape(-1)),)
        into = out if scratch is None else scratch
        clamp = () if low is None else (partial(clip, into, low, high, out),)
        return (partial(ufunc, a, b, out=into) if by_keyword else partial(ufunc, a, b, into), *clamp)

    return calls


# Ops whose one-element form runs on NumPy scalars: the same operation as the ufunc (IEEE single
# precision, wrapping integers, NumPy's comparisons) without the ufunc's per-call dispatch, which costs
# more than the arithmetic. Arithmetic for the types below (others keep the ufunc), comparisons for any
# number or bool, logic for bools (on NumPy bools & and | are the logical and and or).
_SCALAR_ARITHMETIC = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul}
_SCALAR_ARITHMETIC_TYPES = tuple(np.dtype(t) for t in (np.float32, np.int32, np.int64, np.uint32))
_SCALAR_OPERATORS = {
    **_SCALAR_ARITHMETIC,
    np.less: operator.lt,
    np.less_equal: operator.le,
    np.greater: operator.gt,
    np.greater_equal: operator.ge,
    np.equal: operator.eq,
    np.not_equal: operator.ne,
    np.logical_and: operator.and_,
    np.logical_or: operator.or_,
    np.floor_divide: operator.floordiv,  # (integers only: _on_scalars)
    np.remainder: operator.mod,
}


def _on_scalars(ufunc: Callable, dtype: np.dtype) -> bool:
    """The one-element form of `ufunc` on inputs of `dtype` may run on scalars (_SCALAR_OPERATORS)."""
    if ufunc in _SCALAR_ARITHMETIC:
        return dtype in _SCALAR_ARITHMETIC_TYPES
    if ufunc in (np.logical_and, np.logical_or):
        return dtype.kind == "b"
    if ufunc in (np.floor_divide, np.remainder):
        return dtype.kind in "iu"
    return ufunc in _SCALAR_OPERATORS and dtype.kind in "biuf"


def _scalar_compute(operation: Callable, bounds: tuple, ranks: tuple[int, ...]) -> Computation:
    """One output element: the operation on the two input elements, clamped, when `bounds` holds
    (low, high), as TFLite clamps, std::min(std::max(x, low), high): x < low gives low, x > high gives
    high, anything else (NaN, and -0.0 against a low of 0) stays x; float +-inf become +-FLT_MAX.
    (Written as comparisons: Python's min/max calls cost as much as the rest.) Its calls are the same
    statement written into a step program."""
    first, second, at = ((0,) * rank for rank in ranks)  # (the ranks of the inputs and the output)
    operands = {"operation": operation, "first": first, "second": second, "at": at}
    if not bounds:

        def compute_scalar(a, b, out):
            out[at] = operation(a[first], b[second])

        text = "{out}[{at}] = {operation}({a}[{first}], {b}[{second}])"
        return Computation(_written(compute_scalar, text, operands), compute_scalar)
    low, high = bounds

    def compute_scalar_clamped(a, b, out):
        x = operation(a[first], b[second])
        out[at] = low if x < low else high if x > high else x

    text = (
        "{out}[{at}] = {low} if (x := {operation}({a}[{first}], {b}[{second}])) < {low}"
        " else {high} if x > {high} else x"
    )
    return Computation(
        _written(compute_scalar_clamped, text, {**operands, "low": low, "high": high}), compute_scalar_clamped
    )


def _written(compute: Callable, text: str, operands: dict) -> Calls:
    """The calls of a one-element compute on the arrays (a, b, out): one Written statement."""

    def calls(a, b, out):
        return Written(text, partial(compute, a, b, out), a=a, b=b, out=out, **operands)

    return calls


def _expanded(x: np.ndarray, buffer: np.ndarray | None) -> np.ndarray:
    """`x` copied into its output-shaped buffer, or `x` itself when it has none (it needs no expanding)."""
    if buffer is None:
        return x
    buffer[...] = x
    return buffer


def _expanding_compute(ufunc, low, high, constants, buffers, ufunc_calls) -> Compute:
    first, second = constants
    first_buffer, second_buffer = buffers

    def compute(a, b, out):
        a = first if first is not None else _expanded(a, first_buffer)
        b = second if second is not None else _expanded(b, second_buffer)
        ufunc(a, b, out=out)
        if low is not None:
            clip(out, low, high, out)

    def calls(a, b, out):
        expand = [
            partial(setitem, buffer, Ellipsis, x)
            for buffer, x in ((first_buffer, a), (second_buffer, b))
            if buffer is not None
        ]
        a = first if first is not None else a if first_buffer is None else first_buffer
        b = second if second is not None else b if second_buffer is None else second_buffer
        return (*expand, *ufunc_calls(a, b, out))

    return _with_calls(compute, ufunc_calls and calls)


def register_binary(
    op,
    versions: tuple[int, int],
    types: tuple,
    prepare: Callable | None = None,
    *,
    prepare_for: Callable[[KernelType], Callable] | None = None,
    **extra: Any,
) -> None:
    """Register an elementwise binary kernel: `prepare` returns the BinaryOp it describes the op with
    (_finish_prepare makes the BinaryData), invoke is binary_invoke; `prepare_for(kernel_type)`, given
    instead, makes such a prepare for each kernel type (a BUILTIN_REF twin). `extra`: init."""
    if prepare_for is None:
        twins = {"prepare": _finish_prepare(prepare)}
    else:
        twins = {"prepare_for": lambda kernel_type: _finish_prepare(prepare_for(kernel_type))}
    register_builtin(
        op,
        versions,
        types=types,
        op_data=BinaryData,
        invoke=binary_invoke,
        calls=binary_calls,
        **twins,
        **extra,
    )


def _finish_prepare(prepare: Callable) -> Callable:
    """`prepare`, which returns the BinaryOp it describes the op with, followed by leaving the BinaryData
    of its computation. (Quantized arithmetic leaves its own BinaryData and returns None.)"""

    def run_prepare(context, node):
        scratch = node.user_data.scratch if node.user_data is not None else ()
        op = prepare(context, node)
        if op is not None:
            compute = _compute(context, node, op)
            node.user_data = BinaryData(_on_tensors(compute), scratch, compute)

    return run_prepare

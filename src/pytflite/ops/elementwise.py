"""Elementwise binary ops with broadcasting: arithmetic, comparisons, logical and bitwise ops.

ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD, ATAN2, ADD_N,
BITWISE_XOR, RIGHT_SHIFT; EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL; LOGICAL_AND,
LOGICAL_OR, LOGICAL_NOT.

Prepare checks types, computes the broadcast output shape and picks the compute function (usually a bare
NumPy ufunc) and the clamp; invoke is that one call into the preallocated output, then the clamp.

TFLite's float arithmetic kernels always clamp to the fused activation's range, and with no activation
that range is [lowest, max] of the type: an overflow gives +-FLT_MAX, not +-inf (NaN stays NaN).
Integer arithmetic wraps. MAXIMUM/MINIMUM pick `a > b ? a : b` / `a < b ? a : b`, so a NaN in the first
input yields the second input and a NaN in the second yields NaN. Comparisons of int8/uint8 (and of
quantized int16 for EQUAL/NOT_EQUAL) compare the inputs rescaled to a common fixed-point scale, as
TFLite does; quantized ADD/SUB/MUL/DIV/SQUARED_DIFFERENCE are not implemented yet.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.types import BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import broadcast_shape, check_arity, clip, input_tensor, is_constant, output_tensor
from .registry import register_builtin

T = TensorType
_NUMERIC = (T.FLOAT32, T.INT32, T.INT64)
_QUANTIZED = (T.INT8, T.UINT8, T.INT16)
_BITWISE = (T.UINT8, T.INT8, T.UINT16, T.INT16, T.UINT32, T.INT32)
# TFLite's generic broadcast loop handles at most this many dimensions (it aborts beyond).
_MAX_BROADCAST_RANK = 8


@dataclass(frozen=True)
class BinaryOpData:
    """What invoke computes: ufunc(first, second, out=output), then the clamp to [low, high] if low is set.

    Prepare describes the op with this; _finish_prepare then turns it into the runner invoke calls."""

    ufunc: Callable[..., Any]
    low: Any = None
    high: Any = None
    # ufunc is elementwise in its two inputs (as any np.ufunc is): inputs that broadcast may be expanded
    elementwise: bool = False


def binary_invoke(context, node):
    tensors = context.tensors
    node.user_data(tensors, node.inputs, tensors[node.outputs[0]].data)


def _noop(first, second, out):
    """Invoke of a node whose output was computed once in prepare."""


def _run_nothing(tensors, inputs, out):
    """The runner of a node whose output was computed once in prepare."""


# Up to this many output elements, an input that broadcasts is first expanded to the output's shape: a
# constant once in prepare, a computed input by one copy into a scratch array per call. NumPy's broadcasting
# loop costs 0.3-0.5 us more per call than a same-shape loop (and than the copy).
_EXPANDED_LIMIT = 16384


def _runner(context, node, data: BinaryOpData) -> Callable[[list, tuple, np.ndarray], None]:
    """The function invoke calls with (tensors, node.inputs, output array) for this BinaryOpData.

    A plain ufunc on a small output gets its broadcasting inputs expanded (see _EXPANDED_LIMIT). A
    one-element output with a clamp is computed into a scratch element and clamped into the output:
    NumPy's in-place operations on one-element arrays take a slow path (about 0.5 us more)."""
    compute, low, high = data.ufunc, data.low, data.high
    if compute is _noop:
        return _run_nothing
    tensors = context.tensors
    output = tensors[node.outputs[0]]
    shape = tuple(output.shape)
    total = math.prod(shape)
    constants: list[np.ndarray | None] = [None, None]  # an input expanded once, here
    buffers: list[np.ndarray | None] = [None, None]  # where an input is expanded at each call
    if (data.elementwise or isinstance(compute, np.ufunc)) and 1 < total <= _EXPANDED_LIMIT:
        for i in (0, 1):
            tensor = tensors[node.inputs[i]]
            if tuple(tensor.shape) == shape:
                continue
            if is_constant(tensor) and tensor.data is not None:
                constants[i] = np.ascontiguousarray(np.broadcast_to(tensor.data, shape))
            elif math.prod(tensor.shape) > 1:  # (a single value broadcasts at full speed)
                buffers[i] = np.empty(shape, tensor.dtype)
    if any(x is not None for x in (*constants, *buffers)):
        return _expanding_runner(compute, low, high, constants, buffers)
    if low is None:

        def run(tensors, inputs, out):
            compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)

        return run
    if total == 1:
        scratch = np.empty(shape, output.dtype)

        def run_one(tensors, inputs, out):
            compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out=scratch)
            clip(scratch, low, high, out)

        return run_one

    def run_clamped(tensors, inputs, out):
        compute(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)
        clip(out, low, high, out)

    return run_clamped


def _expanded(x: np.ndarray, buffer: np.ndarray | None) -> np.ndarray:
    """`x` copied into its output-shaped buffer, or `x` itself when it has none (it needs no expanding)."""
    if buffer is None:
        return x
    buffer[...] = x
    return buffer


def _expanding_runner(compute, low, high, constants, buffers) -> Callable:
    first, second = constants
    first_buffer, second_buffer = buffers

    def run(tensors, inputs, out):
        a = first if first is not None else _expanded(tensors[inputs[0]].data, first_buffer)
        b = second if second is not None else _expanded(tensors[inputs[1]].data, second_buffer)
        compute(a, b, out=out)
        if low is not None:
            clip(out, low, high, out)

    return run


def _finish_prepare(prepare: Callable) -> Callable:
    """`prepare`, which leaves a BinaryOpData in node.user_data, followed by building its runner."""

    def run_prepare(context, node):
        status = prepare(context, node)
        data = node.user_data
        if isinstance(data, BinaryOpData):
            node.user_data = _runner(context, node, data)
        return status

    return run_prepare


# --- shared prepare helpers ----------------------------------------------------------------------------


def _binary_tensors(context, node, op_name: str, same_output_type: bool = True):
    check_arity(node, 2)
    first, second = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure_types_eq(first, second, f"{op_name} input types")
    if same_output_type:
        ensure_types_eq(first, output, f"{op_name} input/output types")
    return first, second, output


def _output_shape(first, second, op_name: str, capped: bool = True) -> tuple[int, ...]:
    """The broadcast shape; TFLite's broadcast loop (used when the shapes differ) stops at 8 dims."""
    shape = broadcast_shape(first.shape, second.shape)
    if capped and first.shape != second.shape and len(shape) > _MAX_BROADCAST_RANK:
        raise KernelError(
            f"{op_name} broadcasts at most {_MAX_BROADCAST_RANK} dimensions, got {len(shape)} "
            f"([{','.join(map(str, first.shape))}] and [{','.join(map(str, second.shape))}])."
        )
    return shape


def _activation(node) -> ActivationFunctionType:
    value = getattr(node.builtin_data, "fused_activation_function", None)
    return ActivationFunctionType(value) if value is not None else ActivationFunctionType.NONE


def _activation_bounds(activation: ActivationFunctionType, dtype: np.dtype) -> tuple[Any, Any]:
    """TFLite's CalculateActivationRange for an element type as (low, high), or (None, None) when the
    clamp is a no-op. Floats always clamp: no activation means [lowest, max], so +-inf becomes +-max."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return None, None
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    low, high = info.min, info.max
    if activation == ActivationFunctionType.RELU:
        low = 0
    elif activation == ActivationFunctionType.RELU6:
        low, high = 0, 6
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        low, high = -1, 1
    if dtype.kind != "f" and (low, high) == (info.min, info.max):
        return None, None
    # C conversion semantics: -1 as an unsigned type wraps (TFLite's uint32 RELU_N1_TO_1 clamps to 1).
    # 0-d arrays: a ufunc converts a NumPy scalar operand to an array at every call (~0.3 us).
    return np.array(low).astype(dtype), np.array(high).astype(dtype)


def _quantized_error(tensor, op_name: str) -> KernelError:
    return KernelError(f"{op_name} of a quantized {type_name(tensor.type)} input is not supported yet")


def _fold_constants(context, node, output, shape, data: BinaryOpData) -> BinaryOpData:
    """Both inputs constant: compute once now into a persistent read-only output (TFLite's MUL does)."""
    context.set_tensor_to_persistent_ro(output)
    context.resize_tensor(output, shape)
    tensors = context.tensors
    _runner(context, node, data)(tensors, node.inputs, output.data)
    return BinaryOpData(_noop)


# Rows this wide keep NumPy's inner loop long when one operand repeats along the leading dimensions.
_WIDE_ROW = 8192


def _widened(ufunc: np.ufunc, first, second, shape: tuple[int, ...]) -> Callable[..., Any]:
    """`ufunc`, or a faster equivalent for a per-channel broadcast: one operand has the output's shape,
    the other its trailing dimensions (say [C] against [N,H,W,C]). NumPy loops over rows of only C
    elements there; viewing the output as rows of C*k elements against the small operand tiled k times
    (once in prepare when it is constant) computes the same values several times faster."""
    total = math.prod(shape)
    if total < 2 * _WIDE_ROW or first.dtype.kind not in "biufc":
        return ufunc
    if first.shape == shape and _is_trailing(second.shape, shape):
        small, small_first = second, False
    elif second.shape == shape and _is_trailing(first.shape, shape):
        small, small_first = first, True
    else:
        return ufunc
    inner = math.prod(small.shape)
    if inner >= _WIDE_ROW // 4:
        return ufunc
    rows = total // inner
    repeat = max(k for k in range(1, _WIDE_ROW // inner + 1) if rows % k == 0)
    if repeat == 1:
        return ufunc
    wide = (rows // repeat, inner * repeat)
    tiled = np.tile(small.data.reshape(-1), repeat) if is_constant(small) else None

    def compute(a, b, out):
        row = tiled if tiled is not None else np.tile((a if small_first else b).reshape(-1), repeat)
        if small_first:
            ufunc(row, b.reshape(wide), out=out.reshape(wide))
        else:
            ufunc(a.reshape(wide), row, out=out.reshape(wide))

    return compute


def _is_trailing(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """`small` without its leading 1s is a proper suffix of `shape` (and so broadcasts along the rest)."""
    start = 0
    while start < len(small) and small[start] == 1:
        start += 1
    core = small[start:]
    return 0 < len(core) < len(shape) and tuple(shape[len(shape) - len(core) :]) == core


# --- ADD, SUB, MUL, DIV ----------------------------------------------------------------------------------


def _arithmetic_prepare(op_name: str, ufunc: np.ufunc, types: tuple[TensorType, ...]):
    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name)
        kind = first.type
        if kind in _QUANTIZED and kind not in types:
            raise _quantized_error(first, op_name)
        if kind == T.INT16 and (
            output.quantization is not None or (op_name == "ADD" and first.quantization is not None)
        ):
            raise _quantized_error(first, op_name)
        ensure_type(first, types, "input", op_name)
        activation = _activation(node)
        if kind == T.COMPLEX64:
            ensure(
                activation == ActivationFunctionType.NONE, "Activation is not allowed for COMPLEX64 input."
            )
        # Float ADD/SUB/MUL have TFLite's fivefold broadcast path besides the generic loop: no rank cap.
        capped = not (kind == T.FLOAT32 and op_name in ("ADD", "SUB", "MUL"))
        shape = _output_shape(first, second, op_name, capped)
        low, high = _activation_bounds(activation, first.dtype)
        data = BinaryOpData(_widened(ufunc, first, second, shape), low, high)
        if op_name == "DIV" and kind == T.INT32:
            data = BinaryOpData(_int_divide(second, low, high, shape))
        if op_name == "MUL" and is_constant(first) and is_constant(second):
            data = _fold_constants(context, node, output, shape, data)
        else:
            context.resize_tensor(output, shape)
        node.user_data = data

    return prepare


def _int_divide(divisor, low, high, shape: tuple[int, ...]) -> Callable:
    """int32 DIV: C division (truncating), checked for zero divisors, clamped to the activation range.

    The quotient of two int32 values is exact in float64, so trunc(a / b) is C's a / b; the clamp to the
    int32 range (in float64, before the cast) turns INT_MIN / -1 into INT_MAX, as LiteRT's build does.
    """
    info = np.iinfo(np.int32)
    low = np.array(info.min if low is None else low, np.float64)
    high = np.array(info.max if high is None else high, np.float64)
    checked = _zero_check(divisor, "data[i] != zero_point was not true.")
    operands = _float64_operands(shape)

    def divide(a, b, out):
        checked(b)
        quotient, divisor = operands(a, b)
        np.true_divide(quotient, divisor, out=quotient)
        np.trunc(quotient, out=quotient)
        clip(quotient, low, high, quotient)
        out[...] = quotient

    return divide


def _float64_operands(shape: tuple[int, ...]) -> Callable:
    """operands(a, b) -> both inputs converted to float64 arrays of the output's shape (node-owned ones
    when the output is small). Converting by assignment is cheaper than letting a ufunc cast its inputs,
    which takes NumPy's buffered casting loop (over a microsecond more per call)."""
    if math.prod(shape) <= _EXPANDED_LIMIT:
        first, second = np.empty(shape, np.float64), np.empty(shape, np.float64)

        def kept(a, b):
            first[...] = a
            second[...] = b
            return first, second

        return kept

    def fresh(a, b):
        wide_a, wide_b = np.empty(shape, np.float64), np.empty(shape, np.float64)
        wide_a[...] = a
        wide_b[...] = b
        return wide_a, wide_b

    return fresh


def _zero_check(divisor, message: str) -> Callable[[np.ndarray], None]:
    """The invoke-time 'no zero divisor' check; decided once in prepare when the divisor is constant."""
    if is_constant(divisor):
        if np.all(divisor.data != 0):
            return lambda b: None

        def always_fails(b):
            raise KernelError(message)

        return always_fails

    def check(b):
        if np.count_nonzero(b) != b.size:
            raise KernelError(message)

    return check


# --- MAXIMUM, MINIMUM --------------------------------------------------------------------------------------

_MIN_MAX_TYPES = (T.FLOAT32, T.FLOAT16, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)


def _min_max_prepare(op_name: str, propagating: np.ufunc, ignoring: np.ufunc):
    """TFLite picks `a > b ? a : b` (MAXIMUM): NaN in a gives b, NaN in b gives NaN. np.fmax gives that
    when b has no NaN, np.maximum when a has none; otherwise maximum(fmax(a, b), b). Quantized inputs
    are compared raw, as TFLite does (it never rescales here)."""

    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name)
        ensure_type(first, _MIN_MAX_TYPES, "input", op_name)
        context.resize_tensor(output, _output_shape(first, second, op_name))
        if first.dtype.kind != "f":
            ufunc = propagating
        elif is_constant(second) and not np.isnan(second.data).any():
            ufunc = ignoring
        elif is_constant(first) and not np.isnan(first.data).any():
            ufunc = propagating
        else:  # NaN in b: the second call makes it NaN again; ties (signed zeros) give b as in TFLite

            def ufunc(a, b, out):
                ignoring(a, b, out=out)
                propagating(out, b, out=out)

        node.user_data = BinaryOpData(
            _widened(ufunc, first, second, output.shape) if isinstance(ufunc, np.ufunc) else ufunc,
            elementwise=True,
        )

    return prepare


# --- POW, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD ------------------------------------------------------


def _pow_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "POW")
    ensure(first.type in (T.FLOAT32, T.INT32), f"Unsupported data type {type_name(first.type)}.")
    context.resize_tensor(output, _output_shape(first, second, "POW"))
    is_int = first.type == T.INT32
    checked = _negative_exponent_check(second) if is_int else None
    elementwise = _int_pow if is_int else np.power
    # Shapes differ and the exponent is one value: TFLite multiplies by repeated squaring when it is
    # within 1e-5 of an integer >= 1 (clamping floats to +-FLT_MAX), else calls std::pow per element.
    scalar_exponent = first.shape != second.shape and math.prod(second.shape) == 1
    if scalar_exponent and is_constant(second):
        exponent = _integer_exponent(second.data)
        if exponent is None:
            scalar_exponent = False
        else:
            node.user_data = BinaryOpData(lambda a, b, out: _integer_power(a, exponent, out, is_int))
            return

    def power(a, b, out):
        if checked is not None:
            checked(b)
        if scalar_exponent:
            exponent = _integer_exponent(b)
            if exponent is not None:
                _integer_power(a, exponent, out, is_int)
                return
        elementwise(a, b, out=out)

    node.user_data = BinaryOpData(power)


def _integer_exponent(exponent: np.ndarray) -> int | None:
    """The integer TFLite's broadcast POW raises to by repeated multiplication, or None for std::pow."""
    value = exponent.reshape(-1)[0]
    if not np.isfinite(value):
        return None
    rounded = math.floor(abs(float(value)) + 0.5) * (1 if value >= 0 else -1)  # std::round
    if not 1 <= rounded < 2**31:  # below 1, or past int (where the cast gives INT_MIN)
        return None
    floating = np.issubdtype(exponent.dtype, np.floating)
    if floating and not abs(np.float32(value) - np.float32(rounded)) < np.float32(1e-5):
        return None
    return rounded


def _integer_power(base: np.ndarray, exponent: int, out: np.ndarray, is_int: bool) -> None:
    """base ** exponent by TFLite's repeated squaring, each float product clamped to +-FLT_MAX."""
    view = out.reshape(base.shape)  # the exponent has one element: same element count
    if np.may_share_memory(base, view):
        base = base.copy()
    current = base
    bits = bin(exponent)[3:]  # after the leading 1: square, then multiply by the base on a 1
    if not bits:
        np.copyto(view, base)
    for bit in bits:
        np.multiply(current, current, out=view)
        current = view
        if not is_int:
            clip(view, _FLOAT_LOWEST, _FLOAT_MAX, out=view)
        if bit == "1":
            np.multiply(base, view, out=view)
            if not is_int:
                clip(view, _FLOAT_LOWEST, _FLOAT_MAX, out=view)


_FLOAT_MAX = np.array(np.finfo(np.float32).max)
_FLOAT_LOWEST = -_FLOAT_MAX


def _negative_exponent_check(exponent) -> Callable[[np.ndarray], None]:
    message = "POW does not support negative value for int32."
    if is_constant(exponent) and not (exponent.data < 0).any():
        return lambda b: None

    def check(b):
        if (b < 0).any():
            raise KernelError(message)

    return check


def _int_pow(a, b, out):
    """std::pow on ints: computed in double, converted back; out-of-range results become INT_MIN (x86)."""
    result = np.power(a, b, out=np.empty(out.shape, np.float64), dtype=np.float64)
    result[~((result >= -(2.0**31)) & (result < 2.0**31))] = -(2.0**31)
    np.copyto(out, result, casting="unsafe")


def _squared_difference_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "SQUARED_DIFFERENCE")
    if first.type == T.INT8:
        raise _quantized_error(first, "SQUARED_DIFFERENCE")
    ensure_type(first, (T.FLOAT32, T.INT32), "input", "SQUARED_DIFFERENCE")
    context.resize_tensor(output, _output_shape(first, second, "SQUARED_DIFFERENCE"))
    node.user_data = BinaryOpData(_squared_difference, elementwise=True)


def _squared_difference(a, b, out):
    np.subtract(a, b, out=out)
    np.multiply(out, out, out=out)


_FLOOR_DIV_TYPES = (T.FLOAT32, T.INT32, T.INT16, T.INT8)
_FLOOR_MOD_TYPES = (T.FLOAT32, T.INT32, T.INT64, T.INT16, T.INT8)


def _floor_div_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "FLOOR_DIV")
    ensure(first.type in _FLOOR_DIV_TYPES, f"Type '{type_name(first.type)}' is not supported by floor_div.")
    context.resize_tensor(output, _output_shape(first, second, "FLOOR_DIV"))
    checked = _zero_check(second, "Division by 0")  # float zeros too
    if first.type == T.FLOAT32:
        # floor(double(a) / double(b)), rounded back to float32 (overflowing to inf quietly).
        operands = _float64_operands(tuple(output.shape))

        def floor_divide(a, b, out):
            checked(b)
            quotient, divisor = operands(a, b)
            np.true_divide(quotient, divisor, out=quotient)
            np.floor(quotient, out=quotient)
            out[...] = quotient

        node.user_data = BinaryOpData(floor_divide)
        return

    def floor_divide(a, b, out):  # INT_MIN // -1 wraps, as in TFLite
        checked(b)
        np.floor_divide(a, b, out=out)

    node.user_data = BinaryOpData(floor_divide, elementwise=True)


def _floor_mod_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "FLOOR_MOD")
    ensure(first.type in _FLOOR_MOD_TYPES, f"Type '{type_name(first.type)}' is not supported by floor_mod.")
    context.resize_tensor(output, _output_shape(first, second, "FLOOR_MOD"))
    if first.type == T.FLOAT32:  # fmod, then the divisor's sign; x mod 0 is NaN
        node.user_data = BinaryOpData(_widened(np.remainder, first, second, output.shape))
        return
    checked = _zero_check(second, "Division by 0")

    def floor_mod(a, b, out):
        checked(b)
        np.remainder(a, b, out=out)

    node.user_data = BinaryOpData(floor_mod, elementwise=True)


# --- ATAN2, ADD_N ------------------------------------------------------------------------------------------


def _atan2_prepare(context, node):
    check_arity(node, 2)
    y, x = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(
        len(y.shape) == len(x.shape),
        f"tflite::NumDimensions(a) != tflite::NumDimensions(b) ({len(y.shape)} != {len(x.shape)})",
    )
    ensure_types_eq(y, x, "ATAN2 input types")
    ensure_types_eq(y, output, "ATAN2 input/output types")
    ensure_type(y, (T.FLOAT32, T.FLOAT64, T.FLOAT16), "input", "ATAN2")
    context.resize_tensor(output, y.shape)
    if x.shape == y.shape:
        node.user_data = BinaryOpData(np.arctan2)
        return
    # TFLite checks only the ranks and pairs the elements in memory order, over y's element count.
    count = math.prod(y.shape)
    ensure(
        math.prod(x.shape) >= count,
        f"ATAN2 input x {list(x.shape)} has fewer elements than input y {list(y.shape)}.",
    )
    shape = y.shape

    def atan2(a, b, out):
        np.arctan2(a, b.reshape(-1)[:count].reshape(shape), out=out)

    node.user_data = BinaryOpData(atan2)


def _add_n_prepare(context, node):
    ensure(len(node.inputs) >= 2, "num_inputs >= 2 was not true.")
    ensure(len(node.outputs) == 1, f"output count {len(node.outputs)} != 1")
    first, output = input_tensor(context, node, 0), output_tensor(context, node)
    for i in range(1, len(node.inputs)):
        other = input_tensor(context, node, i)
        ensure(other.shape == first.shape, "HaveSameShapes(input1, input) was not true.")
        ensure_types_eq(first, other, "ADD_N input types")
    ensure_types_eq(first, output, "ADD_N input/output types")
    ensure(
        first.type in (T.FLOAT32, T.INT32),
        f"AddN only supports FLOAT32|INT32 now, got {type_name(first.type)}.",
    )
    context.resize_tensor(output, first.shape)


def _add_n_invoke(context, node):
    tensors = context.tensors
    inputs = node.inputs
    out = tensors[node.outputs[0]].data
    np.add(tensors[inputs[0]].data, tensors[inputs[1]].data, out=out)
    for index in inputs[2:]:
        np.add(out, tensors[index].data, out=out)


# --- BITWISE_XOR, RIGHT_SHIFT ------------------------------------------------------------------------------


def _bitwise_xor_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "BITWISE_XOR")
    ensure(
        first.type in _BITWISE,
        "BitwiseXor currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, "
        f"got {type_name(first.type)}",
    )
    context.resize_tensor(output, _output_shape(first, second, "BITWISE_XOR"))
    node.user_data = BinaryOpData(_widened(np.bitwise_xor, first, second, output.shape))


def _right_shift_prepare(context, node):
    first, second, output = _binary_tensors(context, node, "RIGHT_SHIFT")
    ensure(
        first.type in _BITWISE,
        "RightShift currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, "
        f"got {type_name(first.type)}",
    )
    context.resize_tensor(output, _output_shape(first, second, "RIGHT_SHIFT"))
    # Shift counts are clamped to [0, bits - 1]; signed values shift arithmetically.
    dtype = first.dtype
    low, high = dtype.type(0), dtype.type(dtype.itemsize * 8 - 1)
    if is_constant(second):
        counts = np.clip(second.data, low, high)

        def shift(a, b, out):
            np.right_shift(a, counts, out=out)

    else:

        def shift(a, b, out):
            np.right_shift(a, clip(b, low, high), out=out)

    node.user_data = BinaryOpData(shift)


# --- comparisons -----------------------------------------------------------------------------------------

_ORDER_TYPES = (T.FLOAT32, T.FLOAT16, T.INT16, T.INT32, T.INT64, T.UINT8, T.INT8)
_EQUALITY_TYPES = (T.BOOL, *_ORDER_TYPES, T.STRING)


def _comparison_prepare(op_name: str, ufunc: np.ufunc, types: tuple[TensorType, ...]):
    equality = op_name in ("EQUAL", "NOT_EQUAL")

    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name, same_output_type=False)
        ensure_type(first, types, "input", op_name)
        ensure(output.type == T.BOOL, f"{op_name} output type must be BOOL, got {type_name(output.type)}.")
        context.resize_tensor(output, _output_shape(first, second, op_name))
        # TFLite rescales int8/uint8 always, int16 only for (NOT_)EQUAL with a quantized first input.
        rescaled = first.type in (T.INT8, T.UINT8) or (
            first.type == T.INT16 and equality and first.quantization is not None
        )
        compute = _rescaled(op_name, ufunc, first, second) if rescaled else ufunc
        if isinstance(compute, np.ufunc):
            compute = _widened(compute, first, second, output.shape)
        node.user_data = BinaryOpData(compute, elementwise=True)

    return prepare


def _rescaled(op_name: str, ufunc: np.ufunc, first, second) -> Callable:
    """Compare int8/uint8/int16 values as TFLite does: each input mapped to ((q - zero_point) << 8) times
    its scale in fixed point, the two results compared as int32. The map depends on the raw value only,
    so prepare tabulates it over the type's whole range and invoke looks the values up."""
    first_table = _rescale_table(first, op_name)
    second_table = _rescale_table(second, op_name)
    if np.array_equal(first_table, second_table) and np.all(np.diff(first_table) > 0):
        return ufunc  # same strictly increasing map on both sides: comparing raw values is the same
    unsigned = np.dtype(f"u{first.dtype.itemsize}")

    def compare(a, b, out):
        ufunc(first_table[a.view(unsigned)], second_table[b.view(unsigned)], out=out)

    return compare


def _rescale_table(tensor, op_name: str) -> np.ndarray:
    """The rescaled int32 value of every raw value, indexed by the raw bits read as unsigned."""
    scale, zero_point = float(tensor.params.scale), int(tensor.params.zero_point)
    if not 0.0 < scale < 1.0:
        raise KernelError(
            f"{op_name} on {type_name(tensor.type)} needs quantized inputs with a scale in (0, 1), "
            f"got scale {scale}."
        )
    multiplier, shift = _quantize_multiplier(scale)
    bits = tensor.dtype.itemsize * 8
    raw = np.arange(2**bits, dtype=np.int64)
    if tensor.dtype.kind == "i":
        raw = np.where(raw >= 2 ** (bits - 1), raw - 2**bits, raw)
    shifted = (raw - zero_point) * 256
    return _rounding_divide_by_pot(_doubling_high_mul(shifted, multiplier), -shift).astype(np.int32)


def _quantize_multiplier(real: float) -> tuple[int, int]:
    """A multiplier in (0, 1) as a Q31 fixed-point value and a (non-positive) power-of-two exponent."""
    fraction, shift = math.frexp(real)
    fixed = math.floor(fraction * 2.0**31 + 0.5)  # round half away from zero (positive here)
    if fixed == 2**31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def _doubling_high_mul(values: np.ndarray, multiplier: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul of int32 values by an int32 multiplier (int64 math)."""
    product = values * multiplier
    nudged = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    result = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C division truncates toward zero
    limit = -(2**31)
    return np.where((values == limit) & (multiplier == limit), 2**31 - 1, result)


def _rounding_divide_by_pot(values: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: divide by 2**exponent rounding half away from zero."""
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (values < 0)
    return (values >> exponent) + ((values & mask) > threshold)


# --- logical ---------------------------------------------------------------------------------------------


def _logical_prepare(op_name: str, ufunc: np.ufunc):
    def prepare(context, node):
        first, second, output = _binary_tensors(context, node, op_name)
        ensure(first.type == T.BOOL, "Logical ops only support bool type.")
        context.resize_tensor(output, _output_shape(first, second, op_name))
        node.user_data = BinaryOpData(_widened(ufunc, first, second, output.shape))

    return prepare


def _logical_not_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_types_eq(source, output, "LOGICAL_NOT input/output types")
    ensure_type(source, (T.BOOL,), "input", "LOGICAL_NOT")
    context.resize_tensor(output, source.shape)


def _logical_not_invoke(context, node):
    tensors = context.tensors
    np.logical_not(tensors[node.inputs[0]].data, out=tensors[node.outputs[0]].data)


# --- registration ----------------------------------------------------------------------------------------

_ARITHMETIC = (
    (BuiltinOperator.ADD, np.add, (1, 6), (T.FLOAT32, T.FLOAT16, T.INT32, T.INT64, T.INT16)),
    (BuiltinOperator.SUB, np.subtract, (1, 5), _NUMERIC),
    (
        BuiltinOperator.MUL,
        np.multiply,
        (1, 8),
        (T.FLOAT32, T.FLOAT16, T.INT32, T.UINT32, T.INT64, T.INT16, T.COMPLEX64),
    ),
    (BuiltinOperator.DIV, np.true_divide, (1, 2), (T.FLOAT32, T.INT32)),
)
for _op, _ufunc, _versions, _types in _ARITHMETIC:
    register_builtin(
        _op,
        _versions,
        types=_types,
        prepare=_finish_prepare(_arithmetic_prepare(_op.name, _ufunc, _types)),
        invoke=binary_invoke,
    )

register_builtin(
    BuiltinOperator.MAXIMUM,
    (1, 4),
    types=_MIN_MAX_TYPES,
    prepare=_finish_prepare(_min_max_prepare("MAXIMUM", np.maximum, np.fmax)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.MINIMUM,
    (1, 4),
    types=_MIN_MAX_TYPES,
    prepare=_finish_prepare(_min_max_prepare("MINIMUM", np.minimum, np.fmin)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.POW,
    (1, 1),
    types=(T.FLOAT32, T.INT32),
    prepare=_finish_prepare(_pow_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.SQUARED_DIFFERENCE,
    (1, 2),
    types=(T.FLOAT32, T.INT32),
    prepare=_finish_prepare(_squared_difference_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.FLOOR_DIV,
    (1, 3),
    types=_FLOOR_DIV_TYPES,
    prepare=_finish_prepare(_floor_div_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.FLOOR_MOD,
    (1, 2),
    types=_FLOOR_MOD_TYPES,
    prepare=_finish_prepare(_floor_mod_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.ATAN2,
    (1, 1),
    types=(T.FLOAT32, T.FLOAT64, T.FLOAT16),
    prepare=_finish_prepare(_atan2_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.ADD_N, (1, 1), types=(T.FLOAT32, T.INT32), prepare=_add_n_prepare, invoke=_add_n_invoke
)
register_builtin(
    BuiltinOperator.BITWISE_XOR,
    (1, 1),
    types=_BITWISE,
    prepare=_finish_prepare(_bitwise_xor_prepare),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.RIGHT_SHIFT,
    (1, 1),
    types=_BITWISE,
    prepare=_finish_prepare(_right_shift_prepare),
    invoke=binary_invoke,
)

for _op, _ufunc, _versions, _types in (
    (BuiltinOperator.EQUAL, np.equal, (1, 5), _EQUALITY_TYPES),
    (BuiltinOperator.NOT_EQUAL, np.not_equal, (1, 4), _EQUALITY_TYPES),
    (BuiltinOperator.LESS, np.less, (1, 3), _ORDER_TYPES),
    (BuiltinOperator.LESS_EQUAL, np.less_equal, (1, 2), _ORDER_TYPES),
    (BuiltinOperator.GREATER, np.greater, (1, 2), _ORDER_TYPES),
    (BuiltinOperator.GREATER_EQUAL, np.greater_equal, (1, 3), _ORDER_TYPES),
):
    register_builtin(
        _op,
        _versions,
        types=_types,
        prepare=_finish_prepare(_comparison_prepare(_op.name, _ufunc, _types)),
        invoke=binary_invoke,
    )

register_builtin(
    BuiltinOperator.LOGICAL_AND,
    (1, 1),
    types=(T.BOOL,),
    prepare=_finish_prepare(_logical_prepare("LOGICAL_AND", np.logical_and)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.LOGICAL_OR,
    (1, 1),
    types=(T.BOOL,),
    prepare=_finish_prepare(_logical_prepare("LOGICAL_OR", np.logical_or)),
    invoke=binary_invoke,
)
register_builtin(
    BuiltinOperator.LOGICAL_NOT,
    (1, 1),
    types=(T.BOOL,),
    prepare=_logical_not_prepare,
    invoke=_logical_not_invoke,
)

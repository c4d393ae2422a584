"""Elementwise unary math (ABS, NEG, EXP, LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN),
CAST and ZEROS_LIKE.

Prepare checks the input type against the op's table and picks the compute function, mostly one NumPy
ufunc; invoke runs it into the preallocated output. Floats are computed in their own type (float16 SIN
and COS in float32, rounded once to half, as TFLite's half kernels do); ufuncs that overflow or meet
inputs outside their domain give IEEE results (LOG(0) = -inf, LOG(-1) = SQRT(-1) = NaN), with no
RuntimeWarnings as the interpreter runs kernels with NumPy's floating-point warnings off. ROUND is
half-to-even computed from the floor, so a negative input that rounds to zero gives +0 as in TFLite.
bfloat16 (held as raw uint16 bits) is widened to float32 and rounded back to nearest-even; NEG only flips
its sign bit. Integer NEG and ABS wrap (-(-128) == -128). The int8/int16 variants TFLite computes with
requantization (ABS, EXP, LOG, SQRT, RSQRT) are not supported yet.

CAST converts every pair of its types the way TFLite's cast.cc does: floats (and complex64's real part)
to integers truncate toward zero and saturate at the integer type's limits, NaN giving the maximum;
integers to narrower integers wrap; anything to bool is "!= 0" (complex64: its real part); float16,
bfloat16 and complex64 results go through float32 (so float64 -> float16 rounds twice, as in TFLite).
int4/uint4/int2 convert only to and from float32 (float32 -> int4 clamps to [-8, 7], NaN to 7, then
truncates).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core.types import BuiltinOperator, TensorType, storage_dtype, type_name
from ..errors import KernelError, ensure_type, ensure_types_eq
from .common import check_arity, input_tensor, output_tensor
from .quantize import PACKED_TYPES, pack_into, unpack_packed
from .registry import register_builtin

T = TensorType
Compute = Callable[[np.ndarray, np.ndarray], object]


# --- bfloat16 (raw bits in uint16) ----------------------------------------------------------------


def bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    """A new float32 array with the values of bfloat16 bits (exact)."""
    wide = bits.astype(np.uint32)
    wide <<= 16
    return wide.view(np.float32)


def float32_to_bfloat16(values: np.ndarray, out: np.ndarray) -> None:
    """Round to bfloat16 bits, nearest-even, NaN to a quiet NaN of the same sign (Eigen's rtne)."""
    values = np.array(values, dtype=np.float32, copy=None, order="C")
    bits = values.view(np.uint32)
    with np.errstate(over="ignore"):
        rounded = (bits + (np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1)))) >> 16
    np.copyto(out, rounded, casting="unsafe")
    nan = np.isnan(values)
    if nan.any():
        np.copyto(out, np.where(np.signbit(values), 0xFFC0, 0x7FC0), where=nan, casting="unsafe")


def _on_bfloat16(compute: Compute) -> Compute:
    """Run a float32 compute function on bfloat16 bits widened to float32, and round the result back."""

    def run(x, out):
        values = bfloat16_to_float32(x)
        result = np.empty_like(values)
        compute(values, result)
        float32_to_bfloat16(result, out)

    return run


# --- unary math -----------------------------------------------------------------------------------


def _in_float32(ufunc: np.ufunc) -> Compute:
    """A float16 ufunc computed in float32 and rounded once to half."""

    def compute(x, out):
        ufunc(x, out=out, dtype=np.float32)

    return compute


_ONE = np.array(1, np.float32)


def _rsqrt(x, out):
    np.sqrt(x, out)
    np.divide(_ONE, out, out)  # 1.f / std::sqrt(x): two correctly rounded steps


def _round(x, out):
    # TFLite rounds half to even from floor(x): zero results are +0 except for a zero input (-0 stays)
    zero = x == 0
    np.rint(x, out=out)
    np.add(out, 0.0, out=out)
    np.copyto(out, x, where=zero)


def _flip_sign_bit(x, out):
    np.bitwise_xor(x, np.uint16(0x8000), out=out)


def _zeros(x, out):
    out.fill(0)


def unary_prepare(op_name: str, computes: dict[TensorType, Compute], requantized: tuple = ()):
    """Prepare for a one-input op whose output has the input's type and shape.

    `computes` maps each supported input type to its compute function; `requantized` lists the
    types TFLite handles with requantization (a later issue), rejected with a clear message. A type in
    both is supported when the input carries no quantization (ABS of plain int16)."""

    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        if source.type in requantized and (source.type not in computes or source.quantization is not None):
            raise KernelError(f"{op_name} of a quantized {type_name(source.type)} input is not supported yet")
        ensure_type(source, tuple(computes), "input", op_name)
        ensure_types_eq(source, output, f"{op_name} input/output types")
        context.resize_tensor(output, source.shape)
        node.user_data = computes[source.type]

    return prepare


def unary_invoke(context, node):
    tensors = context.tensors
    node.user_data(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


_QUANTIZED = (T.INT8, T.INT16)
_UNARY = (
    (BuiltinOperator.ABS, (1, 5), {T.FLOAT32: np.absolute, T.INT16: np.absolute, T.INT32: np.absolute}),
    (
        BuiltinOperator.NEG,
        (1, 1),
        {
            T.FLOAT32: np.negative,
            T.INT32: np.negative,
            T.INT64: np.negative,
            T.INT8: np.negative,  # TFLite negates int8/int16 values without requantizing
            T.INT16: np.negative,
            T.FLOAT16: np.negative,
            T.BFLOAT16: _flip_sign_bit,
        },
    ),
    (BuiltinOperator.EXP, (1, 2), {T.FLOAT32: np.exp}),
    (BuiltinOperator.LOG, (1, 2), {T.FLOAT32: np.log}),
    (BuiltinOperator.SQRT, (1, 2), {T.FLOAT32: np.sqrt}),
    (BuiltinOperator.RSQRT, (1, 3), {T.FLOAT32: _rsqrt}),
    (BuiltinOperator.SQUARE, (1, 1), {T.FLOAT32: np.square}),
    (BuiltinOperator.SIN, (1, 2), {T.FLOAT32: np.sin, T.FLOAT16: _in_float32(np.sin)}),
    (BuiltinOperator.COS, (1, 2), {T.FLOAT32: np.cos, T.FLOAT16: _in_float32(np.cos)}),
    (
        BuiltinOperator.FLOOR,
        (1, 1),
        {T.FLOAT32: np.floor, T.FLOAT16: np.floor, T.BFLOAT16: _on_bfloat16(np.floor)},
    ),
    (BuiltinOperator.CEIL, (1, 1), {T.FLOAT32: np.ceil}),
    (BuiltinOperator.ROUND, (1, 1), {T.FLOAT32: _round, T.FLOAT16: _round, T.BFLOAT16: _on_bfloat16(_round)}),
    (BuiltinOperator.SIGN, (1, 2), {T.FLOAT32: np.sign, T.FLOAT64: np.sign, T.INT32: np.sign}),
    (BuiltinOperator.ZEROS_LIKE, (1, 1), {T.INT32: _zeros, T.INT64: _zeros, T.FLOAT32: _zeros}),
)
_REQUANTIZED = {
    BuiltinOperator.ABS: _QUANTIZED,
    BuiltinOperator.EXP: _QUANTIZED,
    BuiltinOperator.LOG: _QUANTIZED,
    BuiltinOperator.SQRT: _QUANTIZED,
    BuiltinOperator.RSQRT: _QUANTIZED,
}

for _op, _versions, _computes in _UNARY:
    register_builtin(
        _op,
        _versions,
        types=tuple(_computes),
        prepare=unary_prepare(_op.name, _computes, _REQUANTIZED.get(_op, ())),
        invoke=unary_invoke,
    )


# --- CAST -----------------------------------------------------------------------------------------

_CAST_TYPES = (
    T.BOOL,
    T.INT8,
    T.INT16,
    T.INT32,
    T.INT64,
    T.UINT8,
    T.UINT16,
    T.UINT32,
    T.FLOAT16,
    T.BFLOAT16,
    T.FLOAT32,
    T.FLOAT64,
    T.COMPLEX64,
    *PACKED_TYPES,
)
_INTEGERS = (T.INT8, T.INT16, T.INT32, T.INT64, T.UINT8, T.UINT16, T.UINT32)
_PACKED_RANGE = {T.INT4: (-8.0, 7.0), T.UINT4: (0.0, 15.0), T.INT2: (-2.0, 1.0)}


def _reader(in_type: TensorType) -> tuple[Callable[[np.ndarray], np.ndarray], np.dtype]:
    """How to read the input's values, and their dtype: bfloat16 as float32, complex64 as its real part."""
    if in_type == T.BFLOAT16:
        return bfloat16_to_float32, np.dtype(np.float32)
    if in_type == T.COMPLEX64:
        return (lambda x: x.real), np.dtype(np.float32)
    return (lambda x: x), storage_dtype(in_type)


def _saturating_cast(read, value_dtype: np.dtype, out_type: TensorType) -> Compute:
    """Floating values to an integer type: truncate toward zero, saturate at its limits, NaN to its max.

    A direct conversion truncates every value whose result fits; the few outside [min, max + 1) (and
    NaN) are then set to the limit. Both bounds are 0 or powers of two, exact in every float type."""
    info = np.iinfo(storage_dtype(out_type))
    bound = np.float64 if value_dtype == np.float64 else np.float32
    low, high = bound(info.min), bound(float(info.max) + 1)

    def compute(x, out):
        values = read(x)
        np.copyto(out, values, casting="unsafe")
        inside = values >= low
        inside &= values < high
        if not inside.all():
            outside = ~inside
            out[outside] = np.where(values[outside] < low, info.min, info.max)

    return compute


def _cast_function(in_type: TensorType, out_type: TensorType, shape: tuple[int, ...]) -> Compute:
    if in_type in PACKED_TYPES:  # to float32 only
        count = math.prod(shape)
        return lambda x, out: np.copyto(out, unpack_packed(x, count, in_type).reshape(out.shape))
    if out_type in PACKED_TYPES:  # from float32 only
        low, high = (np.float32(v) for v in _PACKED_RANGE[out_type])

        def to_packed(x, out):
            values = np.fmin(x, high, out=np.empty(x.shape, np.float32))  # min(high, x): NaN -> high
            np.maximum(values, low, out=values)
            pack_into(values.astype(np.int8), out_type, out)

        return to_packed
    if in_type == out_type:
        return lambda x, out: np.copyto(out, x)
    read, value_dtype = _reader(in_type)
    if out_type == T.BFLOAT16:
        return lambda x, out: float32_to_bfloat16(read(x), out)
    if out_type in _INTEGERS and value_dtype.kind == "f":
        return _saturating_cast(read, value_dtype, out_type)
    if out_type in (T.FLOAT16, T.COMPLEX64) and value_dtype not in (np.float16, np.float32):
        # TFLite converts to float first: int64/float64 -> float16 rounds twice
        return lambda x, out: np.copyto(out, read(x).astype(np.float32), casting="unsafe")
    return lambda x, out: np.copyto(out, read(x), casting="unsafe")


def cast_prepare(context, node):
    # The types come from the tensors; CastOptions, when present, are not consulted (as in TFLite).
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, _CAST_TYPES, "input", "CAST")
    ensure_type(output, _CAST_TYPES, "output", "CAST")
    if (source.type in PACKED_TYPES or output.type in PACKED_TYPES) and T.FLOAT32 not in (
        source.type,
        output.type,
    ):
        raise KernelError(
            f"CAST from {type_name(source.type)} to {type_name(output.type)} is unsupported: "
            "INT4, UINT4 and INT2 convert only to and from FLOAT32."
        )
    context.resize_tensor(output, source.shape)
    node.user_data = _cast_function(source.type, output.type, source.shape)


register_builtin(BuiltinOperator.CAST, (1, 9), types=_CAST_TYPES, prepare=cast_prepare, invoke=unary_invoke)

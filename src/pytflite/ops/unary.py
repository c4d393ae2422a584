"""Elementwise unary math (ABS, NEG, EXP, LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN),
CAST and ZEROS_LIKE.

Prepare checks the input type against the op's table and picks the compute function, mostly one NumPy
ufunc, kept in a UnaryData; invoke runs it into the preallocated output. Floats are computed in their
own type (float16 SIN and COS in float32, rounded once to half, as TFLite's half kernels do); ufuncs
that overflow or meet inputs outside their domain give IEEE results (LOG(0) = -inf, LOG(-1) =
SQRT(-1) = NaN), with no RuntimeWarnings as the interpreter runs kernels with NumPy's floating-point
warnings off. ROUND is half-to-even computed from the floor, so a negative input that rounds to zero
gives +0 as in TFLite. bfloat16 (held as raw uint16 bits) is widened to float32 and rounded back to
nearest-even; NEG only flips its sign bit. Integer NEG and ABS wrap (-(-128) == -128).

Quantized int8 and int16 ABS, EXP, LOG, SQRT and RSQRT (int16 with zero points 0) are a lookup table over
every input value, made in prepare by TFLite's own per-value arithmetic, so invoke is one np.take:
- ABS: |q - input zero point|, requantized by MultiplyByQuantizedMultiplier when the scales differ;
- EXP, LOG, and int16 RSQRT: TFLite's LUTPopulate (int8: the float function at each input value,
  rounded; int16: 513 samples, midpoint-corrected, interpolated as LUTLookup does for every value);
  std::exp and std::log are evaluated in float64 and rounded to float32, as close to libm's expf and
  logf as NumPy gets;
- SQRT: the float32 formula truncated toward zero (a C cast, not a rounding);
- int8 RSQRT: gemmlowp's fixed-point Newton-Raphson inverse square root (GetInvSqrtQuantizedMultiplierExp)
  and two MultiplyByQuantizedMultiplier steps.
SQRT and RSQRT fail at invoke on inputs below the input zero point, as TFLite does. SQRT's float-to-int32
casts of values out of int32's range give INT32_MIN on x86 hosts (cvttss2si) and saturate elsewhere
(ARM), before TFLite's LUTs clamp them.

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
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..core.types import INT32_MIN, BuiltinOperator, TensorType, storage_dtype, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..fidelity.arithmetic import HostArithmetic
from .common import Computation, calls_on, check_arity, input_tensor, output_tensor
from .quant.fixed_point import (
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap,
)
from .quant.lut import every_value, expf, int16_table, logf, populate_8bit, table_kernel
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


# 1.f / std::sqrt(x): two correctly rounded steps
_rsqrt = Computation(lambda x, out: (partial(np.sqrt, x, out), partial(np.divide, _ONE, out, out)))


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


# --- quantized unary math: lookup tables over every int8 / int16 input value ----------------------

_F32 = np.float32


def _affine(tensor, role: str, op_name: str) -> tuple[float, int]:
    """The first scale and zero point of a tensor TFLite requires to be affine-quantized."""
    quantization = tensor.quantization
    ensure(
        quantization is not None and quantization.scale.size > 0 and quantization.zero_point.size > 0,
        f"{op_name} of a quantized {type_name(tensor.type)} tensor needs affine quantization on its {role}",
    )
    return float(quantization.scale[0]), int(quantization.zero_point[0])


def _elementwise_params(source, output, op_name: str) -> tuple[float, int, float, int]:
    """Input and output scale and zero point as TFLite's elementwise GenericPrepare reads them."""
    in_scale, in_zero = _affine(source, "input", op_name)
    out_scale, out_zero = _affine(output, "output", op_name)
    if source.type == T.INT16:
        ensure_eq(in_zero, 0, f"{op_name} int16 input zero point")
        ensure_eq(out_zero, 0, f"{op_name} int16 output zero point")
    return in_scale, in_zero, out_scale, out_zero


def _clamped(values: np.ndarray, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(values, info.min, info.max).astype(dtype)


def _abs_quantized(source, output, arithmetic: HostArithmetic) -> Compute:
    in_scale, in_zero, out_scale, out_zero = _elementwise_params(source, output, "ABS")
    values = every_value(source.dtype)
    magnitude = np.abs(values - in_zero)
    if _F32(in_scale) != _F32(out_scale):
        multiplier, shift = quantize_multiplier(float(_F32(in_scale) / _F32(out_scale)))
        magnitude = multiply_by_quantized_multiplier(magnitude, multiplier, shift)
    return table_kernel(_clamped(magnitude + out_zero, source.dtype), source.dtype)


def _lut(source, in_scale, in_zero, out_scale, out_zero, transform) -> Compute:
    """TFLite's LUTPopulate table (int8) or interpolated int16 lookup of `transform`, as a kernel."""
    if source.type == T.INT8:
        table = populate_8bit(transform, in_scale, in_zero, out_scale, out_zero, np.int8)
    else:
        table = int16_table(transform, in_scale, in_zero, out_scale, out_zero)
    return table_kernel(table, source.dtype)


def _exp_quantized(source, output, arithmetic: HostArithmetic) -> Compute:
    # EXP reads the legacy per-tensor parameters and needs no quantization (a missing one is scale 0)
    in_scale, in_zero = source.params.scale, source.params.zero_point
    out_scale, out_zero = output.params.scale, output.params.zero_point
    if source.type == T.INT16:
        ensure_eq(in_zero, 0, "EXP int16 input zero point")
        ensure_eq(out_zero, 0, "EXP int16 output zero point")
    return _lut(source, in_scale, in_zero, out_scale, out_zero, expf)


def _log_quantized(source, output, arithmetic: HostArithmetic) -> Compute:
    in_scale, in_zero, out_scale, out_zero = _elementwise_params(source, output, "LOG")
    lowest = int(np.iinfo(source.dtype).min)
    output_min = _F32(lowest - out_zero) * _F32(out_scale)

    def transform(x):
        return np.where(x <= _F32(0), output_min, logf(np.where(x > 0, x, _F32(1))))

    return _lut(source, in_scale, in_zero, out_scale, out_zero, transform)


def _checked(compute: Compute, low: int, high: int, message: str) -> Compute:
    """Fail at invoke, with TFLite's message, when an input lies outside [low, high]."""

    def run(x, out):
        if x.size and (x.min() < low or x.max() > high):
            raise KernelError(message)
        compute(x, out)

    return run


def _valid_range(valid: np.ndarray, values: np.ndarray) -> tuple[int, int]:
    """The input values a monotonic validity mask accepts, as [low, high] (empty: low > high)."""
    accepted = values[valid]
    return (int(accepted.min()), int(accepted.max())) if accepted.size else (1, 0)


def _sqrt_quantized(source, output, arithmetic: HostArithmetic) -> Compute:
    in_scale, in_zero, out_scale, out_zero = _elementwise_params(source, output, "SQRT")
    values = every_value(source.dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        dequantized = _F32(in_scale) * (values - in_zero).astype(np.float32)
        valid = ~(dequantized < _F32(0))
        quotient = np.sqrt(np.where(valid, dequantized, _F32(0))) / _F32(out_scale)
    table = _clamped(wrap(arithmetic.float_to_int32(quotient) + out_zero, 32), source.dtype)
    low, high = _valid_range(valid, values)
    return _checked(
        table_kernel(table, source.dtype), low, high, "Sqrt is only defined for non-negative values"
    )


def _saturating_left_shift(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent on int32 values."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, 2**31 - 1, np.where(x < -threshold, INT32_MIN, x << exponent))


def _inv_sqrt_multipliers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp (with kReverseShift) for int32 values >= 2 and below
    2**29: gemmlowp fixed point with 3 integer bits, five Newton-Raphson steps from 1, times sqrt(2)/2."""
    srdhm = saturating_rounding_doubling_high_mul
    shift = np.full(values.shape, 11, np.int64)
    bit_length = np.frexp(values.astype(np.float64))[1].astype(np.int64)  # exact for integers
    pairs = ((32 - bit_length) - 1) // 2 - 1
    shift -= pairs
    scaled = values << (2 * pairs)
    half_input = rounding_divide_by_pot(scaled >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(values.shape, 1 << 28, np.int64)  # 1.0
    for _ in range(5):  # x = 1.5 x - (input / 2) x^3, products by SRDHM, rescaled to 3 integer bits
        cube = _saturating_left_shift(srdhm(srdhm(x, x), x), 6)
        x = _saturating_left_shift(wrap(srdhm(half_three, x) - srdhm(half_input, cube), 32), 3)
    x = srdhm(x, 1518500250)
    negative = shift < 0
    x = np.where(negative, wrap(x << np.where(negative, -shift, 0), 32), x)
    shift = np.where(negative, 0, shift)
    return x, -shift


def _rsqrt_quantized(source, output, arithmetic: HostArithmetic) -> Compute:
    in_scale, in_zero, out_scale, out_zero = _elementwise_params(source, output, "RSQRT")
    message = "Rsqrt is only defined for positive values"
    info = np.iinfo(source.dtype)
    if source.type == T.INT16:
        limit = _F32(32767) * _F32(out_scale)

        def transform(x):
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(x <= _F32(0), limit, _F32(1) / np.sqrt(np.where(x > 0, x, _F32(1))))

        table = int16_table(transform, in_scale, in_zero, out_scale, out_zero)
        return _checked(table_kernel(table, np.int16), in_zero, int(info.max), message)
    # int8: 1 / sqrt(input_scale) / output_scale, with sqrt in float32 and the division in double
    multiplier, shift = quantize_multiplier(1.0 / float(np.sqrt(_F32(in_scale)) * _F32(out_scale)))
    values = every_value(np.int8)
    offsets = values - in_zero
    inverse, inverse_shift = _inv_sqrt_multipliers(np.maximum(offsets, 2))
    small = offsets <= 1  # GetInvSqrtQuantizedMultiplierExp treats 0 and 1 as 1: INT32_MAX, shift 0
    inverse = np.where(small, 2**31 - 1, inverse)
    inverse_shift = np.where(small, 0, inverse_shift)
    scaled = multiply_by_quantized_multiplier(np.ones_like(values), inverse, inverse_shift + 20)
    result = multiply_by_quantized_multiplier(scaled, multiplier, shift - 20) + out_zero
    result = np.where(offsets == 0, 127, result)  # a zero input gives the largest output
    return _checked(table_kernel(_clamped(result, np.int8), np.int8), in_zero, 127, message)


# builder(source, output, arithmetic) -> the compute of a quantized input; arithmetic: the host's, which
# decides how float values convert to int32 (SQRT's table)
_QUANTIZED_BUILDERS = {
    BuiltinOperator.ABS: _abs_quantized,
    BuiltinOperator.EXP: _exp_quantized,
    BuiltinOperator.LOG: _log_quantized,
    BuiltinOperator.SQRT: _sqrt_quantized,
    BuiltinOperator.RSQRT: _rsqrt_quantized,
}


def _takes_quantized(op: BuiltinOperator, source) -> bool:
    """TFLite's quantized path: every int8 input; int16 ones with quantization (EXP: every int16)."""
    if op not in _QUANTIZED_BUILDERS:
        return False
    if source.type == T.INT8:
        return True
    return source.type == T.INT16 and (op == BuiltinOperator.EXP or source.quantization is not None)


def unary_prepare(op: BuiltinOperator, computes: dict[TensorType, Compute], types: tuple[TensorType, ...]):
    """Prepare for a one-input op whose output has the input's type and shape.

    `computes` maps each plain input type to its compute function; quantized int8/int16 inputs of the
    ops in _QUANTIZED_BUILDERS get a lookup table instead. `types` is every accepted input type."""
    op_name = op.name

    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_type(source, types, "input", op_name)
        ensure_types_eq(source, output, f"{op_name} input/output types")
        if _takes_quantized(op, source):
            compute = _QUANTIZED_BUILDERS[op](source, output, context.host.arithmetic)
        else:
            # LOG, SQRT and RSQRT of int16 without quantization read a table TFLite never built
            ensure(
                source.type in computes,
                f"{op_name} of a {type_name(source.type)} input needs quantization parameters",
            )
            compute = computes[source.type]
        context.resize_tensor(output, source.shape)
        node.user_data = UnaryData(compute)

    return prepare


@dataclass(frozen=True, slots=True)
class UnaryData:
    """The op data of the unary math ops and CAST: what prepare picked for the input's type."""

    compute: Compute  # compute(x, out)


def unary_invoke(context, node):
    tensors = context.tensors
    node.user_data.compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


def unary_calls(context, node):
    """The compute function's calls on the node's arrays (Registration.calls)."""
    tensors = context.tensors
    return calls_on(node.user_data.compute, tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


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
_QUANTIZED_TYPES = (T.INT8, T.INT16)

for _op, _versions, _computes in _UNARY:
    _types = tuple(_computes)
    if _op in _QUANTIZED_BUILDERS:
        _types += tuple(t for t in _QUANTIZED_TYPES if t not in _computes)
    register_builtin(
        _op,
        _versions,
        types=_types,
        op_data=UnaryData,
        prepare=unary_prepare(_op, _computes, _types),
        invoke=unary_invoke,
        calls=unary_calls,
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
    limits = np.array([info.min, info.max], storage_dtype(out_type))

    def compute(x, out):
        values = read(x)
        np.copyto(out, values, casting="unsafe")
        inside = values >= low
        inside &= values < high
        if not inside.all():
            outside = ~inside
            # the limits typed: plain Python ints would be int32 on 32-bit NumPy
            out[outside] = np.where(values[outside] < low, limits[0], limits[1])

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
    node.user_data = UnaryData(_cast_function(source.type, output.type, source.shape))


register_builtin(
    BuiltinOperator.CAST,
    (1, 9),
    types=_CAST_TYPES,
    op_data=UnaryData,
    prepare=cast_prepare,
    invoke=unary_invoke,
    calls=unary_calls,
)

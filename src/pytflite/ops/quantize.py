"""DEQUANTIZE and QUANTIZE: between float32 and quantized integers, and between quantizations; FAKE_QUANT,
both at once on float32.

An affine-quantized value q stands for `scale * (q - zero_point)`. TFLite's reference kernel rounds
float(double(scale) * int32(q - zero_point)) once; with a float32 scale and |q - zero_point| < 2**24
one float32 multiply of exact factors rounds the same way (a zero point too large for that falls back to
float64). Its optimized kernel, which BuiltinOpResolver uses on x86 (SSE4.1) and ARM, handles per-tensor
inputs in whole blocks of 8 as float(q) * scale + float(-zero_point * scale), rounding twice, and only the
last size % 8 elements exactly; the default kernel here does the same, BUILTIN_REF the exact formula.
Per-tensor inputs use the legacy single (scale, zero_point) pair (0.0 and 0 when the tensor has none,
giving zeros, as in TFLite); per-channel inputs (more than one scale) take one pair per slice along
`quantized_dimension`, exactly rounded in both kernels (uint8, int8 and the packed types only: TFLite
rejects per-channel int16 and float16). int16 needs a zero point of 0. float16 converts exactly and
ignores quantization.

When the input is a constant (e.g. the float16 weights of an fp16 model) the output is computed once,
right after prepare, into a PERSISTENT_RO tensor (the subgraph folds a node of constant inputs), and
never again at invoke.

QUANTIZE of a float32 input computes zero_point + round(x / scale), clamped to the output type. The
reference kernel (and, in both, per-channel and int4/uint4 outputs) divides in float32 and rounds halves
away from zero. The optimized per-tensor int8/uint8/int16 kernel (BuiltinOpResolver's; LiteRT's x86 build
runs its NEON code through an SSE translation) does whole blocks of 8 elements as x * float32(1 / scale),
rounded half to even, and the last size % 8 elements by a double division rounded half away. A value
outside int32 (and NaN) becomes INT32_MIN on x86 hosts, as x86's conversions give; elsewhere (ARM's
conversions) it saturates to int32's limits, NaN giving 0. Then the zero point is added (wrapping) and
the clamp applied.
QUANTIZE of an integer input requantizes: (q - in_zero_point) * in_scale / out_scale by the fixed-point
multiplier, plus out_zero_point, clamped. The optimized kernel does 8-bit to 8-bit in SIMD blocks of 16,
whose fixed-point multiply rounds halves up instead of away from zero. For 8- and 16-bit inputs the
result is a table over every possible input value (one per rounding), made in prepare.

QUANTIZE works in an arena temporary its init adds: the float32 quotients of the optimized float kernel,
or the np.intp indices of a table lookup (np.take takes no narrower index without copying it).

FAKE_QUANT (quantization-aware training's op, left in a model the converter did not fold) rounds float32
values to the grid of num_bits levels over [min, max] as TensorFlow's FakeQuantWithMinMaxArgs does: the
range nudged so that zero is a level, the input clamped to it, then round(shifted / scale) * scale +
nudged_min, every step in float32, halves away from zero; NaN becomes the nudged minimum (C++'s
std::max keeps its first argument when a comparison fails). LiteRT has no narrow_range kernel and
refuses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..core.packed import PACKED_TYPES, pack_into, unpack_packed
from ..core.quantization import AffineQuantization
from ..core.types import BuiltinOperator, TensorType, storage_dtype, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type
from ..fidelity.arithmetic import HostArithmetic
from .common import (
    INTP_TYPE,
    Computation,
    add_scratch_tensors,
    calls_on,
    check_arity,
    clip,
    input_tensor,
    output_tensor,
    scratch_tensor,
    set_temporaries,
)
from .jit import compiled
from .kernel_type import OPTIMIZED, KernelType
from .quant.fixed_point import (
    INT32_MIN,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_simd,
    quantize_multiplier,
    round_half_away,
    round_non_negative,
    wrap,
)
from .registry import register_builtin

# ---------------------------------------------------------------------------------------------------
# DEQUANTIZE

_DEQUANTIZE_TYPES = (
    TensorType.UINT8,
    TensorType.INT8,
    TensorType.INT16,
    TensorType.FLOAT16,
    TensorType.INT4,
    TensorType.UINT4,
    TensorType.INT2,
)
_PER_CHANNEL_TYPES = (TensorType.UINT8, TensorType.INT8, *PACKED_TYPES)
_EXACT_IN_FLOAT32 = 1 << 24
Compute = Callable[[np.ndarray, np.ndarray], None]


@dataclass(frozen=True, slots=True)
class ConversionData:
    """The op data of DEQUANTIZE and QUANTIZE: the conversion prepare picked, compute(input, out) (QUANTIZE:
    compute(input, out, work), `work` the temporary `scratch` that QUANTIZE's init adds)."""

    compute: Callable | None
    scratch: int = -1


def _affine(scale: np.ndarray, zero_point: np.ndarray, largest_input: int) -> Compute:
    """compute(q, out): out = scale * (q - zero_point) rounded once to float32 (TFLite's reference)."""
    scale = scale.astype(np.float32)
    if int(np.max(np.abs(zero_point), initial=0)) + largest_input < _EXACT_IN_FLOAT32:
        zero_point = zero_point.astype(np.float32)
        return Computation(
            lambda q, out: (
                partial(np.copyto, out, q),  # exact: a small integer; cheaper than a ufunc casting its input
                partial(np.subtract, out, zero_point, out),  # exact: both are small integers
                partial(np.multiply, out, scale, out),
            )
        )
    zero_point = zero_point.astype(np.int64)
    wide_scale = scale.astype(np.float64)

    def compute(q, out):
        difference = (q.astype(np.int64) - zero_point).astype(np.int32)  # TFLite's int32 arithmetic
        np.multiply(difference, wide_scale, out=out, casting="unsafe")

    return compute


def _affine_blocked(scale: float, zero_point: int, exact: Compute) -> Compute:
    """TFLite's optimized per-tensor kernel (the one LiteRT runs on x86 and ARM): whole blocks of 8
    elements as float(q) * scale + float(-zero_point * scale), two float32 roundings; the last
    size % 8 elements by the exact formula."""
    scale32 = np.float32(scale)
    offset = np.float32(-zero_point * float(scale))

    def calls(q, out):
        flat_q, flat_out = q.reshape(-1), out.reshape(-1)
        blocked = flat_q.size - flat_q.size % 8
        block = flat_out[:blocked]
        blocks = (
            partial(np.copyto, block, flat_q[:blocked]),  # exact; cheaper than a ufunc casting its input
            partial(np.multiply, block, scale32, block),
            partial(np.add, block, offset, block),
        )
        tail = calls_on(exact, flat_q[blocked:], flat_out[blocked:]) if blocked < flat_q.size else ()
        return (blocks if blocked else ()) + tail

    return Computation(calls)


def _compiled_affine(scale: float, zero_point: int, kernel_type: KernelType, numpy_path: Compute) -> Compute:
    """A per-tensor 8/16-bit dequantization in one compiled call (quantize_compiled.dequantize) where
    compiled kernels run, for contiguous writable arrays; else `numpy_path`. (For a zero point small
    enough that q - zero point is exact in float32, as the kernel computes it.)"""
    kernel = compiled("quantize_compiled", "dequantize")
    if kernel is None:
        return numpy_path
    scale32, offset, zero32 = (
        np.float32(scale),
        np.float32(-zero_point * float(scale)),
        np.float32(zero_point),
    )

    def calls(q, out):
        if not (q.flags.c_contiguous and q.flags.writeable and out.flags.c_contiguous):
            return calls_on(numpy_path, q, out)
        blocked = q.size - q.size % 8 if kernel_type is OPTIMIZED else 0
        return (partial(kernel, q.reshape(-1), scale32, offset, zero32, blocked, out.reshape(-1)),)

    return Computation(calls)


def dequantize_compute(source, kernel_type: KernelType) -> Compute:
    """compute(input, out): `source`'s values as float32, as DEQUANTIZE's `kernel_type` kernel computes
    them."""
    quantization = source.quantization
    per_channel = isinstance(quantization, AffineQuantization) and quantization.scale.size > 1
    if source.type == TensorType.FLOAT16 and not per_channel:
        return lambda x, out: np.copyto(out, x)
    largest_input = 1 << 16 if source.type == TensorType.INT16 else 1 << 8
    if per_channel:
        ensure(
            source.type in _PER_CHANNEL_TYPES,
            f"Type {type_name(source.type)} not supported for per-channel dequantization.",
        )
        rank, axis, channels = len(source.shape), quantization.quantized_dimension, quantization.scale.size
        ensure(0 <= axis < rank, f"quantized_dimension {axis} out of range for a {rank}-D input")
        ensure_eq(source.shape[axis], channels, "DEQUANTIZE input channels vs per-channel scales")
        view = [1] * rank
        view[axis] = channels
        zero_point = quantization.zero_point
        if zero_point.size != channels:  # TFLite repeats a single zero point for every channel
            zero_point = np.full(channels, zero_point[0] if zero_point.size else 0, np.int64)
        affine = _affine(quantization.scale.reshape(view), zero_point.reshape(view), largest_input)
    else:
        scale, zero_point = source.params.scale, source.params.zero_point
        if source.type == TensorType.INT16:
            ensure_eq(zero_point, 0, "DEQUANTIZE int16 input zero point")
        affine = _affine(np.array(scale, np.float32), np.array(zero_point), largest_input)
        if kernel_type is OPTIMIZED:
            affine = _affine_blocked(scale, zero_point, affine)
        if source.type not in PACKED_TYPES and abs(zero_point) + largest_input < _EXACT_IN_FLOAT32:
            return _compiled_affine(scale, zero_point, kernel_type, affine)
    if source.type in PACKED_TYPES:
        tensor_type, shape, count = source.type, source.shape, math.prod(source.shape)
        return lambda x, out: affine(unpack_packed(x, count, tensor_type).reshape(shape), out)
    return affine


def dequantize_prepare(kernel_type: KernelType):
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_type(source, _DEQUANTIZE_TYPES, "input", "DEQUANTIZE")
        if output.type != TensorType.FLOAT32:
            raise KernelError(f"DEQUANTIZE output type: {type_name(output.type)} != FLOAT32")
        compute = dequantize_compute(source, kernel_type)
        context.resize_tensor(output, source.shape)
        node.user_data = ConversionData(compute)

    return prepare


def dequantize_invoke(context, node):
    tensors = context.tensors
    with np.errstate(all="ignore"):  # a huge scale overflows to inf, as in TFLite
        node.user_data.compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


def dequantize_calls(context, node):
    """The compute's calls on the node's arrays, without dequantize_invoke's np.errstate: a step list
    runs inside the subgraph's invoke, which has set it."""
    tensors = context.tensors
    return calls_on(node.user_data.compute, tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


register_builtin(
    BuiltinOperator.DEQUANTIZE,
    (1, 9),
    types=_DEQUANTIZE_TYPES,
    op_data=ConversionData,
    prepare_for=dequantize_prepare,
    invoke=dequantize_invoke,
    calls=dequantize_calls,
)


# ---------------------------------------------------------------------------------------------------
# QUANTIZE

_FLOAT_TARGETS = (TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.INT4, TensorType.UINT4)
_PER_CHANNEL_TARGETS = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)
_BLOCKED_TARGETS = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)  # the optimized kernel's
_BYTES = (TensorType.UINT8, TensorType.INT8)  # requantized in SIMD blocks of 16 by the optimized kernel
_REQUANTIZE_TARGETS = {
    TensorType.INT16: (TensorType.INT8, TensorType.INT16, TensorType.INT32),
    TensorType.INT32: (TensorType.INT8, TensorType.INT16),
    TensorType.INT8: (TensorType.UINT8, TensorType.INT8, TensorType.INT16),
    TensorType.UINT8: (TensorType.UINT8, TensorType.INT8, TensorType.INT16),
}
_QUANTIZE_TYPES = (TensorType.FLOAT32, *_REQUANTIZE_TARGETS)
_RANGES = {
    TensorType.INT4: (-8, 7),
    TensorType.UINT4: (0, 15),
    TensorType.UINT8: (0, 255),
    TensorType.INT8: (-128, 127),
    TensorType.INT16: (-(2**15), 2**15 - 1),
    TensorType.INT32: (INT32_MIN, 2**31 - 1),
}


def _float_quantizer(output, blocked: bool, arithmetic: HostArithmetic) -> tuple[Callable, bool]:
    """compute(x, out, work): out = clamp(zero_point + round(x / scale)) per tensor or per channel, and
    whether it uses `work` (float32, x's size); `blocked`: as the optimized kernel's SIMD blocks of 8;
    `arithmetic`: the host's (its float-to-int32 conversion)."""
    quantization = output.quantization
    lowest, highest = _RANGES[output.type]
    rank = len(output.shape)
    if quantization.scale.size > 1:
        axis, channels = quantization.quantized_dimension, quantization.scale.size
        ensure(0 <= axis < rank, f"quantized_dimension {axis} out of range for a {rank}-D output")
        ensure_eq(output.shape[axis], channels, "QUANTIZE output channels vs per-channel scales")
        view = [1] * rank
        view[axis] = channels
        zero_point = quantization.zero_point
        if zero_point.size != channels:  # TFLite repeats the first zero point for every channel
            zero_point = np.full(channels, zero_point[0] if zero_point.size else 0, np.int64)
        scale, zero_point = quantization.scale.reshape(view), zero_point.reshape(view)
    else:
        scale, zero_point = np.float32(output.params.scale), output.params.zero_point

    def finish(rounded: np.ndarray) -> np.ndarray:
        return np.clip(wrap(arithmetic.float_to_int32(rounded) + zero_point), lowest, highest)

    if output.type in PACKED_TYPES:
        return lambda x, out, work: pack_into(
            finish(round_half_away(x / scale)).astype(np.int8), output.type, out
        ), False
    if not blocked:
        return lambda x, out, work: np.copyto(
            out, finish(round_half_away(x / scale)), casting="unsafe"
        ), False
    with np.errstate(divide="ignore"):
        reciprocal = np.float32(1.0 / np.float64(scale))
    wide_scale = np.float64(scale)
    # Rounded quotients within +-2**30 convert to int32 and take the zero point without wrapping, so for
    # them the clamp of q + zero_point is a float32 clamp of q to the bounds less the zero point (all
    # small integers, exact in float32). Other blocks (NaN, inf, huge values) take `finish`.
    low, high = np.float32(lowest - zero_point), np.float32(highest - zero_point)
    shift = np.float32(zero_point)

    def compute(x, out, work):
        flat_x, flat_out = x.reshape(-1), out.reshape(-1)
        blocked = flat_x.size - flat_x.size % 8
        if blocked:
            block = work[:blocked]
            np.multiply(flat_x[:blocked], reciprocal, out=block)
            np.rint(block, out=block)
            if np.minimum.reduce(block) >= -(2.0**30) and np.maximum.reduce(block) <= 2.0**30:
                clip(block, low, high, out=block)
                np.add(block, shift, out=block)
                np.copyto(flat_out[:blocked], block, casting="unsafe")
            else:
                np.copyto(flat_out[:blocked], finish(block), casting="unsafe")
        if blocked < flat_x.size:
            tail = round_half_away(flat_x[blocked:].astype(np.float64) / wide_scale)
            np.copyto(flat_out[blocked:], finish(tail), casting="unsafe")

    return compute, True


def _requantizer(source, output, kernel_type: KernelType) -> tuple[Callable, bool]:
    """compute(q, out, work) for an integer input: TFLite's Requantize, a table for 8/16-bit inputs
    looked up with np.intp indices made in `work` (q's size); and whether it uses `work`."""
    ensure(
        output.type in _REQUANTIZE_TARGETS[source.type],
        f"Input type {type_name(source.type)} with Output type {type_name(output.type)} is not currently supported.",
    )
    if source.type == TensorType.INT16 and output.type == TensorType.INT16:
        ensure_eq(source.params.zero_point, 0, "QUANTIZE int16 input zero point")
        ensure_eq(output.params.zero_point, 0, "QUANTIZE int16 output zero point")
    ensure(output.params.scale > 0, f"QUANTIZE output scale {output.params.scale} must be positive")
    multiplier, shift = quantize_multiplier(float(source.params.scale) / float(output.params.scale))
    lowest, highest = _RANGES[output.type]
    in_zero, out_zero = source.params.zero_point, output.params.zero_point

    def requantize(q: np.ndarray, scaled=multiply_by_quantized_multiplier) -> np.ndarray:
        shifted = wrap(q.astype(np.int64) - in_zero)
        return np.clip(wrap(scaled(shifted, multiplier, shift) + out_zero), lowest, highest)

    if source.type == TensorType.INT32:
        return lambda q, out, work: np.copyto(out, requantize(q), casting="unsafe"), False
    dtype = storage_dtype(source.type)
    unsigned = np.dtype(f"u{dtype.itemsize}")
    # the tables are indexed by the inputs' bits read as unsigned: every_input in that order
    every_input = np.arange(1 << (8 * dtype.itemsize), dtype=unsigned).view(dtype)
    table = requantize(every_input).astype(storage_dtype(output.type))
    blocks = 16 if kernel_type is OPTIMIZED and source.type in _BYTES and output.type in _BYTES else 0
    simd_table = (
        requantize(every_input, multiply_by_quantized_multiplier_simd).astype(table.dtype) if blocks else None
    )

    def compute(q, out, work):
        flat_out = out.reshape(-1)
        np.copyto(work, q.reshape(-1).view(unsigned))
        blocked = flat_out.size - flat_out.size % blocks if blocks else 0
        if blocked:
            np.take(simd_table, work[:blocked], out=flat_out[:blocked], mode="clip")
        np.take(table, work[blocked:], out=flat_out[blocked:], mode="clip")

    return compute, True


def quantize_init(context, buffer, length):
    (work,) = add_scratch_tensors(context, 1)
    return ConversionData(None, work)


def quantize_prepare(kernel_type: KernelType):
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_type(source, _QUANTIZE_TYPES, "input", "QUANTIZE")
        ensure(
            isinstance(output.quantization, AffineQuantization),
            "output->quantization.type != kTfLiteAffineQuantization",
        )
        context.resize_tensor(output, source.shape)
        if source.type != TensorType.FLOAT32:
            compute, works = _requantizer(source, output, kernel_type)
            work_type = INTP_TYPE
        else:
            supported = _PER_CHANNEL_TARGETS if output.quantization.scale.size > 1 else _FLOAT_TARGETS
            if output.type not in supported:
                raise KernelError(
                    f"Input type FLOAT32 with Output type {type_name(output.type)} is not currently supported."
                )
            blocked = (
                kernel_type is OPTIMIZED
                and output.type in _BLOCKED_TARGETS
                and output.quantization.scale.size == 1
            )
            compute, works = _float_quantizer(output, blocked, context.host.arithmetic)
            work_type = TensorType.FLOAT32
        work = node.user_data.scratch  # by init
        if works:
            scratch_tensor(context, work, work_type, (math.prod(source.shape),))
        set_temporaries(context, node, (work,), (work,) if works else ())
        node.user_data = ConversionData(compute, work)

    return prepare


def quantize_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    data.compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data, tensors[data.scratch].data)


register_builtin(
    BuiltinOperator.QUANTIZE,
    (1, 6),
    types=_QUANTIZE_TYPES,
    op_data=ConversionData,
    init=quantize_init,
    prepare_for=quantize_prepare,
    invoke=quantize_invoke,
)


# ---------------------------------------------------------------------------------------------------
# FAKE_QUANT

_F32 = np.float32


@dataclass(frozen=True, slots=True)
class FakeQuantData:
    """The nudged range and step FAKE_QUANT's options give (0-d float32 arrays, ufunc operands)."""

    low: np.ndarray
    high: np.ndarray
    scale: np.ndarray
    inverse: np.ndarray


def _nudged_range(low: float, high: float, num_bits: int) -> FakeQuantData:
    """NudgeQuantizationRange in float32: the zero point rounded (half away) into [0, 2**num_bits - 1]
    and the range moved so that it is exactly a level."""
    levels = _F32((1 << num_bits) - 1)
    with np.errstate(all="ignore"):
        scale = (_F32(high) - _F32(low)) / levels
        zero_from_min = _F32(0) - _F32(low) / scale
    if zero_from_min < 0:
        zero_point = 0
    elif zero_from_min > levels:
        zero_point = int(levels)
    else:
        zero_point = int(round_half_away(float(zero_from_min)))
    nudged_low = _F32(-zero_point) * scale
    nudged_high = (levels - _F32(zero_point)) * scale
    return FakeQuantData(*(np.array(v, _F32) for v in (nudged_low, nudged_high, scale, _F32(1) / scale)))


def fake_quant_prepare(context, node):
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    options = node.builtin_data
    if options.narrow_range:
        raise KernelError(
            "narrow_range FakeQuant is not currently supported at runtime. "
            "narrow_range is only meant to be applied to weights, not activations"
        )
    ensure_type(source, (TensorType.FLOAT32,), "input", "FAKE_QUANT")
    ensure(2 <= options.num_bits <= 16, f"FAKE_QUANT num_bits {options.num_bits} is not in [2, 16]")
    ensure(options.min < options.max, f"FAKE_QUANT min {options.min} is not below max {options.max}")
    output.type = source.type
    context.resize_tensor(output, source.shape)
    node.user_data = _nudged_range(options.min, options.max, options.num_bits)


def fake_quant_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    np.fmax(tensors[node.inputs[0]].data, data.low, out=out)  # (fmax: NaN gives the minimum)
    np.minimum(out, data.high, out=out)
    np.subtract(out, data.low, out=out)
    np.multiply(out, data.inverse, out=out)
    np.copyto(out, round_non_negative(out))  # (the shifted values are >= 0)
    np.multiply(out, data.scale, out=out)
    np.add(out, data.low, out=out)


register_builtin(
    BuiltinOperator.FAKE_QUANT,
    (1, 2),
    types=(TensorType.FLOAT32,),
    op_data=FakeQuantData,
    prepare=fake_quant_prepare,
    invoke=fake_quant_invoke,
)

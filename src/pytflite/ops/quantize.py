"""DEQUANTIZE: quantized integers and float16 to float32, plus the sub-byte (int4/uint4/int2) packing helpers.

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

When the input is a constant (e.g. the float16 weights of an fp16 model) the output is computed once in
prepare into a PERSISTENT_RO tensor and invoke does nothing.

Sub-byte tensors hold their elements packed in `Tensor.data`, low bits first: two int4/uint4 or four int2
per byte, the last byte padded with zero bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.quantization import AffineQuantization
from ..core.types import BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type
from .common import check_arity, input_tensor, is_constant, output_tensor
from .registry import register_builtin

# bits per element and signedness of the packed sub-byte types
_PACKED = {TensorType.INT4: (4, True), TensorType.UINT4: (4, False), TensorType.INT2: (2, True)}
PACKED_TYPES = tuple(_PACKED)


def unpack_packed(data: np.ndarray, count: int, tensor_type: TensorType) -> np.ndarray:
    """The `count` elements of a packed int4/uint4/int2 buffer, one per int8 (TFLite's UnpackPackedIntToInt8)."""
    bits, signed = _PACKED[tensor_type]
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    raw = np.asarray(data).reshape(-1).view(np.uint8)
    values = ((raw[:, None] >> shifts) & np.uint8((1 << bits) - 1)).reshape(-1)[:count].view(np.int8)
    if signed:
        half = np.int8(1 << (bits - 1))
        values = (values ^ half) - half  # sign-extend the low `bits` bits
    return values


def pack_into(values: np.ndarray, tensor_type: TensorType, out: np.ndarray) -> None:
    """Pack int8 `values` (already in the type's range) into the packed buffer `out` (PackInt8IntoDenseInt)."""
    bits, _ = _PACKED[tensor_type]
    per_byte = 8 // bits
    target = out.reshape(-1).view(np.uint8)
    padded = np.zeros(target.size * per_byte, np.uint8)
    padded[: values.size] = values.reshape(-1).view(np.uint8) & np.uint8((1 << bits) - 1)
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    np.bitwise_or.reduce(padded.reshape(-1, per_byte) << shifts, axis=1, out=target)


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


@dataclass(frozen=True)
class DequantizeData:
    constant: bool  # the output was computed in prepare
    compute: Compute


def _affine(scale: np.ndarray, zero_point: np.ndarray, largest_input: int) -> Compute:
    """compute(q, out): out = scale * (q - zero_point) rounded once to float32 (TFLite's reference)."""
    scale = scale.astype(np.float32)
    if int(np.max(np.abs(zero_point), initial=0)) + largest_input < _EXACT_IN_FLOAT32:
        zero_point = zero_point.astype(np.float32)

        def compute(q, out):
            np.subtract(q, zero_point, out=out, dtype=np.float32)  # exact: both are small integers
            np.multiply(out, scale, out=out)

    else:
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

    def compute(q, out):
        flat_q, flat_out = q.reshape(-1), out.reshape(-1)
        blocked = flat_q.size - flat_q.size % 8
        if blocked:
            np.multiply(flat_q[:blocked], scale32, out=flat_out[:blocked], dtype=np.float32)
            np.add(flat_out[:blocked], offset, out=flat_out[:blocked])
        if blocked < flat_q.size:
            exact(flat_q[blocked:], flat_out[blocked:])

    return compute


def _dequantize_compute(source, optimized: bool) -> Compute:
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
        if optimized:
            affine = _affine_blocked(scale, zero_point, affine)
    if source.type in _PACKED:
        tensor_type, shape, count = source.type, source.shape, math.prod(source.shape)
        return lambda x, out: affine(unpack_packed(x, count, tensor_type).reshape(shape), out)
    return affine


def dequantize_prepare(optimized: bool):
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_type(source, _DEQUANTIZE_TYPES, "input", "DEQUANTIZE")
        if output.type != TensorType.FLOAT32:
            raise KernelError(f"DEQUANTIZE output type: {type_name(output.type)} != FLOAT32")
        compute = _dequantize_compute(source, optimized)
        constant = is_constant(source)
        if constant:
            context.set_tensor_to_persistent_ro(output)  # memory of its own, outside the arena
        context.resize_tensor(output, source.shape)
        node.user_data = DequantizeData(constant, compute)
        if constant:
            with np.errstate(all="ignore"):
                compute(source.data, output.data)

    return prepare


def dequantize_invoke(context, node):
    data = node.user_data
    if data.constant:
        return
    tensors = context.tensors
    with np.errstate(all="ignore"):  # a huge scale overflows to inf, as in TFLite
        data.compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


register_builtin(
    BuiltinOperator.DEQUANTIZE,
    (1, 9),
    types=_DEQUANTIZE_TYPES,
    prepare=dequantize_prepare(optimized=True),
    invoke=dequantize_invoke,
)
register_builtin(
    BuiltinOperator.DEQUANTIZE,
    (1, 9),
    types=_DEQUANTIZE_TYPES,
    reference=True,
    prepare=dequantize_prepare(optimized=False),
    invoke=dequantize_invoke,
)

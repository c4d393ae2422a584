"""NumericVerify: the quantization debugger's check of a quantized tensor against its float reference, a
custom op LiteRT's BuiltinOpResolver registers by default (TensorFlow's QuantizationDebugger writes one
after each quantized op of the model it debugs).

Inputs: the quantized tensor (uint8, int8, int16 or float16) and the float32 reference (LiteRT reads as
many of its values as the input has; one with fewer is refused); the output, float32 of the input's
shape, is the dequantized input minus the reference. Options (flexbuffer map):
tolerance (float) and log_if_failed (bool). The input is dequantized as DEQUANTIZE does: the optimized
kernel (BUILTIN), or the reference one (BUILTIN_REF). With log_if_failed and a tolerance of at least 0.1,
the first element whose |difference| exceeds tolerance * scale fails the invoke with LiteRT's "Mismatch"
report (the output written up to it); otherwise the kernel reports the differences' std, mean and
largest magnitude, as LiteRT logs them (its error reporter keeps every report). As in LiteRT, a constant
input is dequantized at the first invoke only: later invokes keep that output (LiteRT keeps it in
persistent memory), whatever the reference then holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import AllocationType, TensorType
from ..errors import KernelError, ensure_type
from .common import check_arity, input_tensor, output_tensor
from .custom_op_options import as_bool, read_map
from .kernel_type import KernelType
from .quantize import dequantize_compute
from .registry import register_custom

_INPUT_TYPES = (TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.FLOAT16)


@dataclass(frozen=True)
class NumericVerifyData:
    """The options, and (after prepare) the dequantization and whether the constant input is done."""

    tolerance: float
    log_if_failed: bool
    dequantize: Callable | None = None
    done: list | None = None  # [True] once a constant input has been dequantized (LiteRT's flag)


def numeric_verify_init(context, buffer, length):
    options = read_map("NumericVerify", buffer)
    tolerance = options.get("tolerance", 0.0)
    tolerance = float(np.float32(tolerance)) if isinstance(tolerance, (int, float)) else 0.0  # AsFloat
    return NumericVerifyData(tolerance, as_bool(options, "log_if_failed"))


def _prepare(kernel_type: KernelType) -> Callable:
    def prepare(context, node):
        check_arity(node, 2)
        source, reference = input_tensor(context, node, 0), input_tensor(context, node, 1)
        output = output_tensor(context, node)
        ensure_type(source, _INPUT_TYPES, "input", "NumericVerify")
        ensure_type(reference, (TensorType.FLOAT32,), "reference", "NumericVerify")
        if math.prod(reference.shape) < math.prod(source.shape):  # (LiteRT reads as many as the input has)
            raise KernelError(
                f"NumericVerify reference {list(reference.shape)} has fewer elements than input {list(source.shape)}"
            )
        output.type = TensorType.FLOAT32
        output.allocation_type = AllocationType.ARENA_RW_PERSISTENT  # kept across invokes, as in LiteRT
        context.resize_tensor(output, source.shape)
        data = node.user_data
        node.user_data = NumericVerifyData(
            data.tolerance, data.log_if_failed, dequantize_compute(source, kernel_type), [False]
        )

    return prepare


def numeric_verify_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    source, reference = tensors[node.inputs[0]], tensors[node.inputs[1]]
    if source.is_constant and data.done[0]:
        return
    out = tensors[node.outputs[0]].data
    dequantized = np.empty(source.shape, np.float32)
    with np.errstate(all="ignore"):
        data.dequantize(source.data, dequantized)
    expected = reference.data.reshape(-1)[: dequantized.size].reshape(dequantized.shape)
    differences = np.subtract(dequantized, expected, dtype=np.float32)
    if source.is_constant:
        data.done[0] = True
    flat, scale, zero_point = differences.reshape(-1), source.params.scale, source.params.zero_point
    if data.log_if_failed and data.tolerance >= 0.1:
        limit = np.float32(data.tolerance) * np.float32(scale)
        failed = np.flatnonzero(np.abs(flat) > limit)
        if failed.size:
            first = int(failed[0])
            out.reshape(-1)[: first + 1] = flat[: first + 1]
            value = int(source.data.reshape(-1)[first]) if source.type != TensorType.FLOAT16 else 0
            wanted, got = float(expected.reshape(-1)[first]), float(dequantized.reshape(-1)[first])
            raise KernelError(
                f"Mismatch: {wanted:f} is quantized to {value} with ({scale:f}, {zero_point}). "
                f"abs({wanted:f} - {got:f}) = {abs(float(flat[first])):f} > {float(limit):f} (tolerance) "
                f"range percentage {data.tolerance:f}.\n"
            )
        np.copyto(out, differences)
        return
    np.copyto(out, differences)
    wide = flat.astype(np.float64)
    mean = (
        float(np.add.accumulate(wide)[-1]) / wide.size if wide.size else math.nan
    )  # std::accumulate's order
    centred = wide - mean
    std = math.sqrt(float(np.add.accumulate(centred * centred)[-1]) / wide.size) if wide.size else math.nan
    largest = float(np.fmax.reduce(np.abs(wide), initial=0.0))  # (std::max keeps 0 against a NaN)
    context.report_error(
        f"std: {std:f}, mean: {mean:f}, max_diff: {largest:f} (scale: {scale:f}, zero_point: {zero_point}).\n"
    )


register_custom(
    "NumericVerify",
    (1, 1),
    types=_INPUT_TYPES,
    op_data=NumericVerifyData,
    init=numeric_verify_init,
    prepare_for=_prepare,
    invoke=numeric_verify_invoke,
)

"""LOG_SOFTMAX: float32; 8-bit through LiteRT's float32 expf-table kernel (BUILTIN_REF: TFLite's
gemmlowp kernel)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure, ensure_eq
from ...fidelity.arithmetic import HostArithmetic
from ..common import clip
from ..kernel_type import REFERENCE, KernelType
from ..quant.fixed_point import (
    INT32_MIN,
    multiply_by_quantized_multiplier,
    quantize_multiplier,
    rounding_divide_by_pot,
    wrap,
)
from ..quant.gemmlowp import log_x_for_x_greater_than_or_equal_to_1
from ..quant.lut import logf
from ..registry import register_builtin
from .common import BYTES, DTYPES, FLOAT, U8, ActivationData, as_rows, check_unary, nonempty_invoke
from .quantized import per_tensor_quantization
from .softmax_common import (
    distances_below_max,
    fixed_point_exps,
    float_exp_table,
    sequential_row_sums,
    softmax_input_scaling,
)


def _log_softmax(x, out):
    if x.ndim == 0:  # one logit: log(1) (TFLite reads past the shape here)
        np.subtract(x, x, out=out)
        return
    # (x - max) - log(sum(exp(x - max)))
    np.subtract(x, np.maximum.reduce(x, axis=-1, keepdims=True), out=out)
    log_sum = np.add.reduce(np.exp(out), axis=-1, keepdims=True)
    out -= np.log(log_sum, out=log_sum)


def _log_softmax_prepare(kernel_type: KernelType) -> Callable:
    def prepare(context, node):
        source, output = check_unary(context, node, "LOG_SOFTMAX", FLOAT + BYTES)
        if source.type == TensorType.FLOAT32:
            node.user_data = ActivationData(_log_softmax)
        else:
            node.user_data = ActivationData(
                _log_softmax_quantized(source, output, kernel_type, context.host.arithmetic)
            )

    return prepare


def _log_softmax_float_table(source, output, arithmetic: HostArithmetic) -> Callable:
    in_scale, _ = per_tensor_quantization(source, "input", "LOG_SOFTMAX")
    out_scale, out_zero = per_tensor_quantization(output, "output", "LOG_SOFTMAX")
    table = float_exp_table(in_scale, np.float32(1))
    ratio = in_scale / out_scale
    info = np.iinfo(DTYPES[source.type])

    def compute(x, out):
        rows = as_rows(x)
        maxima = np.maximum.reduce(rows, axis=-1).astype(np.float32)
        exps = table[distances_below_max(x)]
        log_sums = _logf_rows(sequential_row_sums(exps))
        offsets = (in_scale * maxima + log_sums) / out_scale
        log_probabilities = ratio * rows.astype(np.float32)
        log_probabilities -= offsets[:, None]
        rounded = np.rint(log_probabilities, out=log_probabilities) + np.float32(out_zero)
        quantized = arithmetic.float_to_int32(rounded)
        np.copyto(out, clip(quantized, info.min, info.max).reshape(out.shape), casting="unsafe")

    return compute


# Up to this many rows a LOG_SOFTMAX calls the C library's logf for each (exact); beyond, float64 log
# rounded to float32, which differs from glibc's logf in the last bit for ~0.4% of arguments (moving a
# result only when it lies within ~1e-5 of a rounding boundary).
_LOGF_ROWS = 64


def _logf_rows(values: np.ndarray) -> np.ndarray:
    if values.size <= _LOGF_ROWS:
        return logf(values)
    return np.log(values.astype(np.float64)).astype(np.float32)


def _log_softmax_reference(source, output) -> Callable:
    in_scale, _ = per_tensor_quantization(source, "input", "LOG_SOFTMAX")
    multiplier, left_shift, diff_min = softmax_input_scaling(in_scale, 1.0, "LOG_SOFTMAX")
    table = fixed_point_exps(multiplier, left_shift, diff_min)
    reverse_multiplier, reverse_shift = quantize_multiplier((1 << (31 - left_shift)) / float(multiplier))
    info = np.iinfo(DTYPES[source.type])

    def compute(x, out):
        distances = distances_below_max(x)
        sums = wrap(np.add.reduce(table.summands[distances], axis=-1), 32)
        log_sums = log_x_for_x_greater_than_or_equal_to_1(sums, 12, 5)[:, None]
        limit = multiply_by_quantized_multiplier(
            wrap(log_sums + INT32_MIN, 32), reverse_multiplier, reverse_shift
        )
        # elements with -distance > max(diff_min - 1, limit) count; all of them have a rescaled difference
        kept = -distances > np.maximum(diff_min - 1, limit)
        result = rounding_divide_by_pot(wrap(table.rescaled[distances] - log_sums, 32), 22) + info.max
        result = np.where(kept, clip(result, info.min, info.max), info.min)
        np.copyto(out, result.reshape(out.shape), casting="unsafe")

    return compute


def _log_softmax_quantized(source, output, kernel_type: KernelType, arithmetic: HostArithmetic) -> Callable:
    out_scale, out_zero = per_tensor_quantization(output, "output", "LOG_SOFTMAX")
    ensure(float(out_scale) == 16.0 / 256, f"LOG_SOFTMAX output scale {out_scale} != 16/256")
    ensure_eq(out_zero, 255 if source.type == U8 else 127, "LOG_SOFTMAX output zero point")
    if kernel_type is REFERENCE:
        return _log_softmax_reference(source, output)
    return _log_softmax_float_table(source, output, arithmetic)


register_builtin(
    BuiltinOperator.LOG_SOFTMAX,
    (1, 2),
    types=FLOAT + BYTES,
    op_data=ActivationData,
    prepare_for=_log_softmax_prepare,
    invoke=nonempty_invoke,
)

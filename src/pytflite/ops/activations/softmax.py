"""SOFTMAX: float32; 8-bit through LiteRT's float32 expf-table kernel (BUILTIN_REF: TFLite's gemmlowp
kernel); int16 through TFLite's 513-entry exp and 1/(1+x) tables."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ...core.step_program import Written
from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import ensure, ensure_eq, ensure_type
from ...fidelity.arithmetic import HostArithmetic
from ..common import Computation, calls_on, check_arity, clip, input_tensor, output_tensor
from ..jit import compiled
from ..kernel_type import REFERENCE, KernelType
from ..quant.fixed_point import (
    multiply_by_quantized_multiplier,
    round_non_negative,
    rounding_divide_by_pot,
    wrap,
)
from ..quant.gemmlowp import count_leading_zeros32, get_reciprocal
from ..quant.lut import c_double_function, lookup_16bit, populate_16bit
from ..registry import register_builtin
from .common import ALL, DTYPES, I8, I16, U8, ActivationData, as_rows, f32, nonempty_invoke
from .quantized import Q31, checked_multiplier, ensure_zero_points, per_tensor_quantization
from .softmax_common import (
    distances_below_max,
    fixed_point_exps,
    float_exp_table,
    sequential_row_sums,
    softmax_input_scaling,
)


def _softmax_prepare(kernel_type: KernelType) -> Callable:
    def prepare(context, node):
        check_arity(node, 1)
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure(len(source.shape) >= 1, "SOFTMAX input must have at least one dimension")
        ensure_type(source, tuple(_SOFTMAX_OUTPUTS), "input", "SOFTMAX")
        allowed = _SOFTMAX_OUTPUTS[source.type]
        ensure(
            output.type in allowed,
            f"SOFTMAX of a {type_name(source.type)} input supports "
            f"{' and '.join(type_name(t) for t in allowed)} outputs, got {type_name(output.type)}",
        )
        context.resize_tensor(output, source.shape)
        beta = node.builtin_data.beta
        if source.type == TensorType.FLOAT32:
            node.user_data = ActivationData(
                _float_softmax(tuple(source.shape), beta, kernel_type, context.recommended_num_threads)
            )
        else:
            node.user_data = ActivationData(
                _softmax_quantized(source, output, beta, kernel_type, context.host.arithmetic)
            )

    return prepare


def _float_beta(beta: float):
    """The float kernel's beta: None for 1 (no scaling), else float32."""
    return None if np.float32(beta) == 1 else f32(beta)


def _float_softmax(shape: tuple[int, ...], beta: float, kernel_type: KernelType, threads: int) -> Callable:
    """compute(x, out) for a float32 input: compiled (eigen_compiled.softmax, bit-exact with LiteRT's x86 build)
    where compiled kernels run, else NumPy's calls."""
    kernel = compiled("eigen_compiled", "softmax")
    if kernel is None or math.prod(shape) == 0 or not math.isfinite(beta):
        beta32 = _float_beta(beta)
        return lambda x, out: _softmax(x, out, beta32)
    return _CompiledSoftmax(kernel, shape, beta, kernel_type is REFERENCE, threads)


class _CompiledSoftmax(Computation):
    """Float SOFTMAX through eigen_compiled.softmax on [rows, last dimension] views; NumPy's calls for
    an input the kernel declines (NaN or infinite values). Called, it makes the views each time."""

    def __init__(self, kernel, shape: tuple[int, ...], beta: float, reference: bool, threads: int):
        super().__init__(self._written, self._whole)
        self.kernel = kernel
        self.rows = (math.prod(shape[:-1]), shape[-1])
        self.beta = np.float32(beta)
        self.reference = reference
        self.scalar_positions = _scalar_exp_positions(*self.rows, threads)
        self.fallback_beta = _float_beta(beta)

    def _whole(self, x, out):
        self._run(x.reshape(self.rows), out.reshape(self.rows), x, out)

    def _run(self, x_rows, out_rows, x, out):
        if not self.kernel(x_rows, self.beta, self.reference, self.scalar_positions, out_rows):
            _softmax(x, out, self.fallback_beta)

    def _written(self, x, out) -> Written:
        """The calls on these arrays, their views made once: one written statement, the kernel's call
        or, where it declines, the NumPy calls'."""
        x_rows, out_rows = x.reshape(self.rows), out.reshape(self.rows)
        text = (
            "{kernel}({x_rows}, {beta}, {reference}, {positions}, {out_rows})"
            " or {fallback}({x}, {out}, {fallback_beta})"
        )
        return Written(
            text,
            functools.partial(self._run, x_rows, out_rows, x, out),
            kernel=self.kernel,
            beta=self.beta,
            reference=self.reference,
            positions=self.scalar_positions,
            fallback=_softmax,
            x_rows=x_rows,
            out_rows=out_rows,
            x=x,
            out=out,
            fallback_beta=self.fallback_beta,
        )


# LiteRT's float kernel splits the rows among threads, this many rows at least per thread
_ROWS_PER_THREAD = 8


def _scalar_exp_positions(rows: int, size: int, threads: int) -> np.ndarray:
    """The flat indices of the elements LiteRT's float kernel exponentiates with std::exp: each
    thread's block of rows is one Eigen assignment loop, whose elements before the first 16-byte
    aligned one and after its last whole packet of 4 take the scalar path (eigen_compiled)."""
    blocks = min(max(rows // _ROWS_PER_THREAD, 1), max(threads, 1))  # (-1: LiteRT's default, 1)
    positions, first_row = [], 0
    for i in range(blocks):
        end_row = first_row + (rows - first_row) // (blocks - i)
        first, count = first_row * size, (end_row - first_row) * size
        head = min(-first % 4, count)
        tail = head + (count - head) // 4 * 4
        positions += [*range(first, first + head), *range(first + tail, first + count)]
        first_row = end_row
    return np.array(positions, np.int64)


def _softmax(x, out, beta):
    rows = (*out.shape[:-1], 1)
    for call in _softmax_calls(x, out, beta, np.empty(rows, out.dtype), np.empty(rows, out.dtype)):
        call()


def _softmax_calls(x, out, beta, peak, total) -> tuple:
    """exp((x - max) * beta), then scaled by the reciprocal of the row sum, as TFLite's kernel does: the
    NumPy calls, with `peak` and `total` ([..., 1] arrays) for the rows' maximum and sum."""
    scale = () if beta is None else (functools.partial(np.multiply, out, beta, out),)
    return (
        functools.partial(np.maximum.reduce, x, -1, None, peak, True),
        functools.partial(np.subtract, x, peak, out),
        *scale,
        functools.partial(np.exp, out, out),
        functools.partial(np.add.reduce, out, -1, None, total, True),
        functools.partial(np.reciprocal, total, total),
        functools.partial(np.multiply, out, total, out),
    )


def _softmax_float_table(source, output, beta: np.float32, arithmetic: HostArithmetic) -> Callable:
    in_scale, _ = per_tensor_quantization(source, "input", "SOFTMAX")
    out_scale, out_zero = per_tensor_quantization(output, "output", "SOFTMAX")
    table = float_exp_table(in_scale, beta)
    if output.type == I8:
        return _softmax_int8_table(tuple(source.shape), table, out_scale)
    out_info = np.iinfo(DTYPES[output.type])
    # x86 rounds uint8 results as int(p + 0.5f), and that specialization leaves out the zero point
    truncating = output.type == U8
    offset = 0 if truncating else out_zero

    def convert(values):  # probabilities below 2**31: a plain cast
        return values.astype(np.int64)

    # probabilities reach 1 / out_scale: past int32, the conversion needs C's overflow behaviour
    if 1 / float(out_scale) >= 2**31 - 1:
        convert = arithmetic.float_to_int32
    half = np.float32(0.5)

    def compute(x, out):
        exps = table[distances_below_max(x)]
        inverse = np.float32(1) / (sequential_row_sums(exps) * out_scale)
        exps *= inverse[:, None]
        quantized = convert(np.trunc(exps + half) if truncating else round_non_negative(exps))
        quantized += offset
        clip(quantized, out_info.min, out_info.max, out=quantized)
        np.copyto(out, quantized.reshape(out.shape), casting="unsafe")

    return compute


def _softmax_int8_table(shape: tuple[int, ...], table: np.ndarray, out_scale: np.float32) -> Callable:
    """The float table kernel for int8 to int8 (output zero point -128, scale about 1/256) in arrays made
    once: the distance to the row maximum is the int8 difference read as uint8 (it wraps modulo 256);
    roundf of the non-negative float32 probability p, less 128, is floor(p + 128.5) - 256 in float64
    (exact where it matters: p + 128.5 is within float64 rounding of an integer only when it is one),
    and clamping floor(p + 128.5) to 383 (an output of 127) and casting it to the output's uint8 view
    takes the 256 away."""
    rows = (math.prod(shape[:-1]), shape[-1]) if shape else (1, 1)  # as as_rows views x
    peak = np.empty((rows[0], 1), np.int8)
    distances, indices = np.empty(rows, np.int8), np.empty(rows, np.intp)  # take converts other types
    exps, sums = np.empty(rows, np.float32), np.empty(rows, np.float32)
    inverse = np.empty((rows[0], 1), np.float32)
    lifted, narrow = np.empty(rows, np.float64), np.empty(rows, np.int16)
    one, scale = np.array(1, np.float32), np.array(out_scale, np.float32)
    half_lift, highest = np.array(128.5, np.float64), np.array(383, np.int16)

    def compute(x, out):
        x = x.reshape(rows)
        np.maximum.reduce(x, axis=-1, keepdims=True, out=peak)
        np.subtract(peak, x, out=distances)
        np.copyto(indices, distances.view(np.uint8))
        table.take(indices, out=exps, mode="clip")
        np.add.accumulate(exps, axis=-1, out=sums)  # left to right, as TFLite's loop
        np.multiply(sums[:, -1:], scale, out=inverse)
        np.divide(one, inverse, out=inverse)
        np.multiply(exps, inverse, out=exps)
        np.add(exps, half_lift, out=lifted)
        np.copyto(narrow, lifted, casting="unsafe")  # non-negative: the cast is the floor
        np.minimum(narrow, highest, out=narrow)
        np.copyto(out.reshape(rows).view(np.uint8), narrow, casting="unsafe")

    return compute


def _softmax_node_calls(context, node):
    """Registration.calls: the calls on the input and output arrays (NumPy's float ones with their
    buffers made once); none for an empty output."""
    tensors = context.tensors
    x, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if not out.size:
        return ()
    compute = node.user_data.compute
    if tensors[node.inputs[0]].type == TensorType.FLOAT32 and not isinstance(compute, Computation):
        rows = (*out.shape[:-1], 1)
        beta = _float_beta(node.builtin_data.beta)
        return _softmax_calls(x, out, beta, np.empty(rows, out.dtype), np.empty(rows, out.dtype))
    return calls_on(compute, x, out)


def _softmax_reference(source, output, beta: float) -> Callable:
    in_scale, _ = per_tensor_quantization(source, "input", "SOFTMAX")
    table = fixed_point_exps(*softmax_input_scaling(in_scale, beta, "SOFTMAX"))
    out_info = np.iinfo(DTYPES[output.type])
    out_bits = 8 * DTYPES[output.type].itemsize

    def compute(x, out):
        distances = distances_below_max(x)
        exps = table.exps[distances]
        reciprocal, bits_over_unit = get_reciprocal(
            wrap(np.add.reduce(table.summands[distances], axis=-1), 32), 12
        )
        exponent = bits_over_unit + 31 - out_bits
        scaled = rounding_divide_by_pot(Q31.mul(reciprocal[:, None], exps), exponent[:, None])
        result = clip(scaled + out_info.min, out_info.min, out_info.max)
        np.copyto(
            out, np.where(table.valid[distances], result, out_info.min).reshape(out.shape), casting="unsafe"
        )

    return compute


def _softmax_int16(source, output, beta: float) -> Callable:
    in_scale, in_zero = per_tensor_quantization(source, "input", "SOFTMAX")
    _, out_zero = per_tensor_quantization(output, "output", "SOFTMAX")
    ensure_zero_points("SOFTMAX", ("input", in_zero), ("output", out_zero))
    exp_lut = populate_16bit(c_double_function("exp"), 10.0 / 65535, 32767, 2.0 / 65535, 0, np.float64)
    reciprocal_lut = populate_16bit(
        lambda v: 1.0 / (1.0 + v), 1.0 / 65535, -32768, 2.0 / 65535, 0, np.float64
    )
    # scale * beta in float32, as C++ multiplies two floats, then divided in double (a float32 scalar
    # divided by a Python float would stay float32 under NumPy 2's promotion rules)
    rescale = float(np.float32(in_scale) * np.float32(beta)) / (10.0 / 65535.0)
    multiplier, shift = checked_multiplier(rescale, "SOFTMAX")
    # exp(x - max) of every difference 0, -1, ..., -65535 (Q0.15 via the table)
    differences = -np.arange(65536, dtype=np.int64)
    scaled = clip(multiply_by_quantized_multiplier(differences, multiplier, shift) + 32767, -32768, 32767)
    exps_by_distance = lookup_16bit(scaled, exp_lut)

    def compute(x, out):
        rows = as_rows(x).astype(np.int64)
        exps = exps_by_distance[np.maximum.reduce(rows, axis=-1, keepdims=True) - rows]
        total = wrap(np.add.reduce(exps, axis=-1), 32)
        headroom_plus_one = count_leading_zeros32(total & 0xFFFFFFFF)
        shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
        reciprocal = lookup_16bit(clip(shifted - (1 << 15) - (1 << 16), -32768, 32767), reciprocal_lut)
        right_shift = (31 - headroom_plus_one)[:, None]
        result = (exps * reciprocal[:, None] + (np.int64(1) << (right_shift - 1))) >> right_shift
        np.copyto(out, clip(result, 0, 32767).reshape(out.shape), casting="unsafe")

    return compute


_SOFTMAX_OUTPUTS = {
    TensorType.FLOAT32: (TensorType.FLOAT32,),
    U8: (U8, I16),
    I8: (I8, I16),
    I16: (I16,),
}


def _softmax_quantized(
    source, output, beta: float, kernel_type: KernelType, arithmetic: HostArithmetic
) -> Callable:
    out_scale, out_zero = per_tensor_quantization(output, "output", "SOFTMAX")
    if source.type == I8 and output.type == I8:
        ensure_eq(out_zero, -128, "SOFTMAX int8 output zero point")
        ensure(
            abs(out_scale - np.float32(1 / 256)) <= np.float32(0.001 / 256),
            "SOFTMAX int8 output scale != 1/256",
        )
    if output.type == I16 and source.type == I16:
        ensure_eq(out_zero, 0, "SOFTMAX int16 output zero point")
        ensure(
            abs(out_scale - np.float32(1 / 32768)) <= np.float32(0.001 / 32768),
            "SOFTMAX int16 output scale != 1/32768",
        )
    if source.type == I16:
        return _softmax_int16(source, output, beta)
    if kernel_type is REFERENCE:
        return _softmax_reference(source, output, beta)
    return _softmax_float_table(source, output, np.float32(beta), arithmetic)


register_builtin(
    BuiltinOperator.SOFTMAX,
    (1, 4),
    types=ALL,
    op_data=ActivationData,
    prepare_for=_softmax_prepare,
    invoke=nonempty_invoke,
    calls=_softmax_node_calls,
)

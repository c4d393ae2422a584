"""BATCH_MATMUL, float32, quantized (TFLite's reference kernel) and hybrid."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from ...core.quantization import AffineQuantization
from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ...fidelity.arithmetic import HostArithmetic
from ..common import (
    check_arity,
    input_tensor,
    output_tensor,
)
from ..quant.fixed_point import quantize_multiplier, wrap
from ..quant.hybrid_inputs import (
    quantize_rows_asymmetric,
    quantize_rows_symmetric,
)
from ..quant.integer_gemm import (
    double_rounding_requantizer,
    exact_float_type,
    int64_requantizer,
)
from ..registry import register_builtin
from .common import INT32_LIMIT, RANGES, Kernel, T, largest, per_channel_scales, requantize_into


@dataclass(frozen=True)
class BatchMatMulData:
    kernel: Kernel | None  # None: float32, one np.matmul


def batch_matmul_prepare(context, node):
    check_arity(node, 2)
    options = node.builtin_data
    lhs, rhs, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(lhs, _MATMUL_TYPES, "lhs", "BATCH_MATMUL")
    ensure_type(rhs, _MATMUL_TYPES, "rhs", "BATCH_MATMUL")
    hybrid = lhs.type == T.FLOAT32 and rhs.type == T.INT8
    ensure(
        hybrid or lhs.type == rhs.type or (lhs.type == T.INT16 and rhs.type == T.INT8),
        f"BATCH_MATMUL of {type_name(lhs.type)} lhs and {type_name(rhs.type)} rhs is not supported",
    )
    if lhs.type == T.FLOAT32:
        ensure_type(output, T.FLOAT32, "output", "BATCH_MATMUL")
    elif lhs.type == T.INT8:
        ensure_type(output, (T.INT8, T.INT32), "output", "BATCH_MATMUL")
    else:
        ensure_types_eq(lhs, output, "BATCH_MATMUL input/output types")
    for tensor, role in ((lhs, "lhs"), (rhs, "rhs")):
        ensure(
            2 <= len(tensor.shape) <= 5,
            f"BATCH_MATMUL {role} must have rank 2 to 5, got {len(tensor.shape)}",
        )
    rank = max(len(lhs.shape), len(rhs.shape))
    lhs_shape = (1,) * (rank - len(lhs.shape)) + tuple(lhs.shape)
    rhs_shape = (1,) * (rank - len(rhs.shape)) + tuple(rhs.shape)
    batch = []
    for a, b in zip(lhs_shape[:-2], rhs_shape[:-2]):
        if a != b and a != 1 and b != 1:
            raise KernelError(
                f"BATCH_MATMUL batch dimensions do not broadcast: {list(lhs.shape)} and {list(rhs.shape)}"
            )
        batch.append(b if a == 1 else a)
    rows = lhs_shape[-1] if options.adj_x else lhs_shape[-2]
    lhs_depth = lhs_shape[-2] if options.adj_x else lhs_shape[-1]
    rhs_depth = rhs_shape[-1] if options.adj_y else rhs_shape[-2]
    cols = rhs_shape[-2] if options.adj_y else rhs_shape[-1]
    ensure_eq(lhs_depth, rhs_depth, "BATCH_MATMUL accumulation dimension of lhs vs rhs")
    output_shape = (*batch, rows, cols)
    context.resize_tensor(output, output_shape)
    kernel = None
    if hybrid:
        kernel = _hybrid_matmul_kernel(lhs, rhs, options, output_shape, context.host.arithmetic)
    elif lhs.type != T.FLOAT32:
        kernel = _quantized_matmul_kernel(lhs, rhs, output, options)
    node.user_data = BatchMatMulData(kernel)


def _matmul_operands(lhs, rhs, options):
    if options.adj_x:
        lhs = lhs.swapaxes(-1, -2)
    if options.adj_y:
        rhs = rhs.swapaxes(-1, -2)
    return lhs, rhs


def batch_matmul_invoke(context, node):
    tensors = context.tensors
    options = node.builtin_data
    kernel = node.user_data.kernel
    out = tensors[node.outputs[0]].data
    if kernel is not None:
        kernel(tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, out)
        return
    np.matmul(*_matmul_operands(tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, options), out)


def batch_matmul_calls(context, node):
    """The float product's call on views made once; other kernels run their invoke."""
    if node.user_data.kernel is not None:
        return None
    tensors = context.tensors
    lhs, rhs = _matmul_operands(tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, node.builtin_data)
    return (partial(np.matmul, lhs, rhs, tensors[node.outputs[0]].data),)


def _quantized_matmul_kernel(lhs, rhs, output, options) -> Kernel:
    what = "BATCH_MATMUL"
    depth = lhs.shape[-2] if options.adj_x else lhs.shape[-1]
    if output.type == T.INT32:
        # raw products of the stored int8 values: TFLite ignores zero points here
        float_type = exact_float_type(depth * 128 * 128)
        overflows = depth * 128 * 128 >= INT32_LIMIT

        def raw_kernel(a, b, out):
            a, b = _matmul_operands(a.astype(float_type), b.astype(float_type), options)
            acc = np.matmul(a, b).astype(np.int64)
            np.copyto(out, wrap(acc) if overflows else acc, casting="unsafe")

        return raw_kernel
    for tensor, role in ((lhs, "lhs"), (rhs, "rhs")):
        ensure(
            isinstance(tensor.quantization, AffineQuantization), f"{what} {role} has no affine quantization"
        )
    product = np.float64(np.float32(lhs.params.scale) * np.float32(rhs.params.scale))
    ensure(product >= 0, "input_product_scale >= 0 was not true.")
    multiplier, shift = quantize_multiplier(float(product / np.float64(output.params.scale)))
    lhs_zero, rhs_zero, out_zero = lhs.params.zero_point, rhs.params.zero_point, output.params.zero_point
    if lhs.type == T.INT16:
        ensure_eq(lhs_zero, 0, f"{what} lhs zero point")
        ensure_eq(rhs_zero, 0, f"{what} rhs zero point")
        ensure_eq(out_zero, 0, f"{what} output zero point")
        requantize = int64_requantizer(multiplier, shift)
        overflows = False
    else:
        requantize = double_rounding_requantizer(multiplier, shift)
        overflows = depth * largest(T.INT8, lhs_zero) * largest(T.INT8, rhs_zero) >= INT32_LIMIT
    bound = depth * largest(lhs.type, lhs_zero) * largest(rhs.type, rhs_zero)
    float_type = exact_float_type(bound)
    low, high = RANGES[output.type]

    def kernel(a, b, out):
        a = a.astype(float_type)
        if lhs_zero:
            a -= lhs_zero
        b = b.astype(float_type)
        if rhs_zero:
            b -= rhs_zero
        a, b = _matmul_operands(a, b, options)
        acc = np.matmul(a, b).astype(np.int64)  # exact: see exact_float_type
        if overflows:
            acc = wrap(acc)
        requantize_into(out, acc, requantize, out_zero, low, high)

    return kernel


def _hybrid_matmul_kernel(lhs, rhs, options, output_shape, arithmetic: HostArithmetic) -> Kernel:
    """Hybrid BATCH_MATMUL as TFLite's reference kernel computes it (see the module docstring)."""
    what = "BATCH_MATMUL"
    ensure(isinstance(rhs.quantization, AffineQuantization), f"{what} rhs has no affine quantization")
    channel_scales = per_channel_scales(rhs)
    rank = len(rhs.shape)
    if channel_scales is not None:
        axis = rhs.quantization.quantized_dimension
        ensure_eq(channel_scales.size, rhs.shape[axis], f"{what} per-channel rhs scales")
        columns_axis = rank - 2 if options.adj_y else rank - 1
        ensure(
            axis == columns_axis,
            f"{what} hybrid rhs must be quantized along its output columns (dimension {columns_axis})",
        )
        weight_scale = channel_scales.astype(np.float32)
    else:
        weight_scale = np.float32(rhs.params.scale)
    depth = lhs.shape[-2] if options.adj_x else lhs.shape[-1]
    float_type = exact_float_type(depth * 128 * 128)
    asymmetric = bool(options.asymmetric_quantize_inputs)
    plan = _hybrid_matmul_plan(tuple(lhs.shape), tuple(rhs.shape), options)
    folded_lhs, folded_rhs, scale_rows, sum_rows = plan

    def prepared(b):
        """The weights as [..., depth, cols] floats, and TFLite's column sums (x86: SSE int16 lanes)."""
        weights = np.ascontiguousarray(b if options.adj_y else b.swapaxes(-1, -2)).reshape(folded_rhs)
        return weights.astype(float_type).swapaxes(-1, -2), arithmetic.hybrid_row_sums(
            weights.reshape(-1, depth)
        )

    fixed = prepared(rhs.data) if rhs.is_constant_or_persistent else None
    # TFLite sums the weight columns on the first invoke after prepare only (stale if rhs changes)
    sums = [None if fixed is None else fixed[1]]

    def kernel(a, b, out):
        if options.adj_x:
            a = a.swapaxes(-1, -2)
        flat = np.ascontiguousarray(a).reshape(-1, depth)
        if asymmetric:
            quantized, scales, zero_points = quantize_rows_asymmetric(flat)
        else:
            quantized, scales = quantize_rows_symmetric(flat)
        weights = fixed[0] if fixed is not None else prepared(b)[0]
        # exact integers, [..., rows, cols]
        acc = np.matmul(quantized.reshape(folded_lhs).astype(float_type, copy=False), weights)
        if asymmetric and zero_points.any():
            if sums[0] is None:
                sums[0] = prepared(b)[1]
            acc = acc.astype(np.float64)
            offsets = zero_points[scale_rows].astype(np.float64)  # [batch..., rows]
            column_sums = sums[0][sum_rows].astype(np.float64)  # [batch..., cols]
            acc -= offsets[..., :, None] * column_sums[..., None, :]
        scale = scales[scale_rows][..., :, None] * weight_scale
        np.multiply(acc, scale, out=out.reshape(acc.shape), casting="unsafe")

    return kernel


def _hybrid_matmul_plan(lhs_shape, rhs_shape, options):
    """Folded operand shapes and TFLite's scale-row and row-sum indices for hybrid BATCH_MATMUL.

    TFLite folds lhs [..., a, m, k] x rhs [..., 1, k, n] into [..., a*m, k] x [..., k, n] (without
    adj_x), then walks up to three batch dimensions; the scale (and zero point) of lhs row j of batch
    (b0, b1, b2) is read at sum(b_i * rows if lhs dimension i is not 1) + j, and the row sum of weight
    column i at sum(b_i * cols if rhs dimension i is not 1) + i: right for one batch dimension, the
    same offsets TFLite uses otherwise. (TFLite sums the weight columns of only the matrices its batch
    dimensions 1 and 2 of 5 address, and reads unset memory for the others: with a 5-D rhs whose first
    dimension exceeds 1 and asymmetric inputs it returns garbage; the true sums are used here.)"""
    lhs_dims, rhs_dims = list(lhs_shape), list(rhs_shape)
    if options.adj_x:
        lhs_dims[-1], lhs_dims[-2] = lhs_dims[-2], lhs_dims[-1]
    if options.adj_y:
        rhs_dims[-1], rhs_dims[-2] = rhs_dims[-2], rhs_dims[-1]
    # lhs_dims: [..., rows, depth]; rhs_dims: [..., depth, cols] (as stored when not transposed)
    if not options.adj_x and len(rhs_dims) > 2 and len(lhs_dims) > 2 and rhs_dims[-3] == 1:
        lhs_dims = [*lhs_dims[:-3], lhs_dims[-3] * lhs_dims[-2], lhs_dims[-1]]
        rhs_dims = [*rhs_dims[:-3], rhs_dims[-2], rhs_dims[-1]]
    rows, depth = lhs_dims[-2], lhs_dims[-1]
    cols = rhs_dims[-1]
    lhs_batch = [1] * (5 - len(lhs_dims)) + lhs_dims[:-2]
    rhs_batch = [1] * (5 - len(rhs_dims)) + rhs_dims[:-2]
    rank = max(len(lhs_dims), len(rhs_dims))
    out_batch = [max(a, b) if 1 in (a, b) else a for a, b in zip(lhs_batch, rhs_batch)]
    grid = np.indices(out_batch, dtype=np.int64).reshape(3, -1)
    scale_base = sum(grid[i] * (rows if lhs_batch[i] != 1 else 0) for i in range(3))
    sum_base = sum(grid[i] * (cols if rhs_batch[i] != 1 else 0) for i in range(3))
    visible = out_batch[5 - rank :]
    scale_rows = (scale_base[:, None] + np.arange(rows)).reshape(*visible, rows)
    sum_rows = (sum_base[:, None] + np.arange(cols)).reshape(*visible, cols)
    folded_lhs = (*lhs_dims[:-2], rows, depth)
    folded_rhs = (*rhs_dims[:-2], cols, depth)
    return folded_lhs, folded_rhs, scale_rows, sum_rows


_MATMUL_TYPES = (T.FLOAT32, T.INT8, T.INT16)


register_builtin(
    BuiltinOperator.BATCH_MATMUL,
    (1, 4),
    types=_MATMUL_TYPES,
    op_data=BatchMatMulData,
    prepare=batch_matmul_prepare,
    invoke=batch_matmul_invoke,
    calls=batch_matmul_calls,
)

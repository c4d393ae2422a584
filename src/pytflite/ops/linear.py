"""Matrix products: FULLY_CONNECTED and BATCH_MATMUL, float32, quantized and hybrid.

FULLY_CONNECTED: y = x @ W^T + b with a fused activation. The input is flattened to [batch, depth] where
depth is the weights' second dimension; the output is [batch, units], or the input's leading dimensions
plus [units] with keep_num_dims. A weights tensor with a zero depth gives zeros.

- float32: one BLAS matmul into the output, bias added, clamped. Sparse float32 weights (the sparsity
  layouts TFLite's optimized kernel accepts: random CSR rows or 1x4 blocks; any layout in BUILTIN_REF)
  are densified once in prepare.
- quantized (uint8, int8, int16 activations; uint8/int8/int4/int2/int16 weights): exact integer
  accumulators (quant/integer_gemm.py: a float BLAS matmul of integer values, exact below 2**24 or
  2**53) of (x - input_zero_point) * (w - weights_zero_point) plus the int32/int64 bias, wrapping in
  int32 where TFLite sums in int32, then requantized. LiteRT's optimized kernels (ruy's x86 kernels,
  and the NEON custom GEMV through the SSE translation) round both fixed-point steps half up; the
  reference kernels (BUILTIN_REF, and the optimized build's int16 kernel when a zero point is not 0 or
  the bias is int64) compute round(double(acc) * scale) half away from zero; the 16x16 kernel uses the
  int64 fixed-point multiply. int8 weights stored sparse in 1x16 blocks (int8 output) go through
  TFLite's scalar fixed-point multiply (half away from zero, twice).
- hybrid (float32 activations; int8 weights, uint8 ones read as int8 bits as TFLite does, int2, int4):
  each input row is quantized to int8 on the fly (quant/hybrid_inputs.py: symmetric, or
  asymmetric_quantize_inputs, with TFLite's NEON block rounding), the exact integer products scaled by
  the row's scale times the weights' (per-tensor or per-channel) scale, the bias added, and any fused
  activation (TANH and SIGN_BIT included) applied. On x86 hosts, as LiteRT's SSE kernel does, a weight
  of -128 meeting a negative input in a 16-value block is summed with the wrong sign and row sums
  (asymmetric inputs) wrap in int16 lanes (exact elsewhere: ARM's NEON kernels); on every host the row
  sums are computed on the first invoke after prepare only. Constant
  int4 weights of >= 4 units and an even depth >= 32 take TFLite's 4-bit kernel, whose input
  quantization is its own (symmetric, plain std::round; weights of -8 refused, TFLite garbles them).

BATCH_MATMUL: lhs @ rhs over the last two dimensions (each optionally transposed by adj_x / adj_y),
with the leading (batch) dimensions broadcast; ranks 2 to 5. float32 is one np.matmul into the output.
TFLite's builtin kernel is its reference kernel: int8 x int8 -> int8 requantizes an int32 accumulator
with the scalar double-rounding multiply, int8 x int8 -> int32 returns the raw products (zero points
ignored), int16 x int16 / int16 x int8 requantize an int64 accumulator with the int64 multiply. Hybrid
(float32 lhs, int8 rhs) quantizes each lhs row like FULLY_CONNECTED; as in TFLite, with more than one
batch dimension the row scales (and zero points, row sums) are looked up with TFLite's batch strides.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..core.packed import unpack_packed
from ..core.quantization import AffineQuantization, DimensionType, SparsityParameters
from ..core.sparsity import densify
from ..core.step_program import Direct, Written
from ..core.types import BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..fidelity.arithmetic import HostArithmetic
from ..fidelity.neon_pairs import weight_pairs
from ..fidelity.ruy import gemm_rounding
from ..fidelity.sse import sign_transfer_correction, sign_transfer_mask
from ..model.options import ActivationFunctionType, FullyConnectedOptionsWeightsFormat
from .common import (
    activation_clamp,
    check_arity,
    input_tensor,
    optional_input_tensor,
    output_tensor,
)
from .jit import compiled
from .quant.fixed_point import activation_range, quantize_multiplier, quantize_multipliers, wrap
from .quant.hybrid_inputs import (
    AsymmetricRowQuantizer,
    quantize_rows_4bit_kernel,
    quantize_rows_asymmetric,
    quantize_rows_symmetric,
)
from .quant.integer_gemm import (
    double_rounding_requantizer,
    exact_float_type,
    float_scale_requantizer,
    gemm_requantizer,
    int64_requantizer,
)
from .registry import register_builtin

T = TensorType
Act = ActivationFunctionType
Kernel = Callable[..., None]

_RANGES = {T.UINT8: (0, 255), T.INT8: (-128, 127), T.INT16: (-(2**15), 2**15 - 1)}
_PACKED_WEIGHTS = (T.INT4, T.INT2)
_CLAMPING = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)
_INT32_LIMIT = 2**31


def _weight_values(weights) -> np.ndarray:
    """The weights' integer values, one per element (int4/int2 unpacked), in the weights' shape."""
    if weights.type in _PACKED_WEIGHTS:
        count = math.prod(weights.shape)
        return unpack_packed(weights.data, count, weights.type).reshape(weights.shape)
    return weights.data


def _largest(tensor_type: TensorType, zero_point) -> int:
    """Bound on |q - zero_point| for a value of this type."""
    low, high = _RANGES.get(tensor_type, (-128, 127))
    zero = np.asarray(zero_point, np.int64)
    return int(max(np.max(np.abs(high - zero)), np.max(np.abs(low - zero))))


def _per_channel_scales(tensor) -> np.ndarray | None:
    """The scales of a tensor quantized per channel (more than one scale), else None."""
    quantization = tensor.quantization
    if isinstance(quantization, AffineQuantization) and quantization.scale.size > 1:
        return quantization.scale
    return None


# ---------------------------------------------------------------------------------------------------
# FULLY_CONNECTED


@dataclass(frozen=True)
class FullyConnectedData:
    batch: int
    depth: int  # of the [batch, depth] input rows: the weights' depth, or for a zero one the input's
    units: int
    clamp: Callable[[np.ndarray], None] | None  # the float kernel's activation
    dense: np.ndarray | None  # sparse float weights, densified in prepare
    kernel: Kernel | None  # quantized, hybrid, or zero-filling kernels: kernel(x, w, bias, out)


def _zeros_kernel(x, w, bias, out) -> None:
    out.fill(0)


def _fully_connected_prepare(optimized: bool):
    def prepare(context, node):
        options = node.builtin_data
        check_arity(node, (2, 3))
        if options.weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
            raise KernelError(
                f"FULLY_CONNECTED weights format {options.weights_format.name} is not supported"
            )
        source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
        bias = optional_input_tensor(context, node, 2)
        output = output_tensor(context, node)
        ensure_type(source, _FC_TYPES, "input", "FULLY_CONNECTED")
        hybrid = source.type == T.FLOAT32 and weights.type in _HYBRID_WEIGHTS
        _check_types(source, weights, bias, output, hybrid)
        if not hybrid:
            ensure(
                options.fused_activation_function in _CLAMPING,
                "params->activation == kTfLiteActNone || params->activation == kTfLiteActRelu || "
                "params->activation == kTfLiteActReluN1To1 || params->activation == kTfLiteActRelu6 "
                "was not true.",
            )
        if weights.type in _PACKED_WEIGHTS:
            ensure(
                weights.quantization is not None and not np.any(weights.quantization.zero_point),
                "Unsupported filter quantization zero-point value.",
            )
        ensure_eq(len(weights.shape), 2, "FULLY_CONNECTED weights rank")
        units, depth = weights.shape
        size = math.prod(source.shape)
        if depth == 0:  # TFLite: one output row per input row, all zeros
            batch = math.prod(source.shape[:-1])
            row_length = size // batch if batch else 0
        else:
            ensure(
                size % depth == 0,
                f"FULLY_CONNECTED input of {size} elements is not a multiple of depth {depth}",
            )
            batch, row_length = size // depth, depth
        if bias is not None:
            ensure_eq(math.prod(bias.shape), units, "FULLY_CONNECTED bias size")
        if options.keep_num_dims:
            ensure(
                len(source.shape) >= 1 and source.shape[-1] == depth,
                f"FULLY_CONNECTED keep_num_dims needs the input's last dimension {depth}, "
                f"got {list(source.shape)}",
            )
            shape = (*source.shape[:-1], units)
        else:
            shape = (batch, units)
        context.resize_tensor(output, shape)
        clamp, dense, kernel = None, None, None
        if depth == 0 or batch * units == 0:
            kernel = _zeros_kernel
        elif hybrid:
            arithmetic = context.host.arithmetic
            kernel = _hybrid_fc_kernel(source, weights, bias, options, batch, depth, optimized, arithmetic)
        elif source.type == T.FLOAT32:
            clamp = activation_clamp(options.fused_activation_function)
            if weights.sparsity is not None:
                dense = _densify_float_weights(weights, batch, depth, units, optimized)
        else:
            kernel = _quantized_fc_kernel(
                source, weights, bias, output, options, optimized, batch, depth, context.host
            )
        node.user_data = FullyConnectedData(batch, row_length, units, clamp, dense, kernel)

    return prepare


_FC_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16)
_HYBRID_WEIGHTS = (T.UINT8, T.INT8, T.INT4, T.INT2)
_QUANTIZED_WEIGHTS = (T.UINT8, T.INT8, T.INT4, T.INT2, T.INT16)


def _check_types(source, weights, bias, output, hybrid: bool) -> None:
    """TFLite's CheckTypes, then the input/weights/output combinations its kernels really compute."""
    what = "FULLY_CONNECTED"
    if hybrid:
        ensure_type(output, T.FLOAT32, "output", what)
        if bias is not None:
            ensure_type(bias, T.FLOAT32, "bias", what)
        return
    if weights.type not in _QUANTIZED_WEIGHTS:
        for tensor, role in ((weights, "weights"), (output, "output")):
            ensure_type(tensor, T.FLOAT32, role, what)
        ensure_type(source, T.FLOAT32, "input", what)
        if bias is not None:
            ensure_type(bias, T.FLOAT32, "bias", what)
        return
    if bias is not None:
        ensure_type(bias, (T.INT32, T.INT64), "bias", what)
    combinations = {
        (T.UINT8, T.UINT8): (T.UINT8, T.INT16),
        (T.INT8, T.INT8): (T.INT8,),
        (T.INT8, T.INT4): (T.INT8,),
        (T.INT8, T.INT2): (T.INT8,),
        (T.INT16, T.INT8): (T.INT16,),
        (T.INT16, T.INT4): (T.INT16,),
        (T.INT16, T.INT2): (T.INT16,),
        (T.INT16, T.INT16): (T.INT16,),
    }
    outputs = combinations.get((source.type, weights.type), ())
    if output.type not in outputs:
        raise KernelError(
            f"FULLY_CONNECTED of {type_name(source.type)} input, {type_name(weights.type)} weights and "
            f"{type_name(output.type)} output is not supported"
        )
    if bias is not None and bias.type == T.INT64:
        ensure(
            source.type == T.INT16, f"FULLY_CONNECTED int64 bias needs int16 input, got {source.type.name}"
        )


def _fc_arrays(tensors, node, data: FullyConnectedData):
    """The node's arrays as the computation takes them: input [batch, depth], weights, bias (`units`
    values in any shape: [1, 1, units] broadcasts wrongly against [batch, units]) or None, and output
    [batch, units]."""
    inputs = node.inputs
    x = tensors[inputs[0]].data.reshape(data.batch, data.depth)
    bias = tensors[inputs[2]].data.reshape(-1) if len(inputs) == 3 and inputs[2] >= 0 else None
    out = tensors[node.outputs[0]].data.reshape(data.batch, data.units)
    return x, tensors[inputs[1]].data, bias, out


def _matrix_product(depth: int) -> Callable:
    """The function putting a product of rows of `depth` into an output array, product(a, b, out):
    np.dot, about half of np.matmul's 1 us on a few rows; np.matmul for a depth of 1, where np.dot
    multiplies a single pair directly and keeps a -0.0 product's sign (a sum from zero, as BLAS and
    TFLite's accumulators make it, gives +0.0)."""
    return np.matmul if depth == 1 else np.dot


def _float_calls(data: FullyConnectedData, x, w, bias, out) -> tuple:
    """The float computation on these arrays, as calls: the product into the output, the bias added, the
    activation's clamp. (One row's bias is added in the output's own shape, as NumPy's broadcasting loop
    costs 0.5 us more.)"""
    product = _matrix_product(data.depth)
    calls = [partial(product, x, (data.dense if data.dense is not None else w).T, out)]
    if bias is not None:
        calls.append(partial(np.add, out, bias.reshape(out.shape) if out.shape[0] == 1 else bias, out))
    if data.clamp is not None:
        calls.append(partial(data.clamp, out))
    return tuple(calls)


def fully_connected_invoke(context, node):
    data = node.user_data
    arrays = _fc_arrays(context.tensors, node, data)
    if data.kernel is not None:
        data.kernel(*arrays)
        return
    for call in _float_calls(data, *arrays):
        call()


def fully_connected_bind(context, node):
    """The check-free step, holding the node's arrays (Registration.bind): the float computation's calls
    as a Direct step."""
    data = node.user_data
    arrays = _fc_arrays(context.tensors, node, data)
    if data.kernel is None:
        return Direct(*_float_calls(data, *arrays))
    kernel = data.kernel
    if isinstance(kernel, _CompiledCentered):
        return kernel.step(*arrays)
    return lambda context, node: kernel(*arrays)


# --- sparse weights ---------------------------------------------------------------------------------


def _canonical(sparsity: SparsityParameters, block: int | None) -> bool:
    """The layout TFLite's optimized sparse kernels assume: rows DENSE then CSR over columns (or column
    blocks of `block` values, DENSE), traversed in order."""
    levels = sparsity.dim_metadata
    if block is None:
        return len(levels) == 2 and tuple(sparsity.traversal_order) == (0, 1) and not sparsity.block_map
    return (
        len(levels) == 3
        and tuple(sparsity.traversal_order) == (0, 1, 2)
        and tuple(sparsity.block_map or ()) == (1,)
        and levels[2].format == DimensionType.DENSE
        and levels[2].dense_size == block
    )


def _supported_sparsity(sparsity: SparsityParameters) -> bool:
    """TFLite's SupportedSparsityFormat: rows DENSE, then columns CSR."""
    levels = sparsity.dim_metadata
    return (
        len(levels) >= 2
        and levels[0].format == DimensionType.DENSE
        and levels[1].format == DimensionType.SPARSE_CSR
    )


def _valid_sparsity(sparsity: SparsityParameters, batch: int, depth: int, units: int) -> bool:
    """TFLite's VerifySparsity: the rows fit the output, the column indices the input."""
    levels = sparsity.dim_metadata
    indices = levels[1].array_indices
    return batch * units >= (batch - 1) * units + levels[0].dense_size and (
        not indices.size or int(indices.max()) < depth
    )


def _densify_float_weights(weights, batch, depth, units, optimized: bool) -> np.ndarray:
    ensure(weights.is_constant_or_persistent, "FULLY_CONNECTED sparse weights must be a constant tensor")
    sparsity = weights.sparsity
    if optimized:
        unsupported = "Unsupported sparse fully-connected weight format."
        ensure(_supported_sparsity(sparsity), unsupported)
        ensure(_valid_sparsity(sparsity, batch, depth, units), "Invalid sparse fully-connected format.")
        ensure(_canonical(sparsity, None) or _canonical(sparsity, 4), unsupported)
    return densify(weights.data.reshape(-1), weights.shape, sparsity)


def _densify_int8_weights(weights, batch, depth, units) -> np.ndarray:
    """int8 sparse weights of an int8 FULLY_CONNECTED: TFLite's 1x16 block kernel only."""
    ensure(weights.is_constant_or_persistent, "FULLY_CONNECTED sparse weights must be a constant tensor")
    ensure(
        weights.params.zero_point == 0,
        "Quantized and sparse fully-connected format supports symmetric weight quantization only.",
    )
    sparsity = weights.sparsity
    ensure(
        _supported_sparsity(sparsity) and _valid_sparsity(sparsity, batch, depth, units),
        "Invalid quantized and sparse fully-connected format.",
    )
    ensure(_canonical(sparsity, 16), "Unsupported sparse fully-connected weight format.")
    return densify(weights.data.reshape(-1), weights.shape, sparsity)


# --- quantized --------------------------------------------------------------------------------------


def _quantized_fc_kernel(source, weights, bias, output, options, optimized, batch, depth, host) -> Kernel:
    what = "FULLY_CONNECTED"
    ensure(isinstance(source.quantization, AffineQuantization), f"{what} input has no affine quantization")
    ensure(
        isinstance(weights.quantization, AffineQuantization) and weights.quantization.scale.size > 0,
        f"{what} weights have no affine quantization",
    )
    units = weights.shape[0]
    input_scale, output_scale = source.params.scale, output.params.scale
    channel_scales = _per_channel_scales(weights)
    per_channel = channel_scales is not None
    if per_channel:
        ensure(
            source.type in (T.INT8, T.INT16),
            "input->type == kTfLiteInt8 || input->type == kTfLiteInt16 was not true.",
        )
        ensure_eq(weights.quantization.quantized_dimension, 0, f"{what} weights quantized_dimension")
        ensure_eq(channel_scales.size, units, f"{what} per-channel weight scales")
        effective = np.float64(input_scale) * channel_scales.astype(np.float64) / np.float64(output_scale)
        multiplier, shift = quantize_multipliers(effective)
        weights_zero_point = 0  # per-channel weights are symmetric: TFLite ignores their zero points
    else:
        weights_scale = float(weights.quantization.scale[0])
        if bias is not None:
            product = np.float64(input_scale) * np.float64(weights_scale)
            difference = abs(product - np.float64(bias.params.scale))
            ensure(
                difference / np.float64(output_scale) <= 0.02,
                "scale_diff / output_scale <= 0.02 was not true.",
            )
        product = np.float64(np.float32(input_scale) * np.float32(weights_scale))
        ensure(product >= 0, "input_product_scale >= 0 was not true.")
        multiplier, shift = quantize_multiplier(float(product / np.float64(output_scale)))
        effective = np.float64(input_scale) * np.float64(weights_scale) / np.float64(output_scale)
        weights_zero_point = weights.params.zero_point
    low, high = _RANGES[output.type]
    low, high = activation_range(
        options.fused_activation_function, output_scale, output.params.zero_point, low, high
    )
    input_zero_point, output_zero_point = source.params.zero_point, output.params.zero_point
    if source.type == T.INT16:
        ensure_eq(input_zero_point, 0, f"{what} int16 input zero point")
        ensure_eq(output_zero_point, 0, f"{what} int16 output zero point")
    if source.type == T.UINT8 and output.type == T.INT16:
        ensure_eq(output_zero_point, 0, f"{what} int16 output zero point")

    # Which TFLite kernel runs, and so how the accumulator is requantized and how wide it is.
    int64_accumulator = False
    rounding = None  # cpu_backend_gemm's, where it runs the 8-bit product
    if source.type == T.INT16:
        bias_type = _int16_bias_type(options, bias)
        nonzero = bool(input_zero_point or weights.params.zero_point or output_zero_point)
        if weights.type == T.INT16:
            # the 16x16 kernel: an int64 accumulator and the scalar int64 fixed-point multiply
            requantize = int64_requantizer(multiplier, shift)
            int64_accumulator = True
        elif not optimized or nonzero or bias_type == T.INT64:
            requantize = float_scale_requantizer(effective, host.arithmetic)
            int64_accumulator = bias_type != T.INT32
        else:
            requantize = gemm_requantizer(
                _gemm_rounding(host, source.type, batch, units, depth), multiplier, shift
            )
    elif optimized:
        rounding = _gemm_rounding(host, source.type, batch, units, depth)
        requantize = gemm_requantizer(rounding, multiplier, shift)
    else:
        requantize = float_scale_requantizer(effective, host.arithmetic)

    if weights.sparsity is not None:
        ensure(
            source.type == T.INT8 and weights.type == T.INT8,
            "Sparse FULLY_CONNECTED weights are supported for float32 and int8 only",
        )
        values = _densify_int8_weights(weights, batch, depth, units)
        requantize = double_rounding_requantizer(multiplier, shift)
        constant = True
    else:
        values = None
        constant = weights.is_constant_or_persistent
        if constant:
            values = _weight_values(weights)

    products = depth * _largest(source.type, input_zero_point) * _largest(weights.type, weights_zero_point)
    float_type = exact_float_type(products)
    if bias is None:
        bias_bound = 0
    elif bias.is_constant_or_persistent:
        bias_bound = int(np.max(np.abs(bias.data.astype(np.int64)), initial=0))
    else:
        bias_bound = _INT32_LIMIT
    # TFLite sums in int32 (wrapping) unless its kernel uses an int64 accumulator
    overflows = not int64_accumulator and products + bias_bound >= _INT32_LIMIT

    def prepared_weights(raw) -> np.ndarray:
        matrix = raw.astype(float_type)
        if weights_zero_point:
            matrix -= weights_zero_point
        return matrix.T

    fixed = prepared_weights(values) if constant else None
    # ARM's ruy / gemmlowp kernels add product pairs in int16 (not the custom GEMV: "simd")
    pairs = None
    if rounding not in (None, "simd") and constant and weights.sparsity is None:
        uint8 = source.type == T.UINT8
        pairs = weight_pairs(host, values, uint8, weights_zero_point, input_zero_point)
    packed = weights.type in _PACKED_WEIGHTS
    weights_shape = tuple(weights.shape)
    weights_type = weights.type

    def kernel(x, w, bias_values, out):
        if fixed is not None:
            matrix = fixed
        elif packed:
            matrix = prepared_weights(
                unpack_packed(w, math.prod(weights_shape), weights_type).reshape(weights_shape)
            )
        else:
            matrix = prepared_weights(w)
        lhs = x.astype(float_type)
        if input_zero_point:
            lhs -= input_zero_point
        acc = np.matmul(lhs, matrix).astype(np.int64)  # exact: see exact_float_type
        if pairs is not None:
            acc -= pairs.correction(x)
        if bias_values is not None:
            acc += bias_values
        if overflows:
            acc = wrap(acc)
        result = requantize(acc)
        if output_zero_point:
            result += output_zero_point
        np.clip(result, low, high, out=result)
        np.copyto(out, result, casting="unsafe")

    return kernel


def _int16_bias_type(options, bias) -> TensorType | None:
    """The bias type TFLite's int16 kernels read: quantized_bias_type when set (the bias must then have
    it), else the bias's own type. (Without quantized_bias_type TFLite's reference int16 kernel reads an
    int32 bias as int64, and its 16x16 kernel an int64 bias as int32, i.e. garbage; the bias is read as
    what it is here.)"""
    declared = options.quantized_bias_type
    if declared not in (None, T.FLOAT32, 0):
        declared = T(declared)
        ensure(
            declared in (T.INT32, T.INT64),
            "params->quantized_bias_type == kTfLiteInt32 || params->quantized_bias_type == kTfLiteInt64 "
            "was not true.",
        )
        ensure(
            bias is None or bias.type == declared,
            "(bias == nullptr) || bias->type == params->quantized_bias_type was not true.",
        )
        return declared
    if bias is None:
        return None
    return bias.type


# --- hybrid -----------------------------------------------------------------------------------------


def _gemm_rounding(host, source_type, batch, units, depth) -> str:
    """The requantization of cpu_backend_gemm's kernel for this product on this host (fidelity/ruy.py)."""
    return gemm_rounding(
        host,
        int16=source_type == T.INT16,
        uint8=source_type == T.UINT8,
        one_column=batch == 1,
        rows=units,
        depth=depth,
    )


def _hybrid_fc_kernel(
    source, weights, bias, options, batch, depth, optimized, arithmetic: HostArithmetic
) -> Kernel:
    what = "FULLY_CONNECTED"
    units = weights.shape[0]
    ensure(
        isinstance(weights.quantization, AffineQuantization), f"{what} weights have no affine quantization"
    )
    # TFLite's optimized build runs constant int4 weights of these shapes through its 4-bit kernel, which
    # quantizes the input its own way (see quantize_rows_4bit_kernel) and stores weights as v + 7 in
    # four bits: -8 does not fit, and TFLite returns garbage for it.
    four_bit = (
        optimized
        and weights.type == T.INT4
        and weights.is_constant_or_persistent
        and batch > 0
        and depth % 2 == 0
        and units >= 4
        and depth >= 32
    )
    if four_bit:
        ensure(
            not np.any(_hybrid_weight_values(weights) == -8),
            f"{what} INT4 weights holding -8 are not supported by TFLite's 4-bit kernel",
        )
    channel_scales = _per_channel_scales(weights)
    if channel_scales is not None:
        axis = weights.quantization.quantized_dimension
        ensure_eq(axis, 0, f"{what} hybrid weights quantized_dimension")
        ensure_eq(channel_scales.size, weights.shape[axis], f"{what} per-channel weight scales")
        weight_scale = channel_scales.astype(np.float32)
    else:
        weight_scale = np.array(weights.params.scale, np.float32)  # 0-d: see scale_back
    sparse = weights.sparsity is not None
    if sparse:
        ensure(weights.type == T.INT8, "Sparse hybrid FULLY_CONNECTED weights must be INT8")
        ensure(weights.is_constant_or_persistent, "FULLY_CONNECTED sparse weights must be a constant tensor")
        sparsity = weights.sparsity
        ensure(
            _supported_sparsity(sparsity) and _canonical(sparsity, 16),
            "Unsupported sparse fully-connected weight format.",
        )
        values = densify(weights.data.reshape(-1), weights.shape, sparsity)
    elif weights.is_constant_or_persistent:
        values = _hybrid_weight_values(weights)
    else:
        values = None
    float_type = exact_float_type(depth * 128 * 128)
    finish = _float_activation(options.fused_activation_function)
    asymmetric = options.asymmetric_quantize_inputs and not four_bit
    # the columns TFLite's SSE kernel (x86 only) multiplies in 16-value blocks (every stored block when
    # sparse: the depth rounded up to whole blocks); its 4-bit kernel has no such quirk
    blocked = 0 if four_bit else arithmetic.sign_lost_columns(depth + 15 if sparse else depth)

    def row_sums_of(raw) -> np.ndarray:
        sums = raw.astype(np.int64).sum(axis=1) if sparse else arithmetic.hybrid_row_sums(raw)
        return sums.astype(float_type)

    def prepared(raw):
        # (several rows multiply a C-contiguous matrix about twice as fast; one row a transposed view)
        matrix = raw.astype(float_type).T
        return np.ascontiguousarray(matrix) if batch > 1 else matrix, sign_transfer_mask(raw, blocked)

    fixed = None if values is None else prepared(values)
    # TFLite sums the weight rows on the first invoke after prepare only (stale if the weights change)
    sums = [None if values is None else row_sums_of(values)]
    # Constant weights whose SSE row sums are the exact ones and without -128s in the SIMD blocks: the
    # accumulators acc - zp * sums are exactly (q - zp) @ w, what quantize(x, centered=True) multiplies
    # (exact in float_type too: |q - zp| <= 255)
    centered = (
        asymmetric
        and fixed is not None
        and fixed[1] is None
        and exact_float_type(depth * 255 * 128) == float_type
        and np.array_equal(sums[0], values.astype(np.int64).sum(axis=1))
    )
    quantize = (
        quantize_rows_4bit_kernel
        if four_bit
        else AsymmetricRowQuantizer(batch, depth, centered)
        if asymmetric
        else quantize_rows_symmetric
    )
    acc = np.empty((batch, units), float_type)
    product = _matrix_product(depth)
    scale = np.empty((batch, units), np.float32)
    tiled_bias = _tiled_constant_bias(bias, batch)

    def scale_back(scales, bias_values, out):
        """out = acc * (input scale * weight scale) + bias, then the fused activation."""
        np.multiply(scales[:, None], weight_scale, scale)
        np.multiply(acc, scale, out, casting="unsafe")
        if tiled_bias is not None:
            out += tiled_bias
        elif bias_values is not None:
            out += bias_values
        if finish is not None:
            finish(out)

    if centered:
        matrix = fixed[0]

        def centered_kernel(x, w, bias_values, out):
            quantized, scales, _ = quantize(x)
            product(quantized, matrix, acc)  # exact integers
            scale_back(scales, bias_values, out)

        compiled_kernel = _compiled_centered_kernel(
            quantize, product, matrix, acc, weight_scale, options.fused_activation_function, centered_kernel
        )
        return centered_kernel if compiled_kernel is None else compiled_kernel

    def kernel(x, w, bias_values, out):
        if fixed is not None:
            matrix, mask = fixed
        else:
            raw = _hybrid_weight_values_of(w, weights)
            matrix, mask = prepared(raw)
            if sums[0] is None:
                sums[0] = row_sums_of(raw)
        quantized, scales, *zero_points = quantize(x)
        product(quantized, matrix, acc)  # exact integers
        if mask is not None:
            np.add(acc, sign_transfer_correction(quantized, mask).astype(float_type), out=acc)
        if zero_points:
            np.subtract(acc, zero_points[0][:, None].astype(float_type) * sums[0][None, :], out=acc)
        scale_back(scales, bias_values, out)

    return kernel


def _compiled_centered_kernel(quantize, product, matrix, acc, weight_scale, activation, fallback):
    """The centered hybrid kernel with compiled row quantization (_CompiledCentered); None where
    compiled kernels do not run or the activation is not a clamp."""
    compiled_quantize = quantize.compiled_kernel
    with_factors = compiled("quant.hybrid_inputs_compiled", "quantize_rows_with_factors")
    if compiled_quantize is None or with_factors is None:
        return None
    if activation not in (Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1):
        return None
    _, scales, zero_points = compiled_quantize
    return _CompiledCentered(
        with_factors, scales, zero_points, product, matrix, acc, weight_scale, activation, fallback
    )


class _CompiledCentered:
    """The centered hybrid kernel as kernel(x, w, bias_values, out): compiled row quantization that also
    writes the factors, input scale * weight scale in float32 (quant/hybrid_inputs_compiled.
    quantize_rows_with_factors), the exact product, then acc * factors (float64 sums multiplied in
    float64 and rounded once), the bias and a clamping activation: the NumPy kernel's roundings. Arrays
    it cannot take, and rows the quantizer refuses, go to `fallback`. Its bound step is one written
    statement (step)."""

    def __init__(
        self, quantize, scales, zero_points, product, matrix, acc, weight_scale, activation, fallback
    ):
        self.quantize, self.scales, self.zero_points = quantize, scales, zero_points
        self.product, self.matrix, self.acc = product, matrix, acc
        self.fallback = fallback
        batch, units = acc.shape
        self.quantized = np.empty((batch, matrix.shape[0]), np.float32)
        self.factors = np.empty((batch, units), np.float32)
        channel_scales = np.broadcast_to(weight_scale, (units,)).astype(np.float32)
        channel_scales.flags.writeable = False
        self.channel_scales = channel_scales
        self.finish = activation_clamp(activation)

    def __call__(self, x, w, bias_values, out, tiled_bias=None):
        """`tiled_bias`: the bias repeated over the rows, added instead of bias_values (step's)."""
        if not (
            x.flags.c_contiguous
            and out.flags.c_contiguous
            and self.quantize(
                x, self.quantized, self.scales, self.zero_points, True, self.channel_scales, self.factors
            )
        ):
            return self.fallback(x, w, bias_values, out)
        self.product(self.quantized, self.matrix, self.acc)  # exact integers
        np.multiply(self.acc, self.factors, out)
        if bias_values is not None:
            np.add(out, bias_values if tiled_bias is None else tiled_bias, out)
        if self.finish is not None:
            self.finish(out)

    def step(self, x, w, bias_values, out) -> Callable:
        """The check-free step on these arrays: one written statement (quantize, then the product and the
        scaling back, or the fallback for rows the quantizer refuses) where they are contiguous; a
        constant bias is repeated over the rows once (adding it then needs no broadcasting)."""
        if not (x.flags.c_contiguous and out.flags.c_contiguous):
            return lambda context, node: self.fallback(x, w, bias_values, out)
        tiled = None
        if bias_values is not None and not bias_values.flags.writeable:  # (a constant)
            tiled = np.tile(bias_values, (self.acc.shape[0], 1))
        bias = bias_values if tiled is None else tiled
        parts = ["{multiply}({acc}, {factors}, {out})"]
        parts += [] if bias is None else ["{add}({out}, {bias}, {out})"]
        parts += [] if self.finish is None else ["{finish}({out})"]
        text = (
            "({product}({quantized}, {matrix}, {acc}), "
            + ", ".join(parts)
            + ") if {quantize}({x}, {quantized}, {scales}, {zero_points}, True, {channel_scales}, {factors})"
            " else {fallback}({x}, {w}, {bias_values}, {out})"
        )
        return Written(
            lambda context, node: self(x, w, bias_values, out, tiled),
            text,
            product=self.product,
            quantized=self.quantized,
            matrix=self.matrix,
            acc=self.acc,
            multiply=np.multiply,
            factors=self.factors,
            out=out,
            add=np.add,
            bias=bias,
            finish=self.finish,
            quantize=self.quantize,
            x=x,
            scales=self.scales,
            zero_points=self.zero_points,
            channel_scales=self.channel_scales,
            fallback=self.fallback,
            w=w,
            bias_values=bias_values,
        )


# Up to this many outputs, a constant bias is kept repeated over the rows: adding it then needs no
# broadcasting, which costs ~1 us a call on small outputs.
_TILED_BIAS_LIMIT = 1 << 16


def _tiled_constant_bias(bias, batch: int) -> np.ndarray | None:
    """A constant float bias repeated over `batch` rows ([batch, units]), for small outputs; else None."""
    if bias is None or not bias.is_constant_or_persistent or bias.data is None:
        return None
    values = bias.data.reshape(-1)
    if batch * values.size > _TILED_BIAS_LIMIT:
        return None
    return np.tile(values, (batch, 1))


def _hybrid_weight_values(weights) -> np.ndarray:
    return _hybrid_weight_values_of(weights.data, weights)


def _hybrid_weight_values_of(data, weights) -> np.ndarray:
    if weights.type in _PACKED_WEIGHTS:
        count = math.prod(weights.shape)
        return unpack_packed(data, count, weights.type).reshape(weights.shape)
    return data.view(np.int8)  # TFLite reads uint8 weights' bits as int8


def _float_activation(activation) -> Callable[[np.ndarray], None] | None:
    """Any fused activation applied to a float result (ApplyActivationToVector)."""
    if activation == Act.TANH:
        return lambda out: np.tanh(out, out=out)
    if activation == Act.SIGN_BIT:
        return lambda out: np.copyto(out, np.signbit(out))
    return activation_clamp(activation)


register_builtin(
    BuiltinOperator.FULLY_CONNECTED,
    (1, 14),
    types=_FC_TYPES,
    op_data=FullyConnectedData,
    prepare=_fully_connected_prepare(True),
    builtin_ref={"prepare": _fully_connected_prepare(False)},
    invoke=fully_connected_invoke,
    bind=fully_connected_bind,
)


# ---------------------------------------------------------------------------------------------------
# BATCH_MATMUL


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


def batch_matmul_bind(context, node):
    """The float product as a Direct step on views made once; other kernels run their invoke."""
    if node.user_data.kernel is not None:
        return batch_matmul_invoke
    tensors = context.tensors
    lhs, rhs = _matmul_operands(tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, node.builtin_data)
    return Direct(partial(np.matmul, lhs, rhs, tensors[node.outputs[0]].data))


def _quantized_matmul_kernel(lhs, rhs, output, options) -> Kernel:
    what = "BATCH_MATMUL"
    depth = lhs.shape[-2] if options.adj_x else lhs.shape[-1]
    if output.type == T.INT32:
        # raw products of the stored int8 values: TFLite ignores zero points here
        float_type = exact_float_type(depth * 128 * 128)
        overflows = depth * 128 * 128 >= _INT32_LIMIT

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
        overflows = depth * _largest(T.INT8, lhs_zero) * _largest(T.INT8, rhs_zero) >= _INT32_LIMIT
    bound = depth * _largest(lhs.type, lhs_zero) * _largest(rhs.type, rhs_zero)
    float_type = exact_float_type(bound)
    low, high = _RANGES[output.type]

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
        result = requantize(acc)
        if out_zero:
            result += out_zero
        np.clip(result, low, high, out=result)
        np.copyto(out, result, casting="unsafe")

    return kernel


def _hybrid_matmul_kernel(lhs, rhs, options, output_shape, arithmetic: HostArithmetic) -> Kernel:
    """Hybrid BATCH_MATMUL as TFLite's reference kernel computes it (see the module docstring)."""
    what = "BATCH_MATMUL"
    ensure(isinstance(rhs.quantization, AffineQuantization), f"{what} rhs has no affine quantization")
    channel_scales = _per_channel_scales(rhs)
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
    bind=batch_matmul_bind,
)

"""What the convolutions share: their accepted types, input checks, the hybrid input quantization and
the quantization parameters of the integer kernels (TFLite's Prepare checks and multipliers)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ...core.derived import derived_constant
from ...core.quantization import AffineQuantization
from ...core.types import TensorType
from ...errors import KernelError, ensure, ensure_eq, ensure_type
from ..common import reject_quantized_or_hybrid
from ..quant import fixed_point as fp
from ..quant.hybrid_inputs import AsymmetricRowQuantizer, quantize_rows_symmetric

FLOAT = (TensorType.FLOAT32,)
INTEGER = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)
CONV_TYPES = (TensorType.FLOAT32, *INTEGER)
RANGES = {TensorType.UINT8: (0, 255), TensorType.INT8: (-128, 127), TensorType.INT16: (-32768, 32767)}
FLOAT_TYPES = {np.dtype(np.float32): TensorType.FLOAT32, np.dtype(np.float64): TensorType.FLOAT64}
_EXACT_FLOAT32 = 1 << 24  # every integer of smaller magnitude is a float32, and so every sum of them
ALL = slice(None)


def draft_of(init_value, *owned: str) -> SimpleNamespace:
    """What a convolution's prepare plans into, step by step: the fields of a fresh value of the op-data
    class of `init_value` (its defaults, and the temporaries init made, the `owned` fields). Prepare ends
    with `node.user_data = Class(**vars(draft))`, the frozen op data."""
    fresh = type(init_value)(**{name: getattr(init_value, name) for name in owned})
    return SimpleNamespace(**{f.name: getattr(fresh, f.name) for f in dataclasses.fields(fresh)})


def check_float(tensors, roles, op: str) -> None:
    """Every tensor float32; the variants not implemented say so."""
    reject_quantized_or_hybrid(tensors[0], tensors[1], op)
    for tensor, role in zip(tensors, roles):
        ensure_type(tensor, FLOAT, role, op)


def check_bias(bias, channels: int, op: str) -> None:
    ensure_type(bias, FLOAT, "bias", op)
    count = int(np.prod(bias.shape, dtype=np.int64))
    ensure_eq(count, channels, f"{op} bias size")


def ensure_positive(values: Sequence[int], what: str) -> None:
    ensure(all(v > 0 for v in values), f"{what} must be positive, got {list(values)}")


def constant_data(tensor) -> np.ndarray | None:
    return (
        tensor.data
        if tensor is not None and tensor.is_constant_or_persistent and tensor.data is not None
        else None
    )


def tiled_bias(bias: np.ndarray, width: int) -> np.ndarray:
    """The bias repeated over one output row, so that adding it runs one long loop per row."""
    return np.tile(bias.reshape(-1), width)


def input_quantizer(source, per_channel: bool) -> AsymmetricRowQuantizer | None:
    """What quantize_input quantizes a hybrid kernel's input with: per channel, an asymmetric
    quantizer (centered) for the input's shape, holding its scratch arrays; else None (symmetric)."""
    batches = source.shape[0]
    size = math.prod(source.shape) // batches if batches else 0
    return AsymmetricRowQuantizer(batches, size, centered=True) if per_channel and size else None


def quantize_input(
    x: np.ndarray, quantizer: AsymmetricRowQuantizer | None, out: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Each batch of a hybrid kernel's input quantized (asymmetrically with a quantizer from
    input_quantizer, else symmetrically), as float32 (q - zero point) values shaped like x (exact; into
    the float32 `out` when given); the per-batch scaling factors and zero points."""
    rows = x.reshape(x.shape[0], -1)
    target = None if out is None else out.reshape(rows.shape)
    if quantizer is not None:
        quantized, scales, zero_points = quantizer(rows, target)
    else:
        (quantized, scales), zero_points = quantize_rows_symmetric(rows, out=target), None
    return quantized.reshape(x.shape), scales, zero_points


# --- quantized arithmetic shared by the three convolutions ----------------------------------------------


def _legacy_scale(tensor) -> float:
    return float(np.float32(tensor.params.scale))


def _filter_quantization(weights, channels: int, op: str) -> AffineQuantization:
    """The filter's affine quantization, with one scale or one per output channel (TFLite's checks)."""
    quantization = weights.quantization
    if not isinstance(quantization, AffineQuantization) or quantization.scale.size == 0:
        raise KernelError(f"{op} filter must have affine quantization with scales")
    ensure(
        quantization.scale.size in (1, channels),
        f"{op} filter has {quantization.scale.size} scales for {channels} output channels",
    )
    return quantization


def output_multipliers(
    source, weights, output, channels: int, op: str, per_tensor_product: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """PopulateConvolutionQuantizationParams: per channel, input_scale * filter_scale / output_scale as
    a fixed-point multiplier and shift (in double; uint8 multiplies the two scales in float32 first)."""
    quantization = _filter_quantization(weights, channels, op)
    scales = quantization.scale.astype(np.float64)
    if scales.size > 1:
        ensure(
            source.type in (TensorType.INT8, TensorType.INT16),
            f"{op} per-channel quantization needs an int8 or int16 input",
        )
        ensure(weights.type == TensorType.INT8, f"{op} per-channel quantization needs an int8 filter")
        axis = quantization.quantized_dimension
        ensure(
            0 <= axis < len(weights.shape) and weights.shape[axis] == channels,
            f"{op} filter quantized dimension {axis} does not hold the {channels} output channels",
        )
    input_scale, output_scale = _legacy_scale(source), _legacy_scale(output)
    if per_tensor_product:
        product = float(np.float32(input_scale) * np.float32(_legacy_scale(weights)))
        ensure(product >= 0, f"{op} input scale * filter scale is negative")
        real = np.full(channels, product / output_scale if output_scale else np.inf)
    else:
        with np.errstate(all="ignore"):
            real = np.broadcast_to(input_scale * scales / output_scale, (channels,))
    return fp.quantize_multipliers(real)


def check_uint8_bias_scale(source, weights, bias, output, op: str) -> None:
    """GetQuantizedConvolutionMultipler: the bias scale must be input_scale * filter_scale, near enough."""
    if bias is None:
        return
    product = _legacy_scale(source) * _legacy_scale(weights)
    difference = abs(product - _legacy_scale(bias))
    ensure(
        difference / _legacy_scale(output) <= 0.02 if _legacy_scale(output) else difference == 0,
        f"{op} bias scale {_legacy_scale(bias)} is not input scale * filter scale ({product})",
    )


def integer_checks(source, weights, bias, output, op: str, bias_types) -> None:
    """The type, zero-point and bias checks every quantized convolution's Prepare makes."""
    ensure(
        output.type == source.type,
        f"{op} output type {output.type.name} != input type {source.type.name}",
    )
    expected_filter = TensorType.UINT8 if source.type == TensorType.UINT8 else TensorType.INT8
    ensure(
        weights.type == expected_filter,
        f"{op} of a {source.type.name} input needs a {expected_filter.name} filter, got {weights.type.name}",
    )
    if source.type != TensorType.UINT8:
        quantization = weights.quantization
        ensure(isinstance(quantization, AffineQuantization), f"{op} filter must have affine quantization")
        ensure(
            not np.any(quantization.zero_point),
            f"{op} filter zero points must be 0, got {quantization.zero_point.tolist()}",
        )
    if source.type == TensorType.INT16:
        ensure_eq(source.params.zero_point, 0, f"{op} int16 input zero point")
        ensure_eq(output.params.zero_point, 0, f"{op} int16 output zero point")
    if bias is not None:
        ensure(
            bias.type in bias_types,
            f"{op} bias of a {source.type.name} input must be {' or '.join(t.name for t in bias_types)}, "
            f"got {bias.type.name}",
        )
        ensure_eq(bias.params.zero_point, 0, f"{op} bias zero point")


def declared_bias_type(options, bias, op: str) -> TensorType | None:
    """16x8: the options' quantized_bias_type (INT32 or INT64, matching the bias), None when unset."""
    chosen = getattr(options, "quantized_bias_type", TensorType.FLOAT32)
    if chosen in (None, TensorType.FLOAT32):
        return None
    ensure(
        chosen in (TensorType.INT32, TensorType.INT64),
        f"{op} quantized_bias_type must be INT32 or INT64, got {TensorType(chosen).name}",
    )
    ensure(
        bias is None or bias.type == chosen,
        f"{op} bias type {bias.type.name if bias is not None else ''} != quantized_bias_type {TensorType(chosen).name}",
    )
    return TensorType(chosen)


def float_dtype(bound: float) -> type:
    """float32 when every partial sum of the products is an integer of magnitude below 2**24 (so exact
    in float32), float64 otherwise (exact below 2**53: 2**8 * 2**15 * 2**24 taps, never reached)."""
    return np.float32 if bound < _EXACT_FLOAT32 else np.float64


def exact_depth_chunks(matrix: np.ndarray, magnitude: int) -> tuple[tuple[int, int], ...]:
    """Ranges of a product's depth (the rows of its integer weight matrix [K, O]) over each of which
    every partial sum with inputs of magnitude up to `magnitude` stays below 2**24, so exact in
    float32: a product float_dtype gives float64 can be taken as float32 products over them, summed in
    float64 (exact too: each is an integer below 2**24, the total below 2**53)."""
    limit = (_EXACT_FLOAT32 - 1) // max(magnitude, 1)  # the most sum of |weights| a range may hold
    absolute = np.abs(matrix.astype(np.float64))
    chunks, first = [], 0
    running = np.zeros(matrix.shape[1])
    for row in range(matrix.shape[0]):
        running += absolute[row]
        if running.max(initial=0.0) > limit:
            chunks.append((first, row))
            first, running = row, absolute[row].copy()
    chunks.append((first, matrix.shape[0]))
    return tuple(chunks)


def output_activation_range(options, output) -> tuple[int, int]:
    low, high = RANGES[output.type]
    return fp.activation_range(
        options.fused_activation_function, _legacy_scale(output), output.params.zero_point, low, high
    )


def input_magnitude(source) -> int:
    """The largest |value| a quantized input holds (as staged: its zero point is not subtracted)."""
    low, high = RANGES[source.type]
    return max(abs(low), abs(high))


def filter_zero_offset(weights) -> int:
    """uint8 filters carry a zero point (subtracted from the weights); int8/int16 kernels need none."""
    return weights.params.zero_point if weights.type == TensorType.UINT8 else 0


def may_leave_int32(source, weight_sum: int, bias: np.ndarray | None) -> bool:
    """Whether |sum(w * (x - zero_point)) + bias| can reach 2**31 (then TFLite's int32 wraps)."""
    low, high = RANGES[source.type]
    zero_point = source.params.zero_point
    largest_bias = int(np.abs(bias.astype(np.int64)).max(initial=0)) if bias is not None else 2**31
    return max(abs(low - zero_point), abs(high - zero_point)) * weight_sum + largest_bias >= 2**31


def shared_constant(context, node, role: str, array: np.ndarray | None) -> np.ndarray | None:
    """An array prepare derived from the node's constant tensors (weights laid out for the product, a
    constant bias tiled over a row), as the model's interpreters share it (core/derived.py): the first
    interpreter's array, read-only. It depends on the node's constants, its kernel and the config, and
    beyond those on the input's shape only through its own shape (a folded bias row, tiles per output
    row), so role, dtype and shape complete the key."""
    if array is None:
        return None
    return derived_constant(context, node, f"{role} {array.dtype.str} {array.shape}", lambda: array)

"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, CONV_3D and CONV_3D_TRANSPOSE.

They share one geometry: TFLite's output size and leading padding per spatial dimension. Everything
derivable from shapes is planned in prepare; invoke makes a handful of NumPy calls whatever the size:
- CONV_2D / CONV_3D: the input is copied into a zero-bordered scratch when the windows reach padding
  (Staging), then a single copy moves every window (a strided view of it) into an im2col scratch, and
  one matrix product per group does the rest; a constant bias rides in the product as a column of ones.
  A 1x1, stride-1 convolution usually skips im2col: the [N*H*W, C] view of the input is the left operand.
- DEPTHWISE_CONV_2D: one np.einsum over a strided view of every tap of a padded copy of the input.
- TRANSPOSE_CONV / CONV_3D_TRANSPOSE multiply every input pixel by the whole filter matrix at once, then
  sum the products landing on each output: gathered with precomputed row indices, or scatter-added per
  tap (a *tap plan*: per kernel tap, the output positions it reaches and the inputs they read).
Constant filters are laid out for the matrix product once, in prepare (constants never change). The
temporaries are arena tensors, shared with other nodes: every invoke writes what it reads of them.

With context.exact_float_summation (the Interpreter sets it in subgraphs with hybrid ops, where a 1e-7
difference can become a quantization step downstream), the float CONV_2D and DEPTHWISE_CONV_2D sum in
LiteRT's own order, bit for bit: im2col goes [K, pixels] and an order-preserving einsum (or products and an
ordered reduction) replaces the matrix product, following the Eigen kernels LiteRT's CONV_2D picks by shape
and the host's cache sizes (fidelity/eigen_order.py);
DEPTHWISE_CONV_2D sums its bias and taps' products in order. Slower, so off by default (see below).

Quantized variants (CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV with uint8, int8 and int16x8
activations) run the same plans on integer values held in floats: the staged input, im2col and weights
are float32 or float64 arrays of integers, so the products and sums are exact as long as every partial
sum stays below 2**24 (float32) or 2**53 (float64) in magnitude. Prepare bounds the sums (the largest
input magnitude times the largest sum of |weights| of one output channel) and picks float32 only when
the bound is below 2**24. The input zero point is not subtracted from the input: the padding holds it
and the bias absorbs zero_point * sum(weights), exactly as gemmlowp/ruy do. The exact int32 accumulators
then go through the fixed-point requantization LiteRT's kernel applies (Requant below).

Hybrid variants (float32 input, int8 weights: CONV_2D and DEPTHWISE_CONV_2D) quantize each batch of the
input as TFLite does (quant/hybrid_inputs.py), accumulate exactly the same way, and scale back to float32.
Where LiteRT's x86 kernels are not exact, they are reproduced on x86 hosts (HostProfile.x86; ARM's NEON
kernels are exact): the per-tensor CONV_2D's SSE dot product (output channels not a multiple of 4) turns
weight -128 times a negative input into -128 * |input|, and the per-channel CONV_2D's weight row sums (for
the input zero point) add in int16 lanes that wrap. On every host the row sums are taken on the first
invoke after prepare only (stale when a runtime filter changes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.quantization import AffineQuantization
from ..core.types import AllocationType, BuiltinOperator, TensorType, storage_dtype
from ..errors import KernelError, ensure, ensure_eq, ensure_type
from ..fidelity.eigen_order import eigen_product, sequential_products, sum_in_order
from ..fidelity.ruy import gemm_rounding
from ..fidelity.sse import sign_transfer_split, weight_row_sums
from ..model.options import ActivationFunctionType, Padding
from .common import (
    activation_clamp,
    check_arity,
    clip,
    input_tensor,
    is_constant,
    optional_input_tensor,
    output_tensor,
    reject_quantized_or_hybrid,
    scratch_tensor,
    set_temporaries,
)
from .quant import fixed_point as fp
from .quant.hybrid_inputs import (
    quantize_rows_asymmetric,
    quantize_rows_symmetric,
)
from .registry import register_builtin, register_builtin_and_reference
from .windows import (
    Staging,
    Window,
    byte_strides,
    make_staging,
    output_size,
    padded_copies,
    padding_before_after,
    plan_window,
    staged_input,
    tap_plan,
)

# einsum's C function itself: np.einsum's Python layer costs more than a small depthwise layer (~1 us).
try:
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import c_einsum as _einsum

_FLOAT = (TensorType.FLOAT32,)
_INTEGER = (TensorType.UINT8, TensorType.INT8, TensorType.INT16)
_CONV_TYPES = (TensorType.FLOAT32, *_INTEGER)
_RANGES = {TensorType.UINT8: (0, 255), TensorType.INT8: (-128, 127), TensorType.INT16: (-32768, 32767)}
_FLOAT_TYPES = {np.dtype(np.float32): TensorType.FLOAT32, np.dtype(np.float64): TensorType.FLOAT64}
_EXACT_FLOAT32 = 1 << 24  # every integer of smaller magnitude is a float32, and so every sum of them
_ALL = slice(None)


def _check_float(tensors, roles, op: str) -> None:
    """Every tensor float32; the variants not implemented say so."""
    reject_quantized_or_hybrid(tensors[0], tensors[1], op)
    for tensor, role in zip(tensors, roles):
        ensure_type(tensor, _FLOAT, role, op)


def _check_bias(bias, channels: int, op: str) -> None:
    ensure_type(bias, _FLOAT, "bias", op)
    count = int(np.prod(bias.shape, dtype=np.int64))
    ensure_eq(count, channels, f"{op} bias size")


def _positive(values: Sequence[int], what: str) -> None:
    ensure(all(v > 0 for v in values), f"{what} must be positive, got {list(values)}")


def _constant_data(tensor) -> np.ndarray | None:
    return tensor.data if tensor is not None and is_constant(tensor) and tensor.data is not None else None


# --- quantized arithmetic shared by the three convolutions ----------------------------------------------


def _uniform(values: np.ndarray):
    """A per-channel parameter as one NumPy scalar when every channel has the same (faster to broadcast)."""
    return values[0] if values.size and np.all(values == values[0]) else values


@dataclass
class Requant:
    """Exact integer accumulators [..., C] to the output type, rounded as the kernel LiteRT runs rounds:

    - "simd": ruy's kernels and TFLite's NEON blocks (vqrdmulh then vrshl, LiteRT's x86 build runs them
      through an SSE translation): the high-half multiply and the right shift both round halves up, and
      two such roundings compose into one: floor((acc * m + 2**30 + 2**(30 + r)) / 2**(31 + r)), the
      output zero point joining the added constant;
    - "single": ruy's portable C++ kernel (fidelity/ruy.py): floor((acc * m + 2**(30 - e)) / 2**(31 - e))
      for TFLite's exponent e (one rounding, half up, a left shift inside the 64-bit shift), the result
      truncated to int32;
    - "scalar": TFLite's MultiplyByQuantizedMultiplier (the final shift rounds halves away from zero);
    - "wide": its int64 overload (16x8 kernels with int64 bias): the multiplier reduced to 16 bits, one
      rounding, the result truncated to int32.

    `scalar_from`: NEON's per-channel Quantize (depthwise and transposed int8/int16 outputs) rounds 8
    channels at a time and the last C % 8 channels in scalar code, from this channel on.
    `scalar_tail`: the flat uint8 Quantize rounds blocks of 16 values, its last size % 16 in scalar code.
    `wrap`: the accumulators may leave int32 (only when prepare could not bound them): wrap them.

    The accumulator is a float product (exact integers) plus per-channel integer terms (bias and
    zero-point sums). "simd" is computed in float64 when that is exact: acc * m * 2**left and the
    constant are integers below 2**53 (so the product, the sum and the floor are exact) and acc << left
    stays in int32 (no wrap): floor(product * m' + c') with m' = m * 2**(left - 31 - r) and
    c' = (constant + terms * m * 2**left) * 2**(-31 - r), four passes instead of seven in int64.
    """

    multiplier: np.ndarray  # int64 [C]
    shift: np.ndarray  # int64 [C]: TFLite's exponent, > 0 shifts left
    zero_point: int
    low: int
    high: int
    rounding: str = "simd"
    scalar_from: int | None = None
    scalar_tail: int = 0
    wrap: bool = False
    product_bound: int | None = None  # |product| bound for the float64 path (None: never)
    _left: Any = None
    _m: Any = None
    _add: Any = None
    _total: Any = None
    _add_zero_point: bool = True
    _fast: Any = None  # (terms, (m', c')) of the float64 path for constant terms
    _rows: Any = None  # ((m', c'), row width, m' and c' tiled over a row)

    def __post_init__(self) -> None:
        m = np.asarray(self.multiplier, np.int64).reshape(-1)
        s = np.asarray(self.shift, np.int64).reshape(-1)
        self.multiplier, self.shift = m, s
        left, right = np.maximum(s, 0), np.maximum(-s, 0)
        # the int64 overload and ruy's portable kernel fold a left shift into their total shift
        self._left = _uniform(left) if np.any(left) and self.rounding not in ("wide", "single") else None
        if self.rounding == "simd":
            total = 31 + right
            add = (np.int64(1) << 30) + np.where(right > 0, np.int64(1) << (30 + right), 0)
            # |acc * m| < 2**62 and add < 2**62: the zero point joins the sum when it keeps it in int64
            fold = abs(self.zero_point) * (2.0 ** float(total.max(initial=0))) < 2.0**60
            if fold:
                add = add + (np.int64(self.zero_point) << total)
            self._add_zero_point = not fold
            self._m, self._add, self._total = _uniform(m), _uniform(add), _uniform(total)
        elif self.rounding == "single":
            total = 31 - s
            ensure(bool(np.all(total >= 1)), f"requantization exponent {int(s.max())} is above 30")
            self._m, self._add, self._total = (
                _uniform(m),
                _uniform(np.int64(1) << (total - 1)),
                _uniform(total),
            )
        elif self.rounding == "wide":
            reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
            total = 15 - s
            self._m, self._add, self._total = (
                _uniform(reduced),
                _uniform(np.int64(1) << (total - 1)),
                _uniform(total),
            )

    def _float_constants(self, terms: np.ndarray | None):
        """(m', c') of the float64 path for these per-channel terms, or None when it is not exact."""
        if self.rounding != "simd" or self.wrap or self.product_bound is None:
            return None
        fast = self._fast
        if fast is not None and fast[0] is terms:
            return fast[1]
        channels = self.multiplier.size
        terms_list = (
            [0] * channels if terms is None else [int(t) for t in np.broadcast_to(terms, (channels,))]
        )
        scales, constants = [], []
        right = np.maximum(-self.shift, 0)
        result = None
        for c in range(channels):
            m, left, r = int(self.multiplier[c]), max(int(self.shift[c]), 0), int(right[c])
            total = 31 + r
            constant = (1 << 30) + ((1 << (30 + r)) if r else 0) + (self.zero_point << total)
            constant += terms_list[c] * m << left
            if (self.product_bound + abs(terms_list[c])) << left >= 2**31:
                break  # acc << left could wrap in int32
            if (self.product_bound * m << left) + abs(constant) >= 2**53:
                break
            scales.append(m * 2.0 ** (left - total))
            constants.append(constant * 2.0**-total)
        else:
            result = (np.array(scales, np.float64), np.array(constants, np.float64))
        self._fast = (terms, result)
        return result

    def _scalar(self, acc: np.ndarray, channels) -> np.ndarray:
        result = fp.multiply_by_quantized_multiplier(acc, self.multiplier[channels], self.shift[channels])
        return result + self.zero_point

    def requantize(self, product: np.ndarray, terms, wide: np.ndarray, out: np.ndarray) -> None:
        """out = the requantized product + terms. `product`: exact integer-valued floats shaped like
        `out` ([..., W, C]); `terms`: int64 per-channel terms or None; `wide`: an int64 scratch shaped
        like `out`. The float64 path runs on rows of W*C values (per-channel constants tiled over a
        row: C alone is too short an inner loop)."""
        fast = self._float_constants(terms)
        if fast is None:
            np.copyto(wide, product, casting="unsafe")  # exact integers
            if terms is not None:
                np.add(wide, terms, out=wide)
            self.apply(wide, out)
            return
        width = out.shape[-2] * out.shape[-1] if out.ndim > 1 else out.shape[-1]
        rows = self._rows
        if rows is None or rows[0] is not fast or rows[1] != width:
            rows = self._rows = (fast, width, *(np.tile(v, width // v.size) for v in fast))
        scale, constant = rows[2], rows[3]
        t = wide.view(np.float64).reshape(-1, width)
        np.multiply(product.reshape(-1, width), scale, out=t)
        np.add(t, constant, out=t)
        np.floor(t, out=t)
        clip(t, self.low, self.high, out=t)
        np.copyto(out.reshape(-1, width), t, casting="unsafe")
        channels = out.shape[-1]
        if self.scalar_from is not None and self.scalar_from < channels:
            tail = (Ellipsis, slice(self.scalar_from, None))
            acc = product[tail].astype(np.int64)
            if terms is not None:
                acc += np.broadcast_to(terms, (channels,))[self.scalar_from :]
            out[tail] = np.clip(self._scalar(acc, slice(self.scalar_from, None)), self.low, self.high)
        if self.scalar_tail:
            flat = out.reshape(-1)
            count = self.scalar_tail
            acc = product.reshape(-1)[-count:].astype(np.int64)
            if terms is not None:
                acc += np.tile(np.broadcast_to(terms, (channels,)), count // channels + 2)[-count:]
            values = fp.multiply_by_quantized_multiplier(acc, self.multiplier[0], self.shift[0])
            flat[-count:] = np.clip(values + self.zero_point, self.low, self.high)

    def finish(self, scaled: np.ndarray, out: np.ndarray) -> None:
        """The float64 path's last steps on values already multiplied and offset (in place)."""
        width = out.shape[-2] * out.shape[-1] if out.ndim > 1 else out.shape[-1]
        rows = scaled.reshape(-1, width)
        np.floor(rows, out=rows)
        clip(rows, self.low, self.high, out=rows)
        np.copyto(out.reshape(-1, width), rows, casting="unsafe")

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:
        """Requantize `acc` (int64, overwritten) into `out` (same shape, the output's integer type)."""
        if self.wrap:
            fp.wrap(acc, out=acc)
        channels = acc.shape[-1]
        tail = None
        if self.rounding != "scalar" and self.scalar_from is not None and self.scalar_from < channels:
            tail = self._scalar(acc[..., self.scalar_from :], slice(self.scalar_from, None))
        flat_tail = None
        if self.rounding != "scalar" and self.scalar_tail:
            flat = acc.reshape(-1)[-self.scalar_tail :]  # per-tensor (uint8): one multiplier
            flat_tail = fp.multiply_by_quantized_multiplier(flat, self.multiplier[0], self.shift[0])
            flat_tail += self.zero_point
        if self.rounding == "scalar":
            acc[...] = self._scalar(acc, slice(None))
        else:
            if self._left is not None:
                np.left_shift(acc, self._left, out=acc)
                fp.wrap(acc, out=acc)  # C shifts (multiplies) in int32
            np.multiply(acc, self._m, out=acc)
            np.add(acc, self._add, out=acc)
            np.right_shift(acc, self._total, out=acc)
            if self.rounding in ("wide", "single"):
                fp.wrap(acc, out=acc)
            if self.rounding != "wide" and self._add_zero_point and self.zero_point:
                np.add(acc, self.zero_point, out=acc)
        if tail is not None:
            acc[..., self.scalar_from :] = tail
        if flat_tail is not None:
            acc.reshape(-1)[-self.scalar_tail :] = flat_tail
        clip(acc, self.low, self.high, out=out, casting="unsafe")


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


def _multipliers(
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


def _check_uint8_bias_scale(source, weights, bias, output, op: str) -> None:
    """GetQuantizedConvolutionMultipler: the bias scale must be input_scale * filter_scale, near enough."""
    if bias is None:
        return
    product = _legacy_scale(source) * _legacy_scale(weights)
    difference = abs(product - _legacy_scale(bias))
    ensure(
        difference / _legacy_scale(output) <= 0.02 if _legacy_scale(output) else difference == 0,
        f"{op} bias scale {_legacy_scale(bias)} is not input scale * filter scale ({product})",
    )


def _integer_checks(source, weights, bias, output, op: str, bias_types) -> None:
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


def _quantized_bias_type(options, bias, op: str) -> TensorType | None:
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


def _float_dtype(bound: float) -> type:
    """float32 when every partial sum of the products is an integer of magnitude below 2**24 (so exact
    in float32), float64 otherwise (exact below 2**53: 2**8 * 2**15 * 2**24 taps, never reached)."""
    return np.float32 if bound < _EXACT_FLOAT32 else np.float64


def _activation_range(options, output) -> tuple[int, int]:
    low, high = _RANGES[output.type]
    return fp.activation_range(
        options.fused_activation_function, _legacy_scale(output), output.params.zero_point, low, high
    )


def _input_magnitude(source) -> int:
    """The largest |value| a quantized input holds (as staged: its zero point is not subtracted)."""
    low, high = _RANGES[source.type]
    return max(abs(low), abs(high))


def _filter_offset(weights) -> int:
    """uint8 filters carry a zero point (subtracted from the weights); int8/int16 kernels need none."""
    return weights.params.zero_point if weights.type == TensorType.UINT8 else 0


def _may_leave_int32(source, weight_sum: int, bias: np.ndarray | None) -> bool:
    """Whether |sum(w * (x - zero_point)) + bias| can reach 2**31 (then TFLite's int32 wraps)."""
    low, high = _RANGES[source.type]
    zero_point = source.params.zero_point
    largest_bias = int(np.abs(bias.astype(np.int64)).max(initial=0)) if bias is not None else 2**31
    return max(abs(low - zero_point), abs(high - zero_point)) * weight_sum + largest_bias >= 2**31


# --- CONV_2D and CONV_3D: im2col and one matrix product per group --------------------------------------


@dataclass
class IntegerConv:
    """A quantized CONV_2D's own plan: its requantization and the zero-point terms of its bias."""

    requant: Requant
    input_zero_point: int  # the padding holds it; sum(w * (x - zp)) = sum(w * x) - zp * sum(w)
    filter_offset: int  # uint8 filters: subtracted from the weights
    dtype: Any
    bias: np.ndarray | None = None  # int64 [O]: bias - zp * sum(w), for a constant bias and filter
    sums: np.ndarray | None = None  # int64 [O]: sum(w) per output channel, for a constant filter
    scaled: bool = False  # the product is the requantized value before its floor (Requant.finish)

    def weights(self, filt: np.ndarray, layout: Callable[[np.ndarray], np.ndarray]):
        """The filter as the product's float matrix, and its sum per output channel."""
        values = filt.astype(np.int64) - self.filter_offset
        sums = values.reshape(values.shape[0], -1).sum(axis=1)
        return np.ascontiguousarray(layout(values.astype(self.dtype))), sums

    def bias_terms(self, bias: np.ndarray | None, sums: np.ndarray) -> np.ndarray:
        terms = -self.input_zero_point * sums
        return terms if bias is None else terms + bias.reshape(-1).astype(np.int64)


@dataclass
class HybridConv:
    """A hybrid (float32 input, int8 filter) CONV_2D: how it quantizes its input and scales back."""

    per_channel: bool  # asymmetric input quantization and per-channel filter scales (else symmetric)
    scales: np.ndarray  # float32 [O] (per_channel) or [1]: the filter scales
    reference: bool  # per channel, BUILTIN_REF / grouped: (acc * filter scale) * input scale
    low: float
    high: float
    x86: bool  # the host runs LiteRT's x86 build: its SSE kernels' quirks apply (HostProfile.x86)
    # per tensor, O % 4 != 0, x86 (TFLite's SSE dot product, not ruy): the im2col columns it multiplies
    # in 16-value blocks, where a weight of -128 meets a negative input with the wrong sign; 0: exact
    blocked: int = 0
    row_sums: bool = False  # per channel, optimized: the zero point times the weight rows' sums
    flipped: np.ndarray | None = None  # [1, K, O]: the weights of -128 the SSE kernel flips (constant)
    stale: np.ndarray | None = None  # float64 [O]: exact row sums - the ones TFLite uses (None: equal)
    used_sums: np.ndarray | None = None  # int64 [O]: the row sums TFLite took (runtime filter)
    scale_row: np.ndarray | None = None  # per channel: the filter scales tiled over an output row
    bias_row: np.ndarray | None = None  # a constant bias tiled over an output row

    def split(self, raw: np.ndarray, layout, dtype):
        """The filter [O, ...] as the product's matrix, and the matrix of its flipped weights (or None)."""
        flat = raw.reshape(raw.shape[0], -1)
        parts = sign_transfer_split(flat, self.blocked) if self.blocked else None
        if parts is None:
            return np.ascontiguousarray(layout(raw.astype(dtype))), None
        kept, flipped = (np.ascontiguousarray(layout(p.reshape(raw.shape).astype(dtype))) for p in parts)
        return kept, flipped

    def stale_sums(self, raw: np.ndarray) -> np.ndarray | None:
        """Exact row sums minus the ones TFLite subtracts (taken from the filter of the first invoke
        after prepare; on x86, SseReductionSumVector's, wrapping in int16 lanes), or None when they agree."""
        flat = raw.reshape(raw.shape[0], -1)
        if self.used_sums is None:
            self.used_sums = weight_row_sums(flat, self.x86)
        difference = flat.astype(np.int64).sum(axis=1) - self.used_sums
        return difference.astype(np.float64) if difference.any() else None


@dataclass
class ConvState:
    """Per-node state: the temporaries made in init, and what prepare derived."""

    scratch: int  # im2col
    stage: int  # the padded input
    acc: int = -1  # quantized and hybrid: the product [pixels, O] (float32 or float64)
    wide: int = -1  # quantized: int64 accumulators [pixels, O]; hybrid: the quantized input
    # "direct": the input is the left operand (1x1, stride 1); "im2col": windows copied into
    # [pixels, G, K/G]; "im2col_t": into [K, pixels], for short window rows, where [pixels, K] copies
    # would run in short pieces; "exact": into [G, K/G, pixels], summed in LiteRT's order (the sums,
    # [O, pixels], in the `acc` temporary)
    mode: str = "im2col"
    # exact mode: the cache sizes of LiteRT's optimized (Eigen) order; None: in window order
    eigen: tuple[int, int, int] | None = None
    groups: int = 1
    staging: Staging | None = None  # None: the input itself is read (no padding)
    pad_value: int = 0  # what the staging's borders hold (a quantized input's zero point)
    # the windows: their shape, their byte strides in the staged input and in the im2col scratch
    windows: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] = ((), (), ())
    depth: int = 0  # im2col columns per group (a last column of ones when the bias is folded in)
    folded: bool = False  # the weights carry the bias as their last row
    dtype: Any = np.float32  # the staged input, im2col, weights and product
    weights: np.ndarray | None = None  # [G, K/G (+1), O/G] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    bias: int = -1  # the bias tensor, or -1
    bias_row: np.ndarray | None = None  # a constant bias tiled over the output's last spatial dimension
    clamp: Callable[[np.ndarray], None] | None = None
    integer: IntegerConv | None = None
    hybrid: HybridConv | None = None


# A quantized CONV_2D whose windows hold at most this many values, no more than it has output channels
# and no more than 8 per output pixel, folds its requantization into a float64 product (two passes over
# the output saved); the others keep a float32 im2col and product (half the cost of the copy, of the
# weights' reads and of the product) and requantize after it.
_SCALED_DEPTH = 128
# im2col goes [K, pixels] when the contiguous run of a window row (kernel width x channels) is shorter.
_TRANSPOSED_IM2COL_RUN = 16
# A 1x1 convolution copies its input into im2col, to fold the bias in, when the output has this many more
# elements than the input: adding the bias to them costs more than the copy.
_FOLD_GAIN = 32768


def _conv_init(context, buffer, length):
    stage, scratch, acc, wide = context.add_tensors(4)
    return ConvState(scratch=scratch, stage=stage, acc=acc, wide=wide)


def _owned(state: ConvState) -> tuple[int, ...]:
    return (state.stage, state.scratch, state.acc, state.wide)


def _bias_row(bias: np.ndarray, width: int) -> np.ndarray:
    """The bias repeated over one output row, so that adding it runs one long loop per row."""
    return np.tile(bias.reshape(-1), width)


def _plan_conv(
    context,
    state: ConvState,
    source_shape: tuple[int, ...],
    out_channels: int,
    out_spatial: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: tuple[int, ...],
    groups: int,
    weights_matrix: np.ndarray | None,
    fold_bias: np.ndarray | None,
    dtype: Any = np.float32,
    source_itemsize: int = 4,
    direct: bool = True,
    exact: bool = False,
) -> list[int]:
    """The im2col plan of an N-d convolution and its constant weight matrix; returns the temporaries
    it uses.

    The input is copied into a bordered scratch (of `dtype`) when the windows reach padding; then one
    copy moves every window, a strided view of it, into the im2col scratch. A constant bias with a
    constant filter (`fold_bias`, with `weights_matrix`) is folded into the product: a column of ones in
    im2col, a row of biases in the weights. `direct`: a 1x1 stride-1 convolution may use the input
    itself as the left operand (its elements must then be `dtype`). `exact` (float32 only): im2col
    goes [G, K/G, pixels] for sequential_products, the bias is never folded (it comes last).
    """
    n, *in_spatial, channels = source_shape
    group_channels = channels // groups
    item = np.dtype(dtype).itemsize
    state.groups, state.staging, state.dtype = groups, None, np.dtype(dtype)
    state.folded = weights_matrix is not None and fold_bias is not None and not exact
    pixels = n * int(np.prod(out_spatial, dtype=np.int64))
    pointwise = all(k == 1 for k in kernel) and all(s == 1 for s in strides) and not any(pads)
    temporaries = []
    gain = state.folded and pixels * (out_channels - channels) > _FOLD_GAIN
    if pixels == 0 or (direct and pointwise and not gain and not exact):
        state.mode, state.folded = "direct", False
    else:
        run = group_channels * (kernel[-1] if dilation[-1] == 1 else 1)
        transposed = groups == 1 and run < _TRANSPOSED_IM2COL_RUN
        state.mode = "exact" if exact else "im2col_t" if transposed else "im2col"
        extents = tuple(
            (o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_spatial, strides, kernel, dilation)
        )
        staged, read = tuple(source_shape), source_itemsize
        if any(pads) or any(e > size for e, size in zip(extents, in_spatial)):
            staged, read = (n, *extents, channels), item
            scratch_tensor(context, state.stage, _FLOAT_TYPES[state.dtype], staged)  # Limits, then the mask
            state.staging = make_staging(staged, padded_copies(source_shape, extents, pads), item)
            temporaries.append(state.stage)
        batch, *steps, _ = byte_strides(staged, read)
        # the windows, [N, *out, G, *kernel, C/G], and where im2col keeps them
        shape = (n, *out_spatial, groups, *kernel, group_channels)
        view = (batch, *(s * t for s, t in zip(strides, steps)), group_channels * read)
        view += (*(d * t for d, t in zip(dilation, steps)), read)
        kernel_size = int(np.prod(kernel, dtype=np.int64)) * group_channels
        state.depth = kernel_size + state.folded
        if exact:  # [G, *kernel, C/G, N, *out] into [G, K/G, pixels]; the sums [O, pixels]
            spatial = len(kernel)
            order = (spatial + 1, *range(spatial + 2, len(shape)), *range(spatial + 1))
            shape, view = tuple(shape[i] for i in order), tuple(view[i] for i in order)
            columns = byte_strides(shape, item)
            scratch_tensor(context, state.scratch, _FLOAT_TYPES[state.dtype], (groups * kernel_size, pixels))
            scratch_tensor(context, state.acc, _FLOAT_TYPES[state.dtype], (out_channels, pixels))
            temporaries.append(state.acc)
        elif transposed:  # [*kernel, C, N, *out] into [K (+1), pixels]
            order = (*range(len(kernel) + 2, len(shape)), *range(len(kernel) + 1))
            shape, view = tuple(shape[i] for i in order), tuple(view[i] for i in order)
            columns = byte_strides(shape, item)
            scratch_tensor(context, state.scratch, _FLOAT_TYPES[state.dtype], (state.depth, pixels))
        else:  # into [pixels, G, K/G (+1)]
            columns = byte_strides((n, *out_spatial), item * state.depth * groups)
            columns += (state.depth * item, *byte_strides((*kernel, group_channels), item))
            scratch_tensor(context, state.scratch, _FLOAT_TYPES[state.dtype], (pixels, groups * state.depth))
        state.windows = (shape, view, columns)
        temporaries.append(state.scratch)
    state.weights = None
    if weights_matrix is not None:
        w = weights_matrix
        if state.folded:
            w = np.concatenate((w, fold_bias.reshape(groups, 1, -1).astype(dtype)), axis=1)
        state.weights = np.ascontiguousarray(w, dtype=dtype)
    return temporaries


def _plan_float_bias(state: ConvState, bias, out_spatial: tuple[int, ...]) -> None:
    """A bias not folded into the product is added after it, tiled over an output row when constant."""
    state.bias, state.bias_row = -1, None
    if bias is not None and not state.folded:
        state.bias = bias.index
        if _constant_data(bias) is not None and out_spatial:
            state.bias_row = _bias_row(bias.data, out_spatial[-1])


def _conv_product(tensors, state: ConvState, x: np.ndarray, w: np.ndarray, rows: np.ndarray) -> None:
    """rows [pixels, O] = the windows of x times the weights (one matrix product per group)."""
    groups = state.groups
    pixels = rows.shape[0]
    if state.mode == "direct":
        lhs = x.reshape(pixels, -1)
    else:
        x = staged_input(state.staging, x, tensors, state.stage, state.pad_value)
        col = tensors[state.scratch].data
        shape, view, columns = state.windows
        np.copyto(np.ndarray(shape, col.dtype, col, 0, columns), np.ndarray(shape, x.dtype, x, 0, view))
        if state.mode == "im2col_t":
            if state.folded:
                col[-1] = 1
            lhs = col.T
        else:
            if state.folded:
                col.reshape(pixels, groups, state.depth)[:, :, -1] = 1
            lhs = col
    if groups == 1:
        np.matmul(lhs, w[0], out=rows)
    else:
        lhs = lhs.reshape(pixels, groups, -1).transpose(1, 0, 2)
        np.matmul(lhs, w, out=rows.reshape(pixels, groups, -1).transpose(1, 0, 2))


def _conv_exact_product(tensors, state: ConvState, x: np.ndarray, w: np.ndarray, rows: np.ndarray) -> None:
    """rows [pixels, O] = the windows of x times the weights [G, K/G, O/G] (+ the bias), each sum taken
    in LiteRT's order (see the top), one float32 rounding per product and per addition."""
    x = staged_input(state.staging, x, tensors, state.stage, state.pad_value)
    col = tensors[state.scratch].data
    shape, view, columns = state.windows
    np.copyto(np.ndarray(shape, col.dtype, col, 0, columns), np.ndarray(shape, x.dtype, x, 0, view))
    groups, pixels = state.groups, rows.shape[0]
    sums = tensors[state.acc].data
    w = np.ascontiguousarray(w)  # a runtime filter (the layout transposes it)
    if state.eigen:
        eigen_product(col, w[0], sums, state.eigen)
    else:
        sequential_products(col.reshape(groups, -1, pixels), w, sums.reshape(groups, -1, pixels))
    if state.bias >= 0:  # LiteRT adds the bias to the finished sums
        np.add(sums.T, tensors[state.bias].data.reshape(-1), out=rows)
    else:
        np.copyto(rows, sums.T)


def _conv_compute(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    x = tensors[node.inputs[0]].data
    pixels = out.size // out.shape[-1]
    rows = out.reshape(pixels, -1)
    w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
    if state.mode == "exact":
        _conv_exact_product(tensors, state, x, w, rows)
        if state.clamp is not None:
            state.clamp(out)
        return
    _conv_product(tensors, state, x, w, rows)
    if state.bias >= 0:
        bias_row = state.bias_row
        if bias_row is None:
            bias_row = _bias_row(tensors[state.bias].data, out.shape[-2])
        lines = out.reshape(-1, bias_row.shape[0])
        np.add(lines, bias_row, out=lines)
    if state.clamp is not None:
        state.clamp(out)


def _conv2d_common(context, node):
    """The checks and geometry every CONV_2D variant shares."""
    check_arity(node, (2, 3))
    options = node.builtin_data
    ensure(len(node.inputs) == 3, "has_bias was not true.")  # TFLite's CONV_2D always needs its bias
    source, weights, bias = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure_type(source, _CONV_TYPES, "input", "CONV_2D")
    ensure_eq(len(source.shape), 4, "CONV_2D input rank")
    ensure_eq(len(weights.shape), 4, "CONV_2D filter rank")
    _, h, w, channels = source.shape
    out_channels, kh, kw, filter_channels = weights.shape
    ensure(
        h > 0 and w > 0 and channels > 0 and min(weights.shape) > 0,
        "CONV_2D needs non-empty input and filter",
    )
    ensure_eq(channels % filter_channels, 0, "CONV_2D input channels % filter input channels")
    groups = channels // filter_channels
    ensure_eq(out_channels % groups, 0, "CONV_2D output channels % groups")
    count = int(np.prod(bias.shape, dtype=np.int64))
    ensure_eq(count, out_channels, "CONV_2D bias size")
    dilation = (options.dilation_h_factor, options.dilation_w_factor)
    window = plan_window(options, (h, w), (kh, kw), dilation, checked=True)
    per_group = out_channels // groups

    def layout(filt: np.ndarray) -> np.ndarray:  # [O, KH, KW, Cg] -> [G, KH*KW*Cg, O/G]
        return filt.reshape(groups, per_group, -1).transpose(0, 2, 1)

    return options, source, weights, bias, output, window, groups, layout


def conv2d_prepare(optimized: bool):
    def prepare(context, node):
        options, source, weights, bias, output, window, groups, layout = _conv2d_common(context, node)
        state = node.user_data
        state.layout, state.integer, state.hybrid, state.pad_value = layout, None, None, 0
        n, out_channels = source.shape[0], weights.shape[0]
        context.resize_tensor(output, (n, *window.out, out_channels))
        if source.type in _INTEGER:
            _conv2d_integer(context, node, state, options, source, weights, bias, output, window, optimized)
            return
        if weights.type in (TensorType.INT8, TensorType.UINT8, TensorType.INT4):
            _conv2d_hybrid(context, node, state, options, source, weights, bias, output, window, optimized)
            return
        for tensor, role in ((weights, "filter"), (output, "output"), (bias, "bias")):
            ensure_type(tensor, _FLOAT, role, "CONV_2D")
        constant = _constant_data(weights)
        matrix = layout(constant) if constant is not None else None
        temporaries = _plan_conv(
            context,
            state,
            tuple(source.shape),
            out_channels,
            window.out,
            window.kernel,
            window.strides,
            window.dilation,
            (window.pads[0][0], window.pads[1][0]),
            groups,
            matrix,
            _constant_data(bias) if matrix is not None else None,
            exact=context.exact_float_summation,
        )
        # LiteRT runs its reference kernel for groups; Eigen's blocking depends on the host's caches
        state.eigen = context.host.caches_for_eigen if optimized and groups == 1 else None
        _plan_float_bias(state, bias, window.out)
        set_temporaries(context, node, _owned(state), temporaries)
        state.clamp = activation_clamp(options.fused_activation_function)

    return prepare


def _conv2d_integer(context, node, state, options, source, weights, bias, output, window, optimized):
    """CONV_2D with uint8, int8 or int16 activations: the exact accumulators through ruy's (or, grouped
    and in BUILTIN_REF, the reference kernel's) requantization."""
    op = "CONV_2D"
    out_channels = weights.shape[0]
    wide_types = (
        (TensorType.INT32, TensorType.INT64) if source.type == TensorType.INT16 else (TensorType.INT32,)
    )
    _integer_checks(source, weights, bias, output, op, wide_types)
    uint8 = source.type == TensorType.UINT8
    if source.type == TensorType.INT16:
        chosen = _quantized_bias_type(options, bias, op)
        # TFLite's 16x8 kernel reads the bias as int64 unless quantized_bias_type says INT32
        ensure(
            bias.type == TensorType.INT64 or chosen == TensorType.INT32,
            f"{op} with int16 input and an INT32 bias needs quantized_bias_type INT32 "
            "(TFLite would read the bias as int64)",
        )
    if uint8:
        _check_uint8_bias_scale(source, weights, bias, output, op)
    multiplier, shift = _multipliers(source, weights, output, out_channels, op, per_tensor_product=uint8)
    low, high = _activation_range(options, output)
    groups = source.shape[3] // weights.shape[3]
    # int64 bias: the reference kernel; grouped: the reference kernel too; else cpu_backend_gemm
    if bias.type == TensorType.INT64:
        rounding = "wide"
    elif optimized and groups == 1:
        rounding = gemm_rounding(
            context.host,
            int16=source.type == TensorType.INT16,
            uint8=uint8,
            one_column=source.shape[0] * window.out[0] * window.out[1] == 1,
            rows=out_channels,
            depth=int(np.prod(weights.shape[1:])),
        )
    else:
        rounding = "scalar"
    offset = _filter_offset(weights)
    magnitude = _input_magnitude(source)
    zero_point = source.params.zero_point
    constant = _constant_data(weights)
    if constant is not None:
        sums_abs = np.abs(constant.astype(np.int64) - offset).reshape(out_channels, -1).sum(axis=1)
        bound = magnitude * int(sums_abs.max(initial=0))
    else:
        bound = magnitude * int(np.prod(weights.shape[1:])) * (255 if uint8 else 128)
    dtype = _float_dtype(bound)
    constant_bias = _constant_data(bias)
    wrap = rounding != "wide" and _may_leave_int32(source, bound // magnitude, constant_bias)
    requant = Requant(multiplier, shift, output.params.zero_point, low, high, rounding, wrap=wrap)
    requant.product_bound = bound  # the staged input is raw: |x| <= magnitude
    integer = IntegerConv(requant, zero_point, offset, dtype)
    matrix = fold = None
    if constant is not None:
        matrix, integer.sums = integer.weights(constant, state.layout)
        if constant_bias is not None:
            integer.bias = integer.bias_terms(constant_bias, integer.sums)
            fast = requant._float_constants(integer.bias)
            depth = int(np.prod(weights.shape[1:]))
            pixels = source.shape[0] * window.out[0] * window.out[1]
            if fast is not None and depth <= min(_SCALED_DEPTH, out_channels, 8 * pixels):
                # the requantization's float64 affine map rides in the product: the weights scaled by
                # m', the constant c' in a row of the weights (exact for the same reason)
                dtype = integer.dtype = np.float64
                groups_matrix = matrix.astype(np.float64)
                matrix = groups_matrix * fast[0].reshape(groups, 1, -1)
                fold, integer.scaled = fast[1], True
    state.integer = integer
    state.pad_value = zero_point
    temporaries = _plan_conv(
        context,
        state,
        tuple(source.shape),
        out_channels,
        window.out,
        window.kernel,
        window.strides,
        window.dilation,
        (window.pads[0][0], window.pads[1][0]),
        groups,
        matrix,
        fold,  # otherwise the bias terms are added to the exact accumulators
        dtype,
        storage_dtype(source.type).itemsize,
        direct=False,  # im2col converts the integers to floats
    )
    pixels = source.shape[0] * window.out[0] * window.out[1]
    if pixels:
        scratch_tensor(context, state.acc, _FLOAT_TYPES[np.dtype(dtype)], (pixels, out_channels))
        temporaries.append(state.acc)
        if not integer.scaled:
            scratch_tensor(context, state.wide, TensorType.INT64, (pixels, out_channels))
            temporaries.append(state.wide)
    set_temporaries(context, node, _owned(state), temporaries)


def _conv2d_hybrid(context, node, state, options, source, weights, bias, output, window, optimized):
    """CONV_2D of a float32 input with int8 weights: TFLite's EvalHybrid (per-tensor filter scale,
    symmetric input quantization) or EvalHybridPerChannel (distinct per-channel scales, or groups:
    asymmetric input quantization)."""
    op = "CONV_2D"
    if weights.type != TensorType.INT8:
        raise KernelError(
            f"{op} of a FLOAT32 input with {weights.type.name} weights (hybrid quantization) is not supported yet"
        )
    ensure_type(output, _FLOAT, "output", op)
    ensure_type(bias, _FLOAT, "bias", op)
    out_channels = weights.shape[0]
    groups = source.shape[3] // weights.shape[3]
    quantization = weights.quantization
    ensure(
        isinstance(quantization, AffineQuantization) and quantization.scale.size > 0,
        f"{op} hybrid filter must have affine quantization with scales",
    )
    scales = quantization.scale.astype(np.float32)
    axis = quantization.quantized_dimension
    # TFLite's hybrid Prepare wants a scale per output channel (equal scales: per-tensor arithmetic)
    ensure(
        axis == 0 and scales.size == out_channels,
        f"{op} hybrid filter has {scales.size} scales for {out_channels} output channels "
        f"(quantized dimension {axis})",
    )
    per_channel = bool(scales.size > 1 and np.any(scales != scales[0])) or groups != 1
    scales = np.broadcast_to(scales, (out_channels,)).astype(np.float32) if per_channel else scales[:1]
    low, high = _float_range(options.fused_activation_function)
    reference = per_channel and (not optimized or groups != 1)
    hybrid = state.hybrid = HybridConv(per_channel, scales, reference, low, high, context.host.x86)
    depth = int(np.prod(weights.shape[1:]))
    # Per tensor, both resolvers run optimized_ops::HybridConv: ruy (exact) when O % 4 == 0, else the SSE
    # kernel on x86 (NEON's, exact, on ARM); per channel, the optimized kernel subtracts zero point times
    # the row sums.
    hybrid.blocked = depth & ~15 if hybrid.x86 and not per_channel and out_channels % 4 else 0
    hybrid.row_sums = per_channel and not reference
    constant = _constant_data(weights)
    # |q - offset| <= 255 (asymmetric) or 127 (symmetric); the flipped weights' product is bounded by
    # the same sum of |w| (they are split off the filter)
    magnitude = 255 if per_channel else 127
    if constant is not None:
        bound = magnitude * int(np.abs(constant.astype(np.int64)).reshape(out_channels, -1).sum(axis=1).max())
    else:
        bound = magnitude * 128 * depth
    dtype = _float_dtype(bound)
    matrix = None
    if constant is not None:
        matrix, hybrid.flipped = hybrid.split(constant, state.layout, dtype)
        if hybrid.row_sums:
            hybrid.stale = hybrid.stale_sums(constant)
    temporaries = _plan_conv(
        context,
        state,
        tuple(source.shape),
        out_channels,
        window.out,
        window.kernel,
        window.strides,
        window.dilation,
        (window.pads[0][0], window.pads[1][0]),
        groups,
        matrix,
        None,
        dtype,
        np.dtype(dtype).itemsize,
    )
    if per_channel:
        hybrid.scale_row = _bias_row(scales, window.out[1])
    constant_bias = _constant_data(bias)
    if constant_bias is not None:
        hybrid.bias_row = _bias_row(constant_bias.astype(np.float32), window.out[1])
    pixels = source.shape[0] * window.out[0] * window.out[1]
    if pixels:
        if dtype != np.float32:  # the quantized input, as the product's type
            scratch_tensor(context, state.wide, _FLOAT_TYPES[np.dtype(dtype)], source.shape)
            temporaries.append(state.wide)
        scratch_tensor(context, state.acc, _FLOAT_TYPES[np.dtype(dtype)], (pixels, out_channels))
        temporaries.append(state.acc)
    set_temporaries(context, node, _owned(state), temporaries)


def _float_range(activation) -> tuple[float, float]:
    """CalculateActivationRange: the float clamp of a fused activation (none for other activations)."""
    return {
        ActivationFunctionType.RELU: (0.0, np.inf),
        ActivationFunctionType.RELU6: (0.0, 6.0),
        ActivationFunctionType.RELU_N1_TO_1: (-1.0, 1.0),
    }.get(activation, (-np.inf, np.inf))


def _quantize_input(x: np.ndarray, per_channel: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Each batch of a hybrid kernel's input quantized (asymmetrically when `per_channel`), as float32
    (q - zero point) values shaped like x (exact); the per-batch scaling factors and zero points."""
    rows = x.reshape(x.shape[0], -1)
    if per_channel:
        quantized, scales, zero_points = quantize_rows_asymmetric(rows, centered=True)
    else:
        (quantized, scales), zero_points = quantize_rows_symmetric(rows), None
    return quantized.reshape(x.shape), scales, zero_points


def _conv2d_hybrid_invoke(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    hybrid = state.hybrid
    quantized, scales, zero_points = _quantize_input(tensors[node.inputs[0]].data, hybrid.per_channel)
    if state.dtype != quantized.dtype:
        staged = tensors[state.wide].data
        np.copyto(staged, quantized)
        quantized = staged
    w, flipped, stale = state.weights, hybrid.flipped, hybrid.stale
    if w is None:
        raw = tensors[node.inputs[1]].data
        w, flipped = hybrid.split(raw, state.layout, state.dtype)
        stale = hybrid.stale_sums(raw) if hybrid.row_sums else None
    batches, width, channels = out.shape[0], out.shape[-2], out.shape[-1]
    acc = tensors[state.acc].data
    _conv_product(tensors, state, quantized, w, acc.reshape(-1, channels))
    # rows of W*C values: the per-channel factors and bias tiled over an output row
    rows = out.reshape(batches, -1, width * channels)
    sums = acc.reshape(rows.shape)
    if flipped is not None:  # the SSE kernel's -128 * |x| (rare: computed apart, exact)
        extra = np.empty_like(acc)
        _conv_product(tensors, state, np.abs(quantized), flipped, extra.reshape(-1, channels))
        np.add(acc, extra, out=acc)
    if stale is not None:  # TFLite's int32 accumulators, in float64 (exact), then cast to float32
        sums = sums.reshape(batches, -1, channels) + zero_points[:, None, None] * stale
        sums = sums.reshape(rows.shape)
    if sums.dtype != np.float32:
        np.copyto(rows, sums, casting="unsafe")  # float(int32 accumulator)
        sums = rows
    if not hybrid.per_channel:  # MatrixBatchVectorMultiplyAccumulate: acc * (input scale * filter scale)
        factors = scales * hybrid.scales[0]
        np.multiply(sums, factors[0] if batches == 1 else factors[:, None, None], out=rows)
    elif hybrid.reference:  # reference HybridConvPerChannel: acc * filter scale * input scale
        np.multiply(sums, hybrid.scale_row, out=rows)
        np.multiply(rows, scales[0] if batches == 1 else scales[:, None, None], out=rows)
    elif batches == 1:  # optimized HybridConvPerChannel: acc * (filter scale * input scale)
        np.multiply(sums, hybrid.scale_row * scales[0], out=rows)
    else:
        np.multiply(sums, (hybrid.scale_row * scales[:, None])[:, None, :], out=rows)
    bias_row = hybrid.bias_row
    if bias_row is None:
        bias_row = _bias_row(tensors[node.inputs[2]].data, width)
    np.add(rows, bias_row, out=rows)
    if hybrid.low > -np.inf or hybrid.high < np.inf:
        clip(rows, np.float32(hybrid.low), np.float32(hybrid.high), out=rows)


def _conv2d_integer_invoke(context, node, state: ConvState) -> None:
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    integer = state.integer
    w, terms = state.weights, integer.bias
    if w is None:
        w, sums = integer.weights(tensors[node.inputs[1]].data, state.layout)
        terms = integer.bias_terms(tensors[node.inputs[2]].data, sums)
    elif terms is None:
        terms = integer.bias_terms(tensors[node.inputs[2]].data, integer.sums)
    channels = out.shape[-1]
    acc = tensors[state.acc].data.reshape(-1, channels)
    _conv_product(tensors, state, tensors[node.inputs[0]].data, w, acc)
    if integer.scaled:
        integer.requant.finish(acc.reshape(out.shape), out)
        return
    wide = tensors[state.wide].data.reshape(-1, channels)
    integer.requant.requantize(acc.reshape(out.shape), terms, wide.reshape(out.shape), out)


def conv2d_invoke(context, node):
    state = node.user_data
    if state.integer is not None:
        _conv2d_integer_invoke(context, node, state)
    elif state.hybrid is not None:
        _conv2d_hybrid_invoke(context, node, state)
    else:
        _conv_compute(context, node, state)


def conv3d_prepare(context, node):
    check_arity(node, (2, 3))
    options = node.builtin_data
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    bias = optional_input_tensor(context, node, 2)
    output = output_tensor(context, node)
    ensure_eq(len(source.shape), 5, "CONV_3D input rank")
    ensure_eq(len(weights.shape), 5, "CONV_3D filter rank")
    ensure_eq(source.shape[4], weights.shape[3], "CONV_3D input channels vs filter input channels")
    ensure(min(source.shape[1:]) > 0 and min(weights.shape) > 0, "CONV_3D needs non-empty input and filter")
    _check_float((source, weights, output), ("input", "filter", "output"), "CONV_3D")
    out_channels = weights.shape[4]
    if bias is not None:
        _check_bias(bias, out_channels, "CONV_3D")
    strides = (options.stride_d, options.stride_h, options.stride_w)
    dilation = (options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor)
    _positive(strides, "CONV_3D strides")
    _positive(dilation, "CONV_3D dilation")
    in_spatial, kernel = source.shape[1:4], weights.shape[:3]
    out_spatial = tuple(
        output_size(options.padding, in_spatial[i], kernel[i], strides[i], dilation[i], checked=True)
        for i in range(3)
    )
    pads = tuple(
        padding_before_after(in_spatial[i], kernel[i], strides[i], dilation[i], out_spatial[i])[0]
        for i in range(3)
    )
    context.resize_tensor(output, (source.shape[0], *out_spatial, out_channels))
    state = node.user_data

    def layout(filt: np.ndarray) -> np.ndarray:  # [KD, KH, KW, I, O] -> [1, KD*KH*KW*I, O]
        return filt.reshape(1, -1, filt.shape[-1])

    state.layout = layout
    constant = _constant_data(weights)
    matrix = layout(constant) if constant is not None else None
    temporaries = _plan_conv(
        context,
        state,
        tuple(source.shape),
        out_channels,
        out_spatial,
        kernel,
        strides,
        dilation,
        pads,
        1,
        matrix,
        _constant_data(bias) if matrix is not None else None,
    )
    _plan_float_bias(state, bias, out_spatial)
    set_temporaries(context, node, _owned(state), temporaries)
    state.clamp = activation_clamp(options.fused_activation_function)


def conv3d_invoke(context, node):
    _conv_compute(context, node, node.user_data)


# --- DEPTHWISE_CONV_2D: one einsum over the taps of a padded copy of the input ------------------------------
#
# Output row h is sum over taps (i, j) of an input row segment times the tap's weights tiled over the
# row: with the input laid out so that the segment of tap (i, j) for row h starts at a fixed offset
# i*A + j*B + h*D and is contiguous, the taps form one strided view [N, KH, KW, OH, OW*C] and a single
# np.einsum sums them, its inner loop running along whole output rows. With a column stride of 1 the
# layout is the input padded (and cropped) to what the window reads; with a column stride s > 1 it is
# [N, rows, KW, OW, C], the input columns tap j reads (ow*s + j*dilation) gathered per tap. A depth
# multiplier > 1 repeats each input channel in that copy, so that the sum runs over output channels.
# Quantized inputs are always staged (the copy converts them to floats), their padding holding the zero
# point; the sum of at most KH*KW products of 8-bit values is exact in float32.


@dataclass
class IntegerDepthwise:
    requant: Requant
    input_zero_point: int
    filter_offset: int
    dtype: Any
    bias: np.ndarray | None = None  # int64 [C]: bias - zp * sum over taps of w, when constant
    sums: np.ndarray | None = None  # int64 [C]: sum over taps of w, for a constant filter

    def weights(self, filt: np.ndarray, width: int):
        values = filt.astype(np.int64) - self.filter_offset
        return _tile_weights(values.astype(self.dtype), width), values.reshape(-1, values.shape[-1]).sum(
            axis=0
        )

    def bias_terms(self, bias: np.ndarray | None, sums: np.ndarray) -> np.ndarray:
        terms = -self.input_zero_point * sums
        return terms if bias is None else terms + bias.reshape(-1).astype(np.int64)


@dataclass
class HybridDepthwise:
    scales: np.ndarray  # float32 [C]: the filter's per-channel scales
    reference: bool  # BUILTIN_REF: acc * (filter scale * input scale); else NEON's order per channel
    low: float
    high: float
    scale_row: np.ndarray | None = None  # the scales tiled over an output row (OW*C)
    blocked_row: np.ndarray | None = None  # NEON: which of them are in blocks of 4 (None: all)
    bias_row: np.ndarray | None = None  # a constant bias tiled over an output row


@dataclass
class DepthwiseState:
    scratch: int  # the staged input
    acc: int = -1  # quantized and hybrid: the sums [N, OH, OW*C] (float32 or float64)
    wide: int = -1  # quantized: int64 accumulators [N, OH, OW, C]
    staging: Staging | None = None  # None: the input itself is the padded layout (VALID, stride-1 cols)
    pad_value: int = 0
    view: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # the taps' view: shape, byte strides
    dtype: Any = np.float32
    weights: np.ndarray | None = None  # [KH, KW, OW*C*M]: each tap's weights tiled over an output row
    bias: np.ndarray | None = None  # [OW*C*M]
    clamp: Callable[[np.ndarray], None] | None = None
    integer: IntegerDepthwise | None = None
    hybrid: HybridDepthwise | None = None
    # exact mode (float): the terms of each sum, [taps + 1, N, rows, OW*C] in `acc`, summed in order; the
    # bias is the first term (LiteRT's optimized kernel) or the last (its reference kernel)
    exact: bool = False
    bias_first: bool = True


def _depthwise_init(context, buffer, length):
    scratch, acc, wide = context.add_tensors(3)
    return DepthwiseState(scratch=scratch, acc=acc, wide=wide)


def _tile_weights(w: np.ndarray, width: int) -> np.ndarray:
    _, kh, kw, channels = w.shape
    return np.tile(w.reshape(kh, kw, channels), (1, 1, width))


def _plan_depthwise(
    context, state: DepthwiseState, shape, window: Window, channels: int, stage: bool = False
) -> bool:
    """The staging and taps view of `window` over an input of `shape` (elements of `state.dtype`, the
    staged copy's too; `stage`: always copy); sizes the scratch and returns whether there is one."""
    n, h, w, _ = shape
    item = state.dtype.itemsize
    (oh, ow), (kh, kw), (sh, sw), (dh, dw) = window.out, window.kernel, window.strides, window.dilation
    top, left = window.pads[0][0], window.pads[1][0]
    rows = (oh - 1) * sh + (kh - 1) * dh + 1
    repeat = channels // shape[3]
    if sw == 1:
        cols = ow + (kw - 1) * dw
        if top == 0 and left == 0 and rows <= h and cols <= w and repeat == 1 and not stage:
            staged, state.staging = tuple(shape), None
        else:
            staged = (n, rows, cols, channels)
            scratch_tensor(context, state.scratch, _FLOAT_TYPES[state.dtype], staged)  # Limits, then mask
            copies = padded_copies(shape, (rows, cols), (top, left))
            state.staging = make_staging(staged, copies, item, repeat)
        row = staged[2] * channels
        steps = (dh * row, dw * channels, sh * row)
    else:
        staged = (n, rows, kw, ow, channels)
        scratch_tensor(context, state.scratch, _FLOAT_TYPES[state.dtype], staged)  # Limits, then the mask
        copies = []
        for row_copy in padded_copies(shape, (rows, w), (top, 0)):
            (_, rows_dst, _, _), (_, rows_src, _, _) = row_copy
            for tap in tap_plan((w,), (ow,), (kw,), (sw,), (dw,), (left,)):
                if not tap.empty:
                    j, cols = tap.index[0], tap.source[0]
                    copies.append(((_ALL, rows_dst, j, tap.out[0], _ALL), (_ALL, rows_src, cols, _ALL)))
        state.staging = make_staging(staged, copies, item, repeat)
        row = kw * ow * channels
        steps = (dh * row, ow * channels, sh * row)
    batch = int(np.prod(staged[1:], dtype=np.int64))
    state.view = ((n, kh, kw, oh, ow * channels), tuple(item * s for s in (batch, *steps, 1)))
    return state.staging is not None


def depthwise_prepare(optimized: bool):
    def prepare(context, node):
        _depthwise_prepare(context, node, optimized)

    return prepare


def _depthwise_prepare(context, node, optimized: bool) -> None:
    op = "DEPTHWISE_CONV_2D"
    check_arity(node, (2, 3))
    options = node.builtin_data
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    # Three inputs need a real bias (TFLite's GetInputSafe); two mean none (LiteRT's optimized kernel
    # crashes on that, its reference kernel adds nothing, and so does this one).
    bias = input_tensor(context, node, 2) if len(node.inputs) == 3 else None
    output = output_tensor(context, node)
    ensure_eq(len(source.shape), 4, f"{op} input rank")
    ensure_eq(len(weights.shape), 4, f"{op} filter rank")
    dilation = (options.dilation_h_factor, options.dilation_w_factor)
    _positive(dilation, f"{op} dilation")
    _positive((options.stride_h, options.stride_w), f"{op} strides")
    ensure(min(source.shape[1:]) > 0 and min(weights.shape[1:]) > 0, f"{op} needs non-empty input and filter")
    ensure_type(source, _CONV_TYPES, "input", op)
    hybrid = source.type == TensorType.FLOAT32 and weights.type != TensorType.FLOAT32
    if source.type == TensorType.FLOAT32 and not hybrid:
        for tensor, role in ((weights, "filter"), (output, "output")):
            ensure_type(tensor, _FLOAT, role, op)
    ensure_eq(weights.shape[0], 1, f"{op} filter dimension 0")
    n, h, w, channels = source.shape
    _, kh, kw, out_channels = weights.shape
    ensure_eq(out_channels % channels, 0, f"{op} filter channels % input channels")
    if bias is not None:
        ensure_eq(len(bias.shape), 1, f"{op} bias rank")
        ensure_eq(bias.shape[0], out_channels, f"{op} bias size")
    window = plan_window(options, (h, w), (kh, kw), dilation, checked=True)
    context.resize_tensor(output, (n, *window.out, out_channels))
    state = node.user_data
    state.staging, state.integer, state.hybrid, state.pad_value = None, None, None, 0
    state.weights = state.bias = state.clamp = None
    if source.type in _INTEGER:
        _depthwise_integer(context, node, state, options, source, weights, bias, output, window, optimized)
        return
    if hybrid:
        _depthwise_hybrid(context, node, state, options, source, weights, bias, output, window, optimized)
        return
    if bias is not None:
        ensure_type(bias, _FLOAT, "bias", op)
    temporaries = []
    state.dtype = np.dtype(np.float32)
    state.exact, state.bias_first = False, optimized
    if n * window.out[0] * window.out[1]:
        if _plan_depthwise(context, state, source.shape, window, out_channels):
            temporaries.append(state.scratch)
        if context.exact_float_summation:
            state.exact = True
            terms = kh * kw + 1
            row = n * window.out[1] * out_channels
            rows = max(1, min(window.out[0], _TERMS_AT_ONCE // (terms * row)))
            scratch_tensor(context, state.acc, TensorType.FLOAT32, (terms, n, rows, row // n))
            temporaries.append(state.acc)
    set_temporaries(context, node, (state.scratch, state.acc, state.wide), temporaries)
    width = window.out[1]
    constant = _constant_data(weights)
    if constant is not None:
        state.weights = _tile_weights(constant, width)
    constant_bias = _constant_data(bias)
    if constant_bias is not None:
        state.bias = _bias_row(constant_bias, width)
    state.clamp = activation_clamp(options.fused_activation_function)


def _depthwise_multiplier(options, channels: int, out_channels: int, op: str) -> None:
    """The 16x8 and hybrid kernels read depth_multiplier from the options: it must be the real one."""
    ensure_eq(options.depth_multiplier, out_channels // channels, f"{op} depth_multiplier option")


def _plan_depthwise_sums(context, node, state, source, window, out_channels, dtype, stage: bool) -> list[int]:
    """Staging (of `dtype`) and the float sums scratch [N, OH, OW*C] of a quantized or hybrid kernel."""
    temporaries = []
    state.dtype = np.dtype(dtype)
    n = source.shape[0]
    if n * window.out[0] * window.out[1]:
        if _plan_depthwise(context, state, source.shape, window, out_channels, stage):
            temporaries.append(state.scratch)
        scratch_tensor(
            context, state.acc, _FLOAT_TYPES[state.dtype], (n, *window.out[:1], window.out[1] * out_channels)
        )
        temporaries.append(state.acc)
    return temporaries


def _depthwise_integer(context, node, state, options, source, weights, bias, output, window, optimized):
    """DEPTHWISE_CONV_2D with uint8, int8 or int16 activations. LiteRT's optimized int8 kernel
    requantizes 8 channels at a time in NEON code and the last C % 8 in scalar code; its uint8 one rounds
    as the scalar code does; int16 (int64 bias) always runs the reference kernel."""
    op = "DEPTHWISE_CONV_2D"
    channels, out_channels = source.shape[3], weights.shape[3]
    bias_types = (TensorType.INT64,) if source.type == TensorType.INT16 else (TensorType.INT32,)
    _integer_checks(source, weights, bias, output, op, bias_types)
    uint8 = source.type == TensorType.UINT8
    if source.type == TensorType.INT16:
        _depthwise_multiplier(options, channels, out_channels, op)
    if uint8:
        _check_uint8_bias_scale(source, weights, bias, output, op)
    multiplier, shift = _multipliers(source, weights, output, out_channels, op, per_tensor_product=uint8)
    low, high = _activation_range(options, output)
    if source.type == TensorType.INT16:
        rounding, scalar_from = "wide", None
    elif source.type == TensorType.INT8 and optimized:
        rounding, scalar_from = "simd", out_channels - out_channels % 8
    else:
        rounding, scalar_from = "scalar", None
    offset = _filter_offset(weights)
    magnitude = _input_magnitude(source)
    constant = _constant_data(weights)
    taps = weights.shape[1] * weights.shape[2]
    if constant is not None:
        weight_sum = int(
            np.abs(constant.astype(np.int64) - offset).reshape(-1, out_channels).sum(axis=0).max()
        )
    else:
        weight_sum = taps * (255 if uint8 else 128)
    dtype = _float_dtype(magnitude * weight_sum)
    constant_bias = _constant_data(bias)
    wrap = rounding != "wide" and _may_leave_int32(source, weight_sum, constant_bias)
    requant = Requant(
        multiplier, shift, output.params.zero_point, low, high, rounding, scalar_from, wrap=wrap
    )
    requant.product_bound = magnitude * weight_sum  # the staged input is raw: |x| <= magnitude
    integer = IntegerDepthwise(requant, source.params.zero_point, offset, dtype)
    state.pad_value = source.params.zero_point
    width = window.out[1]
    if constant is not None:
        state.weights, integer.sums = integer.weights(constant, width)
        if bias is None or constant_bias is not None:
            integer.bias = integer.bias_terms(constant_bias, integer.sums)
    state.integer = integer
    temporaries = _plan_depthwise_sums(context, node, state, source, window, out_channels, dtype, stage=True)
    if state.acc in temporaries:
        scratch_tensor(context, state.wide, TensorType.INT64, output.shape)
        temporaries.append(state.wide)
    set_temporaries(context, node, (state.scratch, state.acc, state.wide), temporaries)


def _depthwise_hybrid(context, node, state, options, source, weights, bias, output, window, optimized):
    """DEPTHWISE_CONV_2D of a float32 input with int8 weights (TFLite's EvalHybridPerChannel): each batch
    quantized asymmetrically, the exact sums scaled per channel. LiteRT's NEON code scales 4 channels at
    a time as (acc * filter scale) * input scale and the last C % 4 as (acc * input scale) * filter
    scale; BUILTIN_REF's as acc * (filter scale * input scale)."""
    op = "DEPTHWISE_CONV_2D"
    if weights.type != TensorType.INT8:
        raise KernelError(f"Type FLOAT32 with filter type {weights.type.name} not currently supported.")
    ensure_type(output, _FLOAT, "output", op)
    if bias is not None:
        ensure_type(bias, _FLOAT, "bias", op)
    channels, out_channels = source.shape[3], weights.shape[3]
    _depthwise_multiplier(options, channels, out_channels, op)
    quantization = weights.quantization
    ensure(
        isinstance(quantization, AffineQuantization) and quantization.scale.size > 0,
        f"{op} hybrid filter must have affine quantization with scales",
    )
    axis = quantization.quantized_dimension
    ensure(
        0 <= axis < 4 and quantization.scale.size == weights.shape[axis],
        f"{op} filter has {quantization.scale.size} scales for dimension {axis} of {list(weights.shape)}",
    )
    scales = np.broadcast_to(quantization.scale.astype(np.float32), (out_channels,)).copy()
    low, high = _float_range(options.fused_activation_function)
    hybrid = state.hybrid = HybridDepthwise(scales, not optimized, low, high)
    width = window.out[1]
    hybrid.scale_row = _bias_row(scales, width)
    if out_channels % 4:
        hybrid.blocked_row = np.tile(np.arange(out_channels) < out_channels - out_channels % 4, width)
    constant_bias = _constant_data(bias)
    if constant_bias is not None:
        hybrid.bias_row = _bias_row(constant_bias.astype(np.float32), width)
    constant = _constant_data(weights)
    taps = weights.shape[1] * weights.shape[2]
    if constant is not None:
        weight_sum = int(np.abs(constant.astype(np.int64)).reshape(-1, out_channels).sum(axis=0).max())
    else:
        weight_sum = taps * 128
    dtype = _float_dtype(255 * weight_sum)
    if constant is not None:
        state.weights = _tile_weights(constant.astype(dtype), window.out[1])
    temporaries = _plan_depthwise_sums(context, node, state, source, window, out_channels, dtype, stage=False)
    set_temporaries(context, node, (state.scratch, state.acc, state.wide), temporaries)


# Exact mode makes the terms of this many outputs' sums at a time (the rows of the output in one batch).
_TERMS_AT_ONCE = 1 << 18


def _depthwise_exact(tensors, state: DepthwiseState, x, w: np.ndarray, bias, rows: np.ndarray) -> None:
    """rows [N, OH, OW*C] = the bias and the taps' products summed in LiteRT's order (see the top)."""
    x = staged_input(state.staging, x, tensors, state.scratch, state.pad_value)
    shape, strides = state.view
    taps = np.ndarray(shape, x.dtype, x, 0, strides).transpose(1, 2, 0, 3, 4)  # [KH, KW, N, OH, Q]
    kh, kw, _, height, _ = taps.shape
    terms = tensors[state.acc].data  # [KH*KW + 1, N, R, Q], C-contiguous
    products, start = (terms[1:], terms[0]) if state.bias_first else (terms[:-1], terms[-1])
    products = products.reshape(kh, kw, *terms.shape[1:])  # a view: the first axis split
    weights = w[:, :, None, None, :]
    step = terms.shape[2]
    for first in range(0, height, step):
        count = min(step, height - first)
        np.multiply(taps[:, :, :, first : first + count], weights, out=products[:, :, :, :count])
        if bias is None:
            start[:, :count] = 0
        else:
            start[:, :count] = bias
        sum_in_order(terms[:, :, :count], rows[:, first : first + count])


def _depthwise_sums(tensors, state: DepthwiseState, x: np.ndarray, w: np.ndarray, rows: np.ndarray) -> None:
    """rows [N, OH, OW*C] = the sum over taps of the (staged) input times the tiled weights."""
    x = staged_input(state.staging, x, tensors, state.scratch, state.pad_value)
    shape, strides = state.view
    _einsum("nijhq,ijq->nhq", np.ndarray(shape, x.dtype, x, 0, strides), w, out=rows)


def depthwise_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    if state.integer is not None:
        _depthwise_integer_invoke(context, node, state, out)
        return
    if state.hybrid is not None:
        _depthwise_hybrid_invoke(context, node, state, out)
        return
    w = state.weights
    if w is None:
        w = _tile_weights(tensors[node.inputs[1]].data, out.shape[2])
    rows = out.reshape(out.shape[0], out.shape[1], -1)
    if state.exact:
        bias = None
        if len(node.inputs) == 3:
            bias = (
                state.bias
                if state.bias is not None
                else _bias_row(tensors[node.inputs[2]].data, out.shape[2])
            )
        _depthwise_exact(tensors, state, tensors[node.inputs[0]].data, w, bias, rows)
        if state.clamp is not None:
            state.clamp(out)
        return
    _depthwise_sums(tensors, state, tensors[node.inputs[0]].data, w, rows)
    if len(node.inputs) == 3:
        bias = state.bias
        if bias is None:
            bias = _bias_row(tensors[node.inputs[2]].data, out.shape[2])
        np.add(rows, bias, out=rows)
    if state.clamp is not None:
        state.clamp(out)


def _depthwise_integer_invoke(context, node, state: DepthwiseState, out: np.ndarray) -> None:
    tensors = context.tensors
    integer = state.integer
    w, terms = state.weights, integer.bias
    bias = tensors[node.inputs[2]].data if len(node.inputs) == 3 else None
    if w is None:
        w, sums = integer.weights(tensors[node.inputs[1]].data, out.shape[2])
        terms = integer.bias_terms(bias, sums)
    elif terms is None:
        terms = integer.bias_terms(bias, integer.sums)
    acc = tensors[state.acc].data
    _depthwise_sums(tensors, state, tensors[node.inputs[0]].data, w, acc)
    integer.requant.requantize(acc.reshape(out.shape), terms, tensors[state.wide].data, out)


def _depthwise_hybrid_invoke(context, node, state: DepthwiseState, out: np.ndarray) -> None:
    tensors = context.tensors
    hybrid = state.hybrid
    quantized, scales, _ = _quantize_input(tensors[node.inputs[0]].data, True)
    if state.dtype != quantized.dtype:
        quantized = quantized.astype(state.dtype)
    w = state.weights
    if w is None:
        w = _tile_weights(tensors[node.inputs[1]].data.astype(state.dtype), out.shape[2])
    acc = tensors[state.acc].data
    _depthwise_sums(tensors, state, quantized, w, acc)
    rows = out.reshape(acc.shape)  # [N, OH, OW*C]
    np.copyto(rows, acc, casting="unsafe")  # float(int32 accumulator)
    per_batch = scales[0] if scales.size == 1 else scales[:, None, None]
    scale_row = hybrid.scale_row
    if hybrid.reference:  # acc * (filter scale * input scale)
        np.multiply(rows, scale_row * per_batch, out=rows)
    elif hybrid.blocked_row is None:  # NEON blocks of 4 channels: (acc * filter scale) * input scale
        np.multiply(rows, scale_row, out=rows)
        np.multiply(rows, per_batch, out=rows)
    else:  # and the last C % 4 channels in scalar code: (acc * input scale) * filter scale
        blocked = hybrid.blocked_row
        np.multiply(rows, np.where(blocked, scale_row, per_batch), out=rows)
        np.multiply(rows, np.where(blocked, per_batch, scale_row), out=rows)
    if len(node.inputs) == 3:
        bias_row = hybrid.bias_row
        if bias_row is None:
            bias_row = _bias_row(tensors[node.inputs[2]].data, out.shape[2])
        np.add(rows, bias_row, out=rows)
    if hybrid.low > -np.inf or hybrid.high < np.inf:
        clip(rows, np.float32(hybrid.low), np.float32(hybrid.high), out=rows)


# --- TRANSPOSE_CONV and CONV_3D_TRANSPOSE: one matrix product, then a sum of its columns per output ---------
#
# One matrix product multiplies every input pixel by the whole filter: [pixels, taps*O], which is also
# [pixels*taps, O], a row per (input pixel, tap). Output o of input i and tap k is o = i*stride +
# k*dilation - pad. Then, chosen in prepare:
# - "gather" (a constant output shape, a small output): every output pixel lists the rows that land on
#   it (padded with a row of zeros, ended with a row holding the bias); one np.take gathers them and one
#   reduction sums them. Two calls, whatever the kernel;
# - "scatter": the output starts as the bias and each tap adds its rows into a strided slice of it (the
#   tap plan read backwards), one call per tap and no index memory.
# A quantized TRANSPOSE_CONV multiplies (input - zero point), as floats, and sums without its bias into a
# float scratch; the bias is added to the exact int64 accumulators before the requantization.


@dataclass
class IntegerTranspose:
    requant: Requant
    input_zero_point: int
    filter_offset: int
    dtype: Any
    bias: int = -1  # the bias tensor, or -1
    bias_terms: np.ndarray | None = None  # int64 [O]: a constant bias


@dataclass
class TransposeState:
    scratch: int  # the matrix product: [pixels, taps*O], then (gather) a zero row and a bias row
    gathered: int  # gather: the rows of every output pixel, [R, output pixels, O]
    acc: int = -1  # quantized: the float sums, [output shape]
    wide: int = -1  # quantized: the int64 accumulators, [output shape]
    op: str = ""
    spatial: int = 2
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilation: tuple[int, ...] = ()
    padding: Padding = Padding.SAME
    out_channels: int = 0
    taps: int = 1
    dtype: Any = np.float32
    weights: np.ndarray | None = None  # [I, taps*O] for a constant filter
    layout: Callable[[np.ndarray], np.ndarray] | None = None
    shape: tuple[int, ...] | None = None  # the output shape the plan was made for
    mode: str = "scatter"
    steps: list[tuple[tuple, tuple]] = field(default_factory=list)  # scatter: (output slice, rows)
    rows: np.ndarray | None = None  # gather: [R, output pixels], indices of product rows
    clamp: Callable[[np.ndarray], None] | None = None
    bias: int = -1
    bias_data: np.ndarray | None = None  # a constant bias
    bias_row: np.ndarray | None = None  # the constant bias tiled over an output row
    integer: IntegerTranspose | None = None


# Gather when the gathered rows, [R, output pixels, O], have at most this many elements.
_GATHER_ELEMENTS = 1 << 18


def _transpose_init(context, buffer, length):
    scratch, gathered, acc, wide = context.add_tensors(4)
    return TransposeState(scratch=scratch, gathered=gathered, acc=acc, wide=wide)


def _transpose_plan(
    state: TransposeState, source_shape: tuple[int, ...], requested: np.ndarray, gather: bool = False
) -> tuple:
    """Validate the requested output shape against the input; plan the sums (gathered if `gather` and
    small enough); return the shape."""
    op, dims = state.op, state.spatial + 2
    shape = tuple(int(d) for d in np.asarray(requested).reshape(-1))
    ensure_eq(len(shape), dims, f"{op} output shape size")
    ensure(all(d >= 0 for d in shape), f"{op} output shape has a negative dimension: {list(shape)}")
    ensure_eq(shape[0], source_shape[0], f"{op} output batch vs input batch")
    ensure_eq(shape[-1], state.out_channels, f"{op} output channels vs filter output channels")
    if state.spatial == 2:
        ensure(shape[1] > 0 and shape[2] > 0, f"{op} output height and width must be positive")
    out_spatial = shape[1:-1]
    in_spatial = source_shape[1:-1]
    pads = []
    for i in range(state.spatial):
        computed = output_size(
            state.padding, out_spatial[i], state.kernel[i], state.strides[i], state.dilation[i], True
        )
        ensure_eq(
            computed, in_spatial[i], f"{op} input size computed from the output shape (dimension {i + 1})"
        )
        pads.append(
            padding_before_after(
                out_spatial[i], state.kernel[i], state.strides[i], state.dilation[i], computed
            )[0]
        )
    # The convolution's relation with input and output swapped: the tap plan over the output gives,
    # per tap, the inputs that land inside.
    taps = [
        (t, tap)
        for t, tap in enumerate(
            tap_plan(out_spatial, in_spatial, state.kernel, state.strides, state.dilation, pads)
        )
        if not tap.empty
    ]
    state.shape, state.mode, state.steps, state.rows = shape, "scatter", [], None
    if gather and math.prod(shape[:-1]) * max(state.out_channels, 1) <= _GATHER_ELEMENTS:  # cheap to plan
        pixels = np.arange(int(np.prod(shape[:-1], dtype=np.int64))).reshape(shape[:-1])
        sources = np.arange(int(np.prod(source_shape[:-1], dtype=np.int64))).reshape(source_shape[:-1])
        counts = np.zeros(pixels.shape, np.int64)
        for _, tap in taps:
            counts[(_ALL, *tap.source)] += 1
        depth = int(counts.max(initial=0)) + (state.bias >= 0)
        if depth * pixels.size * state.out_channels <= _GATHER_ELEMENTS:
            zero_row = sources.size * state.taps  # then the bias row
            rows = np.full((depth, pixels.size), zero_row, np.intp)
            if state.bias >= 0:
                rows[-1] = zero_row + 1
            filled = np.zeros(pixels.size, np.intp)
            for t, tap in taps:
                targets = pixels[(_ALL, *tap.source)].reshape(-1)
                rows[filled[targets], targets] = sources[(_ALL, *tap.out)].reshape(-1) * state.taps + t
                filled[targets] += 1
            state.mode, state.rows = "gather", rows
    if state.mode == "scatter":
        state.steps = [((_ALL, *tap.source, _ALL), (_ALL, *tap.out, t, _ALL)) for t, tap in taps]
        if state.bias_data is not None:
            state.bias_row = _bias_row(state.bias_data, shape[-2])
    return shape


def _transpose_prepare(
    context, node, op: str, spatial: int, options, weight_dims: tuple[int, int], optimized: bool = True
) -> None:
    """Shared prepare; `weight_dims` names the filter's (output channels, input channels) axes."""
    check_arity(node, (3, 4))
    state = node.user_data
    shape_tensor, weights, source = (input_tensor(context, node, i) for i in range(3))
    bias = optional_input_tensor(context, node, 3) if len(node.inputs) == 4 else None
    output = output_tensor(context, node)
    ensure_eq(len(shape_tensor.shape), 1, f"{op} output shape rank")
    ensure_eq(len(source.shape), spatial + 2, f"{op} input rank")
    ensure_eq(len(weights.shape), spatial + 2, f"{op} filter rank")
    quantized = spatial == 2 and source.type in _INTEGER
    if not quantized:
        _check_float((source, weights, output), ("input", "filter", "output"), op)
    if shape_tensor.type != TensorType.INT32:
        raise KernelError(f"{op} output shape is {shape_tensor.type.name}, not int32.")
    ensure_eq(shape_tensor.shape[0], spatial + 2, f"{op} output shape size")
    o_axis, i_axis = weight_dims
    ensure_eq(source.shape[-1], weights.shape[i_axis], f"{op} input channels vs filter input channels")
    if spatial == 2:
        ensure(
            min(source.shape[1:]) > 0 and min(weights.shape[:3]) > 0, f"{op} needs non-empty input and filter"
        )
    state.op, state.spatial = op, spatial
    state.out_channels = weights.shape[o_axis]
    state.kernel = tuple(weights.shape[1:3]) if spatial == 2 else tuple(weights.shape[:3])
    if bias is not None:
        if quantized:
            ensure_eq(int(np.prod(bias.shape, dtype=np.int64)), state.out_channels, f"{op} bias size")
        else:
            _check_bias(bias, state.out_channels, op)
    state.bias = node.inputs[3] if bias is not None and not quantized else -1
    state.bias_row = state.bias_data = None
    if state.bias >= 0 and _constant_data(bias) is not None:
        state.bias_data = np.array(bias.data, np.float32).reshape(-1)
    _positive(state.strides, f"{op} strides")
    _positive(state.dilation, f"{op} dilation")
    state.padding = options.padding
    state.taps = int(np.prod(state.kernel, dtype=np.int64))
    state.weights, state.integer, state.dtype = None, None, np.dtype(np.float32)
    constant = _constant_data(weights)
    if quantized:
        _transpose_integer(state, options, source, weights, bias, output, optimized)
    elif constant is not None:
        state.weights = np.ascontiguousarray(state.layout(constant))
    state.clamp = activation_clamp(options.fused_activation_function) if not quantized else None
    state.shape = None
    pixels = int(np.prod(source.shape[:-1], dtype=np.int64))
    rows = pixels * state.taps
    temporaries = [state.scratch]
    float_type = _FLOAT_TYPES[state.dtype]
    if is_constant(shape_tensor) and shape_tensor.data is not None:
        shape = _transpose_plan(state, source.shape, shape_tensor.data, gather=True)
        context.resize_tensor(output, shape)
        if quantized:
            scratch_tensor(context, state.acc, float_type, shape)
            scratch_tensor(context, state.wide, TensorType.INT64, shape)
            temporaries += [state.acc, state.wide]
    else:
        context.set_tensor_to_dynamic(output)
    if state.mode == "gather":
        rows += 2
        scratch_tensor(context, state.gathered, float_type, (*state.rows.shape, state.out_channels))
        temporaries.append(state.gathered)
    scratch_tensor(context, state.scratch, float_type, (rows, state.out_channels))
    set_temporaries(context, node, (state.scratch, state.gathered, state.acc, state.wide), temporaries)


def _transpose_integer(
    state: TransposeState, options, source, weights, bias, output, optimized: bool
) -> None:
    """TRANSPOSE_CONV with uint8, int8 or int16 activations. LiteRT's optimized kernel requantizes the
    int8 and int16 (int32 bias) outputs 8 channels at a time in NEON code and the last C % 8 in scalar
    code, and uint8 outputs in flat blocks of 16 values and a scalar tail; int16 with an int64 bias runs
    the reference kernel."""
    op = "TRANSPOSE_CONV"
    bias_types = (
        (TensorType.INT32, TensorType.INT64) if source.type == TensorType.INT16 else (TensorType.INT32,)
    )
    _integer_checks(source, weights, bias, output, op, bias_types)
    uint8 = source.type == TensorType.UINT8
    out_channels = state.out_channels
    wide_bias = False
    if source.type == TensorType.INT16:
        chosen = _quantized_bias_type(options, bias, op)
        ensure(
            bias is None or bias.type == TensorType.INT64 or chosen == TensorType.INT32,
            f"{op} with int16 input and an INT32 bias needs quantized_bias_type INT32 "
            "(TFLite would read the bias as int64)",
        )
        wide_bias = chosen != TensorType.INT32
    if uint8:
        _check_uint8_bias_scale(source, weights, bias, output, op)
    multiplier, shift = _multipliers(source, weights, output, out_channels, op, per_tensor_product=uint8)
    low, high = _activation_range(options, output)
    scalar_from = None
    if wide_bias:
        rounding = "wide"
    elif not optimized:
        rounding = "scalar"
    else:
        rounding = "simd"
        scalar_from = None if uint8 else out_channels - out_channels % 8
    offset = _filter_offset(weights)
    zero_point = source.params.zero_point
    lowest, highest = _RANGES[source.type]
    magnitude = max(abs(lowest - zero_point), abs(highest - zero_point))  # the input is offset first
    constant = _constant_data(weights)
    if constant is not None:
        sums = np.abs(constant.astype(np.int64) - offset).reshape(out_channels, -1).sum(axis=1)
        weight_sum = int(sums.max(initial=0))
    else:
        weight_sum = int(np.prod(weights.shape[1:])) * (255 if uint8 else 128)
    dtype = _float_dtype(magnitude * weight_sum)
    constant_bias = _constant_data(bias)
    wrap = rounding != "wide" and _may_leave_int32(source, weight_sum, constant_bias)
    requant = Requant(
        multiplier, shift, output.params.zero_point, low, high, rounding, scalar_from, wrap=wrap
    )
    requant.product_bound = magnitude * weight_sum  # the input is offset: |x - zp| <= magnitude
    state.integer = IntegerTranspose(
        requant, zero_point, offset, dtype, bias.index if bias is not None else -1
    )
    if constant_bias is not None:
        state.integer.bias_terms = constant_bias.reshape(-1).astype(np.int64)
    state.dtype = np.dtype(dtype)
    if constant is not None:
        state.weights = np.ascontiguousarray(state.layout((constant.astype(np.int64) - offset).astype(dtype)))


def _transpose_sums(tensors, state: TransposeState, x: np.ndarray, w: np.ndarray, out: np.ndarray) -> None:
    """out = the products of every input pixel with the filter, summed where they land (+ the bias)."""
    col = tensors[state.scratch].data
    pixels = x.size // x.shape[-1]
    if pixels:
        np.matmul(x.reshape(pixels, -1), w, out=col[: pixels * state.taps].reshape(pixels, -1))
    if state.mode == "gather":
        col[-2] = 0
        if state.bias >= 0:
            col[-1] = tensors[state.bias].data
        gathered = tensors[state.gathered].data
        np.take(col, state.rows, axis=0, out=gathered, mode="clip")
        np.add.reduce(gathered, axis=0, out=out.reshape(-1, state.out_channels))
    else:
        cols = col.reshape(*x.shape[:-1], state.taps, state.out_channels)
        if state.bias >= 0:
            bias_row = state.bias_row
            if bias_row is None or bias_row.shape[0] != out.shape[-2] * out.shape[-1]:
                bias_row = _bias_row(tensors[state.bias].data, out.shape[-2])
            np.copyto(out.reshape(-1, bias_row.shape[0]), bias_row)
        else:
            out.fill(0)
        for dst, src in state.steps:
            region = out[dst]
            np.add(region, cols[src], out=region)


def _transpose_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    source = tensors[node.inputs[2]]
    output = tensors[node.outputs[0]]
    dynamic = output.allocation_type == AllocationType.DYNAMIC
    if dynamic:
        requested = tensors[node.inputs[0]].data
        shape = tuple(int(d) for d in np.asarray(requested).reshape(-1))
        if shape != state.shape:
            shape = _transpose_plan(state, source.shape, requested)
        context.resize_tensor(output, shape)
    out = output.data
    integer = state.integer
    if integer is None:
        w = state.weights if state.weights is not None else state.layout(tensors[node.inputs[1]].data)
        _transpose_sums(tensors, state, source.data, w, out)
        if state.clamp is not None:
            state.clamp(out)
        return
    w = state.weights
    if w is None:
        filt = tensors[node.inputs[1]].data.astype(np.int64) - integer.filter_offset
        w = np.ascontiguousarray(state.layout(filt.astype(state.dtype)))
    x = np.subtract(source.data, integer.input_zero_point, dtype=state.dtype)  # exact
    if dynamic:
        acc, wide = np.empty(out.shape, state.dtype), np.empty(out.shape, np.int64)
    else:
        acc, wide = tensors[state.acc].data, tensors[state.wide].data
    _transpose_sums(tensors, state, x, w, acc)
    terms = integer.bias_terms
    if terms is None and integer.bias >= 0:
        terms = tensors[integer.bias].data.reshape(-1).astype(np.int64)
    requant = integer.requant
    if requant.scalar_from is None and requant.rounding == "simd":  # uint8: flat blocks of 16
        requant.scalar_tail = out.size % 16
    requant.requantize(acc, terms, wide, out)


def transpose_conv_prepare(optimized: bool):
    def prepare(context, node):
        options = node.builtin_data
        state = node.user_data
        state.strides, state.dilation = (options.stride_h, options.stride_w), (1, 1)

        def layout(filt: np.ndarray) -> np.ndarray:  # [O, KH, KW, I] -> [I, KH*KW*O]
            return (
                filt.reshape(filt.shape[0], -1, filt.shape[-1]).transpose(2, 1, 0).reshape(filt.shape[-1], -1)
            )

        state.layout = layout
        _transpose_prepare(context, node, "TRANSPOSE_CONV", 2, options, (0, 3), optimized)

    return prepare


def conv3d_transpose_prepare(context, node):
    options = node.builtin_data
    state = node.user_data
    state.strides = (options.stride_d, options.stride_h, options.stride_w)
    state.dilation = (options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor)

    def layout(filt: np.ndarray) -> np.ndarray:  # [KD, KH, KW, O, I] -> [I, KD*KH*KW*O]
        return filt.reshape(-1, filt.shape[-1]).T

    state.layout = layout
    _transpose_prepare(context, node, "CONV_3D_TRANSPOSE", 3, options, (3, 4))


# --- registration ---------------------------------------------------------------------------------------


# BUILTIN_REF's kernels differ in how they round quantized outputs (the float ones are the same here)
register_builtin_and_reference(
    BuiltinOperator.CONV_2D,
    (1, 8),
    types=_CONV_TYPES,
    init=_conv_init,
    prepare_for=conv2d_prepare,
    invoke=conv2d_invoke,
)
register_builtin_and_reference(
    BuiltinOperator.DEPTHWISE_CONV_2D,
    (1, 7),
    types=_CONV_TYPES,
    init=_depthwise_init,
    prepare_for=depthwise_prepare,
    invoke=depthwise_invoke,
)
register_builtin_and_reference(
    BuiltinOperator.TRANSPOSE_CONV,
    (1, 5),
    types=_CONV_TYPES,
    init=_transpose_init,
    prepare_for=transpose_conv_prepare,
    invoke=_transpose_invoke,
)
register_builtin(
    BuiltinOperator.CONV_3D,
    (1, 1),
    types=_FLOAT,
    init=_conv_init,
    prepare=conv3d_prepare,
    invoke=conv3d_invoke,
)
register_builtin(
    BuiltinOperator.CONV_3D_TRANSPOSE,
    (1, 1),
    types=_FLOAT,
    init=_transpose_init,
    prepare=conv3d_transpose_prepare,
    invoke=_transpose_invoke,
)

"""Hybrid FULLY_CONNECTED (float32 activations, 8-, 4- or 2-bit weights): each input row quantized on the fly,
exact integer products, scaled back to floats; the compiled kernel for centered rows."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...core.packed import unpack_packed
from ...core.quantization import AffineQuantization
from ...core.sparsity import densify
from ...core.step_program import Written
from ...errors import ensure, ensure_eq
from ...fidelity.arithmetic import HostArithmetic
from ...fidelity.sse import sign_transfer_correction, sign_transfer_mask
from ..common import (
    activation_clamp,
)
from ..jit import compiled
from ..kernel_type import OPTIMIZED, KernelType
from ..quant.hybrid_inputs import (
    AsymmetricRowQuantizer,
    quantize_rows_4bit_kernel,
    quantize_rows_symmetric,
)
from ..quant.integer_gemm import (
    exact_float_type,
)
from .common import PACKED_WEIGHTS, Act, Kernel, T, matrix_product, per_channel_scales
from .sparse import canonical, supported_sparsity


def hybrid_fc_kernel(
    source, weights, bias, options, batch, depth, kernel_type: KernelType, arithmetic: HostArithmetic
) -> Kernel:
    """FULLY_CONNECTED's kernel for float32 inputs and 8-, 4- or 2-bit weights, checked as TFLite's
    Prepare does."""
    ensure(
        isinstance(weights.quantization, AffineQuantization), f"{_WHAT} weights have no affine quantization"
    )
    four_bit = _runs_four_bit_kernel(weights, batch, depth, kernel_type)
    weight_scale = _weight_scale(weights)
    values = _constant_weight_values(weights)
    sparse = weights.sparsity is not None
    asymmetric = options.asymmetric_quantize_inputs and not four_bit
    # the columns TFLite's SSE kernel (x86 only) multiplies in 16-value blocks (every stored block when
    # sparse: the depth rounded up to whole blocks); its 4-bit kernel has no such quirk
    blocked = 0 if four_bit else arithmetic.sign_lost_columns(depth + 15 if sparse else depth)
    layout = HybridWeights(exact_float_type(depth * 128 * 128), batch, blocked, sparse, arithmetic)
    fixed = None if values is None else layout.prepared(values)
    # TFLite sums the weight rows on the first invoke after prepare only (stale if the weights change)
    sums = [None if values is None else layout.row_sums(values)]
    # Constant weights whose SSE row sums are the exact ones and without -128s in the SIMD blocks: the
    # accumulators acc - zp * sums are exactly (q - zp) @ w, what quantize(x, centered=True) multiplies
    # (exact in float_type too: |q - zp| <= 255)
    centered = (
        asymmetric
        and fixed is not None
        and fixed[1] is None
        and exact_float_type(depth * 255 * 128) == layout.float_type
        and np.array_equal(sums[0], values.astype(np.int64).sum(axis=1))
    )
    quantize = (
        quantize_rows_4bit_kernel
        if four_bit
        else AsymmetricRowQuantizer(batch, depth, centered)
        if asymmetric
        else quantize_rows_symmetric
    )
    acc = np.empty((batch, weights.shape[0]), layout.float_type)
    scale_back = ScaleBack(
        acc,
        weight_scale,
        _tiled_constant_bias(bias, batch),
        _float_activation(options.fused_activation_function),
    )
    product = matrix_product(depth)
    if not centered:
        return HybridFCKernel(layout, weights, fixed, sums, quantize, product, scale_back)

    def centered_kernel(x, w, bias_values, out):
        quantized, scales, _ = quantize(x)
        product(quantized, fixed[0], acc)  # exact integers
        scale_back(scales, bias_values, out)

    compiled_kernel = _compiled_centered_kernel(
        quantize, product, fixed[0], acc, weight_scale, options.fused_activation_function, centered_kernel
    )
    return centered_kernel if compiled_kernel is None else compiled_kernel


_WHAT = "FULLY_CONNECTED"


def _runs_four_bit_kernel(weights, batch: int, depth: int, kernel_type: KernelType) -> bool:
    """Whether TFLite's optimized build runs these weights through its 4-bit kernel: constant int4
    weights of these shapes. It quantizes the input its own way (see quantize_rows_4bit_kernel) and stores
    weights as v + 7 in four bits: -8 does not fit, and TFLite returns garbage for it."""
    four_bit = (
        kernel_type is OPTIMIZED
        and weights.type == T.INT4
        and weights.is_constant_or_persistent
        and batch > 0
        and depth % 2 == 0
        and weights.shape[0] >= 4
        and depth >= 32
    )
    if four_bit:
        ensure(
            not np.any(_hybrid_weight_values(weights) == -8),
            f"{_WHAT} INT4 weights holding -8 are not supported by TFLite's 4-bit kernel",
        )
    return four_bit


def _weight_scale(weights) -> np.ndarray:
    """The weights' float32 scale per output channel, or 0-d per tensor (see ScaleBack)."""
    channel_scales = per_channel_scales(weights)
    if channel_scales is None:
        return np.array(weights.params.scale, np.float32)
    axis = weights.quantization.quantized_dimension
    ensure_eq(axis, 0, f"{_WHAT} hybrid weights quantized_dimension")
    ensure_eq(channel_scales.size, weights.shape[axis], f"{_WHAT} per-channel weight scales")
    return channel_scales.astype(np.float32)


def _constant_weight_values(weights) -> np.ndarray | None:
    """The weights' integer values when they are constant (sparse ones densified); None otherwise."""
    if weights.sparsity is not None:
        ensure(weights.type == T.INT8, "Sparse hybrid FULLY_CONNECTED weights must be INT8")
        ensure(weights.is_constant_or_persistent, "FULLY_CONNECTED sparse weights must be a constant tensor")
        sparsity = weights.sparsity
        ensure(
            supported_sparsity(sparsity) and canonical(sparsity, 16),
            "Unsupported sparse fully-connected weight format.",
        )
        return densify(weights.data.reshape(-1), weights.shape, sparsity)
    return _hybrid_weight_values(weights) if weights.is_constant_or_persistent else None


@dataclass(frozen=True, slots=True)
class HybridWeights:
    """How integer weights enter the product: in an exact float type, with the SSE kernel's sign-lost
    columns (`blocked`) and row sums as the host's kernel computes them."""

    float_type: type
    batch: int
    blocked: int
    sparse: bool
    arithmetic: HostArithmetic

    def row_sums(self, raw) -> np.ndarray:
        sums = raw.astype(np.int64).sum(axis=1) if self.sparse else self.arithmetic.hybrid_row_sums(raw)
        return sums.astype(self.float_type)

    def prepared(self, raw) -> tuple[np.ndarray, np.ndarray | None]:
        """The matrix the product multiplies, and the SSE sign-transfer mask (None: no correction)."""
        # (several rows multiply a C-contiguous matrix about twice as fast; one row a transposed view)
        matrix = raw.astype(self.float_type).T
        return np.ascontiguousarray(matrix) if self.batch > 1 else matrix, sign_transfer_mask(
            raw, self.blocked
        )


class ScaleBack:
    """scale_back(scales, bias, out): out = acc * (input scale * weight scale) + bias, then the fused
    activation."""

    __slots__ = ("acc", "weight_scale", "tiled_bias", "finish", "scale")

    def __init__(self, acc: np.ndarray, weight_scale: np.ndarray, tiled_bias, finish):
        self.acc, self.weight_scale, self.tiled_bias, self.finish = acc, weight_scale, tiled_bias, finish
        self.scale = np.empty(acc.shape, np.float32)

    def __call__(self, scales, bias_values, out) -> None:
        np.multiply(scales[:, None], self.weight_scale, self.scale)
        np.multiply(self.acc, self.scale, out, casting="unsafe")
        if self.tiled_bias is not None:
            out += self.tiled_bias
        elif bias_values is not None:
            out += bias_values
        if self.finish is not None:
            self.finish(out)


@dataclass(frozen=True, slots=True)
class HybridFCKernel:
    """kernel(x, w, bias, out): each row quantized, the exact integer product corrected for the SSE
    kernel's sign-lost columns and the input zero points, scaled back."""

    layout: HybridWeights
    weights: object  # the weights tensor, for weights that change between invokes
    fixed: tuple[np.ndarray, np.ndarray | None] | None  # constant weights, prepared once
    sums: list  # [the weight rows' sums], made at the first invoke where the weights are not constant
    quantize: Callable
    product: Callable
    scale_back: ScaleBack

    def __call__(self, x, w, bias_values, out) -> None:
        float_type, acc = self.layout.float_type, self.scale_back.acc
        if self.fixed is not None:
            matrix, mask = self.fixed
        else:
            raw = _hybrid_weight_values_of(w, self.weights)
            matrix, mask = self.layout.prepared(raw)
            if self.sums[0] is None:
                self.sums[0] = self.layout.row_sums(raw)
        quantized, scales, *zero_points = self.quantize(x)
        self.product(quantized, matrix, acc)  # exact integers
        if mask is not None:
            np.add(acc, sign_transfer_correction(quantized, mask).astype(float_type), out=acc)
        if zero_points:
            np.subtract(acc, zero_points[0][:, None].astype(float_type) * self.sums[0][None, :], out=acc)
        self.scale_back(scales, bias_values, out)


def _compiled_centered_kernel(quantize, product, matrix, acc, weight_scale, activation, fallback):
    """The centered hybrid kernel with compiled row quantization (CompiledCentered); None where
    compiled kernels do not run or the activation is not a clamp."""
    compiled_quantize = quantize.compiled_kernel
    with_factors = compiled("quant.hybrid_inputs_compiled", "quantize_rows_with_factors")
    if compiled_quantize is None or with_factors is None:
        return None
    if activation not in (Act.NONE, Act.RELU, Act.RELU6, Act.RELU_N1_TO_1):
        return None
    _, scales, zero_points = compiled_quantize
    return CompiledCentered(
        with_factors, scales, zero_points, product, matrix, acc, weight_scale, activation, fallback
    )


class CompiledCentered:
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

    def calls(self, x, w, bias_values, out) -> tuple | Written:
        """Registration.calls on these arrays: one written statement (quantize, then the product and the
        scaling back, or the fallback for rows the quantizer refuses) where they are contiguous; a
        constant bias is repeated over the rows once (adding it then needs no broadcasting)."""
        if not (x.flags.c_contiguous and out.flags.c_contiguous):
            return (partial(self.fallback, x, w, bias_values, out),)
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
            text,
            partial(self, x, w, bias_values, out, tiled),
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
    if weights.type in PACKED_WEIGHTS:
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

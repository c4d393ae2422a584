"""Recurrent ops: LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM, RNN,
UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and SVDF.

The state of a recurrent op lives in variable input tensors (LSTM's output and cell state, inputs 18
and 19; an RNN's hidden state; SVDF's activation memory): invoke reads and updates them in place, so
they carry over from one invoke to the next until `reset_all_variables()` zeroes them.

Float kernels follow TFLite's lstm_eval / kernel_utils / svdf operation order, whole batches at a time:
- the input (and auxiliary input) contributions of every time step are one matmul of the whole sequence
  against the four gates' stacked, transposed weights, made in prepare when the weights are constant;
  each time step then costs one recurrent matmul and a handful of elementwise ufuncs. The gate sums
  are formed in TFLite's order (bias + input + aux + recurrent, peephole, layer norm, activation).
- the gates' sigmoid is Eigen's logistic, e / (1 + e) with e = exp(min(x, 16.6355324)); tanh is tanh.
- layer normalization sums sequentially in float32, as TFLite's MeanStddevNormalization does.
- a batch-major sequence is run as the same time steps over all batch rows at once: TFLite steps one row
  at a time, which gives the same numbers.
- with no fused activation (NONE), TFLite's ApplyActivationToVector writes nothing: the cell gate keeps
  whatever its scratch buffer holds (the finished sum, or a partial one where TFLite's buffer swapping
  left the sum in its other buffer) and the output multiplies the output gate by that cell gate instead
  of by the cell state. Reproduced as such.

Hybrid kernels (float activations, int8 weights; uint8 weights read as int8 as TFLite does) quantize
the float vectors row by row as TFLite's x86 build does (quant/hybrid_inputs.py: NEON-on-SSE block
rounding, symmetric or asymmetric_quantize_inputs), multiply exactly in integers (a float BLAS matmul of
int8 values, exact below 2**24 / 2**53) and accumulate sum * (row scale * weight scale) in float32. On x86
hosts, as LiteRT's SSE MatrixBatchVectorMultiplyAccumulate does, a weight of -128 meeting a negative input
in a 16-value block is summed with the wrong sign, and the weight row sums of asymmetric inputs wrap in
int16 lanes (ARM's NEON kernels are exact: so is this, there). On every host the row sums are computed on
the first invoke after prepare only (stale if runtime weights change).
Sigmoid and tanh of hybrid LSTMs are Eigen's exact float functions (their results are requantized).

Integer kernels: the 8x8->16 integer LSTM (int8 input and weights, int16 cell state; LSTM and
UNIDIRECTIONAL_SEQUENCE_LSTM), LSTM's basic kernel in 8 bits (uint8 activations, int16 state, gemmlowp
fixed point) and int8 SVDF (int16 state), bit-exact with LiteRT.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.types import BuiltinOperator, TensorType, type_name
from ..errors import KernelError, ensure, ensure_eq
from ..fidelity.ruy import gemm_rounding
from ..fidelity.sse import sign_transfer_correction, sign_transfer_mask, weight_row_sums
from ..model.options import ActivationFunctionType, LSTMKernelType
from .common import clip, is_constant, output_tensor
from .quant.fixed_point import (
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_simd,
    quantize_multiplier,
    rounding_divide_by_pot,
    wrap,
)
from .quant.gemmlowp import FixedPointMath, inv_sqrt_multiplier
from .quant.hybrid_inputs import (
    quantize_rows_asymmetric,
    quantize_rows_symmetric,
)
from .quant.integer_gemm import exact_float_type, gemm_requantizer
from .registry import register_builtin

F32 = np.float32
T = TensorType
_WEIGHT_INT = (T.INT8, T.UINT8)  # hybrid weights (TFLite reads uint8 weights as int8)

_ZERO = F32(0)
_ONE = F32(1)
_HALF = F32(0.5)
_NEG_INF = F32(-np.inf)

# Eigen's float tanh (TFLite's ApplyTanhToVector, the vector and scalar paths alike): x clamped to +-c,
# then (x + x^3 P(x^2)) / Q(x^2), P and Q by Horner with unfused multiply-adds. Bit-exact with LiteRT.
_TANH_CLAMP = F32(7.90738964080810547)
_TANH_P = tuple(map(F32, (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1)))
_TANH_Q = tuple(map(F32, (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0)))

# Eigen's float logistic (ApplySigmoidToVector). Vector path: e = exp(x/2)^2 with exp by a Cephes range
# reduction and a degree-5 polynomial, then e / (1 + e); the scalar path (elements before the first
# 16-byte aligned one and after the last whole packet of 4) uses std::exp. Both clamp x at the first
# point where the result is 1, and the vector path gives 0 below -104.
_LOGISTIC_HIGHEST = F32(16.6355324)
_LOGISTIC_LOWEST = F32(-104)
_LOG2E = F32(1.44269504088896341)
_EXP_C1 = F32(-0.693359375)
_EXP_C2 = F32(2.12194440e-4)
_EXP_P = tuple(map(F32, (0.49999141693115234375, 0.16666877269744873046875)))
_EXP_P += tuple(map(F32, (4.1898667812347412109375e-2, 8.33471305668354034423828125e-3)))


# P padded with a leading 0 (0 * x + c is exactly c: the same Horner steps) to evaluate P and Q stacked,
# one ufunc call per step for both
_TANH_PQ = np.array([(F32(0), *_TANH_P), _TANH_Q], F32).T[:, :, None]  # [step, 2, 1]


def _tanh(x, out) -> None:
    z = clip(x, -_TANH_CLAMP, _TANH_CLAMP).reshape(-1)
    z2 = z * z
    pq = np.multiply(z2, _TANH_PQ[0])  # [2, size]: Horner's scheme on P and Q at once
    for coefficient in _TANH_PQ[1:-1]:
        pq += coefficient
        pq *= z2
    pq += _TANH_PQ[-1]
    p, q = pq
    z2 *= z
    p *= z2
    p += z
    np.divide(p.reshape(x.shape), q.reshape(x.shape), out=out)


def _sigmoid(x, out, scalar=None) -> None:
    """Eigen's logistic; `scalar`: a boolean mask of the elements TFLite computes on its scalar path."""
    below = x < _LOGISTIC_LOWEST
    half = clip(x, _NEG_INF, _LOGISTIC_HIGHEST)
    if scalar is not None:
        exact = np.exp(half[scalar].astype(np.float64)).astype(F32)
    half *= _HALF
    m = half * _LOG2E
    m += _HALF
    np.floor(m, out=m)
    r = m * _EXP_C1
    r += half
    np.multiply(m, _EXP_C2, out=half)
    r += half
    r2 = r * r
    even = r2 * _EXP_P[2]
    even += _EXP_P[0]
    odd = np.multiply(r2, _EXP_P[3], out=half)
    odd += _EXP_P[1]
    odd *= r
    odd += even
    odd *= r2
    r += _ONE
    odd += r
    e = np.ldexp(odd, m.astype(np.int32), out=odd)
    e *= e
    if scalar is not None:
        e[scalar] = exact
    np.add(e, _ONE, out=r)
    np.divide(e, r, out=out)
    if below.any():
        out[below & ~scalar if scalar is not None else below] = 0


def _fast_sigmoid(x, out, scalar=None) -> None:
    """The logistic within an ulp or two of Eigen's, in four ufunc calls (float kernels, where the
    tolerance allows it; hybrid kernels requantize their results and need Eigen's exact values)."""
    clip(x, _NEG_INF, _LOGISTIC_HIGHEST, out=out)
    np.exp(out, out=out)
    np.divide(out, out + _ONE, out=out)


def _fast_tanh(x, out) -> None:
    np.tanh(x, out=out)


def _activation_function(activation, tanh=_tanh):
    """TFLite's ApplyActivationToVector as a function (x, out); None for NONE, which leaves `out`
    unwritten (as TFLite does)."""
    if activation == ActivationFunctionType.NONE:
        return None
    if activation == ActivationFunctionType.RELU:
        return lambda x, out: np.maximum(x, _ZERO, out=out)
    if activation == ActivationFunctionType.RELU_N1_TO_1:
        return lambda x, out: clip(x, F32(-1), _ONE, out=out)
    if activation == ActivationFunctionType.RELU6:
        return lambda x, out: clip(x, _ZERO, F32(6), out=out)
    if activation == ActivationFunctionType.TANH:
        return np.tanh if tanh is _fast_tanh else tanh  # the ufunc takes `out` positionally
    if activation == ActivationFunctionType.SIGN_BIT:
        return lambda x, out: np.copyto(out, np.signbit(x))
    raise KernelError(f"Unsupported fused activation {activation!r}")


def _layer_norm(x, coefficients, bias) -> None:
    """TFLite's MeanStddevNormalization over the last axis (sequential float32 sums), times the
    coefficients, plus the bias; in place on x (rows, gates, n)."""
    n = F32(x.shape[-1])
    mean = np.add.accumulate(x, axis=-1)[..., -1:]
    mean /= n
    diff = x - mean
    squares = np.add.accumulate(diff * diff, axis=-1)[..., -1:]
    squares /= n
    squares += F32(1e-8)
    np.sqrt(squares, out=squares)
    np.divide(_ONE, squares, out=squares)
    np.multiply(diff, squares, out=x)
    x *= coefficients
    x += bias


def _time_major_view(array: np.ndarray, time_major: bool) -> np.ndarray:
    """A [time, batch, depth] view of a sequence tensor's data."""
    return array if time_major else array.swapaxes(0, 1)


def _sequence_matmul(x_tbd: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """x @ weights for every (time, batch) row of a [time, batch, depth] view, as [time, batch, cols]."""
    if x_tbd.flags.c_contiguous:
        base, swapped = x_tbd, False
    else:
        base, swapped = np.ascontiguousarray(x_tbd.swapaxes(0, 1)), True
    rows = base.reshape(-1, base.shape[-1]) @ weights
    rows = rows.reshape(*base.shape[:-1], weights.shape[1])
    return rows.swapaxes(0, 1) if swapped else rows


# ---- hybrid products (int8 weights times float activations quantized on the fly) ---------------------


@dataclass(frozen=True)
class _HybridMatrix:
    """Int8 weights [rows, cols] prepared for TFLite's hybrid MatrixBatchVectorMultiplyAccumulate:
    transposed to [cols, rows] as floats whose BLAS products of int8 values are exact (float32 while
    every sum stays below 2**24, else float64), the weight row sums (for asymmetric inputs; on x86,
    SseReductionSumVector's int16 lanes that wrap), the mask of the weights of -128 the x86 SSE kernel's
    16-value blocks multiply with the wrong sign (None elsewhere), and one float32 scale per output column."""

    weights_t: np.ndarray
    row_sums: np.ndarray
    mask: np.ndarray | None
    scales: np.ndarray


def _hybrid_matrix(blocks: list, x86: bool, sums_cache: dict | None = None, key: str = "") -> _HybridMatrix:
    """Stack several int8 weight matrices (each with its scale) along their output rows, for an x86 host
    (HostProfile.x86, read in prepare) or another. TFLite sums the weight rows on the first invoke after
    prepare only: with `sums_cache` (op data that prepare renews) the row sums of `key` are computed once
    and reused, stale if runtime weights change afterwards."""
    weights = np.concatenate([np.asarray(w).view(np.int8) for w, _ in blocks], axis=0)
    columns = weights.shape[1]
    dtype = exact_float_type(columns * 128 * 128 + 256 * 128 * columns)  # products + sign corrections
    scales = np.concatenate([np.full(np.asarray(w).shape[0], s, F32) for w, s in blocks])
    if sums_cache is not None and key in sums_cache:
        row_sums = sums_cache[key]
    else:
        row_sums = weight_row_sums(weights, x86).astype(dtype)
        if sums_cache is not None:
            sums_cache[key] = row_sums
    mask = sign_transfer_mask(weights, columns & ~15 if x86 else 0)
    return _HybridMatrix(np.ascontiguousarray(weights.T.astype(dtype)), row_sums, mask, scales)


def _hybrid_product(matrix: _HybridMatrix, values: np.ndarray, asymmetric: bool) -> np.ndarray:
    """float32 sum * (row factor * weight scale) for each row of `values` [rows, n] and each output
    column: TFLite's hybrid MatrixBatchVectorMultiplyAccumulate term before it is added. The rows are
    quantized as BatchQuantizeFloats does (quant/hybrid_inputs.py)."""
    if asymmetric:
        quantized, factor, offset = quantize_rows_asymmetric(values)
    else:
        quantized, factor = quantize_rows_symmetric(values)
    dtype = matrix.weights_t.dtype
    sums = quantized.astype(dtype, copy=False) @ matrix.weights_t  # exact (see _HybridMatrix)
    if matrix.mask is not None:
        sums += sign_transfer_correction(quantized, matrix.mask).astype(dtype, copy=False)
    if asymmetric:
        sums -= offset[:, None].astype(dtype) * matrix.row_sums
    product = sums.astype(F32, copy=False)
    product *= factor[:, None] * matrix.scales
    return product


# ---- LSTM ---------------------------------------------------------------------------------------------

# Positions of one LSTM direction's tensors in the node's inputs.
_FULL_SLOTS = {
    "input_to_input": 1,
    "input_to_forget": 2,
    "input_to_cell": 3,
    "input_to_output": 4,
    "recurrent_to_input": 5,
    "recurrent_to_forget": 6,
    "recurrent_to_cell": 7,
    "recurrent_to_output": 8,
    "cell_to_input": 9,
    "cell_to_forget": 10,
    "cell_to_output": 11,
    "input_bias": 12,
    "forget_bias": 13,
    "cell_bias": 14,
    "output_bias": 15,
    "projection_weights": 16,
    "projection_bias": 17,
    "output_state": 18,
    "cell_state": 19,
    "input_layer_norm": 20,
    "forget_layer_norm": 21,
    "cell_layer_norm": 22,
    "output_layer_norm": 23,
}
_BIDI_FW_SLOTS = {
    **{k: v for k, v in _FULL_SLOTS.items() if v <= 17},
    "output_state": 35,
    "cell_state": 36,
    "aux_to_input": 40,
    "aux_to_forget": 41,
    "aux_to_cell": 42,
    "aux_to_output": 43,
}
_BIDI_BW_SLOTS = {
    **{k: v + 17 for k, v in _FULL_SLOTS.items() if v <= 17},
    "output_state": 37,
    "cell_state": 38,
    "aux_to_input": 44,
    "aux_to_forget": 45,
    "aux_to_cell": 46,
    "aux_to_output": 47,
}
_GATES = ("input", "forget", "cell", "output")


def _slot(context, node, slots: dict, name: str):
    position = slots.get(name)
    if position is None or position >= len(node.inputs) or node.inputs[position] < 0:
        return None
    return context.tensors[node.inputs[position]]


@dataclass
class _LstmDirection:
    """One LSTM direction: what prepare learned and, once the weights are known, their packed forms."""

    slots: dict
    n_input: int
    n_aux: int
    n_cell: int
    n_output: int
    cifg: bool
    peephole: bool
    layer_norm: bool
    projection: bool
    cell_diag: bool  # recurrent_to_cell is a diagonal (1-D) weight vector
    hybrid: bool
    x86: bool  # the host runs LiteRT's x86 build (HostProfile.x86): its SSE hybrid kernels' quirks apply
    integer: bool = False  # int8 input, the 8x8->16 integer kernel
    order: tuple[str, ...] = ()  # the gates of the stacked buffers, left to right
    packed: Any = None  # _LstmFloatWeights / _LstmHybridWeights; None: packed at each invoke
    row_sums: dict = field(default_factory=dict)  # hybrid weight row sums, computed once (as TFLite)
    scalar_mask: Any = None  # ((batch, batch_major), mask) of _sigmoid_scalar_elements, made once

    def gate_slice(self, gate: str) -> slice:
        k = self.order.index(gate)
        return slice(k * self.n_cell, (k + 1) * self.n_cell)


@dataclass
class _LstmFloatWeights:
    input_weights: np.ndarray  # [n_input, gates * n_cell]
    aux_weights: np.ndarray | None
    recurrent_weights: np.ndarray  # [n_output, gates * n_cell]
    bias: np.ndarray  # [gates * n_cell]
    peephole: dict = field(default_factory=dict)  # gate -> [n_cell]
    layer_norm: np.ndarray | None = None  # [gates, n_cell]
    projection: np.ndarray | None = None  # [n_cell, n_output]
    projection_bias: np.ndarray | None = None


@dataclass
class _LstmHybridWeights:
    input_matrix: _HybridMatrix
    aux_matrix: _HybridMatrix | None
    recurrent_matrix: _HybridMatrix
    bias: np.ndarray
    peephole: dict = field(default_factory=dict)
    layer_norm: np.ndarray | None = None
    projection: _HybridMatrix | None = None
    projection_bias: np.ndarray | None = None


def _lstm_gate_order(cifg: bool, peephole: bool) -> tuple[str, ...]:
    # Sigmoid gates side by side (one call); with peephole the output gate comes last, since it needs
    # the updated cell state, and the others stay contiguous for the layer norm.
    order = ("input", "forget", "cell", "output") if peephole else ("input", "forget", "output", "cell")
    return order[1:] if cifg else order


def _lstm_direction_tensors(context, node, direction: _LstmDirection) -> dict:
    return {name: _slot(context, node, direction.slots, name) for name in direction.slots}


def _pack_lstm(direction: _LstmDirection, t: dict) -> Any:
    order = direction.order
    n = direction.n_cell
    if direction.layer_norm:
        bias = np.zeros(len(order) * n, F32)
        layer_norm = np.stack([t[f"{g}_layer_norm"].data.reshape(n) for g in order]).astype(F32)
        gate_bias = np.stack([t[f"{g}_bias"].data.reshape(n) for g in order]).astype(F32)
        layer_norm = (layer_norm, gate_bias)
    else:
        bias = np.concatenate([t[f"{g}_bias"].data.reshape(n) for g in order]).astype(F32)
        layer_norm = None
    if direction.hybrid:
        return _pack_lstm_hybrid(direction, t, bias, layer_norm)
    input_weights = np.concatenate([t[f"input_to_{g}"].data for g in order], axis=0).T.astype(F32)
    aux_weights = None
    if direction.n_aux:
        aux_weights = np.concatenate([t[f"aux_to_{g}"].data for g in order], axis=0).T.astype(F32)
    recurrent = []
    for g in order:
        weights = t[f"recurrent_to_{g}"].data
        recurrent.append(np.diag(weights) if weights.ndim == 1 else weights)
    packed = _LstmFloatWeights(
        np.ascontiguousarray(input_weights),
        None if aux_weights is None else np.ascontiguousarray(aux_weights),
        np.ascontiguousarray(np.concatenate(recurrent, axis=0).T.astype(F32)),
        bias,
        layer_norm=layer_norm,
    )
    if direction.peephole:
        packed.peephole = {
            g: t[f"cell_to_{g}"].data.reshape(n).astype(F32)
            for g in ("input", "forget", "output")
            if g in order
        }
    if direction.projection:
        packed.projection = np.ascontiguousarray(t["projection_weights"].data.T.astype(F32))
        if t["projection_bias"] is not None:
            packed.projection_bias = t["projection_bias"].data.astype(F32)
    return packed


def _pack_lstm_hybrid(direction: _LstmDirection, t: dict, bias, layer_norm) -> _LstmHybridWeights:
    order = direction.order
    n = direction.n_cell

    def matrix(prefix):
        blocks = [(t[f"{prefix}{g}"].data, t[f"{prefix}{g}"].params.scale) for g in order]
        return _hybrid_matrix(blocks, direction.x86, direction.row_sums, prefix)

    packed = _LstmHybridWeights(
        matrix("input_to_"),
        matrix("aux_to_") if direction.n_aux else None,
        matrix("recurrent_to_"),
        bias,
        layer_norm=layer_norm,
    )
    if direction.peephole:
        for g in ("input", "forget", "output"):
            if g in order:
                weights = t[f"cell_to_{g}"]
                packed.peephole[g] = F32(weights.params.scale) * weights.data.view(np.int8).reshape(n).astype(
                    F32
                )
    if direction.projection:
        weights = t["projection_weights"]
        packed.projection = _hybrid_matrix(
            [(weights.data, weights.params.scale)], direction.x86, direction.row_sums, "projection"
        )
        if t["projection_bias"] is not None:
            packed.projection_bias = t["projection_bias"].data.astype(F32)
    return packed


def _lstm_weights_constant(direction: _LstmDirection, t: dict) -> bool:
    skip = ("output_state", "cell_state")
    return all(tensor is None or is_constant(tensor) for name, tensor in t.items() if name not in skip)


@dataclass
class _LstmRun:
    """Per-invoke settings shared by the directions of an LSTM node."""

    activation: Any
    cell_clip: float
    proj_clip: float
    asymmetric: bool
    batch_major: bool


def _run_lstm(
    direction: _LstmDirection,
    weights: Any,
    run: _LstmRun,
    x: np.ndarray,
    aux: np.ndarray | None,
    h: np.ndarray,
    c: np.ndarray,
    out: np.ndarray,
    forward: bool,
) -> None:
    """Run one direction over a [time, batch, depth] sequence view, updating h [batch, n_output] and
    c [batch, n_cell] in place and writing each step's output into out [time, batch, n_output]."""
    steps, batch = x.shape[0], x.shape[1]
    if steps == 0 or batch == 0:
        return
    n = direction.n_cell
    hybrid = direction.hybrid
    # Input (and aux input) contributions of every step at once: bias + x.W (+ aux.W), TFLite's order.
    if hybrid:
        flat = np.ascontiguousarray(x).reshape(-1, x.shape[2])
        pre = _hybrid_product(weights.input_matrix, flat, run.asymmetric)
        pre += weights.bias
        if aux is not None:
            pre += _hybrid_product(
                weights.aux_matrix, np.ascontiguousarray(aux).reshape(-1, aux.shape[2]), run.asymmetric
            )
        pre = pre.reshape(steps, batch, -1)
    else:
        pre = _sequence_matmul(x, weights.input_weights)
        pre += weights.bias
        if aux is not None:
            pre += _sequence_matmul(aux, weights.aux_weights)
    quirk = run.activation == ActivationFunctionType.NONE
    if quirk:
        zero_rows = _zero_input_rows(direction, run, x, aux)

    gates = np.empty((batch, len(direction.order) * n), F32)
    recurrent = np.empty_like(gates)
    scratch = np.empty((batch, n), F32)
    cell_gate = gates[:, direction.gate_slice("cell")]
    output_gate = gates[:, direction.gate_slice("output")]
    forget_gate = gates[:, direction.gate_slice("forget")]
    input_gate = None if direction.cifg else gates[:, direction.gate_slice("input")]
    gates3 = gates.reshape(batch, -1, n)
    layer_norm = weights.layer_norm
    peephole = weights.peephole
    ngates = len(direction.order)
    # Before the cell update: the sigmoid gates are the leading ones (all but cell when no peephole).
    sigmoid_early = slice(0, (ngates - 1) * n) if not direction.peephole else slice(0, (ngates - 2) * n)
    proj_clip = F32(run.proj_clip)
    cell_clip = F32(run.cell_clip)
    # Eigen's exact logistic and tanh where the results are requantized (hybrid), faster ones otherwise
    sigmoid, tanh = (_sigmoid, _tanh) if hybrid else (_fast_sigmoid, _fast_tanh)
    scalar_early = scalar_output = None
    if hybrid:
        key = (batch, run.batch_major)
        if direction.scalar_mask is None or direction.scalar_mask[0] != key:
            direction.scalar_mask = (key, _sigmoid_scalar_elements(direction, batch, run.batch_major))
        scalar = direction.scalar_mask[1]
        scalar_early, scalar_output = scalar[:, sigmoid_early], scalar[:, direction.gate_slice("output")]

    activate = _activation_function(run.activation, tanh)
    hidden = h  # the output state: h before the first step, then the last step's output
    for t in range(steps) if forward else range(steps - 1, -1, -1):
        if hybrid:
            if hidden.any():
                np.add(pre[t], _hybrid_product(weights.recurrent_matrix, hidden, run.asymmetric), out=gates)
            else:
                np.copyto(gates, pre[t])
        else:
            np.matmul(hidden, weights.recurrent_weights, out=recurrent)
            np.add(pre[t], recurrent, out=gates)
        if direction.peephole:
            if input_gate is not None:
                np.multiply(peephole["input"], c, out=scratch)
                input_gate += scratch
            np.multiply(peephole["forget"], c, out=scratch)
            forget_gate += scratch
        if layer_norm is not None:
            if direction.peephole:  # output gate later, after its peephole on the new cell state
                _layer_norm(gates3[:, :-1], layer_norm[0][:-1], layer_norm[1][:-1])
            else:
                _layer_norm(gates3, layer_norm[0], layer_norm[1])
        sigmoid(gates[:, sigmoid_early], gates[:, sigmoid_early], scalar_early)
        if activate is not None:
            activate(cell_gate, cell_gate)
        if quirk:
            _cell_gate_quirk(direction, weights, pre[t], cell_gate, zero_rows[t])
        # Cell state: c = f * c + i * g (CIFG: i = 1 - f), clipped.
        np.multiply(forget_gate, c, out=c)
        if input_gate is None:
            np.subtract(_ONE, forget_gate, out=forget_gate)
            np.multiply(cell_gate, forget_gate, out=scratch)
        else:
            np.multiply(cell_gate, input_gate, out=scratch)
        c += scratch
        if cell_clip > 0:
            clip(c, -cell_clip, cell_clip, out=c)
        if direction.peephole:
            np.multiply(peephole["output"], c, out=scratch)
            output_gate += scratch
            if layer_norm is not None:
                _layer_norm(gates3[:, -1:], layer_norm[0][-1:], layer_norm[1][-1:])
            sigmoid(output_gate, output_gate, scalar_output)
        # Output: o * act(c) (with no activation TFLite multiplies by the cell gate buffer instead).
        if activate is None:
            activated = cell_gate
        else:
            activate(c, scratch)
            activated = scratch
        hidden = out[t]
        if direction.projection:
            np.multiply(output_gate, activated, out=scratch)
            _lstm_project(weights, hybrid, run.asymmetric, scratch, hidden)
            if proj_clip > 0:
                clip(hidden, -proj_clip, proj_clip, out=hidden)
        else:
            np.multiply(output_gate, activated, out=hidden)
    h[...] = hidden


def _sigmoid_scalar_elements(direction: _LstmDirection, batch: int, batch_major: bool) -> np.ndarray:
    """Which gate elements [batch, gates * n_cell] TFLite's Eigen logistic computes on its scalar path.

    Each gate has its own stretch of TFLite's scratch buffer (in the order input, cell, forget, output;
    CIFG without input), which the arena aligns to 64 bytes. Eigen runs 4-float packets from the first
    16-byte aligned element of the stretch it is given (the whole gate for time-major steps, one batch
    row at a time for batch-major ones) and the scalar code before and after them."""
    n = direction.n_cell
    slots = ("cell", "forget", "output") if direction.cifg else ("input", "cell", "forget", "output")
    mask = np.zeros((batch, len(direction.order) * n), bool)
    for gate in direction.order:
        start = slots.index(gate) * batch * n
        flat = np.zeros(batch * n, bool)
        stretches = (
            [(start + b * n, b * n, n) for b in range(batch)] if batch_major else [(start, 0, batch * n)]
        )
        for offset, first, size in stretches:
            head = min(-offset % 4, size)
            end = head + (size - head) // 4 * 4
            flat[first : first + head] = True
            flat[first + end : first + size] = True
        mask[:, direction.gate_slice(gate)] = flat.reshape(batch, n)
    return mask


def _lstm_project(weights, hybrid: bool, asymmetric: bool, hidden: np.ndarray, h: np.ndarray) -> None:
    """h = projection(hidden) + projection bias, as TFLite's float or hybrid output step."""
    if hybrid:
        if weights.projection_bias is None:
            h.fill(0)
        else:
            h[...] = weights.projection_bias
        if hidden.any():
            h += _hybrid_product(weights.projection, hidden, asymmetric)
        return
    np.matmul(hidden, weights.projection, out=h)
    if weights.projection_bias is not None:
        h += weights.projection_bias


def _zero_input_rows(direction: _LstmDirection, run: _LstmRun, x, aux) -> np.ndarray:
    """[time, batch] count of the nonzero input contributions TFLite sees at each step: its all-zero
    checks cover one batch row per step for batch-major sequences, the whole batch otherwise."""

    def nonzero(v):
        rows = v.any(axis=2)
        return rows if run.batch_major else np.broadcast_to(rows.any(axis=1, keepdims=True), rows.shape)

    count = nonzero(x).astype(np.int8)
    if aux is not None:
        count = count + nonzero(aux)
    return count


def _cell_gate_quirk(direction, weights, pre_t, cell_gate, contributions) -> None:
    """With no activation, the cell gate TFLite goes on with is its gate buffer, which holds the sum only
    where its accumulation ended there (see CalculateLstmGateFloat's buffer swaps); elsewhere it holds
    the bias (zero with layer norm) or, after an input and an aux contribution, their partial sum."""
    if direction.hybrid:
        return  # the hybrid gate is accumulated in place
    odd = (contributions % 2) == 1
    in_gate_buffer = ~odd if direction.cell_diag else odd
    if in_gate_buffer.all():
        return
    rows = ~in_gate_buffer
    span = direction.gate_slice("cell")
    if direction.cell_diag:  # one input contribution went to the other buffer: the gate keeps its start
        start = np.zeros(direction.n_cell, F32) if weights.layer_norm is not None else weights.bias[span]
        cell_gate[rows] = start
    else:
        cell_gate[rows] = pre_t[rows][:, span]


def _check_lstm_direction(
    context, node, direction: _LstmDirection, t: dict, use_layer_norm: bool, is_integer: bool, op: str
) -> None:
    """TFLite's CheckInputTensorDimensions for one direction's tensors."""
    n_cell, n_input, n_output = direction.n_cell, direction.n_input, direction.n_output
    options = node.builtin_data
    ensure(options.cell_clip >= 0, "params->cell_clip >= 0 was not true.")
    ensure(options.proj_clip >= 0, "params->proj_clip >= 0 was not true.")
    forget = t["input_to_forget"]
    ensure(forget is not None, "Tensor input_to_forget_weights is required")
    weight_type = forget.type
    ensure(
        weight_type in (T.FLOAT32, T.UINT8, T.INT8),
        f"{op} weights of type {type_name(weight_type)} are not supported",
    )

    def matrix(name, rows, cols, diag_ok=False):
        tensor = t[name]
        if diag_ok and tensor is not None and len(tensor.shape) == 1:
            ensure_eq(tensor.shape[0], rows, f"{name}_weights->dims->data[0]")
            return
        if tensor is None:
            return
        ensure_eq(len(tensor.shape), 2, f"{name}_weights->dims->size")
        ensure_eq(tensor.shape[0], rows, f"{name}_weights->dims->data[0]")
        ensure_eq(tensor.shape[1], cols, f"{name}_weights->dims->data[1]")
        if tensor.type != weight_type:
            raise KernelError(
                f"{name}_weights->type != input_to_forget_weights->type "
                f"({type_name(tensor.type)} != {type_name(weight_type)})"
            )

    diag_ok = op == "UNIDIRECTIONAL_SEQUENCE_LSTM"
    for gate in _GATES:
        if gate != "input" or t["input_to_input"] is not None:
            ensure(t[f"input_to_{gate}"] is not None, f"Tensor input_to_{gate}_weights is required")
        matrix(f"input_to_{gate}", n_cell, n_input)
        if gate != "input":
            ensure(t[f"recurrent_to_{gate}"] is not None, f"Tensor recurrent_to_{gate}_weights is required")
        matrix(f"recurrent_to_{gate}", n_cell, n_output, diag_ok)
    cifg = t["input_to_input"] is None
    ensure(cifg == (t["recurrent_to_input"] is None), "cifg_weights_all_or_none == true was not true.")
    peephole_type = T.INT16 if is_integer else weight_type
    present = []
    for gate in ("input", "forget", "output"):
        tensor = t[f"cell_to_{gate}"]
        if tensor is not None:
            ensure_eq(len(tensor.shape), 1, f"cell_to_{gate}_weights->dims->size")
            ensure_eq(tensor.shape[0], n_cell, f"cell_to_{gate}_weights->dims->data[0]")
            if tensor.type != peephole_type:
                raise KernelError(
                    f"cell_to_{gate}_weights->type != {type_name(peephole_type)} "
                    f"({type_name(tensor.type)} != {type_name(peephole_type)})"
                )
        present.append(tensor is not None)
    all_present = (present[0] or cifg) and present[1] and present[2]
    ensure(all_present or not any(present), "peephole_weights_all_or_none == true was not true.")
    bias_type = T.INT32 if is_integer else T.FLOAT32
    for gate in _GATES:
        tensor = t[f"{gate}_bias"]
        if gate == "input" and cifg:
            ensure(tensor is None, "input_gate_bias == nullptr was not true.")
            continue
        ensure(tensor is not None, f"Tensor {gate}_gate_bias is required")
        ensure_eq(len(tensor.shape), 1, f"{gate}_gate_bias->dims->size")
        ensure_eq(tensor.shape[0], n_cell, f"{gate}_gate_bias->dims->data[0]")
        if tensor.type != bias_type:
            raise KernelError(
                f"{gate}_gate_bias->type != {type_name(bias_type)} ({type_name(tensor.type)} != {type_name(bias_type)})"
            )
    projection, projection_bias = t["projection_weights"], t["projection_bias"]
    if projection is not None:
        ensure_eq(len(projection.shape), 2, "projection_weights->dims->size")
        ensure_eq(projection.shape[0], n_output, "projection_weights->dims->data[0]")
        ensure_eq(projection.shape[1], n_cell, "projection_weights->dims->data[1]")
        if projection.type != weight_type:
            raise KernelError(
                f"projection_weights->type != input_to_forget_weights->type "
                f"({type_name(projection.type)} != {type_name(weight_type)})"
            )
    if projection_bias is not None:
        ensure_eq(len(projection_bias.shape), 1, "projection_bias->dims->size")
        ensure_eq(projection_bias.shape[0], n_output, "projection_bias->dims->data[0]")
        if projection_bias.type != bias_type:
            raise KernelError(
                f"projection_bias->type != {type_name(bias_type)} "
                f"({type_name(projection_bias.type)} != {type_name(bias_type)})"
            )
    ensure(
        projection is not None or projection_bias is None,
        "projecton_tensors_consistent == true was not true.",
    )
    if use_layer_norm:
        norm_type = T.INT16 if is_integer else T.FLOAT32
        for gate in _GATES:
            tensor = t.get(f"{gate}_layer_norm")
            if gate == "input" and cifg:
                ensure(tensor is None, "input_layer_norm_coefficients == nullptr was not true.")
                continue
            ensure(tensor is not None, f"{gate}_layer_norm_coefficients != nullptr was not true.")
            ensure_eq(len(tensor.shape), 1, f"{gate}_layer_norm_coefficients->dims->size")
            ensure_eq(tensor.shape[0], n_cell, f"{gate}_layer_norm_coefficients->dims->data[0]")
            if tensor.type != norm_type:
                raise KernelError(
                    f"{gate}_layer_norm_coefficients->type != {type_name(norm_type)} "
                    f"({type_name(tensor.type)} != {type_name(norm_type)})"
                )


def _lstm_direction(
    context, node, slots: dict, n_input: int, n_aux: int, source_type, use_layer_norm: bool, op: str
) -> tuple[_LstmDirection, dict]:
    """Read and check one direction's tensors; returns the direction and its tensors by role."""
    t = {name: _slot(context, node, slots, name) for name in slots}
    to_output = t["input_to_output"]
    ensure(to_output is not None, "Tensor input_to_output_weights is required")
    ensure_eq(len(to_output.shape), 2, "input_to_output_weights->dims->size")
    n_cell = to_output.shape[0]
    ensure_eq(to_output.shape[1], n_input, "input_to_output_weights->dims->data[1]")
    recurrent = t["recurrent_to_output"]
    ensure(recurrent is not None, "Tensor recurrent_to_output_weights is required")
    diag = len(recurrent.shape) == 1 and op == "UNIDIRECTIONAL_SEQUENCE_LSTM"
    if not diag:
        ensure_eq(len(recurrent.shape), 2, "recurrent_to_output_weights->dims->size")
        if recurrent.type != to_output.type:
            raise KernelError(
                f"recurrent_to_output_weights->type != input_to_output_weights->type "
                f"({type_name(recurrent.type)} != {type_name(to_output.type)})"
            )
    ensure_eq(recurrent.shape[0], n_cell, "recurrent_to_output_weights->dims->data[0]")
    n_output = recurrent.shape[0] if diag else recurrent.shape[1]
    is_integer = source_type == T.INT8
    hybrid = source_type == T.FLOAT32 and to_output.type in _WEIGHT_INT
    direction = _LstmDirection(
        slots=slots,
        n_input=n_input,
        n_aux=n_aux,
        n_cell=n_cell,
        n_output=n_output,
        cifg=t["input_to_input"] is None,
        peephole=t["cell_to_output"] is not None,
        layer_norm=use_layer_norm,
        projection=t["projection_weights"] is not None,
        cell_diag=t["recurrent_to_cell"] is not None and len(t["recurrent_to_cell"].shape) == 1,
        hybrid=hybrid,
        x86=context.host.x86,
    )
    _check_lstm_direction(context, node, direction, t, use_layer_norm, is_integer, op)
    for name, tensor in t.items():
        if tensor is not None and tensor.sparsity is not None:
            raise KernelError(f"{op} with sparse {name} weights is not supported")
    any_diag = any(
        t[f"recurrent_to_{g}"] is not None and len(t[f"recurrent_to_{g}"].shape) == 1 for g in _GATES
    )
    if any_diag:
        ensure(
            n_output == n_cell,
            f"{op} diagonal recurrent weights need n_output == n_cell, got {n_output} and {n_cell}",
        )
        if hybrid:
            raise KernelError(f"{op} with diagonal recurrent weights and int8 weights is not supported")
        for g in _GATES:
            tensor = t[f"recurrent_to_{g}"]
            if tensor is not None and len(tensor.shape) == 1 and tensor.type != T.FLOAT32:
                raise KernelError(
                    f"{op} diagonal recurrent weights must be FLOAT32, got {type_name(tensor.type)}"
                )
    if source_type == T.FLOAT32:
        ensure(
            to_output.type in (T.FLOAT32, T.INT8, T.UINT8),
            f"Type {type_name(to_output.type)} is not currently supported.",
        )
    elif is_integer:
        if op == "BIDIRECTIONAL_SEQUENCE_LSTM":
            raise KernelError(f"input->type != kTfLiteFloat32 ({type_name(source_type)} != FLOAT32)")
        if to_output.type != T.INT8:
            raise KernelError(f"{op} with INT8 input needs INT8 weights, got {type_name(to_output.type)}")
        if any_diag:
            raise KernelError(f"{op} with INT8 input and diagonal recurrent weights is not supported")
        direction.integer = True
    else:
        raise KernelError(f"{op} input of type {type_name(source_type)} is not supported")
    direction.order = _lstm_gate_order(direction.cifg, direction.peephole)
    return direction, t


def _state_tensor(context, node, slots: dict, name: str, elements: int):
    tensor = _slot(context, node, slots, name)
    ensure(tensor is not None and tensor.is_variable, f"{name} != nullptr was not true.")
    size = int(np.prod(tensor.shape, dtype=np.int64))
    ensure_eq(size, elements, f"NumElements({name})")
    return tensor


def _lstm_options_run(options, batch_major: bool) -> _LstmRun:
    return _LstmRun(
        activation=options.fused_activation_function,
        cell_clip=float(options.cell_clip),
        proj_clip=float(options.proj_clip),
        asymmetric=bool(getattr(options, "asymmetric_quantize_inputs", False)),
        batch_major=batch_major,
    )


def _lstm_layer_norm_inputs(context, node) -> bool:
    count = len(node.inputs)
    if count == 24:
        return _slot(context, node, _FULL_SLOTS, "forget_layer_norm") is not None
    if count == 20:
        return False
    raise KernelError(f"The LSTM Full kernel expects 20 or 24 inputs. Got {count} inputs")


@dataclass
class _LstmOpData:
    directions: list
    run: _LstmRun
    time_major: bool
    extra: dict = field(default_factory=dict)


def _finish_direction(direction: _LstmDirection, t: dict) -> None:
    if _lstm_weights_constant(direction, t):
        direction.packed = _pack_lstm(direction, t)


def _direction_weights(context, node, direction: _LstmDirection):
    if direction.packed is not None:
        return direction.packed
    return _pack_lstm(direction, _lstm_direction_tensors(context, node, direction))


def _lstm_prepare(context, node, sequence: bool):
    """LSTM's full kernel (one step, input [batch, depth]) and UNIDIRECTIONAL_SEQUENCE_LSTM (input
    [time, batch, depth] or [batch, time, depth]): one kernel, the single step being a sequence of one."""
    op = "UNIDIRECTIONAL_SEQUENCE_LSTM" if sequence else "LSTM"
    use_layer_norm = _lstm_layer_norm_inputs(context, node)
    ensure_eq(len(node.outputs), 1, "node->outputs->size")
    options = node.builtin_data
    source = context.tensors[node.inputs[0]]
    ensure(len(source.shape) > 1, "input->dims->size > 1 was not true.")
    ensure_eq(len(source.shape), 3 if sequence else 2, f"{op} input rank")
    time_major = bool(options.time_major) if sequence else True
    n_batch = source.shape[1] if sequence and time_major else source.shape[0]
    n_input = source.shape[-1]
    direction, t = _lstm_direction(context, node, _FULL_SLOTS, n_input, 0, source.type, use_layer_norm, op)
    _state_tensor(context, node, _FULL_SLOTS, "output_state", n_batch * direction.n_output)
    _state_tensor(context, node, _FULL_SLOTS, "cell_state", n_batch * direction.n_cell)
    context.resize_tensor(output_tensor(context, node), (*source.shape[:-1], direction.n_output))
    if direction.integer:
        direction.packed = _integer_lstm_prepare(context, node, direction, t, source, op)
    else:
        _finish_direction(direction, t)
    data = _LstmOpData([direction], _lstm_options_run(options, not time_major), time_major)
    data.extra = {"sequence": sequence}
    node.user_data = data


def lstm_prepare(context, node):
    if node.builtin_data.kernel_type == LSTMKernelType.BASIC:
        return basic_lstm_prepare(context, node)
    return _lstm_prepare(context, node, sequence=False)


def unidirectional_lstm_prepare(context, node):
    return _lstm_prepare(context, node, sequence=True)


def lstm_invoke(context, node):
    data = node.user_data
    if isinstance(data, _BasicLstm):
        return basic_lstm_invoke(context, node)
    direction = data.directions[0]
    tensors = context.tensors
    source, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if data.extra["sequence"]:
        source, out = _time_major_view(source, data.time_major), _time_major_view(out, data.time_major)
    else:
        source, out = source[None], out[None]
    batch = source.shape[1]
    h = tensors[node.inputs[18]].data.reshape(batch, direction.n_output)
    c = tensors[node.inputs[19]].data.reshape(batch, direction.n_cell)
    if direction.integer:
        _run_integer_lstm(direction.packed, source, h, c, out)
        return
    weights = _direction_weights(context, node, direction)
    _run_lstm(direction, weights, data.run, source, None, h, c, out, True)


def bidirectional_lstm_prepare(context, node):
    options = node.builtin_data
    ensure_eq(len(node.inputs), 48, "node->inputs->size")
    ensure_eq(len(node.outputs), 1 if options.merge_outputs else 2, "node->outputs->size")
    source = context.tensors[node.inputs[0]]
    if source.type != T.FLOAT32:
        raise KernelError(f"input->type != kTfLiteFloat32 ({type_name(source.type)} != FLOAT32)")
    ensure_eq(len(source.shape), 3, "input->dims->size")
    time_major = bool(options.time_major)
    max_time, n_batch = (
        (source.shape[0], source.shape[1]) if time_major else (source.shape[1], source.shape[0])
    )
    n_input = source.shape[2]
    op = "BIDIRECTIONAL_SEQUENCE_LSTM"
    aux = _slot(context, node, {"aux": 39}, "aux")
    fw_aux_forget = _slot(context, node, _BIDI_FW_SLOTS, "aux_to_forget")
    aux_roles = ("aux_to_cell", "aux_to_forget", "aux_to_output")
    present = [
        _slot(context, node, s, r) is not None for s in (_BIDI_FW_SLOTS, _BIDI_BW_SLOTS) for r in aux_roles
    ]
    ensure(all(present) or not any(present), "aux_inputs_weights_all_or_none was not true.")
    use_aux = fw_aux_forget is not None
    n_aux = 0
    if use_aux:
        ensure(aux is not None, "aux_input != nullptr was not true.")
    if aux is not None:
        ensure_eq(len(aux.shape), 3, "aux_input->dims->size")
        ensure_eq(aux.shape[0], source.shape[0], "aux_input->dims->data[0]")
        ensure_eq(aux.shape[1], source.shape[1], "aux_input->dims->data[1]")
        if use_aux:
            n_aux = aux.shape[2]
        else:
            ensure_eq(aux.shape[2], n_input, "aux_input->dims->data[2]")
    fw_slots = dict(_BIDI_FW_SLOTS)
    bw_slots = dict(_BIDI_BW_SLOTS)
    if not use_aux:
        for slots in (fw_slots, bw_slots):
            for role in ("aux_to_input", *aux_roles):
                slots.pop(role)
    fw, fw_t = _lstm_direction(context, node, fw_slots, n_input, n_aux, source.type, False, op)
    bw, bw_t = _lstm_direction(context, node, bw_slots, n_input, n_aux, source.type, False, op)
    # TFLite checks both directions' tensors against each direction's sizes: they must agree.
    ensure_eq((bw.n_cell, bw.n_output), (fw.n_cell, fw.n_output), f"{op} backward cell and output sizes")
    if fw.hybrid != bw.hybrid:
        raise KernelError(f"{op} forward and backward weights must have the same type")
    for direction, t in ((fw, fw_t), (bw, bw_t)):
        if use_aux:
            for role in aux_roles:
                tensor = t[role]
                ensure_eq(len(tensor.shape), 2, f"{role}_weights->dims->size")
                ensure_eq(tensor.shape[0], direction.n_cell, f"{role}_weights->dims->data[0]")
                ensure_eq(tensor.shape[1], n_aux, f"{role}_weights->dims->data[1]")
            if not direction.cifg:
                tensor = t["aux_to_input"]
                ensure(tensor is not None, "aux_input_to_input_weights != nullptr was not true.")
                ensure_eq(tensor.shape[0], direction.n_cell, "aux_input_to_input_weights->dims->data[0]")
                ensure_eq(tensor.shape[1], n_aux, "aux_input_to_input_weights->dims->data[1]")
            for role in ("aux_to_input", *aux_roles):
                tensor = t[role]
                if tensor is not None and tensor.type != t["input_to_forget"].type:
                    raise KernelError(f"{op} aux weights must have the input weights' type")
    fw_output = output_tensor(context, node, 0)
    merged = bool(options.merge_outputs)
    lead = (max_time, n_batch) if time_major else (n_batch, max_time)
    context.resize_tensor(fw_output, (*lead, fw.n_output + bw.n_output if merged else fw.n_output))
    if not merged:
        context.resize_tensor(output_tensor(context, node, 1), (*lead, bw.n_output))
    for direction, slots in ((fw, fw_slots), (bw, bw_slots)):
        _state_tensor(context, node, slots, "output_state", n_batch * direction.n_output)
        _state_tensor(context, node, slots, "cell_state", n_batch * direction.n_cell)
    _finish_direction(fw, fw_t)
    _finish_direction(bw, bw_t)
    data = _LstmOpData([fw, bw], _lstm_options_run(options, not time_major), time_major)
    data.extra = {"merged": merged, "use_aux": use_aux, "has_aux_input": aux is not None}
    node.user_data = data


def bidirectional_lstm_invoke(context, node):
    data = node.user_data
    fw, bw = data.directions
    tensors = context.tensors
    tm = data.time_major
    source = _time_major_view(tensors[node.inputs[0]].data, tm)
    aux = _time_major_view(tensors[node.inputs[39]].data, tm) if data.extra["has_aux_input"] else None
    # Stacking without cross links: the aux input is the backward cell's input, and no aux input is used.
    non_stacking = not data.extra["use_aux"] and aux is not None
    bw_source = aux if non_stacking else source
    real_aux = None if non_stacking else aux
    batch = source.shape[1]
    fw_out = _time_major_view(tensors[node.outputs[0]].data, tm)
    if data.extra["merged"]:
        bw_out = fw_out[..., fw.n_output :]
        fw_out = fw_out[..., : fw.n_output]
    else:
        bw_out = _time_major_view(tensors[node.outputs[1]].data, tm)
    for direction, states, target, sequence, forward in (
        (fw, (35, 36), fw_out, source, True),
        (bw, (37, 38), bw_out, bw_source, False),
    ):
        h = tensors[node.inputs[states[0]]].data.reshape(batch, direction.n_output)
        c = tensors[node.inputs[states[1]]].data.reshape(batch, direction.n_cell)
        weights = _direction_weights(context, node, direction)
        _run_lstm(direction, weights, data.run, sequence, real_aux, h, c, target, forward)


# ---- integer LSTM (int8 input, int8 weights, int16 cell: TFLite's 8x8->16 kernel) ---------------------


@dataclass
class _IntegerGate:
    """One gate of the integer LSTM: requantization of its input and recurrent products, peephole, layer
    norm (TFLite's ApplyLayerNorm) and activation table."""

    input_scale: tuple  # (multiplier, shift) of the input product into the gate's Q3.12
    recurrent_scale: tuple
    peephole: np.ndarray | None = None  # int16 cell_to_gate weights
    peephole_scale: tuple = (0, 0)
    norm_weights: np.ndarray | None = None  # int16 layer norm coefficients
    norm_bias: np.ndarray | None = None  # int32 gate bias (applied by the layer norm)
    norm_scale: tuple = (0, 0)
    variance_guard: int = 1
    table: np.ndarray | None = None  # the int16 -> int16 activation (sigmoid or tanh Q3.12 -> Q0.15)


@dataclass
class _IntegerLstm:
    n_cell: int
    n_output: int
    order: tuple
    input_weights: np.ndarray  # [n_input, gates * n_cell] float64 (int8 values)
    input_bias: np.ndarray  # [gates * n_cell] int64: gate bias (no layer norm) - input_zp * row sums
    recurrent_weights: np.ndarray  # [n_output, gates * n_cell]
    recurrent_bias: np.ndarray  # - output_state_zp * row sums
    gates: dict
    cell_shift: int  # the cell state's scale is 2**-cell_shift ... as a log2 (negative)
    cell_table: np.ndarray  # tanh of the cell state (int16 -> int16)
    hidden_scale: tuple
    hidden_zp: int
    output_zp: int
    projection: np.ndarray | None  # [n_cell, n_output] float64 (int8 values)
    projection_bias: np.ndarray | None
    projection_scale: tuple
    cell_clip: int
    proj_clip: int


_FIXED_POINT_TABLES: dict = {}


def _fixed_point_table(function: str, integer_bits: int) -> np.ndarray:
    """gemmlowp's int16 logistic or tanh (input with `integer_bits`, output Q0.15) of every int16 value,
    indexed by value + 32768."""
    key = (function, integer_bits)
    if key not in _FIXED_POINT_TABLES:
        values = np.arange(-32768, 32768, dtype=np.int64)
        math16 = FixedPointMath(16)
        table = getattr(math16, function)(values, integer_bits)
        _FIXED_POINT_TABLES[key] = np.asarray(table, np.int64)
    return _FIXED_POINT_TABLES[key]


def _checked_log2(value: float) -> int | None:
    """TFLite's CheckedLog2: the rounded log2 of a float, or None unless it is within 1e-3 of it."""
    log2 = F32(np.log(F32(value))) * (_ONE / F32(np.log(F32(2.0))))
    rounded = F32(np.trunc(log2) + (np.sign(log2) if abs(log2 - np.trunc(log2)) >= 0.5 else 0))
    return int(rounded) if abs(F32(log2 - rounded)) < F32(1e-3) else None


def _integer_lstm_prepare(context, node, direction: _LstmDirection, t: dict, source, op: str) -> _IntegerLstm:

    if op == "LSTM" and len(node.intermediates) == 12:
        raise KernelError("LSTM with 12 intermediates (TFLite's 8x8->8 integer kernel) is not supported")
    ensure(len(node.intermediates) == 5, "num_intermediate_tensors == 5 was not true.")
    if direction.peephole and direction.n_output > direction.n_cell:
        # TFLite's integer peephole runs over n_output values per row: past the cell state here
        raise KernelError(f"{op} integer peephole with n_output > n_cell is not supported")
    ensure(_lstm_weights_constant(direction, t), f"{op} with INT8 input needs constant weights")
    options = node.builtin_data
    output_state, cell_state = t["output_state"], t["cell_state"]
    output = output_tensor(context, node)
    for tensor, name in ((cell_state, "cell_state"), (output, "output_tensor")):
        ensure(
            tensor.quantization is not None,
            f"{name}->quantization.type != kTfLiteNoQuantization was not true.",
        )
    n, order = direction.n_cell, ("input", "forget", "cell", "output")
    present = [g for g in order if not (direction.cifg and g == "input")]
    intermediates = [context.tensors[i] for i in node.intermediates]
    scale_of = {}  # gate -> float32 scale of its intermediate
    for k, gate in enumerate(order):
        if direction.layer_norm:
            ensure(
                intermediates[k].quantization is not None,
                "intermediate->quantization.type != kTfLiteNoQuantization",
            )
            scale_of[gate] = F32(intermediates[k].quantization.scale[0])
        else:
            scale_of[gate] = F32(2.0**-12)  # Q3.12 for the activations
    hidden = intermediates[4]
    ensure(
        hidden.quantization is not None, "hidden->quantization.type != kTfLiteNoQuantization was not true."
    )
    hidden_scale, hidden_zp = F32(hidden.quantization.scale[0]), int(hidden.quantization.zero_point[0])

    def scale(tensor):
        return F32(tensor.params.scale)

    cell_log2 = _checked_log2(cell_state.params.scale)
    ensure(cell_log2 is not None, "CheckedLog2(cell_state->params.scale, &cell_scale) was not true.")
    if op == "LSTM":
        ensure(cell_log2 <= -9, "cell_scale <= -9 was not true.")
    tanh_bits = 15 + cell_log2
    if not 0 <= tanh_bits <= 6:
        raise KernelError(
            f"{op}: a cell state scale of 2**{cell_log2} is not supported (TFLite skips its tanh)"
        )
    input_scale, output_state_scale = scale(source), scale(output_state)
    input_zp, output_state_zp = int(source.params.zero_point), int(output_state.params.zero_point)

    def multiplier(real):
        return quantize_multiplier(float(real))

    gates = {}
    input_bias, recurrent_bias = [], []
    for gate in present:
        wx, wh = t[f"input_to_{gate}"], t[f"recurrent_to_{gate}"]
        spec = _IntegerGate(
            input_scale=multiplier(scale(wx) * input_scale / scale_of[gate]),
            recurrent_scale=multiplier(scale(wh) * output_state_scale / scale_of[gate]),
            table=_fixed_point_table("tanh" if gate == "cell" else "logistic", 3),
        )
        if direction.peephole and gate != "cell":
            weights = t[f"cell_to_{gate}"]
            spec.peephole = weights.data.astype(np.int64)
            spec.peephole_scale = multiplier(
                F32(2.0**cell_log2 * float(scale(weights)) / float(scale_of[gate]))
            )
        bias = t[f"{gate}_bias"].data.astype(np.int64)
        if direction.layer_norm:
            norm = t[f"{gate}_layer_norm"]
            spec.norm_weights = norm.data.astype(np.int64)
            spec.norm_bias = bias
            spec.norm_scale = multiplier(scale(norm))
            spec.variance_guard = max(1, int(F32(10000) * scale(norm)))
            bias = np.zeros(n, np.int64)
        input_bias.append(bias - input_zp * wx.data.astype(np.int64).sum(axis=1))
        recurrent_bias.append(-output_state_zp * wh.data.astype(np.int64).sum(axis=1))
        gates[gate] = spec
    projection = t["projection_weights"]
    projection_bias = None
    if projection is not None:
        projection_bias = hidden_zp * projection.data.astype(np.int64).sum(axis=1)
        if t["projection_bias"] is not None:
            projection_bias = projection_bias + t["projection_bias"].data.astype(np.int64)
    cell_clip = 0
    if options.cell_clip > 0:
        cell_clip = int(np.clip(F32(options.cell_clip) / scale(cell_state), -32768, 32767))
    proj_clip = 0
    if options.proj_clip > 0:
        proj_clip = int(np.clip(F32(options.proj_clip) / F32(output.quantization.scale[0]), -128, 127))
    return _IntegerLstm(
        n_cell=n,
        n_output=direction.n_output,
        order=tuple(present),
        input_weights=np.concatenate([t[f"input_to_{g}"].data for g in present]).T.astype(np.float64),
        input_bias=np.concatenate(input_bias),
        recurrent_weights=np.concatenate([t[f"recurrent_to_{g}"].data for g in present]).T.astype(np.float64),
        recurrent_bias=np.concatenate(recurrent_bias),
        gates=gates,
        cell_shift=cell_log2,
        cell_table=_fixed_point_table("tanh", tanh_bits),
        hidden_scale=multiplier(F32(2.0**-15 / float(hidden_scale) * 2.0**-15)),
        hidden_zp=hidden_zp,
        output_zp=output_state_zp,
        projection=None if projection is None else projection.data.T.astype(np.float64),
        projection_bias=projection_bias,
        projection_scale=multiplier(
            (scale(projection) if projection is not None else _ONE) * hidden_scale / output_state_scale
        ),
        cell_clip=cell_clip,
        proj_clip=proj_clip,
    )


def _requantize(acc, scale) -> np.ndarray:
    """TFLite's scalar MultiplyByQuantizedMultiplier of int32 accumulators."""

    return multiply_by_quantized_multiplier(wrap(np.asarray(acc, np.int64)), scale[0], scale[1])


def _integer_peephole(gate: np.ndarray, cell: np.ndarray, spec: _IntegerGate, v_size: int) -> np.ndarray:
    """gate + requantized(weights * cell), saturated to int16, as the NEON VectorBatchVectorCwiseProduct-
    Accumulate runs it: per batch row, blocks of 16 with the SIMD rounding, the rest scalar. TFLite passes
    n_output as the vector size, so the rows are n_output long over the flat buffers."""

    batch = gate.shape[0]
    flat_gate = gate.reshape(-1).copy()
    g = flat_gate[: batch * v_size].reshape(batch, v_size)
    product = spec.peephole[:v_size] * cell.reshape(-1)[: batch * v_size].reshape(batch, v_size)
    block = v_size - v_size % 16
    scaled = np.empty_like(product)
    scaled[:, :block] = multiply_by_quantized_multiplier_simd(product[:, :block], *spec.peephole_scale)
    scaled[:, block:] = _requantize(product[:, block:], spec.peephole_scale)
    g[...] = np.clip(scaled + g, -32768, 32767)
    return flat_gate.reshape(gate.shape)


def _trunc_divide(x: np.ndarray, divisor: int) -> np.ndarray:
    return np.sign(x) * (np.abs(x) // divisor)


def _integer_layer_norm(x: np.ndarray, spec: _IntegerGate) -> np.ndarray:
    """TFLite's PortableApplyLayerNorm over the rows of an int16 gate [batch, n]."""

    n = x.shape[1]
    total = x.sum(axis=1)
    squares = (x * x).sum(axis=1)
    mean = _trunc_divide(total * 1024, n)
    variance = squares * ((1 << 20) // n) - mean * mean
    variance = wrap(_trunc_divide(variance, 1 << 20))
    variance = np.where(variance < 1, spec.variance_guard, variance)
    inv_multiplier, inv_shift = inv_sqrt_multiplier(variance)
    shifted = wrap(1024 * x - mean[:, None])
    rescaled = multiply_by_quantized_multiplier(shifted, inv_multiplier[:, None], inv_shift[:, None])
    weighted = wrap(wrap(rescaled * spec.norm_weights) + spec.norm_bias)
    rounded = _trunc_divide(np.where(weighted > 0, weighted + 512, weighted - 512), 1024)
    scaled = multiply_by_quantized_multiplier(wrap(rounded), spec.norm_scale[0], spec.norm_scale[1] + 12)
    return np.clip(scaled, -32768, 32767)


def _run_integer_lstm(
    lstm: _IntegerLstm, x: np.ndarray, h: np.ndarray, c: np.ndarray, out: np.ndarray
) -> None:
    """TFLite's LstmStepInteger8x8_16 over a [time, batch, n_input] int8 sequence view; h (int8) and
    c (int16) are the state arrays, updated in place."""

    steps, batch = x.shape[0], x.shape[1]
    if steps == 0 or batch == 0:
        return
    n = lstm.n_cell
    spans = {g: slice(k * n, (k + 1) * n) for k, g in enumerate(lstm.order)}
    # Input products of every step: clamp16(requantize(bias + x.W)) for each gate.
    flat = np.ascontiguousarray(x).reshape(-1, x.shape[2]).astype(np.float64)
    sums = (flat @ lstm.input_weights).astype(np.int64) + lstm.input_bias  # exact: int8 products
    gated = np.empty_like(sums)
    for gate, span in spans.items():
        gated[:, span] = np.clip(_requantize(sums[:, span], lstm.gates[gate].input_scale), -32768, 32767)
    gated = gated.reshape(steps, batch, -1)
    cell = c.astype(np.int64)
    hidden = h.astype(np.int64)
    v_size = lstm.n_output
    for t in range(steps):
        recurrent = (hidden.astype(np.float64) @ lstm.recurrent_weights).astype(
            np.int64
        ) + lstm.recurrent_bias
        values = {}
        for gate, span in spans.items():
            spec = lstm.gates[gate]
            total = _requantize(recurrent[:, span], spec.recurrent_scale) + gated[t][:, span]
            values[gate] = np.clip(total, -32768, 32767)
        for gate in ("input", "forget", "cell"):
            if gate not in values:
                continue
            spec = lstm.gates[gate]
            if spec.peephole is not None:
                values[gate] = _integer_peephole(values[gate], cell, spec, v_size)
            if spec.norm_weights is not None:
                values[gate] = _integer_layer_norm(values[gate], spec)
            values[gate] = spec.table[values[gate] + 32768]
        forget, cell_gate = values["forget"], values["cell"]
        cell = rounding_divide_by_pot(forget * cell, 15)
        first = (32767 - forget) if "input" not in values else values["input"]
        update = rounding_divide_by_pot(first * cell_gate, 30 + lstm.cell_shift)
        cell = np.clip(cell + update, -32768, 32767)
        if lstm.cell_clip > 0:
            cell = np.clip(cell, -lstm.cell_clip, lstm.cell_clip)
        spec = lstm.gates["output"]
        output_gate = values["output"]
        if spec.peephole is not None:
            output_gate = _integer_peephole(output_gate, cell, spec, v_size)
        if spec.norm_weights is not None:
            output_gate = _integer_layer_norm(output_gate, spec)
        output_gate = spec.table[output_gate + 32768]
        activated = lstm.cell_table[cell + 32768]
        product = _requantize(output_gate * activated, lstm.hidden_scale)
        if lstm.projection is not None:
            projected_input = np.clip(product - lstm.hidden_zp, -128, 127)
            acc = (projected_input.astype(np.float64) @ lstm.projection).astype(
                np.int64
            ) + lstm.projection_bias
            hidden = np.clip(_requantize(acc, lstm.projection_scale) + lstm.output_zp, -128, 127)
            if lstm.proj_clip > 0:
                hidden = np.clip(hidden, -lstm.proj_clip, lstm.proj_clip)
        else:
            hidden = np.clip(product + lstm.hidden_zp, -128, 127)
        out[t] = hidden
    h[...] = hidden
    c[...] = cell


# ---- LSTM basic kernel (kernel_type BASIC: 5 inputs, 4 outputs) ----------------------------------------


def basic_lstm_prepare(context, node):
    ensure(len(node.inputs) == 5, "node->inputs->size == kInputNum was not true.")
    ensure(len(node.outputs) == 4, "node->outputs->size == kOutputNum was not true.")
    source, activation, weights, bias, state = (context.tensors[i] for i in node.inputs)
    ensure_eq(len(source.shape), 2, "input->dims->size")
    batches, depth = source.shape
    ensure_eq(len(activation.shape), 2, "prev_activation->dims->size")
    ensure_eq(activation.shape[0], batches, "prev_activation->dims->data[0]")
    units = activation.shape[1]
    ensure_eq(len(weights.shape), 2, "weights->dims->size")
    ensure_eq(weights.shape[0], 4 * units, "weights->dims->data[0]")
    ensure_eq(weights.shape[1], depth + units, "weights->dims->data[1]")
    ensure_eq(len(bias.shape), 1, "bias->dims->size")
    ensure_eq(bias.shape[0], 4 * units, "bias->dims->data[0]")
    ensure_eq(len(state.shape), 2, "prev_state->dims->size")
    ensure_eq(state.shape[0], batches, "prev_state->dims->data[0]")
    ensure_eq(state.shape[1], units, "prev_state->dims->data[1]")
    outputs = [context.tensors[i] for i in node.outputs]
    types = tuple(tensor.type for tensor in (source, activation, weights, bias, state, *outputs))
    if types == (T.FLOAT32,) * 9:
        data = _BasicLstm(units)
    elif types == _BASIC_QUANTIZED_TYPES:
        data = _basic_quantized_prepare(context.host, batches, units, weights, bias, outputs[1])
    else:
        raise KernelError("Unsupported combination of data types for LstmCell")
    context.resize_tensor(outputs[0], activation.shape)
    context.resize_tensor(outputs[1], state.shape)
    context.resize_tensor(outputs[2], (batches, depth + units))
    context.resize_tensor(outputs[3], (batches, 4 * units))
    node.user_data = data


# input, prev_activation, weights, bias, prev_state, then the outputs activation, state, concat, gates
_BASIC_QUANTIZED_TYPES = (T.UINT8, T.UINT8, T.UINT8, T.INT32, T.INT16, T.UINT8, T.INT16, T.UINT8, T.INT16)


@dataclass
class _BasicLstm:
    units: int
    quantized: bool = False
    weights: np.ndarray | None = None  # uint8 kernel: [depth + units, 4 * units] float64 of w - zero point
    requantize: Any = None  # the int32 accumulators to the int16 gates (Q3.12)


def _basic_quantized_prepare(host, batches, units, weights, bias, state_out) -> _BasicLstm:
    """TFLite's 8-bit LstmCell<4>: uint8 input and activation (zero point 128), int16 state in Q4.11."""

    log2 = None if state_out.params is None else _checked_log2(state_out.params.scale)
    ensure(log2 is not None, "The internal state of a LSTM cell must have a power-of-two scale.")
    ensure(
        15 + log2 == 4,
        "The only case of quantized LstmCell currently supported is with StateIntegerBits==4",
    )
    ensure(is_constant(weights), "LSTM basic kernel: quantized weights must be constant")
    values = weights.data.astype(np.float64) - weights.params.zero_point
    multiplier, shift = quantize_multiplier(4096 * float(bias.params.scale))
    # cpu_backend_gemm's uint8 product into int16: its rounding depends on the kernel the host runs
    rows, depth = weights.shape
    rounding = gemm_rounding(host, int16=False, uint8=True, one_column=batches == 1, rows=rows, depth=depth)
    requantize = gemm_requantizer(rounding, multiplier, shift)
    return _BasicLstm(units, True, np.ascontiguousarray(values.T), requantize)


def basic_lstm_invoke(context, node):
    data = node.user_data
    units = data.units
    tensors = context.tensors
    source, activation, weights, bias, state = (tensors[i].data for i in node.inputs)
    activ_out, state_out, concat, gates = (tensors[i].data for i in node.outputs)
    if data.quantized:
        _basic_quantized_lstm(data, source, activation, bias, state, activ_out, state_out, concat, gates)
        _basic_write_back(tensors, node, activ_out, state_out)
        return
    concat[:, : source.shape[1]] = source
    concat[:, source.shape[1] :] = activation
    np.matmul(concat, weights.T, out=gates)
    gates += bias
    input_gate, new_input, forget_gate, output_gate = (
        gates[:, k * units : (k + 1) * units] for k in range(4)
    )
    i = np.empty_like(input_gate)
    _sigmoid(input_gate, i)
    g = np.empty_like(new_input)
    _tanh(new_input, g)
    f = np.empty_like(forget_gate)
    _sigmoid(forget_gate, f)
    np.multiply(i, g, out=state_out)
    state_out += f * state
    o = np.empty_like(output_gate)
    _sigmoid(output_gate, o)
    _tanh(state_out, activ_out)
    activ_out *= o
    _basic_write_back(tensors, node, activ_out, state_out)


def _basic_quantized_lstm(data, source, activation, bias, state, activ_out, state_out, concat, gates) -> None:
    """gemmlowp fixed point: gates in Q3.12 from the requantized uint8 product, sigmoid/tanh to Q0.15,
    the state in Q4.11 (saturating), the output rounded down to 8 bits around 128."""

    units = data.units
    concat[:, : source.shape[1]] = source
    concat[:, source.shape[1] :] = activation
    # exact: (x - 128) * (w - zero point) sums of uint8 values stay far below 2**53
    acc = ((concat.astype(np.float64) - 128) @ data.weights).astype(np.int64) + bias
    gates[...] = np.clip(data.requantize(acc), -32768, 32767)
    raw = gates.astype(np.int64) + 32768  # table indices
    logistic, tanh = _fixed_point_table("logistic", 3), _fixed_point_table("tanh", 3)
    input_gate = logistic[raw[:, :units]]
    modulation = tanh[raw[:, units : 2 * units]]
    forget_gate = logistic[raw[:, 2 * units : 3 * units]]
    output_gate = logistic[raw[:, 3 * units :]]
    q16 = FixedPointMath(16)
    new_state = q16.saturating_add(
        q16.rescale(q16.mul(input_gate, modulation), 0, 4), q16.mul(forget_gate, state.astype(np.int64))
    )
    state_out[...] = new_state
    squashed = tanh[q16.rescale(new_state, 4, 3) + 32768]
    output = rounding_divide_by_pot(q16.mul(output_gate, squashed), 8)
    activ_out[...] = np.clip(output, -128, 127) + 128


def _basic_write_back(tensors, node, activ_out, state_out) -> None:
    """TFLite copies the new activation and state back into the inputs they came from."""
    for index, value in ((node.inputs[1], activ_out), (node.inputs[4], state_out)):
        target = tensors[index].data
        if target.flags.writeable:
            target[...] = value


# float32 (float or hybrid int8 weights) and int8 (the integer 8x8->16 kernel) inputs; LSTM's basic
# kernel also takes uint8
_LSTM_TYPES = (T.FLOAT32, T.INT8)
register_builtin(
    BuiltinOperator.LSTM, (1, 4), types=(*_LSTM_TYPES, T.UINT8), prepare=lstm_prepare, invoke=lstm_invoke
)
register_builtin(
    BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
    (1, 4),
    types=_LSTM_TYPES,
    prepare=unidirectional_lstm_prepare,
    invoke=lstm_invoke,
)
register_builtin(
    BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM,
    (1, 3),
    types=(T.FLOAT32,),
    prepare=bidirectional_lstm_prepare,
    invoke=bidirectional_lstm_invoke,
)


# ---- RNN ----------------------------------------------------------------------------------------------


@dataclass
class _RnnCell:
    """One RNN direction's weights: transposed float32, or hybrid int8 matrices."""

    units: int
    hybrid: bool
    input_weights: Any = None  # float: [input, units]; hybrid: _HybridMatrix
    aux_weights: Any = None
    recurrent_weights: Any = None
    bias: np.ndarray | None = None


def _rnn_cell(
    input_weights, recurrent_weights, bias, aux_weights=None, *, row_sums: dict, x86: bool
) -> _RnnCell:
    """`row_sums`: the op data's cache of hybrid weight row sums (TFLite computes them once); `x86`: the
    op data's HostProfile.x86."""
    hybrid = input_weights.type in _WEIGHT_INT
    cell = _RnnCell(units=input_weights.shape[0], hybrid=hybrid, bias=bias.data.astype(F32))
    if hybrid:
        for name, tensor in (
            ("input", input_weights),
            ("recurrent", recurrent_weights),
            ("aux", aux_weights),
        ):
            if tensor is not None:
                matrix = _hybrid_matrix([(tensor.data, tensor.params.scale)], x86, row_sums, name)
                setattr(cell, f"{name}_weights", matrix)
    else:
        cell.input_weights = np.ascontiguousarray(input_weights.data.T.astype(F32))
        cell.recurrent_weights = np.ascontiguousarray(recurrent_weights.data.T.astype(F32))
        if aux_weights is not None:
            cell.aux_weights = np.ascontiguousarray(aux_weights.data.T.astype(F32))
    return cell


def _rnn_inputs(x, weights, asymmetric: bool, hybrid: bool) -> np.ndarray:
    """The [time, batch, units] input terms x.W of a sequence."""
    if hybrid:
        flat = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
        return _hybrid_product(weights, flat, asymmetric).reshape(*x.shape[:2], -1)
    return _sequence_matmul(x, weights)


def _run_rnn(cell: _RnnCell, x, aux, h, out, activation, asymmetric: bool, forward: bool = True) -> None:
    """TFLite's RnnBatchStep over a [time, batch, depth] sequence view: out[t] = act(bias + x.W + aux.W +
    h.R); h = out[t]."""
    steps, batch = x.shape[0], x.shape[1]
    if steps == 0 or batch == 0:
        return
    # bias first, then each term added: TFLite accumulates onto the bias in this order
    pre = np.empty((steps, batch, cell.units), F32)
    pre[...] = cell.bias
    if x.shape[-1]:
        pre += _rnn_inputs(x, cell.input_weights, asymmetric, cell.hybrid)
    if aux is not None and aux.shape[-1]:
        pre += _rnn_inputs(aux, cell.aux_weights, asymmetric, cell.hybrid)
    recurrent = np.empty((batch, cell.units), F32)
    activate = _activation_function(activation, _tanh if cell.hybrid else _fast_tanh)
    hidden = h  # the hidden state: h before the first step, then the last step's output
    for t in range(steps) if forward else range(steps - 1, -1, -1):
        step = out[t]
        if cell.hybrid:
            if hidden.any():
                np.add(pre[t], _hybrid_product(cell.recurrent_weights, hidden, asymmetric), out=step)
            else:
                step[...] = pre[t]
        else:
            np.matmul(hidden, cell.recurrent_weights, out=recurrent)
            np.add(pre[t], recurrent, out=step)
        if activate is not None:
            activate(step, step)
        hidden = step
    h[...] = hidden


@dataclass
class _RnnOpData:
    cells: list
    constant: bool
    x86: bool  # HostProfile.x86, read in prepare
    time_major: bool = True
    extra: dict = field(default_factory=dict)
    row_sums: dict = field(default_factory=dict)  # hybrid weight row sums, computed once (as TFLite)


def _rnn_check(context, input_weights, recurrent_weights, bias, op: str) -> None:
    for tensor in (input_weights, recurrent_weights, bias):
        if tensor.sparsity is not None:
            raise KernelError(f"{op} with sparse weights is not supported")
    ensure_eq(input_weights.shape[0], bias.shape[0], "input_weights->dims->data[0]")
    ensure_eq(recurrent_weights.shape[0], bias.shape[0], "recurrent_weights->dims->data[0]")
    ensure_eq(recurrent_weights.shape[1], bias.shape[0], "recurrent_weights->dims->data[1]")
    if input_weights.type != recurrent_weights.type:
        raise KernelError(
            f"input_weights->type != recurrent_weights->type "
            f"({type_name(input_weights.type)} != {type_name(recurrent_weights.type)})"
        )
    ensure(
        input_weights.type in (T.FLOAT32, T.INT8, T.UINT8),
        f"Type {type_name(input_weights.type)} not currently supported.",
    )
    if bias.type != T.FLOAT32:
        raise KernelError(f"{op} bias must be FLOAT32, got {type_name(bias.type)}")


def _variable_state(context, node, position: int):
    tensor = context.tensors[node.inputs[position]]
    ensure(tensor.is_variable, "hidden_state != nullptr was not true.")
    return tensor


def _rnn_prepare(context, node, sequence: bool):
    """RNN (one step, input [batch, depth]) and UNIDIRECTIONAL_SEQUENCE_RNN (input [time, batch, depth]
    or [batch, time, depth]): one kernel, the single step being a sequence of one."""
    op = "UNIDIRECTIONAL_SEQUENCE_RNN" if sequence else "RNN"
    ensure_eq(len(node.inputs), 5, "node->inputs->size")
    ensure_eq(len(node.outputs), 1, "node->outputs->size")
    source, input_weights, recurrent_weights, bias, state = (context.tensors[i] for i in node.inputs)
    ensure_eq(len(source.shape), 3 if sequence else 2, "NumDimensions(input)")
    ensure_eq(len(input_weights.shape), 2, "NumDimensions(input_weights)")
    ensure_eq(len(recurrent_weights.shape), 2, "NumDimensions(recurrent_weights)")
    ensure_eq(len(bias.shape), 1, "NumDimensions(bias)")
    ensure_eq(len(state.shape), 2, "NumDimensions(hidden_state)")
    options = node.builtin_data
    time_major = bool(getattr(options, "time_major", True))
    if not sequence:
        batch, lead = source.shape[0], (source.shape[0],)
    else:
        batch = source.shape[1] if time_major else source.shape[0]
        lead = source.shape[:2]
    units = input_weights.shape[0]
    ensure_eq(source.shape[-1], input_weights.shape[1], "input_size")
    _rnn_check(context, input_weights, recurrent_weights, bias, op)
    if source.type != T.FLOAT32:
        raise KernelError(f"input->type != kTfLiteFloat32 ({type_name(source.type)} != FLOAT32)")
    ensure_eq(state.shape[0], batch, "hidden_state->dims->data[0]")
    ensure_eq(state.shape[1], units, "hidden_state->dims->data[1]")
    context.resize_tensor(output_tensor(context, node), (*lead, units))
    constant = all(is_constant(tensor) for tensor in (input_weights, recurrent_weights, bias))
    data = _RnnOpData([], constant, context.host.x86, time_major)
    data.extra = {"sequence": sequence}
    if constant:
        data.cells = [_rnn_cell(input_weights, recurrent_weights, bias, row_sums=data.row_sums, x86=data.x86)]
    node.user_data = data


def rnn_prepare(context, node):
    _rnn_prepare(context, node, sequence=False)


def unidirectional_rnn_prepare(context, node):
    _rnn_prepare(context, node, sequence=True)


def rnn_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    source, input_weights, recurrent_weights, bias = (tensors[i] for i in node.inputs[:4])
    state = _variable_state(context, node, 4)
    if data.constant:
        cell = data.cells[0]
    else:
        cell = _rnn_cell(input_weights, recurrent_weights, bias, row_sums=data.row_sums, x86=data.x86)
    options = node.builtin_data
    out = tensors[node.outputs[0]].data
    if data.extra["sequence"]:
        x, out = _time_major_view(source.data, data.time_major), _time_major_view(out, data.time_major)
    else:
        x, out = source.data[None], out[None]
    activation = options.fused_activation_function
    _run_rnn(cell, x, None, state.data, out, activation, bool(options.asymmetric_quantize_inputs))


register_builtin(BuiltinOperator.RNN, (1, 3), types=(T.FLOAT32,), prepare=rnn_prepare, invoke=rnn_invoke)
register_builtin(
    BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN,
    (1, 3),
    types=(T.FLOAT32,),
    prepare=unidirectional_rnn_prepare,
    invoke=rnn_invoke,
)


def _aux_steps(aux_flat: np.ndarray, steps: int, batch: int, depth: int, step_stride: int, row_stride: int):
    """A [time, batch, depth] view of an aux input read at TFLite's offsets (which for some layouts use the
    main input's depth as the stride)."""
    return np.lib.stride_tricks.as_strided(
        aux_flat,
        shape=(steps, batch, depth),
        strides=(step_stride * 4, row_stride * 4, 4),
        writeable=False,
    )


def bidirectional_rnn_prepare(context, node):
    options = node.builtin_data
    ensure_eq(len(node.inputs), 12, "node->inputs->size")
    ensure_eq(len(node.outputs), 1 if options.merge_outputs else 2, "node->outputs->size")
    tensors = [None if i < 0 else context.tensors[i] for i in node.inputs]
    source, fw_w, fw_r, fw_b, fw_h, bw_w, bw_r, bw_b, bw_h, aux, fw_aux_w, bw_aux_w = tensors
    for name, tensor in zip(
        (
            "input",
            "fw_input_weights",
            "fw_recurrent_weights",
            "fw_bias",
            "fw_hidden_state",
            "bw_input_weights",
            "bw_recurrent_weights",
            "bw_bias",
            "bw_hidden_state",
        ),
        tensors,
    ):
        ensure(tensor is not None, f"Tensor {name} is required")
    ensure((fw_aux_w is None) == (bw_aux_w is None), "aux_inputs_weights_or_none was not true.")
    has_aux_weights = fw_aux_w is not None
    if source.type != T.FLOAT32:
        raise KernelError(f"input->type != kTfLiteFloat32 ({type_name(source.type)} != FLOAT32)")
    ensure_eq(len(source.shape), 3, "input->dims->size")
    time_major = bool(options.time_major)
    batch, steps = (source.shape[1], source.shape[0]) if time_major else (source.shape[0], source.shape[1])
    depth = source.shape[2]
    fw_units, bw_units = fw_w.shape[0], bw_w.shape[0]
    ensure_eq(depth, fw_w.shape[1], "input->dims->data[2]")
    ensure_eq(depth, bw_w.shape[1], "input->dims->data[2]")
    ensure_eq(fw_w.shape[0], fw_b.shape[0], "fw_input_weights->dims->data[0]")
    ensure_eq(bw_w.shape[0], bw_b.shape[0], "bw_input_weights->dims->data[0]")
    ensure_eq(fw_r.shape[0], fw_b.shape[0], "fw_recurrent_weights->dims->data[0]")
    ensure_eq(bw_r.shape[1], bw_b.shape[0], "bw_recurrent_weights->dims->data[1]")
    op = "BIDIRECTIONAL_SEQUENCE_RNN"
    _rnn_check(context, fw_w, fw_r, fw_b, op)
    _rnn_check(context, bw_w, bw_r, bw_b, op)
    if fw_w.type != bw_w.type:
        raise KernelError(f"{op} forward and backward weights must have the same type")
    for state, units, name in ((fw_h, fw_units, "fw_hidden_state"), (bw_h, bw_units, "bw_hidden_state")):
        ensure_eq(len(state.shape), 2, f"NumDimensions({name})")
        ensure_eq(state.shape[0], batch, f"{name}->dims->data[0]")
        ensure_eq(state.shape[1], units, f"{name}->dims->data[1]")
    hybrid = fw_w.type in _WEIGHT_INT
    aux_depth = 0
    if has_aux_weights:
        ensure(aux is not None, f"{op}: aux input weights need an aux input")
        ensure_eq(len(aux.shape), 3, "aux_input->dims->size")
        ensure_eq(aux.shape[0], source.shape[0], "aux_input->dims->data[0]")
        ensure_eq(aux.shape[1], source.shape[1], "aux_input->dims->data[1]")
        ensure_eq(fw_aux_w.shape[0], fw_units, "fw_aux_input_weights->dims->data[0]")
        ensure_eq(bw_aux_w.shape[0], bw_units, "bw_aux_input_weights->dims->data[0]")
        aux_depth = aux.shape[2]
        ensure_eq(aux_depth, fw_aux_w.shape[1], "aux_input->dims->data[2]")
        ensure_eq(aux_depth, bw_aux_w.shape[1], "aux_input->dims->data[2]")
        if fw_aux_w.type != fw_w.type or bw_aux_w.type != fw_w.type:
            raise KernelError(f"{op} aux weights must have the input weights' type")
        # TFLite reads the aux input at offsets strided by the input's depth (time major, and the hybrid
        # kernel's batch major): an aux input shallower than the input is read past its end there.
        if (time_major or hybrid) and aux_depth < depth and steps * batch > 1:
            raise KernelError(
                f"{op}: an aux input shallower than the input ({aux_depth} < {depth}) is not supported "
                "(TFLite reads past its end)"
            )
    elif aux is not None:
        ensure(
            tuple(aux.shape) == tuple(source.shape),
            f"{op}: the backward input (aux input) must have the input's shape",
        )
    merged = bool(options.merge_outputs)
    lead = (steps, batch) if time_major else (batch, steps)
    context.resize_tensor(
        output_tensor(context, node, 0), (*lead, fw_units + bw_units if merged else fw_units)
    )
    if not merged:
        context.resize_tensor(output_tensor(context, node, 1), (*lead, bw_units))
    weights = (fw_w, fw_r, fw_b, bw_w, bw_r, bw_b, fw_aux_w, bw_aux_w)
    constant = all(tensor is None or is_constant(tensor) for tensor in weights)
    data = _RnnOpData([], constant, context.host.x86, time_major)
    data.extra = {
        "merged": merged,
        "aux_weights": has_aux_weights,
        "aux_input": aux is not None,
        "hybrid": hybrid,
        "row_sums": [{}, {}],  # each direction's hybrid weight row sums, computed once (as TFLite)
    }
    if constant:
        data.cells = _bidi_rnn_cells(weights, data.extra["row_sums"], data.x86)
    node.user_data = data


def _bidi_rnn_cells(weights, row_sums: list, x86: bool) -> list:
    fw_w, fw_r, fw_b, bw_w, bw_r, bw_b, fw_aux_w, bw_aux_w = weights
    return [
        _rnn_cell(fw_w, fw_r, fw_b, fw_aux_w, row_sums=row_sums[0], x86=x86),
        _rnn_cell(bw_w, bw_r, bw_b, bw_aux_w, row_sums=row_sums[1], x86=x86),
    ]


def bidirectional_rnn_invoke(context, node):
    data = node.user_data
    extra = data.extra
    tensors = context.tensors
    inputs = [None if i < 0 else tensors[i] for i in node.inputs]
    if data.constant:
        fw, bw = data.cells
    else:
        fw, bw = _bidi_rnn_cells([inputs[i] for i in (1, 2, 3, 5, 6, 7, 10, 11)], extra["row_sums"], data.x86)
    fw_h = _variable_state(context, node, 4).data
    bw_h = _variable_state(context, node, 8).data
    options = node.builtin_data
    tm = data.time_major
    hybrid = extra["hybrid"]
    source = inputs[0].data
    x = _time_major_view(source, tm)
    steps, batch, depth = x.shape
    aux_tensor = inputs[9]
    non_stacking = not extra["aux_weights"] and extra["aux_input"]
    # The backward cell reads the aux input instead of the input when stacking without cross links, but
    # only in TFLite's time-major loops: its batch-major loops read the input.
    bw_x = _time_major_view(aux_tensor.data, tm) if non_stacking and tm else x
    aux = None
    if extra["aux_weights"]:
        aux_depth = aux_tensor.shape[2]
        flat = aux_tensor.data.reshape(-1)
        if tm:
            aux = _aux_steps(flat, steps, batch, aux_depth, depth * batch, aux_depth)
        elif hybrid:
            aux = _aux_steps(flat, steps, batch, aux_depth, depth, depth * steps)
        else:
            aux = _time_major_view(aux_tensor.data, tm)
    fw_out = _time_major_view(tensors[node.outputs[0]].data, tm)
    if extra["merged"]:
        bw_out = fw_out[..., fw.units :]
        fw_out = fw_out[..., : fw.units]
    else:
        bw_out = _time_major_view(tensors[node.outputs[1]].data, tm)
    activation = options.fused_activation_function
    asymmetric = bool(options.asymmetric_quantize_inputs)
    # TFLite's hybrid time-major kernel runs both passes once per time step (an outer loop over time).
    repeats = steps if hybrid and tm else 1
    for _ in range(repeats):
        _run_rnn(fw, x, aux, fw_h, fw_out, activation, asymmetric, True)
        _run_rnn(bw, bw_x, aux, bw_h, bw_out, activation, asymmetric, False)


register_builtin(
    BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN,
    (1, 3),
    types=(T.FLOAT32,),
    prepare=bidirectional_rnn_prepare,
    invoke=bidirectional_rnn_invoke,
)


# ---- SVDF ---------------------------------------------------------------------------------------------


@dataclass
class _SvdfData:
    rank: int
    units: int
    filters: int
    memory: int
    kind: str  # "float", "hybrid" or "integer"
    x86: bool  # HostProfile.x86, read in prepare
    feature: Any = None  # float: [input, filters]; hybrid: _HybridMatrix; integer: int64 [filters, input]
    time: np.ndarray | None = None  # [filters, memory]
    bias: np.ndarray | None = None
    scales: tuple = ()
    zero_points: tuple = ()
    row_sums: dict = field(default_factory=dict)  # hybrid weight row sums, computed once (as TFLite)


def svdf_prepare(context, node):
    ensure_eq(len(node.outputs), 1, "node->outputs->size")
    ensure_eq(len(node.inputs), 5, "node->inputs->size")
    options = node.builtin_data
    source, feature, time = (context.tensors[i] for i in node.inputs[:3])
    bias = None if node.inputs[3] < 0 else context.tensors[node.inputs[3]]
    state = context.tensors[node.inputs[4]]
    ensure(
        source.type in (T.FLOAT32, T.INT8),
        "input->type == kTfLiteFloat32 || input->type == kTfLiteInt8 was not true.",
    )
    ensure_eq(len(source.shape), 2, "SVDF input rank")
    ensure_eq(len(feature.shape), 2, "SVDF weights_feature rank")
    ensure_eq(len(time.shape), 2, "SVDF weights_time rank")
    rank = options.rank
    batch = source.shape[0]
    filters = feature.shape[0]
    ensure(rank != 0, "rank != 0 was not true.")
    ensure_eq(filters % rank, 0, "num_filters % rank")
    units = filters // rank
    memory = time.shape[1]
    ensure_eq(source.shape[1], feature.shape[1], "input->dims->data[1]")
    ensure_eq(time.shape[0], filters, "weights_time->dims->data[0]")
    if bias is not None:
        ensure_eq(bias.shape[0], units, "bias->dims->data[0]")
    ensure_eq(len(state.shape), 2, "NumDimensions(state)")
    ensure_eq(state.shape[0], batch, "SizeOfDimension(state, 0)")
    ensure_eq(state.shape[1], memory * filters, "SizeOfDimension(state, 1)")
    output = output_tensor(context, node)
    context.resize_tensor(output, (batch, units))
    if source.type == T.INT8:
        kind = "integer"
    elif feature.type in _WEIGHT_INT:
        kind = "hybrid"
    elif feature.type == T.FLOAT32:
        kind = "float"
    else:
        raise KernelError(f"Type {type_name(feature.type)} not currently supported.")
    if feature.sparsity is not None or time.sparsity is not None:
        raise KernelError("SVDF with sparse weights is not supported")
    data = _SvdfData(rank, units, filters, memory, kind, context.host.x86)
    if kind == "integer":
        _svdf_integer_prepare(data, options, source, feature, time, bias, state, output)
    elif kind == "float":
        ensure(
            time.type == T.FLOAT32 and (bias is None or bias.type == T.FLOAT32) and state.type == T.FLOAT32,
            "SVDF float weights need FLOAT32 weights_time, bias and state",
        )
    else:
        ensure(time.type in _WEIGHT_INT, "SVDF hybrid weights_time must be INT8")
        ensure(
            (bias is None or bias.type == T.FLOAT32) and state.type == T.FLOAT32,
            "SVDF hybrid needs FLOAT32 bias and state",
        )
        if is_constant(feature):
            blocks = [(feature.data, feature.params.scale)]
            data.feature = _hybrid_matrix(blocks, data.x86, data.row_sums, "feature")
        if is_constant(time):
            data.time = _svdf_hybrid_time(time)
    node.user_data = data


def _svdf_hybrid_time(time) -> np.ndarray:
    """The int8 time weights in float32, as TFLite dequantizes them (on the first invoke only)."""
    return time.data.view(np.int8).astype(F32) * F32(time.params.scale)


def _svdf_integer_prepare(data, options, source, feature, time, bias, state, output) -> None:

    if options.fused_activation_function != ActivationFunctionType.RELU:  # TFLite checks it at Eval
        raise KernelError(
            f"params->activation != kTfLiteActRelu ({int(options.fused_activation_function)} != 1)"
        )

    ensure(
        feature.type == T.INT8, f"SVDF integer weights_feature must be INT8, got {type_name(feature.type)}"
    )
    ensure(time.type == T.INT16, f"SVDF integer weights_time must be INT16, got {type_name(time.type)}")
    ensure(state.type == T.INT16, f"SVDF integer state must be INT16, got {type_name(state.type)}")
    ensure(output.type == T.INT8, f"SVDF integer output must be INT8, got {type_name(output.type)}")
    ensure(bias is None or bias.type == T.INT32, "SVDF integer bias must be INT32")
    for tensor, name in (
        (source, "input"),
        (feature, "weights_feature"),
        (state, "state"),
        (time, "weights_time"),
        (output, "output"),
    ):
        ensure(
            tensor.quantization is not None,
            f"{name}->quantization.type != kTfLiteNoQuantization was not true.",
        )
    scale = lambda tensor: F32(tensor.quantization.scale[0])  # noqa: E731
    # float arithmetic, as TFLite computes them before widening to double
    first = float(scale(source) * scale(feature) / scale(state))
    second = float(scale(state) * scale(time) / scale(output))
    data.scales = (quantize_multiplier(first), quantize_multiplier(second))
    data.zero_points = (int(source.quantization.zero_point[0]), int(output.quantization.zero_point[0]))


def svdf_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    source, feature, time = (tensors[i] for i in node.inputs[:3])
    bias = None if node.inputs[3] < 0 else tensors[node.inputs[3]].data
    state_tensor = tensors[node.inputs[4]]
    ensure(state_tensor.is_variable, "state != nullptr was not true.")
    options = node.builtin_data
    out = tensors[node.outputs[0]].data
    batch = source.shape[0]
    flat = state_tensor.data.reshape(-1)
    if flat.size:
        flat[:-1] = flat[1:].copy()  # shift the whole memory left by one (std::copy)
    state = state_tensor.data.reshape(batch, data.filters, data.memory)
    if data.kind == "integer":
        return _svdf_integer(data, options, source.data, feature.data, time.data, bias, state, out)
    x = source.data
    if data.kind == "float":
        state[:, :, -1] = x @ feature.data.T if x.shape[1] else 0
        weights_time = time.data
    else:
        matrix = data.feature
        if matrix is None:  # runtime weights
            blocks = [(feature.data, feature.params.scale)]
            matrix = _hybrid_matrix(blocks, data.x86, data.row_sums, "feature")
        if data.time is None:  # runtime time weights: TFLite dequantizes them once, at the first invoke
            data.time = _svdf_hybrid_time(time)
        if x.any():
            state[:, :, -1] = _hybrid_product(matrix, x, bool(options.asymmetric_quantize_inputs))
        else:
            state[:, :, -1] = 0
        weights_time = data.time
    products = np.einsum("bfm,fm->bf", state, weights_time, dtype=F32)
    np.sum(products.reshape(batch, data.units, data.rank), axis=2, out=out)
    if bias is not None:
        out += bias
    activate = _activation_function(options.fused_activation_function)
    if activate is not None:
        activate(out, out)


def _svdf_integer(data, options, x, feature, time, bias, state, out) -> None:

    (m1, s1), (m2, s2) = data.scales
    input_zp, output_zp = data.zero_points
    # exact: int8 products summed far below 2**53
    dots = (x.astype(np.float64) - input_zp) @ feature.astype(np.float64).T
    dots = multiply_by_quantized_multiplier(wrap(dots.astype(np.int64)), m1, s1)
    state[:, :, -1] = np.clip(dots, -32768, 32767)
    products = np.einsum("bfm,fm->bf", state.astype(np.int64), time.astype(np.int64))
    sums = wrap(products).reshape(-1, data.units, data.rank).sum(axis=2)
    sums = wrap(sums)
    if bias is not None:
        sums = wrap(sums + bias.astype(np.int64))
    scaled = multiply_by_quantized_multiplier(sums, m2, s2) + output_zp
    out[...] = np.clip(scaled, -128, 127)


register_builtin(
    BuiltinOperator.SVDF,
    (1, 4),
    types=(T.FLOAT32, T.INT8),
    prepare=svdf_prepare,
    invoke=svdf_invoke,
)

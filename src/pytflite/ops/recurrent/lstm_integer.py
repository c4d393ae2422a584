"""The integer LSTM (int8 input, int8 weights, int16 cell: TFLite's 8x8->16 kernel) of LSTM and
UNIDIRECTIONAL_SEQUENCE_LSTM, bit-exact with LiteRT, and the gemmlowp tables and CheckedLog2
it shares with lstm_basic.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import KernelError, ensure
from ..common import output_tensor
from ..quant.fixed_point import (
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_simd,
    quantize_multiplier,
    rounding_divide_by_pot,
    wrap,
)
from ..quant.gemmlowp import FixedPointMath, inv_sqrt_multiplier
from .common import F32, ONE
from .lstm_common import LstmDirection, lstm_weights_constant


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
_GATES = ("input", "forget", "cell", "output")  # the order of the intermediates


def fixed_point_table(function: str, integer_bits: int) -> np.ndarray:
    """gemmlowp's int16 logistic or tanh (input with `integer_bits`, output Q0.15) of every int16 value,
    indexed by value + 32768."""
    key = (function, integer_bits)
    if key not in _FIXED_POINT_TABLES:
        values = np.arange(-32768, 32768, dtype=np.int64)
        math16 = FixedPointMath(16)
        table = getattr(math16, function)(values, integer_bits)
        _FIXED_POINT_TABLES[key] = np.asarray(table, np.int64)
    return _FIXED_POINT_TABLES[key]


def checked_log2(value: float) -> int | None:
    """TFLite's CheckedLog2: the rounded log2 of a float, or None unless it is within 1e-3 of it."""
    log2 = F32(np.log(F32(value))) * (ONE / F32(np.log(F32(2.0))))
    rounded = F32(np.trunc(log2) + (np.sign(log2) if abs(log2 - np.trunc(log2)) >= 0.5 else 0))
    return int(rounded) if abs(F32(log2 - rounded)) < F32(1e-3) else None


@dataclass(frozen=True)
class _IntegerScales:
    """The float32 scales, zero points and cell state log2 that the integer LSTM's multipliers come from."""

    gates: dict  # gate -> scale of its intermediate (Q3.12 without layer norm)
    hidden: np.float32  # the hidden intermediate's scale and zero point
    hidden_zp: int
    input: np.float32
    input_zp: int
    output_state: np.float32
    output_state_zp: int
    cell_log2: int  # the cell state's scale is 2**cell_log2


def integer_lstm_prepare(context, node, direction: LstmDirection, t: dict, source, op: str) -> _IntegerLstm:
    """TFLite's integer LSTM checks and its gate multipliers, biases and tables, made once in prepare."""
    if op == "LSTM" and len(node.intermediates) == 12:
        raise KernelError("LSTM with 12 intermediates (TFLite's 8x8->8 integer kernel) is not supported")
    ensure(len(node.intermediates) == 5, "num_intermediate_tensors == 5 was not true.")
    if direction.peephole and direction.n_output > direction.n_cell:
        # TFLite's integer peephole runs over n_output values per row: past the cell state here
        raise KernelError(f"{op} integer peephole with n_output > n_cell is not supported")
    ensure(lstm_weights_constant(direction, t), f"{op} with INT8 input needs constant weights")
    cell_state = t["cell_state"]
    output = output_tensor(context, node)
    for tensor, name in ((cell_state, "cell_state"), (output, "output_tensor")):
        ensure(
            tensor.quantization is not None,
            f"{name}->quantization.type != kTfLiteNoQuantization was not true.",
        )
    scales = _integer_scales(context, node, direction, t, source, op)
    present = tuple(g for g in _GATES if not (direction.cifg and g == "input"))
    gates = {gate: _integer_gate(direction, t, gate, scales) for gate in present}
    input_bias = [_input_bias(direction, t, gate, scales.input_zp) for gate in present]
    recurrent_bias = [
        -scales.output_state_zp * t[f"recurrent_to_{gate}"].data.astype(np.int64).sum(axis=1)
        for gate in present
    ]
    projection = t["projection_weights"]
    projection_bias = _projection_bias(t, scales.hidden_zp)
    options = node.builtin_data
    cell_clip = _clip_bound(options.cell_clip, _scale(cell_state), 32767)
    proj_clip = _clip_bound(options.proj_clip, F32(output.quantization.scale[0]), 127)
    return _IntegerLstm(
        n_cell=direction.n_cell,
        n_output=direction.n_output,
        order=present,
        input_weights=np.concatenate([t[f"input_to_{g}"].data for g in present]).T.astype(np.float64),
        input_bias=np.concatenate(input_bias),
        recurrent_weights=np.concatenate([t[f"recurrent_to_{g}"].data for g in present]).T.astype(np.float64),
        recurrent_bias=np.concatenate(recurrent_bias),
        gates=gates,
        cell_shift=scales.cell_log2,
        cell_table=fixed_point_table("tanh", 15 + scales.cell_log2),
        hidden_scale=_multiplier(F32(2.0**-15 / float(scales.hidden) * 2.0**-15)),
        hidden_zp=scales.hidden_zp,
        output_zp=scales.output_state_zp,
        projection=None if projection is None else projection.data.T.astype(np.float64),
        projection_bias=projection_bias,
        projection_scale=_multiplier(
            (_scale(projection) if projection is not None else ONE) * scales.hidden / scales.output_state
        ),
        cell_clip=cell_clip,
        proj_clip=proj_clip,
    )


def _scale(tensor) -> np.float32:
    """A per-tensor quantized tensor's scale, as float32 (TFLite's)."""
    return F32(tensor.params.scale)


def _multiplier(real) -> tuple[int, int]:
    """A real multiplier as TFLite's (multiplier, shift), from its float64 value."""
    return quantize_multiplier(float(real))


def _integer_scales(context, node, direction: LstmDirection, t: dict, source, op: str) -> _IntegerScales:
    """Read and check the intermediates' and states' scales (TFLite's order of checks)."""
    intermediates = [context.tensors[i] for i in node.intermediates]
    gates = {}
    for k, gate in enumerate(_GATES):
        if direction.layer_norm:
            ensure(
                intermediates[k].quantization is not None,
                "intermediate->quantization.type != kTfLiteNoQuantization",
            )
            gates[gate] = F32(intermediates[k].quantization.scale[0])
        else:
            gates[gate] = F32(2.0**-12)  # Q3.12 for the activations
    hidden = intermediates[4]
    ensure(
        hidden.quantization is not None, "hidden->quantization.type != kTfLiteNoQuantization was not true."
    )
    hidden_scale, hidden_zp = F32(hidden.quantization.scale[0]), int(hidden.quantization.zero_point[0])
    cell_log2 = checked_log2(t["cell_state"].params.scale)
    ensure(cell_log2 is not None, "CheckedLog2(cell_state->params.scale, &cell_scale) was not true.")
    if op == "LSTM":
        ensure(cell_log2 <= -9, "cell_scale <= -9 was not true.")
    if not 0 <= 15 + cell_log2 <= 6:
        raise KernelError(
            f"{op}: a cell state scale of 2**{cell_log2} is not supported (TFLite skips its tanh)"
        )
    output_state = t["output_state"]
    return _IntegerScales(
        gates=gates,
        hidden=hidden_scale,
        hidden_zp=hidden_zp,
        input=_scale(source),
        input_zp=int(source.params.zero_point),
        output_state=_scale(output_state),
        output_state_zp=int(output_state.params.zero_point),
        cell_log2=cell_log2,
    )


def _integer_gate(direction: LstmDirection, t: dict, gate: str, scales: _IntegerScales) -> _IntegerGate:
    """One gate's requantization multipliers, peephole, layer norm and activation table."""
    gate_scale = scales.gates[gate]
    spec = _IntegerGate(
        input_scale=_multiplier(_scale(t[f"input_to_{gate}"]) * scales.input / gate_scale),
        recurrent_scale=_multiplier(_scale(t[f"recurrent_to_{gate}"]) * scales.output_state / gate_scale),
        table=fixed_point_table("tanh" if gate == "cell" else "logistic", 3),
    )
    if direction.peephole and gate != "cell":
        weights = t[f"cell_to_{gate}"]
        spec.peephole = weights.data.astype(np.int64)
        spec.peephole_scale = _multiplier(
            F32(2.0**scales.cell_log2 * float(_scale(weights)) / float(gate_scale))
        )
    if direction.layer_norm:
        norm = t[f"{gate}_layer_norm"]
        spec.norm_weights = norm.data.astype(np.int64)
        spec.norm_bias = t[f"{gate}_bias"].data.astype(np.int64)
        spec.norm_scale = _multiplier(_scale(norm))
        spec.variance_guard = max(1, int(F32(10000) * _scale(norm)))
    return spec


def _input_bias(direction: LstmDirection, t: dict, gate: str, input_zp: int) -> np.ndarray:
    """One gate's input product offset: its bias (zero with layer norm, which adds it) - input_zp * row sums."""
    if direction.layer_norm:
        bias = np.zeros(direction.n_cell, np.int64)
    else:
        bias = t[f"{gate}_bias"].data.astype(np.int64)
    return bias - input_zp * t[f"input_to_{gate}"].data.astype(np.int64).sum(axis=1)


def _projection_bias(t: dict, hidden_zp: int) -> np.ndarray | None:
    """The projection's offset: hidden_zp * its row sums, plus its bias; None without projection."""
    projection = t["projection_weights"]
    if projection is None:
        return None
    projection_bias = hidden_zp * projection.data.astype(np.int64).sum(axis=1)
    if t["projection_bias"] is not None:
        projection_bias = projection_bias + t["projection_bias"].data.astype(np.int64)
    return projection_bias


def _clip_bound(clip: float, scale: np.float32, limit: int) -> int:
    """A float clip option in quantized units, saturated to [-limit - 1, limit]; 0 (no clip) unless positive."""
    if clip > 0:
        return int(np.clip(F32(clip) / scale, -limit - 1, limit))
    return 0


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


def run_integer_lstm(
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

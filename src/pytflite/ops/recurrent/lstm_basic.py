"""LSTM's basic kernel (kernel_type BASIC: 5 inputs, 4 outputs): float, and 8 bits (uint8
activations, int16 state, gemmlowp fixed point)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import KernelError, ensure, ensure_eq
from ...fidelity.ruy import gemm_rounding
from ..quant.fixed_point import quantize_multiplier, rounding_divide_by_pot
from ..quant.gemmlowp import FixedPointMath
from ..quant.integer_gemm import gemm_requantizer
from .activations import sigmoid_into, tanh_into
from .common import T
from .lstm_integer import checked_log2, fixed_point_table


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
        data = BasicLstmData(units)
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


@dataclass(frozen=True)
class LstmKernelData:
    """What LSTM's prepare leaves: BasicLstmData for its basic kernel, lstm.py's LstmData for its full one."""


@dataclass(frozen=True)
class BasicLstmData(LstmKernelData):
    units: int
    quantized: bool = False
    weights: np.ndarray | None = None  # uint8 kernel: [depth + units, 4 * units] float64 of w - zero point
    requantize: Any = None  # the int32 accumulators to the int16 gates (Q3.12)


def _basic_quantized_prepare(host, batches, units, weights, bias, state_out) -> BasicLstmData:
    """TFLite's 8-bit LstmCell<4>: uint8 input and activation (zero point 128), int16 state in Q4.11."""

    log2 = None if state_out.params is None else checked_log2(state_out.params.scale)
    ensure(log2 is not None, "The internal state of a LSTM cell must have a power-of-two scale.")
    ensure(
        15 + log2 == 4,
        "The only case of quantized LstmCell currently supported is with StateIntegerBits==4",
    )
    ensure(weights.is_constant_or_persistent, "LSTM basic kernel: quantized weights must be constant")
    values = weights.data.astype(np.float64) - weights.params.zero_point
    multiplier, shift = quantize_multiplier(4096 * float(bias.params.scale))
    # cpu_backend_gemm's uint8 product into int16: its rounding depends on the kernel the host runs
    rows, depth = weights.shape
    rounding = gemm_rounding(host, int16=False, uint8=True, one_column=batches == 1, rows=rows, depth=depth)
    requantize = gemm_requantizer(rounding, multiplier, shift)
    return BasicLstmData(units, True, np.ascontiguousarray(values.T), requantize)


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
    sigmoid_into(input_gate, i)
    g = np.empty_like(new_input)
    tanh_into(new_input, g)
    f = np.empty_like(forget_gate)
    sigmoid_into(forget_gate, f)
    np.multiply(i, g, out=state_out)
    state_out += f * state
    o = np.empty_like(output_gate)
    sigmoid_into(output_gate, o)
    tanh_into(state_out, activ_out)
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
    logistic, tanh = fixed_point_table("logistic", 3), fixed_point_table("tanh", 3)
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

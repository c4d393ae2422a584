"""What the LSTM kernels share: where one direction's tensors sit in the node's inputs, TFLite's
checks of them (CheckInputTensorDimensions), the direction and op data prepare keeps, and the float
and hybrid weights packed for the gate products."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.types import type_name
from ...errors import KernelError, ensure, ensure_eq
from ...fidelity.arithmetic import HostArithmetic
from ..jit import compiled
from .common import F32, WEIGHT_INT, T
from .hybrid import HybridMatrix, hybrid_matrix

# Positions of one LSTM direction's tensors in the node's inputs.
FULL_SLOTS = {
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
BIDI_FW_SLOTS = {
    **{k: v for k, v in FULL_SLOTS.items() if v <= 17},
    "output_state": 35,
    "cell_state": 36,
    "aux_to_input": 40,
    "aux_to_forget": 41,
    "aux_to_cell": 42,
    "aux_to_output": 43,
}
BIDI_BW_SLOTS = {
    **{k: v + 17 for k, v in FULL_SLOTS.items() if v <= 17},
    "output_state": 37,
    "cell_state": 38,
    "aux_to_input": 44,
    "aux_to_forget": 45,
    "aux_to_cell": 46,
    "aux_to_output": 47,
}
_GATES = ("input", "forget", "cell", "output")


def slot(context, node, slots: dict, name: str):
    position = slots.get(name)
    if position is None or position >= len(node.inputs) or node.inputs[position] < 0:
        return None
    return context.tensors[node.inputs[position]]


@dataclass(frozen=True)
class LstmDirection:
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
    arithmetic: HostArithmetic  # the host's: on x86, its SSE hybrid kernels' quirks
    integer: bool = False  # int8 input, the 8x8->16 integer kernel
    order: tuple[str, ...] = ()  # the gates of the stacked buffers, left to right
    # _LstmFloatWeights / _LstmHybridWeights / lstm_integer's _IntegerLstm; None: packed at each invoke
    packed: Any = None
    row_sums: dict = field(default_factory=dict)  # hybrid weight row sums, computed once (as TFLite)
    # the mask of _sigmoid_scalar_elements by (batch, batch_major), made at the first invoke (one entry)
    scalar_mask: dict = field(default_factory=dict)

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
    # these weights with the sigmoid gates' (input, forget, output) columns halved (exact: a power of
    # two): lstm_float's plain steps compute those sigmoids as 0.5 * tanh(x / 2) + 0.5 (no CIFG, no
    # peephole)
    halved: _LstmFloatWeights | None = None
    step_operands: tuple | None = None  # lstm_float._step_operands, made on the first compiled run

    @functools.cached_property
    def compiled_steps(self):
        """lstm_steps_compiled.float_lstm_steps where compiled kernels run (looked up once: the lookup
        reads the environment, a microsecond an invoke)."""
        return compiled("recurrent.lstm_steps_compiled", "float_lstm_steps")


@dataclass
class _LstmHybridWeights:
    input_matrix: HybridMatrix
    aux_matrix: HybridMatrix | None
    recurrent_matrix: HybridMatrix
    bias: np.ndarray
    peephole: dict = field(default_factory=dict)
    layer_norm: np.ndarray | None = None
    projection: HybridMatrix | None = None
    projection_bias: np.ndarray | None = None
    step_operands: tuple | None = None  # lstm_float._step_operands, made on the first compiled run

    @functools.cached_property
    def compiled_steps(self):
        """lstm_steps_compiled.hybrid_lstm_steps where compiled kernels run (looked up once)."""
        return compiled("recurrent.lstm_steps_compiled", "hybrid_lstm_steps")


def _lstm_gate_order(cifg: bool, peephole: bool) -> tuple[str, ...]:
    # Sigmoid gates side by side (one call); with peephole the output gate comes last, since it needs
    # the updated cell state, and the others stay contiguous for the layer norm.
    order = ("input", "forget", "cell", "output") if peephole else ("input", "forget", "output", "cell")
    return order[1:] if cifg else order


def _lstm_direction_tensors(context, node, direction: LstmDirection) -> dict:
    return {name: slot(context, node, direction.slots, name) for name in direction.slots}


def _pack_lstm(direction: LstmDirection, t: dict) -> Any:
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
    if not (direction.cifg or direction.peephole):  # gates i f o g: lstm_float's plain steps
        packed.halved = _halve_sigmoid_gates(packed, 3 * n)
    if direction.projection:
        packed.projection = np.ascontiguousarray(t["projection_weights"].data.T.astype(F32))
        if t["projection_bias"] is not None:
            packed.projection_bias = t["projection_bias"].data.astype(F32)
    return packed


def _halve_sigmoid_gates(weights: _LstmFloatWeights, sigmoid_width: int) -> _LstmFloatWeights:
    """Input, aux and recurrent weights and bias with their first `sigmoid_width` columns halved."""

    def halve(array):
        if array is None:
            return None
        array = array.copy()
        array[..., :sigmoid_width] *= F32(0.5)
        return array

    return _LstmFloatWeights(
        halve(weights.input_weights),
        halve(weights.aux_weights),
        halve(weights.recurrent_weights),
        halve(weights.bias),
    )


def _pack_lstm_hybrid(direction: LstmDirection, t: dict, bias, layer_norm) -> _LstmHybridWeights:
    order = direction.order
    n = direction.n_cell

    def matrix(prefix):
        blocks = [(t[f"{prefix}{g}"].data, t[f"{prefix}{g}"].params.scale) for g in order]
        return hybrid_matrix(blocks, direction.arithmetic, direction.row_sums, prefix)

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
        packed.projection = hybrid_matrix(
            [(weights.data, weights.params.scale)], direction.arithmetic, direction.row_sums, "projection"
        )
        if t["projection_bias"] is not None:
            packed.projection_bias = t["projection_bias"].data.astype(F32)
    return packed


def lstm_weights_constant(direction: LstmDirection, t: dict) -> bool:
    skip = ("output_state", "cell_state")
    return all(
        tensor is None or tensor.is_constant_or_persistent for name, tensor in t.items() if name not in skip
    )


@dataclass(frozen=True)
class LstmRun:
    """Per-invoke settings shared by the directions of an LSTM node."""

    activation: Any
    cell_clip: float
    proj_clip: float
    asymmetric: bool
    batch_major: bool


def _check_lstm_direction(
    context, node, direction: LstmDirection, t: dict, use_layer_norm: bool, is_integer: bool, op: str
) -> None:
    """TFLite's CheckInputTensorDimensions for one direction's tensors."""
    n_cell, n_output = direction.n_cell, direction.n_output
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
    _check_gate_weights(t, direction, weight_type, diag_ok=op == "UNIDIRECTIONAL_SEQUENCE_LSTM")
    cifg = t["input_to_input"] is None
    ensure(cifg == (t["recurrent_to_input"] is None), "cifg_weights_all_or_none == true was not true.")
    _check_peepholes(t, n_cell, cifg, T.INT16 if is_integer else weight_type)
    bias_type = T.INT32 if is_integer else T.FLOAT32
    biases = {gate: t[f"{gate}_bias"] for gate in _GATES}
    _check_gate_vectors(biases, "{}_gate_bias", "Tensor {} is required", n_cell, cifg, bias_type)
    projection, projection_bias = t["projection_weights"], t["projection_bias"]
    _check_weight_matrix(projection, "projection", n_output, n_cell, weight_type)
    if projection_bias is not None:
        _check_vector(projection_bias, "projection_bias", n_output, bias_type)
    ensure(
        projection is not None or projection_bias is None,
        "projecton_tensors_consistent == true was not true.",
    )
    if use_layer_norm:
        norms = {gate: t.get(f"{gate}_layer_norm") for gate in _GATES}
        norm_type = T.INT16 if is_integer else T.FLOAT32
        label = "{}_layer_norm_coefficients"
        _check_gate_vectors(norms, label, "{} != nullptr was not true.", n_cell, cifg, norm_type)


def _check_weight_matrix(tensor, name: str, rows: int, cols: int, weight_type, diag_ok: bool = False) -> None:
    """Check a [rows, cols] weight matrix (where diag_ok, or a [rows] diagonal) of the weights' type, if present."""
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


def _check_vector(tensor, name: str, size: int, dtype) -> None:
    """Check a 1-D [size] tensor (bias, peephole, layer norm coefficients) of the given type."""
    ensure_eq(len(tensor.shape), 1, f"{name}->dims->size")
    ensure_eq(tensor.shape[0], size, f"{name}->dims->data[0]")
    if tensor.type != dtype:
        raise KernelError(
            f"{name}->type != {type_name(dtype)} ({type_name(tensor.type)} != {type_name(dtype)})"
        )


def _check_gate_weights(t: dict, direction: LstmDirection, weight_type, diag_ok: bool) -> None:
    """Check each gate's input and recurrent weights: present (the input gate's only without CIFG), shaped."""
    n_cell, n_input, n_output = direction.n_cell, direction.n_input, direction.n_output
    for gate in _GATES:
        if gate != "input" or t["input_to_input"] is not None:
            ensure(t[f"input_to_{gate}"] is not None, f"Tensor input_to_{gate}_weights is required")
        _check_weight_matrix(t[f"input_to_{gate}"], f"input_to_{gate}", n_cell, n_input, weight_type)
        if gate != "input":
            ensure(t[f"recurrent_to_{gate}"] is not None, f"Tensor recurrent_to_{gate}_weights is required")
        recurrent = t[f"recurrent_to_{gate}"]
        _check_weight_matrix(recurrent, f"recurrent_to_{gate}", n_cell, n_output, weight_type, diag_ok)


def _check_peepholes(t: dict, n_cell: int, cifg: bool, dtype) -> None:
    """Check the peephole (cell_to_gate) weights: [n_cell] vectors, all of them or none."""
    present = []
    for gate in ("input", "forget", "output"):
        tensor = t[f"cell_to_{gate}"]
        if tensor is not None:
            _check_vector(tensor, f"cell_to_{gate}_weights", n_cell, dtype)
        present.append(tensor is not None)
    all_present = (present[0] or cifg) and present[1] and present[2]
    ensure(all_present or not any(present), "peephole_weights_all_or_none == true was not true.")


def _check_gate_vectors(tensors: dict, label: str, required: str, n_cell: int, cifg: bool, dtype) -> None:
    """Check per-gate [n_cell] vectors (biases, layer norms) by gate: the input gate's absent with CIFG, the
    others present; `label` and `required` (its message when absent) are formats of the tensor's name."""
    for gate, tensor in tensors.items():
        name = label.format(gate)
        if gate == "input" and cifg:
            ensure(tensor is None, f"{name} == nullptr was not true.")
            continue
        ensure(tensor is not None, required.format(name))
        _check_vector(tensor, name, n_cell, dtype)


def lstm_direction(
    context, node, slots: dict, n_input: int, n_aux: int, source_type, use_layer_norm: bool, op: str
) -> tuple[LstmDirection, dict]:
    """Read and check one direction's tensors; returns the direction and its tensors by role."""
    t = {name: slot(context, node, slots, name) for name in slots}
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
    hybrid = source_type == T.FLOAT32 and to_output.type in WEIGHT_INT
    direction = LstmDirection(
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
        arithmetic=context.host.arithmetic,
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
    else:
        raise KernelError(f"{op} input of type {type_name(source_type)} is not supported")
    order = _lstm_gate_order(direction.cifg, direction.peephole)
    return dataclasses.replace(direction, integer=is_integer, order=order), t


def state_tensor(context, node, slots: dict, name: str, elements: int):
    tensor = slot(context, node, slots, name)
    ensure(tensor is not None and tensor.is_variable, f"{name} != nullptr was not true.")
    size = int(np.prod(tensor.shape, dtype=np.int64))
    ensure_eq(size, elements, f"NumElements({name})")
    return tensor


def lstm_options_run(options, batch_major: bool) -> LstmRun:
    return LstmRun(
        activation=options.fused_activation_function,
        cell_clip=float(options.cell_clip),
        proj_clip=float(options.proj_clip),
        asymmetric=bool(getattr(options, "asymmetric_quantize_inputs", False)),
        batch_major=batch_major,
    )


def lstm_layer_norm_inputs(context, node) -> bool:
    count = len(node.inputs)
    if count == 24:
        return slot(context, node, FULL_SLOTS, "forget_layer_norm") is not None
    if count == 20:
        return False
    raise KernelError(f"The LSTM Full kernel expects 20 or 24 inputs. Got {count} inputs")


def finish_direction(direction: LstmDirection, t: dict) -> LstmDirection:
    """The direction with its weights packed when they are constant."""
    if lstm_weights_constant(direction, t):
        return dataclasses.replace(direction, packed=_pack_lstm(direction, t))
    return direction


def direction_weights(context, node, direction: LstmDirection):
    if direction.packed is not None:
        return direction.packed
    return _pack_lstm(direction, _lstm_direction_tensors(context, node, direction))

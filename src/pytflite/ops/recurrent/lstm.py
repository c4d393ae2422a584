"""LSTM (its full kernel), UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM: prepare,
invoke and their registrations. The time steps are lstm_float.py's (float and hybrid weights) or
lstm_integer.py's (int8 input); LSTM's basic kernel is lstm_basic.py."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq
from ...model.options import LSTMKernelType
from ..common import output_tensor
from ..registry import register_builtin
from .common import T, time_major_view
from .lstm_basic import BasicLstmData, LstmKernelData, basic_lstm_invoke, basic_lstm_prepare
from .lstm_common import (
    BIDI_BW_SLOTS,
    BIDI_FW_SLOTS,
    FULL_SLOTS,
    LstmDirection,
    LstmRun,
    direction_weights,
    finish_direction,
    lstm_direction,
    lstm_layer_norm_inputs,
    lstm_options_run,
    slot,
    state_tensor,
)
from .lstm_float import PlainLstm, plain, run_lstm
from .lstm_integer import integer_lstm_prepare, run_integer_lstm


@dataclass(frozen=True)
class LstmData(LstmKernelData):
    """The full LSTM kernel's and UNIDIRECTIONAL_SEQUENCE_LSTM's op data."""

    direction: LstmDirection
    run: LstmRun
    time_major: bool
    sequence: bool  # UNIDIRECTIONAL_SEQUENCE_LSTM (LSTM runs a sequence of one step)


@dataclass(frozen=True)
class BidirectionalLstmData:
    directions: tuple[LstmDirection, LstmDirection]  # forward, backward
    run: LstmRun
    time_major: bool
    merged: bool
    use_aux: bool
    has_aux_input: bool


def _lstm_prepare(context, node, sequence: bool):
    """LSTM's full kernel (one step, input [batch, depth]) and UNIDIRECTIONAL_SEQUENCE_LSTM (input
    [time, batch, depth] or [batch, time, depth]): one kernel, the single step being a sequence of one."""
    op = "UNIDIRECTIONAL_SEQUENCE_LSTM" if sequence else "LSTM"
    use_layer_norm = lstm_layer_norm_inputs(context, node)
    ensure_eq(len(node.outputs), 1, "node->outputs->size")
    options = node.builtin_data
    source = context.tensors[node.inputs[0]]
    ensure(len(source.shape) > 1, "input->dims->size > 1 was not true.")
    ensure_eq(len(source.shape), 3 if sequence else 2, f"{op} input rank")
    time_major = bool(options.time_major) if sequence else True
    n_batch = source.shape[1] if sequence and time_major else source.shape[0]
    n_input = source.shape[-1]
    direction, t = lstm_direction(context, node, FULL_SLOTS, n_input, 0, source.type, use_layer_norm, op)
    state_tensor(context, node, FULL_SLOTS, "output_state", n_batch * direction.n_output)
    state_tensor(context, node, FULL_SLOTS, "cell_state", n_batch * direction.n_cell)
    context.resize_tensor(output_tensor(context, node), (*source.shape[:-1], direction.n_output))
    if direction.integer:
        packed = integer_lstm_prepare(context, node, direction, t, source, op)
        direction = dataclasses.replace(direction, packed=packed)
    else:
        direction = finish_direction(direction, t)
    node.user_data = LstmData(direction, lstm_options_run(options, not time_major), time_major, sequence)


def lstm_prepare(context, node):
    if node.builtin_data.kernel_type == LSTMKernelType.BASIC:
        return basic_lstm_prepare(context, node)
    return _lstm_prepare(context, node, sequence=False)


def unidirectional_lstm_prepare(context, node):
    return _lstm_prepare(context, node, sequence=True)


def _lstm_arrays(context, node, data: LstmData):
    """The input and output as [time, batch, depth] views, and the h and c states as [batch, n]."""
    tensors = context.tensors
    source, out = tensors[node.inputs[0]].data, tensors[node.outputs[0]].data
    if data.sequence:
        source, out = time_major_view(source, data.time_major), time_major_view(out, data.time_major)
    else:
        source, out = source[None], out[None]
    batch = source.shape[1]
    h = tensors[node.inputs[18]].data.reshape(batch, data.direction.n_output)
    c = tensors[node.inputs[19]].data.reshape(batch, data.direction.n_cell)
    return source, out, h, c


def lstm_invoke(context, node):
    data = node.user_data
    if isinstance(data, BasicLstmData):
        return basic_lstm_invoke(context, node)
    direction = data.direction
    source, out, h, c = _lstm_arrays(context, node, data)
    if direction.integer:
        run_integer_lstm(direction.packed, source, h, c, out)
        return
    weights = direction_weights(context, node, direction)
    run_lstm(direction, weights, data.run, source, None, h, c, out, True)


def lstm_calls(context, node):
    """Registration.calls of a plain float LSTM with constant weights: its PlainLstm, buffers and views
    made for this allocation; other LSTMs run their invoke."""
    data = node.user_data
    if not isinstance(data, LstmData) or not _bindable(data.direction, data.run):
        return None
    source, out, h, c = _lstm_arrays(context, node, data)
    return (PlainLstm(data.direction.packed.halved, data.run, source, None, h, c, out, True),)


def _bindable(direction: LstmDirection, run: LstmRun) -> bool:
    return not direction.integer and direction.packed is not None and plain(direction, run)


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
    aux = slot(context, node, {"aux": 39}, "aux")
    fw_aux_forget = slot(context, node, BIDI_FW_SLOTS, "aux_to_forget")
    aux_roles = ("aux_to_cell", "aux_to_forget", "aux_to_output")
    present = [
        slot(context, node, s, r) is not None for s in (BIDI_FW_SLOTS, BIDI_BW_SLOTS) for r in aux_roles
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
    fw_slots = dict(BIDI_FW_SLOTS)
    bw_slots = dict(BIDI_BW_SLOTS)
    if not use_aux:
        for slots in (fw_slots, bw_slots):
            for role in ("aux_to_input", *aux_roles):
                slots.pop(role)
    fw, fw_t = lstm_direction(context, node, fw_slots, n_input, n_aux, source.type, False, op)
    bw, bw_t = lstm_direction(context, node, bw_slots, n_input, n_aux, source.type, False, op)
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
        state_tensor(context, node, slots, "output_state", n_batch * direction.n_output)
        state_tensor(context, node, slots, "cell_state", n_batch * direction.n_cell)
    node.user_data = BidirectionalLstmData(
        (finish_direction(fw, fw_t), finish_direction(bw, bw_t)),
        lstm_options_run(options, not time_major),
        time_major,
        merged,
        use_aux,
        aux is not None,
    )


def _bidirectional_runs(context, node):
    """Each direction's arguments to run_lstm after its weights: (direction, sequence, aux, h, c,
    output, forward)."""
    data = node.user_data
    fw, bw = data.directions
    tensors = context.tensors
    tm = data.time_major
    source = time_major_view(tensors[node.inputs[0]].data, tm)
    aux = time_major_view(tensors[node.inputs[39]].data, tm) if data.has_aux_input else None
    # Stacking without cross links: the aux input is the backward cell's input, and no aux input is used.
    non_stacking = not data.use_aux and aux is not None
    bw_source = aux if non_stacking else source
    real_aux = None if non_stacking else aux
    batch = source.shape[1]
    fw_out = time_major_view(tensors[node.outputs[0]].data, tm)
    if data.merged:
        bw_out = fw_out[..., fw.n_output :]
        fw_out = fw_out[..., : fw.n_output]
    else:
        bw_out = time_major_view(tensors[node.outputs[1]].data, tm)
    for direction, states, target, sequence, forward in (
        (fw, (35, 36), fw_out, source, True),
        (bw, (37, 38), bw_out, bw_source, False),
    ):
        h = tensors[node.inputs[states[0]]].data.reshape(batch, direction.n_output)
        c = tensors[node.inputs[states[1]]].data.reshape(batch, direction.n_cell)
        yield direction, sequence, real_aux, h, c, target, forward


def bidirectional_lstm_invoke(context, node):
    run = node.user_data.run
    for direction, *arrays in _bidirectional_runs(context, node):
        run_lstm(direction, direction_weights(context, node, direction), run, *arrays)


def bidirectional_lstm_calls(context, node):
    """As lstm_calls, when both directions are plain with constant weights."""
    data = node.user_data
    if not all(_bindable(direction, data.run) for direction in data.directions):
        return None
    return tuple(
        PlainLstm(direction.packed.halved, data.run, *arrays)
        for direction, *arrays in _bidirectional_runs(context, node)
    )


# float32 (float or hybrid int8 weights) and int8 (the integer 8x8->16 kernel) inputs; LSTM's basic
# kernel also takes uint8
_LSTM_TYPES = (T.FLOAT32, T.INT8)
register_builtin(
    BuiltinOperator.LSTM,
    (1, 4),
    types=(*_LSTM_TYPES, T.UINT8),
    op_data=LstmKernelData,
    prepare=lstm_prepare,
    invoke=lstm_invoke,
    calls=lstm_calls,
)
register_builtin(
    BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM,
    (1, 4),
    types=_LSTM_TYPES,
    op_data=LstmData,
    prepare=unidirectional_lstm_prepare,
    invoke=lstm_invoke,
    calls=lstm_calls,
)
register_builtin(
    BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM,
    (1, 3),
    types=(T.FLOAT32,),
    op_data=BidirectionalLstmData,
    prepare=bidirectional_lstm_prepare,
    invoke=bidirectional_lstm_invoke,
    calls=bidirectional_lstm_calls,
)

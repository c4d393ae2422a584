"""The recurrent ops (UNIDIRECTIONAL_SEQUENCE_LSTM, LSTM, RNN, UNIDIRECTIONAL_SEQUENCE_RNN, SVDF,
BIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_RNN): LiteRT 2.3's kernels add all their
temporaries in Init (a fixed count per op) and type at prepare only those the node's variant uses: a
float kernel its gate scratch, a hybrid one (float32 input, 8-bit weights) the quantized copies of input
and states, scaling factors, accumulators, zero points and weight row sums, an integer one its
int16/int8/int32 gate buffers. Each function returns every slot, in Init's order; `at_init` numbers them
as the node is built, before any kernel prepares. XNNPACK takes none of these ops.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ...core.types import BuiltinOperator, TensorType
from ...model.options import LSTMKernelType
from . import LiteRTKernels, Temporary, emulates, input_tensor

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.node import Node

F32, I32 = TensorType.FLOAT32, TensorType.INT32
_8BIT = (TensorType.INT8, TensorType.UINT8)

# the LSTM kernels' twelve temporaries, in Init's order
_LSTM_SLOTS = (
    "scratch",
    "input_quantized",
    "output_state_quantized",
    "cell_state_quantized",
    "input_scaling_factors",
    "output_state_scaling_factors",
    "product_scaling_factors",
    "recovered_cell_weights",
    "accumulator",
    "input_zero_points",
    "output_state_zero_points",
    "row_sums",
)
_LSTM_LEDGERS = tuple(f"ledger_{i}" for i in range(9))  # LSTM's sparse weights' ledgers, never typed here
_INTEGER_GATE_TYPES = (TensorType.INT16,) * 4 + (TensorType.INT8, I32)


def _hybrid(source, weights) -> bool:
    """IsHybridOp: a float32 input with 8-bit weights."""
    return source.type == F32 and weights.type in _8BIT


def _typed(slots: tuple[str, ...], typed: dict[str, Temporary]) -> tuple[Temporary, ...]:
    return tuple(typed.get(slot, Temporary(slot)) for slot in slots)


def _lstm_temporaries(
    context: Context, node: Node, batch: int, scratch_pad: int, slots: tuple[str, ...]
) -> tuple[Temporary, ...]:
    """The LSTM kernels' temporaries (inputs in TFLite's LSTM order); `scratch_pad`: the float gate
    scratch's extra columns (16 in the sequence kernel, none in LSTM's)."""
    source = input_tensor(context, node, 0)
    input_weights, output_weights = input_tensor(context, node, 1), input_tensor(context, node, 4)
    recurrent_output_weights, projection = input_tensor(context, node, 8), input_tensor(context, node, 16)
    output_state, cell_state = input_tensor(context, node, 18), input_tensor(context, node, 19)
    cells = output_weights.shape[0]
    outputs = recurrent_output_weights.shape[-1]
    cifg = input_weights is None
    if source.type == TensorType.INT8:  # the 8x8->16 integer kernel's gate buffers
        gates = (Temporary(slot, t, (batch, cells)) for slot, t in zip(slots, _INTEGER_GATE_TYPES))
        return _typed(slots, {temporary.slot: temporary for temporary in gates})
    scratch = Temporary("scratch", source.type, (batch, cells * (4 if cifg else 5) + scratch_pad))
    if not _hybrid(source, output_weights):
        return _typed(slots, {"scratch": scratch})
    quantized = output_weights.type
    row_sums = (6 if cifg else 8) + (math.ceil(outputs / cells) if projection is not None else 0)
    per_row = {
        slot: Temporary(slot, F32, (batch,)) for slot in _LSTM_SLOTS if slot.endswith(("factors", "points"))
    }
    return _typed(
        slots,
        {
            "scratch": scratch,
            "input_quantized": Temporary("input_quantized", quantized, source.shape),
            "output_state_quantized": Temporary("output_state_quantized", quantized, output_state.shape),
            "cell_state_quantized": Temporary("cell_state_quantized", quantized, cell_state.shape),
            **per_row,
            "recovered_cell_weights": Temporary("recovered_cell_weights", F32, (cells,)),
            "accumulator": Temporary("accumulator", I32, (cells, batch)),
            "row_sums": Temporary("row_sums", I32, (row_sums, cells), "Lstm_row_sums"),
        },
    )


@emulates(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, at_init=lambda node: _LSTM_SLOTS)
def sequence_lstm_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    source = input_tensor(context, node, 0)
    batch = source.shape[1] if node.builtin_data.time_major else source.shape[0]
    return _lstm_temporaries(context, node, batch, 16, _LSTM_SLOTS)


def _lstm_init_slots(node: Node) -> tuple[str, ...]:
    """LSTM's full kernel adds twelve temporaries and nine ledgers in Init, its basic kernel none."""
    return () if node.builtin_data.kernel_type == LSTMKernelType.BASIC else _LSTM_SLOTS + _LSTM_LEDGERS


@emulates(BuiltinOperator.LSTM, at_init=_lstm_init_slots)
def lstm_temporaries(context: Context, node: Node, op: int, kernels: LiteRTKernels) -> tuple[Temporary, ...]:
    if node.builtin_data.kernel_type == LSTMKernelType.BASIC:
        return ()  # the basic kernel adds none
    slots = _LSTM_SLOTS + _LSTM_LEDGERS
    if input_tensor(context, node, 0).type == TensorType.INT8 and len(node.intermediates) != 5:
        return tuple(Temporary(slot) for slot in slots)  # the 8x8->8 integer kernel: not emulated
    return _lstm_temporaries(context, node, input_tensor(context, node, 0).shape[0], 0, slots)


_RNN_SLOTS = (
    "input_quantized",
    "state_quantized",
    "scaling_factors",
    "accumulator",
    "zero_points",
    "row_sums",
)


@emulates(BuiltinOperator.RNN, BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, at_init=lambda node: _RNN_SLOTS)
def rnn_temporaries(context: Context, node: Node, op: int, kernels: LiteRTKernels) -> tuple[Temporary, ...]:
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    state = input_tensor(context, node, 4)
    if not _hybrid(source, weights):
        return tuple(Temporary(slot) for slot in _RNN_SLOTS)
    sequence = op == BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN
    batch = source.shape[1 if sequence and node.builtin_data.time_major else 0]
    units = weights.shape[0]
    return (
        Temporary("input_quantized", weights.type, source.shape),
        Temporary("state_quantized", weights.type, state.shape),
        Temporary("scaling_factors", F32, (batch,)),
        Temporary("accumulator", I32, (units, batch)),
        Temporary("zero_points", I32, (batch,)),
        Temporary("row_sums", I32, (2, units), "" if sequence else "Rnn_row_sums"),
    )


_SVDF_SLOTS = (
    "scratch",
    "input_quantized",
    "scaling_factors",
    "float_weights_time",
    "zero_points",
    "row_sums",
)


@emulates(BuiltinOperator.SVDF, at_init=lambda node: _SVDF_SLOTS)
def svdf_temporaries(context: Context, node: Node, op: int, kernels: LiteRTKernels) -> tuple[Temporary, ...]:
    source, feature_weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    time_weights = input_tensor(context, node, 2)
    batch, filters = source.shape[0], feature_weights.shape[0]
    if source.type == TensorType.INT8:  # the integer kernel: int32 scratch, its output accumulator second
        units = filters // node.builtin_data.rank
        return _typed(
            _SVDF_SLOTS,
            {
                "scratch": Temporary("scratch", I32, (batch, filters)),
                _SVDF_SLOTS[1]: Temporary(_SVDF_SLOTS[1], I32, (units, batch)),
            },
        )
    scratch = Temporary("scratch", F32, (batch, filters))
    if not _hybrid(source, feature_weights):
        return _typed(_SVDF_SLOTS, {"scratch": scratch})
    # LiteRT names the float time weights, not the row sums, 'Svdf_row_sums'
    return (
        scratch,
        Temporary("input_quantized", feature_weights.type, source.shape),
        Temporary("scaling_factors", F32, (batch,)),
        Temporary("float_weights_time", F32, time_weights.shape, "Svdf_row_sums"),
        Temporary("zero_points", F32, (batch,)),
        Temporary("row_sums", F32, (filters,)),
    )


_BIDI_RNN_SLOTS = (
    "input_quantized",
    "fw_state_quantized",
    "bw_state_quantized",
    "scaling_factors",
    "accumulator",
    "zero_points",
    "fw_row_sums",
    "bw_row_sums",
    "aux_input_quantized",
)


@emulates(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, at_init=lambda node: _BIDI_RNN_SLOTS)
def bidirectional_rnn_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    """Typed only for a hybrid node; the aux input's quantized copy only with aux weights."""
    source, fw_weights, bw_weights = (input_tensor(context, node, i) for i in (0, 1, 5))
    if not _hybrid(source, fw_weights):
        return _typed(_BIDI_RNN_SLOTS, {})
    fw_state, bw_state = input_tensor(context, node, 4), input_tensor(context, node, 8)
    aux_input, aux_weights = input_tensor(context, node, 9), input_tensor(context, node, 10)
    batch = source.shape[1 if node.builtin_data.time_major else 0]
    fw_units, bw_units = fw_weights.shape[0], bw_weights.shape[0]
    row_sums = 3 if aux_weights is not None else 2
    typed = [
        Temporary("input_quantized", fw_weights.type, source.shape),
        Temporary("fw_state_quantized", fw_weights.type, fw_state.shape),
        Temporary("bw_state_quantized", fw_weights.type, bw_state.shape),
        Temporary("scaling_factors", F32, (batch,)),
        Temporary("accumulator", I32, (max(fw_units, bw_units), batch)),
        Temporary("zero_points", I32, (batch,)),
        Temporary("fw_row_sums", I32, (row_sums, fw_units), "Lstm_fw_row_sums"),
        Temporary("bw_row_sums", I32, (row_sums, bw_units), "Lstm_bw_row_sums"),
    ]
    if aux_weights is not None:
        typed.append(Temporary("aux_input_quantized", fw_weights.type, aux_input.shape))
    return _typed(_BIDI_RNN_SLOTS, {temporary.slot: temporary for temporary in typed})


_BIDI_LSTM_SLOTS = (
    "fw_scratch",
    "bw_scratch",
    "input_quantized",
    "fw_output_state_quantized",
    "bw_output_state_quantized",
    "fw_cell_state_quantized",
    "bw_cell_state_quantized",
    "input_scaling_factors",
    "aux_input_scaling_factors",
    "output_state_scaling_factors",
    "product_scaling_factors",
    "recovered_cell_weights",
    "accumulator",
    "input_zero_points",
    "aux_input_zero_points",
    "output_state_zero_points",
    "fw_row_sums",
    "bw_row_sums",
    "aux_input_quantized",
)
_BIDI_LSTM_BACKWARD = 17  # the backward cell's tensors follow the forward cell's 17
_BIDI_LSTM_STATES = {"fw": (35, 36), "bw": (37, 38)}  # output state, cell state
_BIDI_LSTM_AUX_INPUT, _BIDI_LSTM_AUX_OUTPUT_WEIGHTS = 39, {"fw": 43, "bw": 47}


@emulates(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, at_init=lambda node: _BIDI_LSTM_SLOTS)
def bidirectional_lstm_temporaries(
    context: Context, node: Node, op: int, kernels: LiteRTKernels
) -> tuple[Temporary, ...]:
    """Each direction's float gate scratch (the forward one 16 columns wider), and for a hybrid node
    the quantized copies, per-batch factors, accumulator and each direction's weight row sums; the aux
    input's quantized copy only with aux weights."""
    source = input_tensor(context, node, 0)
    batch = source.shape[1 if node.builtin_data.time_major else 0]
    aux_weights = {d: input_tensor(context, node, i) for d, i in _BIDI_LSTM_AUX_OUTPUT_WEIGHTS.items()}
    has_aux = aux_weights["fw"] is not None
    cells, row_sums, typed = {}, {}, {}
    for direction, offset, pad in (("fw", 0, 16), ("bw", _BIDI_LSTM_BACKWARD, 0)):
        cifg = input_tensor(context, node, offset + 1) is None
        cells[direction] = input_tensor(context, node, offset + 4).shape[0]
        outputs = input_tensor(context, node, offset + 8).shape[-1]
        scratch = f"{direction}_scratch"
        typed[scratch] = Temporary(scratch, source.type, (batch, cells[direction] * (4 if cifg else 5) + pad))
        rows = (6 if cifg else 8) + ((3 if cifg else 4) if has_aux else 0)
        if input_tensor(context, node, offset + 16) is not None:
            rows += math.ceil(outputs / cells[direction])
        row_sums[direction] = (rows, cells[direction])
    weights = input_tensor(context, node, 4)
    if not _hybrid(source, weights):
        return _typed(_BIDI_LSTM_SLOTS, typed)
    quantized = weights.type
    for direction, (output_state, cell_state) in _BIDI_LSTM_STATES.items():
        for slot, position in (("output_state", output_state), ("cell_state", cell_state)):
            name = f"{direction}_{slot}_quantized"
            typed[name] = Temporary(name, quantized, input_tensor(context, node, position).shape)
        typed[f"{direction}_row_sums"] = Temporary(f"{direction}_row_sums", I32, row_sums[direction])
    accumulated = max(cells.values())
    if has_aux:
        accumulated = max(accumulated, *(w.shape[0] for w in aux_weights.values()))
        aux_input = input_tensor(context, node, _BIDI_LSTM_AUX_INPUT)
        typed["aux_input_quantized"] = Temporary("aux_input_quantized", quantized, aux_input.shape)
    per_batch = (slot for slot in _BIDI_LSTM_SLOTS if slot.endswith(("factors", "points")))
    typed.update({slot: Temporary(slot, F32, (batch,)) for slot in per_batch})
    typed["input_quantized"] = Temporary("input_quantized", quantized, source.shape)
    typed["recovered_cell_weights"] = Temporary("recovered_cell_weights", F32, (cells["fw"],))
    typed["accumulator"] = Temporary("accumulator", I32, (accumulated, batch))
    return _typed(_BIDI_LSTM_SLOTS, typed)

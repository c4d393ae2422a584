"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN: float and hybrid (int8 weights)
kernels (TFLite's RnnBatchStep)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq
from ...fidelity.arithmetic import HostArithmetic
from ...model.options import ActivationFunctionType
from ..common import output_tensor
from ..jit import compiled, read_only
from ..registry import register_builtin
from .activations import activation_function, fast_tanh, tanh_into
from .common import F32, WEIGHT_INT, T, sequence_matmul, time_major_view
from .hybrid import hybrid_matrix, hybrid_product, hybrid_terms


@dataclass(frozen=True)
class _RnnCell:
    """One RNN direction's weights: transposed float32, or hybrid int8 matrices."""

    units: int
    hybrid: bool
    input_weights: Any = None  # float: [input, units]; hybrid: _HybridMatrix
    aux_weights: Any = None
    recurrent_weights: Any = None
    bias: np.ndarray | None = None
    # the compiled recurrence (rnn_compiled) on recurrent_weights, where compiled kernels run:
    # steps(pre, h, out, forward, tanh, asymmetric) -> False when it leaves the sequence to NumPy
    steps: Callable | None = None


def _rnn_cell(
    input_weights, recurrent_weights, bias, aux_weights=None, *, row_sums: dict, arithmetic: HostArithmetic
) -> _RnnCell:
    """`row_sums`: the op data's cache of hybrid weight row sums (TFLite computes them once); `arithmetic`:
    the op data's host arithmetic."""
    hybrid = input_weights.type in WEIGHT_INT

    def packed(tensor, name: str):
        if tensor is None:
            return None
        if hybrid:
            return hybrid_matrix([(tensor.data, tensor.params.scale)], arithmetic, row_sums, name)
        return np.ascontiguousarray(tensor.data.T.astype(F32))

    recurrent = packed(recurrent_weights, "recurrent")
    return _RnnCell(
        units=input_weights.shape[0],
        hybrid=hybrid,
        input_weights=packed(input_weights, "input"),
        aux_weights=packed(aux_weights, "aux"),
        recurrent_weights=recurrent,
        bias=bias.data.astype(F32),
        steps=_compiled_steps(recurrent, hybrid),
    )


def _compiled_steps(recurrent, hybrid: bool) -> Callable | None:
    """rnn_compiled's recurrence bound to the recurrent weights (float [depth, units], or the
    _HybridMatrix's int8 values, SSE mask, row sums and scales); None where compiled kernels do not run."""
    if not hybrid:
        kernel = compiled("recurrent.rnn_compiled", "float_rnn_steps")
        if kernel is None:
            return None
        weights = read_only(recurrent)
        return lambda pre, h, out, forward, tanh, asymmetric: kernel(pre, weights, h, out, forward, tanh)
    kernel = compiled("recurrent.rnn_compiled", "hybrid_rnn_steps")
    if kernel is None:
        return None
    operands = recurrent.compiled_operands
    return lambda pre, h, out, forward, tanh, asymmetric: kernel(
        pre, *operands, h, out, forward, tanh, asymmetric
    )


def _input_terms(cell: _RnnCell, x, aux, asymmetric: bool) -> np.ndarray:
    """bias + x.W (+ aux.W) for every step of [time, batch, depth] views, as [time, batch, units]: the bias
    first, then each term added, the order in which TFLite accumulates them."""
    steps, batch = x.shape[0], x.shape[1]
    sources = [
        (weights, values)
        for weights, values in ((cell.input_weights, x), (cell.aux_weights, aux))
        if values is not None and values.shape[-1]
    ]
    if cell.hybrid:
        rows = [
            (weights, np.ascontiguousarray(values).reshape(-1, values.shape[-1]))
            for weights, values in sources
        ]
        return hybrid_terms(cell.bias, steps * batch, rows, asymmetric).reshape(steps, batch, -1)
    pre = np.empty((steps, batch, cell.units), F32)
    pre[...] = cell.bias
    for weights, values in sources:
        pre += sequence_matmul(values, weights)
    return pre


def _run_rnn(cell: _RnnCell, pre, h, out, activation, asymmetric: bool, forward: bool = True) -> None:
    """TFLite's RnnBatchStep over the input terms pre [time, batch, units] (_input_terms): out[t] =
    act(pre[t] + h.R); h = out[t]."""
    steps, batch = pre.shape[0], pre.shape[1]
    if steps == 0 or batch == 0:
        return
    if (
        cell.steps is not None
        and activation in (ActivationFunctionType.NONE, ActivationFunctionType.TANH)
        and h.flags.c_contiguous
        and cell.steps(pre, h, out, forward, activation == ActivationFunctionType.TANH, asymmetric)
    ):
        return
    recurrent = np.empty((batch, cell.units), F32)
    activate = activation_function(activation, tanh_into if cell.hybrid else fast_tanh)
    hidden = h  # the hidden state: h before the first step, then the last step's output
    for t in range(steps) if forward else range(steps - 1, -1, -1):
        step = out[t]
        if cell.hybrid:
            if hidden.any():
                np.add(pre[t], hybrid_product(cell.recurrent_weights, hidden, asymmetric), out=step)
            else:
                step[...] = pre[t]
        else:
            np.dot(hidden, cell.recurrent_weights, out=recurrent)  # (faster than matmul on small rows)
            np.add(pre[t], recurrent, out=step)
        if activate is not None:
            activate(step, step)
        hidden = step
    h[...] = hidden


@dataclass(frozen=True)
class RnnData:
    """RNN's and UNIDIRECTIONAL_SEQUENCE_RNN's op data."""

    cell: _RnnCell | None  # the packed weights when constant; None: packed at each invoke
    arithmetic: HostArithmetic  # the host's, read in prepare
    time_major: bool
    sequence: bool  # UNIDIRECTIONAL_SEQUENCE_RNN (RNN runs a sequence of one step)
    row_sums: dict  # hybrid weight row sums, computed once (as TFLite), by weight name


@dataclass(frozen=True)
class BidirectionalRnnData:
    cells: tuple[_RnnCell, _RnnCell] | None  # forward, backward when constant; None: packed at each invoke
    arithmetic: HostArithmetic
    time_major: bool
    merged: bool
    aux_weights: bool
    aux_input: bool
    hybrid: bool
    row_sums: tuple[dict, dict]  # each direction's hybrid weight row sums, computed once (as TFLite)


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
    constant = all(tensor.is_constant_or_persistent for tensor in (input_weights, recurrent_weights, bias))
    arithmetic, row_sums = context.host.arithmetic, {}
    cell = (
        _rnn_cell(input_weights, recurrent_weights, bias, row_sums=row_sums, arithmetic=arithmetic)
        if constant
        else None
    )
    node.user_data = RnnData(cell, arithmetic, time_major, sequence, row_sums)


def rnn_prepare(context, node):
    _rnn_prepare(context, node, sequence=False)


def unidirectional_rnn_prepare(context, node):
    _rnn_prepare(context, node, sequence=True)


def rnn_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    source, input_weights, recurrent_weights, bias = (tensors[i] for i in node.inputs[:4])
    state = _variable_state(context, node, 4)
    cell = data.cell
    if cell is None:
        cell = _rnn_cell(
            input_weights, recurrent_weights, bias, row_sums=data.row_sums, arithmetic=data.arithmetic
        )
    options = node.builtin_data
    out = tensors[node.outputs[0]].data
    if data.sequence:
        x, out = time_major_view(source.data, data.time_major), time_major_view(out, data.time_major)
    else:
        x, out = source.data[None], out[None]
    asymmetric = bool(options.asymmetric_quantize_inputs)
    pre = _input_terms(cell, x, None, asymmetric)
    _run_rnn(cell, pre, state.data, out, options.fused_activation_function, asymmetric)


def rnn_calls(context, node):
    """A hybrid RNN with constant weights on a time-major input, where compiled kernels run: the arrays,
    the input terms' buffer and the kernels' operands made once; its step fills the input terms with
    the bias, adds the sequence's hybrid products (rnn_compiled.hybrid_rows_product) and runs the
    recurrence (hybrid_rnn_steps), three calls (Registration.calls). Anything else, and a sequence either kernel declines (a
    value that is not finite), runs rnn_invoke."""
    data, tensors, options = node.user_data, context.tensors, node.builtin_data
    cell = data.cell
    activation = options.fused_activation_function
    if (
        cell is None
        or not tensors[node.inputs[4]].is_variable  # (rnn_invoke reports it)
        or not cell.hybrid
        or cell.steps is None
        or cell.input_weights.rows_product is None
        or activation not in (ActivationFunctionType.NONE, ActivationFunctionType.TANH)
    ):
        return None
    source, state = tensors[node.inputs[0]].data, tensors[node.inputs[4]].data
    out = tensors[node.outputs[0]].data
    if data.sequence:
        x, out = time_major_view(source, data.time_major), time_major_view(out, data.time_major)
    else:
        x, out = source[None], out[None]
    if not (x.flags.c_contiguous and state.flags.c_contiguous) or 0 in x.shape:
        return None
    steps, batch = x.shape[0], x.shape[1]
    rows = read_only(x.reshape(steps * batch, x.shape[2]))
    bias = np.tile(cell.bias, (steps * batch, 1))
    pre = np.empty((steps * batch, cell.units), F32)
    pre_steps = pre.reshape(steps, batch, cell.units)
    rows_product, operands = cell.input_weights.rows_product, cell.input_weights.compiled_operands
    recurrence, asymmetric = cell.steps, bool(options.asymmetric_quantize_inputs)
    tanh = activation == ActivationFunctionType.TANH

    def hybrid_rnn():
        np.copyto(pre, bias)
        if not (
            rows_product(rows, *operands, pre, asymmetric)
            and recurrence(pre_steps, state, out, True, tanh, asymmetric)
        ):
            rnn_invoke(context, node)

    return (hybrid_rnn,)


for _op, _prepare in (
    (BuiltinOperator.RNN, rnn_prepare),
    (BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, unidirectional_rnn_prepare),
):
    register_builtin(
        _op, (1, 3), types=(T.FLOAT32,), op_data=RnnData, prepare=_prepare, invoke=rnn_invoke, calls=rnn_calls
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


_BIDI_RNN = "BIDIRECTIONAL_SEQUENCE_RNN"
_BIDI_RNN_REQUIRED = (
    "input",
    "fw_input_weights",
    "fw_recurrent_weights",
    "fw_bias",
    "fw_hidden_state",
    "bw_input_weights",
    "bw_recurrent_weights",
    "bw_bias",
    "bw_hidden_state",
)


@dataclass(frozen=True)
class _BidiRnnInputs:
    """BIDIRECTIONAL_SEQUENCE_RNN's input tensors by role, in the node's order (None: an absent optional)."""

    source: Any
    fw_weights: Any
    fw_recurrent: Any
    fw_bias: Any
    fw_state: Any
    bw_weights: Any
    bw_recurrent: Any
    bw_bias: Any
    bw_state: Any
    aux: Any
    fw_aux_weights: Any
    bw_aux_weights: Any

    def weights(self) -> tuple:
        """The weight tensors, in _bidi_rnn_cells' order."""
        return (
            self.fw_weights,
            self.fw_recurrent,
            self.fw_bias,
            self.bw_weights,
            self.bw_recurrent,
            self.bw_bias,
            self.fw_aux_weights,
            self.bw_aux_weights,
        )


def bidirectional_rnn_prepare(context, node):
    """BIDIRECTIONAL_SEQUENCE_RNN's checks (TFLite's, in its order), output shapes and op data."""
    options = node.builtin_data
    ensure_eq(len(node.inputs), 12, "node->inputs->size")
    ensure_eq(len(node.outputs), 1 if options.merge_outputs else 2, "node->outputs->size")
    tensors = [None if i < 0 else context.tensors[i] for i in node.inputs]
    for name, tensor in zip(_BIDI_RNN_REQUIRED, tensors):
        ensure(tensor is not None, f"Tensor {name} is required")
    inputs = _BidiRnnInputs(*tensors)
    has_aux_weights = inputs.fw_aux_weights is not None
    ensure(has_aux_weights == (inputs.bw_aux_weights is not None), "aux_inputs_weights_or_none was not true.")
    source = inputs.source
    if source.type != T.FLOAT32:
        raise KernelError(f"input->type != kTfLiteFloat32 ({type_name(source.type)} != FLOAT32)")
    ensure_eq(len(source.shape), 3, "input->dims->size")
    time_major = bool(options.time_major)
    batch, steps = (source.shape[1], source.shape[0]) if time_major else (source.shape[0], source.shape[1])
    _check_bidi_rnn_weights(context, inputs, batch)
    hybrid = inputs.fw_weights.type in WEIGHT_INT
    _check_bidi_rnn_aux(inputs, time_major, hybrid)
    fw_units, bw_units = inputs.fw_weights.shape[0], inputs.bw_weights.shape[0]
    merged = bool(options.merge_outputs)
    lead = (steps, batch) if time_major else (batch, steps)
    context.resize_tensor(
        output_tensor(context, node, 0), (*lead, fw_units + bw_units if merged else fw_units)
    )
    if not merged:
        context.resize_tensor(output_tensor(context, node, 1), (*lead, bw_units))
    weights = inputs.weights()
    constant = all(tensor is None or tensor.is_constant_or_persistent for tensor in weights)
    arithmetic, row_sums = context.host.arithmetic, ({}, {})
    cells = _bidi_rnn_cells(weights, row_sums, arithmetic) if constant else None
    node.user_data = BidirectionalRnnData(
        cells, arithmetic, time_major, merged, has_aux_weights, inputs.aux is not None, hybrid, row_sums
    )


def _check_bidi_rnn_weights(context, inputs: _BidiRnnInputs, batch: int) -> None:
    """Check both directions' weights and bias against the input and each other, and their hidden states."""
    depth = inputs.source.shape[2]
    fw_w, fw_r, fw_b = inputs.fw_weights, inputs.fw_recurrent, inputs.fw_bias
    bw_w, bw_r, bw_b = inputs.bw_weights, inputs.bw_recurrent, inputs.bw_bias
    fw_units, bw_units = fw_w.shape[0], bw_w.shape[0]
    ensure_eq(depth, fw_w.shape[1], "input->dims->data[2]")
    ensure_eq(depth, bw_w.shape[1], "input->dims->data[2]")
    ensure_eq(fw_w.shape[0], fw_b.shape[0], "fw_input_weights->dims->data[0]")
    ensure_eq(bw_w.shape[0], bw_b.shape[0], "bw_input_weights->dims->data[0]")
    ensure_eq(fw_r.shape[0], fw_b.shape[0], "fw_recurrent_weights->dims->data[0]")
    ensure_eq(bw_r.shape[1], bw_b.shape[0], "bw_recurrent_weights->dims->data[1]")
    _rnn_check(context, fw_w, fw_r, fw_b, _BIDI_RNN)
    _rnn_check(context, bw_w, bw_r, bw_b, _BIDI_RNN)
    if fw_w.type != bw_w.type:
        raise KernelError(f"{_BIDI_RNN} forward and backward weights must have the same type")
    for state, units, name in (
        (inputs.fw_state, fw_units, "fw_hidden_state"),
        (inputs.bw_state, bw_units, "bw_hidden_state"),
    ):
        ensure_eq(len(state.shape), 2, f"NumDimensions({name})")
        ensure_eq(state.shape[0], batch, f"{name}->dims->data[0]")
        ensure_eq(state.shape[1], units, f"{name}->dims->data[1]")


def _check_bidi_rnn_aux(inputs: _BidiRnnInputs, time_major: bool, hybrid: bool) -> None:
    """Check the aux input: against its weights where there are some, else (the backward input) its shape."""
    source, aux = inputs.source, inputs.aux
    fw_aux_w, bw_aux_w = inputs.fw_aux_weights, inputs.bw_aux_weights
    if fw_aux_w is None:
        if aux is not None:
            ensure(
                tuple(aux.shape) == tuple(source.shape),
                f"{_BIDI_RNN}: the backward input (aux input) must have the input's shape",
            )
        return
    ensure(aux is not None, f"{_BIDI_RNN}: aux input weights need an aux input")
    ensure_eq(len(aux.shape), 3, "aux_input->dims->size")
    ensure_eq(aux.shape[0], source.shape[0], "aux_input->dims->data[0]")
    ensure_eq(aux.shape[1], source.shape[1], "aux_input->dims->data[1]")
    ensure_eq(fw_aux_w.shape[0], inputs.fw_weights.shape[0], "fw_aux_input_weights->dims->data[0]")
    ensure_eq(bw_aux_w.shape[0], inputs.bw_weights.shape[0], "bw_aux_input_weights->dims->data[0]")
    aux_depth, depth = aux.shape[2], source.shape[2]
    ensure_eq(aux_depth, fw_aux_w.shape[1], "aux_input->dims->data[2]")
    ensure_eq(aux_depth, bw_aux_w.shape[1], "aux_input->dims->data[2]")
    if fw_aux_w.type != inputs.fw_weights.type or bw_aux_w.type != inputs.fw_weights.type:
        raise KernelError(f"{_BIDI_RNN} aux weights must have the input weights' type")
    # TFLite reads the aux input at offsets strided by the input's depth (time major, and the hybrid
    # kernel's batch major): an aux input shallower than the input is read past its end there.
    if (time_major or hybrid) and aux_depth < depth and source.shape[0] * source.shape[1] > 1:
        raise KernelError(
            f"{_BIDI_RNN}: an aux input shallower than the input ({aux_depth} < {depth}) is not supported "
            "(TFLite reads past its end)"
        )


def _bidi_rnn_cells(
    weights, row_sums: tuple[dict, dict], arithmetic: HostArithmetic
) -> tuple[_RnnCell, _RnnCell]:
    fw_w, fw_r, fw_b, bw_w, bw_r, bw_b, fw_aux_w, bw_aux_w = weights
    return (
        _rnn_cell(fw_w, fw_r, fw_b, fw_aux_w, row_sums=row_sums[0], arithmetic=arithmetic),
        _rnn_cell(bw_w, bw_r, bw_b, bw_aux_w, row_sums=row_sums[1], arithmetic=arithmetic),
    )


def bidirectional_rnn_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    inputs = [None if i < 0 else tensors[i] for i in node.inputs]
    cells = data.cells
    if cells is None:
        cells = _bidi_rnn_cells(
            [inputs[i] for i in (1, 2, 3, 5, 6, 7, 10, 11)], data.row_sums, data.arithmetic
        )
    fw, bw = cells
    fw_h = _variable_state(context, node, 4).data
    bw_h = _variable_state(context, node, 8).data
    options = node.builtin_data
    tm = data.time_major
    hybrid = data.hybrid
    source = inputs[0].data
    x = time_major_view(source, tm)
    steps, batch, depth = x.shape
    aux_tensor = inputs[9]
    non_stacking = not data.aux_weights and data.aux_input
    # The backward cell reads the aux input instead of the input when stacking without cross links, but
    # only in TFLite's time-major loops: its batch-major loops read the input.
    bw_x = time_major_view(aux_tensor.data, tm) if non_stacking and tm else x
    aux = None
    if data.aux_weights:
        aux_depth = aux_tensor.shape[2]
        flat = aux_tensor.data.reshape(-1)
        if tm:
            aux = _aux_steps(flat, steps, batch, aux_depth, depth * batch, aux_depth)
        elif hybrid:
            aux = _aux_steps(flat, steps, batch, aux_depth, depth, depth * steps)
        else:
            aux = time_major_view(aux_tensor.data, tm)
    fw_out = time_major_view(tensors[node.outputs[0]].data, tm)
    if data.merged:
        bw_out = fw_out[..., fw.units :]
        fw_out = fw_out[..., : fw.units]
    else:
        bw_out = time_major_view(tensors[node.outputs[1]].data, tm)
    activation = options.fused_activation_function
    asymmetric = bool(options.asymmetric_quantize_inputs)
    # TFLite's hybrid time-major kernel runs both passes once per time step (an outer loop over time).
    repeats = steps if hybrid and tm else 1
    fw_pre, bw_pre = _input_terms(fw, x, aux, asymmetric), _input_terms(bw, bw_x, aux, asymmetric)
    for _ in range(repeats):  # (the same input terms each time)
        _run_rnn(fw, fw_pre, fw_h, fw_out, activation, asymmetric, True)
        _run_rnn(bw, bw_pre, bw_h, bw_out, activation, asymmetric, False)


register_builtin(
    BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN,
    (1, 3),
    types=(T.FLOAT32,),
    op_data=BidirectionalRnnData,
    prepare=bidirectional_rnn_prepare,
    invoke=bidirectional_rnn_invoke,
)

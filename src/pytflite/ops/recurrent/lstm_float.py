"""The float and hybrid LSTM kernels' time steps (TFLite's lstm_eval) over a [time, batch, depth]
sequence view: gates, peephole, layer norm, cell update, projection, and the no-activation cell gate
quirk."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...model.options import ActivationFunctionType
from ..common import clip
from ..jit import compiled, read_only
from .activations import activation_function, fast_sigmoid, fast_tanh, sigmoid_into, tanh_into
from .common import F32, ONE, sequence_matmul
from .hybrid import hybrid_product, hybrid_terms
from .lstm_common import LstmDirection, LstmRun

_HALF = np.array(0.5, F32)  # a 0-d array operand: faster ufunc calls than a scalar


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
    np.divide(ONE, squares, out=squares)
    np.multiply(diff, squares, out=x)
    x *= coefficients
    x += bias


def run_lstm(
    direction: LstmDirection,
    weights: Any,
    run: LstmRun,
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
    if plain(direction, run):
        PlainLstm(weights.halved, run, x, aux, h, c, out, forward)()
        return
    pre = _input_terms(direction, weights, run, x, aux)
    scalar = _scalar_mask(direction, batch, run.batch_major) if direction.hybrid else None
    if _compiled_steps(direction, weights, run, pre, scalar, h, c, out, forward):
        return
    step = _step_buffers(direction, weights, run, x, aux, scalar)
    hidden = h  # the output state: h before the first step, then the last step's output
    for t in range(steps) if forward else range(steps - 1, -1, -1):
        _step_gates(step, pre[t], hidden, c, t)
        _step_cell(step, c)
        hidden = out[t]
        _step_output(step, c, hidden)
    h[...] = hidden


def _input_terms(direction: LstmDirection, weights, run: LstmRun, x, aux) -> np.ndarray:
    """Input (and aux input) contributions of every step at once: bias + x.W (+ aux.W), TFLite's order."""
    if direction.hybrid:
        steps, batch = x.shape[0], x.shape[1]
        products = [(weights.input_matrix, np.ascontiguousarray(x).reshape(-1, x.shape[2]))]
        if aux is not None:
            products.append((weights.aux_matrix, np.ascontiguousarray(aux).reshape(-1, aux.shape[2])))
        return hybrid_terms(weights.bias, steps * batch, products, run.asymmetric).reshape(steps, batch, -1)
    pre = sequence_matmul(x, weights.input_weights)
    pre += weights.bias
    if aux is not None:
        pre += sequence_matmul(aux, weights.aux_weights)
    return pre


def _scalar_mask(direction: LstmDirection, batch: int, batch_major: bool) -> np.ndarray:
    """The hybrid sigmoid's _sigmoid_scalar_elements, kept on the direction for the last batch and layout."""
    key, masks = (batch, batch_major), direction.scalar_mask
    scalar = masks.get(key)
    if scalar is None:
        masks.clear()
        scalar = masks[key] = read_only(_sigmoid_scalar_elements(direction, batch, batch_major))
    return scalar


@dataclass(frozen=True)
class _StepBuffers:
    """What run_lstm's NumPy steps share: the weights and settings, and buffers and gate views made once."""

    direction: LstmDirection
    weights: Any
    asymmetric: bool
    gates: np.ndarray  # [batch, gates * n_cell], the gates in direction.order
    gates3: np.ndarray  # the same buffer as [batch, gates, n_cell] (the layer norm's rows)
    recurrent: np.ndarray  # h . W (float)
    scratch: np.ndarray  # [batch, n_cell]
    input_gate: np.ndarray | None  # None with CIFG
    forget_gate: np.ndarray
    output_gate: np.ndarray
    cell_gate: np.ndarray
    sigmoid_early: slice  # the sigmoid gates before the cell update (the leading ones)
    scalar_early: np.ndarray | None  # the hybrid sigmoid's scalar elements of those, and of the output gate
    scalar_output: np.ndarray | None
    sigmoid: Callable
    activate: Callable | None  # the cell gate's and cell state's activation; None for NONE
    cell_clip: np.float32
    proj_clip: np.float32
    zero_rows: np.ndarray | None  # _zero_input_rows with no activation (the cell gate quirk), else None


def _step_buffers(direction: LstmDirection, weights, run: LstmRun, x, aux, scalar) -> _StepBuffers:
    """Make the steps' buffers and gate views once a sequence, not at each step."""
    n, batch, ngates = direction.n_cell, x.shape[1], len(direction.order)
    hybrid = direction.hybrid
    zero_rows = (
        _zero_input_rows(direction, run, x, aux) if run.activation == ActivationFunctionType.NONE else None
    )
    gates = np.empty((batch, ngates * n), F32)
    # Before the cell update: the sigmoid gates are the leading ones (all but cell when no peephole).
    sigmoid_early = slice(0, (ngates - 1) * n) if not direction.peephole else slice(0, (ngates - 2) * n)
    # Eigen's exact logistic and tanh where the results are requantized (hybrid), faster ones otherwise
    sigmoid, tanh = (sigmoid_into, tanh_into) if hybrid else (fast_sigmoid, fast_tanh)
    return _StepBuffers(
        direction=direction,
        weights=weights,
        asymmetric=run.asymmetric,
        gates=gates,
        gates3=gates.reshape(batch, -1, n),
        recurrent=np.empty_like(gates),
        scratch=np.empty((batch, n), F32),
        input_gate=None if direction.cifg else gates[:, direction.gate_slice("input")],
        forget_gate=gates[:, direction.gate_slice("forget")],
        output_gate=gates[:, direction.gate_slice("output")],
        cell_gate=gates[:, direction.gate_slice("cell")],
        sigmoid_early=sigmoid_early,
        scalar_early=scalar[:, sigmoid_early] if hybrid else None,
        scalar_output=scalar[:, direction.gate_slice("output")] if hybrid else None,
        sigmoid=sigmoid,
        activate=activation_function(run.activation, tanh),
        cell_clip=F32(run.cell_clip),
        proj_clip=F32(run.proj_clip),
        zero_rows=zero_rows,
    )


def _step_gates(s: _StepBuffers, pre_t, hidden, c, t: int) -> None:
    """One step's gates before the cell update: input terms plus h.R, the peepholes on the old cell state,
    layer norm, and the activations."""
    direction, weights, gates, scratch = s.direction, s.weights, s.gates, s.scratch
    if direction.hybrid:
        if hidden.any():
            np.add(pre_t, hybrid_product(weights.recurrent_matrix, hidden, s.asymmetric), out=gates)
        else:
            np.copyto(gates, pre_t)
    else:
        np.matmul(hidden, weights.recurrent_weights, out=s.recurrent)
        np.add(pre_t, s.recurrent, out=gates)
    if direction.peephole:
        input_gate, forget_gate, peephole = s.input_gate, s.forget_gate, weights.peephole
        if input_gate is not None:
            np.multiply(peephole["input"], c, out=scratch)
            input_gate += scratch
        np.multiply(peephole["forget"], c, out=scratch)
        forget_gate += scratch
    layer_norm = weights.layer_norm
    if layer_norm is not None:
        if direction.peephole:  # output gate later, after its peephole on the new cell state
            _layer_norm(s.gates3[:, :-1], layer_norm[0][:-1], layer_norm[1][:-1])
        else:
            _layer_norm(s.gates3, layer_norm[0], layer_norm[1])
    s.sigmoid(gates[:, s.sigmoid_early], gates[:, s.sigmoid_early], s.scalar_early)
    if s.activate is not None:
        s.activate(s.cell_gate, s.cell_gate)
    if s.zero_rows is not None:
        _cell_gate_quirk(direction, weights, pre_t, s.cell_gate, s.zero_rows[t])


def _step_cell(s: _StepBuffers, c) -> None:
    """One step's cell state, in place: c = f * c + i * g (CIFG: i = 1 - f), clipped."""
    forget_gate, scratch = s.forget_gate, s.scratch
    np.multiply(forget_gate, c, out=c)
    if s.input_gate is None:
        np.subtract(ONE, forget_gate, out=forget_gate)
        np.multiply(s.cell_gate, forget_gate, out=scratch)
    else:
        np.multiply(s.cell_gate, s.input_gate, out=scratch)
    c += scratch
    if s.cell_clip > 0:
        clip(c, -s.cell_clip, s.cell_clip, out=c)


def _step_output(s: _StepBuffers, c, hidden) -> None:
    """One step's output into hidden: the output gate (its peephole on the new cell state) times act(c),
    projected and clipped."""
    direction, weights, output_gate, scratch = s.direction, s.weights, s.output_gate, s.scratch
    if direction.peephole:
        np.multiply(weights.peephole["output"], c, out=scratch)
        output_gate += scratch
        layer_norm = weights.layer_norm
        if layer_norm is not None:
            _layer_norm(s.gates3[:, -1:], layer_norm[0][-1:], layer_norm[1][-1:])
        s.sigmoid(output_gate, output_gate, s.scalar_output)
    # Output: o * act(c) (with no activation TFLite multiplies by the cell gate buffer instead).
    if s.activate is None:
        activated = s.cell_gate
    else:
        s.activate(c, scratch)
        activated = scratch
    if direction.projection:
        np.multiply(output_gate, activated, out=scratch)
        _lstm_project(weights, direction.hybrid, s.asymmetric, scratch, hidden)
        if s.proj_clip > 0:
            clip(hidden, -s.proj_clip, s.proj_clip, out=hidden)
    else:
        np.multiply(output_gate, activated, out=hidden)


def _compiled_steps(direction, weights, run, pre, scalar, h, c, out, forward: bool) -> bool:
    """Run the steps in lstm_steps_compiled where it takes this LSTM (tanh) and compiled kernels run;
    False where the NumPy loop must (or the compiled steps met values that are not finite)."""
    if run.activation != ActivationFunctionType.TANH:
        return False
    if not (h.flags.c_contiguous and c.flags.c_contiguous):
        return False
    kernel = weights.compiled_steps
    if kernel is None:
        return False
    if weights.step_operands is None:
        weights.step_operands = _step_operands(direction, weights)
    matrices, gates = weights.step_operands
    state = (h, c, out, forward, F32(max(run.cell_clip, 0)), F32(max(run.proj_clip, 0)))
    pre = np.ascontiguousarray(pre)
    if not direction.hybrid:
        return kernel(pre, *matrices, *gates, *state)
    return kernel(pre, *matrices, read_only(scalar), run.asymmetric, *gates, *state)


def _step_operands(direction, weights) -> tuple[tuple, tuple]:
    """What lstm_steps_compiled takes of these weights, made once: the recurrent and projection matrices
    with the projection bias (zeros without), and the peepholes, layer norm and gate offsets."""
    n = direction.n_cell
    zeros = np.zeros(n, F32)
    peephole = (
        np.stack([weights.peephole.get(gate, zeros) for gate in ("input", "forget", "output")])
        if direction.peephole
        else np.zeros((0, 0), F32)
    )
    norm = np.stack(weights.layer_norm).astype(F32) if direction.layer_norm else np.zeros((0, 0, 0), F32)
    offsets = tuple(
        direction.gate_slice(gate).start if gate in direction.order else -1
        for gate in ("input", "forget", "output", "cell")
    )
    gates = (read_only(peephole), read_only(np.ascontiguousarray(norm)), offsets)
    bias = read_only(
        weights.projection_bias if weights.projection_bias is not None else np.zeros(direction.n_output, F32)
    )
    if not direction.hybrid:
        projection = weights.projection if direction.projection else np.zeros((0, 0), F32)
        return (read_only(weights.recurrent_weights), read_only(projection), bias), gates
    projection = (
        weights.projection.compiled_operands
        if direction.projection
        else (np.zeros((0, 0), np.int8), np.zeros((0, 0), np.int8), np.zeros(0, np.int64), np.zeros(0, F32))
    )
    return (*weights.recurrent_matrix.compiled_operands, *projection, bias), gates


def plain(direction: LstmDirection, run: LstmRun) -> bool:
    """The common float LSTM: four gates (input, forget, output, cell: the packed order), tanh, and no
    peephole, layer norm or projection."""
    return (
        not direction.hybrid
        and not direction.cifg
        and not direction.peephole
        and not direction.layer_norm
        and not direction.projection
        and run.activation == ActivationFunctionType.TANH
    )


def _rows(x: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of x [time, batch, depth] (a sequence tensor's data or its swapped view) as one 2-D view,
    and a new float32 array of `columns` columns whose rows lie in the same order (one product of the
    first fills it), as 2-D rows and as a [time, batch, columns] view."""
    swapped = not x.flags.c_contiguous
    base = x.swapaxes(0, 1) if swapped else x
    result = np.empty((*base.shape[:2], columns), F32)
    steps = result.swapaxes(0, 1) if swapped else result
    return base.reshape(-1, base.shape[2]), result.reshape(-1, columns), steps


class PlainLstm:
    """run_lstm's steps for a plain LSTM over given arrays, its buffers and per-step views made once
    (the LSTM kernels' calls keep one per allocation): nine NumPy calls a step, ten with a cell clip.

    The sigmoid gates are 0.5 * tanh(x / 2) + 0.5, from weights and bias with those gates' columns
    halved in advance (`weights` is _LstmFloatWeights.halved), so that one tanh covers all four gates;
    the gates and the cell state share one buffer [i f o g c], so that i * g and f * c are one
    product. Where compiled kernels run (ops/jit.py), the steps are one call of
    lstm_compiled.plain_lstm_steps instead."""

    def __init__(self, weights, run: LstmRun, x, aux, h, c, out, forward: bool) -> None:
        width = weights.recurrent_weights.shape[1]
        n = width // 4
        x_rows, pre_rows, pre = _rows(x, width)
        self._inputs = [(x_rows, weights.input_weights, pre_rows)]
        if aux is not None:  # its product goes to a second buffer, then adds up (TFLite's order)
            aux_rows, aux_pre, _ = _rows(aux, width)
            self._inputs.append((aux_rows, weights.aux_weights, aux_pre))
        self._pre, self._bias = pre_rows, weights.bias
        order = range(x.shape[0]) if forward else range(x.shape[0] - 1, -1, -1)
        batch = x.shape[1]
        buffer = np.empty((batch, 5 * n), F32)  # [i f o g c]
        products = np.empty((batch, 2 * n), F32)
        self._state = (h, c, buffer[:, width:])
        self._loop = (
            [(pre[t], out[t]) for t in order],
            weights.recurrent_weights,
            np.empty((batch, width), F32),  # h . W, contiguous for np.dot
            buffer[:, :width],  # the gates
            buffer[:, : 3 * n],  # the sigmoid gates
            buffer[:, : 2 * n],  # [i f]
            buffer[:, 3 * n :],  # [g c]
            buffer[:, 2 * n : 3 * n],  # o
            products,
            products[:, :n],  # i * g
            products[:, n:],  # f * c
            buffer[:, width:],  # c
            np.empty((batch, n), F32),  # tanh(c)
        )
        self._limit = np.array(run.cell_clip, F32) if run.cell_clip > 0 else None
        contiguous = h.flags.c_contiguous and c.flags.c_contiguous  # (the compiled steps' signature)
        self._compiled = compiled("recurrent.lstm_compiled", "plain_lstm_steps") if contiguous else None
        if self._compiled is not None:
            limit = F32(max(run.cell_clip, 0))
            self._compiled_arguments = (pre, weights.recurrent_weights, h, c, out, forward, limit)

    def __call__(self) -> None:
        pre = self._pre
        for rows, weights, product in self._inputs:
            np.dot(rows, weights, product)
        np.add(pre, self._bias, pre)
        if len(self._inputs) > 1:
            np.add(pre, self._inputs[1][2], pre)
        if self._compiled is not None:
            self._compiled(*self._compiled_arguments)
            return
        (
            steps,
            recurrent,
            product,
            gates,
            sigmoids,
            input_forget,
            cell_gate_and_state,
            output_gate,
            products,
            input_term,
            forget_term,
            cell,
            activated,
        ) = self._loop
        limit = self._limit
        low = None if limit is None else -limit
        dot, add, multiply, tanh = np.dot, np.add, np.multiply, np.tanh
        h, c, cell = self._state
        cell[...] = c
        hidden = h
        for pre_t, out_t in steps:
            dot(hidden, recurrent, product)
            add(product, pre_t, gates)
            tanh(gates, gates)
            multiply(sigmoids, _HALF, sigmoids)
            add(sigmoids, _HALF, sigmoids)
            multiply(input_forget, cell_gate_and_state, products)  # [i * g, f * c]
            add(input_term, forget_term, cell)
            if limit is not None:
                clip(cell, low, limit, cell)
            tanh(cell, activated)
            multiply(output_gate, activated, out_t)
            hidden = out_t
        h[...] = hidden
        c[...] = cell


def _sigmoid_scalar_elements(direction: LstmDirection, batch: int, batch_major: bool) -> np.ndarray:
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
            h += hybrid_product(weights.projection, hidden, asymmetric)
        return
    np.matmul(hidden, weights.projection, out=h)
    if weights.projection_bias is not None:
        h += weights.projection_bias


def _zero_input_rows(direction: LstmDirection, run: LstmRun, x, aux) -> np.ndarray:
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

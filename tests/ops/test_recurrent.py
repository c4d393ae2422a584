"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM, RNN, UNIDIRECTIONAL_SEQUENCE_RNN,
BIDIRECTIONAL_SEQUENCE_RNN and SVDF against LiteRT.

Every model keeps its state in variable tensors: each test invokes it several times (the state carries
over), then resets the variables and invokes again, comparing every output with LiteRT's. Float and
hybrid (int8 weights) outputs within 1e-5; integer outputs exactly.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_compiled_as_numpy, assert_matches, litert_interpreter, requires_litert

pytestmark = requires_litert

F32 = TensorType.FLOAT32


def _input(value, quantization=None):
    return {"value": np.asarray(value), "kind": "input", "quantization": quantization}


def _const(value, quantization=None):
    return {"value": np.asarray(value), "kind": "const", "quantization": quantization}


def _state(shape, dtype=np.float32, quantization=None):
    return {"value": np.zeros(shape, dtype), "kind": "variable", "quantization": quantization}


def _model(op, inputs, outputs, options, version=1, intermediates=()) -> tuple[bytes, list[np.ndarray]]:
    """A one-operator model; inputs are dicts from _input/_const/_state or None (absent optional)."""
    builder = ModelBuilder()
    indices, feeds = [], []
    for i, spec in enumerate(inputs):
        if spec is None:
            indices.append(-1)
            continue
        value, quantization = spec["value"], spec["quantization"]
        tensor_type = tensor_type_for_dtype(value.dtype)
        if spec["kind"] == "const":
            indices.append(
                builder.add_tensor(f"c{i}", tensor_type, value.shape, data=value, quantization=quantization)
            )
        elif spec["kind"] == "variable":
            indices.append(
                builder.add_tensor(
                    f"v{i}", tensor_type, value.shape, quantization=quantization, is_variable=True
                )
            )
        else:
            indices.append(builder.add_input(f"in{i}", tensor_type, value.shape, quantization=quantization))
            feeds.append(value)
    extra = [builder.add_tensor(f"im{i}", t, [], quantization=q) for i, (t, q) in enumerate(intermediates)]
    outs = []
    for i, (tensor_type, quantization) in enumerate(outputs):
        outs.append(builder.add_tensor(f"out{i}", tensor_type, [], quantization=quantization))
        builder.add_output(outs[-1])
    builder.add_operator(op, indices, outs, options, version=version, intermediates=extra)
    return builder.build(), feeds


def _feed(interpreter, feeds):
    for detail, value in zip(interpreter.get_input_details(), feeds):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def _check(model: bytes, runs: list[list[np.ndarray]], reset_before: int | None = None, rtol: float = 1e-5):
    """Invoke both interpreters on each feed list in turn (state carried over), resetting the variables
    before run `reset_before`; every output must match LiteRT's."""
    reference = litert_interpreter(model)
    ours = pytflite.Interpreter(model_content=model)
    reference.allocate_tensors()
    ours.allocate_tensors()
    for k, feeds in enumerate(runs):
        if k == reset_before:
            reference.reset_all_variables()
            ours.reset_all_variables()
        expected, actual = _feed(reference, feeds), _feed(ours, feeds)
        assert len(actual) == len(expected)
        for i, (a, b) in enumerate(zip(actual, expected)):
            assert_matches(a, b, rtol, what=f"run {k} output {i}")


def _runs(feeds, rng, zero_rows: bool = True) -> list[list[np.ndarray]]:
    """Four invokes: the given feeds, fresh random ones, some rows zeroed (TFLite skips all-zero inputs),
    and after a reset the first feeds again."""
    second = [rng.uniform(-1, 1, x.shape).astype(x.dtype) for x in feeds]
    third = [x.copy() for x in second]
    if zero_rows:
        for x in third:
            x[0] = 0
    return [feeds, second, third, feeds]


def _rng(*parts) -> np.random.Generator:
    """A generator seeded from the test's parameters (stable across runs, unlike hash())."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _uniform(rng, *shape, scale=0.5):
    return rng.uniform(-scale, scale, shape).astype(np.float32)


def _int8_weights(rng, *shape):
    """Symmetric int8 weights with their scale (as the converter's dynamic-range quantization writes)."""
    weights = _uniform(rng, *shape)
    scale = float(np.abs(weights).max() / 127)
    return _const(np.round(weights / scale).astype(np.int8), (scale, 0))


# ---- LSTM ---------------------------------------------------------------------------------------------


def _lstm_cell(rng, n_input, n_cell, n_output, cifg, peephole, projection, projection_bias, hybrid, diag=""):
    """Inputs 1-17 of one LSTM direction."""
    weights = (lambda *s: _int8_weights(rng, *s)) if hybrid else (lambda *s: _const(_uniform(rng, *s)))
    cell = []
    for gate in "ifco":
        cell.append(None if cifg and gate == "i" else weights(n_cell, n_input))
    for gate in "ifco":
        if cifg and gate == "i":
            cell.append(None)
        else:
            cell.append(_const(_uniform(rng, n_cell)) if gate in diag else weights(n_cell, n_output))
    for gate in "ifo":
        cell.append(weights(n_cell) if peephole and not (cifg and gate == "i") else None)
    for gate in "ifco":
        cell.append(None if cifg and gate == "i" else _const(_uniform(rng, n_cell)))
    cell.append(weights(n_output, n_cell) if projection else None)
    cell.append(_const(_uniform(rng, n_output)) if projection and projection_bias else None)
    return cell


def _lstm_inputs(
    rng,
    source_shape,
    n_cell,
    n_output,
    batch,
    cifg=False,
    peephole=False,
    projection=False,
    projection_bias=False,
    layer_norm=False,
    hybrid=False,
    diag="",
):
    inputs = [_input(_uniform(rng, *source_shape, scale=1.0))]
    inputs += _lstm_cell(
        rng, source_shape[-1], n_cell, n_output, cifg, peephole, projection, projection_bias, hybrid, diag
    )
    inputs += [_state((batch, n_output)), _state((batch, n_cell))]
    for gate in "ifco":
        present = layer_norm and not (cifg and gate == "i")
        inputs.append(_const(_uniform(rng, n_cell) + 1) if present else None)
    return inputs


LSTM_CONFIGS = {
    "plain": {},
    "cifg": {"cifg": True},
    "peephole": {"peephole": True},
    "cifg-peephole": {"cifg": True, "peephole": True},
    "projection": {"projection": True},
    "projection-bias": {"projection": True, "projection_bias": True},
    "layer-norm": {"layer_norm": True},
    "layer-norm-peephole": {"layer_norm": True, "peephole": True},
    "all": {"layer_norm": True, "peephole": True, "cifg": True, "projection": True, "projection_bias": True},
}
ACTIVATIONS = ["TANH", "NONE", "RELU", "RELU6", "RELU_N1_TO_1", "SIGN_BIT"]


@pytest.mark.parametrize("hybrid", [False, True], ids=["float", "hybrid"])
@pytest.mark.parametrize("config", list(LSTM_CONFIGS))
@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
def test_unidirectional_lstm(config, time_major, hybrid, kernels):
    rng = _rng((config, time_major, hybrid))
    batch, steps, n_input, n_cell = 3, 4, 11, 5
    n_output = 3 if "projection" in LSTM_CONFIGS[config] else n_cell
    shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    for activation, asymmetric in (("TANH", False), ("NONE", hybrid)):
        inputs = _lstm_inputs(rng, shape, n_cell, n_output, batch, hybrid=hybrid, **LSTM_CONFIGS[config])
        options = {
            "fused_activation_function": activation,
            "cell_clip": 0.0,
            "proj_clip": 0.0,
            "time_major": time_major,
            "asymmetric_quantize_inputs": asymmetric,
        }
        model, feeds = _model(
            Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options, 2 if hybrid else 1
        )
        _check(model, _runs(feeds, rng), reset_before=3)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("diag", ["", "f", "c", "ifco"])
def test_unidirectional_lstm_activations_and_diagonal_weights(activation, diag):
    rng = _rng((activation, diag))
    batch, steps, n_input, n_cell = 2, 3, 4, 5
    for time_major in (True, False):
        shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
        inputs = _lstm_inputs(rng, shape, n_cell, n_cell, batch, layer_norm=diag == "c", diag=diag)
        options = {"fused_activation_function": activation, "cell_clip": 0.4, "time_major": time_major}
        model, feeds = _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options)
        runs = _runs(feeds, rng)
        runs.insert(3, [np.zeros_like(feeds[0])])  # all-zero input: TFLite skips the input products
        _check(model, runs, reset_before=4)


def test_unidirectional_lstm_clipping(kernels):
    rng = np.random.default_rng(1)
    inputs = _lstm_inputs(rng, (6, 2, 4), 5, 3, 2, projection=True, projection_bias=True, peephole=True)
    options = {"fused_activation_function": "TANH", "cell_clip": 0.3, "proj_clip": 0.05, "time_major": True}
    model, feeds = _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options)
    _check(model, _runs(feeds, rng), reset_before=3)


# the fixture only chooses the kernels, the same for every example
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(1, 3),
    steps=st.integers(1, 5),
    n_input=st.integers(1, 20),
    n_cell=st.integers(1, 9),
    projection=st.booleans(),
    hybrid=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_unidirectional_lstm_sizes(batch, steps, n_input, n_cell, projection, hybrid, seed, kernels):
    rng = np.random.default_rng(seed)
    n_output = max(1, n_cell - 1) if projection else n_cell
    inputs = _lstm_inputs(
        rng, (steps, batch, n_input), n_cell, n_output, batch, projection=projection, hybrid=hybrid
    )
    options = {
        "fused_activation_function": "TANH",
        "time_major": True,
        "asymmetric_quantize_inputs": seed % 2 == 0,
    }
    model, feeds = _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options, 2 if hybrid else 1)
    _check(model, _runs(feeds, rng, zero_rows=False), reset_before=3)


@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
def test_unidirectional_lstm_resized_between_invokes(time_major, kernels):
    """The plain float LSTM's bound step (its buffers and per-step views) follows a new sequence length."""
    rng = _rng(("resized", time_major))
    batch, n_input, n_cell = 2, 4, 5
    shape = (3, batch, n_input) if time_major else (batch, 3, n_input)
    inputs = _lstm_inputs(rng, shape, n_cell, n_cell, batch)
    options = {"fused_activation_function": "TANH", "time_major": time_major}
    model, _ = _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options)
    reference, ours = litert_interpreter(model), pytflite.Interpreter(model_content=model)
    for steps in (3, 6, 2):
        shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
        feeds = [_uniform(rng, *shape, scale=1.0)]
        for interpreter in (reference, ours):
            interpreter.resize_tensor_input(0, shape)
            interpreter.allocate_tensors()
        assert_matches(_feed(ours, feeds)[0], _feed(reference, feeds)[0], 1e-5, what=f"{steps} steps")


@pytest.mark.parametrize("hybrid", [False, True], ids=["float", "hybrid"])
@pytest.mark.parametrize("config", ["plain", "all", "layer-norm", "cifg-peephole", "projection-bias"])
def test_lstm(config, hybrid, kernels):
    rng = _rng((config, hybrid, "lstm"))
    batch, n_input, n_cell = 3, 9, 5
    n_output = 3 if "projection" in LSTM_CONFIGS[config] else n_cell
    for activation, asymmetric in (("TANH", hybrid), ("NONE", False)):
        inputs = _lstm_inputs(
            rng, (batch, n_input), n_cell, n_output, batch, hybrid=hybrid, **LSTM_CONFIGS[config]
        )
        options = {"fused_activation_function": activation, "asymmetric_quantize_inputs": asymmetric}
        model, feeds = _model(Op.LSTM, inputs, [(F32, None)], options, 2 if hybrid else 1)
        _check(model, _runs(feeds, rng), reset_before=3)


def test_lstm_twenty_inputs():
    """The deprecated 20-input form (no layer-norm inputs)."""
    rng = np.random.default_rng(2)
    inputs = _lstm_inputs(rng, (2, 4), 5, 5, 2, peephole=True)[:20]
    model, feeds = _model(Op.LSTM, inputs, [(F32, None)], {"fused_activation_function": "TANH"})
    _check(model, _runs(feeds, rng), reset_before=3)


def test_lstm_runtime_weights(kernels):
    """Weights fed at invoke instead of constants are packed at each invoke."""
    rng = np.random.default_rng(3)
    inputs = _lstm_inputs(rng, (2, 4), 5, 5, 2, peephole=True, layer_norm=True)
    for i in (2, 6, 13):
        inputs[i] = _input(inputs[i]["value"])
    model, feeds = _model(Op.LSTM, inputs, [(F32, None)], {"fused_activation_function": "TANH"})
    _check(model, _runs(feeds, rng, zero_rows=False), reset_before=3)


def test_basic_lstm():
    rng = np.random.default_rng(4)
    batch, depth, units = 2, 3, 4
    inputs = [
        _input(_uniform(rng, batch, depth)),
        _input(_uniform(rng, batch, units)),
        _const(_uniform(rng, 4 * units, depth + units)),
        _const(_uniform(rng, 4 * units)),
        _input(_uniform(rng, batch, units)),
    ]
    options = {
        "kernel_type": "BASIC",
        "fused_activation_function": "TANH",
        "cell_clip": 0.0,
        "proj_clip": 0.0,
    }
    model, feeds = _model(Op.LSTM, inputs, [(F32, None)] * 4, options, version=2)
    _check(model, _runs(feeds, rng, zero_rows=False))


def _bidirectional_lstm_inputs(rng, n_input, n_cell, n_output, batch, steps, time_major, aux, hybrid, **cell):
    def sequence(depth):
        return _uniform(rng, *((steps, batch, depth) if time_major else (batch, steps, depth)), scale=1.0)

    inputs = [_input(sequence(n_input))]
    inputs += _lstm_cell(rng, n_input, n_cell, n_output, hybrid=hybrid, **cell)
    inputs += _lstm_cell(rng, n_input, n_cell, n_output, hybrid=hybrid, **cell)
    inputs += [_state((batch, n_output)), _state((batch, n_cell))] * 2
    if aux == "none":
        inputs += [None] * 9
    elif aux == "backward-input":  # stacking without cross links: the aux input feeds the backward cell
        inputs += [_input(sequence(n_input))] + [None] * 8
    else:
        n_aux = 3
        inputs.append(_input(sequence(n_aux)))
        for _ in range(2):
            for gate in "ifco":
                weights = (
                    _int8_weights(rng, n_cell, n_aux) if hybrid else _const(_uniform(rng, n_cell, n_aux))
                )
                inputs.append(None if cell["cifg"] and gate == "i" else weights)
    return inputs


@pytest.mark.parametrize("hybrid", [False, True], ids=["float", "hybrid"])
@pytest.mark.parametrize("aux", ["none", "backward-input", "cross-links"])
@pytest.mark.parametrize("merge_outputs", [False, True], ids=["separate", "merged"])
@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
def test_bidirectional_lstm(aux, merge_outputs, time_major, hybrid, kernels):
    rng = _rng((aux, merge_outputs, time_major, hybrid))
    # TFLite's batch-major merged kernel offsets each batch's state by the merged output width: only
    # a batch of one reads the state it should.
    batch = 1 if merge_outputs and not time_major else 2
    for k, cell in enumerate(
        (
            {"cifg": False, "peephole": False, "projection": False, "projection_bias": False},
            {"cifg": True, "peephole": True, "projection": True, "projection_bias": True},
        )
    ):
        n_output = 3 if cell["projection"] else 5
        inputs = _bidirectional_lstm_inputs(rng, 4, 5, n_output, batch, 3, time_major, aux, hybrid, **cell)
        options = {
            "fused_activation_function": "NONE" if k else "TANH",
            "merge_outputs": merge_outputs,
            "time_major": time_major,
            "asymmetric_quantize_inputs": hybrid and k == 1,
        }
        outputs = [(F32, None)] * (1 if merge_outputs else 2)
        model, feeds = _model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs, options, 2 if hybrid else 1)
        _check(model, _runs(feeds, rng), reset_before=3)


def _integer_lstm(
    rng,
    op,
    batch=2,
    steps=4,
    n_input=7,
    n_cell=5,
    time_major=True,
    cell_clip=0.0,
    proj_clip=0.0,
    twelve_intermediates=False,
    **cell,
):
    """An int8 LSTM (TFLite's 8x8->16 kernel: int8 input and weights, int16 cell state and gates)."""
    n_output = 3 if cell.get("projection") else n_cell

    def weights(*shape):
        return _const(rng.integers(-127, 128, shape).astype(np.int8), (float(rng.uniform(0.001, 0.01)), 0))

    def int_values(low, high, size, dtype, scale):
        return _const(rng.integers(low, high, size).astype(dtype), (scale, 0))

    input_quantization = (float(rng.uniform(0.005, 0.02)), int(rng.integers(-30, 30)))
    state_quantization = (float(rng.uniform(0.004, 0.01)), int(rng.integers(-30, 30)))
    if op == Op.LSTM:
        shape = (batch, n_input)
    else:
        shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    cifg = cell.get("cifg", False)
    inputs = [_input(rng.integers(-128, 128, shape).astype(np.int8), input_quantization)]
    inputs += [None if cifg and g == "i" else weights(n_cell, n_input) for g in "ifco"]
    inputs += [None if cifg and g == "i" else weights(n_cell, n_output) for g in "ifco"]
    for gate in "ifo":
        present = cell.get("peephole") and not (cifg and gate == "i")
        scale = float(rng.uniform(1e-5, 1e-4))
        inputs.append(int_values(-20000, 20000, n_cell, np.int16, scale) if present else None)
    inputs += [
        None if cifg and g == "i" else int_values(-20000, 20000, n_cell, np.int32, 1e-5) for g in "ifco"
    ]
    inputs.append(weights(n_output, n_cell) if cell.get("projection") else None)
    with_bias = cell.get("projection_bias")
    inputs.append(int_values(-2000, 2000, n_output, np.int32, 1e-5) if with_bias else None)
    inputs.append(_state((batch, n_output), np.int8, state_quantization))
    inputs.append(_state((batch, n_cell), np.int16, (2.0**-11, 0)))
    for gate in "ifco":
        present = cell.get("layer_norm") and not (cifg and gate == "i")
        scale = float(rng.uniform(3e-5, 6e-5))
        inputs.append(int_values(5000, 30000, n_cell, np.int16, scale) if present else None)
    intermediates = [(TensorType.INT16, (float(rng.uniform(2e-4, 8e-4)), 0)) for _ in range(4)]
    intermediates.append((TensorType.INT8, (float(rng.uniform(0.004, 0.008)), int(rng.integers(-10, 10)))))
    if twelve_intermediates:
        intermediates += [(TensorType.INT16, (1e-3, 0))] * 7
    options = {"fused_activation_function": "TANH", "cell_clip": cell_clip, "proj_clip": proj_clip}
    if op != Op.LSTM:
        options["time_major"] = time_major
    output = (TensorType.INT8, state_quantization)
    model, feeds = _model(op, inputs, [output], options, 3 if op == Op.LSTM else 2, intermediates)
    zero = np.full(shape, input_quantization[1], np.int8)  # the input's zero point: real zeros
    runs = [feeds, [rng.integers(-128, 128, shape).astype(np.int8)], [zero], feeds]
    return model, runs


INTEGER_LSTM_CONFIGS = {
    **LSTM_CONFIGS,
    "batch-major": {"time_major": False},
    "clipping": {"projection": True, "cell_clip": 0.01, "proj_clip": 0.1},
}


INTEGER_LSTM_CASES = [
    (op, config)
    for op in (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.LSTM)
    for config in INTEGER_LSTM_CONFIGS
    if not (op == Op.LSTM and config == "batch-major")  # LSTM has no time axis
]


@pytest.mark.parametrize(
    ("op", "config"), INTEGER_LSTM_CASES, ids=[f"{o.name}-{c}" for o, c in INTEGER_LSTM_CASES]
)
def test_integer_lstm(op, config):
    for seed in range(2):
        model, runs = _integer_lstm(_rng(op, config, seed), op, **INTEGER_LSTM_CONFIGS[config])
        _check(model, runs, reset_before=3)


def test_integer_lstm_eight_bit_gates_rejected():
    """LSTM's 12-intermediate variant (8-bit gate products, TFLite's 8x8->8 kernel) is not implemented."""
    model, _ = _integer_lstm(_rng("8x8_8"), Op.LSTM, twelve_intermediates=True, cifg=True, layer_norm=True)
    with pytest.raises(RuntimeError, match=r"12 intermediates \(TFLite's 8x8->8 integer kernel\)"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- RNN ----------------------------------------------------------------------------------------------


def _rnn_weights(rng, units, depth, hybrid):
    return _int8_weights(rng, units, depth) if hybrid else _const(_uniform(rng, units, depth))


@pytest.mark.parametrize("activation", ["TANH", "RELU", "NONE"])
@pytest.mark.parametrize("quantization", ["float", "hybrid", "hybrid-asymmetric"])
def test_rnn(quantization, activation, kernels):
    rng = _rng((quantization, activation, "rnn"))
    hybrid = quantization != "float"
    batch, depth, units = 3, 11, 5
    inputs = [
        _input(_uniform(rng, batch, depth)),
        _rnn_weights(rng, units, depth, hybrid),
        _rnn_weights(rng, units, units, hybrid),
        _const(_uniform(rng, units)),
        _state((batch, units)),
    ]
    options = {
        "fused_activation_function": activation,
        "asymmetric_quantize_inputs": quantization.endswith("ic"),
    }
    model, feeds = _model(Op.RNN, inputs, [(F32, None)], options, 2 if hybrid else 1)
    _check(model, _runs(feeds, rng), reset_before=3)


@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
@pytest.mark.parametrize("quantization", ["float", "hybrid", "hybrid-asymmetric"])
def test_unidirectional_rnn(quantization, time_major, kernels):
    rng = _rng((quantization, time_major, "urnn"))
    hybrid = quantization != "float"
    batch, steps, depth, units = 2, 4, 9, 5
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    for activation in ("TANH", "RELU"):
        inputs = [
            _input(_uniform(rng, *shape)),
            _rnn_weights(rng, units, depth, hybrid),
            _rnn_weights(rng, units, units, hybrid),
            _const(_uniform(rng, units)),
            _state((batch, units)),
        ]
        options = {
            "fused_activation_function": activation,
            "time_major": time_major,
            "asymmetric_quantize_inputs": quantization.endswith("ic"),
        }
        model, feeds = _model(
            Op.UNIDIRECTIONAL_SEQUENCE_RNN, inputs, [(F32, None)], options, 2 if hybrid else 1
        )
        _check(model, _runs(feeds, rng), reset_before=3)


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_unidirectional_rnn_hybrid_weights_of_minus_128(asymmetric, kernels):
    """Recurrent int8 weights of -128 within the first 16 columns: TFLite's x86 SSE dot product gives them
    the wrong sign against negative inputs (fidelity.sse), in the compiled recurrence as in NumPy's."""
    rng = _rng(("urnn-128", asymmetric))
    batch, steps, depth, units = 2, 6, 9, 20
    recurrent = rng.integers(-128, 128, (units, units)).astype(np.int8)
    recurrent[:, :16][rng.random((units, 16)) < 0.2] = -128
    model, feeds = _hybrid_sequence_rnn(rng, steps, batch, depth, _const(recurrent, (0.004, 0)), asymmetric)
    _check(model, _runs(feeds, rng), reset_before=3)


def _hybrid_sequence_rnn(rng, steps, batch, depth, recurrent, asymmetric):
    """A time-major hybrid UNIDIRECTIONAL_SEQUENCE_RNN (TANH) with these recurrent weights."""
    units = recurrent["value"].shape[0]
    inputs = [
        _input(_uniform(rng, steps, batch, depth)),
        _int8_weights(rng, units, depth),
        recurrent,
        _const(_uniform(rng, units)),
        _state((batch, units)),
    ]
    options = {
        "fused_activation_function": "TANH",
        "time_major": True,
        "asymmetric_quantize_inputs": asymmetric,
    }
    return _model(Op.UNIDIRECTIONAL_SEQUENCE_RNN, inputs, [(F32, None)], options, 2)


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_hybrid_rnn_sequence_of_non_finite_values(asymmetric):
    """A hybrid sequence the compiled kernels decline (a NaN or an infinity in the input) runs the NumPy
    kernels for that invoke, from the same state: the bound step's results are the NumPy kernels'."""
    rng = _rng(("urnn-nan", asymmetric))
    model, feeds = _hybrid_sequence_rnn(rng, 5, 1, 9, _int8_weights(rng, 6, 6), asymmetric)
    runs = _runs(feeds, rng)
    runs[1][0][2, 0, 3] = np.nan
    runs[2][0][1, 0, 0] = np.inf
    assert_compiled_as_numpy(model, runs)


def _bidirectional_rnn(
    rng, time_major, aux, merge_outputs, hybrid, asymmetric, activation="TANH", depth=4, weights=_rnn_weights
):
    batch, steps = 2, 3
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    inputs = [
        _input(_uniform(rng, *shape)),
        weights(rng, 5, depth, hybrid),
        weights(rng, 5, 5, hybrid),
        _const(_uniform(rng, 5)),
        _state((batch, 5)),
        weights(rng, 6, depth, hybrid),
        weights(rng, 6, 6, hybrid),
        _const(_uniform(rng, 6)),
        _state((batch, 6)),
    ]
    if aux == "none":
        inputs += [None] * 3
    elif aux == "backward-input":
        inputs += [_input(_uniform(rng, *shape)), None, None]
    else:
        n_aux = depth if aux == "cross-links" else depth + 2
        inputs += [
            _input(_uniform(rng, *shape[:2], n_aux)),
            weights(rng, 5, n_aux, hybrid),
            weights(rng, 6, n_aux, hybrid),
        ]
    options = {
        "fused_activation_function": activation,
        "time_major": time_major,
        "merge_outputs": merge_outputs,
        "asymmetric_quantize_inputs": asymmetric,
    }
    outputs = [(F32, None)] * (1 if merge_outputs else 2)
    return _model(Op.BIDIRECTIONAL_SEQUENCE_RNN, inputs, outputs, options, 2 if hybrid else 1)


@pytest.mark.parametrize("quantization", ["float", "hybrid", "hybrid-asymmetric"])
@pytest.mark.parametrize("aux", ["none", "backward-input", "cross-links", "cross-links-deeper"])
@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
def test_bidirectional_rnn(quantization, aux, time_major, kernels):
    rng = _rng((quantization, aux, time_major, "brnn"))
    hybrid = quantization != "float"
    for merge_outputs in (False, True):
        if hybrid and quantization == "hybrid" and time_major and merge_outputs:
            continue  # LiteRT dereferences a null zero-point array there (see the test below)
        for activation in ("TANH", "NONE"):
            model, feeds = _bidirectional_rnn(
                rng, time_major, aux, merge_outputs, hybrid, quantization.endswith("ic"), activation
            )
            _check(model, _runs(feeds, rng), reset_before=3)


def test_bidirectional_rnn_hybrid_time_major_merged(kernels):
    """LiteRT segfaults on this model (symmetric hybrid, time major, merged outputs, batch > 1: its
    per-row loop indexes a null zero-point array). pytflite's merged output must be LiteRT's two separate
    outputs side by side."""
    separate, feeds = _bidirectional_rnn(np.random.default_rng(5), True, "cross-links", False, True, False)
    merged, _ = _bidirectional_rnn(np.random.default_rng(5), True, "cross-links", True, True, False)
    reference = litert_interpreter(separate)
    reference.allocate_tensors()
    ours = pytflite.Interpreter(model_content=merged)
    ours.allocate_tensors()
    for _ in range(2):
        expected = np.concatenate(_feed(reference, feeds), axis=-1)
        assert_matches(_feed(ours, feeds)[0], expected)


def test_bidirectional_rnn_shallow_aux_input_rejected():
    """TFLite reads a time-major aux input at the main input's stride: a shallower one is read past its
    end (garbage in LiteRT). pytflite refuses it."""
    rng = np.random.default_rng(6)
    inputs = [
        _input(_uniform(rng, 3, 2, 4)),
        _rnn_weights(rng, 5, 4, False),
        _rnn_weights(rng, 5, 5, False),
        _const(_uniform(rng, 5)),
        _state((2, 5)),
        _rnn_weights(rng, 6, 4, False),
        _rnn_weights(rng, 6, 6, False),
        _const(_uniform(rng, 6)),
        _state((2, 6)),
        _input(_uniform(rng, 3, 2, 2)),
        _rnn_weights(rng, 5, 2, False),
        _rnn_weights(rng, 6, 2, False),
    ]
    options = {"fused_activation_function": "TANH", "time_major": True, "merge_outputs": False}
    model, _ = _model(Op.BIDIRECTIONAL_SEQUENCE_RNN, inputs, [(F32, None)] * 2, options)
    with pytest.raises(RuntimeError, match="aux input shallower than the input"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- SVDF ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["NONE", "RELU", "TANH"])
@pytest.mark.parametrize("quantization", ["float", "hybrid", "hybrid-asymmetric"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_svdf(quantization, activation, bias):
    rng = _rng((quantization, activation, bias, "svdf"))
    hybrid = quantization != "float"
    batch, depth, rank, units, memory = 2, 11, 2, 3, 4
    filters = rank * units
    weights = (lambda *s: _int8_weights(rng, *s)) if hybrid else (lambda *s: _const(_uniform(rng, *s)))
    inputs = [
        _input(_uniform(rng, batch, depth)),
        weights(filters, depth),
        weights(filters, memory),
        _const(_uniform(rng, units)) if bias else None,
        _state((batch, filters * memory)),
    ]
    options = {
        "rank": rank,
        "fused_activation_function": activation,
        "asymmetric_quantize_inputs": quantization.endswith("ic"),
    }
    model, _ = _model(Op.SVDF, inputs, [(F32, None)], options, 2 if hybrid else 1)
    runs = [[_uniform(rng, batch, depth)] for _ in range(6)]
    runs[2] = [np.zeros((batch, depth), np.float32)]
    _check(model, runs, reset_before=4)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), bias=st.booleans(), rank=st.integers(1, 3), memory=st.integers(1, 5))
def test_svdf_integer(seed, bias, rank, memory):
    rng = np.random.default_rng(seed)
    batch, depth, units = 2, 7, 3
    filters = rank * units
    state_scale = float(rng.uniform(0.001, 0.02))
    inputs = [
        _input(rng.integers(-128, 128, (batch, depth)).astype(np.int8), (float(rng.uniform(0.01, 0.05)), 3)),
        _const(
            rng.integers(-127, 128, (filters, depth)).astype(np.int8), (float(rng.uniform(0.002, 0.01)), 0)
        ),
        _const(
            rng.integers(-3000, 3000, (filters, memory)).astype(np.int16), (float(rng.uniform(1e-5, 1e-4)), 0)
        ),
        _const(rng.integers(-5000, 5000, units).astype(np.int32), (1e-6, 0)) if bias else None,
        _state((batch, filters * memory), np.int16, (state_scale, 0)),
    ]
    output = (TensorType.INT8, (float(rng.uniform(0.005, 0.05)), int(rng.integers(-20, 20))))
    model, _ = _model(Op.SVDF, inputs, [output], {"rank": rank, "fused_activation_function": "RELU"}, 3)
    runs = [[rng.integers(-128, 128, (batch, depth)).astype(np.int8)] for _ in range(5)]
    _check(model, runs, reset_before=3)


# ---- invalid models -----------------------------------------------------------------------------------


def test_lstm_state_must_be_variable():
    rng = np.random.default_rng(7)
    inputs = _lstm_inputs(rng, (2, 4), 5, 5, 2)
    inputs[18] = _input(np.zeros((2, 5), np.float32))
    model, _ = _model(Op.LSTM, inputs, [(F32, None)], {"fused_activation_function": "TANH"})
    with pytest.raises(RuntimeError, match=r"output_state != nullptr was not true"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_lstm_input_count():
    rng = np.random.default_rng(8)
    inputs = _lstm_inputs(rng, (2, 4), 5, 5, 2)[:22]
    model, _ = _model(Op.LSTM, inputs, [(F32, None)], {"fused_activation_function": "TANH"})
    with pytest.raises(RuntimeError, match="The LSTM Full kernel expects 20 or 24 inputs. Got 22 inputs"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_lstm_weight_shape_mismatch():
    rng = np.random.default_rng(9)
    inputs = _lstm_inputs(rng, (3, 2, 4), 5, 5, 2)
    inputs[3] = _const(_uniform(rng, 5, 3))  # input_to_cell weights with the wrong depth
    model, _ = _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], {"time_major": True})
    with pytest.raises(RuntimeError, match=r"input_to_cell_weights->dims->data\[1\] 3 != 4"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_rnn_state_must_be_variable():
    rng = np.random.default_rng(10)
    inputs = [
        _input(_uniform(rng, 2, 3)),
        _const(_uniform(rng, 4, 3)),
        _const(_uniform(rng, 4, 4)),
        _const(_uniform(rng, 4)),
        _input(np.zeros((2, 4), np.float32)),
    ]
    model, feeds = _model(Op.RNN, inputs, [(F32, None)], {"fused_activation_function": "TANH"})
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    with pytest.raises(RuntimeError, match="hidden_state != nullptr was not true"):
        _feed(interpreter, feeds)


def test_svdf_rank_must_divide_filters():
    rng = np.random.default_rng(11)
    inputs = [
        _input(_uniform(rng, 2, 3)),
        _const(_uniform(rng, 5, 3)),
        _const(_uniform(rng, 5, 4)),
        None,
        _state((2, 20)),
    ]
    model, _ = _model(Op.SVDF, inputs, [(F32, None)], {"rank": 2})
    with pytest.raises(RuntimeError, match="num_filters % rank 1 != 0"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# ---- hybrid weights holding -128 (LiteRT's x86 SSE dot product and row sums) ---------------------------


def _extreme_int8_weights(rng, *shape, share=0.3):
    """int8 weights with many -128s (`share` of them) and 127s: LiteRT's SSE kernel moves the input's sign
    onto a weight of -128 with _mm_sign_epi8 (which leaves it -128), and sums weight rows in int16 lanes
    that wrap (a deep row of mostly -128)."""
    values = rng.integers(-128, 128, shape)
    values[rng.random(shape) < share] = -128
    values[rng.random(shape) < 0.1 * (1 - share)] = 127
    return _const(values.astype(np.int8), (float(rng.uniform(0.002, 0.01)), 0))


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
@pytest.mark.parametrize("time_major", [True, False], ids=["time-major", "batch-major"])
def test_hybrid_lstm_weights_of_minus_128(asymmetric, time_major):
    rng = _rng(("lstm-128", asymmetric, time_major))
    batch, steps, n_input, n_cell, n_output = 2, 3, 37, 6, 18
    shape = (steps, batch, n_input) if time_major else (batch, steps, n_input)
    inputs = _lstm_inputs(rng, shape, n_cell, n_output, batch, projection=True, peephole=True, hybrid=True)
    for i in (*range(1, 12), 16):
        inputs[i] = _extreme_int8_weights(rng, *inputs[i]["value"].shape)
    options = {
        "fused_activation_function": "TANH",
        "time_major": time_major,
        "asymmetric_quantize_inputs": asymmetric,
    }
    model, feeds = _model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options, 2)
    _check(model, _runs(feeds, rng), reset_before=3)


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_hybrid_rnn_weights_of_minus_128(asymmetric):
    """Depth 2100: the weight row sums (asymmetric inputs) wrap in LiteRT's int16 lanes."""
    rng = _rng(("rnn-128", asymmetric))
    batch, depth, units = 2, 2100, 17
    inputs = [
        _input(_uniform(rng, batch, depth) + np.float32(0.3)),  # off-center: a nonzero zero point
        _extreme_int8_weights(rng, units, depth, share=0.97),
        _extreme_int8_weights(rng, units, units),
        _const(_uniform(rng, units)),
        _state((batch, units)),
    ]
    options = {"fused_activation_function": "NONE", "asymmetric_quantize_inputs": asymmetric}
    model, feeds = _model(Op.RNN, inputs, [(F32, None)], options, 2)
    _check(model, _runs(feeds, rng), reset_before=3)


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_hybrid_svdf_weights_of_minus_128(asymmetric):
    rng = _rng(("svdf-128", asymmetric))
    batch, depth, rank, units, memory = 2, 40, 2, 3, 4
    inputs = [
        _input(_uniform(rng, batch, depth)),
        _extreme_int8_weights(rng, rank * units, depth),
        _extreme_int8_weights(rng, rank * units, memory),
        _const(_uniform(rng, units)),
        _state((batch, rank * units * memory)),
    ]
    options = {"rank": rank, "fused_activation_function": "NONE", "asymmetric_quantize_inputs": asymmetric}
    model, _ = _model(Op.SVDF, inputs, [(F32, None)], options, 2)
    runs = [[_uniform(rng, batch, depth)] for _ in range(5)]
    _check(model, runs, reset_before=3)


@pytest.mark.parametrize("seed", range(4))
def test_basic_lstm_quantized(seed):
    """The basic kernel's 8-bit variant: uint8 input and activation, int16 state with 4 integer bits."""
    rng = np.random.default_rng(seed)
    batch, depth, units = 3, 5, 4 + 2 * seed  # units >= 8 reaches the SIMD-width blocks
    input_q = (1 / 128, 128)
    weights_q = (float(rng.uniform(0.002, 0.02)), int(rng.integers(100, 156)))
    inputs = [
        _input(rng.integers(0, 256, (batch, depth)).astype(np.uint8), input_q),
        _input(rng.integers(0, 256, (batch, units)).astype(np.uint8), input_q),
        _const(rng.integers(0, 256, (4 * units, depth + units)).astype(np.uint8), weights_q),
        _const(rng.integers(-3000, 3000, 4 * units).astype(np.int32), (input_q[0] * weights_q[0], 0)),
        _input(rng.integers(-20000, 20000, (batch, units)).astype(np.int16), (2.0**-11, 0)),
    ]
    outputs = [
        (TensorType.UINT8, input_q),
        (TensorType.INT16, (2.0**-11, 0)),
        (TensorType.UINT8, input_q),
        (TensorType.INT16, (2.0**-12, 0)),
    ]
    options = {"kernel_type": "BASIC", "fused_activation_function": "TANH"}
    model, feeds = _model(Op.LSTM, inputs, outputs, options, version=2)
    fresh = [rng.integers(0, 256, x.shape).astype(x.dtype) for x in feeds[:2]]
    runs = [feeds, [*fresh, feeds[2]]]
    _check(model, runs)


def test_basic_lstm_quantized_state_scale():
    rng = np.random.default_rng(12)
    inputs = [
        _input(rng.integers(0, 256, (1, 3)).astype(np.uint8), (1 / 128, 128)),
        _input(rng.integers(0, 256, (1, 2)).astype(np.uint8), (1 / 128, 128)),
        _const(rng.integers(0, 256, (8, 5)).astype(np.uint8), (0.01, 128)),
        _const(np.zeros(8, np.int32), (0.01 / 128, 0)),
        _input(np.zeros((1, 2), np.int16), (2.0**-12, 0)),
    ]
    outputs = [(TensorType.UINT8, (1 / 128, 128)), (TensorType.INT16, (2.0**-12, 0))]
    outputs += [(TensorType.UINT8, (1 / 128, 128)), (TensorType.INT16, (2.0**-12, 0))]
    model, _ = _model(Op.LSTM, inputs, outputs, {"kernel_type": "BASIC"}, version=2)
    with pytest.raises(RuntimeError, match="currently supported is with StateIntegerBits==4"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_hybrid_bidirectional_weights_of_minus_128():
    rng = _rng("bidi-128")
    batch, steps, n_input, n_cell = 2, 3, 21, 17
    for asymmetric, time_major in ((False, True), (True, False)):
        inputs = _bidirectional_lstm_inputs(
            rng, n_input, n_cell, n_cell, batch, steps, time_major, "cross-links", True,
            cifg=False, peephole=True, projection=False, projection_bias=False,
        )  # fmt: skip
        for i, spec in enumerate(inputs):
            if spec is not None and spec["kind"] == "const" and spec["value"].dtype == np.int8:
                inputs[i] = _extreme_int8_weights(rng, *spec["value"].shape)
        options = {"merge_outputs": False, "time_major": time_major, "asymmetric_quantize_inputs": asymmetric}
        options["fused_activation_function"] = "TANH"
        model, feeds = _model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)] * 2, options, 2)
        _check(model, _runs(feeds, rng), reset_before=3)
        model, feeds = _bidirectional_rnn(
            rng, time_major, "cross-links", False, True, asymmetric, depth=n_input, weights=_extreme_weights
        )
        _check(model, _runs(feeds, rng), reset_before=3)


def _extreme_weights(rng, units, depth, hybrid):
    return _extreme_int8_weights(rng, units, depth)


@pytest.mark.parametrize("asymmetric", [False, True], ids=["symmetric", "asymmetric"])
def test_hybrid_rnn_runtime_weights(asymmetric):
    """int8 weights fed at invoke: TFLite sums the weight rows (asymmetric inputs) on the first invoke
    after prepare only, and keeps those sums when the weights change."""
    rng = _rng(("rnn-runtime", asymmetric))
    batch, depth, units = 2, 20, 6
    weights = _extreme_int8_weights(rng, units, depth)
    inputs = [
        _input(_uniform(rng, batch, depth) + np.float32(0.3)),
        _input(weights["value"], weights["quantization"]),
        _extreme_int8_weights(rng, units, units),
        _const(_uniform(rng, units)),
        _state((batch, units)),
    ]
    options = {"fused_activation_function": "NONE", "asymmetric_quantize_inputs": asymmetric}
    model, feeds = _model(Op.RNN, inputs, [(F32, None)], options, 2)
    other = rng.integers(-128, 128, (units, depth)).astype(np.int8)
    _check(model, [feeds, [feeds[0], other], [feeds[0] - 0.5, other]])


def test_svdf_integer_needs_relu():
    rng = np.random.default_rng(13)
    inputs = [
        _input(rng.integers(-128, 128, (1, 4)).astype(np.int8), (0.02, 0)),
        _const(rng.integers(-127, 128, (2, 4)).astype(np.int8), (0.01, 0)),
        _const(rng.integers(-3000, 3000, (2, 3)).astype(np.int16), (1e-4, 0)),
        None,
        _state((1, 6), np.int16, (0.01, 0)),
    ]
    output = (TensorType.INT8, (0.02, 0))
    model, _ = _model(Op.SVDF, inputs, [output], {"rank": 1, "fused_activation_function": "TANH"}, 3)
    with pytest.raises(RuntimeError, match=r"params->activation != kTfLiteActRelu \(4 != 1\)"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_bidirectional_lstm_rejects_int8_input():
    rng = np.random.default_rng(14)
    inputs = _bidirectional_lstm_inputs(
        rng, 4, 5, 5, 2, 3, True, "none", False, cifg=False, peephole=False, projection=False,
        projection_bias=False,
    )  # fmt: skip
    inputs[0] = _input(rng.integers(-128, 128, (3, 2, 4)).astype(np.int8), (0.02, 0))
    options = {"fused_activation_function": "TANH", "merge_outputs": True, "time_major": True}
    model, _ = _model(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(F32, None)], options)
    with pytest.raises(RuntimeError, match=r"input->type != kTfLiteFloat32 \(INT8 != FLOAT32\)"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_bidirectional_rnn_output_count():
    """merge_outputs with two outputs."""
    rng = np.random.default_rng(15)
    batch, depth = 2, 4
    inputs = [
        _input(_uniform(rng, 3, batch, depth)),
        _rnn_weights(rng, 5, depth, False),
        _rnn_weights(rng, 5, 5, False),
        _const(_uniform(rng, 5)),
        _state((batch, 5)),
        _rnn_weights(rng, 6, depth, False),
        _rnn_weights(rng, 6, 6, False),
        _const(_uniform(rng, 6)),
        _state((batch, 6)),
        None,
        None,
        None,
    ]
    options = {"fused_activation_function": "TANH", "time_major": True, "merge_outputs": True}
    model, _ = _model(Op.BIDIRECTIONAL_SEQUENCE_RNN, inputs, [(F32, None)] * 2, options)
    with pytest.raises(RuntimeError, match=r"node->outputs->size 2 != 1"):
        pytflite.Interpreter(model_content=model).allocate_tensors()

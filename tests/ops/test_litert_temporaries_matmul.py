"""get_tensor_details() lists the temporaries of LiteRT 2.3's matrix-product and recurrent kernels
(tensor_listing/rules/matmul.py, recurrent.py) as LiteRT does, under each resolver: FULLY_CONNECTED
and BATCH_MATMUL in float, integer and hybrid forms (the 4-bit kernel, sparse weights, transposed
operands), with the nodes XNNPACK takes listing none; the RNNs, SVDF and the LSTMs, float, hybrid and
integer; and the corpus models holding these ops.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder
from tests.ops.test_linear import fc_model, sparse_model, sparse_weights
from tests.ops.test_recurrent import _const, _input, _int8_weights, _lstm_inputs, _model, _state, _uniform
from tests.oracle import CORPUS, requires_litert
from tests.single_op import Operand, SingleOpModel
from tests.tensor_listing import RESOLVERS, assert_listed_as_litert

pytestmark = requires_litert

RNG = np.random.default_rng(0)


def _q(scale, zero_point=0, dimension=0) -> AffineQuantization:
    scale = np.atleast_1d(np.float32(scale))
    return AffineQuantization(scale, np.full(scale.size, zero_point), dimension)


def _floats(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _int8(*shape) -> np.ndarray:
    return RNG.integers(-127, 128, shape).astype(np.int8)


def _assert_listed(model: bytes, threads=(None,)) -> None:
    for resolver in RESOLVERS:
        for num_threads in threads:
            assert_listed_as_litert(model, resolver, num_threads)


# --- FULLY_CONNECTED --------------------------------------------------------------------------------


def _fc(
    x, w, bias=None, options=None, out=T.FLOAT32, x_q=None, w_q=None, b_q=None, out_q=None, constant_w=True
):
    bias_operand = None if bias is None else Operand(bias, constant=True, quantization=b_q)
    return SingleOpModel(
        Op.FULLY_CONNECTED,
        [Operand(x, quantization=x_q), Operand(w, constant=constant_w, quantization=w_q), bias_operand],
        [out],
        options,
        version=5 if options and options.get("keep_num_dims") else 1,
        output_quantization=[out_q] if out_q else [],
    ).build()[0]


FC_MODELS = {
    "float": lambda: _fc(_floats(3, 8), _floats(5, 8), _floats(5)),
    "float-runtime-weights": lambda: _fc(_floats(3, 8), _floats(5, 8), _floats(5), constant_w=False),
    "hybrid": lambda: _fc(_floats(3, 8), _int8(5, 8), _floats(5), w_q=_q(0.1)),
    "hybrid-asymmetric-keep-dims": lambda: _fc(
        _floats(2, 3, 8),
        _int8(5, 8),
        None,
        {"keep_num_dims": True, "asymmetric_quantize_inputs": True},
        w_q=_q(0.1),
    ),
    "hybrid-per-channel": lambda: _fc(_floats(3, 8), _int8(5, 8), _floats(5), w_q=_q(np.full(5, 0.1))),
    "hybrid-runtime-weights": lambda: _fc(_floats(3, 8), _int8(5, 8), None, w_q=_q(0.1), constant_w=False),
    "hybrid-uint8": lambda: _fc(_floats(3, 8), _int8(5, 8).view(np.uint8), _floats(5), w_q=_q(0.1, 128)),
    "hybrid-tanh": lambda: _fc(
        _floats(3, 8), _int8(5, 8), None, {"fused_activation_function": "TANH"}, w_q=_q(0.1)
    ),
    "int8": lambda: _fc(
        _int8(3, 8),
        _int8(5, 8),
        np.zeros(5, np.int32),
        out=T.INT8,
        x_q=_q(0.5, 1),
        w_q=_q(0.1),
        b_q=_q(0.05),
        out_q=_q(1.0, 2),
    ),
    "int8-weights-zero-point": lambda: _fc(
        _int8(3, 8), _int8(5, 8), None, out=T.INT8, x_q=_q(0.5, 1), w_q=_q(0.1, 2), out_q=_q(1.0, 2)
    ),
    "int16": lambda: _fc(
        _int8(3, 8).astype(np.int16),
        _int8(5, 8),
        np.zeros(5, np.int64),
        out=T.INT16,
        x_q=_q(0.5),
        w_q=_q(0.1),
        b_q=_q(0.05),
        out_q=_q(1.0),
    ),
}


@pytest.mark.parametrize("name", list(FC_MODELS))
def test_fully_connected(name):
    _assert_listed(FC_MODELS[name]())


@pytest.mark.parametrize("batch, units, depth", [(5, 6, 64), (1, 6, 64), (17, 6, 64), (3, 3, 64), (3, 6, 30)])
def test_fully_connected_int4_weights(batch, units, depth):
    """The optimized kernel's 4-bit path pads its scratch to its tiles (>= 4 units, even depth >= 32)."""
    weights = RNG.integers(-7, 8, (units, depth)).astype(np.int8)
    model, _ = fc_model(
        _floats(batch, depth), None, weights, T.INT4, _q(0.05), _floats(units), None, T.FLOAT32, None, {}
    )
    _assert_listed(model, threads=(None, 2))


def test_fully_connected_int4_odd_depth_is_not_xnnpacks():
    weights = RNG.integers(-7, 8, (6, 33)).astype(np.int8)
    model, _ = fc_model(_floats(3, 33), None, weights, T.INT4, _q(0.05), None, None, T.FLOAT32, None, {})
    _assert_listed(model)


def test_fully_connected_int2_weights():
    weights = RNG.integers(-2, 2, (5, 16)).astype(np.int8)
    model, _ = fc_model(
        _floats(3, 16), None, weights, T.INT2, _q(np.full(5, 0.05)), None, None, T.FLOAT32, None, {}
    )
    _assert_listed(model)


@pytest.mark.parametrize("hybrid, block", [(False, None), (False, 4), (True, 16)])
def test_fully_connected_sparse_weights(hybrid, block):
    """Sparse hybrid weights add the 'FC_ledger'; XNNPACK takes no sparse FULLY_CONNECTED."""
    weights = sparse_weights(RNG, (5, 32), block or 1, np.int8 if hybrid else np.float32)
    quantization = {"w_type": T.INT8, "w_q": _q(0.05)} if hybrid else {}
    _assert_listed(sparse_model(_floats(3, 32), weights, ["DENSE", "SPARSE_CSR"], block, **quantization))


# --- BATCH_MATMUL ------------------------------------------------------------------------------------


def _bmm(lhs, rhs, options=None, out=T.FLOAT32, lhs_q=None, rhs_q=None, out_q=None, constant_rhs=False):
    return SingleOpModel(
        Op.BATCH_MATMUL,
        [Operand(lhs, quantization=lhs_q), Operand(rhs, constant=constant_rhs, quantization=rhs_q)],
        [out],
        options,
        output_quantization=[out_q] if out_q else [],
    ).build()[0]


def _int8_bmm(rhs_q, constant_rhs=False):
    return _bmm(_int8(2, 3, 4), _int8(2, 4, 5), None, T.INT8, _q(0.5, 1), rhs_q, _q(1.0, 2), constant_rhs)


BMM_MODELS = {
    "float": lambda: _bmm(_floats(2, 3, 4), _floats(2, 4, 5)),
    "float-constant-rhs": lambda: _bmm(_floats(2, 3, 4), _floats(2, 4, 5), constant_rhs=True),
    "adj-x": lambda: _bmm(_floats(2, 4, 3), _floats(2, 4, 5), {"adj_x": True}),
    "adj-y": lambda: _bmm(_floats(2, 3, 4), _floats(2, 5, 4), {"adj_y": True}),
    "broadcast-rank-5": lambda: _bmm(_floats(2, 1, 3, 3, 4), _floats(4, 5)),
    "hybrid": lambda: _bmm(_floats(2, 3, 4), _int8(2, 4, 5), rhs_q=_q(0.1)),
    "hybrid-constant-adjoint": lambda: _bmm(
        _floats(3, 4, 2), _int8(5, 4), {"adj_x": True, "adj_y": True}, rhs_q=_q(0.1), constant_rhs=True
    ),
    "int8": lambda: _int8_bmm(_q(0.1)),
    "int8-rhs-zero-point": lambda: _int8_bmm(_q(0.1, 3)),
    "int8-per-channel-rhs": lambda: _int8_bmm(_q(np.full(5, 0.1), 0, 2), constant_rhs=True),
    "int16": lambda: _bmm(
        _int8(2, 3, 4).astype(np.int16),
        _int8(2, 4, 5).astype(np.int16),
        None,
        T.INT16,
        _q(0.5),
        _q(0.1),
        _q(1.0),
    ),
}


@pytest.mark.parametrize("name", list(BMM_MODELS))
def test_batch_matmul(name):
    _assert_listed(BMM_MODELS[name]())


# --- recurrent ops -----------------------------------------------------------------------------------


def _weights(hybrid, *shape):
    return _int8_weights(RNG, *shape) if hybrid else _const(_uniform(RNG, *shape))


@pytest.mark.parametrize("hybrid", [False, True], ids=["float", "hybrid"])
@pytest.mark.parametrize("op", [Op.RNN, Op.UNIDIRECTIONAL_SEQUENCE_RNN], ids=["rnn", "sequence-rnn"])
def test_rnn(op, hybrid):
    batch, depth, units = 3, 11, 5
    source = (4, batch, depth) if op == Op.UNIDIRECTIONAL_SEQUENCE_RNN else (batch, depth)
    inputs = [
        _input(_uniform(RNG, *source)),
        _weights(hybrid, units, depth),
        _weights(hybrid, units, units),
        _const(_uniform(RNG, units)),
        _state((batch, units)),
    ]
    options = {"fused_activation_function": "TANH", "time_major": True}
    if op == Op.RNN:
        options.pop("time_major")
    _assert_listed(_model(op, inputs, [(T.FLOAT32, None)], options, 2 if hybrid else 1)[0])


@pytest.mark.parametrize("hybrid", [False, True], ids=["float", "hybrid"])
def test_svdf(hybrid):
    batch, depth, rank, units, memory = 3, 11, 2, 5, 4
    filters = rank * units
    inputs = [
        _input(_uniform(RNG, batch, depth)),
        _weights(hybrid, filters, depth),
        _weights(hybrid, filters, memory),
        _const(_uniform(RNG, units)),
        _state((batch, filters * memory)),
    ]
    options = {"rank": rank, "fused_activation_function": "RELU"}
    _assert_listed(_model(Op.SVDF, inputs, [(T.FLOAT32, None)], options, 2 if hybrid else 1)[0])


def test_svdf_integer():
    batch, depth, units, rank, memory = 2, 7, 3, 2, 4
    filters = rank * units
    inputs = [
        _input(RNG.integers(-128, 128, (batch, depth)).astype(np.int8), (0.02, 3)),
        _const(RNG.integers(-127, 128, (filters, depth)).astype(np.int8), (0.005, 0)),
        _const(RNG.integers(-3000, 3000, (filters, memory)).astype(np.int16), (5e-5, 0)),
        _const(RNG.integers(-5000, 5000, units).astype(np.int32), (1e-6, 0)),
        _state((batch, filters * memory), np.int16, (0.01, 0)),
    ]
    options = {"rank": rank, "fused_activation_function": "RELU"}
    _assert_listed(_model(Op.SVDF, inputs, [(T.INT8, (0.02, 1))], options, 3)[0])


LSTM_CONFIGS = {
    "plain": {},
    "cifg": {"cifg": True},
    "cifg-projection": {"cifg": True, "projection": True},
    "projection-layer-norm": {"projection": True, "layer_norm": True, "peephole": True},
}


@pytest.mark.parametrize("hybrid", [False, True], ids=["float", "hybrid"])
@pytest.mark.parametrize("config", list(LSTM_CONFIGS))
@pytest.mark.parametrize("op", [Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.LSTM], ids=["sequence-lstm", "lstm"])
def test_lstm(op, config, hybrid):
    """The gate scratch (16 columns wider in the sequence kernel) and the hybrid kernels' eleven more,
    'Lstm_row_sums' with a row per gate matrix and projection block."""
    batch, n_input, n_cell = 3, 11, 5
    n_output = 3 if "projection" in config else n_cell
    source = (batch, 4, n_input) if op == Op.UNIDIRECTIONAL_SEQUENCE_LSTM else (batch, n_input)
    inputs = _lstm_inputs(RNG, source, n_cell, n_output, batch, hybrid=hybrid, **LSTM_CONFIGS[config])
    options = {"fused_activation_function": "TANH"}
    if op == Op.UNIDIRECTIONAL_SEQUENCE_LSTM:
        options["time_major"] = False
    version = (2 if op == Op.UNIDIRECTIONAL_SEQUENCE_LSTM else 3) if hybrid else 1
    _assert_listed(_model(op, inputs, [(T.FLOAT32, None)], options, version)[0])


# --- corpus ------------------------------------------------------------------------------------------

CORPUS_MODELS = [
    "transformer_f32",
    "transformer_dynamic",
    "mobilenet_v2_dynamic",
    "mlp",
    "lstm",
    "gru",
    "zoo_matmul_conv",
    "stateful",
]


@pytest.mark.parametrize("name", CORPUS_MODELS)
def test_corpus_model(name):
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"the public corpus has no {path.name}")
    for resolver in RESOLVERS:
        assert_listed_as_litert(path, resolver)


def test_recurrent_temporaries_are_numbered_when_the_node_is_built():
    """An RNN after a hybrid FULLY_CONNECTED: LiteRT numbers the RNN's temporaries (added in its Init)
    before the FULLY_CONNECTED's (added at its prepare)."""
    builder = ModelBuilder()
    source = builder.add_input("x", T.FLOAT32, [3, 8])
    weights = builder.add_tensor("w", T.INT8, [5, 8], data=_int8(5, 8), quantization=_q(0.1))
    hidden = builder.add_tensor("h", T.FLOAT32, [3, 5])
    builder.add_operator(
        Op.FULLY_CONNECTED, [source, weights, -1], [hidden], {"fused_activation_function": "TANH"}
    )
    rnn = [
        builder.add_tensor(n, T.INT8, [5, 5], data=_int8(5, 5), quantization=_q(0.1)) for n in ("wi", "wr")
    ]
    bias = builder.add_tensor("b", T.FLOAT32, [5], data=np.zeros(5, np.float32))
    state = builder.add_tensor("state", T.FLOAT32, [3, 5], is_variable=True)
    output = builder.add_tensor("out", T.FLOAT32, [3, 5])
    builder.add_output(output)
    builder.add_operator(
        Op.RNN, [hidden, *rnn, bias, state], [output], {"fused_activation_function": "TANH"}, version=2
    )
    _assert_listed(builder.build())

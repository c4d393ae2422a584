"""The x86-only integer quirks of LiteRT's kernels apply on x86 host profiles only.

Each test builds a model where one quirk triggers and checks that (a) with this machine's (x86) profile
the output equals LiteRT's, (b) with the aarch64 profile it equals the exact math, computed here in
NumPy, which LiteRT's x86 output is not. The hybrid inputs quantize to themselves, so that the exact
math is plain integer products: symmetric, integers with a 127 in every row (scale 1); asymmetric,
integers in [0, 255] with 0 and 255 in every row (scale 1, zero point -128). Weight scales are powers of
two and every sum stays below 2**24, so the expected floats are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import KNOWN_PROFILES, HostProfile, TensorType
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import BuiltinOperator as Op
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_matches, litert, litert_interpreter, requires_litert, run

T = TensorType
SCALE = 2.0**-6  # the weight scale
LONG = 4112  # a depth whose row of 127s wraps SSE's int16 lane sums (257 blocks of 16)
_CONV = {"padding": "VALID", "stride_h": 1, "stride_w": 1}

pytestmark = [
    requires_litert,
    pytest.mark.skipif(not HostProfile.detect().x86, reason="LiteRT's x86 outputs need an x86 host"),
]


def _model(op, inputs, out_type=T.FLOAT32, options=None, version=1, out_q=None) -> tuple[bytes, list]:
    """One operator; `inputs` are (value, constant, quantization) triples."""
    builder = ModelBuilder()
    indices, feeds = [], []
    for i, (value, constant, quantization) in enumerate(inputs):
        kind = tensor_type_for_dtype(value.dtype)
        if constant:
            tensor = builder.add_tensor(f"c{i}", kind, value.shape, data=value, quantization=quantization)
            indices.append(tensor)
        else:
            indices.append(builder.add_input(f"in{i}", kind, value.shape, quantization=quantization))
            feeds.append(value)
    output = builder.add_tensor("out", out_type, [], quantization=out_q)
    builder.add_output(output)
    builder.add_operator(op, indices, [output], options, version=version)
    return builder.build(), feeds


def _check(model, feeds, exact, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES") -> None:
    """(a) the x86 profile gives LiteRT's output; (b) the aarch64 profile gives `exact`, LiteRT's isn't."""
    kind = getattr(litert.OpResolverType, resolver)
    theirs = run(litert_interpreter(model, experimental_op_resolver_type=kind), feeds)[0]
    x86 = run(pytflite.Interpreter(model_content=model, experimental_op_resolver_type=kind), feeds)[0]
    assert_matches(x86, theirs, what="x86 profile vs LiteRT")
    arm = pytflite.Interpreter(
        model_content=model,
        experimental_op_resolver_type=kind,
        experimental_host_profile=KNOWN_PROFILES["aarch64"],
    )
    ours = run(arm, feeds)[0]
    exact = np.asarray(exact).astype(ours.dtype).reshape(ours.shape)
    np.testing.assert_array_equal(ours, exact, err_msg="aarch64 profile vs the exact math")
    assert not np.array_equal(theirs, exact), "the quirk did not trigger: this test could not fail"


def _symmetric_rows(rng, rows, depth) -> np.ndarray:
    """Integers in [-127, 127], a 127 in every row, negative in the first 16 columns."""
    x = rng.integers(-127, 128, size=(rows, depth))
    x[:, :16] = -rng.integers(1, 128, size=(rows, 16))
    x[:, -1] = 127
    return x.astype(np.float32)


def _asymmetric_rows(rng, rows, depth) -> np.ndarray:
    """Integers in [0, 255] (mostly small), 0 and 255 in every row."""
    x = rng.integers(0, 4, size=(rows, depth))
    x[:, 0], x[:, -1] = 0, 255
    return x.astype(np.float32)


def _weights_with_minus_128(rng, units, depth) -> np.ndarray:
    w = rng.integers(-127, 128, size=(units, depth))
    w[:, 1:16:3] = -128  # inside the first 16-value block, where the inputs are negative
    return w.astype(np.int8)


def _long_weights(rng, units) -> np.ndarray:
    """Row 0 all 127 (its SSE lane sums wrap), the others small random."""
    w = rng.integers(-127, 128, size=(units, LONG))
    w[0] = 127
    return w.astype(np.int8)


def _exact(x, w_t) -> np.ndarray:
    """x @ w_t as float32 times SCALE (the integer sums are exact below 2**24)."""
    product = x.astype(np.int64) @ w_t.astype(np.int64)
    assert np.abs(product).max() < 2**24
    return product.astype(np.float32) * np.float32(SCALE)


# ---- the SSE hybrid kernels: sign transfer of -128 weights, int16 lane row sums --------------------


@pytest.mark.parametrize("constant", [True, False], ids=["constant", "runtime"])
def test_hybrid_fully_connected_sign_transfer(constant):
    rng = np.random.default_rng(1)
    x, w = _symmetric_rows(rng, 2, 32), _weights_with_minus_128(rng, 3, 32)
    model, feeds = _model(Op.FULLY_CONNECTED, [(x, False, None), (w, constant, (SCALE, 0))], version=12)
    _check(model, feeds, _exact(x, w.T))


def test_hybrid_fully_connected_row_sums():
    rng = np.random.default_rng(2)
    x, w = _asymmetric_rows(rng, 2, LONG), _long_weights(rng, 3)
    options = {"asymmetric_quantize_inputs": True}
    inputs = [(x, False, None), (w, True, (SCALE, 0))]
    model, feeds = _model(Op.FULLY_CONNECTED, inputs, options=options, version=12)
    _check(model, feeds, _exact(x, w.T))


def test_hybrid_batch_matmul_row_sums():
    rng = np.random.default_rng(3)
    x, w = _asymmetric_rows(rng, 2, LONG), _long_weights(rng, 3)
    rhs = np.ascontiguousarray(w.T)  # [depth, cols]
    options = {"asymmetric_quantize_inputs": True}
    inputs = [(x[None], False, None), (rhs, True, (SCALE, 0))]
    model, feeds = _model(Op.BATCH_MATMUL, inputs, options=options, version=4)
    _check(model, feeds, _exact(x, w.T))


def test_hybrid_conv2d_sign_transfer():
    """Per-tensor filter scale with 3 output channels (not a multiple of 4): TFLite's SSE dot product."""
    rng = np.random.default_rng(4)
    x, w = _symmetric_rows(rng, 4, 32), _weights_with_minus_128(rng, 3, 32)
    x[1:, -1] = -5  # one 127 per batch is enough: the whole batch is quantized at once
    filter_q = AffineQuantization(np.full(3, SCALE, np.float32), np.zeros(3, np.int64), 0)
    inputs = [(x.reshape(1, 2, 2, 32), False, None), (w.reshape(3, 1, 1, 32), True, filter_q)]
    inputs.append((np.zeros(3, np.float32), True, None))
    model, feeds = _model(Op.CONV_2D, inputs, options=_CONV, version=2)
    _check(model, feeds, _exact(x, w.T))


def test_hybrid_conv2d_row_sums():
    """Distinct per-channel filter scales: asymmetric inputs, zero point times the filter's row sums."""
    rng = np.random.default_rng(5)
    x, w = _asymmetric_rows(rng, 1, LONG), _long_weights(rng, 3)
    scales = np.array([SCALE, SCALE / 2, SCALE], np.float32)
    filter_q = AffineQuantization(scales, np.zeros(3, np.int64), 0)
    inputs = [(x.reshape(1, 1, 1, LONG), False, None), (w.reshape(3, 1, 1, LONG), True, filter_q)]
    inputs.append((np.zeros(3, np.float32), True, None))
    model, feeds = _model(Op.CONV_2D, inputs, options=_CONV, version=2)
    exact = (x.astype(np.int64) @ w.T.astype(np.int64)).astype(np.float32) * scales
    _check(model, feeds, exact)


def test_hybrid_rnn_sign_transfer():
    """RNN's hybrid input product; the state starts at zero, so the output is x @ W^T * scale."""
    rng = np.random.default_rng(6)
    x, w = _symmetric_rows(rng, 2, 32), _weights_with_minus_128(rng, 3, 32)
    recurrent = rng.integers(-127, 128, size=(3, 3)).astype(np.int8)
    builder = ModelBuilder()
    inputs = [
        builder.add_input("x", T.FLOAT32, x.shape),
        builder.add_tensor("w", T.INT8, w.shape, data=w, quantization=(SCALE, 0)),
        builder.add_tensor("r", T.INT8, recurrent.shape, data=recurrent, quantization=(SCALE, 0)),
        builder.add_tensor("b", T.FLOAT32, [3], data=np.zeros(3, np.float32)),
        builder.add_tensor("h", T.FLOAT32, [2, 3], is_variable=True),
    ]
    output = builder.add_tensor("out", T.FLOAT32, [])
    builder.add_output(output)
    builder.add_operator(Op.RNN, inputs, [output], {"fused_activation_function": "NONE"}, version=2)
    _check(builder.build(), [x], _exact(x, w.T))


# ---- float -> int32 conversions: x86 gives INT32_MIN out of range and for NaN; ARM saturates ----------


def _saturated(values) -> np.ndarray:
    """C's float -> int32 conversion on ARM: truncation, saturation, NaN to 0."""
    values = np.asarray(values, np.float64)
    clipped = np.clip(np.nan_to_num(values, nan=0.0), -(2.0**31), 2.0**31 - 1)
    return np.trunc(clipped).astype(np.int64)


@pytest.mark.parametrize("resolver", ["BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"])
def test_quantize_out_of_range(resolver):
    """Values past int32 and NaN, in the 8-value blocks and the tail of the optimized kernel."""
    x = np.array([3e9, -3e9, np.nan, 1.0, 5e9, 2.0, np.nan, -1.0, 4e9, -4e9, np.nan, 3.0], np.float32)
    model, feeds = _model(Op.QUANTIZE, [(x, False, None)], T.INT8, out_q=(1.0, 0))
    _check(model, feeds, np.clip(_saturated(np.round(x.astype(np.float64))), -128, 127), resolver)


def test_sqrt_out_of_range():
    """An output scale so small that sqrt(x) / scale passes int32 for every x above 0."""
    x = np.arange(-128, 128).astype(np.int8)
    in_scale, out_scale = 1.0, 1e-9
    model, feeds = _model(Op.SQRT, [(x, False, (in_scale, -128))], T.INT8, out_q=(out_scale, 0))
    quotient = np.sqrt(x.astype(np.float32) + np.float32(128)) / np.float32(out_scale)
    _check(model, feeds, np.clip(_saturated(quotient), -128, 127))


def test_int_pow_out_of_range():
    base = np.array([3, -3, 2, 7], np.int32)
    exponent = np.array([40, 41, 10, 30], np.int32)
    model, feeds = _model(Op.POW, [(base, False, None), (exponent, False, None)], T.INT32)
    _check(model, feeds, _saturated(base.astype(np.float64) ** exponent.astype(np.float64)))


def test_quantized_sum_out_of_range():
    """The optimized 8-bit SUM requantizes in float32: an output scale this small passes int32."""
    x = np.array([[100, 27, -3], [-100, -27, 1]], np.int8)
    axis = np.array([1], np.int32)
    out_scale = 1e-9
    inputs = [(x, False, (1.0, 0)), (axis, True, None)]
    model, feeds = _model(Op.SUM, inputs, T.INT8, options={"keep_dims": False}, out_q=(out_scale, 0))
    value = x.astype(np.float32).sum(axis=1) * np.float32(1.0 / out_scale)
    _check(model, feeds, np.clip(_saturated(np.round(value)), -128, 127))


def test_reference_fully_connected_requantization_out_of_range():
    """BUILTIN_REF's int8 FULLY_CONNECTED: round(double(acc) * scale), converted to int32, past int32."""
    x = np.array([[100, -100, 3, 0]], np.int8)
    w = np.array([[100, -100, 0, 0], [1, 0, 0, 0], [-100, 100, 0, 0]], np.int8)
    out_scale = 1e-6
    inputs = [(x, False, (1.0, 0)), (w, True, (1.0, 0))]
    model, feeds = _model(Op.FULLY_CONNECTED, inputs, T.INT8, version=12, out_q=(out_scale, 0))
    acc = x.astype(np.int64) @ w.T.astype(np.int64)
    exact = np.clip(_saturated(np.round(acc * (1.0 / out_scale))), -128, 127)
    _check(model, feeds, exact, "BUILTIN_REF")


def _x86_matches_litert_and_arm_differs(model, feeds) -> None:
    """For conversions whose ARM result only TFLite's own code defines: the x86 profile gives LiteRT's
    output, and the aarch64 profile (saturating conversions) gives another."""
    theirs = run(litert_interpreter(model), feeds)[0]
    x86 = run(pytflite.Interpreter(model_content=model), feeds)[0]
    np.testing.assert_array_equal(x86, theirs)
    arm = pytflite.Interpreter(model_content=model, experimental_host_profile=KNOWN_PROFILES["aarch64"])
    assert not np.array_equal(run(arm, feeds)[0], theirs)


def test_relu_bound_past_int32():
    """RELU6's upper bound 6 / output scale past int32: INT32_MIN on x86 (every output clamps to the
    wrapped bound), INT32_MAX on ARM (no upper clamp)."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    model, feeds = _model(Op.RELU6, [(x, False, (1.0, 0))], T.INT8, out_q=(1e-12, 0))
    _x86_matches_litert_and_arm_differs(model, feeds)


def test_int16_logistic_multiplier_past_int32():
    """An int16 LOGISTIC whose input rescaling multiplier (input scale x 3 x 4096) passes int32."""
    x = np.arange(-300, 300, 3, dtype=np.int16)
    model, feeds = _model(Op.LOGISTIC, [(x, False, (2.0e5, 0))], T.INT16, out_q=(1.0 / 32768, 0))
    _x86_matches_litert_and_arm_differs(model, feeds)

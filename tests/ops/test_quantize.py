"""DEQUANTIZE against LiteRT: per-tensor and per-channel int8/uint8/int16, packed int4/uint4/int2,
float16, runtime and constant inputs (a constant's output is computed once, in prepare).

Dequantized values must match LiteRT bit for bit, with its optimized kernel (per-tensor: blocks of 8
rounded twice, the rest once) and with BUILTIN_REF's reference kernel (everything rounded once).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import AllocationType
from pytflite.model.builder import ModelBuilder
from tests.oracle import compare_with_litert, litert, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

TYPES = {np.dtype(np.int8): T.INT8, np.dtype(np.uint8): T.UINT8, np.dtype(np.int16): T.INT16}
SCALES = st.floats(float(np.float32(1e-6)), 1e3, width=32)


def both(model, feeds=(), **kwargs):
    ours = run(pytflite.Interpreter(model_content=model, **kwargs), feeds)[0]
    theirs = run(litert_interpreter(model, **kwargs), feeds)[0]
    return ours, theirs


def assert_identical(ours, theirs):
    assert ours.dtype == theirs.dtype == np.float32 and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs, equal_nan=True), (ours, theirs)
    assert np.array_equal(np.signbit(ours), np.signbit(theirs))


def dequantize_model(value, quantization, constant, tensor_type=None):
    operand = Operand(value, constant=constant, type=tensor_type, quantization=quantization)
    return SingleOpModel(Op.DEQUANTIZE, [operand], [T.FLOAT32], version=2).build()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_per_tensor(data, kernels):
    dtype = data.draw(st.sampled_from(sorted(TYPES, key=str)))
    info = np.iinfo(dtype)
    q = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, max_side=6)))
    zero_point = 0 if dtype == np.int16 else data.draw(st.integers(int(info.min), int(info.max)))
    quantization = (data.draw(SCALES), zero_point)
    assert_identical(*both(*dequantize_model(q, quantization, data.draw(st.booleans()))))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_per_channel(data):
    dtype = data.draw(st.sampled_from([np.int8, np.uint8]))
    info = np.iinfo(dtype)
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    axis = data.draw(st.integers(0, len(shape) - 1))
    channels = shape[axis]
    if channels == 1:
        return  # one scale is per-tensor quantization
    q = data.draw(hnp.arrays(dtype, shape))
    scales = data.draw(st.lists(SCALES, min_size=channels, max_size=channels))
    zero_points = data.draw(
        st.lists(st.integers(int(info.min), int(info.max)), min_size=channels, max_size=channels)
    )
    quantization = AffineQuantization(scales, zero_points, axis)
    assert_identical(*both(*dequantize_model(q, quantization, data.draw(st.booleans()))))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_reference_kernel(data, kernels):
    # BUILTIN_REF rounds every element once; the optimized kernel rounds blocks of 8 twice
    dtype = data.draw(st.sampled_from(sorted(TYPES, key=str)))
    info = np.iinfo(dtype)
    q = data.draw(hnp.arrays(dtype, st.integers(8, 40)))
    zero_point = 0 if dtype == np.int16 else data.draw(st.integers(int(info.min), int(info.max)))
    scale = data.draw(SCALES)
    model, feeds = dequantize_model(q, (scale, zero_point), data.draw(st.booleans()))
    ours, theirs = both(model, feeds, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    assert_identical(ours, theirs)
    exact = (np.float64(np.float32(scale)) * (q.astype(np.int64) - zero_point)).astype(np.float32)
    assert np.array_equal(ours, exact)


def test_extreme_values(kernels):
    q = np.array([-32768, -32767, -1, 0, 1, 32767], np.int16)
    for scale in (1e-45, 1e-30, 3.4e38, 1.0, 0.1):
        assert_identical(*both(*dequantize_model(q, (scale, 0), False)))
    q8 = np.arange(-128, 128, dtype=np.int8)
    assert_identical(*both(*dequantize_model(q8, (0.0039215689, -128), True)))
    ref = {"experimental_op_resolver_type": litert.OpResolverType.BUILTIN_REF}
    for zero_point in (2**28 + 1, -(2**30) - 7):  # q - zero point inexact in float32: int32 arithmetic
        assert_identical(*both(*dequantize_model(q8, (0.37, zero_point), False), **ref))


def test_no_quantization_gives_zeros():
    # TFLite reads the legacy (scale, zero_point) = (0, 0) pair
    ours, theirs = both(*dequantize_model(np.array([-3, 0, 5], np.int8), None, False))
    assert_identical(ours, theirs)
    assert not ours.any()


def test_float16_every_value():
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(16, 4096)
    for constant in (False, True):
        assert_identical(*both(*dequantize_model(x, None, constant)))


def _packed_model(tensor_type, shape, data, quantization):
    builder = ModelBuilder()
    source = builder.add_tensor("c", tensor_type, shape, data=data, quantization=quantization)
    output = builder.add_tensor("out", T.FLOAT32, [1])
    builder.add_output(output)
    builder.add_operator(Op.DEQUANTIZE, [source], [output], version=6)
    return builder.build()


@pytest.mark.parametrize("tensor_type", [T.INT4, T.UINT4, T.INT2], ids=lambda t: t.name)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("per_channel", [False, True])
def test_packed(tensor_type, shape, per_channel):
    rng = np.random.default_rng(len(shape))
    count = int(np.prod(shape))
    per_byte = 4 if tensor_type == T.INT2 else 2
    data = rng.integers(0, 256, -(-count // per_byte), dtype=np.uint8)
    if per_channel:
        channels = shape[-1]
        quantization = AffineQuantization(
            rng.uniform(0.01, 2, channels), rng.integers(-2, 2, channels), len(shape) - 1
        )
    else:
        quantization = (0.37, 1)
    assert_identical(*both(_packed_model(tensor_type, shape, data.tobytes(), quantization)))


def test_constant_input_is_dequantized_once_in_prepare():
    weights = np.random.default_rng(0).standard_normal([4, 3]).astype(np.float16)
    model, _ = dequantize_model(weights, None, True)
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    index = interpreter.get_output_details()[0]["index"]
    tensor = interpreter.subgraphs[0].tensors[index]
    assert tensor.allocation_type == AllocationType.PERSISTENT_RO
    before = interpreter.get_tensor(index)
    assert np.array_equal(before, weights.astype(np.float32))  # ready before the first invoke
    data = tensor.data
    assert not data.flags.writeable  # shared by the model's interpreters (core/derived.py)
    interpreter.invoke()  # would raise if it computed into it again
    assert interpreter.subgraphs[0].tensors[index].data is data
    assert np.array_equal(interpreter.get_tensor(index), before)


def test_fp16_weights_feeding_another_op():
    # the mobilenet_v2_fp16 pattern: float16 constant -> DEQUANTIZE -> a float op with runtime input
    rng = np.random.default_rng(1)
    weights = rng.standard_normal([2, 5]).astype(np.float16)
    builder = ModelBuilder()
    constant = builder.add_tensor("w16", T.FLOAT16, weights.shape, data=weights)
    dequantized = builder.add_tensor("w", T.FLOAT32, weights.shape)
    x = builder.add_input("x", T.FLOAT32, weights.shape)
    out = builder.add_tensor("out", T.FLOAT32, weights.shape)
    builder.add_output(out)
    builder.add_operator(Op.DEQUANTIZE, [constant], [dequantized], version=3)
    builder.add_operator(Op.ADD, [x, dequantized], [out])
    model = builder.build()
    feeds = [rng.standard_normal(weights.shape).astype(np.float32)]
    interpreter = pytflite.Interpreter(model_content=model)
    for _ in range(2):
        ours = run(interpreter, feeds)[0]
        assert_identical(ours, run(litert_interpreter(model), feeds)[0])


def test_runtime_input_resized():
    model, _ = dequantize_model(np.zeros([2], np.uint8), (0.5, 3), False)
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], [2, 3])
    q = np.arange(6, dtype=np.uint8).reshape(2, 3)
    (out,) = run(interpreter, [q])
    assert np.array_equal(out, (q.astype(np.float32) - 3) * 0.5)


def _prepare_error(model):
    with pytest.raises(RuntimeError) as error:
        pytflite.Interpreter(model_content=model).allocate_tensors()
    return str(error.value)


def test_invalid_inputs():
    model, _ = dequantize_model(np.zeros(2, np.int16), (0.5, 3), False)
    assert "DEQUANTIZE int16 input zero point 3 != 0" in _prepare_error(model)
    model, _ = dequantize_model(np.zeros(2, np.int16), AffineQuantization([0.5, 0.25], [0, 0]), True)
    assert "Type INT16 not supported for per-channel dequantization." in _prepare_error(model)
    model, _ = dequantize_model(np.zeros(2, np.int32), (0.5, 0), False)
    message = _prepare_error(model)
    assert "Type INT32 (input) is unsupported by op DEQUANTIZE." in message
    assert "Node number 0 (DEQUANTIZE) failed to prepare." in message
    model, _ = SingleOpModel(Op.DEQUANTIZE, [Operand(np.zeros(2, np.float16))], [T.FLOAT16]).build()
    assert "DEQUANTIZE output type: FLOAT16 != FLOAT32" in _prepare_error(model)


# --- QUANTIZE -----------------------------------------------------------------------------------------

RESOLVERS = ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")
INT_TYPES = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16, T.INT32: np.int32}


def quantize_model(value, output_type, quantization, input_quantization=None):
    operand = Operand(value, quantization=input_quantization)
    return SingleOpModel(
        Op.QUANTIZE, [operand], [output_type], output_quantization=[quantization], output_shapes=[value.shape]
    ).build()


def assert_same(model, feeds, resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES"):
    return compare_with_litert(model, feeds, rtol=0, resolver=resolver)[0]


def near_halves(rng, scale, count):
    """Floats whose quotient by `scale` lies on or next to a .5, where roundings differ."""
    k = rng.integers(-300, 300, count).astype(np.float64) + 0.5
    x = (k * np.float64(np.float32(scale))).astype(np.float32)
    return np.concatenate([x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))])


@settings(max_examples=30, deadline=None)
@given(
    output_type=st.sampled_from([T.INT8, T.UINT8, T.INT16]),
    scale=SCALES,
    zero_fraction=st.floats(0, 1),
    seed=st.integers(0, 2**16),
    resolver=st.sampled_from(RESOLVERS),
)
def test_quantize_float_per_tensor(output_type, scale, zero_fraction, seed, resolver):
    info = np.iinfo(INT_TYPES[output_type])
    zero_point = int(info.min + zero_fraction * (int(info.max) - int(info.min)))
    rng = np.random.default_rng(seed)
    x = np.concatenate(
        [near_halves(rng, scale, 20), (rng.standard_normal(20) * scale * 200).astype(np.float32)]
    )
    assert_same(*quantize_model(x, output_type, (scale, zero_point)), resolver)


def test_quantize_optimized_kernel_rounds_blocks_of_8_half_to_even():
    # BuiltinOpResolver's kernel rounds whole blocks of 8 half to even and the rest half away from
    # zero; BUILTIN_REF rounds everything half away from zero.
    x = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 100.5] * 2 + [0.5, 2.5, -2.5], np.float32)
    model, feeds = quantize_model(x, T.INT8, (1.0, 0))
    optimized = assert_same(model, feeds, RESOLVERS[0])
    reference = assert_same(model, feeds, RESOLVERS[1])
    assert optimized[:16].tolist() == [0, 2, 2, 4, 0, -2, -2, 100] * 2
    assert optimized[16:].tolist() == reference[16:].tolist() == [1, 3, -3]
    assert reference[:8].tolist() == [1, 2, 3, 4, -1, -2, -3, 101]


@pytest.mark.parametrize("output_type", [T.INT8, T.UINT8, T.INT16, T.INT4, T.UINT4], ids=lambda t: t.name)
@pytest.mark.parametrize("zero_point", [-7, 0, 3])
def test_quantize_non_finite_and_huge_values(output_type, zero_point):
    if output_type in (T.UINT8, T.UINT4):
        zero_point = abs(zero_point)
    x = np.array([np.inf, -np.inf, np.nan, 3e38, -3e38, 1e10, -1e10, 2.5, -2.5, 0.0], np.float32)
    for resolver in RESOLVERS:
        assert_same(*quantize_model(x, output_type, (0.5, zero_point)), resolver)


@pytest.mark.parametrize("output_type", [T.INT4, T.UINT4], ids=lambda t: t.name)
def test_quantize_to_packed_types(output_type):
    rng = np.random.default_rng(3)
    x = np.concatenate([near_halves(rng, 0.25, 6), rng.uniform(-3, 5, 15).astype(np.float32)]).reshape(3, 11)
    zero_point = 1 if output_type == T.INT4 else 4
    ours = assert_same(*quantize_model(x, output_type, (0.25, zero_point)))
    assert ours.shape == (3, 11)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_quantize_float_per_channel(data):
    output_type = data.draw(st.sampled_from([T.INT8, T.UINT8, T.INT16]))
    info = np.iinfo(INT_TYPES[output_type])
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=2, max_side=5))
    axis = data.draw(st.integers(0, len(shape) - 1))
    channels = shape[axis]
    scales = data.draw(st.lists(SCALES, min_size=channels, max_size=channels))
    zero_points = data.draw(
        st.lists(st.integers(int(info.min), int(info.max)), min_size=channels, max_size=channels)
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    view = [1] * len(shape)
    view[axis] = channels
    x = (rng.integers(-400, 400, shape) + 0.5) * np.array(scales, np.float64).reshape(view)
    x = x.astype(np.float32)
    quantization = AffineQuantization(scales, zero_points, axis)
    assert_same(*quantize_model(x, output_type, quantization), data.draw(st.sampled_from(RESOLVERS)))


REQUANTIZE_PAIRS = [
    (T.INT8, T.INT8),
    (T.INT8, T.UINT8),
    (T.INT8, T.INT16),
    (T.UINT8, T.UINT8),
    (T.UINT8, T.INT8),
    (T.UINT8, T.INT16),
    (T.INT16, T.INT8),
    (T.INT16, T.INT16),
    (T.INT16, T.INT32),
    (T.INT32, T.INT8),
    (T.INT32, T.INT16),
]


def _zero_point(rng, tensor_type, source):
    if (tensor_type == T.INT16 and source == T.INT16) or tensor_type == T.INT32:
        return 0
    info = np.iinfo(INT_TYPES[tensor_type])
    return int(rng.integers(max(int(info.min), -300), min(int(info.max), 300) + 1))


@pytest.mark.parametrize("pair", REQUANTIZE_PAIRS, ids=lambda p: f"{p[0].name}-{p[1].name}")
def test_requantize(pair):
    source, target = pair
    rng = np.random.default_rng(int(source) * 31 + int(target))
    info = np.iinfo(INT_TYPES[source])
    if source == T.INT32:
        q = rng.integers(-(2**20), 2**20, 500).astype(np.int32)
    else:
        q = np.arange(int(info.min), int(info.max) + 1, dtype=INT_TYPES[source])
    for scale_ratio in (1.0, 0.37, 3.1, 1e-3, 250.0):
        in_scale = float(rng.uniform(0.01, 1.0))
        in_zero = _zero_point(rng, source, target if source == T.INT16 else source)
        out_zero = _zero_point(rng, target, source)
        model, feeds = quantize_model(q, target, (in_scale / scale_ratio, out_zero), (in_scale, in_zero))
        for resolver in RESOLVERS:
            assert_same(model, feeds, resolver)


def test_requantize_int8_uint8_shift_by_128():
    q = np.arange(-128, 128, dtype=np.int8)
    model, feeds = quantize_model(q, T.UINT8, (0.5, 128), (0.5, 0))
    out = assert_same(model, feeds)
    assert np.array_equal(out, (q.astype(np.int16) + 128).astype(np.uint8))


@pytest.mark.parametrize(
    "value, output_type, message",
    [
        (
            np.zeros(3, np.float32),
            T.INT32,
            "Input type FLOAT32 with Output type INT32 is not currently supported.",
        ),
        (np.zeros(3, np.int8), T.INT32, "Input type INT8 with Output type INT32 is not currently supported."),
        (
            np.zeros(3, np.int32),
            T.UINT8,
            "Input type INT32 with Output type UINT8 is not currently supported.",
        ),
        (np.zeros(3, np.float16), T.INT8, "Type FLOAT16 \\(input\\) is unsupported by op QUANTIZE."),
    ],
)
def test_quantize_unsupported_types(value, output_type, message):
    model, feeds = quantize_model(value, output_type, (0.5, 0), None if value.dtype.kind == "f" else (0.5, 0))
    with pytest.raises(RuntimeError, match=message):
        run(pytflite.Interpreter(model_content=model), feeds)


def test_quantize_invalid_quantization():
    model, feeds = quantize_model(np.zeros(3, np.float32), T.INT8, None)
    with pytest.raises(RuntimeError, match="kTfLiteAffineQuantization"):
        run(pytflite.Interpreter(model_content=model), feeds)
    model, feeds = quantize_model(np.zeros(3, np.int16), T.INT16, (0.5, 2), (0.5, 0))
    with pytest.raises(RuntimeError, match="QUANTIZE int16 output zero point 2 != 0"):
        run(pytflite.Interpreter(model_content=model), feeds)
    per_channel = AffineQuantization([0.5, 0.25], [0, 0], 0)
    model, feeds = quantize_model(np.zeros(2, np.float32), T.INT4, per_channel)
    with pytest.raises(
        RuntimeError, match="Input type FLOAT32 with Output type INT4 is not currently supported."
    ):
        run(pytflite.Interpreter(model_content=model), feeds)

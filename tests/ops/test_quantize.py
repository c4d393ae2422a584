"""DEQUANTIZE against LiteRT: per-tensor and per-channel int8/uint8/int16, packed int4/uint4/int2,
float16, runtime and constant inputs (a constant's output is computed once, in prepare).

Dequantized values must match LiteRT bit for bit, with its optimized kernel (per-tensor: blocks of 8
rounded twice, the rest once) and with BUILTIN_REF's reference kernel (everything rounded once).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import AllocationType
from pytflite.model.builder import ModelBuilder
from pytflite.ops.quantize import pack_into, unpack_packed
from tests.oracle import litert, litert_interpreter, requires_litert, run
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


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_per_tensor(data):
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


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_reference_kernel(data):
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


def test_extreme_values():
    q = np.array([-32768, -32767, -1, 0, 1, 32767], np.int16)
    for scale in (1e-45, 1e-30, 3.4e38, 1.0, 0.1):
        assert_identical(*both(*dequantize_model(q, (scale, 0), False)))
    q8 = np.arange(-128, 128, dtype=np.int8)
    assert_identical(*both(*dequantize_model(q8, (0.0039215689, -128), True)))


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


@pytest.mark.parametrize("tensor_type", [T.INT4, T.UINT4, T.INT2], ids=lambda t: t.name)
def test_pack_unpack_round_trip(tensor_type):
    low, high = {T.INT4: (-8, 7), T.UINT4: (0, 15), T.INT2: (-2, 1)}[tensor_type]
    values = np.arange(low, high + 1, dtype=np.int8).repeat(3)[:-1]  # an odd count
    per_byte = 4 if tensor_type == T.INT2 else 2
    packed = np.zeros(-(-values.size // per_byte), np.uint8 if tensor_type == T.UINT4 else np.int8)
    pack_into(values, tensor_type, packed)
    assert np.array_equal(unpack_packed(packed, values.size, tensor_type), values)


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
    tensor.data[...] = -1  # invoke does not compute again
    interpreter.invoke()
    assert np.all(interpreter.get_tensor(index) == -1)


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

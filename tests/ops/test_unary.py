"""Unary math, CAST and ZEROS_LIKE against LiteRT, and quantized int8/int16 ABS, EXP, LOG, SQRT, RSQRT
(every input value, bit-exact) and NEG.

The exact ops (ABS, NEG, SQRT, RSQRT, SQUARE, FLOOR, CEIL, ROUND, SIGN, CAST) must match bit for bit, the
sign of zero included (NaN payloads aside); EXP, LOG, SIN and COS within the float32 tolerance rule.
bfloat16 tensors are fed as constants holding raw bits (LiteRT reports them as ml_dtypes.bfloat16,
pytflite as uint16 bits); packed int4/uint4/int2 outputs are unpacked before comparing (LiteRT's
get_tensor returns them unpacked).
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
from pytflite.core.types import storage_dtype, tensor_type_for_dtype
from tests.oracle import assert_matches, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

EXACT = [Op.ABS, Op.NEG, Op.SQRT, Op.RSQRT, Op.SQUARE, Op.FLOOR, Op.CEIL, Op.ROUND, Op.SIGN]
TRANSCENDENTAL = [Op.EXP, Op.LOG, Op.SIN, Op.COS]
EDGES = np.array(
    [
        *(
            0,
            -0.0,
            1e-45,
            -1e-45,
            1e-38,
            -1e-38,
            0.3,
            -0.3,
            0.5,
            -0.5,
            1,
            -1,
            1.5,
            -1.5,
            2.5,
            -2.5,
            3.7,
            -3.7,
        ),
        *(88.7, 89, -87.3, -104, 8388607.5, -8388607.5, 1e10, -1e10, 1e30, -1e30, 3.4e38, -3.4e38),
        *(np.inf, -np.inf, np.nan),
    ],
    np.float32,
)


def _op_name(value):
    return value.name


def _tensor_type(dtype):
    return tensor_type_for_dtype(np.dtype(dtype))


def outputs(op, operands, out_type, options=None, version=1):
    """(pytflite's output, LiteRT's output) of a one-op model."""
    model, feeds = SingleOpModel(op, operands, [out_type], options, version).build()
    ours = run(pytflite.Interpreter(model_content=model), feeds)[0]
    theirs = run(litert_interpreter(model), feeds)[0]
    return ours, theirs


def assert_identical(ours, theirs, what=""):
    """Same dtype, shape and values; floats also the same sign of zero and NaN positions."""
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (what, ours.dtype, theirs.dtype)
    assert np.array_equal(ours, theirs, equal_nan=ours.dtype.kind in "fc"), (what, ours, theirs)
    if ours.dtype.kind == "f":
        assert np.array_equal(np.signbit(ours), np.signbit(theirs)), (what, ours, theirs)
    if ours.dtype.kind == "c":
        assert_identical(ours.real.copy(), theirs.real.copy(), what)
        assert_identical(ours.imag.copy(), theirs.imag.copy(), what)


def assert_bfloat16_bits(ours, theirs):
    assert ours.dtype == np.uint16, ours.dtype
    theirs = theirs.view(np.uint16)
    assert np.array_equal(ours, theirs), (ours[ours != theirs], theirs[ours != theirs])


# --- float32 math -----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", EXACT, ids=_op_name)
@settings(max_examples=15, deadline=None)
@given(
    x=hnp.arrays(
        np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=5), elements=st.floats(width=32)
    )
)
def test_exact_float_ops(op, x):
    assert_identical(*outputs(op, [Operand(x)], T.FLOAT32), op.name)


@pytest.mark.parametrize("op", EXACT, ids=_op_name)
def test_exact_float_ops_on_edge_values(op):
    assert_identical(*outputs(op, [Operand(EDGES)], T.FLOAT32), op.name)


@pytest.mark.parametrize("op", TRANSCENDENTAL, ids=_op_name)
@settings(max_examples=15, deadline=None)
@given(
    x=hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=0, max_dims=4, max_side=5),
        elements=st.floats(-100, 100, width=32),
    )
)
def test_transcendental(op, x):
    SingleOpModel(op, [Operand(x)], [T.FLOAT32]).check()


_MAGNITUDES = np.geomspace(1e-38, 3e38, 20001, dtype=np.float32)
WIDE = np.concatenate([EDGES, np.linspace(-150, 150, 30001, dtype=np.float32), _MAGNITUDES, -_MAGNITUDES])


@pytest.mark.parametrize("op", TRANSCENDENTAL, ids=_op_name)
def test_transcendental_over_wide_ranges(op):
    ours, theirs = outputs(op, [Operand(WIDE)], T.FLOAT32)
    assert_matches(ours, theirs)
    # NaN and infinities exactly where LiteRT has them (LOG(0) = -inf, LOG(-x) = NaN, EXP overflow = inf)
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.array_equal(ours[np.isinf(theirs)], theirs[np.isinf(theirs)])
    if op in (Op.EXP, Op.LOG):  # monotonic, no cancellation: even each element is within 1e-5 of LiteRT's
        finite = np.isfinite(theirs)
        np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-5, atol=0)
    else:  # SIN/COS: the tolerance rule over windows of moderate arguments too
        for window in np.array_split(np.arange(ours.size), 50):
            assert_matches(ours[window], theirs[window])


def test_log_sqrt_rsqrt_outside_their_domain():
    x = np.array([0, -0.0, -1, -1e-45, -np.inf, np.inf, np.nan, 1e-45], np.float32)
    for op in (Op.LOG, Op.SQRT, Op.RSQRT):
        ours, theirs = outputs(op, [Operand(x)], T.FLOAT32)
        assert_identical(ours, theirs, op.name)


# --- other types -------------------------------------------------------------------------------------


INTEGER_CASES = [
    (Op.ABS, np.int16),
    (Op.ABS, np.int32),
    (Op.NEG, np.int8),
    (Op.NEG, np.int16),
    (Op.NEG, np.int32),
    (Op.NEG, np.int64),
    (Op.SIGN, np.int32),
]


@pytest.mark.parametrize(
    ("op", "dtype"), INTEGER_CASES, ids=[f"{o.name}-{np.dtype(d).name}" for o, d in INTEGER_CASES]
)
def test_integer_types(op, dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([[info.min, info.min + 1, -1, 0, 1, info.max], rng.integers(info.min, info.max, 200)])
    x = x.astype(dtype).reshape(2, -1)
    assert_identical(*outputs(op, [Operand(x)], _tensor_type(dtype)))


def test_neg_of_quantized_int8_ignores_quantization():
    # TFLite's NEG negates the stored values whatever the scales and zero points
    x = np.array([-128, -3, 0, 5, 127], np.int8)
    model, feeds = SingleOpModel(
        Op.NEG, [Operand(x, quantization=(0.5, 3))], [T.INT8], output_quantization=[(0.25, -2)]
    ).build()
    ours = run(pytflite.Interpreter(model_content=model), feeds)[0]
    assert_identical(ours, run(litert_interpreter(model), feeds)[0])


def test_sign_float64():
    x = np.concatenate([EDGES.astype(np.float64), [1e300, -1e-320, 5e-324]])
    assert_identical(*outputs(Op.SIGN, [Operand(x)], T.FLOAT64))


ALL_HALVES = np.arange(1 << 16, dtype=np.uint16)


@pytest.mark.parametrize("op", [Op.NEG, Op.FLOOR, Op.ROUND, Op.SIN, Op.COS], ids=_op_name)
def test_float16_every_value(op):
    x = ALL_HALVES.view(np.float16).reshape(256, 256)
    ours, theirs = outputs(op, [Operand(x)], T.FLOAT16)
    if op in (Op.SIN, Op.COS):
        assert_matches(ours, theirs)
        assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    else:
        assert_identical(ours, theirs, op.name)


@pytest.mark.parametrize("op", [Op.NEG, Op.FLOOR, Op.ROUND], ids=_op_name)
def test_bfloat16_every_value(op):
    x = ALL_HALVES.reshape(256, 256)  # every bfloat16 bit pattern, as a constant
    ours, theirs = outputs(op, [Operand(x, constant=True, type=T.BFLOAT16)], T.BFLOAT16)
    assert_bfloat16_bits(ours, theirs)  # NaNs included: both make them quiet, keeping the sign


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(), (0,), (3, 1, 4)])
def test_zeros_like(dtype, shape):
    x = np.full(shape, 7, dtype)
    if 0 in shape:  # LiteRT is not run on empty tensors
        model, feeds = SingleOpModel(Op.ZEROS_LIKE, [Operand(x)], [_tensor_type(dtype)]).build()
        (out,) = run(pytflite.Interpreter(model_content=model), feeds)
        assert out.shape == shape and out.dtype == dtype
        return
    SingleOpModel(Op.ZEROS_LIKE, [Operand(x)], [_tensor_type(dtype)]).check()


def test_empty_input():
    # pytflite alone: an empty tensor is a degenerate model for LiteRT
    model, feeds = SingleOpModel(Op.EXP, [Operand(np.zeros([2, 0], np.float32))], [T.FLOAT32]).build()
    (out,) = run(pytflite.Interpreter(model_content=model), feeds)
    assert out.shape == (2, 0)


def test_resize_then_invoke_again():
    model, _ = SingleOpModel(Op.SQRT, [Operand(np.ones([2], np.float32))], [T.FLOAT32]).build()
    interpreter = pytflite.Interpreter(model_content=model)
    index = interpreter.get_input_details()[0]["index"]
    interpreter.resize_tensor_input(index, [3, 2])
    (out,) = run(interpreter, [np.full([3, 2], 4, np.float32)])
    assert out.shape == (3, 2) and np.all(out == 2)


# --- invalid inputs ----------------------------------------------------------------------------------


def _prepare_error(op, operands, out_type, options=None):
    model, _ = SingleOpModel(op, operands, [out_type], options).build()
    with pytest.raises(RuntimeError) as error:
        pytflite.Interpreter(model_content=model).allocate_tensors()
    return str(error.value)


def test_unsupported_types_fail_in_prepare():
    message = _prepare_error(Op.EXP, [Operand(np.zeros(2, np.int64))], T.INT64)
    assert "Type INT64 (input) is unsupported by op EXP." in message
    assert "Node number 0 (EXP) failed to prepare." in message
    assert "Type FLOAT16 (input) is unsupported by op CEIL." in _prepare_error(
        Op.CEIL, [Operand(np.zeros(2, np.float16))], T.FLOAT16
    )
    assert "ZEROS_LIKE" in _prepare_error(Op.ZEROS_LIKE, [Operand(np.zeros(2, np.bool_))], T.BOOL)


def test_quantized_errors():
    # int8 needs affine quantization on input and output (TFLite's GenericPrepare)
    plain = Operand(np.zeros(4, np.int8))
    assert "ABS of a quantized INT8 tensor needs affine quantization on its input" in _prepare_error(
        Op.ABS, [plain], T.INT8
    )
    q16 = Operand(np.zeros(4, np.int16), quantization=(0.5, 1))
    SingleOpModel(Op.ABS, [q16], [T.INT16], version=5, output_quantization=[(0.5, 0)]).fails(
        "ABS int16 input zero point 1 != 0"
    )
    # LiteRT refuses both too, and a LOG whose output lacks quantization, and an int16 EXP with zero point
    from tests.ops.test_shape import agrees_with_litert

    assert not agrees_with_litert(SingleOpModel(Op.ABS, [plain], [T.INT8], version=4))
    assert not agrees_with_litert(
        SingleOpModel(Op.ABS, [q16], [T.INT16], version=5, output_quantization=[(0.5, 0)])
    )
    q8 = Operand(np.zeros(4, np.int8), quantization=(0.5, 1))
    assert not agrees_with_litert(SingleOpModel(Op.LOG, [q8], [T.INT8], version=2))
    assert not agrees_with_litert(
        SingleOpModel(Op.EXP, [q16], [T.INT16], version=2, output_quantization=[(0.5, 0)])
    )
    # LOG, SQRT and RSQRT of plain int16: TFLite reads a table it never built (LiteRT crashes)
    for op in (Op.LOG, Op.SQRT, Op.RSQRT):
        message = _prepare_error(op, [Operand(np.zeros(4, np.int16))], T.INT16)
        assert f"{op.name} of a INT16 input needs quantization parameters" in message


def test_output_type_must_match():
    message = _prepare_error(Op.ABS, [Operand(np.zeros(2, np.float32))], T.INT32)
    assert "ABS input/output types: FLOAT32 != INT32" in message


# --- CAST ----------------------------------------------------------------------------------------------

CAST_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]
CAST_TYPES += [np.float16, np.float32, np.float64, np.complex64]
FLOAT_SAMPLES = [0, -0.0, 0.3, -0.3, 0.5, -0.5, 0.7, -0.99, 1, -1, 1.5, -1.5, 2.7, -2.7, 127.5, 128, -128.5]
FLOAT_SAMPLES += [-129, 255.5, 256, 32767.5, 32768, -32768.5, -32769, 65504, 65519, 65520, 65535.5, 65536]
FLOAT_SAMPLES += [1e-8, 6e-8, 1e-45, 16777217, 2147483520, 2**31, -(2**31), -2147483904, 4294967040, 2**32]
FLOAT_SAMPLES += [2**63, -(2**63), 1e19, -1e19, 1e20, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan]
DOUBLE_SAMPLES = [1 + 2**-11 + 2**-40, 126.99999999999, 2147483647.5, -2147483648.9, 4294967295.9]
DOUBLE_SAMPLES += [2**63 - 1024, 9.3e18, -9.3e18, 1e300, -1e300, 5e-324, 1 + 2**-24 + 2**-60]
INT_SAMPLES = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 65535, 65536, 65520]
INT_SAMPLES += [16777217, 2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**32, 2**53 + 1, 2**60 + 2**36 + 1]
INT_SAMPLES += [2**63 - 1, -(2**63)]


def cast_samples(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([True, False, True], np.bool_)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.array([v for v in INT_SAMPLES if info.min <= v <= info.max], dtype)
    values = np.array(FLOAT_SAMPLES + (DOUBLE_SAMPLES if dtype == np.float64 else []), np.float64)
    with np.errstate(over="ignore"):
        values = values.astype(dtype)
    if dtype.kind == "c":
        values = values + np.array([0, 3, 0, -1] * (values.size // 4) + [2] * (values.size % 4)) * 1j
        return values.astype(dtype)
    return values


def _name(dtype):
    return np.dtype(dtype).name


@pytest.mark.parametrize("source", CAST_TYPES, ids=_name)
def test_cast_every_pair(source):
    x = cast_samples(source)
    for target in CAST_TYPES:
        ours, theirs = outputs(Op.CAST, [Operand(x)], _tensor_type(target))
        assert_identical(ours, theirs, f"{_name(source)} -> {_name(target)}")


@pytest.mark.parametrize("source", CAST_TYPES, ids=_name)
def test_cast_to_bfloat16(source):
    x = cast_samples(source)
    ours, theirs = outputs(Op.CAST, [Operand(x)], T.BFLOAT16)
    assert_bfloat16_bits(ours, theirs)


def test_cast_from_bfloat16():
    bits = np.concatenate([ALL_HALVES[::7], [0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x4F00, 0xDF00, 0x5F00]])
    bits = bits.astype(np.uint16)
    for target in [*CAST_TYPES, "bfloat16"]:
        out_type = T.BFLOAT16 if target == "bfloat16" else _tensor_type(target)
        ours, theirs = outputs(Op.CAST, [Operand(bits, constant=True, type=T.BFLOAT16)], out_type)
        if out_type == T.BFLOAT16:
            assert_bfloat16_bits(ours, theirs)
        else:
            assert_identical(ours, theirs, f"bfloat16 -> {target}")


@pytest.mark.parametrize("target", [T.INT4, T.UINT4, T.INT2], ids=_op_name)
@pytest.mark.parametrize("count", [1, 14, 15])
def test_cast_float32_to_packed(target, count):
    x = np.array(
        [-9, -8.5, -7.9, -2.5, -0.5, 0.5, 1.9, 6.99, 7.5, 20, np.nan, 14.9, 15.5, -1.5, 1.5], np.float32
    )
    ours, theirs = outputs(Op.CAST, [Operand(x[:count])], target)  # get_tensor unpacks both
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), (ours, theirs)


@pytest.mark.parametrize("source", [T.INT4, T.UINT4, T.INT2], ids=_op_name)
@pytest.mark.parametrize("count", [1, 7, 8, 13])
def test_cast_packed_to_float32(source, count):
    packed = np.array([0x21, 0x8F, 0x7E, 0x05, 0xFF, 0x80, 0x3C], np.uint8)
    per_byte = 4 if source == T.INT2 else 2
    data = packed[: -(-count // per_byte)].view(np.int8)
    model = _packed_model(Op.CAST, source, [count], data.tobytes(), T.FLOAT32)
    ours = run(pytflite.Interpreter(model_content=model), [])[0]
    theirs = run(litert_interpreter(model), [])[0]
    assert_identical(ours, theirs)


def _packed_model(op, source_type, shape, data, out_type, quantization=None):
    from pytflite.model.builder import ModelBuilder

    builder = ModelBuilder()
    source = builder.add_tensor("c", source_type, shape, data=data, quantization=quantization)
    output = builder.add_tensor("out", out_type, [1])
    builder.add_output(output)
    builder.add_operator(op, [source], [output])
    return builder.build()


@settings(max_examples=20, deadline=None)
@given(
    x=hnp.arrays(
        np.float32, hnp.array_shapes(min_dims=0, max_dims=4, max_side=5), elements=st.floats(width=32)
    ),
    target=st.sampled_from([np.int32, np.int64, np.uint8, np.bool_, np.float16]),
)
def test_cast_shapes(x, target):
    assert_identical(*outputs(Op.CAST, [Operand(x)], _tensor_type(target)))


def test_cast_ignores_its_options():
    # the tensors' types decide, as in TFLite (whose options may be absent or stale)
    x = cast_samples(np.float32)
    options = {"in_data_type": T.INT8, "out_data_type": T.BOOL}
    assert_identical(*outputs(Op.CAST, [Operand(x)], T.INT32, options))


def test_cast_of_a_constant():
    x = cast_samples(np.float64)
    assert_identical(*outputs(Op.CAST, [Operand(x, constant=True)], T.INT32))


def test_cast_unsupported_pairs():
    x = Operand(np.zeros(2, np.float32))
    assert "Type STRING (output) is unsupported by op CAST." in _prepare_error(Op.CAST, [x], T.STRING)
    assert "Type UINT64 (input) is unsupported by op CAST." in _prepare_error(
        Op.CAST, [Operand(np.zeros(2, np.uint64))], T.FLOAT32
    )
    message = _prepare_error(Op.CAST, [Operand(np.zeros(2, np.int32))], T.INT4)
    assert "CAST from INT32 to INT4 is unsupported" in message


def test_storage_of_packed_output():
    # pytflite keeps an int4 output packed in Tensor.data (two per byte, low nibble first)
    model, feeds = SingleOpModel(Op.CAST, [Operand(np.array([1, -2, 7], np.float32))], [T.INT4]).build()
    interpreter = pytflite.Interpreter(model_content=model)
    run(interpreter, feeds)
    tensor = interpreter.subgraphs[0].tensors[interpreter.get_output_details()[0]["index"]]
    assert tensor.data.dtype == storage_dtype(T.INT4)
    assert tensor.data.view(np.uint8).tolist() == [0xE1, 0x07]


# --- quantized ABS, EXP, LOG, SQRT, RSQRT ----------------------------------------------------------------

QUANTIZED_UNARY = {Op.ABS: (4, 5), Op.EXP: (2, 2), Op.LOG: (2, 2), Op.SQRT: (2, 2), Op.RSQRT: (2, 3)}


def _every_value(dtype, low=None) -> np.ndarray:
    """Every value of the type (from `low`), shuffled into a [2, N/2] (or [1, N]) array."""
    info = np.iinfo(dtype)
    values = np.arange(info.min if low is None else low, info.max + 1).astype(dtype)
    np.random.default_rng(0).shuffle(values)
    return values.reshape(2, -1) if values.size % 2 == 0 else values.reshape(1, -1)


def _quantized_model(op, x, in_q, out_q):
    tensor_type = T.INT8 if x.dtype == np.int8 else T.INT16
    versions = QUANTIZED_UNARY[op]
    return SingleOpModel(
        op,
        [Operand(x, quantization=in_q)],
        [tensor_type],
        version=versions[1] if tensor_type == T.INT16 else versions[0],
        output_quantization=[out_q],
    )


@settings(max_examples=120, deadline=None)
@given(
    op=st.sampled_from(list(QUANTIZED_UNARY)),
    dtype=st.sampled_from([np.int8, np.int16]),
    in_exponent=st.floats(-4, 0.5),
    out_exponent=st.floats(-4, 0.5),
    same_scale=st.booleans(),
    zero_points=st.tuples(st.integers(-128, 127), st.integers(-128, 127)),
)
def test_quantized_unary(op, dtype, in_exponent, out_exponent, same_scale, zero_points):
    """Every input value at once, over random scales (int16 ones /256) and zero points (int16: 0)."""
    scale = 1.0 if dtype == np.int8 else 1 / 256
    in_scale = float(np.float32(10**in_exponent * scale))
    out_scale = in_scale if same_scale else float(np.float32(10**out_exponent * scale))
    in_zero, out_zero = zero_points if dtype == np.int8 else (0, 0)
    x = _every_value(dtype, in_zero if op in (Op.SQRT, Op.RSQRT) else None)  # both fail below zero
    _quantized_model(op, x, (in_scale, in_zero), (out_scale, out_zero)).check()


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", list(QUANTIZED_UNARY))
@pytest.mark.parametrize(
    "in_scale, out_scale",
    [
        (1000.0, 1e-9),  # a scale ratio of 2**40: ABS's left shift wraps modulo 32 as on x86
        (3e4, 1e-7),
        (1e-9, 1000.0),  # everything rounds to the zero point
        (0.5, 0.5),
        (0.001, 0.3),
        (2.0, 0.01),  # EXP overflows to inf: int8 saturates high, int16's table turns NaN to 0
    ],
)
def test_quantized_unary_extreme_scales(op, dtype, in_scale, out_scale):
    zero_points = (0, 0) if dtype == np.int16 else (0, -5)
    x = _every_value(dtype, 0 if op in (Op.SQRT, Op.RSQRT) else None)
    _quantized_model(op, x, (in_scale, zero_points[0]), (out_scale, zero_points[1])).check()


@pytest.mark.parametrize("op", [Op.SQRT, Op.RSQRT])
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_quantized_root_of_a_negative_fails_at_invoke(op, dtype):
    x = np.array([[3, 4, -1, 9]], dtype)
    model, feeds = _quantized_model(op, x, (0.5, 0), (0.5, 0)).build()
    with pytest.raises((RuntimeError, ValueError)):
        run(litert_interpreter(model), feeds)
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    message = "Sqrt is only defined for non-negative values" if op == Op.SQRT else "Rsqrt is only defined"
    with pytest.raises(RuntimeError, match=message):
        interpreter.invoke()


def test_quantized_exp_without_quantization():
    # EXP reads the legacy parameters, (0, 0) when absent: 1 / 0 output scale saturates every entry
    # (int16: its table's inf - inf gives NaN samples, which the int16 cast turns into 0)
    SingleOpModel(Op.EXP, [Operand(_every_value(np.int8))], [T.INT8], version=2).check()
    SingleOpModel(Op.EXP, [Operand(_every_value(np.int16))], [T.INT16], version=2).check()


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_neg_copies_quantized_values(dtype):
    # NEG has no quantized kernel: it negates the stored integers, wrapping the minimum
    x = _every_value(dtype)
    SingleOpModel(
        Op.NEG,
        [Operand(x, quantization=(0.5, 0))],
        [tensor_type_for_dtype(np.dtype(dtype))],
        output_quantization=[(0.25, 3)],
    ).check()


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", list(QUANTIZED_UNARY))
def test_quantized_unary_reference_resolver(op, dtype):
    # BUILTIN_REF registers the same kernels (for op version 1)
    from tests.single_op import check_ref

    scales = (0.02, 0.05) if dtype == np.int8 else (0.0003, 0.0002)
    x = _every_value(dtype, 0)
    model = _quantized_model(op, x, (scales[0], 0), (scales[1], 0))
    model.version = 1
    check_ref(model)

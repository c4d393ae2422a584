"""Elementwise binary ops against LiteRT: arithmetic (ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW,
SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD, ATAN2, ADD_N), bitwise (BITWISE_XOR, RIGHT_SHIFT), comparisons
and logical ops: broadcasting, fused activations, every supported type, constants, error texts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.types import AllocationType, tensor_type_for_dtype
from tests.oracle import compare_with_litert, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
F32_MAX = np.finfo(np.float32).max


def _type(value) -> T:
    return tensor_type_for_dtype(np.asarray(value).dtype)


def check(op, *inputs, out=None, options=None, version=1, constant=(), rtol=1e-5, **kwargs):
    """Compare one op with LiteRT; inputs are arrays or Operands, `constant` lists constant positions."""
    operands = [
        x if isinstance(x, Operand) else Operand(np.asarray(x), constant=i in constant)
        for i, x in enumerate(inputs)
    ]
    out = out or _type(operands[0].value)
    return SingleOpModel(op, operands, [out], options, version=version, **kwargs).check(rtol)[0]


def fails(op, *inputs, message, out=None, options=None, version=1, at="prepare", litert=True, **kwargs):
    """Assert pytflite fails with `message` (a regex) when preparing or invoking; LiteRT fails too."""
    operands = [x if isinstance(x, Operand) else Operand(np.asarray(x)) for x in inputs]
    out = out or _type(operands[0].value)
    model, feeds = SingleOpModel(op, operands, [out], options, version=version, **kwargs).build()
    if litert:
        with pytest.raises(RuntimeError):
            run(litert_interpreter(model), feeds)
    interpreter = pytflite.Interpreter(model_content=model)
    with pytest.raises(RuntimeError, match=message + rf".*Node number 0 \({op.name}\) failed to {at}"):
        run(interpreter, feeds)


@st.composite
def broadcastable_pair(draw, dtype, low=-10, high=10, max_dims=4):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims, max_side=5))
    if np.dtype(dtype).kind == "f":
        elements = st.floats(low, high, width=np.dtype(dtype).itemsize * 8)
    elif np.dtype(dtype) == np.bool_:
        elements = st.booleans()
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(low, info.min), min(high, info.max))
    a = draw(hnp.arrays(dtype, shapes.input_shapes[0], elements=elements))
    b = draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=elements))
    return a, b


# --- ADD, SUB, MUL, DIV ----------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.DIV])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_float_broadcasting_with_activations(op, data, kernels):
    a, b = data.draw(broadcastable_pair(np.float32))
    if op == Op.DIV:
        b = np.where(np.abs(b) < 0.1, np.float32(0.5), b)
    activation = data.draw(st.sampled_from(ACTIVATIONS))
    constant = data.draw(st.booleans())
    check(op, a, b, options={"fused_activation_function": activation}, constant=(1,) if constant else ())


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_integer_types(op, dtype, data):
    a, b = data.draw(broadcastable_pair(dtype, -1000, 1000))
    version = {(Op.ADD, np.int64): 4, (Op.SUB, np.int64): 4, (Op.MUL, np.int64): 6}.get((op, dtype), 1)
    check(op, a, b, version=version)


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.DIV])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_float_overflow_clamps_to_the_largest_float_and_keeps_nan(op, activation, kernels):
    """TFLite clamps float results to the activation range, [lowest, max] with none: inf -> FLT_MAX."""
    a = np.array([np.inf, -np.inf, np.nan, 1, 3e38, -3e38, 0, 5, -2], np.float32)
    b = np.array([1, 1, 1, np.nan, 3e38, 3e38, 0, 0, 0.5], np.float32)
    check(op, a, b, options={"fused_activation_function": activation})
    check(op, a.reshape(3, 3), b[:3], options={"fused_activation_function": activation})


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("shapes", [([1], [1]), ([], [1, 1]), ([1, 1, 1], [])])
def test_one_element_results_are_bit_identical(op, activation, shapes):
    """One-element float outputs take a scalar path (binary._scalar_runner): the same bits as LiteRT,
    signed zeros, NaN and the clamp of +-inf included."""
    specials = [np.inf, -np.inf, np.nan, -0.0, 0.0, 3e38, -3e38, 1.5, -2.25, 1e-45]
    options = {"fused_activation_function": activation}
    for x in specials:
        for y in specials:
            a, b = (np.array(v, np.float32).reshape(s) for v, s in zip((x, y), shapes))
            model, feeds = SingleOpModel(op, [Operand(a), Operand(b)], [T.FLOAT32], options).build()
            (ours,) = run(pytflite.Interpreter(model_content=model), feeds)
            (theirs,) = run(litert_interpreter(model), feeds)
            assert ours.shape == theirs.shape
            assert ours.view(np.uint32).tolist() == theirs.view(np.uint32).tolist(), (x, y)


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("activation", ["NONE", "RELU6"])
def test_one_element_integer_results_wrap_as_litert(op, dtype, activation):
    """One-element integer outputs are computed on NumPy scalars: they wrap around as the ufunc does."""
    info = np.iinfo(dtype)
    version = 1 if dtype == np.int32 else {Op.ADD: 4, Op.SUB: 4, Op.MUL: 6}[op]
    for x, y in [(info.max, 1), (info.min, -1), (info.max, info.max), (info.min, info.max), (-7, 3)]:
        a, b = np.array(x, dtype), np.array([y], dtype)
        check(op, a, b, version=version, options={"fused_activation_function": activation})


@pytest.mark.parametrize("op", [Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.EQUAL, Op.NOT_EQUAL])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
def test_one_element_comparisons(op, dtype):
    """One-element comparisons are computed on NumPy scalars (NaN compares false, -0.0 equals 0.0)."""
    specials = [np.nan, -0.0, 0.0, -1.5, 2.0] if dtype == np.float32 else [-3, 0, 5]
    for x in specials:
        for y in specials:
            check(op, np.array([x], dtype), np.array(y, dtype), out=T.BOOL)


@pytest.mark.parametrize("op", [Op.LOGICAL_AND, Op.LOGICAL_OR])
def test_one_element_logical_ops(op):
    for x in (False, True):
        for y in (False, True):
            check(op, np.array(x), np.array([[y]]))


@pytest.mark.parametrize("activation", [*ACTIVATIONS, "TANH"])
def test_int32_div_truncates_and_clamps(activation):
    a = np.array([7, -7, 7, -7, 0, -(2**31), 2**31 - 1, 100, -100], np.int32)
    b = np.array([2, 2, -2, -2, 5, -1, 1, 3, 3], np.int32)
    check(Op.DIV, a, b, options={"fused_activation_function": activation})
    check(Op.DIV, a.reshape(3, 3), np.array([2, -3, 7], np.int32), constant=(1,))


def test_int32_div_by_zero_fails_at_invoke():
    fails(
        Op.DIV,
        np.array([7, 8], np.int32),
        np.array([2, 0], np.int32),
        message="data\\[i\\] != zero_point was not true.",
        at="invoke",
    )


def test_float_div_by_zero_is_not_an_error():
    check(Op.DIV, np.array([1, -1, 0], np.float32), np.array([0, 0, 0], np.float32))


def test_add_and_mul_on_float16_and_int16():
    a = np.array([[1.5, -2.25, 60000, -60000], [3, 4, 0.1, -0.5]], np.float16)
    b = np.array([2, 0.5, 2, 2], np.float16)
    for op in (Op.ADD, Op.MUL):
        for activation in ACTIVATIONS:
            check(op, a, b, options={"fused_activation_function": activation})
    i = np.array([[30000, -30000, 5, -7], [1, 2, 3, 4]], np.int16)
    j = np.array([30000, 2, -3, 9], np.int16)
    for op in (Op.ADD, Op.MUL):
        for activation in ACTIVATIONS:
            check(op, i, j, options={"fused_activation_function": activation})


def test_mul_on_uint32_and_complex64():
    a = np.array([[0, 1, 2**31, 2**32 - 1], [5, 6, 7, 8]], np.uint32)
    b = np.array([3, 2**31, 2, 2], np.uint32)
    for activation in ACTIVATIONS:  # uint32 RELU_N1_TO_1 clamps everything to 1 in TFLite (min wraps)
        check(Op.MUL, a, b, options={"fused_activation_function": activation})
    c = np.array([[1 + 2j, -3 + 0.5j], [0, 1j]], np.complex64)
    check(Op.MUL, c, np.array([2 - 1j, 0.5j], np.complex64))
    fails(
        Op.MUL, c, c, options={"fused_activation_function": "RELU"}, message="Activation is not allowed for"
    )


def test_mul_of_two_constants_is_computed_in_prepare():
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([2, 3, 4], np.float32)
    model, _ = SingleOpModel(
        Op.MUL, [Operand(a, constant=True), Operand(b, constant=True)], [T.FLOAT32]
    ).build()
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    output = interpreter.get_output_details()[0]["index"]
    assert interpreter.subgraphs[0].tensors[output].allocation_type == AllocationType.PERSISTENT_RO
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(output), a * b)
    check(Op.MUL, a, b, constant=(0, 1))


def test_mismatched_types_are_rejected():
    model, _ = SingleOpModel(
        Op.ADD, [Operand(np.zeros(2, np.float32)), Operand(np.zeros(2, np.int32))], [T.FLOAT32]
    ).build()
    with pytest.raises(
        RuntimeError,
        match=r"^input1->type != input2->type \(FLOAT32 != INT32\)Node number 0 \(ADD\) failed to prepare\.$",
    ):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_unbroadcastable_shapes_are_rejected():
    model, _ = SingleOpModel(
        Op.MUL, [Operand(np.zeros([2, 3], np.float32)), Operand(np.zeros([4], np.float32))], [T.FLOAT32]
    ).build()
    with pytest.raises(RuntimeError, match=r"Given shapes, \[2,3\] and \[4\], are not broadcastable."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_broadcasting_beyond_eight_dimensions_is_rejected():
    a, b = np.ones([2] + [1] * 8, np.float32), np.ones([2] * 8, np.float32)
    model, _ = SingleOpModel(Op.DIV, [Operand(a), Operand(b)], [T.FLOAT32]).build()
    with pytest.raises(RuntimeError, match="DIV broadcasts at most 8 dimensions, got 9"):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    # Equal shapes need no broadcast loop: any rank works, in TFLite too.
    check(Op.DIV, np.full([1] * 9 + [2], 3, np.float32), np.full([1] * 9 + [2], 2, np.float32))


WIDE_CASES = [
    (Op.ADD, np.float32),
    (Op.SUB, np.int32),
    (Op.MUL, np.float32),
    (Op.DIV, np.float32),
    (Op.MAXIMUM, np.float32),
    (Op.MINIMUM, np.int8),
    (Op.FLOOR_MOD, np.float32),
    (Op.BITWISE_XOR, np.int16),
    (Op.LESS, np.float32),
    (Op.EQUAL, np.int32),
    (Op.LOGICAL_OR, np.bool_),
]


@pytest.mark.parametrize(
    ("op", "dtype"), WIDE_CASES, ids=[f"{o.name}-{np.dtype(d).name}" for o, d in WIDE_CASES]
)
@pytest.mark.parametrize("small", [(6,), (1, 1, 6), (24, 6), (1, 24, 6)])
@pytest.mark.parametrize("constant", [(), (0,), (1,)])
def test_per_channel_broadcast_of_large_tensors(op, dtype, small, constant):
    """Large tensors against a per-channel operand take the widened-rows path; both operand orders."""
    rng = np.random.default_rng(len(small))
    big = (rng.normal(size=(3, 40, 24, 6)) * 50).astype(dtype)
    other = (rng.normal(size=small) * 50).astype(dtype)
    if op in (Op.DIV, Op.FLOOR_MOD):
        other = np.where(np.abs(other) < 1, 3, other).astype(dtype)
    out = T.BOOL if op in (Op.LESS, Op.EQUAL) else None
    check(op, big, other, out=out, constant=constant)
    if op not in (Op.DIV, Op.FLOOR_MOD):
        check(op, other, big, out=out, constant=tuple(1 - c for c in constant))


SMALL_BROADCASTS = [
    ((2, 3, 4), (3, 4)),
    ((3, 4), (2, 3, 4)),
    ((2, 1, 3, 4), (1, 3, 1, 4)),
    ((1, 16, 1), (1, 1, 32)),
    ((5,), ()),
    ((1, 1), (1,)),
    ((130, 130), (130,)),  # past the size up to which broadcasting inputs are expanded
]
EXPANDED_CASES = [
    (Op.ADD, np.float32, "RELU6"),
    (Op.SUB, np.float32, "NONE"),
    (Op.MUL, np.int32, "NONE"),
    (Op.DIV, np.int32, "RELU"),
    (Op.MAXIMUM, np.float32, None),
    (Op.SQUARED_DIFFERENCE, np.float32, None),
    (Op.FLOOR_DIV, np.float32, None),
    (Op.FLOOR_DIV, np.int32, None),
    (Op.FLOOR_MOD, np.int32, None),
    (Op.LESS_EQUAL, np.float32, None),
]


@pytest.mark.parametrize(
    ("op", "dtype", "activation"),
    EXPANDED_CASES,
    ids=[f"{o.name}-{np.dtype(d).name}" for o, d, _ in EXPANDED_CASES],
)
@pytest.mark.parametrize("shapes", SMALL_BROADCASTS, ids=str)
@pytest.mark.parametrize("constant", [(), (0,), (1,)])
def test_broadcasting_inputs_of_small_outputs(op, dtype, activation, shapes, constant, kernels):
    """Small outputs expand a broadcasting input first (a constant once, a computed one per call)."""
    rng = np.random.default_rng(sum(map(len, shapes)))
    a, b = ((rng.normal(size=shape) * 20).astype(dtype) for shape in shapes)
    if op in (Op.DIV, Op.FLOOR_DIV, Op.FLOOR_MOD):
        b = np.where(np.abs(b) < 1, 3, b).astype(dtype)
    if dtype == np.float32 and op == Op.MAXIMUM:
        a.reshape(-1)[::5], b.reshape(-1)[::3] = np.nan, np.nan
    options = None if activation is None else {"fused_activation_function": activation}
    check(op, a, b, out=T.BOOL if op == Op.LESS_EQUAL else None, options=options, constant=constant)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("shapes", [((1,), (1,)), ((), ()), ((1, 1), ()), ((), (1,))], ids=str)
def test_one_element_outputs_clamp(activation, shapes):
    """A one-element float result is clamped like any other (it is computed out of place)."""
    options = {"fused_activation_function": activation}
    for x, y in [(3e38, 3e38), (-np.inf, 1), (np.nan, 2), (-5, 2.5), (0.25, 0.5)]:
        a, b = np.full(shapes[0], x, np.float32), np.full(shapes[1], y, np.float32)
        for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV):
            check(op, a, b, options=options)


def test_resized_inputs_get_new_scratch_arrays():
    model, _ = SingleOpModel(
        Op.ADD,
        [Operand(np.zeros([2, 3], np.float32)), Operand(np.zeros([3], np.float32))],
        [T.FLOAT32],
        {"fused_activation_function": "RELU"},
    ).build()
    interpreter = pytflite.Interpreter(model_content=model)
    first, second = (d["index"] for d in interpreter.get_input_details())
    rng = np.random.default_rng(5)
    for rows, width in [(2, 3), (4, 5), (1, 1), (7, 2)]:
        interpreter.resize_tensor_input(first, [rows, width])
        interpreter.resize_tensor_input(second, [width])
        interpreter.allocate_tensors()
        a, b = rng.normal(size=(rows, width)).astype(np.float32), rng.normal(size=width).astype(np.float32)
        interpreter.set_tensor(first, a)
        interpreter.set_tensor(second, b)
        interpreter.invoke()
        output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        np.testing.assert_array_equal(output, np.maximum(a + b, 0))


def test_constant_inputs_are_folded_without_warnings():
    """Overflow while computing a node of constants in prepare is a result, as at invoke: no warning."""
    a, b = np.array([3e38, 1.0], np.float32), np.array([3e38, 0.0], np.float32)
    for op, expected in [(Op.ADD, [F32_MAX, 1.0]), (Op.DIV, [1.0, F32_MAX]), (Op.FLOOR_DIV, [1.0, np.inf])]:
        if op == Op.FLOOR_DIV:
            b = np.array([3e38, 1e-45], np.float32)
        model, _ = SingleOpModel(
            op, [Operand(a, constant=True), Operand(b, constant=True)], [T.FLOAT32]
        ).build()
        interpreter = pytflite.Interpreter(model_content=model)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            interpreter.allocate_tensors()
            interpreter.invoke()
        output = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        np.testing.assert_array_equal(output, np.array(expected, np.float32))


# --- quantized ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE ------------------------------------------------------
#
# Bit-exact against LiteRT's optimized kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES: ADD and MUL compute
# SIMD blocks of 8/16 elements with their own rounding, the rest scalar) and against BUILTIN_REF's
# reference kernels (scalar throughout).

RESOLVERS = ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")
QUANTIZED_TYPES = {np.int8: T.INT8, np.uint8: T.UINT8, np.int16: T.INT16}
# Scales in simple ratios make the SIMD blocks' rounding (halves up, flooring shifts) and their int16
# lanes (wrapping) show; random ones cover the rest.
SCALES_8BIT = st.one_of(st.sampled_from([0.5, 0.25, 0.3, 0.125, 1.0, 0.0625, 0.1]), st.floats(0.004, 0.3))
SCALES_16BIT = st.one_of(st.sampled_from([2.0**-10, 2.0**-12, 3 * 2.0**-14]), st.floats(2e-5, 2e-3))
FIXED_SHAPES = [
    ((37,), (37,)),  # 2 blocks of 16 and a tail of 5
    ((3, 41), (41,)),  # rows of 41 in the fivefold broadcast
    ((2, 3, 19), (2, 1, 19)),
    ((5, 1), (1, 21)),  # scalar-broadcast rows of 21: blocks of 8 and a tail
    ((53,), ()),
    ((2, 1, 3, 1), (1, 4, 1, 9)),  # TFLite's generic broadcast loop
]
SHAPE_PAIRS = st.one_of(
    st.sampled_from(FIXED_SHAPES),
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=20).map(
        lambda shapes: tuple(shapes.input_shapes)
    ),
)


def quantized_check(
    op, a, b, qa, qb, qo, out=None, options=None, version=2, constant=(), resolvers=RESOLVERS
):
    """Run a quantized binary op in both interpreters with each resolver; assert identical outputs.
    Returns LiteRT's output per resolver."""
    operands = [
        Operand(a, quantization=qa, constant=0 in constant),
        Operand(b, quantization=qb, constant=1 in constant),
    ]
    out = out or QUANTIZED_TYPES[a.dtype.type]
    model, feeds = SingleOpModel(
        op, operands, [out], options, version=version, output_quantization=[qo]
    ).build()
    return {r: compare_with_litert(model, feeds, rtol=0, resolver=r)[0] for r in resolvers}


def quantized_array(data, dtype, shape):
    info = np.iinfo(dtype)
    return data.draw(hnp.arrays(dtype, shape, elements=st.integers(int(info.min), int(info.max))))


def zero_point(data, dtype):
    info = np.iinfo(dtype)
    return 0 if dtype == np.int16 else data.draw(st.integers(int(info.min), int(info.max)))


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_quantized_8bit_arithmetic(op, dtype, data):
    shape_a, shape_b = data.draw(SHAPE_PAIRS)
    a, b = quantized_array(data, dtype, shape_a), quantized_array(data, dtype, shape_b)
    s1, s2 = data.draw(SCALES_8BIT), data.draw(SCALES_8BIT)
    if op == Op.MUL:
        so = s1 * s2 * data.draw(st.one_of(st.sampled_from([0.25, 1.0, 4.0, 64.0]), st.floats(0.01, 300)))
    else:  # down to outputs much finer than the inputs: saturating results
        so = (
            2
            * max(s1, s2)
            * data.draw(st.one_of(st.sampled_from([2.0**-6, 2.0**-12, 1.0]), st.floats(1e-3, 2)))
        )
    qa, qb, qo = (s1, zero_point(data, dtype)), (s2, zero_point(data, dtype)), (so, zero_point(data, dtype))
    options = {"fused_activation_function": data.draw(st.sampled_from(ACTIVATIONS))}
    constant = data.draw(st.sampled_from([(), (1,)]))
    quantized_check(op, a, b, qa, qb, qo, options=options, constant=constant)


# Parameters under which LiteRT's SIMD blocks and its scalar code disagree on many input pairs, and the
# layouts ("elementwise" blocks of 16 or 8, "scalar broadcast" blocks of 8) where they do.
BOTH = ("elementwise", "scalar broadcast")
ALL_PAIRS = [
    (Op.ADD, np.int8, (0.3, 5), (0.5, -3), (0.5 / 2**12, 2), BOTH),  # int16 lanes wrap
    (Op.ADD, np.int8, (0.3, 0), (0.125, 3), (0.05, 10), BOTH),  # shift before / flooring shift after
    (Op.ADD, np.uint8, (0.3, 128), (0.125, 3), (0.05, 100), BOTH),  # the flooring shift
    (Op.MUL, np.int8, (0.1, -128), (0.1, -128), (0.01 / 300, 5), BOTH),  # saturated lanes + offset wrap
    (Op.MUL, np.uint8, (0.1, 0), (0.1, 0), (0.01 / 200, 7), BOTH),
    (Op.MUL, np.uint8, (0.1, 0), (0.1, 255), (0.01 / 200, 7), ("scalar broadcast",)),  # vmovn wraps
]


@pytest.mark.parametrize(("op", "dtype", "qa", "qb", "qo", "differing"), ALL_PAIRS)
@pytest.mark.parametrize("layout", BOTH)
def test_quantized_8bit_simd_blocks_on_every_input_pair(op, dtype, qa, qb, qo, differing, layout):
    values = np.arange(256, dtype=np.uint8).view(dtype)
    if layout == "elementwise":  # 65536 elements: all in SIMD blocks
        a, b = np.repeat(values, 256), np.tile(values, 256)
    else:  # rows of 256 against one value each: the scalar-broadcast loop's blocks
        a, b = values.reshape(256, 1), values.reshape(1, 256)
    for activation in ("NONE", "RELU_N1_TO_1"):
        options = {"fused_activation_function": activation}
        results = quantized_check(op, a, b, qa, qb, qo, options=options)
        if activation == "NONE" and layout in differing:  # the kernels really differ here
            assert np.any(results["BUILTIN_WITHOUT_DEFAULT_DELEGATES"] != results["BUILTIN_REF"])


@pytest.mark.parametrize("size", [15, 16, 17, 31, 33, 4096 + 7])
def test_quantized_add_block_tails(size):
    rng = np.random.default_rng(size)
    a = rng.integers(-128, 128, size).astype(np.int8)
    b = rng.integers(-128, 128, size).astype(np.int8)
    quantized_check(Op.ADD, a, b, (0.3, 5), (0.5, -3), (0.5 / 2**12, 2))
    quantized_check(Op.ADD, a.reshape(1, size), b[:1].reshape(1, 1), (0.3, 0), (0.125, 3), (0.05, 10))
    quantized_check(Op.MUL, a, b, (0.1, -128), (0.1, -128), (0.01 / 300, 5))


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_quantized_int16_add_sub(op, data):
    pot = data.draw(st.booleans())  # power-of-two scales with this option take the LSTM path
    shape_a, shape_b = data.draw(
        st.sampled_from([((23,), (23,)), ((3, 17), (3, 17))]) if pot else SHAPE_PAIRS
    )
    if pot and op == Op.SUB:
        shape_b = data.draw(st.sampled_from([shape_b, shape_b[-1:]]))
    a, b = quantized_array(data, np.int16, shape_a), quantized_array(data, np.int16, shape_b)
    if pot:  # valid only with the output's scale on one input and a finer one on the other
        exponent, finer = data.draw(st.integers(-14, -8)), data.draw(st.integers(0, 3))
        scales = [2.0**exponent, 2.0 ** (exponent - finer)]
        qa, qb = ((scale, 0) for scale in data.draw(st.permutations(scales)))
        qo = (2.0**exponent, 0)
    else:
        qa, qb, qo = ((data.draw(SCALES_16BIT), 0) for _ in range(3))
    options = {"fused_activation_function": data.draw(st.sampled_from(ACTIVATIONS)), "pot_scale_int16": pot}
    quantized_check(op, a, b, qa, qb, qo, options=options, version=3)


def test_quantized_int16_add_simd_blocks():
    # The optimized int16 ADD rounds its blocks of 16 differently; a few of 65536 elements show it.
    rng = np.random.default_rng(0)
    a = rng.integers(-32768, 32768, 65536 + 9).astype(np.int16)
    b = rng.integers(-32768, 32768, 65536 + 9).astype(np.int16)
    options = {"pot_scale_int16": False}
    q = (0.00046970369, 0), (0.00078329680, 0), (0.00013755212, 0)
    results = quantized_check(Op.ADD, a, b, *q, options=options, version=3)
    assert np.any(results["BUILTIN_WITHOUT_DEFAULT_DELEGATES"] != results["BUILTIN_REF"])


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU6"])
def test_quantized_int16_power_of_two_scales(op, activation):
    rng = np.random.default_rng(1)
    a = rng.integers(-32768, 32768, (3, 50)).astype(np.int16)
    b = rng.integers(-32768, 32768, (3, 50)).astype(np.int16)
    options = {"fused_activation_function": activation}
    for scales in [(2**-10, 2**-12, 2**-10), (2**-12, 2**-12, 2**-12), (2**-12, 2**-9, 2**-9)]:
        qa, qb, qo = ((scale, 0) for scale in scales)
        quantized_check(op, a, b, qa, qb, qo, options=options, version=3)
    if op == Op.SUB:
        quantized_check(op, a, b[0], (2**-12, 0), (2**-13, 0), (2**-12, 0), options=options, version=3)
    # two rescaled inputs: both interpreters refuse the model
    fails(
        op,
        Operand(a, quantization=(2**-13, 0)),
        Operand(b, quantization=(2**-13, 0)),
        options=options,
        version=3,
        output_quantization=[(2**-12, 0)],
        message=r"input1_shift == 0 \|\| data->input2_shift == 0 was not true",
    )


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("size", [3, 4, 7, 9, 45])
def test_quantized_sub_with_an_output_multiplier_above_one(dtype, size):
    # An output scale below input scale / 2**19 (2**14 for int16): TFLite applies the multiplier with a
    # negative shift count, which x86 and the compiler-vectorized int16 loop each resolve their own way.
    rng = np.random.default_rng(size)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, size).astype(dtype)
    b = rng.integers(info.min, info.max + 1, size).astype(dtype)
    zp = 0 if dtype == np.int16 else 3
    options = {"pot_scale_int16": False}
    quantized_check(Op.SUB, a, b, (1.0, zp), (0.9, zp), (1e-7, zp), options=options, version=3)
    quantized_check(Op.SUB, a, b[:1], (1.0, zp), (0.9, zp), (1e-7, zp), options=options, version=3)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_quantized_int16_mul(data):
    shape_a, shape_b = data.draw(SHAPE_PAIRS)
    a, b = quantized_array(data, np.int16, shape_a), quantized_array(data, np.int16, shape_b)
    s1, s2 = data.draw(SCALES_16BIT), data.draw(SCALES_16BIT)
    so = s1 * s2 * data.draw(st.one_of(st.sampled_from([1.0, 2.0**12]), st.floats(1, 5e4)))
    # (TFLite refuses RELU6 / RELU_N1_TO_1 bounds that do not fit in int32)
    activations = ACTIVATIONS if 6 / so < 2**31 else ["NONE", "RELU"]
    options = {"fused_activation_function": data.draw(st.sampled_from(activations))}
    quantized_check(Op.MUL, a, b, (s1, 0), (s2, 0), (so, 0), options=options, version=4)


@pytest.mark.parametrize(
    ("out", "qo"), [(T.INT8, (1 / 128, 0)), (T.INT8, (0.004, 3)), (T.UINT8, (0.004, 128))]
)
@pytest.mark.parametrize("activation", ["NONE", "RELU", "RELU_N1_TO_1"])
def test_quantized_mul_of_int16_into_8bit(out, qo, activation):
    # The LSTM form: Q0.15 inputs multiplied in fixed point, divided by 2**8
    rng = np.random.default_rng(2)
    a = rng.integers(-32768, 32768, (4, 33)).astype(np.int16)
    b = rng.integers(-32768, 32768, (4, 33)).astype(np.int16)
    a[0, :3], b[0, :3] = -32768, [-32768, 32767, 0]
    options = {"fused_activation_function": activation}
    quantized_check(Op.MUL, a, b, (2**-15, 0), (2**-15, 0), qo, out=out, options=options, version=4)


def test_quantized_mul_of_two_constants_is_computed_in_prepare():
    a = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    b = np.array([3, -2, 7, 1], np.int8)
    quantized_check(Op.MUL, a, b, (0.5, 1), (0.25, -2), (0.1, 3), constant=(0, 1))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_quantized_div(dtype, data):
    shape_a, shape_b = data.draw(SHAPE_PAIRS)
    a, b = quantized_array(data, dtype, shape_a), quantized_array(data, dtype, shape_b)
    scales = SCALES_16BIT if dtype == np.int16 else SCALES_8BIT
    s1, s2 = data.draw(scales), data.draw(scales)
    so = s1 / s2 * data.draw(st.one_of(st.sampled_from([1 / 128, 1 / 1000, 1.0]), st.floats(1e-4, 0.1)))
    zp2 = zero_point(data, dtype)
    b = np.where(b == zp2, zp2 + 1 if zp2 < np.iinfo(dtype).max else zp2 - 1, b).astype(dtype)
    qa, qo = (s1, zero_point(data, dtype)), (so, zero_point(data, dtype))
    options = {"fused_activation_function": data.draw(st.sampled_from(ACTIVATIONS))}
    quantized_check(Op.DIV, a, b, qa, (s2, zp2), qo, options=options)


def test_quantized_div_extreme_shifts():
    # Large quotient multipliers and divisors of +-1: TFLite's shifts leave [0, 31]
    rng = np.random.default_rng(3)
    for dtype in (np.int8, np.int16):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max + 1, 200).astype(dtype)
        b = rng.integers(info.min, info.max + 1, 200).astype(dtype)
        b[b == 0], b[:20], b[20:40] = 1, 1, -1
        quantized_check(Op.DIV, a, b, (1.0, 0), (0.001, 0), (0.01, 0))
        quantized_check(Op.DIV, a, b, (0.001, 0), (0.002, 0), (0.01, 0))


def test_quantized_div_by_the_zero_point_fails_at_invoke():
    fails(
        Op.DIV,
        Operand(np.array([7, 8], np.int8), quantization=(0.5, 0)),
        Operand(np.array([2, 5], np.int8), quantization=(0.5, 5)),
        output_quantization=[(0.5, 0)],
        message="data\\[i\\] != zero_point was not true.",
        at="invoke",
    )


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_quantized_squared_difference(data):
    shape_a, shape_b = data.draw(SHAPE_PAIRS)
    a, b = quantized_array(data, np.int8, shape_a), quantized_array(data, np.int8, shape_b)
    s1, s2 = data.draw(SCALES_8BIT), data.draw(SCALES_8BIT)
    so = max(s1, s2) ** 2 * data.draw(st.one_of(st.sampled_from([1.0, 4.0, 0.25]), st.floats(0.1, 300)))
    qa, qb, qo = (
        (s1, zero_point(data, np.int8)),
        (s2, zero_point(data, np.int8)),
        (so, zero_point(data, np.int8)),
    )
    quantized_check(Op.SQUARED_DIFFERENCE, a, b, qa, qb, qo)


def test_quantized_arithmetic_errors():
    a = np.zeros(4, np.int8)
    # TFLite aborts on an ADD output multiplier of 1 or more (a CHECK): pytflite refuses the model.
    fails(
        Op.ADD,
        Operand(a, quantization=(1.0, 0)),
        Operand(a, quantization=(1.0, 0)),
        output_quantization=[(1e-7, 0)],
        message=r"ADD output multiplier .* is outside \(0, 1\)",
        litert=False,
    )
    fails(
        Op.ADD,
        Operand(a, quantization=(0.0, 0)),
        Operand(a, quantization=(1.0, 0)),
        output_quantization=[(1.0, 0)],
        message="ADD of quantized INT8 tensors needs a positive scale, got 0.0.",
        litert=False,
    )
    i16 = np.zeros(4, np.int16)
    fails(
        Op.SUB,
        Operand(i16, quantization=(0.001, 3)),
        Operand(i16, quantization=(0.001, 0)),
        output_quantization=[(0.001, 0)],
        version=3,
        message="SUB int16 zero point 3 != 0",
    )
    fails(
        Op.MUL,
        Operand(a, quantization=(0.5, 0)),
        Operand(a, quantization=(0.5, 0)),
        out=T.INT16,
        output_quantization=[(0.5, 0)],
        message="Unsupported combination of input and output types in Mul.",
    )


# --- MAXIMUM, MINIMUM ------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [Op.MAXIMUM, Op.MINIMUM])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.int8, np.uint8, np.int16, np.float16])
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_maximum_minimum(op, dtype, data):
    a, b = data.draw(broadcastable_pair(dtype, -200, 200))
    constant = data.draw(st.sampled_from([(), (0,), (1,)]))
    check(op, a, b, constant=constant, version=2)


@pytest.mark.parametrize("op", [Op.MAXIMUM, Op.MINIMUM])
@pytest.mark.parametrize("constant", [(), (0,), (1,)])
def test_maximum_minimum_nan_follows_tflite(op, constant):
    """`a > b ? a : b`: a NaN first operand gives the second, a NaN second operand gives NaN."""
    a = np.array([[np.nan, 1, np.nan, 2], [-1, 3, 0, -0.0]], np.float32)
    b = np.array([[1, np.nan, np.nan, 1], [np.nan, 2, -0.0, 0]], np.float32)
    check(op, a, b, constant=constant)
    check(op, a, np.array([np.nan, 1, -1, 0], np.float32), constant=constant)
    check(op, a, np.float32(0.5), constant=constant)


def test_maximum_on_quantized_int8_compares_raw_values():
    a = Operand(np.array([-128, -5, 0, 100, 127], np.int8), quantization=(0.5, 3))
    b = Operand(np.array([-3, 7, 0, -100, 126], np.int8), quantization=(0.25, -2))
    for op in (Op.MAXIMUM, Op.MINIMUM):
        check(op, a, b, version=2, output_quantization=[(0.5, 3)])


@pytest.mark.parametrize("op", [Op.MAXIMUM, Op.MINIMUM, Op.FLOOR_DIV, Op.FLOOR_MOD])
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_quantized_operands_of_integer_ops_are_raw_integers(op, dtype):
    """TFLite ignores quantization here: the raw values are compared or divided, never rescaled."""
    rng = np.random.default_rng(4)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (3, 19)).astype(dtype)
    b = rng.integers(info.min, info.max + 1, 19).astype(dtype)
    b[b == 0] = 7
    zero_points = (0, 0, 0) if dtype == np.int16 else (3, -2, 5)
    first = Operand(a, quantization=(0.5, zero_points[0]))
    second = Operand(b, quantization=(0.02, zero_points[1]))
    version = {Op.FLOOR_DIV: 3, Op.FLOOR_MOD: 2}.get(op, 4)
    check(op, first, second, version=version, output_quantization=[(0.1, zero_points[2])])


# --- POW, SQUARED_DIFFERENCE, FLOOR_DIV, FLOOR_MOD -------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_pow_float(data):
    a, b = data.draw(broadcastable_pair(np.float32, -3, 3))
    a = np.abs(a) + np.float32(0.25)  # non-integral exponents of negative bases are NaN on both sides
    check(Op.POW, a, b, constant=data.draw(st.sampled_from([(), (1,)])))


@pytest.mark.parametrize("constant", [(), (1,)])
@pytest.mark.parametrize("exponent", [3.0, 2.000001, 1.0, 0.0, -2.0, 2.5, np.nan, 40.0, 1e10])
def test_pow_float_scalar_exponent(exponent, constant):
    """A one-element exponent of another shape: near-integral exponents >= 1 multiply repeatedly."""
    a = np.array([[2, -3, 0.5, 10, 1e20, 0, np.inf], [-1e20, 1.5, -0.75, 7, 1, -2, -np.inf]], np.float32)
    check(Op.POW, a, np.array([exponent], np.float32), constant=constant, rtol=2e-5)
    check(Op.POW, a, np.full(a.shape, exponent, np.float32), constant=constant, rtol=2e-5)


@pytest.mark.parametrize("constant", [(), (1,)])
def test_pow_int32(constant):
    a = np.array([[2, 3, -2, 10, 7, 0], [1, -1, 5, -3, 46341, 2]], np.int32)
    b = np.array([[3, 0, 3, 10, 40, 0], [9, 7, 13, 19, 2, 31]], np.int32)
    check(Op.POW, a, b, constant=constant)  # overflow: INT_MIN, from a double cast
    for exponent in (0, 1, 2, 7, 40):  # one exponent, broadcast: repeated multiplication wraps
        check(Op.POW, a, np.array([exponent], np.int32), constant=constant)


def test_pow_int32_negative_exponent_fails_at_invoke():
    fails(
        Op.POW,
        np.array([2, 3], np.int32),
        np.array([-1, 2], np.int32),
        message="POW does not support negative value for int32.",
        at="invoke",
    )


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_squared_difference(dtype, data):
    a, b = data.draw(broadcastable_pair(dtype, -1000, 1000))
    check(Op.SQUARED_DIFFERENCE, a, b, constant=data.draw(st.sampled_from([(), (1,)])))


@pytest.mark.parametrize(
    ("op", "dtype"),
    [
        (Op.FLOOR_DIV, np.float32),
        (Op.FLOOR_DIV, np.int32),
        (Op.FLOOR_DIV, np.int16),
        (Op.FLOOR_DIV, np.int8),
        (Op.FLOOR_MOD, np.float32),
        (Op.FLOOR_MOD, np.int32),
        (Op.FLOOR_MOD, np.int64),
        (Op.FLOOR_MOD, np.int16),
        (Op.FLOOR_MOD, np.int8),
    ],
)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_floor_div_and_floor_mod(op, dtype, data):
    a, b = data.draw(broadcastable_pair(dtype, -100, 100))
    b = np.where(b == 0, np.asarray(3, dtype), b).astype(dtype)
    if dtype == np.float32:
        b = np.where(np.abs(b) < 0.5, np.float32(-1.5), b).astype(dtype)
    version = 2 if dtype in (np.int16, np.int8, np.int64) else 1
    check(op, a, b, constant=data.draw(st.sampled_from([(), (1,)])), version=version)


@pytest.mark.parametrize("op", [Op.FLOOR_DIV, Op.FLOOR_MOD])
@pytest.mark.parametrize("dtype", [np.int32, np.int8])
def test_one_element_floor_div_and_floor_mod_by_a_constant(op, dtype):
    """A constant divisor without zeros leaves the plain ufunc, computed on NumPy scalars for one element:
    floored as LiteRT floors, the lowest value over -1 wrapping (not int32 FLOOR_MOD's, where LiteRT's
    C++ remainder traps)."""
    info = np.iinfo(dtype)
    for x, y in [(7, 3), (-7, 3), (7, -3), (-7, -3), (0, 5), (info.min, -1), (info.max, 2), (info.min, 7)]:
        if (op, dtype, y) == (Op.FLOOR_MOD, np.int32, -1):
            continue
        version = 1 if dtype == np.int32 else 2
        check(op, np.array([x], dtype), np.array(y, dtype), constant=(1,), version=version)


def test_floor_div_and_floor_mod_edge_values():
    a = np.array([7, -7, 7, -7, 0, 1e10, -1, 5, 6], np.float32)
    b = np.array([2, 2, -2, -2, 3, 3, 0.1, np.inf, -3], np.float32)
    check(Op.FLOOR_DIV, a, b)
    check(Op.FLOOR_MOD, a, b)
    i = np.array([7, -7, 7, -7, 0, -(2**31), 2**31 - 1], np.int32)
    j = np.array([2, 2, -2, -2, 3, -1, -2], np.int32)
    check(Op.FLOOR_DIV, i, j)
    check(Op.FLOOR_MOD, i[[0, 1, 2, 3, 4, 6]], j[[0, 1, 2, 3, 4, 6]])
    check(Op.FLOOR_MOD, np.array([5, -5, 0], np.float32), np.array([0, -0.0, 0], np.float32))  # NaN


@pytest.mark.parametrize("op", [Op.FLOOR_DIV, Op.FLOOR_MOD])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_division_by_zero_fails_at_invoke(op, dtype):
    if op == Op.FLOOR_MOD and dtype == np.float32:
        return  # float FLOOR_MOD gives NaN (tested above)
    fails(
        op,
        np.array([7, -7], dtype),
        np.array([2, 0], dtype),
        message="Division by 0",
        at="invoke",
    )


# --- ATAN2, ADD_N ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_atan2(dtype):
    rng = np.random.default_rng(0)
    y, x = rng.normal(size=(3, 4)).astype(dtype), rng.normal(size=(3, 4)).astype(dtype)
    x[0, :3] = [0, -0.0, np.inf]
    check(Op.ATAN2, y, x)
    check(Op.ATAN2, y, x, constant=(1,))
    # TFLite checks only the ranks and pairs elements in memory order.
    check(Op.ATAN2, y, x.reshape(4, 3))


def test_atan2_rank_mismatch_is_rejected():
    fails(
        Op.ATAN2,
        np.ones((2, 3), np.float32),
        np.ones(3, np.float32),
        message=r"tflite::NumDimensions\(a\) != tflite::NumDimensions\(b\) \(2 != 1\)",
    )


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("count", [2, 3, 5])
def test_add_n(dtype, count):
    rng = np.random.default_rng(count)
    inputs = [(rng.normal(size=(2, 3)) * 100).astype(dtype) for _ in range(count)]
    check(Op.ADD_N, *inputs, constant=(1,))


def test_add_n_rejects_different_shapes():
    fails(
        Op.ADD_N,
        np.ones((2, 3), np.float32),
        np.ones((2, 3), np.float32),
        np.ones((3, 2), np.float32),
        message=r"HaveSameShapes\(input1, input\) was not true.",
    )


# --- BITWISE_XOR, RIGHT_SHIFT ------------------------------------------------------------------------------

BITWISE_TYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32]


@pytest.mark.parametrize("dtype", BITWISE_TYPES)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_bitwise_xor(dtype, data):
    info = np.iinfo(dtype)
    a, b = data.draw(broadcastable_pair(dtype, info.min, info.max))
    check(Op.BITWISE_XOR, a, b)


@pytest.mark.parametrize("dtype", BITWISE_TYPES)
@pytest.mark.parametrize("constant", [(), (1,)])
def test_right_shift_clamps_shift_counts(dtype, constant):
    info = np.iinfo(dtype)
    bits = info.bits
    a = np.array([[info.min, info.max, 100, 1], [0, 77, info.max // 3, info.min // 5]], dtype)
    low = -3 if info.min < 0 else 0
    b = np.array([low, 1, bits - 1, bits, min(bits + 9, info.max)], dtype=np.int64)
    shifts = np.array([b[0], b[1], b[2], b[4]], dtype)
    check(Op.RIGHT_SHIFT, a, shifts, constant=constant)
    check(Op.RIGHT_SHIFT, a, np.array([[2, low, bits, 3], [bits - 1, 0, 1, 5]], dtype), constant=constant)


def test_bitwise_types_are_checked():
    fails(
        Op.BITWISE_XOR,
        np.ones(2, np.int64),
        np.ones(2, np.int64),
        message="BitwiseXor currently only supports 8-bit/16-bit/32-bit integer/unsigned integer, got INT64",
        litert=False,  # LiteRT fails at invoke, we at prepare
    )


# --- comparisons -----------------------------------------------------------------------------------------

COMPARISONS = [Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.float16])
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_comparisons(op, dtype, data):
    a, b = data.draw(broadcastable_pair(dtype, -3, 3))
    check(op, a, b, out=T.BOOL, constant=data.draw(st.sampled_from([(), (1,)])))


@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_with_nan(op):
    a = np.array([np.nan, 1, np.nan, 2, -0.0], np.float32)
    b = np.array([1, np.nan, np.nan, 2, 0], np.float32)
    check(op, a, b, out=T.BOOL)


@pytest.mark.parametrize("op", [Op.EQUAL, Op.NOT_EQUAL])
def test_equality_of_bools_and_strings(op):
    check(op, np.array([[True, False], [False, False]]), np.array([True, False]), out=T.BOOL)
    a = np.array([[b"a", b"bc"], [b"", b"x"]], dtype=object)
    check(op, a, np.array([b"a", b"x"], dtype=object), out=T.BOOL)


@pytest.mark.parametrize("op", [Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.EQUAL])
def test_int16_without_quantization_compares_raw_values(op):
    a = np.array([[-32768, -5, 0, 7], [32767, 1, 2, 3]], np.int16)
    check(op, a, np.array([-5, -5, 1, 7], np.int16), out=T.BOOL)


QUANTIZATIONS = [
    ((0.5, 3), (0.5, 3)),  # same parameters
    ((0.5, 3), (0.25, -2)),
    ((0.01, 0), (0.0125, 10)),
    ((0.001, -7), (0.0013, 100)),  # scales below 1/256: several raw values share a rescaled value
]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("params", QUANTIZATIONS)
def test_quantized_comparisons_rescale_like_tflite(op, dtype, params):
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1, dtype=np.int64)
    a = values.astype(dtype).reshape(16, 16)
    b = np.random.default_rng(5).permutation(values).astype(dtype).reshape(16, 16)
    first, second = (Operand(a, quantization=params[0]), Operand(b, quantization=params[1]))
    check(op, first, second, out=T.BOOL, version=2)
    second = Operand(b[0], quantization=params[1], constant=True)
    check(op, first, second, out=T.BOOL, version=2)


@pytest.mark.parametrize("op", [Op.EQUAL, Op.NOT_EQUAL])
def test_quantized_int16_equality_rescales(op):
    a = np.arange(-32768, 32768, 7, dtype=np.int64).astype(np.int16)
    b = (a.astype(np.int64) * 2 + 3).clip(-32768, 32767).astype(np.int16)
    check(op, Operand(a, quantization=(0.002, 0)), Operand(b, quantization=(0.001, 0)), out=T.BOOL, version=3)


@pytest.mark.parametrize("op", [Op.LESS, Op.EQUAL, Op.GREATER_EQUAL])
def test_quantized_comparisons_with_scales_above_one(op):
    # TFLite's multiplier then shifts right by a negative count: x86 masks the count
    values = np.arange(-128, 128, dtype=np.int64)
    a = values.astype(np.int8).reshape(16, 16)
    b = np.random.default_rng(6).permutation(values).astype(np.int8).reshape(16, 16)
    check(op, Operand(a, quantization=(2.5, 3)), Operand(b, quantization=(1.7, -4)), out=T.BOOL, version=2)
    check(op, Operand(a, quantization=(2.5, 3)), Operand(b, quantization=(0.3, -4)), out=T.BOOL, version=2)


def test_quantized_comparison_without_a_scale_is_rejected():
    # LiteRT aborts on this model (a CHECK in QuantizeMultiplier), so only pytflite runs it.
    fails(
        Op.LESS,
        np.array([1, 2], np.int8),
        np.array([1, 3], np.int8),
        out=T.BOOL,
        message=r"LESS on INT8 needs quantized inputs with a positive scale other than 1, got scale 0.0.",
        litert=False,
    )


def test_comparison_output_must_be_bool():
    fails(
        Op.LESS,
        np.array([1, 2], np.float32),
        np.array([1, 3], np.float32),
        out=T.FLOAT32,
        message="LESS output type must be BOOL, got FLOAT32.",
        litert=False,  # LiteRT retypes its output to bool
    )


# --- logical ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [Op.LOGICAL_AND, Op.LOGICAL_OR])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_logical_and_or(op, data):
    a, b = data.draw(broadcastable_pair(np.bool_))
    check(op, a, b, constant=data.draw(st.sampled_from([(), (1,)])))


def test_logical_not():
    check(Op.LOGICAL_NOT, np.array([[True, False, True], [False, False, True]]))


def test_logical_ops_need_bools():
    fails(
        Op.LOGICAL_AND,
        np.ones(2, np.int32),
        np.ones(2, np.int32),
        message="Logical ops only support bool type.",
    )


# --- versions --------------------------------------------------------------------------------------------

VERSIONS = {
    Op.ADD: 6,
    Op.SUB: 5,
    Op.MUL: 8,
    Op.DIV: 2,
    Op.MAXIMUM: 4,
    Op.MINIMUM: 4,
    Op.POW: 1,
    Op.SQUARED_DIFFERENCE: 2,
    Op.FLOOR_DIV: 3,
    Op.FLOOR_MOD: 2,
    Op.ATAN2: 1,
    Op.ADD_N: 1,
    Op.BITWISE_XOR: 1,
    Op.RIGHT_SHIFT: 1,
    Op.EQUAL: 5,
    Op.NOT_EQUAL: 4,
    Op.LESS: 3,
    Op.LESS_EQUAL: 2,
    Op.GREATER: 2,
    Op.GREATER_EQUAL: 3,
    Op.LOGICAL_AND: 1,
    Op.LOGICAL_OR: 1,
    Op.LOGICAL_NOT: 1,
}


@pytest.mark.parametrize("op", list(VERSIONS), ids=lambda op: op.name)
def test_registered_versions_match_tflite(op):
    resolver = pytflite.BuiltinOpResolver()
    last = VERSIONS[op]
    assert all(resolver.find_builtin(op, v) is not None for v in range(1, last + 1))
    assert resolver.find_builtin(op, last + 1) is None


def test_float_floor_div_divides_in_double_precision():
    # -1e-45 / 3 underflows to -0.0 in float32 but floors to -1 in double, as TFLite computes it
    x, y = np.array([-1e-45, 7.0], np.float32), np.array([3.0, 2.0], np.float32)
    (out,) = SingleOpModel(Op.FLOOR_DIV, [Operand(x), Operand(y)], [T.FLOAT32]).check()
    np.testing.assert_array_equal(out, [-1.0, 3.0])


def test_interpreters_of_one_model_share_the_8bit_lookup_tables():
    """An 8-bit ADD's 65536-entry table follows from the model alone: computed once per model (core/derived.py)."""
    rng = np.random.default_rng(5)
    a, b = (rng.integers(-128, 128, (2, 9)).astype(np.int8) for _ in range(2))
    operands = [Operand(a, quantization=(0.05, 3)), Operand(b, quantization=(0.07, -2))]
    model, feeds = SingleOpModel(Op.ADD, operands, [T.INT8], output_quantization=[(0.1, 1)]).build()
    interpreters = [pytflite.Interpreter(model_content=model) for _ in range(2)]
    outputs, tables = [], []
    for interpreter in interpreters:
        interpreter.allocate_tensors()
        for detail, feed in zip(interpreter.get_input_details(), feeds):
            interpreter.set_tensor(detail["index"], feed)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
        tables.append(len(interpreter.model.derived_constants))
    np.testing.assert_array_equal(outputs[0], outputs[1])
    assert interpreters[0].model is interpreters[1].model
    assert tables[0] > 0 and tables[1] == tables[0]  # the second interpreter computed no table

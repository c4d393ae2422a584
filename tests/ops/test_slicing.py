"""SLICE, STRIDED_SLICE, PAD, PADV2, MIRROR_PAD, DYNAMIC_UPDATE_SLICE, REVERSE_SEQUENCE against LiteRT.

Outputs are declared with shape [] (unranked for TFLite's purposes): LiteRT's SLICE validates a fully
specified declared output shape against the one it computes, and SingleOpModel's [1] placeholder would
fail there. LiteRT's Python get_tensor cannot read an empty dynamic tensor ("Invalid tensor size."):
for those the oracle's shape comes from its tensor details.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import AllocationType, tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_matches, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert


def tflite_type(dtype) -> TensorType:
    return tensor_type_for_dtype(np.dtype(dtype))


MOVABLE = [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float16]


def values(dtype, shape, data) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        elements = st.booleans()
    elif dtype.kind == "f":
        elements = st.floats(-100, 100, width=8 * dtype.itemsize)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(info.min, -1000), min(info.max, 1000))
    return data.draw(hnp.arrays(dtype, shape, elements=elements))


# --- SLICE ----------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_slice(data):
    dtype = data.draw(st.sampled_from(MOVABLE))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=6, min_side=1, max_side=4))
    x = values(dtype, shape, data)
    begin = [data.draw(st.integers(0, d - 1)) for d in shape]
    size = [data.draw(st.sampled_from([-1, *range(d - b + 1)])) for d, b in zip(shape, begin)]
    index_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    constant = data.draw(st.booleans())
    SingleOpModel(
        Op.SLICE,
        [
            Operand(x),
            Operand(np.array(begin, index_dtype), constant=constant),
            Operand(np.array(size, index_dtype), constant=constant),
        ],
        [tflite_type(dtype)],
    ).check()


def test_slice_strings():
    x = np.array([[b"a", b"bc", b""], [b"dd", b"e", b"fff"]], dtype=object)
    for constant in (True, False):
        SingleOpModel(
            Op.SLICE,
            [
                Operand(x, type=TensorType.STRING),
                Operand(np.array([0, 1], np.int32), constant=constant),
                Operand(np.array([2, -1], np.int32), constant=constant),
            ],
            [TensorType.STRING],
        ).check()


def test_slice_empty_result():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for constant in (True, False):
        SingleOpModel(
            Op.SLICE,
            [
                Operand(x),
                Operand(np.array([1, 4], np.int32), constant=constant),
                Operand(np.array([2, -1], np.int32), constant=constant),
            ],
            [TensorType.FLOAT32],
        ).check()


@pytest.mark.parametrize(
    ("begin", "size", "message"),
    [([1, 0], [3, 4], "Invalid begin and size."), ([0, 0], [1, -2], "Invalid size.")],
)
def test_slice_invalid(begin, size, message):
    x = np.zeros((3, 4), np.float32)
    for constant in (True, False):
        SingleOpModel(
            Op.SLICE,
            [
                Operand(x),
                Operand(np.array(begin, np.int32), constant=constant),
                Operand(np.array(size, np.int32), constant=constant),
            ],
            [TensorType.FLOAT32],
        ).fails(message)


def test_slice_wrong_begin_length():
    SingleOpModel(
        Op.SLICE,
        [
            Operand(np.zeros((3, 4), np.float32)),
            Operand(np.array([0], np.int32), constant=True),
            Operand(np.array([1], np.int32), constant=True),
        ],
        [TensorType.FLOAT32],
    ).fails("SLICE begin element count vs input rank 1 != 2")


# --- STRIDED_SLICE --------------------------------------------------------------------------------


@st.composite
def strided_slice_cases(draw):
    """Shapes, begin/end/strides and every mask. Shrunk axes get stride 1 and an in-range begin: TFLite
    leaves the output unwritten otherwise (no element to select), which cannot be compared."""
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    count = draw(st.integers(max(0, rank - 2), rank + 1))
    full = (1 << count) - 1
    begin = draw(st.lists(st.integers(-6, 6), min_size=count, max_size=count))
    end = draw(st.lists(st.integers(-6, 6), min_size=count, max_size=count))
    strides = draw(st.lists(st.sampled_from([-3, -2, -1, 1, 2, 3]), min_size=count, max_size=count))
    options = {
        "begin_mask": draw(st.integers(0, full)),
        "end_mask": draw(st.integers(0, full)),
        "ellipsis_mask": draw(st.sampled_from([0, 0, *(1 << i for i in range(count))])),
        "new_axis_mask": draw(st.sampled_from([0, draw(st.integers(0, full))])),
        "shrink_axis_mask": draw(st.sampled_from([0, draw(st.integers(0, full))])),
    }
    smallest = min(shape, default=1)
    for i in range(count):
        if options["shrink_axis_mask"] >> i & 1:
            strides[i] = 1
            begin[i] = draw(st.integers(-smallest, smallest - 1))
    return shape, begin, end, strides, options


def strided_slice(x, begin, end, strides, options, constant=True, constant_strides=True, dtype=None):
    return SingleOpModel(
        Op.STRIDED_SLICE,
        [
            Operand(x, type=dtype),
            Operand(np.array(begin, np.int32).reshape(-1), constant=constant),
            Operand(np.array(end, np.int32).reshape(-1), constant=constant),
            Operand(np.array(strides, np.int32).reshape(-1), constant=constant_strides),
        ],
        [dtype or tflite_type(np.asarray(x).dtype)],
        options,
    )


@settings(max_examples=500, deadline=None)
@given(case=strided_slice_cases(), constant=st.booleans(), constant_strides=st.booleans())
def test_strided_slice(case, constant, constant_strides):
    shape, begin, end, strides, options = case
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    strided_slice(x, begin, end, strides, options, constant, constant_strides).check()


@pytest.mark.parametrize("dtype", [*MOVABLE, np.uint32, np.float64, np.complex64])
def test_strided_slice_types(dtype):
    x = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
    strided_slice(x, [2, 0, 1], [0, 3, 5], [-1, 2, 2], {"shrink_axis_mask": 0}).check()
    strided_slice(x, [1, 1], [3, 2], [1, 1], {"shrink_axis_mask": 1}, constant=False).check()


def test_strided_slice_strings():
    x = np.array([[b"a", b"bc", b""], [b"dd", b"e", b"fff"]], dtype=object)
    strided_slice(x, [1, 2], [0, 0], [-1, -2], {"end_mask": 1}, dtype=TensorType.STRING).check()
    strided_slice(x, [1, 2], [0, 0], [-1, -2], {"end_mask": 1}, False, dtype=TensorType.STRING).check()


@pytest.mark.parametrize(
    ("begin", "size", "strides", "options"),
    [
        ([1, 0, 2], [2, 3, 2], [1, 1, 1], {}),
        ([0, 1, 0], [3, 2, 5], [2, 1, 2], {}),
        ([2, 3, 4], [1, 1, 1], [1, 1, 1], {"shrink_axis_mask": 0b101}),
        ([5, 0, 0], [2, 2, 3], [1, 1, 1], {"begin_mask": 0b001}),
        ([0, 0, 3], [3, 2, 2], [1, 1, 1], {"end_mask": 0b100}),
    ],
)
def test_strided_slice_offset(begin, size, strides, options):
    """With `offset`, end holds sizes counted from begin, so the output shape is known from end alone
    and a begin computed at run time keeps the output static."""
    x = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    options = {"offset": True, **options}
    expected = strided_slice(x, begin, size, strides, options).check()
    # begin and end computed: LiteRT reads end while preparing, before it has data, and crashes; here
    # the output is dynamic and matches the constant case.
    model, feeds = strided_slice(x, begin, size, strides, options, constant=False).build()
    assert_matches(run(pytflite.Interpreter(model_content=model), feeds)[0], expected[0])
    # begin computed, end and strides constant:
    SingleOpModel(
        Op.STRIDED_SLICE,
        [
            Operand(x),
            Operand(np.array(begin, np.int32)),
            Operand(np.array(size, np.int32), constant=True),
            Operand(np.array(strides, np.int32), constant=True),
        ],
        [TensorType.INT32],
        options,
    ).check()


def test_strided_slice_offset_past_the_end():
    """TFLite sizes the output from end but reads past the input: an error here, not a crash."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    strided_slice(x, [2, 0], [3, 4], [1, 1], {"offset": True}).fails(
        "StridedSlice: the slice visits \\[1, 4\\] elements per axis but the output shape is \\[3, 4\\]"
    )


def test_strided_slice_of_constant_is_folded():
    builder = ModelBuilder()
    x = builder.add_tensor("x", TensorType.INT32, [2, 5], data=np.arange(10, dtype=np.int32).reshape(2, 5))
    begin = builder.add_tensor("b", TensorType.INT32, [2], data=np.array([1, 4], np.int32))
    end = builder.add_tensor("e", TensorType.INT32, [2], data=np.array([0, 0], np.int32))
    strides = builder.add_tensor("s", TensorType.INT32, [2], data=np.array([1, -2], np.int32))
    sliced = builder.add_tensor("sliced", TensorType.INT32, [])
    y = builder.add_input("y", TensorType.INT32, [2])
    out = builder.add_tensor("out", TensorType.INT32, [])
    builder.add_operator(Op.STRIDED_SLICE, [x, begin, end, strides], [sliced], {"shrink_axis_mask": 1})
    builder.add_operator(Op.ADD, [sliced, y], [out], {})
    builder.add_output(out)
    model = builder.build()
    feeds = [np.array([10, 20], np.int32)]
    interpreter = pytflite.Interpreter(model_content=model)
    ours = run(interpreter, feeds)
    assert_matches(ours[0], run(litert_interpreter(model), feeds)[0])
    np.testing.assert_array_equal(ours[0], [19, 27])
    assert interpreter.subgraphs[0].tensors[sliced].allocation_type == AllocationType.PERSISTENT_RO


def test_strided_slice_zero_stride():
    x = np.zeros((3, 4), np.float32)
    strided_slice(x, [0, 0], [3, 4], [1, 0], {}).fails("stride value has to be non-zero")


def test_strided_slice_mask_beyond_indices():
    """A new-axis bit past the given indices makes TFLite drop an input axis and read out of bounds."""
    x = np.zeros((2, 3), np.float32)
    strided_slice(x, [0], [1], [1], {"new_axis_mask": 0b10}).fails(
        "StridedSlice: new_axis_mask sets bits beyond the begin/end/strides given"
    )


def test_strided_slice_index_type():
    SingleOpModel(
        Op.STRIDED_SLICE,
        [
            Operand(np.zeros((3, 4), np.float32)),
            Operand(np.array([0, 0], np.int64), constant=True),
            Operand(np.array([3, 4], np.int32), constant=True),
            Operand(np.array([1, 1], np.int32), constant=True),
        ],
        [TensorType.FLOAT32],
    ).fails(r"Type INT64 \(begin\) is unsupported by op STRIDED_SLICE.")


# --- PAD / PADV2 ----------------------------------------------------------------------------------

PAD_DTYPES = [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float16]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_pad(data):
    dtype = data.draw(st.sampled_from(PAD_DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=4))
    x = values(dtype, shape, data)
    pairs = [[data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))] for _ in shape]
    paddings_dtype = data.draw(st.sampled_from([np.int32, np.int64, np.int8, np.int16]))
    paddings = np.array(pairs, paddings_dtype).reshape(len(shape), 2)
    constant = data.draw(st.booleans())
    inputs = [Operand(x), Operand(paddings, constant=constant)]
    op = data.draw(st.sampled_from([Op.PAD, Op.PADV2]))
    if op == Op.PADV2:
        fill = values(dtype, (), data)
        inputs.append(Operand(fill, constant=data.draw(st.booleans())))
    SingleOpModel(op, inputs, [tflite_type(dtype)]).check()


@pytest.mark.parametrize("op", [Op.PAD, Op.PADV2])
@pytest.mark.parametrize(("dtype", "zero_point"), [(np.int8, -3), (np.uint8, 130), (np.int16, 0)])
def test_pad_quantized(op, dtype, zero_point):
    """Quantized PAD fills with the output's zero point (the real value 0); PADV2's value must share the
    input's quantization."""
    quantization = AffineQuantization([0.5], [zero_point])
    x = (np.arange(24) % 11).astype(dtype).reshape(2, 3, 4)
    inputs = [
        Operand(x, quantization=quantization),
        Operand(np.array([[0, 1], [2, 0], [1, 1]], np.int32), constant=True),
    ]
    if op == Op.PADV2:
        inputs.append(Operand(np.array(7, dtype), constant=True, quantization=quantization))
    SingleOpModel(op, inputs, [tflite_type(dtype)], output_quantization=[quantization]).check()


def test_pad_bool_paddings():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for constant in (True, False):
        paddings = Operand(np.array([[True, False], [False, True]]), constant=constant)
        SingleOpModel(Op.PAD, [Operand(x), paddings], [TensorType.FLOAT32]).check()


def test_pad_image_style():
    """The [[0, 0], [a, b], [c, d], [0, 0]] pattern has its own TFLite path."""
    x = np.random.default_rng(0).standard_normal((2, 5, 6, 3)).astype(np.float32)
    paddings = np.array([[0, 0], [1, 2], [3, 0], [0, 0]], np.int32)
    SingleOpModel(Op.PAD, [Operand(x), Operand(paddings, constant=True)], [TensorType.FLOAT32]).check()
    SingleOpModel(
        Op.PADV2,
        [Operand(x), Operand(paddings, constant=True), Operand(np.array(-1.5, np.float32))],
        [TensorType.FLOAT32],
    ).check()


def test_pad_invalid():
    x = np.zeros((2, 3), np.float32)
    SingleOpModel(
        Op.PAD,
        [Operand(x), Operand(np.array([[0, 1], [-1, 0]], np.int32), constant=True)],
        [TensorType.FLOAT32],
    ).fails("Pad value has to be greater than equal to 0.")
    SingleOpModel(
        Op.PAD, [Operand(x), Operand(np.array([[0, 1]], np.int32), constant=True)], [TensorType.FLOAT32]
    ).fails("PAD paddings dimension 0 vs input rank 1 != 2")
    SingleOpModel(
        Op.PADV2,
        [Operand(x), Operand(np.zeros((2, 2), np.int32), constant=True), Operand(np.array(1, np.int32))],
        [TensorType.FLOAT32],
    ).fails("PADV2 input/constant_values types: FLOAT32 != INT32")


# --- MIRROR_PAD -----------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_mirror_pad(data):
    dtype = data.draw(st.sampled_from(MOVABLE))
    mode = data.draw(st.sampled_from([0, 1]))  # REFLECT, SYMMETRIC
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    x = values(dtype, shape, data)
    offset = 1 if mode == 0 else 0
    pairs = [[data.draw(st.integers(0, d - offset)), data.draw(st.integers(0, d - offset))] for d in shape]
    paddings = np.array(pairs, data.draw(st.sampled_from([np.int32, np.int64])))
    constant = data.draw(st.booleans())
    SingleOpModel(
        Op.MIRROR_PAD,
        [Operand(x), Operand(paddings, constant=constant)],
        [tflite_type(dtype)],
        {"mode": mode},
    ).check()


def test_mirror_pad_quantized():
    quantization = AffineQuantization([0.25], [-7])
    x = np.arange(-12, 12, dtype=np.int8).reshape(4, 6)
    SingleOpModel(
        Op.MIRROR_PAD,
        [Operand(x, quantization=quantization), Operand(np.array([[3, 2], [1, 5]], np.int32), constant=True)],
        [TensorType.INT8],
        {"mode": 0},
        output_quantization=[quantization],
    ).check()
    SingleOpModel(
        Op.MIRROR_PAD,
        [Operand(x, quantization=quantization), Operand(np.array([[3, 2], [1, 5]], np.int32), constant=True)],
        [TensorType.INT8],
        {"mode": 0},
        output_quantization=[AffineQuantization([0.5], [-7])],
    ).fails("input scale 0.25 != output scale 0.5")


def test_mirror_pad_too_wide():
    x = np.zeros((3, 4), np.float32)
    for constant in (True, False):
        SingleOpModel(
            Op.MIRROR_PAD,
            [Operand(x), Operand(np.array([[1, 1], [4, 0]], np.int32), constant=constant)],
            [TensorType.FLOAT32],
            {"mode": 1},
        ).check()  # SYMMETRIC may pad by the whole dimension
        SingleOpModel(
            Op.MIRROR_PAD,
            [Operand(x), Operand(np.array([[1, 1], [4, 0]], np.int32), constant=constant)],
            [TensorType.FLOAT32],
            {"mode": 0},
        ).fails("MirrorPad paddings must be no greater than the input dimension size minus the mode offset")


# --- DYNAMIC_UPDATE_SLICE -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_dynamic_update_slice(data):
    dtype = data.draw(st.sampled_from(MOVABLE))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=5, min_side=1, max_side=5))
    update_shape = tuple(data.draw(st.integers(0, d)) for d in shape)
    operand, update = values(dtype, shape, data), values(dtype, update_shape, data)
    starts = [data.draw(st.integers(-3, d + 2)) for d in shape]  # out-of-range starts are clamped
    index_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    SingleOpModel(
        Op.DYNAMIC_UPDATE_SLICE,
        [
            Operand(operand),
            Operand(update, constant=data.draw(st.booleans())),
            Operand(np.array(starts, index_dtype).reshape(-1), constant=data.draw(st.booleans())),
        ],
        [tflite_type(dtype)],
    ).check()


def test_dynamic_update_slice_too_large():
    SingleOpModel(
        Op.DYNAMIC_UPDATE_SLICE,
        [
            Operand(np.zeros((2, 3), np.float32)),
            Operand(np.zeros((3, 1), np.float32)),
            Operand(np.array([0, 0], np.int32)),
        ],
        [TensorType.FLOAT32],
    ).fails(r"DYNAMIC_UPDATE_SLICE update shape \[3, 1\] exceeds operand shape \[2, 3\]")


# --- REVERSE_SEQUENCE -----------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_reverse_sequence(data):
    dtype = data.draw(st.sampled_from([np.float32, np.uint8, np.int16, np.int32, np.int64]))
    shape = data.draw(hnp.array_shapes(min_dims=2, max_dims=5, min_side=1, max_side=4))
    seq_dim, batch_dim = data.draw(st.permutations(range(len(shape))))[:2]
    x = values(dtype, shape, data)
    lengths = [data.draw(st.integers(-1, shape[seq_dim])) for _ in range(shape[batch_dim])]
    lengths_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    SingleOpModel(
        Op.REVERSE_SEQUENCE,
        [Operand(x), Operand(np.array(lengths, lengths_dtype), constant=data.draw(st.booleans()))],
        [tflite_type(dtype)],
        {"seq_dim": seq_dim, "batch_dim": batch_dim},
    ).check()


def test_reverse_sequence_invalid():
    x = np.zeros((2, 3), np.float32)
    SingleOpModel(
        Op.REVERSE_SEQUENCE,
        [Operand(x), Operand(np.array([1, 4], np.int32), constant=True)],
        [TensorType.FLOAT32],
        {"seq_dim": 1, "batch_dim": 0},
    ).fails("ReverseSequence: seq_lengths must be <= 3, the size of dimension 1")
    SingleOpModel(
        Op.REVERSE_SEQUENCE,
        [Operand(x), Operand(np.array([1, 1, 1], np.int32), constant=True)],
        [TensorType.FLOAT32],
        {"seq_dim": 0, "batch_dim": 0},
    ).fails("ReverseSequence: seq_dim and batch_dim must differ")
    SingleOpModel(
        Op.REVERSE_SEQUENCE,
        [Operand(x.astype(np.int8)), Operand(np.array([1, 1], np.int32), constant=True)],
        [TensorType.INT8],
        {"seq_dim": 1, "batch_dim": 0},
    ).fails("Type 'INT8' is not supported by reverse_sequence.")


# --- quantization: what TFLite checks, what it copies -----------------------------------------------------

_XQ = np.arange(-12, 12).reshape(2, 3, 4)
_PADDINGS = Operand(np.array([[0, 1], [2, 0], [1, 1]], np.int32), constant=True)
_QUANTIZED_MOVERS = {
    "SLICE": lambda x, t, q: (
        Op.SLICE,
        [Operand(x, type=t, quantization=q)]
        + [Operand(np.array(v, np.int32), constant=True) for v in ([0, 1, 1], [2, 2, -1])],
        None,
        4,
    ),
    "STRIDED_SLICE": lambda x, t, q: (
        Op.STRIDED_SLICE,
        [Operand(x, type=t, quantization=q)]
        + [Operand(np.array(v, np.int32), constant=True) for v in ([0, 0, 3], [2, 3, 0], [1, 2, -1])],
        None,
        4,
    ),
    "PAD": lambda x, t, q: (Op.PAD, [Operand(x, type=t, quantization=q), _PADDINGS], None, 4),
    "MIRROR_PAD": lambda x, t, q: (
        Op.MIRROR_PAD,
        [Operand(x, type=t, quantization=q), _PADDINGS],
        {"mode": 1},
        3,
    ),
    "REVERSE_SEQUENCE": lambda x, t, q: (
        Op.REVERSE_SEQUENCE,
        [Operand(x, type=t, quantization=q), Operand(np.array([1, 3], np.int32), constant=True)],
        {"seq_dim": 1, "batch_dim": 0},
        1,
    ),
}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("op", sorted(_QUANTIZED_MOVERS))
def test_quantized_movers_accept_what_litert_accepts(op, dtype):
    """SLICE, STRIDED_SLICE and REVERSE_SEQUENCE copy quantized values whatever the output's parameters;
    PAD fills with the output's zero point (copying the input as stored); MIRROR_PAD needs equal
    quantization (int16: zero points 0)."""
    from tests.ops.test_shape import agrees_with_litert

    tensor_type = tflite_type(dtype)
    base = {np.int8: (0.5, 3), np.uint8: (0.5, 130), np.int16: (0.5, 0)}[dtype]
    variants = [(base, base), (base, (0.25, base[1])), (base, (0.5, base[1] + 1))]
    if dtype == np.int16:
        variants.append(((0.5, 2), (0.5, 2)))
    for in_q, out_q in variants:
        op_code, inputs, options, version = _QUANTIZED_MOVERS[op](_XQ.astype(dtype), tensor_type, in_q)
        model = SingleOpModel(
            op_code, inputs, [tensor_type], options, version=version, output_quantization=[out_q]
        )
        agrees_with_litert(model)


@pytest.mark.parametrize(
    ("dtype", "zero_point"), [(np.int8, -128), (np.int8, 127), (np.uint8, 255), (np.int16, 0)]
)
def test_pad_fills_with_the_output_zero_point(dtype, zero_point):
    # the input keeps its stored values; the padding is the OUTPUT's zero point
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, (1, 5, 6, 3), endpoint=True).astype(dtype)
    paddings = Operand(np.array([[0, 0], [1, 2], [3, 0], [0, 0]], np.int32), constant=True)  # image style
    for pads in (paddings, Operand(np.array([[1, 0], [0, 1], [2, 2], [1, 0]], np.int32))):
        SingleOpModel(
            Op.PAD,
            [Operand(x, quantization=(0.1, 0 if dtype == np.int16 else 5)), pads],
            [tflite_type(dtype)],
            output_quantization=[(0.2, zero_point)],
            version=4,
        ).check()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
def test_padv2_constant_quantization(dtype):
    """PADV2's constant must carry the output's scale and zero point (TFLite checks it at invoke); its
    stored value is the fill, without requantization."""
    from tests.ops.test_shape import agrees_with_litert

    zero = 0 if dtype == np.int16 else 4
    x = (np.arange(24) % 11).astype(dtype).reshape(2, 3, 4)
    for constant_q, ran in [((0.5, zero), True), ((0.25, zero), False), ((0.5, zero + 1), False)]:
        model = SingleOpModel(
            Op.PADV2,
            [
                Operand(x, quantization=(0.3, zero)),
                _PADDINGS,
                Operand(np.array(9, dtype), constant=True, quantization=constant_q),
            ],
            [tflite_type(dtype)],
            output_quantization=[(0.5, zero)],
            version=4,
        )
        assert agrees_with_litert(model) == ran


def test_pad_quantized_errors():
    x = np.zeros((2, 3), np.int8)
    SingleOpModel(
        Op.PADV2,
        [
            Operand(x, quantization=(0.5, 1)),
            Operand(np.zeros((2, 2), np.int32), constant=True),
            Operand(np.array(3, np.int8), constant=True, quantization=(0.25, 1)),
        ],
        [TensorType.INT8],
        output_quantization=[(0.5, 1)],
    ).fails("output scale 0.5 != constant_values scale 0.25")


@pytest.mark.parametrize("op", [Op.PAD])
def test_quantized_corpus_layers(op):
    from tests.ops.test_shape import check_corpus_layer, corpus_layers

    layers = corpus_layers(op)
    for name, index in layers:
        check_corpus_layer(name, index)

"""Shape and data-movement kernels against LiteRT: RESHAPE, SQUEEZE, EXPAND_DIMS, SHAPE, RANK, FILL, RANGE,
BROADCAST_TO, BROADCAST_ARGS, TRANSPOSE, CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, TILE, REVERSE_V2.

Values that decide an output shape (shape, axis, perm, multiples tensors) are tried both as constants
(resolved in prepare) and as runtime inputs (dynamic outputs resized at invoke).
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
from pytflite.core.types import AllocationType, storage_dtype, tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from pytflite.model.reader import read_model
from tests.oracle import CORPUS, compare_with_litert, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel, check_ref

pytestmark = requires_litert

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _type(dtype) -> T:
    return tensor_type_for_dtype(np.dtype(dtype))


def _sample(shape, dtype, seed=0) -> np.ndarray:
    """Distinct-ish values of any type, so that a misplaced element shows."""
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == np.bool_:
        return rng.integers(0, 2, count).astype(np.bool_).reshape(shape)
    if dtype is object:
        return np.array([f"s{i}".encode() * (i % 3 + 1) for i in range(count)], dtype=object).reshape(shape)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(count) + 1j * rng.standard_normal(count)).astype(dtype).reshape(shape)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(count).astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    return (
        rng.integers(max(info.min, -1000), min(info.max, 1000), count, endpoint=True)
        .astype(dtype)
        .reshape(shape)
    )


def _check(model: SingleOpModel) -> list[np.ndarray]:
    """Compare with LiteRT, unless an output is empty: LiteRT's get_tensor fails on those ("Invalid tensor
    size"), so such a model runs on pytflite alone and the caller checks the values."""
    built, feeds = model.build()
    ours = pytflite.Interpreter(model_content=built)
    outputs = run(ours, feeds)
    if all(o.size for o in outputs):
        return compare_with_litert(built, feeds)
    return outputs


def _prepare_error(model: bytes, match: str) -> None:
    with pytest.raises(RuntimeError, match=match):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def _invoke_error(model: bytes, feeds, match: str) -> None:
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), feeds):
        interpreter.set_tensor(detail["index"], value)
    with pytest.raises(RuntimeError, match=match):
        interpreter.invoke()


# --- RESHAPE -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [[6, 4], [-1, 2], [24], [2, -1, 3], [1, 1, 24, 1]])
def test_shape_tensor(target):
    (out,) = SingleOpModel(
        Op.RESHAPE, [Operand(X), Operand(np.array(target, np.int32), constant=True)], [T.FLOAT32]
    ).check()
    assert out.shape == X.reshape(target).shape


@pytest.mark.parametrize("target", [[4, 6], [-1], [3, 8]])
def test_shape_option(target):
    (out,) = SingleOpModel(Op.RESHAPE, [Operand(X)], [T.FLOAT32], {"new_shape": target}).check()
    assert out.shape == X.reshape(target).shape


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.bool_, np.int64])
def test_other_types(dtype):
    x = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    SingleOpModel(
        Op.RESHAPE,
        [Operand(x), Operand(np.array([2, 6], np.int32), constant=True)],
        [pytflite.core.types.tensor_type_for_dtype(np.dtype(dtype))],
    ).check()


def test_runtime_shape():
    (out,) = SingleOpModel(Op.RESHAPE, [Operand(X), Operand(np.array([4, 6], np.int32))], [T.FLOAT32]).check()
    assert out.shape == (4, 6)


def test_bad_element_count():
    model, _ = SingleOpModel(
        Op.RESHAPE, [Operand(X), Operand(np.array([5, 5], np.int32), constant=True)], [T.FLOAT32]
    ).build()
    with pytest.raises(RuntimeError, match=r"num_input_elements != num_output_elements \(24 != 25\)"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- SQUEEZE, EXPAND_DIMS ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dims"),
    [
        ((1, 3, 1, 4), []),
        ((1, 3, 1, 4), [0]),
        ((1, 3, 1, 4), [-2]),
        ((1, 3, 1, 4), [2, 0, -4]),
        ((1, 1, 1), []),
        ((2, 3), []),
        ((1,), [0]),
    ],
)
def test_squeeze(shape, dims):
    x = _sample(shape, np.float32)
    (out,) = SingleOpModel(Op.SQUEEZE, [Operand(x)], [T.FLOAT32], {"squeeze_dims": dims}, version=2).check()
    axes = tuple({d % len(shape) for d in dims})  # TFLite accepts a dimension named twice
    assert out.shape == (np.squeeze(x, axes) if dims else np.squeeze(x)).shape


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int64, np.bool_, np.float16, object])
def test_squeeze_types(dtype):
    x = _sample((2, 1, 3), dtype)
    SingleOpModel(Op.SQUEEZE, [Operand(x)], [_type(x.dtype)], {"squeeze_dims": [1]}).check()


def test_squeeze_bad_dim():
    model, _ = SingleOpModel(
        Op.SQUEEZE, [Operand(_sample((1, 3), np.float32))], [T.FLOAT32], {"squeeze_dims": [1]}
    ).build()
    _prepare_error(model, r"squeeze_dims entry 1 is not a dimension of size 1")


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("axis_dtype", [np.int32, np.int64])
def test_expand_dims(axis, constant, axis_dtype):
    x = _sample((2, 3, 4), np.float32)
    (out,) = SingleOpModel(
        Op.EXPAND_DIMS, [Operand(x), Operand(np.array([axis], axis_dtype), constant=constant)], [T.FLOAT32]
    ).check()
    assert out.shape == np.expand_dims(x, axis).shape


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.bool_, np.complex64, object])
def test_expand_dims_types(dtype):
    x = _sample((3, 2), dtype)
    SingleOpModel(
        Op.EXPAND_DIMS, [Operand(x), Operand(np.array(1, np.int32), constant=True)], [_type(x.dtype)]
    ).check()


def test_expand_dims_scalar_and_bad_axis():
    SingleOpModel(
        Op.EXPAND_DIMS,
        [Operand(np.array(2.5, np.float32)), Operand(np.array([0], np.int32), constant=True)],
        [T.FLOAT32],
    ).check()
    model, _ = SingleOpModel(
        Op.EXPAND_DIMS,
        [Operand(_sample((2, 3), np.float32)), Operand(np.array([3], np.int32), constant=True)],
        [T.FLOAT32],
    ).build()
    _prepare_error(model, r"axis <= input_dims.size was not true")


# --- SHAPE, RANK -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("out_type", [T.INT32, T.INT64])
@pytest.mark.parametrize("shape", [(2, 3, 4), (), (5,), (1, 0, 3)])
def test_shape(out_type, shape):
    x = _sample(shape, np.float32)
    (out,) = _check(SingleOpModel(Op.SHAPE, [Operand(x)], [out_type], {"out_type": out_type}))
    assert out.tolist() == list(shape)


@pytest.mark.parametrize("dtype", [np.int8, np.bool_, object])
def test_shape_and_rank_of_other_types(dtype):
    x = _sample((4, 1, 2), dtype)
    SingleOpModel(Op.SHAPE, [Operand(x)], [T.INT32], {"out_type": T.INT32}).check()
    SingleOpModel(Op.RANK, [Operand(x)], [T.INT32]).check()


@pytest.mark.parametrize("shape", [(), (3,), (2, 3, 4, 5, 1)])
def test_rank(shape):
    (out,) = SingleOpModel(Op.RANK, [Operand(_sample(shape, np.float32))], [T.INT32]).check()
    assert out.shape == () and int(out) == len(shape)


def test_shape_bad_out_type():
    model, _ = SingleOpModel(Op.SHAPE, [Operand(X)], [T.FLOAT32], {"out_type": T.FLOAT32}).build()
    _prepare_error(model, r"Unknown shape output data type: 1")


def _shape_then_reshape(dynamic: bool) -> bytes:
    """x -> [RESHAPE by a runtime shape] -> y; SHAPE(y) -> RESHAPE(z by that shape): SHAPE's output is known in
    prepare, so the second RESHAPE resolves its shape in prepare too (or after the first ran, when dynamic)."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 3, 4])
    if dynamic:
        target = builder.add_input("target", T.INT32, [2])
        y = builder.add_tensor("y", T.FLOAT32, [1])
        builder.add_operator(Op.RESHAPE, [x, target], [y], {"new_shape": []})
    else:
        y = x
    z = builder.add_input("z", T.FLOAT32, [24])
    shape = builder.add_tensor("shape", T.INT32, [1])
    builder.add_operator(Op.SHAPE, [y], [shape], {"out_type": T.INT32})
    out = builder.add_tensor("out", T.FLOAT32, [1])
    builder.add_operator(Op.RESHAPE, [z, shape], [out], {"new_shape": []})
    rank = builder.add_tensor("rank", T.INT32, [])
    builder.add_operator(Op.RANK, [y], [rank])
    builder.add_output(out)
    builder.add_output(shape)
    builder.add_output(rank)
    return builder.build()


@pytest.mark.parametrize("dynamic", [False, True])
def test_shape_feeds_reshape(dynamic):
    model = _shape_then_reshape(dynamic)
    z = np.arange(24, dtype=np.float32)
    feeds = [X, np.array([6, 4], np.int32), z] if dynamic else [X, z]
    out, shape, rank = compare_with_litert(model, feeds)
    assert out.shape == ((6, 4) if dynamic else (2, 3, 4)) and int(rank) == len(shape)
    if not dynamic:  # SHAPE's output is persistent: written once in prepare, read as a constant
        interpreter = pytflite.Interpreter(model_content=model)
        interpreter.allocate_tensors()
        tensor = interpreter.subgraphs[0].tensors[interpreter.get_output_details()[1]["index"]]
        assert tensor.allocation_type == AllocationType.PERSISTENT_RO
        assert tensor.data.tolist() == [2, 3, 4]


# --- FILL --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        np.array(1.5, np.float32),
        np.array(-7, np.int32),
        np.array(2**40, np.int64),
        np.array(True),
        np.array(-3, np.int8),
        np.array(300, np.int16),
        np.array(200, np.uint8),
        np.array(b"abc", dtype=object),
    ],
    ids=lambda v: str(v.dtype),
)
@pytest.mark.parametrize("constant", [True, False])
def test_fill(value, constant):
    dims = Operand(np.array([2, 3, 1], np.int32), constant=constant)
    # LiteRT's set_tensor garbles a 0-d string input: the string value is a constant
    value = Operand(value, constant=value.dtype == object)
    (out,) = SingleOpModel(Op.FILL, [dims, value], [_type(value.value.dtype)], version=3).check()
    assert out.shape == (2, 3, 1)


@pytest.mark.parametrize("dims", [[], [0, 4], [5]])
def test_fill_int64_dims(dims):
    SingleOpModel(
        Op.FILL,
        [Operand(np.array(dims, np.int64), constant=True), Operand(np.array(4.0, np.float32))],
        [T.FLOAT32],
    ).check()


def test_fill_negative_dims():
    model, _ = SingleOpModel(
        Op.FILL,
        [Operand(np.array([2, -1], np.int32), constant=True), Operand(np.array(4.0, np.float32))],
        [T.FLOAT32],
    ).build()
    _prepare_error(model, r"Fill dimensions must be >= 0 got 2")


# --- RANGE -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "limit", "delta"),
    [
        (0, 10, 1),
        (3, 18, 4),
        (10, -5, -3),
        (5, 5, 1),
        (-7, 7, 7),
        (0.0, 1.0, 0.1),
        (0.5, -20.25, -0.75),
        (1.0, 1000.0, 0.3),
        (0.0, 3.0, 1.5),
    ],
)
@pytest.mark.parametrize("constant", [True, False])
def test_range(start, limit, delta, constant):
    dtypes = [np.float32] if isinstance(start, float) else [np.int32, np.int64]
    for dtype in dtypes:
        operands = [Operand(np.array(v, dtype), constant=constant) for v in (start, limit, delta)]
        (out,) = _check(SingleOpModel(Op.RANGE, operands, [_type(dtype)]))
        assert out.dtype == dtype
        assert out.shape == np.arange(start, limit, delta, dtype=dtype).shape


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ((0, 10, 0), r"!std::equal_to<T>\(\)\(delta, 0\) was not true"),
        ((0, 10, -1), r"\(start >= limit && delta < 0\) \|\| \(start <= limit && delta > 0\) was not true"),
    ],
)
def test_range_errors(values, message):
    operands = [Operand(np.array(v, np.int32), constant=True) for v in values]
    model, _ = SingleOpModel(Op.RANGE, operands, [T.INT32]).build()
    _prepare_error(model, message)
    operands = [Operand(np.array(v, np.int32)) for v in values]
    model, feeds = SingleOpModel(Op.RANGE, operands, [T.INT32]).build()
    _invoke_error(model, feeds, message)


def test_range_type():
    operands = [Operand(np.array(v, np.int16), constant=True) for v in (0, 4, 1)]
    model, _ = SingleOpModel(Op.RANGE, operands, [T.INT16]).build()
    _prepare_error(model, r"Unknown index output data type: INT16")


# --- BROADCAST_TO, BROADCAST_ARGS ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((3,), [2, 3]),
        ((1, 3), [4, 3]),
        ((2, 1, 4), [3, 2, 5, 4]),
        ((), [2, 2]),
        ((2, 3), [2, 3]),
        ((1,), [0, 4]),
    ],
)
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("shape_dtype", [np.int32, np.int64])
def test_broadcast_to(shape, target, constant, shape_dtype):
    x = _sample(shape, np.float32)
    (out,) = _check(
        SingleOpModel(
            Op.BROADCAST_TO,
            [Operand(x), Operand(np.array(target, shape_dtype), constant=constant)],
            [T.FLOAT32],
            version=2,
        )
    )
    np.testing.assert_array_equal(out, np.broadcast_to(x, target))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.bool_, np.float16, np.uint8])
def test_broadcast_to_types(dtype):
    x = _sample((3, 1), dtype)
    SingleOpModel(
        Op.BROADCAST_TO,
        [Operand(x), Operand(np.array([2, 3, 4], np.int32), constant=True)],
        [_type(dtype)],
        version=3,
    ).check()


def test_broadcast_to_not_broadcastable():
    model, _ = SingleOpModel(
        Op.BROADCAST_TO,
        [Operand(_sample((2, 3), np.float32)), Operand(np.array([4, 3], np.int32), constant=True)],
        [T.FLOAT32],
        version=2,
    ).build()
    _prepare_error(model, r"Output shape must be broadcastable from input shape.")


@pytest.mark.parametrize(
    ("first", "second"),
    [([2, 1, 3], [4, 1]), ([5], [1, 1, 5]), ([], [3, 2]), ([1, 7], [6, 1]), ([0, 1], [1])],
)
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_broadcast_args(first, second, constant, dtype):
    (out,) = SingleOpModel(
        Op.BROADCAST_ARGS,
        [
            Operand(np.array(first, dtype), constant=constant),
            Operand(np.array(second, dtype), constant=constant),
        ],
        [_type(dtype)],
    ).check()
    assert tuple(out) == np.broadcast_shapes(tuple(first), tuple(second))


def test_broadcast_args_incompatible():
    # LiteRT aborts the process (TFLITE_CHECK_EQ) on incompatible shapes: pytflite alone.
    model, feeds = SingleOpModel(
        Op.BROADCAST_ARGS, [Operand(np.array([2, 3], np.int32)), Operand(np.array([4], np.int32))], [T.INT32]
    ).build()
    _invoke_error(model, feeds, r"shapes \[2, 3\] and \[4\] are not broadcastable")


# --- TRANSPOSE ---------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_transpose(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=6, min_side=1, max_side=4))
    rank = len(shape)
    perm = data.draw(st.permutations(range(rank)))
    perm = [p - rank if data.draw(st.booleans()) else p for p in perm]  # negative entries count from the end
    constant = data.draw(st.booleans())
    x = _sample(shape, np.float32, seed=rank)
    (out,) = SingleOpModel(
        Op.TRANSPOSE, [Operand(x), Operand(np.array(perm, np.int32), constant=constant)], [T.FLOAT32]
    ).check()
    np.testing.assert_array_equal(out, np.transpose(x, perm))


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float16, np.complex64]
)
def test_transpose_types(dtype):
    x = _sample((2, 3, 4), dtype)
    SingleOpModel(
        Op.TRANSPOSE, [Operand(x), Operand(np.array([2, 0, 1], np.int32), constant=True)], [_type(dtype)]
    ).check()


def test_transpose_rank8_and_quantized():
    x = _sample((2, 1, 2, 3, 1, 2, 2, 1), np.float32)
    perm = np.array([7, 3, 0, 5, 1, 6, 2, 4], np.int32)
    SingleOpModel(Op.TRANSPOSE, [Operand(x), Operand(perm, constant=True)], [T.FLOAT32], version=6).check()
    q = _sample((3, 5), np.int8)
    SingleOpModel(
        Op.TRANSPOSE,
        [Operand(q, quantization=(0.5, 3)), Operand(np.array([1, 0], np.int32), constant=True)],
        [T.INT8],
        version=2,
        output_quantization=[(0.5, 3)],
    ).check()


def test_transpose_scalar():
    # LiteRT's reference transpose leaves a scalar's output unwritten (it indexes its stride arrays at -1):
    # pytflite alone, which copies the value.
    model, feeds = SingleOpModel(
        Op.TRANSPOSE, [Operand(np.array(1.5, np.float32)), Operand(np.zeros(0, np.int32))], [T.FLOAT32]
    ).build()
    (out,) = run(pytflite.Interpreter(model_content=model), feeds)
    assert out.shape == () and out == 1.5


def test_transpose_bad_perm():
    model, _ = SingleOpModel(
        Op.TRANSPOSE, [Operand(X), Operand(np.array([0, 3, 1], np.int32), constant=True)], [T.FLOAT32]
    ).build()
    _prepare_error(model, r"Transpose op permutations array is out of bounds.")


# --- CONCATENATION -----------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_concatenation(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=5, min_side=1, max_side=4))
    rank = len(shape)
    axis = data.draw(st.integers(-rank, rank - 1))
    count = data.draw(st.integers(1, 4))
    operands = []
    for i in range(count):
        part = list(shape)
        part[axis] = data.draw(st.integers(0 if i else 1, 3))
        operands.append(Operand(_sample(part, np.float32, seed=i), constant=data.draw(st.booleans())))
    (out,) = SingleOpModel(Op.CONCATENATION, operands, [T.FLOAT32], {"axis": axis}).check()
    np.testing.assert_array_equal(out, np.concatenate([o.value for o in operands], axis=axis))


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float16, np.uint32]
)
def test_concatenation_types(dtype):
    parts = [_sample((2, n), dtype, seed=n) for n in (1, 3)]
    quantization = (0.25, 0) if dtype in (np.int8, np.uint8, np.int16) else None
    SingleOpModel(
        Op.CONCATENATION,
        [Operand(p, quantization=quantization) for p in parts],
        [_type(dtype)],
        {"axis": 1},
        version=3,
        output_quantization=[quantization],
    ).check()


@pytest.mark.parametrize("scalars", [False, True])
def test_concatenation_constants_fold(scalars):
    """All-constant inputs are concatenated in prepare; the output is persistent."""
    parts = (
        [np.array(v, np.int32) for v in (4, 5, 6)]
        if scalars
        else [_sample((2, 2), np.int32, s) for s in (1, 2)]
    )
    model, _ = SingleOpModel(
        Op.CONCATENATION, [Operand(p, constant=True) for p in parts], [T.INT32], {"axis": 0}
    ).build()
    (out,) = compare_with_litert(model, [])
    np.testing.assert_array_equal(out, np.stack(parts) if scalars else np.concatenate(parts))
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    tensor = interpreter.subgraphs[0].tensors[interpreter.get_output_details()[0]["index"]]
    assert tensor.allocation_type == AllocationType.PERSISTENT_RO


def test_concatenation_errors():
    parts = [Operand(_sample((2, 2), np.float32)), Operand(_sample((2, 2), np.float32))]
    model, _ = SingleOpModel(
        Op.CONCATENATION, parts, [T.FLOAT32], {"axis": 0, "fused_activation_function": 1}
    ).build()
    _prepare_error(model, r"CONCATENATION fused activation RELU != NONE")
    model, _ = SingleOpModel(Op.CONCATENATION, parts, [T.FLOAT32], {"axis": 2}).build()
    _prepare_error(model, r"axis < t0->dims->size")
    model, _ = SingleOpModel(
        Op.CONCATENATION,
        [Operand(np.array(1.0, np.float32)), Operand(np.array(2.0, np.float32))],
        [T.FLOAT32],
        {"axis": 0},
    ).build()
    _prepare_error(model, r"t0->dims->size > 0 was not true")
    # int8 inputs must share the output's quantization (uint8 ones are requantized)
    quantized = [Operand(_sample((2, 2), np.int8), quantization=(s, 0)) for s in (0.5, 0.25)]
    model, _ = SingleOpModel(
        Op.CONCATENATION, quantized, [T.INT8], {"axis": 0}, output_quantization=[(0.5, 0)], version=2
    ).build()
    _prepare_error(model, r"CONCATENATION input 1 / output scale 0.25 != 0.5")
    quantized = [Operand(_sample((2, 2), np.int8), quantization=(0.5, z)) for z in (0, 3)]
    model, _ = SingleOpModel(
        Op.CONCATENATION, quantized, [T.INT8], {"axis": 0}, output_quantization=[(0.5, 0)], version=2
    ).build()
    _prepare_error(model, r"CONCATENATION input 1 / output zero point 3 != 0")
    quantized = [Operand(_sample((2, 2), np.int16), quantization=(0.5, z)) for z in (0, 2)]
    model, _ = SingleOpModel(
        Op.CONCATENATION, quantized, [T.INT16], {"axis": 0}, output_quantization=[(0.5, 0)], version=3
    ).build()
    _prepare_error(model, r"CONCATENATION int16 input zero point 2 != 0")


def _full_range(shape, dtype, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


@settings(max_examples=60, deadline=None)
@given(
    rank=st.integers(1, 4),
    count=st.integers(1, 4),
    data=st.data(),
    seed=st.integers(0, 2**16),
)
def test_concatenation_uint8_requantizes(rank, count, data, seed):
    # ConcatenationWithScaling: a uint8 input quantized unlike the output is requantized in float32,
    # round(q * scale + bias) half away from zero (no fused multiply-add: LiteRT's x86 build has none).
    rng = np.random.default_rng(seed)
    base = [int(rng.integers(1, 5)) for _ in range(rank)]
    axis = data.draw(st.integers(-rank, rank - 1))
    out_scale = float(np.float32(rng.uniform(0.005, 1.0)))
    output = (out_scale, int(rng.integers(0, 256)))
    operands = []
    for i in range(count):
        shape = list(base)
        shape[axis] = int(rng.integers(0 if i else 1, 4))  # an empty input adds nothing
        factor = data.draw(st.sampled_from([1.0, 0.5, 2.0, 3.0, 0.37, 7.9]))
        zero_point = int(rng.integers(0, 256))
        quantization = output if data.draw(st.booleans()) else (out_scale * factor, zero_point)
        constant = data.draw(st.booleans())
        operands.append(
            Operand(_full_range(shape, np.uint8, rng), constant=constant, quantization=quantization)
        )
    _check(SingleOpModel(Op.CONCATENATION, operands, [T.UINT8], {"axis": axis}, output_quantization=[output]))


def test_concatenation_uint8_requantizes_ties_and_saturation():
    x = np.arange(256, dtype=np.uint8).reshape(2, 128)
    for in_q, out_q in [
        ((0.5, 1), (1.0, 0)),  # every other value a tie: half away from zero
        ((0.5, 200), (1.0, 128)),  # negative ties
        ((4.0, 0), (1.0, 10)),  # saturates at 255
        ((0.25, 255), (1.0, 3)),  # saturates at 0
        ((0.015625, 17), (0.01, 250)),
    ]:
        operands = [Operand(x, quantization=in_q), Operand(x[:, :5], constant=True, quantization=out_q)]
        model = SingleOpModel(Op.CONCATENATION, operands, [T.UINT8], {"axis": 1}, output_quantization=[out_q])
        model.check()
        check_ref(model)  # the reference kernel is the same function
    # every input constant: TFLite folds the requantizing concatenation in prepare
    operands = [
        Operand(x, constant=True, quantization=(0.3, 7)),
        Operand(x, constant=True, quantization=(0.5, 9)),
    ]
    SingleOpModel(Op.CONCATENATION, operands, [T.UINT8], {"axis": 0}, output_quantization=[(0.4, 20)]).check()


@pytest.mark.parametrize("tensor_type, dtype", [(T.INT8, np.int8), (T.INT16, np.int16)])
def test_concatenation_int8_int16_copy(tensor_type, dtype):
    # int8 with equal quantization and int16 with zero points 0 (any scales) copy the stored values
    rng = np.random.default_rng(4)
    if tensor_type == T.INT8:
        quantizations, output = [(0.3, -7)] * 3, (0.3, -7)
    else:
        quantizations, output = [(0.3, 0), (0.001, 0), (2.0, 0)], (0.5, 0)
    operands = [
        Operand(_full_range((2, 3, k + 1), dtype, rng), quantization=q) for k, q in enumerate(quantizations)
    ]
    version = 2 if tensor_type == T.INT8 else 3
    SingleOpModel(
        Op.CONCATENATION, operands, [tensor_type], {"axis": -1}, output_quantization=[output], version=version
    ).check()


# --- SPLIT, SPLIT_V ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axis", "count"), [((6, 4), 0, 3), ((2, 6, 2), -2, 2), ((4,), 0, 4), ((3, 2), 1, 1)]
)
@pytest.mark.parametrize("constant", [True, False])
def test_split(shape, axis, count, constant):
    x = _sample(shape, np.float32)
    outs = SingleOpModel(
        Op.SPLIT,
        [Operand(np.array(axis, np.int32), constant=constant), Operand(x)],
        [T.FLOAT32] * count,
        {"num_splits": count},
    ).check()
    for out, expected in zip(outs, np.split(x, count, axis=axis)):
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64])
def test_split_types(dtype):
    x = _sample((4, 3), dtype)
    SingleOpModel(
        Op.SPLIT,
        [Operand(np.array([0], np.int32), constant=True), Operand(x)],
        [_type(dtype)] * 2,
        {"num_splits": 2},
        version=3,
    ).check()


def test_split_uneven():
    model, _ = SingleOpModel(
        Op.SPLIT,
        [Operand(np.array(1, np.int32), constant=True), Operand(X)],
        [T.FLOAT32] * 2,
        {"num_splits": 2},
    ).build()
    _prepare_error(model, r"Not an even split")


@pytest.mark.parametrize(
    ("shape", "sizes", "axis"),
    [
        ((7, 2), [2, 5], 0),
        ((3, 8), [1, -1, 3], 1),
        ((3, 8), [-1, 4], -1),
        ((2, 3, 4), [0, 3], 1),
        ((5,), [-1], 0),
    ],
)
@pytest.mark.parametrize("constant", [True, False])
@pytest.mark.parametrize("sizes_dtype", [np.int32, np.int64])
def test_split_v(shape, sizes, axis, constant, sizes_dtype):
    x = _sample(shape, np.float32)
    outs = _check(
        SingleOpModel(
            Op.SPLIT_V,
            [
                Operand(x),
                Operand(np.array(sizes, sizes_dtype), constant=constant),
                Operand(np.array([axis], np.int32), constant=constant),
            ],
            [T.FLOAT32] * len(sizes),
            {"num_splits": len(sizes)},
            version=2,
        )
    )
    known = sum(s for s in sizes if s != -1)
    resolved = [x.shape[axis] - known if s == -1 else s for s in sizes]
    for out, expected in zip(outs, np.split(x, np.cumsum(resolved)[:-1], axis=axis)):
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64])
def test_split_v_types(dtype):
    x = _sample((5, 2), dtype)
    SingleOpModel(
        Op.SPLIT_V,
        [
            Operand(x),
            Operand(np.array([3, 2], np.int32), constant=True),
            Operand(np.array(0, np.int32), constant=True),
        ],
        [_type(dtype)] * 2,
        {"num_splits": 2},
    ).check()


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ([2, 2], r"The size_splits must sum to the dimension of value along axis."),
        ([-1, -1], r"The size_splits contains more than one -1."),
        ([-1, 9], r"The sum of size_splits must be less than the dimension of value."),
    ],
)
def test_split_v_errors(sizes, message):
    model, _ = SingleOpModel(
        Op.SPLIT_V,
        [
            Operand(_sample((6, 2), np.float32)),
            Operand(np.array(sizes, np.int32), constant=True),
            Operand(np.array(0, np.int32), constant=True),
        ],
        [T.FLOAT32] * 2,
        {"num_splits": 2},
    ).build()
    _prepare_error(model, message)


# --- PACK, UNPACK ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axis"), [((2, 3), 0), ((2, 3), 2), ((2, 3), -1), ((4,), 1), ((), 0), ((2, 3, 2), -3)]
)
@pytest.mark.parametrize("count", [1, 3])
def test_pack(shape, axis, count):
    parts = [Operand(_sample(shape, np.float32, seed=i), constant=i == 1) for i in range(count)]
    (out,) = SingleOpModel(Op.PACK, parts, [T.FLOAT32], {"values_count": count, "axis": axis}).check()
    np.testing.assert_array_equal(out, np.stack([p.value for p in parts], axis=axis))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.int16, np.int64, np.uint32])
def test_pack_types(dtype):
    parts = [Operand(_sample((3, 2), dtype, seed=i)) for i in range(2)]
    SingleOpModel(Op.PACK, parts, [_type(dtype)], {"values_count": 2, "axis": 1}, version=4).check()


def test_pack_errors():
    model, _ = SingleOpModel(
        Op.PACK,
        [Operand(np.zeros(2, np.bool_)), Operand(np.zeros(2, np.bool_))],
        [T.BOOL],
        {"values_count": 2, "axis": 0},
    ).build()
    _prepare_error(model, r"Type 'BOOL' is not supported by pack.")
    model, _ = SingleOpModel(
        Op.PACK,
        [Operand(np.zeros(2, np.float32)), Operand(np.zeros(3, np.float32))],
        [T.FLOAT32],
        {"values_count": 2, "axis": 0},
    ).build()
    _prepare_error(model, r"input shapes \[2\] and \[3\] differ")


@pytest.mark.parametrize(
    ("shape", "axis"), [((3, 2), 0), ((3, 2), 1), ((2, 4, 3), -1), ((4,), 0), ((2, 3, 2), -2)]
)
def test_unpack(shape, axis):
    x = _sample(shape, np.float32)
    count = shape[axis]
    outs = SingleOpModel(Op.UNPACK, [Operand(x)], [T.FLOAT32] * count, {"num": count, "axis": axis}).check()
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out, np.take(x, i, axis=axis))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.int16, np.bool_, np.float16])
def test_unpack_types(dtype):
    x = _sample((2, 3), dtype)
    SingleOpModel(Op.UNPACK, [Operand(x)], [_type(dtype)] * 3, {"num": 3, "axis": 1}, version=5).check()


def test_unpack_errors():
    model, _ = SingleOpModel(
        Op.UNPACK, [Operand(_sample((2, 3), np.float32))], [T.FLOAT32] * 2, {"num": 2, "axis": 1}
    ).build()
    _prepare_error(model, r"UNPACK num vs input dimension 2 != 3")
    model, _ = SingleOpModel(
        Op.UNPACK, [Operand(_sample((2, 3), np.int64))], [T.INT64] * 2, {"num": 2, "axis": 0}
    ).build()
    _prepare_error(model, r"Type 'INT64' is not supported by unpack.")


# --- TILE --------------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_tile(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3))
    multiples = data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape)))
    multiples_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    x = _sample(shape, np.float32, seed=len(shape))
    (out,) = _check(
        SingleOpModel(
            Op.TILE,
            [
                Operand(x, constant=data.draw(st.booleans())),
                Operand(np.array(multiples, multiples_dtype), constant=data.draw(st.booleans())),
            ],
            [T.FLOAT32],
            version=2,
        )
    )
    np.testing.assert_array_equal(out, np.tile(x, multiples) if shape else x)


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float16, object]
)
def test_tile_types(dtype):
    x = _sample((2, 3), dtype)
    SingleOpModel(
        Op.TILE, [Operand(x), Operand(np.array([2, 2], np.int32), constant=True)], [_type(x.dtype)], version=3
    ).check()


def test_tile_errors():
    model, _ = SingleOpModel(
        Op.TILE,
        [Operand(_sample((2, 3), np.float32)), Operand(np.array([2, -1], np.int32), constant=True)],
        [T.FLOAT32],
    ).build()
    _prepare_error(model, r"Multipliers must be non-negative.")
    model, _ = SingleOpModel(
        Op.TILE,
        [Operand(_sample((2, 3), np.float32)), Operand(np.array([2, 1], np.int16), constant=True)],
        [T.FLOAT32],
    ).build()
    _prepare_error(model, r"Multipliers of type 'INT16' are not supported by tile.")


# --- REVERSE_V2 --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "axes"),
    [
        ((5,), [0]),
        ((2, 3, 4), [1]),
        ((2, 3, 4), [-1]),
        ((2, 3, 4), [0]),
        ((2, 3, 4), [1, 2]),
        ((2, 3, 4, 2), [2, 1, 0]),
    ],
)
@pytest.mark.parametrize("constant", [True, False])
def test_reverse(shape, axes, constant):
    x = _sample(shape, np.float32)
    (out,) = SingleOpModel(
        Op.REVERSE_V2,
        [Operand(x), Operand(np.array(axes, np.int32), constant=constant)],
        [T.FLOAT32],
        version=3,
    ).check()
    np.testing.assert_array_equal(out, np.flip(x, axes))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, np.int16, np.int64, np.bool_, np.float16])
def test_reverse_types(dtype):
    x = _sample((3, 4), dtype)
    SingleOpModel(
        Op.REVERSE_V2,
        [Operand(x), Operand(np.array([1], np.int32), constant=True)],
        [_type(dtype)],
        version=2,
    ).check()


@pytest.mark.parametrize("constant", [True, False])
def test_reverse_non_contiguous(constant):
    """TFLite checks the axes when it invokes the node, constant or not."""
    model, feeds = SingleOpModel(
        Op.REVERSE_V2,
        [Operand(X), Operand(np.array([0, 2], np.int32), constant=constant)],
        [T.FLOAT32],
        version=3,
    ).build()
    _invoke_error(model, feeds, r"Non-contiguous `axes` not supported")


# --- folding in prepare ------------------------------------------------------------------------------------


def _output_allocation(model: bytes) -> AllocationType:
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    return interpreter.subgraphs[0].tensors[interpreter.get_output_details()[0]["index"]].allocation_type


@pytest.mark.parametrize("constant", [True, False])
def test_range_and_tile_fold_constants(constant):
    """RANGE of constants and TILE of a constant are computed in prepare, into persistent outputs; with a
    runtime input their outputs are dynamic."""
    expected = AllocationType.PERSISTENT_RO if constant else AllocationType.DYNAMIC
    model, feeds = SingleOpModel(
        Op.RANGE, [Operand(np.array(v, np.int32), constant=constant) for v in (1, 9, 2)], [T.INT32]
    ).build()
    compare_with_litert(model, feeds)
    assert _output_allocation(model) == expected
    model, feeds = SingleOpModel(
        Op.TILE,
        [
            Operand(_sample((2, 3), np.int32), constant=True),
            Operand(np.array([2, 1], np.int32), constant=constant),
        ],
        [T.INT32],
    ).build()
    compare_with_litert(model, feeds)
    assert _output_allocation(model) == expected


def test_shape_after_input_resize():
    """SHAPE, RANK and TRANSPOSE follow a resized input (SHAPE's persistent output is rewritten)."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 2, 3], shape_signature=[-1, 2, 3])
    shape = builder.add_tensor("shape", T.INT64, [3])
    builder.add_operator(Op.SHAPE, [x], [shape], {"out_type": T.INT64})
    perm = builder.add_constant("perm", np.array([2, 0, 1], np.int32))
    y = builder.add_tensor("y", T.FLOAT32, [3, 1, 2])
    builder.add_operator(Op.TRANSPOSE, [x, perm], [y])
    builder.add_output(shape)
    builder.add_output(y)
    model = builder.build()
    for batch in (1, 4, 2):
        value = _sample((batch, 2, 3), np.float32, seed=batch)
        for interpreter in (pytflite.Interpreter(model_content=model), litert_interpreter(model)):
            interpreter.resize_tensor_input(0, [batch, 2, 3])
            shape_out, y_out = run(interpreter, [value])
            assert shape_out.tolist() == [batch, 2, 3]
            np.testing.assert_array_equal(y_out, value.transpose(2, 0, 1))


# --- quantized corpus layers -------------------------------------------------------------------------------

QUANTIZED_CORPUS = ("small_cnn_int8", "small_cnn_int16x8")


def corpus_layers(op: Op, models=QUANTIZED_CORPUS) -> list[tuple[str, int]]:
    """(model name, operator index) of every `op` layer in the corpus models present."""
    layers = []
    for name in models:
        path = CORPUS / f"{name}.tflite"
        if not path.exists():
            continue
        model = read_model(path.read_bytes())
        for i, operator in enumerate(model.subgraphs[0].operators):
            if model.operator_codes[operator.opcode_index].builtin_code == op:
                layers.append((name, i))
    return layers


def check_corpus_layer(name: str, index: int, seed: int = 0) -> None:
    """Rebuild one corpus layer as a single-op model (its options, version, constant inputs, tensor
    shapes and quantization) and compare it with LiteRT on random inputs over each type's full range."""
    model = read_model((CORPUS / f"{name}.tflite").read_bytes())
    subgraph = model.subgraphs[0]
    operator = subgraph.operators[index]
    code = model.operator_codes[operator.opcode_index]
    rng = np.random.default_rng(seed)
    builder = ModelBuilder()
    inputs, feeds = [], []
    for i in operator.inputs:
        if i < 0:
            inputs.append(-1)
            continue
        tensor = subgraph.tensors[i]
        kwargs = {"quantization": tensor.quantization}
        if tensor.data is not None:
            inputs.append(builder.add_tensor(f"c{i}", tensor.type, tensor.shape, data=tensor.data, **kwargs))
            continue
        inputs.append(builder.add_input(f"in{i}", tensor.type, tensor.shape, **kwargs))
        dtype = storage_dtype(tensor.type)
        if np.issubdtype(dtype, np.floating):
            feeds.append(rng.standard_normal(tensor.shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            feeds.append(rng.integers(info.min, info.max, tensor.shape, endpoint=True).astype(dtype))
    outputs = []
    for o in operator.outputs:
        tensor = subgraph.tensors[o]
        outputs.append(
            builder.add_tensor(f"out{o}", tensor.type, tensor.shape, quantization=tensor.quantization)
        )
        builder.add_output(outputs[-1])
    builder.add_operator(code.builtin_code, inputs, outputs, operator.builtin_options, version=code.version)
    compare_with_litert(builder.build(), feeds)


@pytest.mark.parametrize(
    "name, index",
    [layer for op in (Op.CONCATENATION, Op.RESHAPE, Op.TILE, Op.TRANSPOSE) for layer in corpus_layers(op)],
)
def test_quantized_corpus_layers(name, index):
    check_corpus_layer(name, index)


def agrees_with_litert(model: SingleOpModel) -> bool:
    """LiteRT and pytflite both refuse the model (at allocation or invocation), or both run it and
    produce the same outputs; returns whether it ran."""
    content, feeds = model.build()
    try:
        run(litert_interpreter(content), feeds)
    except (RuntimeError, ValueError):
        with pytest.raises(RuntimeError):
            run(pytflite.Interpreter(model_content=content), feeds)
        return False
    compare_with_litert(content, feeds)
    return True


QUANTIZATION_VARIANTS = {  # (input, output) quantizations to try
    T.INT8: [((0.5, 3), (0.5, 3)), ((0.5, 3), (0.25, 3)), ((0.5, 3), (0.5, 4))],
    T.UINT8: [((0.5, 130), (0.5, 130)), ((0.5, 130), (0.25, 130)), ((0.5, 130), (0.5, 131))],
    T.INT16: [((0.5, 0), (0.5, 0)), ((0.5, 0), (0.25, 0)), ((0.5, 0), (0.5, 1)), ((0.5, 2), (0.5, 2))],
}


def _mover(op, x, extra, options, outputs=1, version=1):
    def make(tensor_type, in_q, out_q):
        operands = [
            Operand(x.astype(storage_dtype(tensor_type)), type=tensor_type, quantization=in_q),
            *extra,
        ]
        return SingleOpModel(
            op,
            operands,
            [tensor_type] * outputs,
            options,
            version=version,
            output_quantization=[out_q] * outputs,
        )

    return make


_XQ = np.arange(-12, 12).reshape(2, 3, 4)
_SHAPE_MOVERS = {
    "RESHAPE": _mover(Op.RESHAPE, _XQ, [Operand(np.array([4, 6], np.int32), constant=True)], None),
    "SQUEEZE": _mover(Op.SQUEEZE, _XQ.reshape(2, 1, 12), [], {"squeeze_dims": [1]}),
    "EXPAND_DIMS": _mover(Op.EXPAND_DIMS, _XQ, [Operand(np.array(1, np.int32), constant=True)], None),
    "TRANSPOSE": _mover(
        Op.TRANSPOSE, _XQ, [Operand(np.array([2, 0, 1], np.int32), constant=True)], None, version=5
    ),
    "TILE": _mover(Op.TILE, _XQ, [Operand(np.array([1, 2, 2], np.int32), constant=True)], None, version=3),
    "SPLIT_V": lambda t, i, o: SingleOpModel(
        Op.SPLIT_V,
        [
            Operand(_XQ.astype(storage_dtype(t)), type=t, quantization=i),
            Operand(np.array([1, 3], np.int32), constant=True),
            Operand(np.array(2, np.int32), constant=True),
        ],
        [t, t],
        {"num_splits": 2},
        version=3,
        output_quantization=[o, o],
    ),
    "SPLIT": lambda t, i, o: SingleOpModel(
        Op.SPLIT,
        [
            Operand(np.array(2, np.int32), constant=True),
            Operand(_XQ.astype(storage_dtype(t)), type=t, quantization=i),
        ],
        [t, t],
        {"num_splits": 2},
        version=4,
        output_quantization=[o, o],
    ),
    "PACK": lambda t, i, o: SingleOpModel(
        Op.PACK,
        [Operand(_XQ.astype(storage_dtype(t)), type=t, quantization=i)] * 2,
        [t],
        {"values_count": 2, "axis": 1},
        version=4,
        output_quantization=[o],
    ),
    "UNPACK": _mover(Op.UNPACK, _XQ, [], {"num": 3, "axis": 1}, outputs=3, version=4),
    "REVERSE_V2": _mover(
        Op.REVERSE_V2, _XQ, [Operand(np.array([1], np.int32), constant=True)], None, version=3
    ),
    "BROADCAST_TO": _mover(
        Op.BROADCAST_TO, _XQ, [Operand(np.array([2, 2, 3, 4], np.int32), constant=True)], None, version=3
    ),
    "CONCATENATION": _mover(
        Op.CONCATENATION, _XQ, [Operand(_XQ.astype(np.int16), type=None)], {"axis": 1}, version=4
    ),
}


@pytest.mark.parametrize("tensor_type", [T.INT8, T.UINT8, T.INT16], ids=lambda t: t.name)
@pytest.mark.parametrize("op", sorted(_SHAPE_MOVERS))
def test_quantized_data_movers_accept_what_litert_accepts(op, tensor_type):
    """Copies of quantized values: TFLite checks the quantization of EXPAND_DIMS, PACK, UNPACK (equal
    scale and zero point) and CONCATENATION (int8: equal, int16: zero points 0, uint8: requantized), and
    copies everything else as stored whatever the output's parameters."""
    for in_q, out_q in QUANTIZATION_VARIANTS[tensor_type]:
        model = _SHAPE_MOVERS[op](tensor_type, in_q, out_q)
        if op == "CONCATENATION":  # the second input: same type and quantization as the first
            model.inputs[1] = Operand(model.inputs[0].value[:, :1], type=tensor_type, quantization=in_q)
        ran = agrees_with_litert(model)
        if tensor_type != T.INT16 or in_q[1] == 0:
            assert ran or out_q != in_q, f"{op} refused equal quantization"

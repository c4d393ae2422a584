"""Gather, scatter, selection and index ops against LiteRT.

GATHER, GATHER_ND, SCATTER_ND, EMBEDDING_LOOKUP, SELECT, SELECT_V2, WHERE, ONE_HOT, UNIQUE, SEGMENT_SUM,
UNSORTED_SEGMENT_SUM/PROD/MAX/MIN, MATRIX_DIAG, MATRIX_SET_DIAG, BUCKETIZE: shapes, axes and options,
every accepted type, constant and run-time inputs (value-dependent output shapes), and the errors.
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
from pytflite.core.types import AllocationType, tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_matches, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

DATA_TYPES = [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_]


def tt(dtype) -> T:
    return tensor_type_for_dtype(np.dtype(dtype))


def values(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "fc":
        return (
            rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.kind == "c" else 0)
        ).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, endpoint=True).astype(dtype)


def check(model: SingleOpModel) -> list[np.ndarray]:
    """SingleOpModel.check(), except that an empty dynamic output is compared by shape alone.

    LiteRT's get_tensor raises "Invalid tensor size" for a dynamic output resized to zero elements (it
    has no buffer); its details still give the shape, which pytflite must match.
    """
    built, feeds = model.build()
    reference = litert_interpreter(built)
    reference.allocate_tensors()
    for detail, value in zip(reference.get_input_details(), feeds):
        reference.set_tensor(detail["index"], value)
    reference.invoke()
    ours = run(pytflite.Interpreter(model_content=built), feeds)
    for i, (mine, detail) in enumerate(zip(ours, reference.get_output_details(), strict=True)):
        if 0 in detail["shape"]:
            assert mine.shape == tuple(detail["shape"]), (i, mine.shape, detail["shape"])
            assert mine.dtype == detail["dtype"]
        else:
            assert_matches(mine, reference.get_tensor(detail["index"]), what=f"output {i}")
    return ours


def fails(model: SingleOpModel, pattern: str, step: str = "invoke") -> None:
    """pytflite and LiteRT both fail, at the same step, and pytflite's message matches `pattern`."""
    built, feeds = model.build()
    with pytest.raises(RuntimeError, match=pattern):
        run(pytflite.Interpreter(model_content=built), feeds)
    reference = litert_interpreter(built)
    if step == "prepare":
        with pytest.raises(RuntimeError, match="failed to prepare"):
            reference.allocate_tensors()
    else:
        reference.allocate_tensors()
        for detail, value in zip(reference.get_input_details(), feeds):
            reference.set_tensor(detail["index"], value)
        with pytest.raises(RuntimeError, match="failed to invoke"):
            reference.invoke()


# --- GATHER -----------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_gather(data, kernels):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    rank = len(shape)
    axis = data.draw(st.integers(0, rank - 1))
    batch_dims = data.draw(st.integers(0, axis))
    extra = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    positions_shape = shape[:batch_dims] + extra
    dtype = data.draw(st.sampled_from(DATA_TYPES))
    index_dtype = data.draw(st.sampled_from([np.int16, np.int32, np.int64]))
    params = values(rng, shape, dtype)
    positions = rng.integers(0, shape[axis], size=positions_shape).astype(index_dtype)
    options = {
        "axis": axis - rank if data.draw(st.booleans()) else axis,
        "batch_dims": batch_dims - len(positions_shape)
        if batch_dims and data.draw(st.booleans())
        else batch_dims,
    }
    constant = data.draw(st.sampled_from(["none", "positions", "both"]))
    SingleOpModel(
        Op.GATHER,
        [Operand(params, constant=constant == "both"), Operand(positions, constant=constant != "none")],
        [tt(dtype)],
        options,
    ).check()


def test_gather_constant_inputs_fold_in_prepare():
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    model = SingleOpModel(
        Op.GATHER,
        [Operand(params, constant=True), Operand(np.array([2, 0], np.int32), constant=True)],
        [T.FLOAT32],
        {"axis": 0},
    )
    (out,) = model.check()
    np.testing.assert_array_equal(out, params[[2, 0]])
    interpreter = pytflite.Interpreter(model_content=model.build()[0])
    interpreter.allocate_tensors()
    output = interpreter.get_output_details()[0]["index"]
    assert interpreter.subgraphs[0].tensors[output].allocation_type == AllocationType.PERSISTENT_RO


def test_gather_of_constants_is_a_constant_downstream():
    """A RESHAPE whose shape is a GATHER of constants resolves its shape in prepare, in both runtimes."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [4, 6])
    dims = builder.add_tensor("dims", T.INT32, [3], data=np.array([4, 6, 2], np.int32))
    order = builder.add_tensor("order", T.INT32, [2], data=np.array([1, 0], np.int32))
    shape = builder.add_tensor("shape", T.INT32, [2])
    output = builder.add_output(builder.add_tensor("y", T.FLOAT32, [1]))
    builder.add_operator(Op.GATHER, [dims, order], [shape], {"axis": 0})
    builder.add_operator(Op.RESHAPE, [x, shape], [output], {"new_shape": []})
    model = builder.build()
    feeds = [np.arange(24, dtype=np.float32).reshape(4, 6)]
    ours, reference = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    for interpreter in (ours, reference):
        interpreter.allocate_tensors()
    assert (
        list(ours.get_output_details()[0]["shape"])
        == list(reference.get_output_details()[0]["shape"])
        == [6, 4]
    )
    assert_matches(run(ours, feeds)[0], run(reference, feeds)[0])


def test_gather_strings():
    params = np.array([b"alpha", b"", b"gamma", b"delta"], dtype=object)
    for constant in (False, True):
        (out,) = SingleOpModel(
            Op.GATHER,
            [Operand(params, constant=constant), Operand(np.array([[3, 0], [2, 2]], np.int32))],
            [T.STRING],
            {"axis": 0},
        ).check()
        assert out.tolist() == [[b"delta", b"alpha"], [b"gamma", b"gamma"]]


def test_gather_scalar_positions():
    params = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (out,) = SingleOpModel(
        Op.GATHER, [Operand(params), Operand(np.array(1, np.int64))], [T.FLOAT32], {"axis": -2}
    ).check()
    assert out.shape == (2, 4)


def test_gather_empty_positions():
    params = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = SingleOpModel(
        Op.GATHER, [Operand(params), Operand(np.zeros([0], np.int32))], [T.FLOAT32], {"axis": 1}
    ).check()
    assert out.shape == (3, 0)


@pytest.mark.parametrize(
    ("positions", "pattern"),
    [
        ([0, 3], r"^gather index out of boundsNode number 0 \(GATHER\) failed to invoke\.$"),
        ([0, -1], r"^indices_has_only_positive_elements was not true\.gather index out of bounds"),
    ],
)
def test_gather_out_of_range(positions, pattern, kernels):
    params = np.zeros([3, 2], np.float32)
    fails(
        SingleOpModel(
            Op.GATHER, [Operand(params), Operand(np.array(positions, np.int32))], [T.FLOAT32], {"axis": 0}
        ),
        pattern,
    )


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_gather_positions_checked_at_every_invoke(dtype, kernels):
    """Several positions are bounds-checked by the bound step (one maximum of their unsigned bits) at
    every invoke, also once the step list runs written out."""
    params = np.arange(24, dtype=np.float32).reshape(6, 4)
    model, _ = SingleOpModel(
        Op.GATHER, [Operand(params, constant=True), Operand(np.zeros([3], dtype))], [T.FLOAT32], {"axis": 0}
    ).build()
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    index = interpreter.get_input_details()[0]["index"]
    output = interpreter.get_output_details()[0]["index"]
    for _ in range(3):
        interpreter.set_tensor(index, np.array([5, 0, 2], dtype))
        interpreter.invoke()
        np.testing.assert_array_equal(interpreter.get_tensor(output), params[[5, 0, 2]])
    for positions, pattern in (([1, 6, 0], "gather index out of bounds"), ([0, -1, 2], "positive_elements")):
        interpreter.set_tensor(index, np.array(positions, dtype))
        with pytest.raises(RuntimeError, match=pattern):
            interpreter.invoke()


@pytest.mark.parametrize(
    ("position", "pattern"),
    [
        (3, r"^gather index out of boundsNode number 0 \(GATHER\) failed to invoke\.$"),
        (-1, r"^indices_has_only_positive_elements was not true\.gather index out of bounds"),
    ],
)
@pytest.mark.parametrize("shape", [(), (1,)])
def test_gather_one_position_out_of_range(position, pattern, shape):
    """One position is checked as a Python int (the bound step of loop bodies), with the same errors."""
    params = np.zeros([2, 3, 2], np.float32)
    fails(
        SingleOpModel(
            Op.GATHER,
            [Operand(params), Operand(np.array(position, np.int32).reshape(shape))],
            [T.FLOAT32],
            {"axis": 1},
        ),
        pattern,
    )


def test_gather_one_position_each_invoke():
    """The bound one-position step reads the position anew at every invoke."""
    params = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    model, _ = SingleOpModel(
        Op.GATHER, [Operand(params), Operand(np.array([0], np.int32))], [T.FLOAT32], {"axis": 1}
    ).build()
    interpreter = pytflite.Interpreter(model_content=model)
    for position in (2, 0, 1):
        (out,) = run(interpreter, [params, np.array([position], np.int32)])
        assert np.array_equal(out, params[:, [position]])


def test_gather_bad_axis():
    model = SingleOpModel(
        Op.GATHER,
        [Operand(np.zeros([3, 2], np.float32)), Operand(np.array([0], np.int32))],
        [T.FLOAT32],
        {"axis": 2},
    )
    fails(model, r"0 <= axis && axis < NumDimensions\(input\) was not true\.", step="prepare")


def test_gather_bad_positions_type():
    model = SingleOpModel(
        Op.GATHER,
        [Operand(np.zeros([3, 2], np.float32)), Operand(np.array([0.0], np.float32))],
        [T.FLOAT32],
        {"axis": 0},
    )
    fails(model, r"Positions of type 'FLOAT32' are not supported by gather\.", step="prepare")


# --- GATHER_ND --------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_gather_nd(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    depth = data.draw(st.integers(1, len(shape)))
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    dtype = data.draw(st.sampled_from(DATA_TYPES))
    index_dtype = data.draw(st.sampled_from([np.int16, np.int32, np.int64]))
    params = values(rng, shape, dtype)
    indices = np.stack([rng.integers(0, d, size=batch) for d in shape[:depth]], axis=-1).astype(index_dtype)
    SingleOpModel(
        Op.GATHER_ND,
        [
            Operand(params, constant=data.draw(st.booleans())),
            Operand(indices, constant=data.draw(st.booleans())),
        ],
        [tt(dtype)],
    ).check()


def test_gather_nd_strings():
    params = np.array([[b"a", b"bb"], [b"ccc", b"dddd"]], dtype=object)
    (out,) = SingleOpModel(
        Op.GATHER_ND, [Operand(params), Operand(np.array([[1, 0], [0, 1], [1, 1]], np.int32))], [T.STRING]
    ).check()
    assert out.tolist() == [b"ccc", b"bb", b"dddd"]
    (rows,) = SingleOpModel(
        Op.GATHER_ND, [Operand(params), Operand(np.array([[1], [0]], np.int32))], [T.STRING]
    ).check()
    assert rows.tolist() == [[b"ccc", b"dddd"], [b"a", b"bb"]]


@pytest.mark.parametrize(
    ("indices", "pattern"),
    [
        ([[0, 4]], r"^gather_nd index out of boundsNode number 0"),
        ([[0, -1]], r"^indices_has_only_positive_elements was not true\.Node number 0"),
    ],
)
def test_gather_nd_out_of_range(indices, pattern):
    model = SingleOpModel(
        Op.GATHER_ND,
        [Operand(np.zeros([3, 4], np.float32)), Operand(np.array(indices, np.int32))],
        [T.FLOAT32],
    )
    fails(model, pattern)


def test_gather_nd_index_too_deep():
    model = SingleOpModel(
        Op.GATHER_ND,
        [Operand(np.zeros([3], np.float32)), Operand(np.array([[0, 0]], np.int32))],
        [T.FLOAT32],
    )
    fails(model, r"Index innermost dimension length must be in \[0, params rank\]\.", step="prepare")


# --- SCATTER_ND -------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_scatter_nd(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    depth = data.draw(st.integers(1, len(shape)))
    batch = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=4))
    dtype = data.draw(st.sampled_from([np.float32, np.int32, np.int64, np.int8, np.uint8, np.bool_]))
    indices = np.stack([rng.integers(0, d, size=batch) for d in shape[:depth]], axis=-1).astype(np.int32)
    updates = values(rng, batch + shape[depth:], dtype)
    SingleOpModel(
        Op.SCATTER_ND,
        [
            Operand(indices, constant=data.draw(st.booleans())),
            Operand(updates),
            Operand(np.array(shape, np.int32), constant=data.draw(st.booleans())),
        ],
        [tt(dtype)],
    ).check()


def test_scatter_nd_duplicates_accumulate():
    indices = np.array([[1], [3], [1], [1]], np.int32)
    updates = np.array([[1, 2], [3, 4], [10, 20], [100, 200]], np.float32)
    (out,) = SingleOpModel(
        Op.SCATTER_ND,
        [Operand(indices), Operand(updates), Operand(np.array([5, 2], np.int32), constant=True)],
        [T.FLOAT32],
    ).check()
    np.testing.assert_array_equal(out[1], [111, 222])
    int8 = np.full([3, 1], 100, np.int8)  # wraps, as TFLite's WrappingAdd does
    SingleOpModel(
        Op.SCATTER_ND,
        [Operand(np.zeros([3, 1], np.int32)), Operand(int8), Operand(np.array([2, 1], np.int32))],
        [T.INT8],
    ).check()


def test_scatter_nd_out_of_range():
    model = SingleOpModel(
        Op.SCATTER_ND,
        [
            Operand(np.array([[5]], np.int32)),
            Operand(np.ones([1, 2], np.float32)),
            Operand(np.array([5, 2], np.int32), constant=True),
        ],
        [T.FLOAT32],
    )
    fails(model, r"^scatter_nd index out of boundsNode number 0 \(SCATTER_ND\) failed to invoke\.")


# --- EMBEDDING_LOOKUP -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("shape", [[5, 3], [4, 2, 3]])
def test_embedding_lookup(dtype, shape):
    rng = np.random.default_rng(0)
    table = values(rng, shape, dtype)
    ids = np.array([3, 0, 3, 1], np.int32)
    for constant in (False, True):
        SingleOpModel(
            Op.EMBEDDING_LOOKUP, [Operand(ids), Operand(table, constant=constant)], [tt(dtype)]
        ).check()


def test_embedding_lookup_out_of_range():
    model = SingleOpModel(
        Op.EMBEDDING_LOOKUP,
        [Operand(np.array([0, 7], np.int32)), Operand(np.zeros([3, 2], np.float32))],
        [T.FLOAT32],
    )
    fails(model, r"^Embedding Lookup: index out of bounds\. Got 7, and bounds are \[0, 2\]Node number 0")


# --- SELECT, SELECT_V2 ------------------------------------------------------------------------------

SELECT_TYPES = [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_, np.float64]


@pytest.mark.parametrize("dtype", SELECT_TYPES)
@pytest.mark.parametrize("op", [Op.SELECT, Op.SELECT_V2])
def test_select_same_shape(op, dtype):
    rng = np.random.default_rng(1)
    condition = rng.random([2, 3, 4]) < 0.5
    x, y = values(rng, [2, 3, 4], dtype), values(rng, [2, 3, 4], dtype)
    SingleOpModel(op, [Operand(condition), Operand(x), Operand(y, constant=True)], [tt(dtype)]).check()


@pytest.mark.parametrize("dtype", [*SELECT_TYPES, np.float16, np.complex64, np.uint16])
def test_select_large_outputs(dtype):
    """Outputs of 2048+ elements take the bitwise select path: every element size, with broadcasting."""
    rng = np.random.default_rng(10)
    x, y = values(rng, [4, 32, 32], dtype), values(rng, [32, 32], dtype)
    SingleOpModel(
        Op.SELECT,
        [Operand(rng.random([4]) < 0.5), Operand(x), Operand(np.broadcast_to(y, x.shape).copy())],
        [tt(dtype)],
    ).check()
    SingleOpModel(
        Op.SELECT_V2,
        [Operand(rng.random([4, 1, 32]) < 0.5), Operand(x), Operand(y, constant=True)],
        [tt(dtype)],
    ).check()


@pytest.mark.parametrize(
    ("condition_shape", "shape"), [([3], [3, 4]), ([2], [2, 3, 2]), ([], [2, 3]), ([1], [1, 5]), ([], [])]
)
def test_select_low_rank_condition(condition_shape, shape):
    rng = np.random.default_rng(2)
    condition = rng.random(condition_shape) < 0.5
    x, y = values(rng, shape, np.float32), values(rng, shape, np.float32)
    SingleOpModel(Op.SELECT, [Operand(condition), Operand(x), Operand(y)], [T.FLOAT32]).check()


@pytest.mark.parametrize("op", [Op.SELECT, Op.SELECT_V2])
def test_select_single_elements_keep_output_shape(op):
    (out,) = SingleOpModel(
        op,
        [
            Operand(np.array([False])),
            Operand(np.array(1.0, np.float32)),
            Operand(np.array([[2.0]], np.float32)),
        ],
        [T.FLOAT32],
        output_shapes=[[1]],  # all-single-element inputs: TFLite keeps the declared output shape
    ).check()
    assert out.tolist() == [2.0]


def test_select_rejects_broadcast():
    model = SingleOpModel(
        Op.SELECT,
        [
            Operand(np.ones([2], bool)),
            Operand(np.ones([2, 3], np.float32)),
            Operand(np.ones([3], np.float32)),
        ],
        [T.FLOAT32],
    )
    fails(model, r"HaveSameShapes\(input_x, input_y\) was not true\.", step="prepare")
    model.inputs[0] = Operand(np.ones([3], bool))
    model.inputs[2] = Operand(np.ones([2, 3], np.float32))
    fails(model, r"has_low_rank_input_condition was not true\.", step="prepare")


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_select_v2_broadcast(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=5, max_side=3))
    condition_shape, x_shape, y_shape = shapes.input_shapes
    dtype = data.draw(st.sampled_from(SELECT_TYPES))
    SingleOpModel(
        Op.SELECT_V2,
        [
            Operand(rng.random(condition_shape) < 0.5),
            Operand(values(rng, x_shape, dtype), constant=data.draw(st.booleans())),
            Operand(values(rng, y_shape, dtype)),
        ],
        [tt(dtype)],
    ).check()


def test_select_v2_not_broadcastable():
    model = SingleOpModel(
        Op.SELECT_V2,
        [
            Operand(np.ones([3], bool)),
            Operand(np.ones([3, 2], np.float32)),
            Operand(np.ones([1, 1], np.float32)),
        ],
        [T.FLOAT32],
    )
    fails(model, r"^Given shapes, \[3\], \[3,2\] and \[1,1\], are not broadcastable\.Node", step="prepare")


# --- WHERE ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, np.int64, np.int32, np.int8, np.uint8, np.uint32])
@pytest.mark.parametrize("shape", [[7], [3, 4], [2, 3, 2], [2, 0]])
@pytest.mark.parametrize("constant", [False, True])
def test_where(dtype, shape, constant):
    rng = np.random.default_rng(3)
    condition = (rng.random(shape) < 0.4).astype(dtype) * (rng.integers(1, 3, size=shape).astype(dtype))
    (out,) = check(SingleOpModel(Op.WHERE, [Operand(condition, constant=constant)], [T.INT64]))
    assert out.shape == (np.count_nonzero(condition), len(shape))


def test_where_nothing_true():
    (out,) = check(SingleOpModel(Op.WHERE, [Operand(np.zeros([2, 3], bool))], [T.INT64]))
    assert out.shape == (0, 2)


# --- ONE_HOT ----------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_one_hot(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    depth = data.draw(st.integers(0, 5))
    axis = data.draw(st.integers(-1, len(shape)))
    dtype = data.draw(st.sampled_from([np.float32, np.int32, np.int64, np.int8, np.uint8, np.bool_]))
    index_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    indices = rng.integers(-1, depth + 2, size=shape).astype(index_dtype)
    on, off = values(rng, [], dtype), values(rng, [], dtype)
    check(
        SingleOpModel(
            Op.ONE_HOT,
            [
                Operand(indices),
                Operand(np.array(depth, np.int32), constant=data.draw(st.booleans())),
                Operand(on, constant=True),
                Operand(off),
            ],
            [tt(dtype)],
            {"axis": axis},
        )
    )


def test_one_hot_int64_indices_truncate_like_tflite():
    indices = np.array([2**32 + 1, 2, -(2**32)], np.int64)  # static_cast<int> wraps these to 1, 2, 0
    (out,) = check(
        SingleOpModel(
            Op.ONE_HOT,
            [
                Operand(indices),
                Operand(np.array(3, np.int32), constant=True),
                Operand(np.array(1.0, np.float32)),
                Operand(np.array(0.0, np.float32)),
            ],
            [T.FLOAT32],
            {"axis": -1},
        )
    )
    np.testing.assert_array_equal(out, np.eye(3, dtype=np.float32)[[1, 2, 0]])


def test_one_hot_bad_axis():
    model = SingleOpModel(
        Op.ONE_HOT,
        [
            Operand(np.zeros([2], np.int32)),
            Operand(np.array(3, np.int32), constant=True),
            Operand(np.array(1.0, np.float32)),
            Operand(np.array(0.0, np.float32)),
        ],
        [T.FLOAT32],
        {"axis": -2},
    )
    fails(
        model, r"op_context.axis >= 0 && op_context.axis < op_context.output_dims was not true\.", "prepare"
    )


# --- UNIQUE -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.float32, np.uint8])
@pytest.mark.parametrize("index_type", [T.INT32, T.INT64])
@pytest.mark.parametrize("size", [0, 1, 13])
def test_unique(dtype, index_type, size):
    rng = np.random.default_rng(4)
    x = rng.integers(0, 6, size=[size]).astype(dtype)
    if dtype == np.float32 and size:
        x[0] = -0.0  # -0.0 and 0.0 are one value; the first seen is kept
    (values_out, index_out) = check(
        SingleOpModel(Op.UNIQUE, [Operand(x)], [tt(dtype), index_type], {"idx_out_type": index_type})
    )
    np.testing.assert_array_equal(values_out[index_out], x)


# --- SEGMENT_SUM, UNSORTED_SEGMENT_* ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("constant", [False, True])
@pytest.mark.parametrize("shape", [[6], [6, 3], [6, 2, 2]])
def test_segment_sum(dtype, constant, shape):
    rng = np.random.default_rng(5)
    data = values(rng, shape, dtype)
    ids = np.array([0, 0, 1, 2, 2, 2], np.int32)
    SingleOpModel(
        Op.SEGMENT_SUM, [Operand(data, constant=constant), Operand(ids, constant=constant)], [tt(dtype)]
    ).check()


@pytest.mark.parametrize(
    ("ids", "pattern"),
    [
        ([0, 2, 2], r"delta == 0 \|\| delta == 1 was not true\."),
        ([1, 1, 2], r"current_segment_id != 0 \(1 != 0\)"),
    ],
)
def test_segment_sum_bad_ids(ids, pattern):
    model = SingleOpModel(
        Op.SEGMENT_SUM, [Operand(np.ones([3], np.float32)), Operand(np.array(ids, np.int32))], [T.FLOAT32]
    )
    fails(model, pattern)


UNSORTED = [
    Op.UNSORTED_SEGMENT_SUM,
    Op.UNSORTED_SEGMENT_PROD,
    Op.UNSORTED_SEGMENT_MAX,
    Op.UNSORTED_SEGMENT_MIN,
]


@pytest.mark.parametrize("op", UNSORTED, ids=lambda op: op.name)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_unsorted_segment(op, dtype, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    ids_rank = data.draw(st.integers(1, len(shape)))
    num_segments = data.draw(st.integers(1, 6))
    ids = rng.integers(-1, num_segments, size=shape[:ids_rank]).astype(np.int32)  # -1: dropped
    x = (
        values(rng, shape, dtype)
        if op != Op.UNSORTED_SEGMENT_PROD
        else rng.integers(-3, 4, shape).astype(dtype)
    )
    count = np.array([num_segments] if data.draw(st.booleans()) else num_segments, np.int32)
    SingleOpModel(
        op,
        [
            Operand(x),
            Operand(ids, constant=data.draw(st.booleans())),
            Operand(count, constant=data.draw(st.booleans())),
        ],
        [tt(dtype)],
    ).check()


@pytest.mark.parametrize("op", [Op.UNSORTED_SEGMENT_MAX, Op.UNSORTED_SEGMENT_MIN], ids=lambda op: op.name)
def test_unsorted_segment_nan_never_wins(op):
    """TFLite's std::max/std::min keep the running value when the data is NaN (np.fmax/np.fmin)."""
    x = np.array([np.nan, 1.0, np.nan, 2.0, np.nan], np.float32)
    SingleOpModel(
        op,
        [Operand(x), Operand(np.array([0, 0, 1, 1, 3], np.int32)), Operand(np.array(4, np.int32))],
        [T.FLOAT32],
    ).check()


def test_unsorted_segment_too_few_segments():
    model = SingleOpModel(
        Op.UNSORTED_SEGMENT_MAX,
        [
            Operand(np.ones([3], np.float32)),
            Operand(np.array([0, 3, 1], np.int32)),
            Operand(np.array(3, np.int32)),
        ],
        [T.FLOAT32],
    )
    fails(model, r"max_index < num_segments_ was not true\.")


# --- MATRIX_DIAG, MATRIX_SET_DIAG -------------------------------------------------------------------

DIAG_TYPES = [np.float32, np.int64, np.int32, np.int16, np.int8, np.uint8]


@pytest.mark.parametrize("dtype", DIAG_TYPES)
@pytest.mark.parametrize("shape", [[1], [4], [2, 3], [2, 1, 3]])
def test_matrix_diag(dtype, shape):
    x = values(np.random.default_rng(6), shape, dtype)
    (out,) = SingleOpModel(Op.MATRIX_DIAG, [Operand(x)], [tt(dtype)]).check()
    assert out.shape == (*shape, shape[-1])


@pytest.mark.parametrize("dtype", DIAG_TYPES)
@pytest.mark.parametrize("shape", [[3, 3], [3, 1], [2, 4], [2, 3, 2], [2, 2, 1, 5]])
def test_matrix_set_diag(dtype, shape):
    rng = np.random.default_rng(7)
    x = values(rng, shape, dtype)
    diagonal = values(rng, [*shape[:-2], min(shape[-2:])], dtype)
    SingleOpModel(Op.MATRIX_SET_DIAG, [Operand(x), Operand(diagonal)], [tt(dtype)]).check()


# --- BUCKETIZE --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("boundaries", [[], [0.0], [-5.0, -1.5, 0.0, 0.0, 2.5, 100.0]])
def test_bucketize(dtype, boundaries):
    rng = np.random.default_rng(8)
    x = (rng.standard_normal([3, 7]) * 10).astype(dtype)
    x.reshape(-1)[:3] = [-5, 0, 100]  # values equal to a boundary go to the bucket above it
    SingleOpModel(Op.BUCKETIZE, [Operand(x)], [T.INT32], {"boundaries": boundaries}).check()


def test_bucketize_unsorted_boundaries():
    model = SingleOpModel(
        Op.BUCKETIZE, [Operand(np.zeros([2], np.float32))], [T.INT32], {"boundaries": [1.0, 0.0]}
    )
    fails(
        model, r"^Expected sorted boundariesNode number 0 \(BUCKETIZE\) failed to prepare\.", step="prepare"
    )


# --- types and paths LiteRT's Python API cannot compare directly --------------------------------------


def test_gather_int4_rows():
    """INT4 params (two values a byte) gather whole byte rows; get_tensor unpacks the output."""
    builder = ModelBuilder()
    params = builder.add_tensor("p", T.INT4, [4, 2], data=bytes([0x21, 0x43, 0x65, 0x87]))
    positions = builder.add_input("i", T.INT32, [3])
    output = builder.add_output(builder.add_tensor("o", T.INT4, [1]))
    builder.add_operator(Op.GATHER, [params, positions], [output], {"axis": 0})
    model, feeds = builder.build(), [np.array([3, 0, 1], np.int32)]
    (reference,) = run(litert_interpreter(model), feeds)
    (ours,) = run(pytflite.Interpreter(model_content=model), feeds)
    assert ours.dtype == reference.dtype == np.int8
    np.testing.assert_array_equal(ours, reference)
    np.testing.assert_array_equal(ours, [[7, -8], [1, 2], [3, 4]])


def test_dynamic_outputs_follow_each_invoke():
    """WHERE, UNIQUE and run-time ONE_HOT depth resize their outputs at every invoke."""
    builder = ModelBuilder()
    condition = builder.add_input("c", T.BOOL, [6])
    x = builder.add_input("x", T.INT32, [6])
    coords = builder.add_output(builder.add_tensor("coords", T.INT64, [1]))
    uniq = builder.add_output(builder.add_tensor("uniq", T.INT32, [1]))
    index = builder.add_output(builder.add_tensor("index", T.INT32, [1]))
    builder.add_operator(Op.WHERE, [condition], [coords])
    builder.add_operator(Op.UNIQUE, [x], [uniq, index], {"idx_out_type": T.INT32})
    model = builder.build()
    ours, reference = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    rng = np.random.default_rng(9)
    for interpreter in (ours, reference):
        interpreter.allocate_tensors()
    for _ in range(4):
        feeds = [rng.random(6) < 0.5, rng.integers(0, 4, 6).astype(np.int32)]
        outputs = []
        for interpreter in (ours, reference):
            for detail, value in zip(interpreter.get_input_details(), feeds):
                interpreter.set_tensor(detail["index"], value)
            interpreter.invoke()
            outputs.append([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()])
        for i, (mine, theirs) in enumerate(zip(*outputs, strict=True)):
            assert_matches(mine, theirs, what=f"output {i}")


PACKED_BITS = {T.INT4: 4, T.INT2: 2}


def lookup_model(ids, table, table_type, quantization, output_type, constant=True):
    """EMBEDDING_LOOKUP of `table` (one value per element; int4/int2 packed here, low bits first)."""
    builder = ModelBuilder()
    lookup = builder.add_input("ids", T.INT32, ids.shape)
    feeds = [ids]
    if table_type in PACKED_BITS:
        bits = PACKED_BITS[table_type]
        fields = (table.reshape(-1).astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8)
        fields = np.concatenate([fields, np.zeros(-fields.size % (8 // bits), np.uint8)])
        shifts = np.arange(0, 8, bits, dtype=np.uint8)
        data = np.bitwise_or.reduce(fields.reshape(-1, 8 // bits) << shifts, axis=1).view(np.int8)
        value = builder.add_tensor("table", table_type, table.shape, data=data, quantization=quantization)
    elif constant:
        value = builder.add_tensor("table", table_type, table.shape, data=table, quantization=quantization)
    else:
        value = builder.add_input("table", table_type, table.shape, quantization=quantization)
        feeds.append(table)
    output = builder.add_tensor("out", output_type, [])
    builder.add_output(output)
    builder.add_operator(Op.EMBEDDING_LOOKUP, [lookup, value], [output], version=4)
    return builder.build(), feeds


@settings(max_examples=60, deadline=None)
@given(
    table_type=st.sampled_from([T.INT8, T.UINT8, T.INT4, T.INT2]),
    output_type=st.sampled_from([T.FLOAT32, T.FLOAT16]),
    per_row=st.booleans(),
    shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=7),
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_embedding_lookup_hybrid(table_type, output_type, per_row, shape, constant, seed):
    """Dequantizing lookups: the stored bits read as int8 (uint8 included) times the per-tensor or
    per-row scale, rounded to float32 (then float16). int4/int2 rows start at the byte holding their
    first element, as TFLite unpacks them (odd row lengths included)."""
    rng = np.random.default_rng(seed)
    low, high = {T.INT8: (-128, 127), T.UINT8: (0, 255), T.INT4: (-8, 7), T.INT2: (-2, 1)}[table_type]
    table = rng.integers(low, high, size=shape, endpoint=True).astype(
        np.uint8 if table_type == T.UINT8 else np.int8
    )
    rows = shape[0]
    scales = np.float32(2 ** rng.uniform(-12, 4, size=rows if per_row and rows > 1 else 1))
    quantization = AffineQuantization(scales, [0] * scales.size, 0)
    ids = rng.integers(0, rows, size=int(rng.integers(0, 6))).astype(np.int32)
    model, feeds = lookup_model(ids, table, table_type, quantization, output_type, constant)
    reference = run(litert_interpreter(model), feeds)[0]
    ours = run(pytflite.Interpreter(model_content=model), feeds)[0]
    assert ours.dtype == reference.dtype and ours.shape == reference.shape
    np.testing.assert_array_equal(ours, reference)


def test_embedding_lookup_hybrid_int4_odd_rows():
    """Rows of 3 int4 values: TFLite starts row 1 at element 2 (the byte holding element 3)."""
    table = np.array([[1, 2, 3], [4, 5, 6], [-7, -8, 7]], np.int8)
    model, feeds = lookup_model(np.array([1, 2, 0], np.int32), table, T.INT4, (0.5, 0), T.FLOAT32)
    out = run(pytflite.Interpreter(model_content=model), feeds)[0]
    np.testing.assert_array_equal(out, run(litert_interpreter(model), feeds)[0])
    np.testing.assert_array_equal(out, 0.5 * np.array([[3, 4, 5], [-7, -8, 7], [1, 2, 3]], np.float32))


def test_embedding_lookup_hybrid_errors():
    table = np.ones([3, 2], np.int8)
    ids = Operand(np.array([0], np.int32))
    fails(
        SingleOpModel(Op.EMBEDDING_LOOKUP, [ids, Operand(table, True, quantization=(0.5, 1))], [T.FLOAT32]),
        r"qparams->zero_point->data\[0\] == 0 was not true\.",
        "prepare",
    )
    per_row = AffineQuantization([0.5, 0.25, 1.0], [0, 0, 0], 0)
    fails(
        SingleOpModel(Op.EMBEDDING_LOOKUP, [ids, Operand(table, True, quantization=per_row)], [T.INT8]),
        r"output->type == kTfLiteFloat32 \|\| output->type == kTfLiteFloat16 was not true\.",
        "prepare",
    )
    two_scales = AffineQuantization([0.5, 0.25], [0, 0], 1)
    fails(
        SingleOpModel(Op.EMBEDDING_LOOKUP, [ids, Operand(table, True, quantization=two_scales)], [T.FLOAT32]),
        r"qparams->quantized_dimension == 0 was not true\.",
        "prepare",
    )
    # TFLite would read int16 values as int8 bytes: refused (LiteRT returns garbage)
    model = SingleOpModel(
        Op.EMBEDDING_LOOKUP, [ids, Operand(table.astype(np.int16), True, quantization=(0.5, 0))], [T.FLOAT32]
    )
    with pytest.raises(
        RuntimeError, match=r"Type 'INT16' is not supported by a dequantizing embedding_lookup"
    ):
        pytflite.Interpreter(model_content=model.build()[0]).allocate_tensors()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("same", [True, False])
def test_gather_quantized(dtype, same):
    """GATHER moves quantized values without requantizing, whatever the output's quantization says."""
    rng = np.random.default_rng(0)
    params = values(rng, [100, 32], dtype)
    positions = rng.integers(0, 100, size=[1, 16]).astype(np.int32)
    quantization = (0.00039363, 0) if dtype == np.int16 else (0.00039363, 3)
    output_quantization = quantization if same else (0.5, 0)
    for constant in (False, True):
        (out,) = SingleOpModel(
            Op.GATHER,
            [Operand(params, constant=constant, quantization=quantization), Operand(positions)],
            [tt(dtype)],
            {"axis": 0},
            output_quantization=[output_quantization],
        ).check()
        np.testing.assert_array_equal(out, params[positions])


def test_select_string_fails_in_prepare():
    """LiteRT fails at invoke ("Does not support type other than bool|float|int"); pytflite in prepare."""
    strings = np.array([b"a", b"b"], dtype=object)
    model, _ = SingleOpModel(
        Op.SELECT_V2, [Operand(np.array([True, False])), Operand(strings), Operand(strings)], [T.STRING]
    ).build()
    with pytest.raises(RuntimeError, match=r"Type 'STRING' is not supported by SELECT_V2\."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


def test_unsupported_types_fail_in_prepare():
    model = SingleOpModel(
        Op.SEGMENT_SUM, [Operand(np.ones([3], np.int64)), Operand(np.array([0, 0, 1], np.int32))], [T.INT64]
    )
    fails(model, r"data->type == kTfLiteInt32 \|\| data->type == kTfLiteFloat32 was not true\.", "prepare")
    model = SingleOpModel(
        Op.UNIQUE, [Operand(np.array([1, 2, 1], np.int32))], [T.INT32, T.INT64], {"idx_out_type": T.INT32}
    )
    fails(model, r"output_index_tensor->type != params->index_out_type \(INT64 != INT32\)", "prepare")

"""The StableHLO builtins against LiteRT: the elementwise ops on every element type they take (bit for
bit, floats included: NaN and signed-zero operands decide std::max/min), PAD with edge, negative and
interior padding, COMPOSITE and CASE calling subgraphs, and the checks TFLite makes."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model.builder import ModelBuilder
from pytflite.model.options import RngAlgorithm
from tests.ops.refusals import fails_like_litert
from tests.oracle import litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

_ARITHMETIC = (Op.STABLEHLO_ADD, Op.STABLEHLO_MULTIPLY, Op.STABLEHLO_MAXIMUM, Op.STABLEHLO_MINIMUM)
DTYPES = (
    np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint16, np.uint32, np.uint64, np.bool_,
)  # fmt: skip


def identical(model: bytes, feeds) -> list[np.ndarray]:
    """pytflite's outputs equal LiteRT's bit for bit (shape, type and every byte); returns them."""
    ours = run(pytflite.Interpreter(model_content=model), feeds)
    theirs = run(litert_interpreter(model), feeds)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
        assert a.tobytes() == b.tobytes(), (a, b)
    return ours


def both_refuse(model: bytes, feeds, message: str) -> None:
    """pytflite and LiteRT both fail `model` with an error containing `message` (for models with
    subgraphs, which SingleOpModel and fails_like_litert do not build)."""
    for interpreter in (pytflite.Interpreter(model_content=model), litert_interpreter(model)):
        with pytest.raises(RuntimeError, match=re.escape(message)):
            run(interpreter, feeds)


def binary(op, a, b, options=None) -> SingleOpModel:
    return SingleOpModel(op, [Operand(a), Operand(b)], [tensor_type_for_dtype(a.dtype)], options=options)


def _operands(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5, rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.floating):
        a, b = (rng.standard_normal(shape) * 100 for _ in range(2))
        a, b = a.astype(dtype).reshape(-1), b.astype(dtype).reshape(-1)
        a[:6] = [np.nan, 1, np.nan, 0.0, -0.0, np.inf]  # std::max/min pick by position
        b[:6] = [1, np.nan, np.nan, -0.0, 0.0, -np.inf]
        return a.reshape(shape), b.reshape(shape)
    info = np.iinfo(dtype)  # the full range: sums and products wrap
    return tuple(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True) for _ in range(2))


@pytest.mark.parametrize("op", _ARITHMETIC)
@pytest.mark.parametrize("dtype", DTYPES)
def test_arithmetic_matches_bit_for_bit(op, dtype):
    a, b = _operands(dtype, (3, 40, 17), seed=int(op))
    identical(*binary(op, a, b).build())


@pytest.mark.parametrize("dtype", [t for t in DTYPES if not np.issubdtype(t, np.floating)])
def test_and_is_bitwise_or_logical(dtype):
    a, b = _operands(dtype, (64, 33), seed=7)
    (out,) = identical(*binary(Op.STABLEHLO_AND, a, b).build())
    assert np.array_equal(out, a & b)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32])
def test_shift_left_wraps_in_the_type(dtype):
    bits = 32 if dtype == np.int32 else 31  # 8- and 16-bit values shift as int in C++
    rng = np.random.default_rng(bits)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (50, 41), dtype=dtype, endpoint=True)
    shift = rng.integers(0, bits, a.shape).astype(dtype)
    identical(*binary(Op.STABLEHLO_SHIFT_LEFT, a, shift).build())


def test_elementwise_refusals_in_tflites_words():
    x = np.ones((2, 3), np.float32)
    fails_like_litert(
        binary(Op.STABLEHLO_ADD, x, np.ones((2, 3), np.int32)),
        "input_tensor1->type != input_tensor2->type (FLOAT32 != INT32)",
    )
    fails_like_litert(
        binary(Op.STABLEHLO_MULTIPLY, x, np.ones((2, 3, 1), np.float32)),
        "input_tensor1->dims->size != input_tensor2->dims->size (2 != 3)",
    )
    fails_like_litert(
        binary(Op.STABLEHLO_MAXIMUM, x, np.ones((2, 4), np.float32)),
        "input_tensor1->dims->data[idx] != input_tensor2->dims->data[idx] (3 != 4)",
    )
    fails_like_litert(
        binary(Op.STABLEHLO_AND, x, x), "(Data Type: FLOAT32) is not supported for bitwise/logical AND."
    )
    fails_like_litert(binary(Op.STABLEHLO_SHIFT_LEFT, x, x), "(Index Type: FLOAT32) currently not supported.")
    fails_like_litert(
        binary(Op.STABLEHLO_SHIFT_LEFT, np.ones(3, np.int8), np.ones(3, np.int16)),
        "input1->type != input2->type (INT8 != INT16)",
    )


# --- PAD ---------------------------------------------------------------------------------------------


def pad(value, low, high, interior, padding_value=None) -> SingleOpModel:
    value = np.asarray(value)
    if padding_value is None:
        padding_value = np.full((), 7, value.dtype)
    options = {"edge_padding_low": low, "edge_padding_high": high, "interior_padding": interior}
    return SingleOpModel(
        Op.STABLEHLO_PAD,
        [Operand(value), Operand(padding_value)],
        [tensor_type_for_dtype(value.dtype)],
        options=options,
    )


@pytest.mark.parametrize(
    "shape, low, high, interior",
    [
        ((17,), (3,), (2,), (0,)),
        ((5, 6), (1, 0), (2, 3), (1, 2)),
        ((5, 6), (-1, -2), (-2, 1), (0, 0)),  # negative edges crop
        ((5, 6), (-2, -3), (-1, -4), (2, 3)),  # cropping into the interior padding
        ((2, 3, 4, 5), (0, 1, -1, 2), (1, -1, 0, 3), (1, 0, 2, 1)),
        ((3, 1, 4, 2, 2), (1, 1, 1, 1, 1), (0, 0, 0, 0, 0), (3, 3, 3, 3, 3)),
        ((0, 4), (2, 1), (1, 1), (1, 1)),  # an empty input: only padding
        ((4, 3), (-3, 0), (-2, 0), (0, 0)),  # a negative output dimension: every dimension 0
        ((4, 3), (-6, 0), (4, 0), (0, 0)),  # cropped past the input
    ],
)
def test_pad_places_and_crops(shape, low, high, interior):
    value = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    identical(*pad(value, low, high, interior, np.float32(-0.5)).build())


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_, np.int16, np.float16, np.int64, np.complex64])
def test_pad_every_element_size(dtype):
    value = np.arange(24).reshape(2, 3, 4).astype(dtype)
    identical(*pad(value, (1, 0, 2), (0, 2, -1), (1, 1, 0), np.ones((), dtype)).build())


def test_pad_refusals_in_tflites_words():
    value = np.ones((2, 3), np.float32)
    fails_like_litert(
        pad(value, (1, 1), (1, 1), (0, 0), np.ones(4, np.float32)), "padding_value_count != 1 (4 != 1)"
    )
    fails_like_litert(
        pad(value, (1, 1), (1, 1), (0, 0), np.int32(0)),
        "input_tensor->type == padding_value_tensor->type was not true.",
    )
    fails_like_litert(
        pad(value, (1, 1), (1, 1), (0, -1)), "StableHLO Pad interior padding must be non-negative."
    )


# --- COMPOSITE and CASE ------------------------------------------------------------------------------


def _scaled_subgraph(builder: ModelBuilder, name: str, factor: float, shape) -> None:
    """A subgraph computing x * factor + y."""
    graph = builder.add_subgraph(name)
    x, y = graph.add_input("x", T.FLOAT32, shape), graph.add_input("y", T.FLOAT32, shape)
    scale = graph.add_constant("factor", np.full(shape, factor, np.float32))
    scaled, result = (
        graph.add_tensor("scaled", T.FLOAT32, shape),
        graph.add_tensor("result", T.FLOAT32, shape),
    )
    graph.add_operator(Op.STABLEHLO_MULTIPLY, [x, scale], [scaled])
    graph.add_operator(Op.STABLEHLO_ADD, [scaled, y], [result])
    graph.add_output(result)


def composite_model(shape=(4, 5)) -> bytes:
    b = ModelBuilder()
    x, y = b.add_input("x", T.FLOAT32, shape), b.add_input("y", T.FLOAT32, shape)
    out = b.add_tensor("out", T.FLOAT32, shape)
    b.add_output(out)
    options = {
        "name": "odml.scaled_add",
        "decomposition_subgraph_index": 1,
        "composite_attributes": b"",
        "version": 1,
    }
    b.add_operator(Op.STABLEHLO_COMPOSITE, [x, y], [out], options)
    _scaled_subgraph(b, "decomposition", 3.0, shape)
    return b.build()


def test_composite_runs_its_decomposition():
    x, y = (np.random.default_rng(i).standard_normal((4, 5)).astype(np.float32) for i in range(2))
    (out,) = identical(composite_model(), [x, y])
    assert np.array_equal(out, x * np.float32(3) + y)


def case_model(branches: int) -> bytes:
    shape = (3, 6)
    b = ModelBuilder()
    index = b.add_input("index", T.INT32, [])
    x, y = b.add_input("x", T.FLOAT32, shape), b.add_input("y", T.FLOAT32, shape)
    out = b.add_tensor("out", T.FLOAT32, shape)
    b.add_output(out)
    b.add_operator(
        Op.STABLEHLO_CASE, [index, x, y], [out], {"branch_subgraph_indices": list(range(1, branches + 1))}
    )
    for k in range(branches):
        _scaled_subgraph(b, f"branch{k}", k + 0.5, shape)
    return b.build()


@pytest.mark.parametrize("index", [0, 1, 2, 3, -1, 9])
def test_case_runs_the_chosen_branch_or_the_last(index):
    x, y = (np.random.default_rng(i).standard_normal((3, 6)).astype(np.float32) for i in range(2))
    (out,) = identical(case_model(4), [np.int32(index), x, y])
    chosen = index if 0 <= index < 4 else 3
    assert np.array_equal(out, x * np.float32(chosen + 0.5) + y)


# --- GATHER ------------------------------------------------------------------------------------------


def gather(operand, indices, output_shape, **options) -> SingleOpModel:
    options.setdefault("indices_are_sorted", False)
    return SingleOpModel(
        Op.STABLEHLO_GATHER,
        [Operand(operand), Operand(indices)],
        [tensor_type_for_dtype(operand.dtype)],
        options=options,
        output_shapes=[output_shape],
    )


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_rows_like_jnp_take(index_dtype):
    """x[idx] on a (50, 16) table: the form jnp.take and embedding lookups export."""
    table = np.random.default_rng(0).standard_normal((50, 16)).astype(np.float32)
    idx = np.random.default_rng(1).integers(-5, 60, (7, 9, 1)).astype(index_dtype)  # clipped outside
    model = gather(
        table, idx, (7, 9, 16),
        offset_dims=[2], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=2, slice_sizes=[1, 16],
    )  # fmt: skip
    (out,) = identical(*model.build())
    assert np.array_equal(out, table[np.clip(idx[..., 0], 0, 49)])


@pytest.mark.parametrize(
    "operand_shape, indices_shape, options, output_shape",
    [
        # windows of 3x4 starting at (i, j) pairs, the index vector first, offsets in front
        ((10, 12, 5), (2, 6), dict(offset_dims=[0, 1, 2], collapsed_slice_dims=[], start_index_map=[0, 1],
                                   index_vector_dim=0, slice_sizes=[3, 4, 5]), (3, 4, 5, 6)),
        # a collapsed middle axis, offsets interleaved with batch axes, start_index_map out of order
        ((6, 7, 8), (4, 5, 2), dict(offset_dims=[1, 3], collapsed_slice_dims=[1], start_index_map=[2, 1],
                                    index_vector_dim=2, slice_sizes=[2, 1, 3]), (4, 2, 5, 3)),
        # a collapsed axis with a slice wider than 1: LiteRT reads its first element
        ((6, 7), (5, 1), dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0],
                              index_vector_dim=1, slice_sizes=[2, 7]), (5, 7)),
    ],
)  # fmt: skip
def test_gather_windows(operand_shape, indices_shape, options, output_shape):
    rng = np.random.default_rng(len(operand_shape) + len(indices_shape))
    operand = rng.integers(-1000, 1000, operand_shape).astype(np.int16)
    indices = rng.integers(-2, 13, indices_shape).astype(np.int32)
    identical(*gather(operand, indices, output_shape, **options).build())


def test_gather_refusals_in_tflites_words():
    operand, indices = np.ones((4, 5), np.float32), np.zeros((3, 1), np.int32)
    options = dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1)
    fails_like_litert(
        gather(operand, indices, (3, 5), slice_sizes=[1], **options),
        "data->num_slice_sizes != operand->dims->size (1 != 2)",
    )
    fails_like_litert(
        gather(operand, indices.astype(np.int16), (3, 5), slice_sizes=[1, 5], **options),
        "(Index Type: INT16) currently not supported.",
    )


# --- RNG_BIT_GENERATOR -------------------------------------------------------------------------------


def rng_bit_generator(algorithm, state, output_type, output_shape) -> SingleOpModel:
    return SingleOpModel(
        Op.STABLEHLO_RNG_BIT_GENERATOR,
        [Operand(np.asarray(state, np.uint64))],
        [T.UINT64, output_type],
        options={"algorithm": algorithm},
        output_shapes=[(len(state),), output_shape],
    )


_EDGE = (1 << 64) - 3  # the 64-bit counter wraps within the draw


@pytest.mark.parametrize(
    "algorithm, state",
    [
        (RngAlgorithm.THREEFRY, [0x0123456789ABCDEF, 42]),
        (RngAlgorithm.THREEFRY, [7, _EDGE]),
        (RngAlgorithm.PHILOX, [0xDEADBEEFCAFEF00D, 5]),
        (RngAlgorithm.PHILOX, [3, _EDGE, 0xFFFFFFFFFFFFFFFF]),  # no carry into the upper counter
        (RngAlgorithm.DEFAULT, [1, 2, 3]),
    ],
)
@pytest.mark.parametrize("output_type, shape", [(T.UINT32, (37, 11)), (T.INT64, (5, 13)), (T.INT32, (3,))])
def test_rng_bit_generator_matches_bits_and_state(algorithm, state, output_type, shape):
    identical(*rng_bit_generator(algorithm, state, output_type, shape).build())


def test_threefry_known_answer():
    """Random123's Threefry-2x32-20 known-answer vector (key and counter all ones)."""
    from pytflite.ops.stablehlo.rng_bit_generator import threefry_words

    words = threefry_words((0xFFFFFFFF, 0xFFFFFFFF), (1 << 64) - 1, 1)
    assert [hex(w) for w in words] == ["0x1cb996fc", "0xbb002be7"]


def test_rng_bit_generator_refusals_in_tflites_words():
    fails_like_litert(
        rng_bit_generator(RngAlgorithm.THREEFRY, [1, 2, 3], T.UINT32, (4,)),
        "SizeOfDimension(initial_state, 0) != 2 (3 != 2)",
    )
    fails_like_litert(
        rng_bit_generator(RngAlgorithm.PHILOX, [1, 2, 3, 4], T.UINT32, (4,)),
        "state_dim_0_size == 2 || state_dim_0_size == 3 was not true.",
    )
    fails_like_litert(
        rng_bit_generator(RngAlgorithm.PHILOX, [1, 2], T.FLOAT32, (4,)),
        "output->type == kTfLiteInt32 || output->type == kTfLiteInt64",
    )


# --- REDUCE_WINDOW -----------------------------------------------------------------------------------


def reduce_window_model(value, init, body_ops, **options) -> bytes:
    """STABLEHLO_REDUCE_WINDOW of `value` whose body subgraph runs `body_ops` in a chain on two scalars."""
    value = np.asarray(value)
    tensor_type = tensor_type_for_dtype(value.dtype)
    b = ModelBuilder()
    x = b.add_input("x", tensor_type, value.shape)
    start = b.add_constant("init", np.asarray(init, value.dtype).reshape(()))
    out = b.add_tensor("out", tensor_type, [1] * value.ndim)
    b.add_output(out)
    b.add_operator(Op.STABLEHLO_REDUCE_WINDOW, [x, start], [out], {**options, "body_subgraph_index": 1})
    body = b.add_subgraph("body")
    result = body.add_input("a", tensor_type, [])
    other = body.add_input("b", tensor_type, [])
    for k, op in enumerate(body_ops):
        produced = body.add_tensor(f"r{k}", tensor_type, [])
        body.add_operator(op, [result, other], [produced])
        result = produced
    body.add_output(result)
    return b.build()


_WINDOWING = [
    # 3x3 max pooling, stride 2, padding 1 as JAX's lax.reduce_window exports it
    dict(window_dimensions=[1, 3, 3, 1], window_strides=[1, 2, 2, 1], base_dilations=[1, 1, 1, 1],
         window_dilations=[1, 1, 1, 1], padding=[0, 0, 1, 1, 1, 1, 0, 0]),
    # base and window dilation, negative padding (cropping), uneven strides
    dict(window_dimensions=[1, 2, 3, 2], window_strides=[1, 3, 1, 2], base_dilations=[1, 2, 1, 3],
         window_dilations=[1, 2, 1, 2], padding=[0, 1, -2, 3, 1, -1, 2, 2]),
]  # fmt: skip


@pytest.mark.parametrize("windowing", range(len(_WINDOWING)))
@pytest.mark.parametrize(
    "body, dtype, init",
    [
        (Op.STABLEHLO_ADD, np.float32, 0.25),
        (Op.STABLEHLO_MAXIMUM, np.float32, -np.inf),
        (Op.MINIMUM, np.int16, 100),
        (Op.STABLEHLO_MULTIPLY, np.float64, 1.0),
        (Op.ADD, np.int8, 3),
        (Op.LOGICAL_OR, np.bool_, False),
        (Op.LOGICAL_AND, np.bool_, True),
    ],
)
def test_reduce_window_matches_bit_for_bit(windowing, body, dtype, init):
    rng = np.random.default_rng(windowing)
    shape = (2, 19, 23, 5)
    if dtype == np.bool_:
        value = rng.random(shape) < 0.7
    elif np.issubdtype(dtype, np.floating):
        value = (rng.standard_normal(shape) * 3).astype(dtype)
        value.reshape(-1)[::97] = np.nan  # the comparisons' NaN handling decides max and min
    else:
        value = rng.integers(-100, 100, shape).astype(dtype)
    identical(reduce_window_model(value, init, [body], **_WINDOWING[windowing]), [value])


def test_reduce_window_refusals_in_tflites_words():
    value = np.ones((4, 5), np.float32)
    options = dict(window_dimensions=[2, 2], window_strides=[1, 1], base_dilations=[1, 1],
                   window_dilations=[1, 1], padding=[0, 0, 0, 0])  # fmt: skip
    two_kernels = reduce_window_model(value, 0, [Op.STABLEHLO_ADD, Op.STABLEHLO_MULTIPLY], **options)
    both_refuse(two_kernels, [value], "unsupported reduction body.")
    both_refuse(reduce_window_model(value, 0, [Op.SUB], **options), [value], "unsupported reduction body.")
    zero_stride = reduce_window_model(value, 0, [Op.ADD], **dict(options, window_strides=[1, 0]))
    both_refuse(zero_stride, [value], "AllGtThanZero(window_strides) was not true.")
    empty = reduce_window_model(value, 0, [Op.ADD], **dict(options, padding=[0, 0, -3, -2]))
    both_refuse(empty, [value], "The padding specification of stablehlo.reduce_window gives an empty tensor.")
    with pytest.raises(RuntimeError, match="padding crops the input"):  # LiteRT: no size for a temporary
        model = reduce_window_model(value, 0, [Op.ADD], **dict(options, padding=[0, 0, -3, -3]))
        run(pytflite.Interpreter(model_content=model), [value])


# --- SCATTER -----------------------------------------------------------------------------------------


def scatter_model(operand, indices, updates, body_op, **options) -> bytes:
    """STABLEHLO_SCATTER whose update computation is `body_op` on two scalars (None: return the update)."""
    tensor_type = tensor_type_for_dtype(operand.dtype)
    b = ModelBuilder()
    x = b.add_input("operand", tensor_type, operand.shape)
    at = b.add_input("indices", tensor_type_for_dtype(indices.dtype), indices.shape)
    new = b.add_input("updates", tensor_type, updates.shape)
    out = b.add_tensor("out", tensor_type, operand.shape)
    b.add_output(out)
    options = {"indices_are_sorted": False, "unique_indices": False, **options}
    b.add_operator(
        Op.STABLEHLO_SCATTER, [x, at, new], [out], {**options, "update_computation_subgraph_index": 1}
    )
    body = b.add_subgraph("update")
    old, update = body.add_input("old", tensor_type, []), body.add_input("update", tensor_type, [])
    if body_op is None:
        body.add_output(update)
    else:
        result = body.add_tensor("result", tensor_type, [])
        body.add_operator(body_op, [old, update], [result])
        body.add_output(result)
    return b.build()


_ROWS = dict(
    update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1
)


@pytest.mark.parametrize(
    "body", [None, Op.STABLEHLO_ADD, Op.STABLEHLO_MULTIPLY, Op.STABLEHLO_MAXIMUM, Op.STABLEHLO_MINIMUM]
)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint64, np.bool_])
def test_scatter_rows_with_repeats_like_x_at_idx(body, dtype):
    """x.at[idx].op(rows) on a (40, 24) operand, repeated and out-of-range (even negative) row indices."""
    rng = np.random.default_rng(3)
    if dtype == np.bool_:
        operand, updates = rng.random((40, 24)) < 0.5, rng.random((300, 24)) < 0.5
    elif np.issubdtype(dtype, np.floating):
        operand = (rng.standard_normal((40, 24)) * 4).astype(dtype)
        updates = (rng.standard_normal((300, 24)) * 4).astype(dtype)
        operand.reshape(-1)[::37], updates.reshape(-1)[::41] = np.nan, np.nan
        operand.reshape(-1)[5::53], updates.reshape(-1)[7::59] = -0.0, 0.0
    else:
        info = np.iinfo(dtype)
        operand = rng.integers(info.min, info.max, (40, 24), dtype=dtype, endpoint=True)
        updates = rng.integers(info.min, info.max, (300, 24), dtype=dtype, endpoint=True)
    indices = rng.integers(-1, 45, (300, 1)).astype(np.int32)
    identical(scatter_model(operand, indices, updates, body, **_ROWS), [operand, indices, updates])


@pytest.mark.parametrize(
    "operand_shape, indices_shape, updates_shape, options",
    [
        # 2x3 windows at (i, j) starts, the index vector first, window axes interleaved with the batch axis
        ((9, 10, 4), (2, 7), (2, 7, 3, 4),
         dict(update_window_dims=[0, 2, 3], inserted_window_dims=[], scatter_dims_to_operand_dims=[1, 0],
              index_vector_dim=0)),
        # a point scatter into a 3-d operand (every axis inserted), two batch axes, int64 indices
        ((6, 5, 7), (4, 9, 3), (4, 9),
         dict(update_window_dims=[], inserted_window_dims=[0, 1, 2], scatter_dims_to_operand_dims=[2, 0, 1],
              index_vector_dim=2)),
    ],
)  # fmt: skip
def test_scatter_windows(operand_shape, indices_shape, updates_shape, options):
    rng = np.random.default_rng(len(updates_shape))
    operand = rng.standard_normal(operand_shape).astype(np.float32)
    updates = rng.standard_normal(updates_shape).astype(np.float32)
    indices = rng.integers(-2, 10, indices_shape).astype(np.int64 if len(updates_shape) == 2 else np.int32)
    identical(
        scatter_model(operand, indices, updates, Op.STABLEHLO_ADD, **options), [operand, indices, updates]
    )


def test_scatter_refusals_in_tflites_words():
    operand, updates = np.ones((4, 3), np.float32), np.ones((2, 3), np.float32)
    indices = np.zeros((2, 1), np.int32)
    feeds = [operand, indices, updates]
    both_refuse(
        scatter_model(operand, indices, updates, Op.ADD, **_ROWS),  # TFLite ADD: not recognised
        feeds,
        "Only update, Add, Multiply, Maximum and Minimum operations are currently supported for stablehlo.scatter.",
    )
    wide = scatter_model(operand, indices, updates, None, **dict(_ROWS, update_window_dims=[0, 1, 2]))
    both_refuse(wide, feeds, "data->num_update_window_dims <= updates->dims->size was not true.")
    feeds[1] = indices.astype(np.int16)
    both_refuse(
        scatter_model(operand, feeds[1], updates, None, **_ROWS),
        feeds,
        "(Index Type: INT16) currently not supported.",
    )
    feeds[1], feeds[0], feeds[2] = indices, operand.astype(np.complex64), updates.astype(np.complex64)
    both_refuse(
        scatter_model(feeds[0], indices, feeds[2], None, **_ROWS),
        feeds,
        "(Index Type: INT32, Data Type: COMPLEX64) currently not supported.",
    )

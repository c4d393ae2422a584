"""RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR, DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND and
SPACE_TO_BATCH_ND against LiteRT: shapes, options, element types, constant and run-time size/block
tensors, the BUILTIN_REF kernels, and the errors for invalid models."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import assert_matches, litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel, check_ref

pytestmark = requires_litert

BILINEAR_TYPES = [T.FLOAT32, T.UINT8, T.INT8, T.INT16]
NEAREST_TYPES = [T.FLOAT32, T.INT32, T.UINT32, T.UINT8, T.INT8, T.BOOL, T.INT16, T.UINT16, T.FLOAT16]
DEPTH_TYPES = [T.FLOAT32, T.UINT8, T.INT8, T.INT32, T.INT64]
BATCH_TYPES = [T.FLOAT32, T.INT32, T.UINT8, T.INT8, T.INT16, T.INT64, T.BOOL, T.FLOAT16, T.FLOAT64]
DTYPE = {
    T.FLOAT32: np.float32,
    T.FLOAT16: np.float16,
    T.FLOAT64: np.float64,
    T.INT32: np.int32,
    T.UINT32: np.uint32,
    T.UINT8: np.uint8,
    T.INT8: np.int8,
    T.INT16: np.int16,
    T.UINT16: np.uint16,
    T.INT64: np.int64,
    T.BOOL: np.bool_,
}
QUANTIZED = {T.UINT8: (0.5, 3), T.INT8: (0.25, -128), T.INT16: (0.125, 0)}


def random_array(rng: np.random.Generator, tensor_type: T, shape) -> np.ndarray:
    dtype = DTYPE[tensor_type]
    if tensor_type == T.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dtype, np.floating):
        return (rng.standard_normal(shape) * 4).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def prepare_error(model: SingleOpModel, match: str) -> None:
    content, _ = model.build()
    with pytest.raises(RuntimeError, match=match):
        pytflite.Interpreter(model_content=content).allocate_tensors()


# --------------------------------------------------------------------------------------------------
# Resizing


def resize_model(op, x, size, tensor_type, align=False, half=False, constant=True, version=None):
    quantization = QUANTIZED.get(tensor_type) if op == Op.RESIZE_BILINEAR else None
    return SingleOpModel(
        op,
        [
            Operand(x, type=tensor_type, quantization=quantization),
            Operand(np.array(size, np.int32), constant=constant),
        ],
        [tensor_type],
        {"align_corners": align, "half_pixel_centers": half},
        version=version or (1 if tensor_type == T.FLOAT32 else 4),
        output_quantization=[quantization],
    )


size_pairs = st.tuples(st.integers(1, 7), st.integers(1, 7))
flags = st.sampled_from([(False, False), (True, False), (False, True)])


@settings(max_examples=60, deadline=None)
@given(
    tensor_type=st.sampled_from(BILINEAR_TYPES),
    batch=st.integers(1, 2),
    size=size_pairs,
    channels=st.integers(1, 5),
    out_size=st.one_of(
        size_pairs.map(lambda s: (s[0] * 2, s[1] * 2)), st.tuples(st.integers(1, 13), st.integers(1, 13))
    ),
    flag=flags,
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_resize_bilinear(tensor_type, batch, size, channels, out_size, flag, constant, seed):
    x = random_array(np.random.default_rng(seed), tensor_type, [batch, *size, channels])
    resize_model(Op.RESIZE_BILINEAR, x, out_size, tensor_type, *flag, constant=constant).check()


@pytest.mark.parametrize("tensor_type", BILINEAR_TYPES, ids=lambda t: t.name)
def test_resize_bilinear_2x_and_8x_upsampling(tensor_type):
    # 2x without options and 8x with half-pixel centers on depth % 8 == 0 take special kernels in LiteRT.
    rng = np.random.default_rng(7)
    x = random_array(rng, tensor_type, [2, 3, 5, 16])
    resize_model(Op.RESIZE_BILINEAR, x, [6, 10], tensor_type).check()
    resize_model(Op.RESIZE_BILINEAR, x, [24, 40], tensor_type, half=True).check()
    resize_model(Op.RESIZE_BILINEAR, x, [2, 3], tensor_type, half=True).check()  # downsampling


@pytest.mark.parametrize(
    "shape, size",
    [
        ((1, 8, 8, 48), [16, 16]),  # taller: columns interpolated first
        ((2, 9, 5, 3), [4, 11]),  # shorter: rows first
        ((1, 6, 7, 5), [6, 3]),  # same height: rows first
    ],
)
@pytest.mark.parametrize("flag", [(False, False), (True, False), (False, True)])
def test_resize_bilinear_float32_in_both_interpolation_orders(shape, size, flag):
    x = random_array(np.random.default_rng(13), T.FLOAT32, shape)
    resize_model(Op.RESIZE_BILINEAR, x, size, T.FLOAT32, *flag).check()


@pytest.mark.parametrize("tensor_type", BILINEAR_TYPES, ids=lambda t: t.name)
def test_resize_bilinear_reference_kernel(tensor_type):
    # The reference kernel sums (in * wy) * wx in another corner order: uint8 rounds differently in ties.
    rng = np.random.default_rng(11)
    for flag in [(False, False), (True, False), (False, True)]:
        x = random_array(rng, tensor_type, [2, 5, 4, 16])
        check_ref(resize_model(Op.RESIZE_BILINEAR, x, [19, 14], tensor_type, *flag))
        check_ref(resize_model(Op.RESIZE_BILINEAR, x, [10, 8], tensor_type, *flag, constant=False))


@pytest.mark.parametrize("tensor_type", BILINEAR_TYPES, ids=lambda t: t.name)
def test_resize_bilinear_both_options_at_run_time(tensor_type):
    # TFLite checks the option pair only when the size is constant; a run-time size uses both.
    x = random_array(np.random.default_rng(3), tensor_type, [1, 4, 6, 2])
    resize_model(Op.RESIZE_BILINEAR, x, [7, 5], tensor_type, True, True, constant=False).check()


def test_resize_bilinear_errors():
    x = np.zeros([1, 2, 2, 1], np.float32)
    prepare_error(
        resize_model(Op.RESIZE_BILINEAR, x, [3, 3], T.FLOAT32, True, True),
        "If half_pixel_centers is True, align_corners must be False.",
    )
    prepare_error(resize_model(Op.RESIZE_BILINEAR, x, [0, 3], T.FLOAT32), "size must be positive")
    prepare_error(resize_model(Op.RESIZE_BILINEAR, x[0], [3, 3], T.FLOAT32), "input rank 3 != 4")
    ints = np.zeros([1, 2, 2, 1], np.int32)
    prepare_error(
        resize_model(Op.RESIZE_BILINEAR, ints, [3, 3], T.INT32), r"Type INT32 \(input\) is unsupported"
    )


@settings(max_examples=60, deadline=None)
@given(
    tensor_type=st.sampled_from(NEAREST_TYPES),
    batch=st.integers(1, 2),
    size=size_pairs,
    channels=st.integers(1, 4),
    out_size=st.tuples(st.integers(1, 13), st.integers(1, 13)),
    flag=st.sampled_from([(False, False), (True, False), (False, True), (True, True)]),
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_resize_nearest_neighbor(tensor_type, batch, size, channels, out_size, flag, constant, seed):
    x = random_array(np.random.default_rng(seed), tensor_type, [batch, *size, channels])
    resize_model(Op.RESIZE_NEAREST_NEIGHBOR, x, out_size, tensor_type, *flag, constant=constant).check()


@pytest.mark.parametrize("tensor_type", [T.UINT8, T.INT8, T.FLOAT32], ids=lambda t: t.name)
def test_resize_nearest_neighbor_fixed_point_and_reference(tensor_type):
    # 8-bit types without options take the optimized kernel's 16.16 fixed-point scale; BUILTIN_REF
    # the float one; the two disagree on 14 -> 46 and 2 -> 82.
    rng = np.random.default_rng(5)
    for in_size, out_size in [((14, 2), (46, 82)), ((10, 9), (7, 31)), ((13, 1), (29, 5))]:
        x = random_array(rng, tensor_type, [1, *in_size, 2])
        for flag in [(False, False), (True, False), (False, True)]:
            model = resize_model(Op.RESIZE_NEAREST_NEIGHBOR, x, out_size, tensor_type, *flag)
            model.check()
            check_ref(model)


def test_resize_nearest_neighbor_errors():
    x = np.zeros([1, 2, 2, 1], np.int64)
    prepare_error(
        resize_model(Op.RESIZE_NEAREST_NEIGHBOR, x, [3, 3], T.INT64), r"Type INT64 \(input\) is unsupported"
    )
    model = SingleOpModel(
        Op.RESIZE_NEAREST_NEIGHBOR,
        [Operand(np.zeros([1, 2, 2, 1], np.float32)), Operand(np.array([3, 3, 3], np.int32), constant=True)],
        [T.FLOAT32],
        {},
    )
    prepare_error(model, "size length 3 != 2")


# --------------------------------------------------------------------------------------------------
# DEPTH_TO_SPACE / SPACE_TO_DEPTH


@settings(max_examples=40, deadline=None)
@given(
    tensor_type=st.sampled_from(DEPTH_TYPES),
    to_space=st.booleans(),
    block=st.integers(1, 3),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    channels=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_depth_space(tensor_type, to_space, block, batch, size, channels, seed):
    rng = np.random.default_rng(seed)
    if to_space:
        op, shape = Op.DEPTH_TO_SPACE, [batch, *size, channels * block * block]
    else:
        op, shape = Op.SPACE_TO_DEPTH, [batch, size[0] * block, size[1] * block, channels]
    x = random_array(rng, tensor_type, shape)
    version = 2 if tensor_type == T.INT8 else 1
    SingleOpModel(
        op, [Operand(x, type=tensor_type)], [tensor_type], {"block_size": block}, version=version
    ).check()


def test_depth_space_errors():
    x = np.zeros([1, 2, 2, 8], np.float32)
    prepare_error(
        SingleOpModel(Op.DEPTH_TO_SPACE, [Operand(x)], [T.FLOAT32], {"block_size": 3}),
        r"DEPTH_TO_SPACE input depth % \(block_size \* block_size\) 8 != 0",
    )
    prepare_error(
        SingleOpModel(Op.SPACE_TO_DEPTH, [Operand(x)], [T.FLOAT32], {"block_size": 0}),
        "block_size must be positive",
    )
    prepare_error(
        SingleOpModel(Op.SPACE_TO_DEPTH, [Operand(x[..., :1])], [T.FLOAT32], {"block_size": 3}),
        "SPACE_TO_DEPTH input height % block_size 2 != 0",
    )
    prepare_error(
        SingleOpModel(Op.DEPTH_TO_SPACE, [Operand(x.astype(np.int16))], [T.INT16], {"block_size": 2}),
        r"Type INT16 \(output\) is unsupported by op DEPTH_TO_SPACE",
    )


# --------------------------------------------------------------------------------------------------
# BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND


def batch_space_model(op, x, tensor_type, block, pads, constant=True):
    quantization = QUANTIZED.get(tensor_type)
    return SingleOpModel(
        op,
        [
            Operand(x, type=tensor_type, quantization=quantization),
            Operand(np.array(block, np.int32), constant=constant),
            Operand(np.array(pads, np.int32).reshape(-1, 2), constant=constant),
        ],
        [tensor_type],
        version=3 if tensor_type == T.INT16 else (2 if tensor_type == T.INT8 else 1),
        output_quantization=[quantization],
    )


@settings(max_examples=60, deadline=None)
@given(
    tensor_type=st.sampled_from(BATCH_TYPES),
    rank=st.sampled_from([3, 4, 4]),
    batch=st.integers(1, 2),
    block=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    size=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    pads=st.tuples(*[st.integers(-2, 3)] * 4),
    channels=st.integers(1, 3),
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_space_to_batch(tensor_type, rank, batch, block, size, pads, channels, constant, seed):
    rng = np.random.default_rng(seed)
    spatial = rank - 2
    block, pads, size = list(block[:spatial]), list(pads[: 2 * spatial]), list(size[:spatial])
    for i in range(spatial):  # negative paddings crop; keep the padded size positive, a multiple of the block
        pads[2 * i] = max(pads[2 * i], 1 - size[i])
        pads[2 * i + 1] = max(pads[2 * i + 1], 1 - size[i] - pads[2 * i])
        pads[2 * i + 1] += -(size[i] + pads[2 * i] + pads[2 * i + 1]) % block[i]
    x = random_array(rng, tensor_type, [batch, *size, channels])
    batch_space_model(Op.SPACE_TO_BATCH_ND, x, tensor_type, block, pads, constant).check()


@settings(max_examples=60, deadline=None)
@given(
    tensor_type=st.sampled_from(BATCH_TYPES),
    rank=st.sampled_from([3, 4, 4]),
    batch=st.integers(1, 2),
    block=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    size=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    crops=st.tuples(*[st.integers(0, 3)] * 4),
    channels=st.integers(1, 3),
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_batch_to_space(tensor_type, rank, batch, block, size, crops, channels, constant, seed):
    rng = np.random.default_rng(seed)
    spatial = rank - 2
    block, crops, size = list(block[:spatial]), list(crops[: 2 * spatial]), list(size[:spatial])
    for i in range(spatial):  # keep at least one output row/column
        full = size[i] * block[i]
        crops[2 * i] = min(crops[2 * i], full - 1)
        crops[2 * i + 1] = min(crops[2 * i + 1], full - 1 - crops[2 * i])
    x = random_array(rng, tensor_type, [batch * int(np.prod(block)), *size, channels])
    batch_space_model(Op.BATCH_TO_SPACE_ND, x, tensor_type, block, crops, constant).check()


def test_space_to_batch_pads_with_zero_point():
    x = np.arange(1 * 3 * 3 * 2, dtype=np.int8).reshape(1, 3, 3, 2)
    out = batch_space_model(Op.SPACE_TO_BATCH_ND, x, T.INT8, [2, 2], [1, 0, 0, 1]).check()[0]
    assert (out == -128).any()  # the int8 zero point, not 0


def run_twice(model: SingleOpModel, second_feeds: list[np.ndarray]) -> None:
    """Invoke once with the model's inputs, then again with new ones, in LiteRT and pytflite."""
    content, feeds = model.build()
    interpreters = [litert_interpreter(content), pytflite.Interpreter(model_content=content)]
    results = [run(interpreter, feeds) for interpreter in interpreters]
    for a, b in zip(*results):
        assert_matches(b, a)
    results = []
    for interpreter in interpreters:
        for detail, value in zip(interpreter.get_input_details(), second_feeds):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        results.append([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()])
    for a, b in zip(*results):
        assert_matches(b, a)


@pytest.mark.parametrize("op", [Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR], ids=lambda o: o.name)
def test_resize_run_time_size_changes(op):
    x = np.random.default_rng(2).standard_normal([1, 4, 5, 3]).astype(np.float32)
    model = resize_model(op, x, [7, 3], T.FLOAT32, half=True, constant=False)
    run_twice(model, [x, np.array([2, 9], np.int32)])


def test_batch_space_run_time_values_change():
    x = np.arange(8 * 3 * 2 * 1, dtype=np.float32).reshape(8, 3, 2, 1)
    model = batch_space_model(Op.BATCH_TO_SPACE_ND, x, T.FLOAT32, [2, 2], [0, 1, 1, 0], constant=False)
    run_twice(model, [x, np.array([4, 2], np.int32), np.array([[2, 1], [0, 3]], np.int32)])
    model = batch_space_model(Op.SPACE_TO_BATCH_ND, x, T.FLOAT32, [1, 2], [0, 1, 1, 1], constant=False)
    run_twice(model, [x, np.array([2, 3], np.int32), np.array([[1, 0], [0, 1]], np.int32)])


def test_batch_space_errors():
    x = np.zeros([4, 2, 2, 1], np.float32)
    prepare_error(
        batch_space_model(Op.BATCH_TO_SPACE_ND, x, T.FLOAT32, [3, 1], [0, 0, 0, 0]),
        r"input batch % prod\(block_shape\) 1 != 0",
    )
    prepare_error(
        batch_space_model(Op.BATCH_TO_SPACE_ND, x, T.FLOAT32, [2, 2], [0, -1, 0, 0]),
        "crops must not be negative",
    )
    prepare_error(
        batch_space_model(Op.SPACE_TO_BATCH_ND, x, T.FLOAT32, [3, 2], [0, 0, 0, 0]),
        r"padded height % block_shape\[0\] 2 != 0",
    )
    prepare_error(
        batch_space_model(Op.SPACE_TO_BATCH_ND, x, T.FLOAT32, [2], [0, 0]),
        "block_shape length 1 != 2",
    )
    prepare_error(
        batch_space_model(Op.SPACE_TO_BATCH_ND, x[0, 0], T.FLOAT32, [2], [0, 0]),
        "input rank must be at least 3, got 2",
    )
    model = batch_space_model(Op.SPACE_TO_BATCH_ND, x.astype(np.uint8), T.UINT8, [2, 2], [0, 0, 0, 0])
    model.output_quantization = [(0.5, 4)]
    prepare_error(model, "SPACE_TO_BATCH_ND input/output zero_point 3 != 4")


# --------------------------------------------------------------------------------------------------
# Quantized inputs


@settings(max_examples=120, deadline=None)
@given(
    op=st.sampled_from([Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR]),
    tensor_type=st.sampled_from([T.UINT8, T.INT8, T.INT16]),
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    channels=st.sampled_from([1, 3, 8, 16, 24]),
    scale=st.sampled_from(["2x", "8x", "any"]),
    out_any=st.tuples(st.integers(1, 29), st.integers(1, 29)),
    flag=flags,
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_quantized_resize(op, tensor_type, batch, size, channels, scale, out_any, flag, constant, seed):
    """The integer kernels (int8/int16: 10-bit fixed point; uint8: float corners, and LiteRT's NEON 8x
    kernel at 8x with half-pixel centers on depth % 8 == 0) on the stored integers, whatever the
    output's quantization (TFLite checks none), and BUILTIN_REF's variants."""
    rng = np.random.default_rng(seed)
    x = random_array(rng, tensor_type, [batch, *size, channels])
    out_size = {"2x": [2 * size[0], 2 * size[1]], "8x": [8 * size[0], 8 * size[1]], "any": list(out_any)}[
        scale
    ]
    zero_point = (
        0 if tensor_type == T.INT16 else int(rng.integers(0 if tensor_type == T.UINT8 else -128, 128))
    )
    model = SingleOpModel(
        op,
        [
            Operand(x, type=tensor_type, quantization=(float(rng.uniform(0.001, 1)), zero_point)),
            Operand(np.array(out_size, np.int32), constant=constant),
        ],
        [tensor_type],
        {"align_corners": flag[0], "half_pixel_centers": flag[1]},
        version=4,
        output_quantization=[
            (float(rng.uniform(0.001, 1)), 0 if tensor_type == T.INT16 else zero_point // 2)
        ],
    )
    model.check()
    check_ref(model)


@pytest.mark.parametrize("op", [Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR])
def test_quantized_corpus_layers(op):
    from tests.ops.test_shape import check_corpus_layer, corpus_layers

    layers = corpus_layers(op)
    for name, index in layers:
        check_corpus_layer(name, index)


_XQ = np.arange(-16, 16).reshape(2, 2, 2, 4)
_SPATIAL_MOVERS = {
    "DEPTH_TO_SPACE": (Op.DEPTH_TO_SPACE, [], {"block_size": 2}, 2),
    "SPACE_TO_DEPTH": (Op.SPACE_TO_DEPTH, [], {"block_size": 2}, 2),
    "SPACE_TO_BATCH_ND": (Op.SPACE_TO_BATCH_ND, [[2, 2], [[0, 0], [1, 1]]], None, 3),
    "BATCH_TO_SPACE_ND": (Op.BATCH_TO_SPACE_ND, [[2, 1], [[0, 1], [0, 0]]], None, 3),
    "RESIZE_NEAREST_NEIGHBOR": (Op.RESIZE_NEAREST_NEIGHBOR, [[3, 5]], None, 4),
    "RESIZE_BILINEAR": (Op.RESIZE_BILINEAR, [[3, 5]], None, 4),
}


@pytest.mark.parametrize("tensor_type", [T.INT8, T.UINT8, T.INT16], ids=lambda t: t.name)
@pytest.mark.parametrize("op", sorted(_SPATIAL_MOVERS))
def test_quantized_movers_accept_what_litert_accepts(op, tensor_type):
    """BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND need equal quantization (int16: zero points 0); the
    depth/space re-layouts and the resizes take any output quantization."""
    from tests.ops.test_shape import agrees_with_litert

    code, extra, options, version = _SPATIAL_MOVERS[op]
    x = _XQ.astype(DTYPE[tensor_type])
    base = {T.INT8: (0.5, 3), T.UINT8: (0.5, 130), T.INT16: (0.5, 0)}[tensor_type]
    variants = [(base, base), (base, (0.25, base[1])), (base, (0.5, base[1] + 1))]
    if tensor_type == T.INT16:
        variants.append(((0.5, 2), (0.5, 2)))
    for in_q, out_q in variants:
        inputs = [Operand(x, type=tensor_type, quantization=in_q)]
        inputs += [Operand(np.array(v, np.int32), constant=True) for v in extra]
        model = SingleOpModel(
            code, inputs, [tensor_type], options, version=version, output_quantization=[out_q]
        )
        agrees_with_litert(model)

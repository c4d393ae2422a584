"""MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL, ARG_MAX/ARG_MIN, CUMSUM, TOPK_V2 against LiteRT: axes
(negative, repeated, computed), keep_dims, types, ties and NaNs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite.core.quantization import AffineQuantization
from pytflite.core.types import tensor_type_for_dtype
from pytflite.fidelity.host import HostProfile
from pytflite.ops.reduce import quantized as reduce_quantized

# outputs declared [], empty dynamic results read safely
from tests.oracle import CORPUS, compare_with_litert, litert, requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

CASES = [
    (Op.MEAN, np.float32),
    (Op.MEAN, np.int32),
    (Op.MEAN, np.int64),
    (Op.SUM, np.float32),
    (Op.SUM, np.int32),
    (Op.SUM, np.int64),
    (Op.REDUCE_PROD, np.float32),
    (Op.REDUCE_PROD, np.int32),
    (Op.REDUCE_MAX, np.float32),
    (Op.REDUCE_MAX, np.int32),
    (Op.REDUCE_MIN, np.float32),
    (Op.REDUCE_MIN, np.int64),
    (Op.REDUCE_ANY, np.bool_),
    (Op.REDUCE_ALL, np.bool_),
]
VERSION = {(Op.MEAN, np.int64): 1, (Op.SUM, np.int64): 1}


@pytest.mark.parametrize(
    "shape, axes",
    [
        ((1, 16, 32), [2]),  # Eigen's column sums over the last axis
        ((5, 7, 13), [1, 2]),  # a trailing block of axes
        ((3, 1, 37), [-1]),
        ((6, 3, 1), [1, 2]),  # a reduced 1 at the end
        ((1, 53), [1]),  # no kept dimension but 1s: summed in order
        ((4, 9, 2), [1]),  # a kept axis after the reduced one: summed in order
        ((3, 5, 4, 2), [1, 2]),
        ((7, 6), [0]),
        ((2, 3, 4), [0, 2]),  # reduced axes apart: NumPy's reduction
    ],
)
@pytest.mark.parametrize("resolver", ["BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"])
def test_float_mean_sums_as_litert(shape, axes, resolver, kernels):
    """The compiled float MEAN sums as LiteRT's x86 build does (bit-exact): Eigen's column sums over
    trailing axes for its optimized kernel, else in order (from 0 for its reference kernel)."""
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    x = rng.standard_normal(shape) * rng.choice([1, 100, 1e4], shape[:1] + (1,) * (len(shape) - 1))
    model = SingleOpModel(
        Op.MEAN,
        [Operand(x.astype(np.float32)), Operand(np.array(axes, np.int32), constant=True)],
        [tensor_type_for_dtype(np.dtype(np.float32))],
        {"keep_dims": False},
    )
    # (bit-exact against LiteRT's x86 build: on ARM its packets' lanes may be summed in another order)
    exact = kernels == "compiled" and shape != (2, 3, 4) and HostProfile.detect().x86
    model.check(rtol=0 if exact else 1e-5, resolver=resolver)


@pytest.mark.parametrize(("op", "dtype"), CASES, ids=[f"{o.name}-{np.dtype(d).name}" for o, d in CASES])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_reduce(op, dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    if dtype == np.bool_:
        elements = st.booleans()
    elif dtype == np.float32:
        elements = st.floats(-4, 4, width=32)
    else:
        elements = st.integers(-3 if op == Op.REDUCE_PROD else -1000, 3 if op == Op.REDUCE_PROD else 1000)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
    keep_dims = data.draw(st.booleans())
    constant_axis = data.draw(st.booleans())
    SingleOpModel(
        op,
        [Operand(x), Operand(np.array(axes, np.int32), constant=constant_axis)],
        [tensor_type_for_dtype(np.dtype(dtype))],
        {"keep_dims": keep_dims},
    ).check()


def test_invalid_axis():
    model, _ = SingleOpModel(
        Op.MEAN,
        [Operand(np.zeros([2, 3], np.float32)), Operand(np.array([2], np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32],
        {"keep_dims": False},
    ).build()
    with pytest.raises(RuntimeError, match="Invalid axis index."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- quantized REDUCE_MAX / REDUCE_MIN ------------------------------------------------------------


@pytest.mark.parametrize("op", [Op.REDUCE_MAX, Op.REDUCE_MIN])
@pytest.mark.parametrize(("dtype", "zero_point"), [(np.int8, -5), (np.uint8, 128), (np.int16, 0)])
def test_reduce_max_min_quantized(op, dtype, zero_point):
    """The result is one of the inputs: quantized values pass through when input and output share
    their quantization."""
    quantization = AffineQuantization([0.125], [zero_point])
    info = np.iinfo(dtype)
    x = np.random.default_rng(1).integers(info.min, info.max, size=(3, 4, 5), endpoint=True).astype(dtype)
    for axes, keep_dims in (([1], False), ([0, -1], True)):
        SingleOpModel(
            op,
            [Operand(x, quantization=quantization), Operand(np.array(axes, np.int32), constant=True)],
            [tensor_type_for_dtype(np.dtype(dtype))],
            {"keep_dims": keep_dims},
            output_quantization=[quantization],
            version=2,
        ).check()


def test_reduce_max_requantization_refused():
    model, _ = SingleOpModel(
        Op.REDUCE_MAX,
        [
            Operand(np.zeros([2, 3], np.int8), quantization=AffineQuantization([0.5], [1])),
            Operand(np.array([1], np.int32), constant=True),
        ],
        [pytflite.TensorType.INT8],
        {"keep_dims": False},
        output_quantization=[AffineQuantization([0.25], [1])],
        version=2,
    ).build()
    with pytest.raises(RuntimeError, match="input scale 0.5 != output scale 0.25"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- quantized MEAN, SUM, REDUCE_PROD ----------------------------------------------------------------------
#
# Bit-exact against LiteRT's optimized kernels and, for MEAN and SUM (whose reference kernels differ),
# against BUILTIN_REF.

RESOLVERS = ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")
QUANTIZED = {
    np.int8: pytflite.TensorType.INT8,
    np.uint8: pytflite.TensorType.UINT8,
    np.int16: pytflite.TensorType.INT16,
}


def quantized_reduce(op, x, axes, qi, qo, keep_dims, constant_axis=True, resolvers=RESOLVERS, version=2):
    """Run a quantized reduction in both interpreters with each resolver; assert identical outputs.
    Returns LiteRT's output per resolver."""
    model, feeds = SingleOpModel(
        op,
        [Operand(x, quantization=qi), Operand(np.array(axes, np.int32), constant=constant_axis)],
        [QUANTIZED[x.dtype.type]],
        {"keep_dims": keep_dims},
        output_quantization=[qo],
        version=version,
    ).build()
    return {r: compare_with_litert(model, feeds, rtol=0, resolver=r)[0] for r in resolvers}


@st.composite
def quantized_reduction(draw, dtype, fast_path=False):
    """An input, axes, keep_dims and (scale, zero point) pairs for input and output."""
    if fast_path:  # 4-D over H and W with keep_dims: TFLite's optimized kernel for 8-bit inputs
        shape = (
            draw(st.integers(1, 2)),
            draw(st.integers(1, 6)),
            draw(st.integers(1, 6)),
            draw(st.integers(1, 40)),
        )
        axes, keep_dims = draw(st.sampled_from([[1, 2], [2, 1], [-2, 1]])), True
    else:
        shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=7))
        axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
        keep_dims = draw(st.booleans())
    info = np.iinfo(dtype)
    x = draw(hnp.arrays(dtype, shape, elements=st.integers(int(info.min), int(info.max))))
    if dtype == np.int16:
        scales = st.one_of(st.sampled_from([2.0**-10, 3 * 2.0**-12]), st.floats(2e-5, 2e-3))
        zero_points = st.just(0)
    else:
        scales = st.one_of(st.sampled_from([0.5, 0.25, 0.1, 0.0625]), st.floats(0.004, 0.3))
        zero_points = st.integers(int(info.min), int(info.max))
    qi = (draw(scales), draw(zero_points))
    # the output scale: equal to the input's, in a simple ratio, or anything
    qo = (qi[0] * draw(st.one_of(st.sampled_from([1.0, 0.5, 4.0]), st.floats(0.05, 20))), draw(zero_points))
    return x, axes, keep_dims, qi, qo


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_quantized_mean(dtype, data):
    fast_path = dtype != np.int16 and data.draw(st.booleans())
    x, axes, keep_dims, qi, qo = data.draw(quantized_reduction(dtype, fast_path))
    constant_axis = data.draw(st.booleans())
    quantized_reduce(Op.MEAN, x, axes, qi, qo, keep_dims, constant_axis)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("depth", [16, 20, 37])
def test_quantized_mean_fast_path_blocks_round_halves_up(dtype, depth):
    # input_scale / (H * W * output_scale) = 1/4: every other sum is a tie, which the SIMD blocks of 16
    # channels round up and the scalar remainder (and the reference kernel) away from zero; the raw
    # sums of uint8 inputs are never negative, so only int8 shows it
    info = np.iinfo(dtype)
    x = np.random.default_rng(depth).integers(info.min, info.max + 1, (2, 2, 2, depth)).astype(dtype)
    results = quantized_reduce(Op.MEAN, x, [1, 2], (0.5, 0 if dtype == np.int8 else 128), (0.5, 3), True)
    if dtype == np.int8:
        assert np.any(results["BUILTIN_WITHOUT_DEFAULT_DELEGATES"] != results["BUILTIN_REF"])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
@pytest.mark.parametrize(("axes", "keep_dims"), [([1, 2], True), ([1, 2, 3], False)])
def test_quantized_mean_of_sums_past_the_lookup_table(dtype, axes, keep_dims):
    # 17 * 17 (* 20) elements a sum: too many reachable sums to tabulate, so they are requantized at invoke
    shape = (2, 17, 17, 20)
    assert 255 * np.prod([shape[a] for a in axes]) >= reduce_quantized._LOOKUP_LIMIT
    info = np.iinfo(dtype)
    x = np.random.default_rng(7).integers(info.min, info.max + 1, shape).astype(dtype)
    quantized_reduce(Op.MEAN, x, axes, (0.07, 5), (0.03, -3 if dtype == np.int8 else 9), keep_dims)


# Shapes whose sums go by groups of rows (many pixels, few channels: reduce_quantized._row_groups), staged in int16
# or int32, through the table and the computed path, with a batch, with the reduced axes not the
# outermost, and with rows that do not halve evenly.
GROUPED = [
    ((1, 112, 112, 32), [1, 2]),
    ((2, 56, 56, 24), [1, 2]),
    ((1, 28, 28, 40), [2, 1]),
    ((3, 8, 8, 64), [1, 2]),
    ((1, 12, 34, 5), [1, 2]),
    ((1, 6, 10, 30), [1]),
    ((2, 3, 36, 8), [1, 2]),
]


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize(("shape", "axes"), GROUPED, ids=[f"{s}-{a}" for s, a in GROUPED])
def test_quantized_mean_summed_by_groups_of_rows(dtype, shape, axes):
    assert reduce_quantized._row_groups(shape, tuple(a % len(shape) for a in axes), 128) is not None
    info = np.iinfo(dtype)
    x = np.random.default_rng(len(shape) + shape[1]).integers(info.min, info.max + 1, shape).astype(dtype)
    zero_point = 0 if dtype == np.int16 else 7
    quantized_reduce(Op.MEAN, x, axes, (0.07, zero_point), (0.03, zero_point), True)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_quantized_sum(dtype, data):
    x, axes, keep_dims, qi, qo = data.draw(quantized_reduction(dtype))
    count = np.prod([x.shape[a] for a in set(a % x.ndim for a in axes)])
    qo = (qo[0] * data.draw(st.sampled_from([1.0, float(count)])), qo[1])  # sums need coarser outputs
    # BUILTIN_REF's SUM reads int16 input as uint8 bytes (a TFLite bug): only the optimized kernel then
    resolvers = RESOLVERS[:1] if dtype == np.int16 else RESOLVERS
    quantized_reduce(Op.SUM, x, axes, qi, qo, keep_dims, data.draw(st.booleans()), resolvers)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_quantized_reduce_prod(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=2))
    keep_dims = data.draw(st.booleans())
    zero_point = 0 if dtype == np.int16 else data.draw(st.integers(-3, 3))
    width = 300 if dtype == np.int16 else 5
    x = data.draw(hnp.arrays(dtype, shape, elements=st.integers(zero_point - width, zero_point + width)))
    count = int(np.prod([shape[a] for a in set(a % len(shape) for a in axes)]))
    scale = data.draw(st.floats(0.05, 0.5)) if dtype == np.int8 else data.draw(st.floats(1e-4, 1e-3))
    typical = (scale * width / 2) ** count  # about the magnitude of a product
    output_scale = typical / data.draw(st.sampled_from([10.0, 100.0, 1000.0]))
    if not 1e-30 < output_scale < 1e30:
        return
    quantized_reduce(
        Op.REDUCE_PROD, x, axes, (scale, zero_point), (output_scale, 0), keep_dims, data.draw(st.booleans())
    )


def test_quantized_reduce_prod_of_uint8_is_rejected():
    model, _ = SingleOpModel(
        Op.REDUCE_PROD,
        [
            Operand(np.ones([2, 3], np.uint8), quantization=(0.5, 0)),
            Operand(np.array([1], np.int32), constant=True),
        ],
        [pytflite.TensorType.UINT8],
        {"keep_dims": False},
        output_quantization=[(0.5, 0)],
    ).build()
    with pytest.raises(RuntimeError, match="Unsupported quantized data type: UINT8"):
        pytflite.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
def test_unquantized_8_and_16_bit_reduce_prod_wraps(dtype):
    x = np.array([[5, 7, 3], [100, 2, 2]], dtype)
    if dtype != np.uint8:
        x[:, 1] *= -1
    for axes in ([1], [0, 1]):
        SingleOpModel(
            Op.REDUCE_PROD,
            [Operand(x), Operand(np.array(axes, np.int32), constant=True)],
            [QUANTIZED[dtype]],
            {"keep_dims": False},
        ).check()


def test_reference_sum_of_int16_is_refused():
    model, _ = SingleOpModel(
        Op.SUM,
        [
            Operand(np.ones([2, 3], np.int16), quantization=(0.5, 0)),
            Operand(np.array([1], np.int32), constant=True),
        ],
        [pytflite.TensorType.INT16],
        {"keep_dims": False},
        output_quantization=[(0.5, 0)],
    ).build()
    interpreter = pytflite.Interpreter(
        model_content=model, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
    )
    with pytest.raises(RuntimeError, match="reads int16 input as uint8 bytes"):
        interpreter.allocate_tensors()


@pytest.mark.parametrize("op", [Op.ARG_MAX, Op.ARG_MIN])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_arg_min_max_of_quantized_inputs_compare_raw_values(op, dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max + 1, (4, 37)).astype(dtype)
    zero_point = -3 if dtype == np.int8 else 130
    for axis in (0, 1):
        SingleOpModel(
            op,
            [Operand(x, quantization=(0.07, zero_point)), Operand(np.array([axis], np.int32), constant=True)],
            [pytflite.TensorType.INT32],
            {"output_type": "INT32"},
            version=2,
        ).check()


CORPUS_LAYERS = ["mobilenet_v2_int8", "small_cnn_int8", "small_cnn_int16x8"]


@pytest.mark.parametrize("name", CORPUS_LAYERS)
def test_corpus_mean_and_add_layers(name):
    """Each MEAN and ADD layer of the quantized corpus models, rebuilt as a one-op model with the layer's
    shapes, options and quantization and fed random inputs."""
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    interpreter = pytflite.Interpreter(model_path=str(path))
    details = {d["index"]: d for d in interpreter.get_tensor_details()}
    rng = np.random.default_rng(0)
    layers = [op for op in interpreter._get_ops_details() if op["op_name"] in ("MEAN", "ADD")]
    assert {op["op_name"] for op in layers} == {"MEAN", "ADD"}
    for op in layers:
        node, registration = interpreter.subgraphs[0].nodes[op["index"]]
        operands = []
        for position, index in enumerate(op["inputs"]):
            detail = details[index]
            if op["op_name"] == "MEAN" and position == 1:  # the axes
                operands.append(Operand(interpreter.get_tensor(index), constant=True))
                continue
            info = np.iinfo(detail["dtype"])
            value = rng.integers(info.min, info.max + 1, detail["shape"]).astype(detail["dtype"])
            operands.append(Operand(value, quantization=detail["quantization"]))
        out = details[op["outputs"][0]]
        model, feeds = SingleOpModel(
            getattr(Op, op["op_name"]),
            operands,
            [QUANTIZED[out["dtype"]]],
            node.builtin_data,
            version=registration.version,
            output_quantization=[out["quantization"]],
        ).build()
        for resolver in RESOLVERS:
            compare_with_litert(model, feeds, rtol=0, resolver=resolver)


# --- ARG_MAX / ARG_MIN ----------------------------------------------------------------------------


def _arg_elements(dtype, data):
    if dtype == np.bool_:
        return st.booleans()
    if dtype == np.float32:  # few distinct values: ties; sometimes NaN and infinities
        return st.sampled_from(
            [-1.5, 0.0, -0.0, 2.0, 2.0, np.inf, -np.inf, np.nan]
            if data.draw(st.booleans())
            else [-1.5, 0.0, 2.0, 3.25]
        )
    info = np.iinfo(dtype)
    return st.integers(max(info.min, -3), min(info.max, 3)) | st.sampled_from([int(info.min), int(info.max)])


@pytest.mark.parametrize("op", [Op.ARG_MAX, Op.ARG_MIN])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint8, np.bool_])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_arg_min_max(op, dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    x = data.draw(hnp.arrays(dtype, shape, elements=_arg_elements(dtype, data)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    axis_dtype = data.draw(st.sampled_from([np.int32, np.int64]))
    index_type = data.draw(st.sampled_from([pytflite.TensorType.INT32, pytflite.TensorType.INT64]))
    SingleOpModel(
        op,
        [Operand(x), Operand(np.array([axis], axis_dtype), constant=data.draw(st.booleans()))],
        [index_type],
        {"output_type": index_type},
        version=2,
    ).check()


def test_arg_max_nan_rows():
    """TFLite skips NaNs, except that along the innermost axis a NaN first element is kept."""
    x = np.array(
        [[1, np.nan, 3, 3], [np.nan] * 4, [np.nan, -np.inf, -np.inf, 2], [0.0, -0.0, np.nan, 1]], np.float32
    )
    for op in (Op.ARG_MAX, Op.ARG_MIN):
        for axis in (0, 1):
            SingleOpModel(
                op,
                [Operand(x), Operand(np.array([axis], np.int32), constant=True)],
                [pytflite.TensorType.INT32],
                {"output_type": pytflite.TensorType.INT32},
            ).check()


def test_arg_max_invalid():
    x = np.zeros([2, 3], np.float32)
    model, _ = SingleOpModel(
        Op.ARG_MAX,
        [Operand(x), Operand(np.array([0], np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32],
        {"output_type": pytflite.TensorType.FLOAT32},
    ).build()
    with pytest.raises(RuntimeError, match="Unknown index output data type: 0"):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    model, _ = SingleOpModel(
        Op.ARG_MIN,
        [Operand(x), Operand(np.array([2], np.int32), constant=True)],
        [pytflite.TensorType.INT64],
        {"output_type": pytflite.TensorType.INT64},
    ).build()
    with pytest.raises(RuntimeError, match="Invalid axis value."):
        pytflite.Interpreter(model_content=model).allocate_tensors()
    # An empty reduced axis has no answer (checked on pytflite alone: LiteRT's message differs by build).
    model, _ = SingleOpModel(
        Op.ARG_MAX,
        [Operand(np.zeros([2, 0], np.float32)), Operand(np.array([1], np.int32), constant=True)],
        [pytflite.TensorType.INT32],
        {"output_type": pytflite.TensorType.INT32},
    ).build()
    with pytest.raises(RuntimeError, match="Cannot compute ArgMin/ArgMax over an empty axis."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


# --- CUMSUM ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_cumsum(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    elements = st.floats(-4, 4, width=32) if dtype == np.float32 else st.integers(-1000, 1000)
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    SingleOpModel(
        Op.CUMSUM,
        [Operand(x), Operand(np.array(axis, np.int32), constant=data.draw(st.booleans()))],
        [tensor_type_for_dtype(np.dtype(dtype))],
        {"exclusive": data.draw(st.booleans()), "reverse": data.draw(st.booleans())},
    ).check()


@pytest.mark.parametrize("length", [1, 2, 3])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize(("exclusive", "reverse"), [(False, True), (True, False), (True, True)])
def test_cumsum_exclusive_and_reverse_of_short_axes(length, axis, exclusive, reverse):
    shape = [length, 4] if axis == 0 else [4, length]
    x = np.random.default_rng(length).standard_normal(shape).astype(np.float32)
    SingleOpModel(
        Op.CUMSUM,
        [Operand(x), Operand(np.array(axis, np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32],
        {"exclusive": exclusive, "reverse": reverse},
    ).check()


def test_cumsum_int32_wraps():
    x = np.array([2**31 - 1, 1, 5], np.int32)
    SingleOpModel(
        Op.CUMSUM,
        [Operand(x), Operand(np.array(0, np.int32), constant=True)],
        [pytflite.TensorType.INT32],
        {"exclusive": False, "reverse": False},
    ).check()


# --- TOPK_V2 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_topk(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=8))
    if dtype == np.float32:
        elements = st.sampled_from([-2.0, 0.0, -0.0, 1.5, 1.5, 7.0, np.nan, -np.inf])
    else:
        info = np.iinfo(dtype)
        elements = st.integers(max(info.min, -4), min(info.max, 4)) | st.sampled_from(
            [int(info.min), int(info.max)]
        )
    x = data.draw(hnp.arrays(dtype, shape, elements=elements))
    k = data.draw(st.integers(0, shape[-1]))
    k_dtype = data.draw(st.sampled_from([np.int32, np.int16]))
    SingleOpModel(
        Op.TOPK_V2,
        [Operand(x), Operand(np.array(k, k_dtype), constant=data.draw(st.booleans()))],
        [tensor_type_for_dtype(np.dtype(dtype)), pytflite.TensorType.INT32],
        version=2,
    ).check()


def test_topk_k_too_large():
    model, _ = SingleOpModel(
        Op.TOPK_V2,
        [Operand(np.zeros([2, 3], np.float32)), Operand(np.array(4, np.int32), constant=True)],
        [pytflite.TensorType.FLOAT32, pytflite.TensorType.INT32],
    ).build()
    with pytest.raises(RuntimeError, match="TopK k is higher than the internal dimension."):
        pytflite.Interpreter(model_content=model).allocate_tensors()


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int32])
@pytest.mark.parametrize("length", [4, 16, 17, 37])
def test_arg_min_max_long_rows(dtype, length):
    """Rows long enough for TFLite's blocked row kernels, with repeated extremes (and NaNs for floats)."""
    rng = np.random.default_rng(length)
    if dtype == np.float32:
        pool = np.array([np.nan, -1.0, 0.0, 2.5, 2.5, -np.inf, np.inf, 7.0], np.float32)
        x = rng.choice(pool, size=(5, length))
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, size=(5, length), endpoint=True).astype(dtype)
        x[:, length // 2 :: 5] = info.max
        x[:, length // 3 :: 7] = info.min
    for op in (Op.ARG_MAX, Op.ARG_MIN):
        for axis in (-1, 0):
            SingleOpModel(
                op,
                [Operand(x), Operand(np.array([axis], np.int32), constant=True)],
                [pytflite.TensorType.INT64],
                {"output_type": pytflite.TensorType.INT64},
            ).check()


def test_topk_int16_indices():
    x = np.random.default_rng(3).integers(-5, 5, size=(3, 50)).astype(np.float32)
    SingleOpModel(
        Op.TOPK_V2,
        [Operand(x), Operand(np.array(7, np.int32))],
        [pytflite.TensorType.FLOAT32, pytflite.TensorType.INT16],
        version=3,
    ).check()

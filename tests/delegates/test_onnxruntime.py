"""OnnxRuntimeDelegate: the translator op by op (one-op ModelBuilder models, ONNX Runtime against the
NumPy kernels), partition limits, the shape-keyed session cache, device buffer handles, the quantized
opt-in, and the public corpus when it is present."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.delegates.onnxruntime import OnnxRuntimeDelegate
from pytflite.model.builder import ModelBuilder
from tests.oracle import CORPUS, assert_matches, run
from tests.single_op import Operand, SingleOpModel

RNG = np.random.default_rng(7)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def const(value):
    return Operand(np.asarray(value), constant=True)


def ints(*values):
    return const(np.array(values, np.int32))


X4 = randn(1, 6, 7, 5)
W_CONV = randn(4, 3, 3, 5, scale=0.3)
X_RGB = randn(1, 9, 8, 3)
W_RGB = randn(4, 3, 3, 3, scale=0.3)


def _build_with_shapes(model: SingleOpModel) -> tuple[bytes, list[np.ndarray], list[np.ndarray]]:
    """The model with its output shapes filled in (as a converter writes them) and the NumPy
    kernels' outputs."""
    built, feeds = model.build()
    reference = run(pytflite.Interpreter(model_content=built), feeds)
    model.output_shapes = [r.shape for r in reference]
    built, feeds = model.build()
    return built, feeds, reference


def delegated(model: SingleOpModel, rtol: float = 1e-5, **kwargs) -> list[np.ndarray]:
    """Run with the delegate; assert the node was delegated and the outputs match the NumPy kernels."""
    built, feeds, reference = _build_with_shapes(model)
    interpreter = pytflite.Interpreter(
        model_content=built, experimental_delegates=[OnnxRuntimeDelegate(**kwargs)]
    )
    ours = run(interpreter, feeds)
    assert [p.nodes for p in interpreter.delegate_partitions()] == [(0,)]
    for i, (a, b) in enumerate(zip(ours, reference)):
        assert_matches(a, b, rtol, what=f"output {i}")
    return ours


def not_delegated(model: SingleOpModel, **kwargs) -> None:
    built, feeds, reference = _build_with_shapes(model)
    interpreter = pytflite.Interpreter(
        model_content=built, experimental_delegates=[OnnxRuntimeDelegate(**kwargs)]
    )
    ours = run(interpreter, feeds)
    assert interpreter.delegate_partitions() == []
    for a, b in zip(ours, reference):
        assert_matches(a, b)


CONV = {"padding": 0, "stride_w": 1, "stride_h": 1, "fused_activation_function": 0}
POOL = {"padding": 0, "stride_w": 2, "stride_h": 2, "filter_width": 3, "filter_height": 2}

CASES = {
    # convolutions and pooling: SAME/VALID, strides, dilations, groups, fused activations
    "conv_same_relu6": (
        Op.CONV_2D,
        [Operand(X4), const(W_CONV), const(randn(4))],
        {**CONV, "fused_activation_function": 3},
    ),
    "conv_valid_stride2": (
        Op.CONV_2D,
        [Operand(X4), const(W_CONV), const(randn(4))],
        {**CONV, "padding": 1, "stride_w": 2, "stride_h": 2},
    ),
    "conv_dilated": (
        Op.CONV_2D,
        [Operand(X4), const(W_CONV), const(randn(4))],
        {**CONV, "dilation_w_factor": 2, "dilation_h_factor": 2},
    ),
    "conv_stride2_same_even": (
        Op.CONV_2D,
        [Operand(randn(1, 8, 8, 5)), const(W_CONV), const(randn(4))],
        {**CONV, "stride_w": 2, "stride_h": 2},
    ),
    # a 3-channel input: a one-channel convolution over the flattened rows (no transposition)
    "conv_rgb_stride2_same": (
        Op.CONV_2D,
        [Operand(X_RGB), const(W_RGB), const(randn(4))],
        {**CONV, "stride_w": 2, "stride_h": 2, "fused_activation_function": 3},
    ),
    "conv_rgb_valid_dilated_h": (
        Op.CONV_2D,
        [Operand(X_RGB), const(W_RGB), const(randn(4))],
        {**CONV, "padding": 1, "stride_w": 3, "dilation_h_factor": 2},
    ),
    "conv_rgb_dilated_w": (
        Op.CONV_2D,
        [Operand(X_RGB), const(W_RGB), const(randn(4))],
        {**CONV, "dilation_w_factor": 2},
    ),
    "depthwise_multiplier2": (
        Op.DEPTHWISE_CONV_2D,
        [Operand(X4), const(randn(1, 3, 3, 10)), const(randn(10))],
        {**CONV, "depth_multiplier": 2, "fused_activation_function": 1},
    ),
    "depthwise_valid_stride2": (
        Op.DEPTHWISE_CONV_2D,
        [Operand(X4), const(randn(1, 3, 3, 5)), const(randn(5))],
        {**CONV, "padding": 1, "stride_w": 2, "stride_h": 2, "depth_multiplier": 1},
    ),
    "transpose_conv_same": (
        Op.TRANSPOSE_CONV,
        [ints(1, 12, 14, 4), const(randn(4, 3, 3, 5)), Operand(X4), const(randn(4))],
        {"padding": 0, "stride_w": 2, "stride_h": 2},
    ),
    "transpose_conv_valid": (
        Op.TRANSPOSE_CONV,
        [ints(1, 13, 15, 4), const(randn(4, 3, 3, 5)), Operand(X4)],
        {"padding": 1, "stride_w": 2, "stride_h": 2},
    ),
    "conv_3d": (
        Op.CONV_3D,
        [Operand(randn(1, 4, 5, 5, 3)), const(randn(2, 3, 3, 3, 4)), const(randn(4))],
        {"padding": 0, "stride_d": 1, "stride_w": 1, "stride_h": 1},
    ),
    "average_pool_same": (Op.AVERAGE_POOL_2D, [Operand(X4)], POOL),
    "max_pool_valid_relu": (
        Op.MAX_POOL_2D,
        [Operand(X4)],
        {**POOL, "padding": 1, "fused_activation_function": 1},
    ),
    "fully_connected": (
        Op.FULLY_CONNECTED,
        [Operand(randn(3, 10)), const(randn(6, 10)), const(randn(6))],
        {"fused_activation_function": 1},
    ),
    "fully_connected_flattens": (
        Op.FULLY_CONNECTED,
        [Operand(randn(2, 3, 10)), const(randn(6, 10)), None],
        {},
    ),
    "fully_connected_keep_dims": (
        Op.FULLY_CONNECTED,
        [Operand(randn(2, 3, 10)), const(randn(6, 10)), None],
        {"keep_num_dims": True},
    ),
    "batch_matmul_adjoint": (
        Op.BATCH_MATMUL,
        [Operand(randn(2, 3, 4)), Operand(randn(2, 5, 4))],
        {"adj_y": True},
    ),
    "batch_matmul_broadcast": (Op.BATCH_MATMUL, [Operand(randn(2, 3, 4)), const(randn(4, 5))], {}),
    # elementwise, broadcasting and fused activations
    "add_broadcast_relu": (Op.ADD, [Operand(X4), const(randn(5))], {"fused_activation_function": 1}),
    "sub": (Op.SUB, [Operand(randn(2, 3)), Operand(randn(3))], {}),
    "mul_relu_n1_to_1": (Op.MUL, [Operand(X4), Operand(X4)], {"fused_activation_function": 2}),
    "div": (Op.DIV, [Operand(randn(4, 3)), const(randn(4, 1) + 3)], {}),
    "maximum": (Op.MAXIMUM, [Operand(randn(4, 3)), Operand(randn(4, 3))], {}),
    "minimum_int32": (Op.MINIMUM, [Operand(np.arange(-6, 6, dtype=np.int32)), const(np.int32(2))], {}),
    "pow": (Op.POW, [Operand(np.abs(randn(5)) + 0.5), const(np.float32(1.5))], {}),
    "squared_difference": (Op.SQUARED_DIFFERENCE, [Operand(randn(3, 4)), Operand(randn(4))], {}),
    "floor_div": (
        Op.FLOOR_DIV,
        [Operand(randn(8) * 5), const(np.array([2, -2, 3, -3, 1.5, -1.5, 4, -4], np.float32))],
        {},
    ),
    "floor_mod": (
        Op.FLOOR_MOD,
        [Operand(randn(8) * 5), const(np.array([2, -2, 3, -3, 1.5, -1.5, 4, -4], np.float32))],
        {},
    ),
    "floor_mod_int32": (Op.FLOOR_MOD, [Operand(np.arange(-5, 5, dtype=np.int32)), const(np.int32(-3))], {}),
    "less": (Op.LESS, [Operand(randn(6)), Operand(randn(6))], {}),
    "not_equal_int32": (Op.NOT_EQUAL, [Operand(np.arange(6, dtype=np.int32)), const(np.int32(3))], {}),
    "logical_and": (
        Op.LOGICAL_AND,
        [Operand(np.array([1, 0, 1, 0], bool)), Operand(np.array([1, 1, 0, 0], bool))],
        {},
    ),
    "select_v2": (
        Op.SELECT_V2,
        [Operand(np.array([True, False, True])), Operand(randn(2, 3)), Operand(randn(2, 3))],
        {},
    ),
    "select_v1_rows": (
        Op.SELECT,
        [Operand(np.array([True, False])), Operand(randn(2, 3)), Operand(randn(2, 3))],
        {},
    ),
    # unary and activations
    **{
        f"unary_{op.name.lower()}": (op, [Operand(randn(3, 5) * 2)], None)
        for op in (
            Op.ABS,
            Op.NEG,
            Op.EXP,
            Op.SIN,
            Op.COS,
            Op.TANH,
            Op.LOGISTIC,
            Op.FLOOR,
            Op.CEIL,
            Op.ROUND,
            Op.SIGN,
            Op.RELU,
            Op.RELU6,
            Op.RELU_N1_TO_1,
            Op.HARD_SWISH,
            Op.ELU,
            Op.SQUARE,
        )
    },
    "sqrt": (Op.SQRT, [Operand(np.abs(randn(7)) + 0.1)], None),
    "rsqrt": (Op.RSQRT, [Operand(np.abs(randn(7)) + 0.1)], None),
    "log": (Op.LOG, [Operand(np.abs(randn(7)) + 0.1)], None),
    "leaky_relu": (Op.LEAKY_RELU, [Operand(randn(3, 5))], {"alpha": 0.2}),
    "gelu": (Op.GELU, [Operand(randn(3, 5))], {"approximate": False}),
    "gelu_tanh": (Op.GELU, [Operand(randn(3, 5))], {"approximate": True}),
    "prelu_per_channel": (Op.PRELU, [Operand(X4), const(randn(1, 1, 5))], None),
    "softmax_beta": (Op.SOFTMAX, [Operand(randn(2, 7))], {"beta": 0.5}),
    "log_softmax": (Op.LOG_SOFTMAX, [Operand(randn(2, 7))], None),
    "l2_normalization": (Op.L2_NORMALIZATION, [Operand(randn(2, 7))], {}),
    "local_response_normalization": (
        Op.LOCAL_RESPONSE_NORMALIZATION,
        [Operand(X4)],
        {"radius": 2, "bias": 1.0, "alpha": 0.3, "beta": 0.75},
    ),
    "cast_int_to_float": (Op.CAST, [Operand(np.arange(-3, 3, dtype=np.int32))], {}),
    # reductions
    "mean_spatial": (Op.MEAN, [Operand(X4), ints(1, 2)], {"keep_dims": False}),
    "mean_keep_dims": (Op.MEAN, [Operand(X4), ints(1, 2)], {"keep_dims": True}),
    "sum_channels": (Op.SUM, [Operand(X4), ints(-1)], {"keep_dims": False}),
    "reduce_max": (Op.REDUCE_MAX, [Operand(randn(3, 4)), ints(0)], {"keep_dims": False}),
    "reduce_prod": (Op.REDUCE_PROD, [Operand(randn(3, 4)), ints(1)], {"keep_dims": True}),
    "reduce_any": (Op.REDUCE_ANY, [Operand(np.array([[1, 0], [0, 0]], bool)), ints(1)], {"keep_dims": False}),
    "arg_max": (Op.ARG_MAX, [Operand(randn(3, 4)), ints(1)], {"output_type": T.INT32}),
    "cumsum_reverse": (Op.CUMSUM, [Operand(randn(3, 4)), ints(1)], {"exclusive": True, "reverse": True}),
    # data movement
    "reshape": (Op.RESHAPE, [Operand(X4), ints(6, 35)], None),
    "squeeze": (Op.SQUEEZE, [Operand(randn(1, 3, 1, 2))], {"squeeze_dims": [0, 2]}),
    "expand_dims": (Op.EXPAND_DIMS, [Operand(randn(3, 2)), ints(1)], None),
    "transpose": (Op.TRANSPOSE, [Operand(X4), ints(0, 2, 3, 1)], None),
    "concatenation": (Op.CONCATENATION, [Operand(randn(2, 3)), const(randn(2, 2))], {"axis": -1}),
    "pad": (Op.PAD, [Operand(X4), const(np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32))], None),
    "padv2": (
        Op.PADV2,
        [Operand(randn(2, 3)), const(np.array([[1, 0], [0, 2]], np.int32)), const(np.float32(-7))],
        None,
    ),
    "mirror_pad_reflect": (
        Op.MIRROR_PAD,
        [Operand(randn(4, 5)), const(np.array([[1, 2], [2, 1]], np.int32))],
        {"mode": 0},
    ),
    "tile": (Op.TILE, [Operand(randn(2, 3)), ints(2, 3)], None),
    "broadcast_to": (Op.BROADCAST_TO, [Operand(randn(3, 1)), ints(2, 3, 4)], None),
    "slice": (Op.SLICE, [Operand(randn(4, 5)), ints(1, 2), ints(2, -1)], None),
    "strided_slice_masks": (
        Op.STRIDED_SLICE,
        [Operand(randn(5, 6, 4)), ints(1, -1, 0), ints(4, 0, 3), ints(2, -2, 1)],
        {"begin_mask": 4, "end_mask": 2, "shrink_axis_mask": 4},
    ),
    "reverse_v2": (Op.REVERSE_V2, [Operand(randn(3, 4)), ints(1)], None),
    "gather": (Op.GATHER, [Operand(randn(5, 3)), const(np.array([4, 0, 2], np.int32))], {"axis": 0}),
    "gather_nd": (Op.GATHER_ND, [Operand(randn(4, 3)), const(np.array([[1, 2], [3, 0]], np.int32))], None),
    "scatter_nd_duplicates": (
        Op.SCATTER_ND,
        [const(np.array([[1], [3], [1]], np.int32)), Operand(randn(3, 2)), ints(5, 2)],
        None,
    ),
    "depth_to_space": (Op.DEPTH_TO_SPACE, [Operand(randn(1, 2, 3, 8))], {"block_size": 2}),
    "space_to_depth": (Op.SPACE_TO_DEPTH, [Operand(randn(1, 4, 6, 3))], {"block_size": 2}),
    "resize_bilinear_half_pixel": (
        Op.RESIZE_BILINEAR,
        [Operand(X4), ints(9, 11)],
        {"half_pixel_centers": True},
    ),
    "resize_bilinear_align_corners": (
        Op.RESIZE_BILINEAR,
        [Operand(X4), ints(9, 11)],
        {"align_corners": True},
    ),
    "resize_bilinear_legacy": (Op.RESIZE_BILINEAR, [Operand(X4), ints(9, 11)], {}),
    "resize_nearest_half_pixel": (
        Op.RESIZE_NEAREST_NEIGHBOR,
        [Operand(X4), ints(13, 5)],
        {"half_pixel_centers": True},
    ),
    "resize_nearest_align_corners": (
        Op.RESIZE_NEAREST_NEIGHBOR,
        [Operand(X4), ints(13, 5)],
        {"align_corners": True},
    ),
    "resize_nearest_legacy": (Op.RESIZE_NEAREST_NEIGHBOR, [Operand(X4), ints(13, 5)], {}),
    "dequantize_float16_constant": (Op.DEQUANTIZE, [const(randn(3, 4).astype(np.float16))], None),
}
_OUTPUT_TYPES = {
    "less": [T.BOOL],
    "not_equal_int32": [T.BOOL],
    "logical_and": [T.BOOL],
    "reduce_any": [T.BOOL],
    "arg_max": [T.INT32],
    "minimum_int32": [T.INT32],
    "floor_mod_int32": [T.INT32],
}
_VERSIONS = {
    "broadcast_to": 2,
    "transpose_conv_same": 4,
    "transpose_conv_valid": 3,
    "resize_nearest_half_pixel": 3,
    "resize_bilinear_half_pixel": 3,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_single_op_matches_the_numpy_kernels(case):
    op, inputs, options = CASES[case]
    if case == "dequantize_float16_constant":  # a lone constant DEQUANTIZE is folded; feed it into an ADD
        builder = ModelBuilder()
        w = builder.add_tensor("w", T.FLOAT16, [3, 4], data=inputs[0].value)
        x = builder.add_input("x", T.FLOAT32, [3, 4])
        d = builder.add_tensor("d", T.FLOAT32, [3, 4])
        y = builder.add_tensor("y", T.FLOAT32, [3, 4])
        builder.add_operator(Op.DEQUANTIZE, [w], [d])
        builder.add_operator(Op.ADD, [x, d], [y])
        builder.add_output(y)
        model = builder.build()
        feeds = [randn(3, 4)]
        reference = run(pytflite.Interpreter(model_content=model), feeds)
        interpreter = pytflite.Interpreter(
            model_content=model, experimental_delegates=[OnnxRuntimeDelegate()]
        )
        assert_matches(run(interpreter, feeds)[0], reference[0])
        assert interpreter.subgraphs[0].delegation.is_fully_delegated
        return
    types = _OUTPUT_TYPES.get(case, [T.FLOAT32])
    delegated(SingleOpModel(op, inputs, types, options, version=_VERSIONS.get(case, 1)))


def test_split_and_unpack_and_pack():
    x = randn(2, 6, 3)
    delegated(SingleOpModel(Op.SPLIT, [ints(1), Operand(x)], [T.FLOAT32] * 3, {"num_splits": 3}))
    delegated(
        SingleOpModel(Op.SPLIT_V, [Operand(x), ints(1, 5), ints(1)], [T.FLOAT32] * 2, {"num_splits": 2})
    )
    delegated(SingleOpModel(Op.UNPACK, [Operand(x)], [T.FLOAT32] * 2, {"num": 2, "axis": 0}))
    delegated(
        SingleOpModel(
            Op.PACK, [Operand(randn(2, 3)), Operand(randn(2, 3))], [T.FLOAT32], {"values_count": 2, "axis": 1}
        )
    )


def test_shape_becomes_a_constant():
    delegated(SingleOpModel(Op.SHAPE, [Operand(X4)], [T.INT32], {"out_type": T.INT32}))


def test_a_reshape_to_a_shape_computed_from_shapes_joins_the_partition():
    """Keras's squeeze-and-excitation block: MEAN over the pixels, then RESHAPE to a shape computed as
    CONCATENATION(STRIDED_SLICE(SHAPE(x)), [1, 1, C]), then MUL. The shape is no constant when the
    delegate is applied, but follows from shapes alone (prepare folds it), so every node is one
    partition (EfficientNetB0: 17 partitions around 16 RESHAPEs before)."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, 4, 4, 8])
    axes = builder.add_constant("axes", np.array([1, 2], np.int32))
    pooled = builder.add_tensor("pooled", T.FLOAT32, [1, 8])
    builder.add_operator(Op.MEAN, [x, axes], [pooled], {"keep_dims": False})
    shape = builder.add_tensor("shape", T.INT32, [4])
    builder.add_operator(Op.SHAPE, [x], [shape], {"out_type": T.INT32})
    begin, end, strides = (
        builder.add_constant(n, np.array([v], np.int32)) for n, v in (("b", 0), ("e", 1), ("s", 1))
    )
    batch = builder.add_tensor("batch", T.INT32, [1])
    builder.add_operator(Op.STRIDED_SLICE, [shape, begin, end, strides], [batch], {})
    rest = builder.add_constant("rest", np.array([1, 1, 8], np.int32))
    target = builder.add_tensor("target", T.INT32, [4])
    builder.add_operator(Op.CONCATENATION, [batch, rest], [target], {"axis": 0})
    scale = builder.add_tensor("scale", T.FLOAT32, [1, 1, 1, 8])
    builder.add_operator(Op.RESHAPE, [pooled, target], [scale])
    out = builder.add_tensor("out", T.FLOAT32, [1, 4, 4, 8])
    builder.add_operator(Op.MUL, [x, scale], [out], {"fused_activation_function": 0})
    builder.add_output(out)
    model = builder.build()
    value = randn(1, 4, 4, 8)
    interpreter = pytflite.Interpreter(model_content=model, experimental_delegates=[OnnxRuntimeDelegate()])
    (ours,) = run(interpreter, [value])
    assert [len(p.nodes) for p in interpreter.delegate_partitions()] == [6]
    (reference,) = run(pytflite.Interpreter(model_content=model), [value])
    assert_matches(ours, reference)


@pytest.mark.parametrize(
    "model",
    [
        SingleOpModel(
            Op.MIRROR_PAD,
            [Operand(randn(4, 5)), const(np.array([[1, 1], [1, 1]], np.int32))],
            [T.FLOAT32],
            {"mode": 1},
        ),
        SingleOpModel(
            Op.ADD, [Operand(randn(3)), Operand(randn(3))], [T.FLOAT32], {"fused_activation_function": 5}
        ),
        SingleOpModel(Op.RESHAPE, [Operand(randn(2, 3)), Operand(np.array([3, 2], np.int32))], [T.FLOAT32]),
        SingleOpModel(Op.CAST, [Operand(randn(4) * 1e10)], [T.INT32]),
    ],
    ids=["mirror-pad-symmetric", "sign-bit-activation", "runtime-reshape-shape", "float-to-int-cast"],
)
def test_unsupported_nodes_stay_on_the_numpy_kernels(model):
    not_delegated(model)


def test_hybrid_fully_connected_stays_on_the_cpu():
    w = AffineQuantization([0.02], [0])
    weights = Operand(
        RNG.integers(-127, 127, (4, 6)).astype(np.int8), constant=True, type=T.INT8, quantization=w
    )
    not_delegated(SingleOpModel(Op.FULLY_CONNECTED, [Operand(randn(2, 6)), weights], [T.FLOAT32], {}))


# --- a CNN built with ModelBuilder: one layout switch, residual adds, partitions --------------------------


def _barrier_model() -> bytes:
    """x -> CONV -> ADD -> MIRROR_PAD(SYMMETRIC, on the CPU) -> CONV -> TANH -> y."""
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 8, 8, 4])
    w1 = b.add_constant("w1", randn(4, 3, 3, 4, scale=0.3))
    w2 = b.add_constant("w2", randn(4, 3, 3, 4, scale=0.3))
    shapes = {
        "c1": [1, 8, 8, 4],
        "a": [1, 8, 8, 4],
        "p": [1, 10, 10, 4],
        "c2": [1, 10, 10, 4],
        "y": [1, 10, 10, 4],
    }
    t = {name: b.add_tensor(name, T.FLOAT32, shape) for name, shape in shapes.items()}
    bias = b.add_constant("bias", randn(4))
    b.add_operator(Op.CONV_2D, [x, w1, bias], [t["c1"]], CONV)
    b.add_operator(Op.ADD, [t["c1"], x], [t["a"]], {"fused_activation_function": 1})
    pads = b.add_constant("pads", np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))
    b.add_operator(Op.MIRROR_PAD, [t["a"], pads], [t["p"]], {"mode": 1})
    b.add_operator(Op.CONV_2D, [t["p"], w2, bias], [t["c2"]], CONV)
    b.add_operator(Op.TANH, [t["c2"]], [t["y"]])
    b.add_output(t["y"])
    return b.build()


def _run_barrier(**kwargs):
    model = _barrier_model()
    feeds = [randn(1, 8, 8, 4)]
    reference = run(pytflite.Interpreter(model_content=model), feeds)
    delegate = OnnxRuntimeDelegate(**kwargs)
    interpreter = pytflite.Interpreter(model_content=model, experimental_delegates=[delegate])
    assert_matches(run(interpreter, feeds)[0], reference[0])
    return interpreter, delegate


def test_partitions_around_an_unsupported_node():
    interpreter, _ = _run_barrier()
    assert [p.nodes for p in interpreter.delegate_partitions()] == [(0, 1), (3, 4)]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [({"max_delegated_partitions": 1}, [(0, 1)]), ({"min_nodes_per_partition": 3}, [])],
)
def test_partition_limits(kwargs, expected):
    interpreter, _ = _run_barrier(**kwargs)
    assert [p.nodes for p in interpreter.delegate_partitions()] == expected


def test_at_most_one_transpose_each_way_per_partition():
    from pytflite.delegates.onnxruntime import translate_partition

    interpreter, _ = _run_barrier()
    subgraph = interpreter.subgraphs[0]
    for partition in interpreter.delegate_partitions():
        steps = [subgraph.nodes[i] for i in partition.nodes]
        graph = translate_partition(subgraph.tensors, steps, partition.output_tensors)
        runtime_transposes = [
            n for n in graph.nodes if n.op_type == "Transpose" and not n.input[0].startswith("c")
        ]
        # at most one switch each way; a convolution reading a few-channel input needs none in
        assert 1 <= len(runtime_transposes) <= 2, [n.input for n in runtime_transposes]


@pytest.mark.parametrize(("case", "flat"), [("conv_rgb_stride2_same", True), ("conv_rgb_dilated_w", False)])
def test_a_few_channel_input_is_convolved_without_a_transposition(case, flat):
    from pytflite.delegates.onnxruntime import translate_partition

    op, inputs, options = CASES[case]
    built, _, _ = _build_with_shapes(SingleOpModel(op, inputs, [T.FLOAT32], options))
    interpreter = pytflite.Interpreter(model_content=built, experimental_delegates=[OnnxRuntimeDelegate()])
    interpreter.allocate_tensors()
    subgraph = interpreter.subgraphs[0]
    (partition,) = interpreter.delegate_partitions()
    steps = [subgraph.nodes[i] for i in partition.nodes]
    graph = translate_partition(subgraph.tensors, steps, partition.output_tensors)
    entry = next(n for n in graph.nodes if n.input[0] == graph.inputs[0].name)
    assert entry.op_type == ("Reshape" if flat else "Transpose")


@pytest.mark.parametrize("keep_dims", [False, True])
def test_spatial_mean_of_a_convolution_is_a_global_pool(keep_dims):
    """MEAN over H and W of a channels-first value is GlobalAveragePool, which ONNX Runtime runs in
    its blocked layout straight on the convolution's output."""
    from pytflite.delegates.onnxruntime import translate_partition

    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 6, 7, 5])
    c = b.add_tensor("c", T.FLOAT32, [1, 4, 5, 4])
    y = b.add_tensor("y", T.FLOAT32, [1, 1, 1, 4] if keep_dims else [1, 4])
    b.add_operator(Op.CONV_2D, [x, b.add_constant("w", W_CONV), b.add_constant("bias", randn(4))], [c], CONV)
    axes = b.add_constant("axes", np.array([1, 2], np.int32))
    b.add_operator(Op.MEAN, [c, axes], [y], {"keep_dims": keep_dims})
    b.add_output(y)
    model = b.build()
    reference = run(pytflite.Interpreter(model_content=model), [X4])
    interpreter = pytflite.Interpreter(model_content=model, experimental_delegates=[OnnxRuntimeDelegate()])
    assert_matches(run(interpreter, [X4])[0], reference[0])
    (partition,) = interpreter.delegate_partitions()
    subgraph = interpreter.subgraphs[0]
    steps = [subgraph.nodes[i] for i in partition.nodes]
    graph = translate_partition(subgraph.tensors, steps, partition.output_tensors)
    assert [n.op_type for n in graph.nodes if n.op_type.endswith(("Pool", "Mean"))] == ["GlobalAveragePool"]


# --- dynamic shapes: sessions keyed by input shapes ----------------------------------------------------


def test_resize_uses_a_session_per_input_shape():
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 6], shape_signature=[-1, 6])
    h = b.add_tensor("h", T.FLOAT32, [1, 4], shape_signature=[-1, 4])
    y = b.add_tensor("y", T.FLOAT32, [1, 4], shape_signature=[-1, 4])
    b.add_operator(
        Op.FULLY_CONNECTED, [x, b.add_constant("w", randn(4, 6)), -1], [h], {"fused_activation_function": 1}
    )
    b.add_operator(Op.SOFTMAX, [h], [y], {"beta": 1.0})
    b.add_output(y)
    model = b.build()
    delegate = OnnxRuntimeDelegate()
    ours = pytflite.Interpreter(model_content=model, experimental_delegates=[delegate])
    cpu = pytflite.Interpreter(model_content=model)
    for batch in (1, 3, 1, 3):
        feed = randn(batch, 6)
        for interpreter in (ours, cpu):
            interpreter.resize_tensor_input(0, [batch, 6])
        expected = run(cpu, [feed])[0]
        assert_matches(run(ours, [feed])[0], expected)
        assert ours.delegate_partitions()[0].nodes == (0, 1)
    assert delegate.compilations == 2  # batch 1 and batch 3, each compiled once
    assert delegate.cached_sessions(ours.subgraphs[0].context) == 2


# --- buffer handles: outputs kept as OrtValues ---------------------------------------------------------


def _device_model() -> bytes:
    """Partition A makes a = x + 1 and d = 2x; the CPU pads d (SYMMETRIC, unsupported) into c;
    partition B adds a and c. `a` goes from A to B without leaving the device."""
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [2, 3])
    t = {n: b.add_tensor(n, T.FLOAT32, [2, 3]) for n in ("a", "d", "c", "y")}
    b.add_operator(Op.ADD, [x, b.add_constant("one", np.float32([1]))], [t["a"]], {})
    b.add_operator(Op.MUL, [x, b.add_constant("two", np.float32([2]))], [t["d"]], {})
    zero = b.add_constant("pads", np.zeros((2, 2), np.int32))
    b.add_operator(Op.MIRROR_PAD, [t["d"], zero], [t["c"]], {"mode": 1})
    b.add_operator(Op.ADD, [t["a"], t["c"]], [t["y"]], {})
    b.add_output(t["y"])
    return b.build()


def test_device_outputs_are_stale_until_read():
    model = _device_model()
    delegate = OnnxRuntimeDelegate(keep_outputs_on_device=True)
    copies = []
    original = delegate.copy_from_buffer_handle

    def spy(context, d, handle, tensor):
        copies.append(tensor.name)
        return original(context, d, handle, tensor)

    delegate.copy_from_buffer_handle = spy
    interpreter = pytflite.Interpreter(model_content=model, experimental_delegates=[delegate])
    feed = randn(2, 3)
    (out,) = run(interpreter, [feed])
    np.testing.assert_allclose(out, (feed + 1) + 2 * feed, rtol=1e-6)
    assert [p.nodes for p in interpreter.delegate_partitions()] == [(0, 1), (3,)]
    assert copies == ["d", "y"]  # d before the CPU pad reads it, y when invoke returns; never a
    tensors = interpreter.subgraphs[0].tensors
    a = next(t for t in tensors if t.name == "a")
    assert a.data_is_stale and a.buffer_handle in delegate.device_values
    interpreter.invoke()
    assert copies == ["d", "y", "d", "y"]


# --- quantized graphs: only on request ------------------------------------------------------------------


def _int8_conv_model() -> tuple[bytes, list[np.ndarray]]:
    q = AffineQuantization
    b = ModelBuilder()
    x = b.add_input("x", T.INT8, [1, 6, 6, 3], quantization=q([0.05], [-3]))
    w = b.add_tensor(
        "w",
        T.INT8,
        [4, 3, 3, 3],
        data=RNG.integers(-100, 100, (4, 3, 3, 3)).astype(np.int8),
        quantization=q([0.01, 0.02, 0.015, 0.01], [0, 0, 0, 0], 0),
    )
    bias = b.add_tensor(
        "b",
        T.INT32,
        [4],
        data=RNG.integers(-500, 500, 4).astype(np.int32),
        quantization=q([0.0005, 0.001, 0.00075, 0.0005], [0, 0, 0, 0], 0),
    )
    c = b.add_tensor("c", T.INT8, [1, 6, 6, 4], quantization=q([0.04], [2]))
    y = b.add_tensor("y", T.INT8, [1, 6, 6, 4], quantization=q([0.06], [-1]))
    b.add_operator(Op.CONV_2D, [x, w, bias], [c], {**CONV, "fused_activation_function": 1})
    b.add_operator(Op.ADD, [c, c], [y], {})
    b.add_output(y)
    return b.build(), [RNG.integers(-128, 127, (1, 6, 6, 3)).astype(np.int8)]


def test_quantized_nodes_stay_on_the_cpu_by_default():
    model, feeds = _int8_conv_model()
    interpreter = pytflite.Interpreter(model_content=model, experimental_delegates=[OnnxRuntimeDelegate()])
    run(interpreter, feeds)
    assert interpreter.delegate_partitions() == []


def test_quantized_opt_in_is_within_a_few_lsb():
    model, feeds = _int8_conv_model()
    expected = run(pytflite.Interpreter(model_content=model), feeds)[0]
    delegate = OnnxRuntimeDelegate(allow_quantized=True)
    interpreter = pytflite.Interpreter(model_content=model, experimental_delegates=[delegate])
    out = run(interpreter, feeds)[0]
    assert interpreter.subgraphs[0].delegation.is_fully_delegated
    assert out.dtype == np.int8
    assert np.abs(out.astype(int) - expected.astype(int)).max() <= 2


# --- float16 relaxation and imports ---------------------------------------------------------------------


def test_float16_conversion_casts_at_the_boundary():
    import onnx
    from onnx import TensorProto

    from pytflite.delegates.onnx.session import to_float16
    from pytflite.delegates.onnxruntime import PartitionGraph

    tensors = pytflite.Interpreter(model_content=_barrier_model()).subgraphs[0].tensors
    graph = PartitionGraph(tensors)
    graph.define(1, graph.op("Relu", [graph.value(0)]))
    graph.add_output(1)
    model = to_float16(graph.model())
    onnx.checker.check_model(model)
    assert {i.data_type for i in model.graph.initializer} <= {TensorProto.INT64, TensorProto.FLOAT16}
    assert model.graph.node[0].op_type == "Cast" and model.graph.node[-1].op_type == "Cast"


def test_the_delegate_rejects_missing_providers():
    with pytest.raises(ValueError, match="not available"):
        OnnxRuntimeDelegate(providers=["NoSuchExecutionProvider"])


def test_importing_pytflite_does_not_import_onnx():
    code = "import sys, pytflite; assert 'onnx' not in sys.modules and 'onnxruntime' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the public corpus ------------------------------------------------------------------------------------

MANIFEST = json.loads((CORPUS / "manifest.json").read_text()) if (CORPUS / "manifest.json").exists() else None
FLOAT_MODELS = [
    e["name"]
    for e in (MANIFEST or {"models": []})["models"]
    if e["name"] not in ("atan_custom", "multi_signature", "stateful")
    and not any(
        k.startswith(("CONV_2D(int", "FULLY_CONNECTED(int", "ADD(int8", "ADD(int16"))
        for k in e["op_histogram_by_dtype"]
    )
]


@pytest.mark.skipif(MANIFEST is None, reason=f"public corpus not found at {CORPUS}")
@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_corpus_float_models_match_litert(name):
    entry = next(e for e in MANIFEST["models"] if e["name"] == name)
    data = np.load(CORPUS / entry["npz"])
    suffix = "" if "input_0" in data else "__batch1"
    feeds = [data[f"input_{i}{suffix}"] for i in range(len(entry["inputs"]))]
    interpreter = pytflite.Interpreter(
        model_path=str(CORPUS / entry["file"]), experimental_delegates=[OnnxRuntimeDelegate()]
    )
    outputs = run(interpreter, feeds)
    assert interpreter.delegate_partitions(), "nothing delegated"
    for i, out in enumerate(outputs):
        reference = data[f"output_{i}{suffix}"]
        assert_matches(out, reference, _tolerance(data, f"{i}{suffix}"), what=f"{name} output {i}")


def _tolerance(data, key: str) -> float:
    """1e-5 of the output's magnitude, or as far as LiteRT's own XNNPACK path lands from its builtin
    kernels when that is further: in a hybrid model (mobilenet_v2_dynamic: 4.7e-2) the int8 kernels
    quantize their float inputs at run time, so a one-ulp change in a delegated float partition
    (another summation order) can move an int8 rounding downstream."""
    reference, xnnpack = data[f"output_{key}"], data.get(f"xnnpack_output_{key}")
    if xnnpack is None or not np.issubdtype(reference.dtype, np.floating):
        return 1e-5
    scale = max(float(np.max(np.abs(reference))), 1e-30)
    return max(1e-5, float(np.max(np.abs(xnnpack.astype(np.float64) - reference))) / scale)

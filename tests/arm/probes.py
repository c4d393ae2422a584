"""One-operator models of TFLite's requantizing kernels, int8, uint8 and int16, for recording the ARM
builds of TFLite (tests/fixtures/record_litert_arm.py) and checking the ARM profiles against them.

Each kernel's SIMD blocks, tails and scalar code round differently, so the shapes leave tails (19 or 21
channels, odd sizes) and the scales are neither powers of two nor simple ratios. Inputs span the whole
integer range; scales keep most outputs inside the output range, so the rounding (not the clamp) shows.
The hybrid models (float activations, int8 weights) hold the values where LiteRT's x86 and NEON hybrid
kernels have quirks: weights of -128, inputs quantized to -128 and 127, ties.
Where TFLite's ARM kernels take another path by shape (DEPTHWISE_CONV_2D's 3x3 kernels for stride 1 and
2, a depth multiplier; TRANSPOSE_CONV; the pooling and resizing variants), each path has its model.
The recurrent kernels (integer LSTM and SVDF, hybrid LSTM, RNN and SVDF) come from
tests/ops/test_recurrent.py's builders.
"""

from __future__ import annotations

import numpy as np

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from tests.single_op import Operand, SingleOpModel

DTYPES = {T.INT8: np.int8, T.UINT8: np.uint8, T.INT16: np.int16}
_NAMES = {T.INT8: "int8", T.UINT8: "uint8", T.INT16: "int16"}
Made = dict[str, SingleOpModel]


def _zero_point(rng, tensor_type) -> int:
    if tensor_type == T.INT16:
        return 0
    return int(rng.integers(-20, 21)) + (128 if tensor_type == T.UINT8 else 0)


def _scale(base: float, tensor_type) -> float:
    """An 8-bit scale, or its int16 counterpart (256 times finer)."""
    return base / 256 if tensor_type == T.INT16 else base


def _values(rng, tensor_type, shape) -> np.ndarray:
    info = np.iinfo(DTYPES[tensor_type])
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(DTYPES[tensor_type])


def _input(rng, tensor_type, shape, base_scale) -> Operand:
    quantization = (_scale(base_scale, tensor_type), _zero_point(rng, tensor_type))
    return Operand(_values(rng, tensor_type, shape), type=tensor_type, quantization=quantization)


def _constant(value, tensor_type=None, quantization=None) -> Operand:
    return Operand(np.asarray(value), constant=True, type=tensor_type, quantization=quantization)


def _one_op(op, operands, tensor_type, out_quantization, options=None, version=1) -> SingleOpModel:
    return SingleOpModel(
        op, operands, [tensor_type], options, version=version, output_quantization=[out_quantization]
    )


def _binary(rng, made: Made) -> None:
    for tensor_type in DTYPES:
        name = _NAMES[tensor_type]
        int16 = tensor_type == T.INT16
        for op, label, out_scale in ((Op.ADD, "add", 0.083), (Op.SUB, "sub", 0.071), (Op.MUL, "mul", 1.37)):
            # int16 ADD/SUB with general scales (pot_scale_int16 false) is their version 5 / 4
            options = {"pot_scale_int16": False} if int16 and op != Op.MUL else {}
            version = {Op.ADD: 5, Op.SUB: 4, Op.MUL: 4}[op] if int16 else 2
            for shapes, suffix in (
                (((2, 5, 7, 19), (2, 5, 7, 19)), ""),
                (((2, 5, 7, 19), (19,)), "_broadcast"),
            ):
                operands = [
                    _input(rng, tensor_type, shapes[0], 0.047),
                    _input(rng, tensor_type, shapes[1], 0.031),
                ]
                out = (_scale(out_scale, tensor_type), _zero_point(rng, tensor_type))
                made[f"{label}{suffix}_{name}"] = _one_op(op, operands, tensor_type, out, options, version)


def _reductions(rng, made: Made) -> None:
    for tensor_type in DTYPES:
        name = _NAMES[tensor_type]
        for op, label, out_scale in ((Op.MEAN, "mean", 0.041), (Op.SUM, "sum", 0.53)):
            if op == Op.SUM and tensor_type == T.INT16:
                continue  # TFLite's reference SUM reads int16 as bytes (pytflite refuses it)
            for axes, keep, suffix in (([1, 2], True, ""), ([3], False, "_channels")):
                operands = [_input(rng, tensor_type, (2, 7, 9, 21), 0.043), _constant(np.int32(axes))]
                out = (_scale(out_scale, tensor_type), _zero_point(rng, tensor_type))
                version = (3 if tensor_type == T.INT16 else 2) if op == Op.MEAN else 1
                made[f"{label}{suffix}_{name}"] = _one_op(
                    op, operands, tensor_type, out, {"keep_dims": keep}, version
                )


def _activations(rng, made: Made) -> None:
    for tensor_type in DTYPES:
        name = _NAMES[tensor_type]
        int16 = tensor_type == T.INT16
        low = -128 if tensor_type == T.INT8 else 0
        version = 3 if int16 else 2
        softmax_out = (1 / 32768, 0) if int16 else (1 / 256, low)
        operands = [_input(rng, tensor_type, (3, 37), 0.093)]
        made[f"softmax_{name}"] = _one_op(
            Op.SOFTMAX, operands, tensor_type, softmax_out, {"beta": 1.0}, version
        )
        logistic_out = (1 / 32768, 0) if int16 else (1 / 256, low)
        operands = [_input(rng, tensor_type, (3, 41), 0.061)]
        made[f"logistic_{name}"] = _one_op(Op.LOGISTIC, operands, tensor_type, logistic_out, None, version)
        tanh_out = (1 / 32768, 0) if int16 else (1 / 128, 0 if tensor_type == T.INT8 else 128)
        operands = [_input(rng, tensor_type, (3, 41), 0.037)]
        made[f"tanh_{name}"] = _one_op(Op.TANH, operands, tensor_type, tanh_out, None, version)
        operands = [_input(rng, tensor_type, (2, 5, 43), 0.057)]
        out = (_scale(0.043, tensor_type), _zero_point(rng, tensor_type))
        made[f"leaky_relu_{name}"] = _one_op(Op.LEAKY_RELU, operands, tensor_type, out, {"alpha": 0.23}, 2)
        if not int16:
            operands = [_input(rng, tensor_type, (2, 5, 43), 0.047)]
            out = (0.029, _zero_point(rng, tensor_type))
            made[f"hard_swish_{name}"] = _one_op(Op.HARD_SWISH, operands, tensor_type, out)
            alpha_q = (0.0077, _zero_point(rng, tensor_type))
            alpha = _constant(_values(rng, tensor_type, (19,)), tensor_type, alpha_q)
            operands = [_input(rng, tensor_type, (2, 5, 3, 19), 0.051), alpha]
            out = (0.037, _zero_point(rng, tensor_type))
            made[f"prelu_{name}"] = _one_op(Op.PRELU, operands, tensor_type, out)


def _spatial(rng, made: Made) -> None:
    for tensor_type in DTYPES:
        name = _NAMES[tensor_type]
        version = 3 if tensor_type == T.INT16 else 2
        for op, label in ((Op.AVERAGE_POOL_2D, "average_pool"), (Op.MAX_POOL_2D, "max_pool")):
            for padding, stride, size in (("SAME", 2, 3), ("VALID", 1, 2)):
                quantization = (_scale(0.047, tensor_type), _zero_point(rng, tensor_type))
                x = Operand(
                    _values(rng, tensor_type, (1, 9, 11, 19)), type=tensor_type, quantization=quantization
                )
                options = {"padding": padding, "stride_w": stride, "stride_h": stride,
                           "filter_width": size, "filter_height": size}  # fmt: skip
                made[f"{label}_{padding.lower()}_{name}"] = _one_op(
                    op, [x], tensor_type, quantization, options, version
                )
        for op, label in (
            (Op.RESIZE_BILINEAR, "resize_bilinear"),
            (Op.RESIZE_NEAREST_NEIGHBOR, "resize_nearest"),
        ):
            for corners, centers, suffix in ((False, True, "_half_pixel"), (True, False, "_align_corners"),
                                             (False, False, "")):  # fmt: skip
                quantization = (_scale(0.039, tensor_type), _zero_point(rng, tensor_type))
                x = Operand(
                    _values(rng, tensor_type, (1, 5, 7, 19)), type=tensor_type, quantization=quantization
                )
                options = {"align_corners": corners, "half_pixel_centers": centers}
                made[f"{label}{suffix}_{name}"] = _one_op(
                    op, [x, _constant(np.int32([9, 13]))], tensor_type, quantization, options, 4
                )
        if tensor_type == T.UINT8:  # (int8 CONCATENATION requires the output's scale on every input)
            inputs = [
                _input(rng, tensor_type, (2, 3, 5, c), s) for c, s in ((7, 0.031), (19, 0.057), (3, 0.043))
            ]
            out = (0.049, _zero_point(rng, tensor_type))
            made[f"concatenation_requantized_{name}"] = _one_op(
                Op.CONCATENATION, inputs, tensor_type, out, {"axis": 3}, 2
            )


def _quantize(rng, made: Made) -> None:
    x = Operand((rng.standard_normal((3, 37)) * 3).astype(np.float32))
    for tensor_type in DTYPES:
        name = _NAMES[tensor_type]
        out = (_scale(0.0231, tensor_type), _zero_point(rng, tensor_type))
        made[f"quantize_float_to_{name}"] = _one_op(
            Op.QUANTIZE, [x], tensor_type, out, None, 3 if name == "int16" else 2
        )
        source = _input(rng, tensor_type, (3, 37), 0.043)
        made[f"dequantize_{name}"] = _one_op(
            Op.DEQUANTIZE, [source], T.FLOAT32, None, None, 4 if name == "int16" else 2
        )
        requantized = (_scale(0.031, tensor_type), _zero_point(rng, tensor_type))
        made[f"quantize_{name}_to_{name}"] = _one_op(
            Op.QUANTIZE, [source], tensor_type, requantized, None, 3 if name == "int16" else 2
        )
    source = _input(rng, T.UINT8, (3, 37), 0.043)
    made["quantize_uint8_to_int8"] = _one_op(Op.QUANTIZE, [source], T.INT8, (0.029, -7), None, 2)


def _per_channel(rng, channels: int, base: float, axis: int) -> AffineQuantization:
    scales = (base * rng.uniform(0.6, 1.4, channels)).astype(np.float32)
    return AffineQuantization(scales, np.zeros(channels, np.int64), axis)


def _filter_and_bias(rng, tensor_type, shape, channels, axis, input_scale):
    """Weights (int8; uint8 per-tensor for uint8 inputs) and int32 (int64 for int16) biases."""
    if tensor_type == T.UINT8:
        weight_q = AffineQuantization(np.float32([0.011]), np.int64([131]), 0)
        weights = rng.integers(100, 163, shape).astype(np.uint8)
        weight_type = T.UINT8
    else:
        weight_q = _per_channel(rng, channels, 0.013, axis)
        weights = rng.integers(-127, 128, shape).astype(np.int8)
        weight_type = T.INT8
    bias_scales = (np.float32(input_scale) * np.broadcast_to(weight_q.scale, (channels,))).astype(np.float32)
    bias_type = T.INT64 if tensor_type == T.INT16 else T.INT32
    bias = rng.integers(-2000, 2001, channels).astype(np.int64 if bias_type == T.INT64 else np.int32)
    bias_q = AffineQuantization(bias_scales, np.zeros(channels, np.int64), 0)
    return _constant(weights, weight_type, weight_q), _constant(bias, bias_type, bias_q)


def _convolutions(rng, made: Made) -> None:
    for tensor_type in DTYPES:
        name = _NAMES[tensor_type]
        int16 = tensor_type == T.INT16
        # DEPTHWISE_CONV_2D: the 3x3 kernels (stride 1 and 2), a depth multiplier, a 5x5 filter
        for label, channels, multiplier, kernel, stride, padding in (
            ("3x3_stride1", 16, 1, 3, 1, "VALID"),
            ("3x3_stride2", 24, 1, 3, 2, "SAME"),
            ("multiplier2", 8, 2, 3, 1, "SAME"),
            ("5x5_tail", 19, 1, 5, 1, "SAME"),
        ):
            x = _input(rng, tensor_type, (1, 11, 13, channels // multiplier), 0.041)
            weights, bias = _filter_and_bias(
                rng, tensor_type, (1, kernel, kernel, channels), channels, 3, x.quantization[0]
            )
            out = (_scale(0.19, tensor_type), _zero_point(rng, tensor_type))
            options = {
                "padding": padding,
                "stride_w": stride,
                "stride_h": stride,
                "depth_multiplier": multiplier,
            }
            made[f"depthwise_{label}_{name}"] = _one_op(
                Op.DEPTHWISE_CONV_2D, [x, weights, bias], tensor_type, out, options, 5 if int16 else 3
            )
        # TRANSPOSE_CONV: stride 2 upsampling
        x = _input(rng, tensor_type, (1, 5, 6, 8), 0.041)
        weights, bias = _filter_and_bias(rng, tensor_type, (19, 3, 3, 8), 19, 0, x.quantization[0])
        out = (_scale(0.11, tensor_type), _zero_point(rng, tensor_type))
        options = {"padding": "SAME", "stride_w": 2, "stride_h": 2}
        made[f"transpose_conv_{name}"] = _one_op(
            Op.TRANSPOSE_CONV,
            [_constant(np.int32([1, 10, 12, 19])), weights, x, bias],
            tensor_type,
            out,
            options,
            3,
        )
        # CONV_2D 1x1 and 3x3 (uint8: per-tensor weights)
        for kernel in (1, 3):
            x = _input(rng, tensor_type, (1, 9, 10, 11), 0.041)
            weights, bias = _filter_and_bias(
                rng, tensor_type, (21, kernel, kernel, 11), 21, 0, x.quantization[0]
            )
            out = (_scale(0.17, tensor_type), _zero_point(rng, tensor_type))
            options = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
            made[f"conv_{kernel}x{kernel}_{name}"] = _one_op(
                Op.CONV_2D, [x, weights, bias], tensor_type, out, options, 4 if int16 else 3
            )
        if tensor_type != T.UINT8:  # BATCH_MATMUL of two runtime inputs
            a, b = _input(rng, tensor_type, (2, 5, 23), 0.031), _input(rng, tensor_type, (2, 23, 19), 0.029)
            if int16:
                a.quantization, b.quantization = (a.quantization[0], 0), (b.quantization[0], 0)
            out = (_scale(0.37, tensor_type), _zero_point(rng, tensor_type))
            made[f"batch_matmul_{name}"] = _one_op(
                Op.BATCH_MATMUL, [a, b], tensor_type, out, {}, 3 if int16 else 2
            )


def _hybrid_input(rng, shape, asymmetric: bool) -> np.ndarray:
    """Floats whose per-row quantization puts values on -128 (asymmetric) and 127, and ties: each row's
    first value 127 (an inverse scale of exactly 1), the last -128 when asymmetric, halves between."""
    x = (rng.standard_normal(shape) * 40).astype(np.float32)
    flat = x.reshape(-1, shape[-1])
    flat[:, 0] = 127
    if asymmetric:
        flat[:, -1] = -128
    flat[:, 1:8] = rng.choice(np.float32([-127.5, -126.5, -0.5, 0.5, 2.5, 126.5, -128]), (flat.shape[0], 7))
    return x


def _hybrid_weights(rng, shape) -> np.ndarray:
    """int8 weights a third of which are -128 (the x86 build loses their sign against negative inputs;
    NEON's pairwise int16 sums wrap on two -128 x -128 products)."""
    weights = rng.integers(-127, 128, shape).astype(np.int8)
    weights[rng.random(shape) < 0.33] = -128
    return weights


def _hybrid(rng, made: Made) -> None:
    """Float activations meeting constant int8 weights: FULLY_CONNECTED (the NEON matrix-vector kernel
    the LSTM, RNN and SVDF kernels share), BATCH_MATMUL, CONV_2D and DEPTHWISE_CONV_2D."""
    for asymmetric in (False, True):
        kind = "asymmetric" if asymmetric else "symmetric"
        for per_channel in (False, True):
            for batch in (1, 5):
                units, depth = 21, 67
                weights = _hybrid_weights(rng, (units, depth))
                scales = (
                    _per_channel(rng, units, 0.01, 0)
                    if per_channel
                    else AffineQuantization(np.float32([0.01]), np.int64([0]), 0)
                )
                bias = (rng.standard_normal(units) * 0.1).astype(np.float32)
                x = Operand(_hybrid_input(rng, (batch, depth), asymmetric))
                options = {"asymmetric_quantize_inputs": asymmetric}
                name = f"hybrid_fc_{kind}{'_per_channel' if per_channel else ''}_batch{batch}"
                made[name] = SingleOpModel(
                    Op.FULLY_CONNECTED, [x, _constant(weights, T.INT8, scales), _constant(bias)], [T.FLOAT32],
                    options, version=12 if per_channel else 9,
                )  # fmt: skip
        rhs = _constant(
            _hybrid_weights(rng, (37, 19)), T.INT8, AffineQuantization(np.float32([0.02]), np.int64([0]), 0)
        )
        lhs = Operand(_hybrid_input(rng, (2, 4, 37), asymmetric))
        made[f"hybrid_batch_matmul_{kind}"] = SingleOpModel(
            Op.BATCH_MATMUL, [lhs, rhs], [T.FLOAT32], {"asymmetric_quantize_inputs": asymmetric}, version=4
        )
        x = Operand(_hybrid_input(rng, (1, 7, 8, 16), asymmetric))
        weights = _constant(_hybrid_weights(rng, (19, 3, 3, 16)), T.INT8, _per_channel(rng, 19, 0.01, 0))
        options = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
        bias = _constant((rng.standard_normal(19) * 0.1).astype(np.float32))
        made[f"hybrid_conv_{kind}"] = SingleOpModel(
            Op.CONV_2D, [x, weights, bias], [T.FLOAT32], options, version=5
        )
    x = Operand(_hybrid_input(rng, (1, 7, 8, 16), False))
    weights = _constant(_hybrid_weights(rng, (1, 3, 3, 16)), T.INT8, _per_channel(rng, 16, 0.01, 3))
    options = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
    bias = _constant((rng.standard_normal(16) * 0.1).astype(np.float32))
    made["hybrid_depthwise"] = SingleOpModel(
        Op.DEPTHWISE_CONV_2D, [x, weights, bias], [T.FLOAT32], options, version=6
    )


def _paired_extremes(rng, made: Made) -> None:
    """Quantized FULLY_CONNECTED and CONV_2D whose weights and inputs hold the type's lowest value at both
    depths k and k + 8 of 16-deep blocks (-128, or 0 for uint8, which ruy multiplies as -128): the
    products NEON's int8 kernels sum in int16 pairs. Batch 1 goes through TFLite's custom GEMV."""
    for tensor_type in (T.INT8, T.UINT8):
        name = _NAMES[tensor_type]
        low = -128 if tensor_type == T.INT8 else 0
        for batch in (1, 6):
            units, depth = 12, 40
            weights = _values(rng, tensor_type, (units, depth))
            x = _values(rng, tensor_type, (batch, depth))
            for k in (0, 3, 17, 21):  # pairs (k, k + 8) in the first and second 16-deep blocks
                chosen = rng.random(units) < 0.6
                weights[chosen, k] = weights[chosen, k + 8] = low
                x[:, k] = x[:, k + 8] = low
            weights[:, 33] = x[:, 33] = low  # in the last block, paired with the depth's padding
            w_zero = 0 if tensor_type == T.INT8 else 131
            w_q = AffineQuantization(np.float32([0.0041]), np.int64([w_zero]), 0)
            x_q = (0.037, _zero_point(rng, tensor_type))
            bias_q = AffineQuantization(np.float32([0.037 * 0.0041]), np.int64([0]), 0)
            bias = _constant(rng.integers(-3000, 3001, units).astype(np.int32), T.INT32, bias_q)
            out = (0.61, _zero_point(rng, tensor_type))
            operands = [
                Operand(x, type=tensor_type, quantization=x_q),
                _constant(weights, tensor_type, w_q),
                bias,
            ]
            made[f"fc_{name}_paired_lowest_batch{batch}"] = _one_op(
                Op.FULLY_CONNECTED, operands, tensor_type, out, {}, 1 if tensor_type == T.UINT8 else 4
            )
        weights = _values(rng, tensor_type, (9, 3, 3, 16))
        weights[:, :, :, [2, 10]] = low
        x = _values(rng, tensor_type, (1, 6, 7, 16))
        x[..., [2, 10]] = low
        w_zero = 0 if tensor_type == T.INT8 else 131
        w_q = AffineQuantization(np.float32([0.0043]), np.int64([w_zero]), 0)
        x_q = (0.039, _zero_point(rng, tensor_type))
        bias_q = AffineQuantization(np.float32([0.039 * 0.0043]), np.int64([0]), 0)
        bias = _constant(rng.integers(-3000, 3001, 9).astype(np.int32), T.INT32, bias_q)
        out = (0.83, _zero_point(rng, tensor_type))
        operands = [
            Operand(x, type=tensor_type, quantization=x_q),
            _constant(weights, tensor_type, w_q),
            bias,
        ]
        options = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
        made[f"conv_{name}_paired_lowest"] = _one_op(Op.CONV_2D, operands, tensor_type, out, options, 3)


def _recurrent() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """The quantized recurrent kernels, built as tests/ops/test_recurrent.py builds them: the integer
    LSTM (TFLite's 8x8->16 kernel) in its variants, the integer SVDF, and the hybrid LSTM, RNN and SVDF
    with weights of -128 (TFLite's NEON matrix-vector kernel)."""
    from tests.ops import test_recurrent as recurrent

    made = {}
    for op, label in ((Op.UNIDIRECTIONAL_SEQUENCE_LSTM, "sequence_lstm"), (Op.LSTM, "lstm")):
        for config in ("plain", "cifg-peephole", "layer-norm", "projection-bias", "all"):
            rng = np.random.default_rng(len(made) + 101)
            model, runs = recurrent._integer_lstm(rng, op, **recurrent.INTEGER_LSTM_CONFIGS[config])
            made[f"integer_{label}_{config}"] = (model, runs[0])
    for rank, memory in ((1, 3), (2, 5)):
        rng = np.random.default_rng(rank * 10 + memory)
        batch, depth, units = 2, 37, 3
        inputs = [
            recurrent._input(rng.integers(-128, 128, (batch, depth)).astype(np.int8), (0.031, 3)),
            recurrent._const(rng.integers(-127, 128, (rank * units, depth)).astype(np.int8), (0.0047, 0)),
            recurrent._const(rng.integers(-3000, 3000, (rank * units, memory)).astype(np.int16), (4e-5, 0)),
            recurrent._const(rng.integers(-5000, 5000, units).astype(np.int32), (1e-6, 0)),
            recurrent._state((batch, rank * units * memory), np.int16, (0.007, 0)),
        ]
        options = {"rank": rank, "fused_activation_function": "RELU"}
        model, feeds = recurrent._model(Op.SVDF, inputs, [(T.INT8, (0.021, -4))], options, 3)
        made[f"integer_svdf_rank{rank}"] = (model, feeds)
    for asymmetric in (False, True):
        kind = "asymmetric" if asymmetric else "symmetric"
        rng = np.random.default_rng(7 + asymmetric)
        shape = (3, 2, 37)
        inputs = recurrent._lstm_inputs(rng, shape, 6, 18, 2, projection=True, peephole=True, hybrid=True)
        for i in (*range(1, 12), 16):
            inputs[i] = recurrent._extreme_int8_weights(rng, *inputs[i]["value"].shape)
        options = {
            "fused_activation_function": "TANH",
            "time_major": True,
            "asymmetric_quantize_inputs": asymmetric,
        }
        made[f"hybrid_sequence_lstm_{kind}"] = recurrent._model(
            Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [(T.FLOAT32, None)], options, 2
        )
        inputs = [
            recurrent._input(recurrent._uniform(rng, 2, 300) + np.float32(0.3)),
            recurrent._extreme_int8_weights(rng, 17, 300, share=0.9),
            recurrent._extreme_int8_weights(rng, 17, 17),
            recurrent._const(recurrent._uniform(rng, 17)),
            recurrent._state((2, 17)),
        ]
        options = {"fused_activation_function": "NONE", "asymmetric_quantize_inputs": asymmetric}
        made[f"hybrid_rnn_{kind}"] = recurrent._model(Op.RNN, inputs, [(T.FLOAT32, None)], options, 2)
        inputs = [
            recurrent._input(recurrent._uniform(rng, 2, 40)),
            recurrent._extreme_int8_weights(rng, 6, 40),
            recurrent._extreme_int8_weights(rng, 6, 4),
            recurrent._const(recurrent._uniform(rng, 3)),
            recurrent._state((2, 24)),
        ]
        options = {"rank": 2, "fused_activation_function": "NONE", "asymmetric_quantize_inputs": asymmetric}
        made[f"hybrid_svdf_{kind}"] = recurrent._model(Op.SVDF, inputs, [(T.FLOAT32, None)], options, 2)
    return made


def models() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """name -> (model, its inputs in input order)."""
    rng = np.random.default_rng(29)
    made: Made = {}
    for add in (
        _binary,
        _reductions,
        _activations,
        _spatial,
        _quantize,
        _convolutions,
        _hybrid,
        _paired_extremes,
    ):
        add(rng, made)
    return {**{name: single.build() for name, single in made.items()}, **_recurrent()}

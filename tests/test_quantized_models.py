"""Whole quantized models, built with ModelBuilder, against LiteRT: the uint8 (legacy asymmetric, per-tensor
weights), int8 (per-channel weights) and int16x8 (int16 activations, int8 weights, int64 bias) flavours
of one small CNN - QUANTIZE, CONV_2D, DEPTHWISE_CONV_2D, a residual ADD, CONCATENATION (of differently
scaled inputs in uint8), MAX_POOL_2D, MEAN, FULLY_CONNECTED, SOFTMAX and LOGISTIC, DEQUANTIZE. The corpus holds
converter-made int8/int16x8 models; these run without it, and cover uint8, which the converter no longer
emits. Quantized outputs must be bit-identical."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder
from tests.oracle import compare_with_litert, requires_litert

pytestmark = requires_litert

# activation type, weight type, bias type, whether weights are per-channel, activation zero points used
FLAVOURS = {
    "uint8": (T.UINT8, T.UINT8, T.INT32, False),
    "int8": (T.INT8, T.INT8, T.INT32, True),
    "int16x8": (T.INT16, T.INT8, T.INT64, True),
}


class _QuantizedCnn:
    """Builds the model for one flavour: each activation gets a scale and (but for int16) a zero point."""

    def __init__(self, flavour: str, rng: np.random.Generator):
        self.activation, self.weight, self.bias, self.per_channel = FLAVOURS[flavour]
        self.rng = rng
        self.builder = ModelBuilder()
        self.scales: dict[int, float] = {}

    def quantization(self, scale: float, zero_point: int = 0) -> AffineQuantization:
        if self.activation == T.INT16:
            zero_point = 0
        elif self.activation == T.UINT8:
            zero_point += 128
        return AffineQuantization(np.array([scale], np.float32), np.array([zero_point], np.int64), 0)

    def tensor(self, name: str, shape, scale: float, zero_point: int = 0) -> int:
        index = self.builder.add_tensor(
            name, self.activation, shape, quantization=self.quantization(scale, zero_point)
        )
        self.scales[index] = scale
        return index

    def weights(self, name: str, shape, channel_axis: int) -> tuple[int, np.ndarray]:
        """Random weights spanning the type's range, and their scales (one per output channel or one)."""
        channels = shape[channel_axis]
        scales = self.rng.uniform(0.002, 0.02, channels if self.per_channel else 1).astype(np.float32)
        if self.weight == T.UINT8:
            values = self.rng.integers(0, 256, shape).astype(np.uint8)
            zero_points = np.full(1, 128, np.int64)
        else:
            values = self.rng.integers(-127, 128, shape).astype(np.int8)
            zero_points = np.zeros(scales.size, np.int64)
        quantization = AffineQuantization(scales, zero_points, channel_axis if self.per_channel else 0)
        return self.builder.add_tensor(
            name, self.weight, shape, data=values, quantization=quantization
        ), scales

    def bias_for(self, name: str, source: int, weight_scales: np.ndarray, channels: int) -> int:
        scales = (self.scales[source] * weight_scales).astype(np.float32)
        scales = np.broadcast_to(scales, (channels,)) if self.per_channel else scales
        dtype = np.int64 if self.bias == T.INT64 else np.int32
        values = self.rng.integers(-3000, 3000, channels).astype(dtype)
        quantization = AffineQuantization(np.array(scales, np.float32), np.zeros(scales.size, np.int64), 0)
        return self.builder.add_tensor(name, self.bias, [channels], data=values, quantization=quantization)

    def conv(self, name, source, shape_in, out_channels, kernel, stride, activation, out_scale, out_zero):
        n, h, w, c = shape_in
        weights, scales = self.weights(f"{name}/w", [out_channels, kernel, kernel, c], 0)
        bias = self.bias_for(f"{name}/b", source, scales, out_channels)
        out_shape = [n, -(-h // stride), -(-w // stride), out_channels]
        out = self.tensor(name, out_shape, out_scale, out_zero)
        options = {"padding": "SAME", "stride_h": stride, "stride_w": stride}
        options["fused_activation_function"] = activation
        self.builder.add_operator(Op.CONV_2D, [source, weights, bias], [out], options, version=3)
        return out, out_shape

    def depthwise(self, name, source, shape_in, activation, out_scale, out_zero):
        c = shape_in[3]
        weights, scales = self.weights(f"{name}/w", [1, 3, 3, c], 3)
        bias = self.bias_for(f"{name}/b", source, scales, c)
        out = self.tensor(name, shape_in, out_scale, out_zero)
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "depth_multiplier": 1}
        options["fused_activation_function"] = activation
        self.builder.add_operator(Op.DEPTHWISE_CONV_2D, [source, weights, bias], [out], options, version=3)
        return out

    def build(self) -> bytes:
        b = self.builder
        image = b.add_input("image", T.FLOAT32, [1, 12, 12, 3])
        x = self.tensor("quantized", [1, 12, 12, 3], 1 / 64, -3)
        b.add_operator(Op.QUANTIZE, [image], [x], version=2)
        c1, shape = self.conv("conv1", x, [1, 12, 12, 3], 8, 3, 2, "RELU6", 6 / 255, -128)
        d1 = self.depthwise("dw1", c1, shape, "RELU", 0.05, -100)
        c2, _ = self.conv("conv2", d1, shape, 8, 1, 1, "NONE", 0.07, 5)
        # only uint8 CONCATENATION rescales its inputs: int8 and int16 need equal parameters throughout
        rescaled = self.activation == T.UINT8
        residual_params = (0.09, 3) if rescaled else (6 / 255, -128)
        joined_params = (0.08, -2) if rescaled else (6 / 255, -128)
        residual = self.tensor("residual", shape, *residual_params)
        b.add_operator(Op.ADD, [c2, c1], [residual], {"fused_activation_function": "NONE"}, version=2)
        joined_shape = [*shape[:3], 16]
        joined = self.tensor("joined", joined_shape, *joined_params)
        b.add_operator(Op.CONCATENATION, [residual, c1], [joined], {"axis": 3}, version=2)
        pooled_shape = [1, 3, 3, 16]
        pooled = self.tensor("pooled", pooled_shape, *joined_params)
        pool = {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2}
        b.add_operator(Op.MAX_POOL_2D, [joined], [pooled], pool, version=2)
        axes = b.add_tensor("axes", T.INT32, [2], data=np.array([1, 2], np.int32))
        mean = self.tensor("mean", [1, 16], 0.05, -10)
        b.add_operator(Op.MEAN, [pooled, axes], [mean], {"keep_dims": False}, version=2)
        weights, scales = self.weights("fc/w", [10, 16], 0)
        bias = self.bias_for("fc/b", mean, scales, 10)
        logits = self.tensor("logits", [1, 10], 0.1, 4)
        b.add_operator(Op.FULLY_CONNECTED, [mean, weights, bias], [logits], version=4)
        probabilities = self.tensor("probabilities", [1, 10], 1 / 256, -128)
        if self.activation == T.INT16:
            probabilities = self.tensor("probabilities16", [1, 10], 1 / 32768)
        b.add_operator(Op.SOFTMAX, [logits], [probabilities], {"beta": 1.0}, version=2)
        gate = self.tensor("gate", [1, 10], 1 / 256, -128)
        if self.activation == T.INT16:
            gate = self.tensor("gate16", [1, 10], 1 / 32768)
        b.add_operator(Op.LOGISTIC, [logits], [gate], version=2)
        for source, name in ((probabilities, "probabilities_float"), (gate, "gate_float")):
            result = b.add_tensor(name, T.FLOAT32, [1, 10])
            b.add_operator(Op.DEQUANTIZE, [source], [result], version=2)
            b.add_output(result)
        b.add_output(logits)
        return b.build()


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quantized_cnn_matches_litert_bit_for_bit(flavour, seed):
    rng = np.random.default_rng(seed)
    model = _QuantizedCnn(flavour, rng).build()
    image = rng.uniform(-2, 2, [1, 12, 12, 3]).astype(np.float32)
    # rtol=0: the float outputs are dequantized integers, equal only if the integers are
    logits = compare_with_litert(model, [image], rtol=0)[2]
    assert np.unique(logits).size > 3, "the model must not saturate into a constant"

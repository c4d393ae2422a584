"""CONV_2D (float32) against LiteRT: strides, dilation, padding, groups, bias, activations."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 2),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    groups=st.sampled_from([1, 1, 2, 3]),
    in_per_group=st.integers(1, 3),
    out_per_group=st.integers(1, 3),
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]),
    seed=st.integers(0, 2**16),
)
def test_conv2d(
    batch, size, kernel, groups, in_per_group, out_per_group, strides, dilation, padding, activation, seed
):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal([batch, *size, groups * in_per_group]).astype(np.float32)
    w = rng.standard_normal([groups * out_per_group, *kernel, in_per_group]).astype(np.float32)
    b = rng.standard_normal([groups * out_per_group]).astype(np.float32)
    options = {
        "padding": padding,
        "stride_h": strides[0],
        "stride_w": strides[1],
        "dilation_h_factor": dilation[0],
        "dilation_w_factor": dilation[1],
        "fused_activation_function": activation,
    }
    if padding == "VALID" and any(size[i] < (kernel[i] - 1) * dilation[i] + 1 for i in range(2)):
        return  # an empty VALID output: LiteRT rejects the model
    operands = [Operand(x), Operand(w, constant=True), Operand(b, constant=True)]
    SingleOpModel(Op.CONV_2D, operands, [T.FLOAT32], options, version=6 if groups > 1 else 2).check()


def test_bias_is_required_as_in_tflite():
    import pytest

    import pytflite

    x, w = np.zeros([1, 3, 3, 1], np.float32), np.zeros([1, 1, 1, 1], np.float32)
    model, _ = SingleOpModel(
        Op.CONV_2D, [Operand(x), Operand(w, constant=True), None], [T.FLOAT32], {"stride_h": 1, "stride_w": 1}
    ).build()
    with pytest.raises(RuntimeError, match="Tensor at index 2 was optional but was expected"):
        pytflite.Interpreter(model_content=model).allocate_tensors()

"""CONV_3D (im2col, as CONV_2D) and CONV_3D_TRANSPOSE (the sums of TRANSPOSE_CONV), float32 only."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure, ensure_eq
from ..common import (
    activation_clamp,
    check_arity,
    input_tensor,
    optional_input_tensor,
    output_tensor,
    set_temporaries,
)
from ..registry import register_builtin
from ..windows import output_size, padding_before_after
from .common import FLOAT, check_bias, check_float, constant_data, ensure_positive, shared_constant
from .im2col import (
    ConvState,
    conv_compute,
    conv_draft,
    conv_init,
    float_calls,
    made_of_calls,
    owned,
    plan_conv,
    plan_float_bias,
)
from .transpose import (
    TransposeState,
    transpose_draft,
    transpose_init,
    transpose_invoke,
    transpose_prepare,
)


def conv3d_prepare(context, node):
    check_arity(node, (2, 3))
    options = node.builtin_data
    source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
    bias = optional_input_tensor(context, node, 2)
    output = output_tensor(context, node)
    ensure_eq(len(source.shape), 5, "CONV_3D input rank")
    ensure_eq(len(weights.shape), 5, "CONV_3D filter rank")
    ensure_eq(source.shape[4], weights.shape[3], "CONV_3D input channels vs filter input channels")
    ensure(min(source.shape[1:]) > 0 and min(weights.shape) > 0, "CONV_3D needs non-empty input and filter")
    check_float((source, weights, output), ("input", "filter", "output"), "CONV_3D")
    out_channels = weights.shape[4]
    if bias is not None:
        check_bias(bias, out_channels, "CONV_3D")
    strides = (options.stride_d, options.stride_h, options.stride_w)
    dilation = (options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor)
    ensure_positive(strides, "CONV_3D strides")
    ensure_positive(dilation, "CONV_3D dilation")
    in_spatial, kernel = source.shape[1:4], weights.shape[:3]
    out_spatial = tuple(
        output_size(options.padding, in_spatial[i], kernel[i], strides[i], dilation[i], checked=True)
        for i in range(3)
    )
    pads = tuple(
        padding_before_after(in_spatial[i], kernel[i], strides[i], dilation[i], out_spatial[i])[0]
        for i in range(3)
    )
    context.resize_tensor(output, (source.shape[0], *out_spatial, out_channels))
    state = conv_draft(node)

    def layout(filt: np.ndarray) -> np.ndarray:  # [KD, KH, KW, I, O] -> [1, KD*KH*KW*I, O]
        return filt.reshape(1, -1, filt.shape[-1])

    state.layout = layout
    constant = constant_data(weights)
    matrix = layout(constant) if constant is not None else None
    temporaries = plan_conv(
        context,
        state,
        tuple(source.shape),
        out_channels,
        out_spatial,
        kernel,
        strides,
        dilation,
        pads,
        1,
        matrix,
        constant_data(bias) if matrix is not None else None,
    )
    plan_float_bias(state, bias, source.shape[0] * int(np.prod(out_spatial, dtype=np.int64)))
    set_temporaries(context, node, owned(state), temporaries)
    state.clamp = activation_clamp(options.fused_activation_function)
    state.as_calls = made_of_calls(state)
    state.weights = shared_constant(context, node, "weights", state.weights)
    if state.bias_constant:
        state.bias_row = shared_constant(context, node, "bias row", state.bias_row)
    node.user_data = ConvState(**vars(state))


def conv3d_invoke(context, node):
    conv_compute(context, node, node.user_data)


def conv3d_transpose_prepare(context, node):
    options = node.builtin_data
    state = transpose_draft(node)
    state.strides = (options.stride_d, options.stride_h, options.stride_w)
    state.dilation = (options.dilation_d_factor, options.dilation_h_factor, options.dilation_w_factor)

    def layout(filt: np.ndarray) -> np.ndarray:  # [KD, KH, KW, O, I] -> [I, KD*KH*KW*O]
        return filt.reshape(-1, filt.shape[-1]).T

    state.layout = layout
    transpose_prepare(context, node, state, "CONV_3D_TRANSPOSE", 3, options, (3, 4))
    node.user_data = TransposeState(**vars(state))


register_builtin(
    BuiltinOperator.CONV_3D,
    (1, 1),
    types=FLOAT,
    init=conv_init,
    op_data=ConvState,
    prepare=conv3d_prepare,
    invoke=conv3d_invoke,
    calls=float_calls,
)
register_builtin(
    BuiltinOperator.CONV_3D_TRANSPOSE,
    (1, 1),
    types=FLOAT,
    init=transpose_init,
    op_data=TransposeState,
    prepare=conv3d_transpose_prepare,
    invoke=transpose_invoke,
)

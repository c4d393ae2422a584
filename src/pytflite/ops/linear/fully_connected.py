"""FULLY_CONNECTED: its checks, op data and registration; the float32 path (one BLAS product)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_type
from ...model.options import FullyConnectedOptionsWeightsFormat
from ..common import (
    activation_clamp,
    check_arity,
    input_tensor,
    optional_input_tensor,
    output_tensor,
)
from ..kernel_type import KernelType
from ..registry import register_builtin
from .common import PACKED_WEIGHTS, Act, Kernel, T, matrix_product
from .hybrid import CompiledCentered, hybrid_fc_kernel
from .quantized import quantized_fc_kernel
from .sparse import densify_float_weights

_CLAMPING = (Act.NONE, Act.RELU, Act.RELU_N1_TO_1, Act.RELU6)


@dataclass(frozen=True)
class FullyConnectedData:
    batch: int
    depth: int  # of the [batch, depth] input rows: the weights' depth, or for a zero one the input's
    units: int
    clamp: Callable[[np.ndarray], None] | None  # the float kernel's activation
    dense: np.ndarray | None  # sparse float weights, densified in prepare
    kernel: Kernel | None  # quantized, hybrid, or zero-filling kernels: kernel(x, w, bias, out)


def _zeros_kernel(x, w, bias, out) -> None:
    out.fill(0)


def _fully_connected_prepare(kernel_type: KernelType):
    def prepare(context, node):
        options = node.builtin_data
        check_arity(node, (2, 3))
        if options.weights_format != FullyConnectedOptionsWeightsFormat.DEFAULT:
            raise KernelError(
                f"FULLY_CONNECTED weights format {options.weights_format.name} is not supported"
            )
        source, weights = input_tensor(context, node, 0), input_tensor(context, node, 1)
        bias = optional_input_tensor(context, node, 2)
        output = output_tensor(context, node)
        ensure_type(source, _FC_TYPES, "input", "FULLY_CONNECTED")
        hybrid = source.type == T.FLOAT32 and weights.type in _HYBRID_WEIGHTS
        _check_types(source, weights, bias, output, hybrid)
        if not hybrid:
            ensure(
                options.fused_activation_function in _CLAMPING,
                "params->activation == kTfLiteActNone || params->activation == kTfLiteActRelu || "
                "params->activation == kTfLiteActReluN1To1 || params->activation == kTfLiteActRelu6 "
                "was not true.",
            )
        if weights.type in PACKED_WEIGHTS:
            ensure(
                weights.quantization is not None and not np.any(weights.quantization.zero_point),
                "Unsupported filter quantization zero-point value.",
            )
        ensure_eq(len(weights.shape), 2, "FULLY_CONNECTED weights rank")
        units, depth = weights.shape
        size = math.prod(source.shape)
        if depth == 0:  # TFLite: one output row per input row, all zeros
            batch = math.prod(source.shape[:-1])
            row_length = size // batch if batch else 0
        else:
            ensure(
                size % depth == 0,
                f"FULLY_CONNECTED input of {size} elements is not a multiple of depth {depth}",
            )
            batch, row_length = size // depth, depth
        if bias is not None:
            ensure_eq(math.prod(bias.shape), units, "FULLY_CONNECTED bias size")
        if options.keep_num_dims:
            ensure(
                len(source.shape) >= 1 and source.shape[-1] == depth,
                f"FULLY_CONNECTED keep_num_dims needs the input's last dimension {depth}, "
                f"got {list(source.shape)}",
            )
            shape = (*source.shape[:-1], units)
        else:
            shape = (batch, units)
        context.resize_tensor(output, shape)
        clamp, dense, kernel = None, None, None
        if depth == 0 or batch * units == 0:
            kernel = _zeros_kernel
        elif hybrid:
            arithmetic = context.host.arithmetic
            kernel = hybrid_fc_kernel(source, weights, bias, options, batch, depth, kernel_type, arithmetic)
        elif source.type == T.FLOAT32:
            clamp = activation_clamp(options.fused_activation_function)
            if weights.sparsity is not None:
                dense = densify_float_weights(weights, batch, depth, units, kernel_type)
        else:
            kernel = quantized_fc_kernel(
                source, weights, bias, output, options, kernel_type, batch, depth, context.host
            )
        node.user_data = FullyConnectedData(batch, row_length, units, clamp, dense, kernel)

    return prepare


_FC_TYPES = (T.FLOAT32, T.UINT8, T.INT8, T.INT16)


_HYBRID_WEIGHTS = (T.UINT8, T.INT8, T.INT4, T.INT2)


_QUANTIZED_WEIGHTS = (T.UINT8, T.INT8, T.INT4, T.INT2, T.INT16)


def _check_types(source, weights, bias, output, hybrid: bool) -> None:
    """TFLite's CheckTypes, then the input/weights/output combinations its kernels really compute."""
    what = "FULLY_CONNECTED"
    if hybrid:
        ensure_type(output, T.FLOAT32, "output", what)
        if bias is not None:
            ensure_type(bias, T.FLOAT32, "bias", what)
        return
    if weights.type not in _QUANTIZED_WEIGHTS:
        for tensor, role in ((weights, "weights"), (output, "output")):
            ensure_type(tensor, T.FLOAT32, role, what)
        ensure_type(source, T.FLOAT32, "input", what)
        if bias is not None:
            ensure_type(bias, T.FLOAT32, "bias", what)
        return
    if bias is not None:
        ensure_type(bias, (T.INT32, T.INT64), "bias", what)
    combinations = {
        (T.UINT8, T.UINT8): (T.UINT8, T.INT16),
        (T.INT8, T.INT8): (T.INT8,),
        (T.INT8, T.INT4): (T.INT8,),
        (T.INT8, T.INT2): (T.INT8,),
        (T.INT16, T.INT8): (T.INT16,),
        (T.INT16, T.INT4): (T.INT16,),
        (T.INT16, T.INT2): (T.INT16,),
        (T.INT16, T.INT16): (T.INT16,),
    }
    outputs = combinations.get((source.type, weights.type), ())
    if output.type not in outputs:
        raise KernelError(
            f"FULLY_CONNECTED of {type_name(source.type)} input, {type_name(weights.type)} weights and "
            f"{type_name(output.type)} output is not supported"
        )
    if bias is not None and bias.type == T.INT64:
        ensure(
            source.type == T.INT16, f"FULLY_CONNECTED int64 bias needs int16 input, got {source.type.name}"
        )


def _fc_arrays(tensors, node, data: FullyConnectedData):
    """The node's arrays as the computation takes them: input [batch, depth], weights, bias (`units`
    values in any shape: [1, 1, units] broadcasts wrongly against [batch, units]) or None, and output
    [batch, units]."""
    inputs = node.inputs
    x = tensors[inputs[0]].data.reshape(data.batch, data.depth)
    bias = tensors[inputs[2]].data.reshape(-1) if len(inputs) == 3 and inputs[2] >= 0 else None
    out = tensors[node.outputs[0]].data.reshape(data.batch, data.units)
    return x, tensors[inputs[1]].data, bias, out


def _float_calls(data: FullyConnectedData, x, w, bias, out) -> tuple:
    """The float computation on these arrays, as calls: the product into the output, the bias added, the
    activation's clamp. (One row's bias is added in the output's own shape, as NumPy's broadcasting loop
    costs 0.5 us more.)"""
    product = matrix_product(data.depth)
    calls = [partial(product, x, (data.dense if data.dense is not None else w).T, out)]
    if bias is not None:
        calls.append(partial(np.add, out, bias.reshape(out.shape) if out.shape[0] == 1 else bias, out))
    if data.clamp is not None:
        calls.append(partial(data.clamp, out))
    return tuple(calls)


def fully_connected_invoke(context, node):
    data = node.user_data
    arrays = _fc_arrays(context.tensors, node, data)
    if data.kernel is not None:
        data.kernel(*arrays)
        return
    for call in _float_calls(data, *arrays):
        call()


def fully_connected_calls(context, node):
    """The node's computation on its arrays (Registration.calls): the float computation's calls, a
    compiled centered product's statement, or the kernel's one call."""
    data = node.user_data
    arrays = _fc_arrays(context.tensors, node, data)
    if data.kernel is None:
        return tuple(_float_calls(data, *arrays))
    kernel = data.kernel
    if isinstance(kernel, CompiledCentered):
        return kernel.calls(*arrays)
    return (partial(kernel, *arrays),)


register_builtin(
    BuiltinOperator.FULLY_CONNECTED,
    (1, 14),
    types=_FC_TYPES,
    op_data=FullyConnectedData,
    prepare_for=_fully_connected_prepare,
    invoke=fully_connected_invoke,
    calls=fully_connected_calls,
)

"""The tensor checks LiteRT's XNNPACK delegate makes before it takes a node (xnnpack_delegate.cc's
Check* helpers), for the ops whose LiteRT kernels add temporaries: a node XNNPACK takes is never
prepared by LiteRT's kernel, so its temporaries do not exist. Each family module states its op's
conditions with these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core.quantization import AffineQuantization, BlockwiseQuantization
from ...core.types import BuiltinOperator, TensorType
from ...model.options import ActivationFunctionType

if TYPE_CHECKING:
    from ...core.context import Context
    from ...core.tensor import Tensor

MAX_DIMS = 6  # XNN_MAX_TENSOR_DIMS
_INT8_ZERO_POINTS = {TensorType.INT8: (-128, 127), TensorType.UINT8: (0, 255)}


def is_float(tensor: Tensor) -> bool:
    """float32 or float16 (CheckTensorFloatType's and the float half of its mixed checks)."""
    return tensor.type in (TensorType.FLOAT32, TensorType.FLOAT16)


def quantized_8bit(tensor: Tensor, per_channel_dimension: int | None = None) -> bool:
    """int8 or uint8 with affine quantization: one scale, or (int8 only, `per_channel_dimension` given)
    one per channel of that dimension with zero points of 0; zero points in the type's range."""
    if tensor.type not in _INT8_ZERO_POINTS or not isinstance(tensor.quantization, AffineQuantization):
        return False
    scale = np.asarray(tensor.quantization.scale)
    zero_point = np.asarray(tensor.quantization.zero_point)
    if scale.size == 0:
        return False
    low, high = _INT8_ZERO_POINTS[tensor.type]
    if scale.size == 1:
        return bool(zero_point.size >= 1 and low <= int(zero_point.flat[0]) <= high)
    return (
        tensor.type == TensorType.INT8
        and per_channel_dimension is not None
        and tensor.quantization.quantized_dimension == per_channel_dimension
        and not np.any(zero_point)
    )


def float_or_quantized_8bit(tensor: Tensor) -> bool:
    """CheckTensorFloatOrQUInt8Type: float, or per-tensor quantized int8/uint8."""
    return is_float(tensor) or quantized_8bit(tensor)


def static(tensor: Tensor | None) -> bool:
    """A model constant (CheckTensorStaticAllocation)."""
    return tensor is not None and tensor.is_constant


def positive_shape(tensor: Tensor, rank: int) -> bool:
    """CheckTensorShape: exactly `rank` dimensions, none of them empty."""
    return len(tensor.shape) == rank and all(size > 0 for size in tensor.shape)


def per_channel(tensor: Tensor) -> bool:
    """Affine quantization with more than one scale."""
    return isinstance(tensor.quantization, AffineQuantization) and tensor.quantization.scale.size > 1


def filter_type(tensor: Tensor, channel_dimension: int) -> bool:
    """CheckTensorFilterType: float; int8/int4/int2 with scales, per channel of `channel_dimension`
    only (int2 per channel only), or blockwise quantized; or per-tensor uint8."""
    if is_float(tensor):
        return True
    quantization = tensor.quantization
    if tensor.type in (TensorType.INT8, TensorType.INT4, TensorType.INT2):
        if isinstance(quantization, BlockwiseQuantization):
            return quantization.block_size % 32 == 0
        if not isinstance(quantization, AffineQuantization) or quantization.scale.size == 0:
            return False
        if per_channel(tensor) and quantization.quantized_dimension != channel_dimension:
            return False
        return tensor.type != TensorType.INT2 or (
            quantization.scale.size == tensor.shape[quantization.quantized_dimension]
        )
    return tensor.type == TensorType.UINT8 and quantized_8bit(tensor)


def float_or_channelwise_int8(tensor: Tensor, channel_dimension: int) -> bool:
    """CheckTensorFloat32OrQCInt8Type: float, per-tensor uint8, or int8 with one scale or one per
    channel of `channel_dimension` (zero points 0)."""
    if is_float(tensor) or tensor.type == TensorType.UINT8:
        return float_or_quantized_8bit(tensor)
    return quantized_8bit(tensor, channel_dimension)


def quantized_int32(tensor: Tensor) -> bool:
    """The int32 half of CheckTensorFloat32OrFloat16OrQCInt32Type: affine, quantized along dimension 0."""
    quantization = tensor.quantization
    return (
        tensor.type == TensorType.INT32
        and isinstance(quantization, AffineQuantization)
        and quantization.quantized_dimension == 0
    )


def clamping_activation(activation: int) -> bool:
    """ConvertActivationToOutputRange: a fused activation XNNPACK expresses as an output range."""
    return ActivationFunctionType(activation) in (
        ActivationFunctionType.NONE,
        ActivationFunctionType.RELU,
        ActivationFunctionType.RELU_N1_TO_1,
        ActivationFunctionType.RELU6,
    )


def producer(context: Context, index: int) -> tuple[int, Tensor | None]:
    """The builtin code of the node in the execution plan that outputs tensor `index` alone from one
    input, and that input; (0, None) for any other tensor."""
    for node_index in context.subgraph.execution_plan:
        node, registration = context.subgraph.node_and_registration(node_index)
        if index in node.outputs:
            if node.outputs == (index,) and len(node.inputs) == 1 and node.inputs[0] >= 0:
                return registration.builtin_code, context.tensors[node.inputs[0]]
            break
    return 0, None


def static_or_unpacked(context: Context, index: int) -> bool:
    """A constant, or quasi-static: XNNPACK unpacks, at delegation, a DEQUANTIZE of static float16 or
    quantized int8 data to float32 and a DENSIFY of a sparse constant, so weights they produce count
    as static (the delegate's static_unpack_nodes)."""
    if index < 0:
        return False
    tensor = context.tensors[index]
    if tensor.is_constant:
        return True
    op, source = producer(context, index)
    if op == BuiltinOperator.DEQUANTIZE:
        unpacked = source.type == TensorType.FLOAT16 or (
            source.type == TensorType.INT8 and isinstance(source.quantization, AffineQuantization)
        )
        return (
            unpacked
            and source.sparsity is None
            and tensor.type == TensorType.FLOAT32
            and static_or_unpacked(context, source.index)
        )
    if op == BuiltinOperator.DENSIFY:
        return (
            source.is_constant
            and source.sparsity is not None
            and source.type in (TensorType.FLOAT16, TensorType.INT8, TensorType.FLOAT32)
            and tensor.type == source.type
        )
    return False

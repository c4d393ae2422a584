"""`TfLiteNode.builtin_data` for native delegates: a node's options as TFLite's C option structs.

A delegate deciding whether it supports a node, or building its kernel, reads e.g.
`((TfLiteConvParams*)node->builtin_data)->stride_width`. pytflite keeps options as frozen dataclasses
(model/options.py); this module writes the C struct (layouts from TFLite's builtin_op_data.h) for the
operators delegates commonly claim. Other operators get NULL, as ops without options have in TFLite.
The enums differ in one place: the schema's Padding is SAME=0, VALID=1, TfLitePadding is SAME=1, VALID=2
(0 meaning unknown); fused activations share their numbers.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from ...core.types import BuiltinOperator as Op

_int, _bool, _float = ctypes.c_int, ctypes.c_bool, ctypes.c_float
RESHAPE_MAX_DIMENSIONS = 8  # TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT


def _struct(name: str, *fields: tuple[str, Any]) -> type[ctypes.Structure]:
    return type(name, (ctypes.Structure,), {"_fields_": list(fields)})


TfLiteAddParams = _struct("TfLiteAddParams", ("activation", _int), ("pot_scale_int16", _bool))
TfLiteSubParams = _struct("TfLiteSubParams", ("activation", _int), ("pot_scale_int16", _bool))
TfLiteMulParams = _struct("TfLiteMulParams", ("activation", _int))
TfLiteDivParams = _struct("TfLiteDivParams", ("activation", _int))
TfLiteConvParams = _struct(
    "TfLiteConvParams",
    ("padding", _int),
    ("stride_width", _int),
    ("stride_height", _int),
    ("activation", _int),
    ("dilation_width_factor", _int),
    ("dilation_height_factor", _int),
)
TfLiteDepthwiseConvParams = _struct(
    "TfLiteDepthwiseConvParams",
    ("padding", _int),
    ("stride_width", _int),
    ("stride_height", _int),
    ("depth_multiplier", _int),
    ("activation", _int),
    ("dilation_width_factor", _int),
    ("dilation_height_factor", _int),
)
TfLitePaddingValues = _struct(
    "TfLitePaddingValues", ("width", _int), ("height", _int), ("width_offset", _int), ("height_offset", _int)
)
TfLitePoolParams = _struct(
    "TfLitePoolParams",
    ("padding", _int),
    ("stride_width", _int),
    ("stride_height", _int),
    ("filter_width", _int),
    ("filter_height", _int),
    ("activation", _int),
    ("computed_padding", TfLitePaddingValues),  # filled by the CPU kernel's prepare in TFLite: zeros here
)
TfLiteFullyConnectedParams = _struct(
    "TfLiteFullyConnectedParams",
    ("activation", _int),
    ("weights_format", _int),
    ("keep_num_dims", _bool),
    ("asymmetric_quantize_inputs", _bool),
)
TfLiteSoftmaxParams = _struct("TfLiteSoftmaxParams", ("beta", _float))
TfLiteConcatenationParams = _struct("TfLiteConcatenationParams", ("axis", _int), ("activation", _int))
TfLiteReshapeParams = _struct(
    "TfLiteReshapeParams", ("shape", ctypes.c_int32 * RESHAPE_MAX_DIMENSIONS), ("num_dimensions", _int)
)
TfLiteReducerParams = _struct("TfLiteReducerParams", ("keep_dims", _bool))


def _padding(options: Any) -> int:
    return int(options.padding) + 1  # schema SAME=0, VALID=1 -> kTfLitePaddingSame=1, kTfLitePaddingValid=2


def _activation(options: Any) -> int:
    return int(options.fused_activation_function)


def _add_like(struct: type[ctypes.Structure]) -> Callable[[Any], ctypes.Structure]:
    return lambda o: struct(_activation(o), bool(o.pot_scale_int16))


def _reshape(options: Any) -> ctypes.Structure:
    shape = tuple(options.new_shape or ())[:RESHAPE_MAX_DIMENSIONS]
    return TfLiteReshapeParams((ctypes.c_int32 * RESHAPE_MAX_DIMENSIONS)(*shape), len(shape))


def _pool(o: Any) -> ctypes.Structure:
    return TfLitePoolParams(
        _padding(o), o.stride_w, o.stride_h, o.filter_width, o.filter_height, _activation(o)
    )


_REDUCERS = (Op.MEAN, Op.SUM, Op.REDUCE_PROD, Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_ANY, Op.REDUCE_ALL)

# operator -> (struct, options dataclass -> struct)
_WRITERS: dict[int, tuple[type[ctypes.Structure], Callable[[Any], ctypes.Structure]]] = {
    Op.ADD: (TfLiteAddParams, _add_like(TfLiteAddParams)),
    Op.SUB: (TfLiteSubParams, _add_like(TfLiteSubParams)),
    Op.MUL: (TfLiteMulParams, lambda o: TfLiteMulParams(_activation(o))),
    Op.DIV: (TfLiteDivParams, lambda o: TfLiteDivParams(_activation(o))),
    Op.CONV_2D: (
        TfLiteConvParams,
        lambda o: TfLiteConvParams(
            _padding(o), o.stride_w, o.stride_h, _activation(o), o.dilation_w_factor, o.dilation_h_factor
        ),
    ),
    Op.DEPTHWISE_CONV_2D: (
        TfLiteDepthwiseConvParams,
        lambda o: TfLiteDepthwiseConvParams(
            _padding(o),
            o.stride_w,
            o.stride_h,
            o.depth_multiplier,
            _activation(o),
            o.dilation_w_factor,
            o.dilation_h_factor,
        ),
    ),
    Op.AVERAGE_POOL_2D: (TfLitePoolParams, _pool),
    Op.MAX_POOL_2D: (TfLitePoolParams, _pool),
    Op.L2_POOL_2D: (TfLitePoolParams, _pool),
    Op.FULLY_CONNECTED: (
        TfLiteFullyConnectedParams,
        lambda o: TfLiteFullyConnectedParams(
            _activation(o), int(o.weights_format), bool(o.keep_num_dims), bool(o.asymmetric_quantize_inputs)
        ),
    ),
    Op.SOFTMAX: (TfLiteSoftmaxParams, lambda o: TfLiteSoftmaxParams(o.beta)),
    Op.CONCATENATION: (
        TfLiteConcatenationParams,
        lambda o: TfLiteConcatenationParams(o.axis, _activation(o)),
    ),
    Op.RESHAPE: (TfLiteReshapeParams, _reshape),
    **{op: (TfLiteReducerParams, lambda o: TfLiteReducerParams(bool(o.keep_dims))) for op in _REDUCERS},
}


def c_builtin_data(builtin_code: int, options: Any) -> ctypes.Structure | None:
    """The C option struct of an operator's options (all zeros when the model gave none), or None
    where this module has no struct for the operator."""
    writer = _WRITERS.get(builtin_code)
    if writer is None:
        return None
    struct, write = writer
    if options is None:
        return struct()
    return write(options)

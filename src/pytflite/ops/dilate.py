"""DILATE: interior padding; input elements spread `dilation` apart along each axis, the gaps filled
with a padding value (output size (n - 1) * d + 1 per axis).

TFLite checks the dilations when it runs the op, not in prepare: constant dilations that pass those
checks give the output its shape in prepare; anything else leaves the output dynamic and the checks
fail the invoke with TFLite's messages. (TFLite's positivity check reads the first factor only and
crashes on a later zero; pytflite checks them all.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.types import TFLITE_TYPE_NUMBER, BuiltinOperator, TensorType
from ..errors import KernelError, ensure
from .common import ANY_TYPE, check_arity, input_tensor, output_tensor
from .registry import register_builtin

T = TensorType
_PACKED = (T.INT4, T.UINT4, T.INT2)
_TYPES = tuple(t for t in ANY_TYPE if t not in (T.STRING, *_PACKED))


@dataclass(frozen=True)
class DilateData:
    dilations: tuple[int, ...] | None  # None: read (and checked) at invoke


def _ensure_same_type(first, second, condition: str) -> None:
    """TF_LITE_ENSURE_EQ on two types: TFLite prints their TfLiteType numbers."""
    if first.type != second.type:
        a, b = TFLITE_TYPE_NUMBER.get(first.type, 0), TFLITE_TYPE_NUMBER.get(second.type, 0)
        raise KernelError(f"{condition} ({a} != {b})")


def dilate_prepare(context, node):
    check_arity(node, 3)
    source, dilations, padding = (input_tensor(context, node, i) for i in range(3))
    output = output_tensor(context, node)
    ensure(len(source.shape) > 0, "ctx.input_tensor->dims->size > 0 was not true.")
    _ensure_same_type(source, output, "ctx.input_tensor->type != ctx.output_tensor->type")
    _ensure_same_type(source, padding, "ctx.input_tensor->type != ctx.padding_value_tensor->type")
    if dilations.is_constant:
        try:
            factors = _checked_dilations(source, dilations)
        except KernelError:  # TFLite fails these at invoke
            factors = None
        if factors is not None:
            node.user_data = DilateData(factors)
            context.resize_tensor(output, _dilated_shape(source.shape, factors))
            return
    node.user_data = DilateData(None)
    context.set_tensor_to_dynamic(output)


def _checked_dilations(source, dilations) -> tuple[int, ...]:
    """The dilation factors, after the checks TFLite's invoke makes."""
    if dilations.type != T.INT32:
        raise KernelError(
            f"ctx.dilations_tensor->type != kTfLiteInt32 ({TFLITE_TYPE_NUMBER.get(dilations.type, 0)} != 2)"
        )
    if len(dilations.shape) != 1:
        raise KernelError(f"ctx.dilations_tensor->dims->size != 1 ({len(dilations.shape)} != 1)")
    if dilations.shape[0] != len(source.shape):
        raise KernelError(
            "ctx.dilations_tensor->dims->data[0] != ctx.input_tensor->dims->size "
            f"({dilations.shape[0]} != {len(source.shape)})"
        )
    factors = tuple(int(d) for d in dilations.data)
    ensure(all(d >= 1 for d in factors), "ctx.dilations_tensor->data.i32[i] >= 1 was not true.")
    if source.type not in _TYPES:
        raise KernelError(f"DILATE does not support {source.type.name} tensors")
    return factors


def _dilated_shape(shape: tuple[int, ...], factors: tuple[int, ...]) -> tuple[int, ...]:
    return tuple((n - 1) * d + 1 for n, d in zip(shape, factors))


def dilate_invoke(context, node):
    tensors = context.tensors
    source = tensors[node.inputs[0]]
    padding = tensors[node.inputs[2]].data
    output = tensors[node.outputs[0]]
    factors = node.user_data.dilations
    if factors is None:
        factors = _checked_dilations(source, tensors[node.inputs[1]])
        context.resize_tensor(output, _dilated_shape(source.shape, factors))
    out = output.data
    if out.size == 0:
        return
    if padding.size == 0:
        raise KernelError("DILATE: the padding value tensor is empty")
    out[...] = padding.reshape(-1)[0]
    out[tuple(slice(None, None, d) for d in factors)] = source.data


register_builtin(
    BuiltinOperator.DILATE,
    (1, 1),
    types=_TYPES,
    op_data=DilateData,
    prepare=dilate_prepare,
    invoke=dilate_invoke,
)

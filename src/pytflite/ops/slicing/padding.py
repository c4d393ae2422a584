"""PAD, PADV2 and MIRROR_PAD: the input copied into the middle of a larger output, borders filled."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType, num_elements
from ...errors import ensure, ensure_eq, ensure_type, ensure_types_eq
from ...model.options import MirrorPadMode
from ..common import check_arity, ensure_same_quantization, input_tensor, optional_input_tensor, output_tensor
from ..registry import register_builtin
from .common import INDEX_TYPES, MIRROR_PAD_TYPES, PAD_TYPES, QUANTIZED, ints

# --- PAD / PADV2 ----------------------------------------------------------------------------------

_PADDING_TYPES = (TensorType.INT32, TensorType.INT64, TensorType.INT8, TensorType.INT16, TensorType.BOOL)
_PAD_MAX_RANK = 5


@dataclass(frozen=True)
class PadPlan:
    shape: tuple[int, ...]
    center: tuple  # where the input lands in the output
    borders: tuple[tuple, ...]  # the output regions that get the pad value


def _padding_pairs_shape_check(paddings, rank: int, op_name: str) -> None:
    ensure_eq(len(paddings.shape), 2, f"{op_name} paddings rank")
    ensure_eq(paddings.shape[1], 2, f"{op_name} paddings dimension 1")
    ensure_eq(paddings.shape[0], rank, f"{op_name} paddings dimension 0 vs input rank")


def _padding_pairs(paddings, rank: int, op_name: str) -> list[tuple[int, int]]:
    _padding_pairs_shape_check(paddings, rank, op_name)
    values = ints(paddings)
    return [(values[2 * i], values[2 * i + 1]) for i in range(rank)]


def plan_pad(shape: tuple[int, ...], pairs: list[tuple[int, int]]) -> PadPlan:
    out_shape, center, borders = [], [], []
    for axis, (dim, (before, after)) in enumerate(zip(shape, pairs)):
        ensure(before >= 0 and after >= 0, "Pad value has to be greater than equal to 0.")
        out_shape.append(dim + before + after)
        center.append(slice(before, before + dim))
        lead = (slice(None),) * axis
        if before:
            borders.append((*lead, slice(0, before)))
        if after:
            borders.append((*lead, slice(before + dim, None)))
    return PadPlan(tuple(out_shape), tuple(center), tuple(borders))


@dataclass(frozen=True)
class PadData:
    plan: PadPlan | None  # None: paddings known only at invoke
    value: object  # the fill value, or None to read the constant_values input at invoke


def _pad_value(source, output, constant):
    """The fill value fixed by the tensors' types and quantization, or None when read from `constant`."""
    quantized = source.type == TensorType.UINT8 or (
        source.type in QUANTIZED and source.quantization is not None
    )
    if constant is None:
        if not quantized:
            return 0
        zero_point = output.params.zero_point
        limits = np.iinfo(output.dtype)
        ensure(limits.min <= zero_point <= limits.max, f"output zero_point {zero_point} is out of range")
        return zero_point
    if quantized:
        ensure(
            output.params.zero_point == constant.params.zero_point,
            f"output zero_point {output.params.zero_point} != constant_values zero_point "
            f"{constant.params.zero_point}",
        )
        ensure(
            output.params.scale == constant.params.scale,
            f"output scale {output.params.scale} != constant_values scale {constant.params.scale}",
        )
    return None


def pad_prepare(context, node):
    op_name = "PADV2" if len(node.inputs) == 3 and node.inputs[2] >= 0 else "PAD"
    check_arity(node, (2, 3))
    source, paddings, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    constant = optional_input_tensor(context, node, 2)
    ensure_type(source, PAD_TYPES, "input", op_name)
    ensure_types_eq(source, output, f"{op_name} input/output types")
    ensure_type(paddings, _PADDING_TYPES, "paddings", op_name)
    if constant is not None:
        ensure_types_eq(source, constant, f"{op_name} input/constant_values types")
        ensure_eq(num_elements(constant.shape), 1, f"{op_name} constant_values element count")
    rank = len(source.shape)
    ensure(rank <= _PAD_MAX_RANK, f"{op_name} supports up to {_PAD_MAX_RANK} dimensions, got {rank}")
    value = _pad_value(source, output, constant)
    if not paddings.is_constant_or_persistent:
        _padding_pairs_shape_check(paddings, rank, op_name)
        node.user_data = PadData(None, value)
        context.set_tensor_to_dynamic(output)
        return
    plan = plan_pad(source.shape, _padding_pairs(paddings, rank, op_name))
    node.user_data = PadData(plan, value)
    context.resize_tensor(output, plan.shape)


def pad_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = data.plan
    if plan is None:
        plan = plan_pad(source.shape, _padding_pairs(tensors[node.inputs[1]], len(source.shape), "PAD"))
        context.resize_tensor(output, plan.shape)
    value = data.value
    if value is None:
        value = tensors[node.inputs[2]].data.reshape(-1)[0]
    out = output.data
    for border in plan.borders:
        out[border] = value
    out[plan.center] = source.data


for _op in (BuiltinOperator.PAD, BuiltinOperator.PADV2):
    register_builtin(_op, (1, 6), types=PAD_TYPES, op_data=PadData, prepare=pad_prepare, invoke=pad_invoke)

# --- MIRROR_PAD -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MirrorPlan:
    shape: tuple[int, ...]
    center: tuple
    copies: tuple[tuple[tuple, tuple], ...]  # (destination, source) regions of the output, in order


def plan_mirror_pad(shape: tuple[int, ...], pairs: list[tuple[int, int]], offset: int) -> MirrorPlan:
    """Fill the borders axis by axis from the output itself: reflect (offset 1) skips the edge element,
    symmetric (offset 0) repeats it. Axes after the current one are restricted to the input's extent;
    they are filled later from regions that already hold the mirrored values."""
    out_shape = [d + b + a for d, (b, a) in zip(shape, pairs)]
    center = tuple(slice(b, b + d) for d, (b, _) in zip(shape, pairs))
    copies = []
    for axis, (dim, (before, after)) in enumerate(zip(shape, pairs)):
        ensure(before >= 0 and after >= 0, "MirrorPad paddings must be non-negative.")
        limit = dim - offset
        ensure(
            before <= limit and after <= limit,
            "MirrorPad paddings must be no greater than the input dimension size minus the mode offset. "
            f"Dimension {axis} has input size {dim}, mode offset {offset}, max padding {limit}, "
            f"left padding {before}, and right padding {after}.",
        )
        lead, rest = (slice(None),) * axis, center[axis + 1 :]
        if before:
            first = 2 * before + offset - 1  # the output position mirrored into position 0
            low = before + offset - 1
            copies.append(
                (
                    (*lead, slice(0, before), *rest),
                    (*lead, slice(first, low if low >= 0 else None, -1), *rest),
                )
            )
        if after:
            top = before + dim - 1 - offset  # mirrored into the first position after the input
            low = top - after
            copies.append(
                (
                    (*lead, slice(before + dim, None), *rest),
                    (*lead, slice(top, low if low >= 0 else None, -1), *rest),
                )
            )
    return MirrorPlan(tuple(out_shape), center, tuple(copies))


def _mirror_offset(node) -> int:
    mode = node.builtin_data.mode
    ensure(mode in (MirrorPadMode.REFLECT, MirrorPadMode.SYMMETRIC), f"Unknown MirrorPad mode {int(mode)}")
    return 1 if mode == MirrorPadMode.REFLECT else 0


def mirror_pad_prepare(context, node):
    check_arity(node, 2)
    source, paddings, output = (
        input_tensor(context, node, 0),
        input_tensor(context, node, 1),
        output_tensor(context, node),
    )
    ensure_type(source, MIRROR_PAD_TYPES, "input", "MIRROR_PAD")
    ensure_types_eq(source, output, "MIRROR_PAD input/output types")
    offset = _mirror_offset(node)
    ensure_type(paddings, INDEX_TYPES, "paddings", "MIRROR_PAD")
    _padding_pairs_shape_check(paddings, len(source.shape), "MIRROR_PAD")
    if source.type in QUANTIZED:
        ensure_same_quantization(source, output)
    if not paddings.is_constant_or_persistent:
        node.user_data = None
        context.set_tensor_to_dynamic(output)
        return
    plan = plan_mirror_pad(source.shape, _padding_pairs(paddings, len(source.shape), "MIRROR_PAD"), offset)
    node.user_data = plan
    context.resize_tensor(output, plan.shape)


def mirror_pad_invoke(context, node):
    tensors = context.tensors
    source, output = tensors[node.inputs[0]], tensors[node.outputs[0]]
    plan = node.user_data
    if plan is None:
        pairs = _padding_pairs(tensors[node.inputs[1]], len(source.shape), "MIRROR_PAD")
        plan = plan_mirror_pad(source.shape, pairs, _mirror_offset(node))
        context.resize_tensor(output, plan.shape)
    out = output.data
    out[plan.center] = source.data
    for destination, origin in plan.copies:
        out[destination] = out[origin]


register_builtin(
    BuiltinOperator.MIRROR_PAD,
    (1, 3),
    types=MIRROR_PAD_TYPES,
    op_data=MirrorPlan,
    prepare=mirror_pad_prepare,
    invoke=mirror_pad_invoke,
)

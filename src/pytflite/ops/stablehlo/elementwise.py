"""STABLEHLO_ADD, MULTIPLY, MAXIMUM, MINIMUM, AND and SHIFT_LEFT: elementwise binary ops on two tensors of
one shape (StableHLO has no implicit broadcasting), computed in the inputs' own type.

Integers wrap as C++ arithmetic does. MAXIMUM and MINIMUM are std::max and std::min: a NaN wins only as
the first operand, and of two equal zeros the first is kept. SHIFT_LEFT shifts 8- and 16-bit values after
C++'s promotion to int, so shifts up to 31 are defined there; LiteRT leaves a negative shift, or an int32
shift of 32 or more, undefined (pytflite gives 0 for the latter, NumPy's answer).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin

T = TensorType
# The types ElementwiseEval dispatches on; anything else fails at invoke.
_ELEMENTWISE_TYPES = (
    T.FLOAT16, T.FLOAT32, T.FLOAT64, T.INT8, T.INT16, T.INT32, T.INT64,
    T.UINT8, T.UINT16, T.UINT32, T.UINT64, T.BOOL,
)  # fmt: skip
_FLOAT_TYPES = (T.FLOAT16, T.FLOAT32, T.FLOAT64)
_SHIFT_TYPES = (T.INT8, T.INT16, T.INT32)


def _maximum(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, np.where(a < b, b, a))  # std::max(a, b)


def _minimum(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    np.copyto(out, np.where(b < a, b, a))  # std::min(a, b)


def _shift_left(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    wide = np.left_shift(a.astype(np.int64), np.clip(b, 0, 63).astype(np.int64))  # C++ promotes to int
    np.copyto(out, wide.astype(out.dtype), casting="unsafe")


def _ufunc(ufunc: np.ufunc) -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    def compute(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        ufunc(a, b, out=out)

    return compute


def _same_shape_prepare(context, node, names: str) -> None:
    """Two inputs of one type and one shape (`names`: how LiteRT's checks name them); the output takes
    that shape. LiteRT's SHIFT_LEFT does not compare the shapes, and reads past a smaller second input."""
    check_arity(node, 2)
    first, second = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    a, b = names.split()
    ensure_type_condition(first, second.type, f"{a}->type != {b}->type")
    ensure_condition_eq(len(first.shape), len(second.shape), f"{a}->dims->size != {b}->dims->size")
    for x, y in zip(first.shape, second.shape):
        ensure_condition_eq(x, y, f"{a}->dims->data[idx] != {b}->dims->data[idx]")
    if output.type != first.type:  # LiteRT writes the input type's values into it regardless
        raise KernelError(
            f"STABLEHLO output type {type_name(output.type)} != input type {type_name(first.type)}"
        )
    context.resize_tensor(output, first.shape)


def _kernel(
    op: BuiltinOperator,
    compute,
    types: tuple[TensorType, ...],
    unsupported: Callable[[TensorType], str],
    names: str = "input_tensor1 input_tensor2",
) -> None:
    """Register `op`; TFLite checks the input type when it runs the op, pytflite in prepare."""

    def prepare(context, node):
        _same_shape_prepare(context, node, names)
        data_type = input_tensor(context, node, 0).type
        if data_type not in types:
            raise KernelError(unsupported(data_type))

    def invoke(context, node):
        tensors = context.tensors
        compute(tensors[node.inputs[0]].data, tensors[node.inputs[1]].data, tensors[node.outputs[0]].data)

    register_builtin(op, (1, 1), types=types, prepare=prepare, invoke=invoke)


def _not_supported(data_type: TensorType) -> str:
    return f"(Data Type: {type_name(data_type)}) currently not supported."


def _not_for_and(data_type: TensorType) -> str:
    if data_type in _FLOAT_TYPES:
        return f"(Data Type: {type_name(data_type)}) is not supported for bitwise/logical AND."
    return _not_supported(data_type)


Op = BuiltinOperator
_kernel(Op.STABLEHLO_ADD, _ufunc(np.add), _ELEMENTWISE_TYPES, _not_supported)
_kernel(Op.STABLEHLO_MULTIPLY, _ufunc(np.multiply), _ELEMENTWISE_TYPES, _not_supported)
_kernel(Op.STABLEHLO_MAXIMUM, _maximum, _ELEMENTWISE_TYPES, _not_supported)
_kernel(Op.STABLEHLO_MINIMUM, _minimum, _ELEMENTWISE_TYPES, _not_supported)
_kernel(
    Op.STABLEHLO_AND,
    _ufunc(np.bitwise_and),
    tuple(t for t in _ELEMENTWISE_TYPES if t not in _FLOAT_TYPES),
    _not_for_and,
)
_kernel(
    Op.STABLEHLO_SHIFT_LEFT,
    _shift_left,
    _SHIFT_TYPES,
    lambda data_type: f"(Index Type: {type_name(data_type)}) currently not supported.",
    names="input1 input2",
)

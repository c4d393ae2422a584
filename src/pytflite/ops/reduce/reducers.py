"""MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL: the reducer per op and its registration."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...core.types import AllocationType, BuiltinOperator, TensorType, type_name
from ...errors import ensure, ensure_eq, ensure_type
from ...fidelity.arithmetic import X86, HostArithmetic
from ..common import Computation, calls_on, check_arity, ensure_same_quantization, input_tensor, output_tensor
from ..jit import compiled
from ..kernel_type import OPTIMIZED, REFERENCE, KernelType
from ..registry import register_builtin
from .common import NUMBERS, QUANTIZED, Reducer, ReduceSpec, kept_shape, reduced_shape, resolve_axes
from .quantized import quantized_mean, quantized_prod, quantized_sum, reference_quantized_sum


def _mean(spec: ReduceSpec) -> Callable:
    if spec.source_quantization is not None:
        return quantized_mean(spec)
    axes, count = spec.axes, spec.count
    if np.issubdtype(spec.dtype, np.integer):

        def integer_mean(x, out):
            total = np.add.reduce(x, axis=axes, dtype=np.int64, keepdims=True)
            np.copyto(out, np.where(total < 0, -((-total) // count), total // count), casting="unsafe")

        return integer_mean
    blocks = _reduced_blocks(spec.shape, spec.axes) if spec.dtype == np.float32 else None
    kernel = compiled("eigen_compiled", "mean") if blocks is not None else None
    if kernel is not None:
        outer, _, inner = blocks
        # LiteRT's optimized kernel sums the last axis with Eigen where some kept dimension is not 1
        eigen = spec.kernel_type is OPTIMIZED and inner == 1 and outer > 1
        kept = (outer, inner)
        return Computation(
            lambda x, out: (
                partial(kernel, x.reshape(blocks), eigen, spec.kernel_type is REFERENCE, out.reshape(kept)),
            )
        )
    divisor = np.array(count, spec.dtype)
    return Computation(
        lambda x, out: (
            partial(np.add.reduce, x, axes, None, out, True),
            partial(np.divide, out, divisor, out),
        )
    )


def _reduced_blocks(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(outer, reduced, inner): a non-empty input seen as blocks reduced over their middle axis (the
    compiled MEAN's operand, eigen_compiled.mean), where the dimensions other than 1s are kept ones, then
    reduced ones, then kept ones, as LiteRT's MEAN normalizes them; else None."""
    if 0 in shape:
        return None
    kinds = [axis in axes for axis, size in enumerate(shape) if size != 1]
    runs = [kind for i, kind in enumerate(kinds) if i == 0 or kind != kinds[i - 1]]
    if runs not in ([], [True], [False], [True, False], [False, True], [False, True, False]):
        return None
    sizes = [(axis in axes, size) for axis, size in enumerate(shape)]
    first = next((i for i, (reduced, size) in enumerate(sizes) if reduced and size != 1), len(sizes))
    outer = math.prod(size for reduced, size in sizes[:first] if not reduced)
    reduced = math.prod(size for is_reduced, size in sizes if is_reduced)
    return outer, reduced, math.prod(shape) // (outer * reduced)


def _sum(spec: ReduceSpec) -> Callable:
    if spec.source_quantization is not None:
        return quantized_sum(spec) if spec.kernel_type is OPTIMIZED else reference_quantized_sum(spec)
    return _plain(np.add)(spec)


def _prod(spec: ReduceSpec) -> Callable:
    if spec.source_quantization is not None:
        return quantized_prod(spec)
    return _plain(np.multiply)(spec)


def _extreme(ufunc: np.ufunc, lowest: bool) -> Reducer:
    """MAX/MIN: an empty slice gives the type's lowest/highest value."""

    def make(spec: ReduceSpec) -> Callable:
        limits = np.finfo(spec.dtype) if np.issubdtype(spec.dtype, np.floating) else np.iinfo(spec.dtype)
        initial = limits.min if lowest else limits.max
        axes = spec.axes

        return Computation(lambda x, out: (partial(ufunc.reduce, x, axes, None, out, True, initial),))

    return make


def _plain(ufunc: np.ufunc) -> Reducer:
    def make(spec: ReduceSpec) -> Callable:
        axes = spec.axes

        return Computation(lambda x, out: (partial(ufunc.reduce, x, axes, None, out, True),))

    return make


@dataclass(frozen=True)
class ReduceData:
    run: Callable[[np.ndarray, np.ndarray], None] | None  # None: the axis tensor is computed at run time
    kept: tuple[int, ...] = ()  # the output's shape with the reduced dimensions kept
    quantized: bool = False  # the reduction requantizes (its reducer gets the quantization parameters)
    arithmetic: HostArithmetic = X86  # the host's, read in prepare
    kernel_type: KernelType = OPTIMIZED  # which TFLite kernel the reducer follows


def _quantization_rule(op_name: str, source, output) -> bool:
    """Validate the quantized input and output of a reduction; True when it requantizes (MEAN and SUM of
    8/16-bit inputs, REDUCE_PROD of quantized int8/int16), False for a pass-through or plain integers."""
    if source.type not in QUANTIZED:
        return False
    if source.type == TensorType.INT16:
        ensure_eq(source.params.zero_point, 0, f"{op_name} int16 input zero point")
        ensure_eq(output.params.zero_point, 0, f"{op_name} int16 output zero point")
    if op_name == "REDUCE_PROD" and source.quantization is not None:
        ensure(
            source.type in (TensorType.INT8, TensorType.INT16),
            f"Unsupported quantized data type: {type_name(source.type)}",
        )
    elif op_name not in ("MEAN", "SUM"):
        # TFLite's generic reduction (MAX, MIN, plain integer PROD) passes raw values through
        ensure_same_quantization(source, output)
        return False
    for tensor, what in ((source, "input"), (output, "output")):
        ensure(
            tensor.params.scale > 0,
            f"{op_name} of {type_name(source.type)} needs a quantized {what} with a positive scale.",
        )
    return True


def reducer(op_name: str, make: Reducer, types: tuple[TensorType, ...]):
    """The prepare factory (by KernelType), invoke and calls functions of one reduction."""

    def spec_for(data: ReduceData, node, source, output, axes) -> ReduceSpec:
        quantized = data.quantized
        return ReduceSpec(
            tuple(source.shape),
            axes,
            source.dtype,
            bool(node.builtin_data.keep_dims),
            (source.params.scale, source.params.zero_point) if quantized else None,
            (output.params.scale, output.params.zero_point) if quantized else None,
            data.kernel_type,
            data.arithmetic,
        )

    def prepare_for(kernel_type: KernelType):
        def prepare(context, node):
            check_arity(node, 2)
            source, axis, output = (
                input_tensor(context, node, 0),
                input_tensor(context, node, 1),
                output_tensor(context, node),
            )
            ensure_type(source, types, "input", op_name)
            ensure_eq(output.type, source.type, f"{op_name} output type")
            ensure_type(axis, TensorType.INT32, "axis", op_name)
            data = ReduceData(
                None,
                quantized=_quantization_rule(op_name, source, output),
                arithmetic=context.host.arithmetic,
                kernel_type=kernel_type,
            )
            if axis.allocation_type not in (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO):
                node.user_data = data
                context.set_tensor_to_dynamic(output)
                return
            shape = tuple(source.shape)
            axes = resolve_axes(axis.data, len(shape))
            run = make(spec_for(data, node, source, output, axes))
            node.user_data = dataclasses.replace(data, run=run, kept=kept_shape(shape, axes))
            context.resize_tensor(output, reduced_shape(shape, axes, node.builtin_data.keep_dims))

        return prepare

    def invoke(context, node):
        tensors = context.tensors
        data = node.user_data
        source = tensors[node.inputs[0]]
        run, kept = data.run, data.kept
        if run is None:
            shape = tuple(source.shape)
            axes = resolve_axes(tensors[node.inputs[1]].data, len(shape))
            output = tensors[node.outputs[0]]
            context.resize_tensor(output, reduced_shape(shape, axes, node.builtin_data.keep_dims))
            run, kept = make(spec_for(data, node, source, output, axes)), kept_shape(shape, axes)
        run(source.data, tensors[node.outputs[0]].data.reshape(kept))

    def calls(context, node):
        """With constant axes, the calls on the input and the output viewed with the kept dimensions."""
        data = node.user_data
        if data.run is None:
            return None
        tensors = context.tensors
        return calls_on(
            data.run, tensors[node.inputs[0]].data, tensors[node.outputs[0]].data.reshape(data.kept)
        )

    return prepare_for, invoke, calls


_EXTREMES = (*NUMBERS, *QUANTIZED)


_INTEGER_PRODUCTS = (*NUMBERS, TensorType.UINT8, TensorType.INT8, TensorType.INT16)


# op: (reducer, types, versions, has a BUILTIN_REF variant)
_REDUCERS = {
    BuiltinOperator.MEAN: (_mean, (*NUMBERS, *QUANTIZED), (1, 3), True),
    BuiltinOperator.SUM: (_sum, (*NUMBERS, *QUANTIZED), (1, 2), True),
    BuiltinOperator.REDUCE_PROD: (_prod, _INTEGER_PRODUCTS, (1, 2), True),
    BuiltinOperator.REDUCE_MAX: (_extreme(np.maximum, lowest=True), _EXTREMES, (1, 3), False),
    BuiltinOperator.REDUCE_MIN: (_extreme(np.minimum, lowest=False), _EXTREMES, (1, 3), False),
    BuiltinOperator.REDUCE_ANY: (_plain(np.logical_or), (TensorType.BOOL,), (1, 1), False),
    BuiltinOperator.REDUCE_ALL: (_plain(np.logical_and), (TensorType.BOOL,), (1, 1), False),
}


for _op, (_compute, _types, _versions, _has_reference) in _REDUCERS.items():
    _prepare_for, _invoke, _calls = reducer(_op.name, _compute, _types)
    register_builtin(
        _op,
        _versions,
        types=_types,
        op_data=ReduceData,
        invoke=_invoke,
        calls=_calls,
        **({"prepare_for": _prepare_for} if _has_reference else {"prepare": _prepare_for(OPTIMIZED)}),
    )

"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D over NHWC inputs.

Only taps inside the input count: padded positions are skipped by the max and excluded from the
average's divisor (TFLite's filter_count). Three ways to compute, chosen in prepare:
- tap by tap (large outputs): each tap's strided input slice is folded into the output in place
  (np.maximum / np.add). Overlapping windows with a column stride first split the input into column
  phases (conv.column_steps), so that every fold runs along whole rows;
- one reduction of a stride-tricks view of all windows (conv.windows), when there are many taps per
  output element (small outputs, large filters);
- a plain reduction over H and W when one window covers the whole input (global pooling).

MAX_POOL_2D also takes int8, uint8 and int16: the max needs no requantization (input and output share
their quantization), only the fused activation becomes a clamp to the quantized range. Quantized
AVERAGE_POOL_2D needs TFLite's integer rounding and is not implemented yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.types import AllocationType, BuiltinOperator, TensorType
from ..errors import KernelError, ensure, ensure_eq, ensure_type, ensure_types_eq
from ..model.options import ActivationFunctionType
from .common import activation_clamp, check_arity, input_tensor, output_tensor, reject_quantized
from .conv import ColumnSteps, Window, column_steps, output_size, padding_before_after, stage_columns, windows
from .registry import register_builtin

_FLOAT = (TensorType.FLOAT32,)
_MAX_TYPES = (TensorType.FLOAT32, TensorType.INT8, TensorType.UINT8, TensorType.INT16)
_QUANTIZED = (TensorType.INT8, TensorType.UINT8, TensorType.INT16)

# A reduction over the windows view beats folding tap by tap when the output has fewer than this many
# elements per tap (each tap costs a few NumPy calls).
_ELEMENTS_PER_TAP = 1024


@dataclass
class PoolState:
    stage: int  # temporary: the input split into column phases
    squares: int  # temporary: the squared input (L2_POOL_2D)
    mode: str = "taps"  # "taps", "windows" or "global"
    window: Window | None = None
    plan: ColumnSteps | None = None
    count: np.ndarray | float = 1.0  # valid taps per output position ([OH, OW, 1]) or one number
    clamp: Callable[[np.ndarray], None] | None = None


def _pool_init(context, buffer, length):
    stage, squares = context.add_tensors(2)
    return PoolState(stage=stage, squares=squares)


def _scratch(context, index: int, tensor_type: TensorType, shape) -> None:
    scratch = context.tensors[index]
    scratch.type = tensor_type
    scratch.allocation_type = AllocationType.ARENA_RW
    context.resize_tensor(scratch, tuple(shape))


def _quantized_clamp(tensor, activation) -> Callable[[np.ndarray], None] | None:
    """The fused activation as a clamp to the output's quantized range (CalculateActivationRangeQuantized)."""
    info = np.iinfo(tensor.dtype)
    low, high = int(info.min), int(info.max)
    scale, zero_point = float(tensor.params.scale), int(tensor.params.zero_point)

    def quantize(value: float) -> int:
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.float32(value) / np.float32(scale)
        ensure(np.isfinite(scaled), "quantized activation range overflows int32")
        rounded = np.sign(scaled) * np.floor(np.abs(scaled) + np.float32(0.5))  # half away from zero
        return zero_point + int(rounded)

    if activation == ActivationFunctionType.RELU:
        low = max(low, quantize(0.0))
    elif activation == ActivationFunctionType.RELU6:
        low, high = max(low, quantize(0.0)), min(high, quantize(6.0))
    elif activation == ActivationFunctionType.RELU_N1_TO_1:
        low, high = max(low, quantize(-1.0)), min(high, quantize(1.0))
    else:
        return None
    return lambda out: np.clip(out, low, high, out=out)


def _output_hw(padding, size_hw, kernel, strides) -> tuple[int, int]:
    """TFLite's ComputePaddingHeightWidth: the width first; a negative one leaves both sizes 0, a
    negative height only the height."""
    try:
        width = output_size(padding, size_hw[1], kernel[1], strides[1], 1, checked=True)
    except KernelError:
        return 0, 0
    return output_size(padding, size_hw[0], kernel[0], strides[0], 1), width


def pool_prepare_for(op_name: str, types: tuple[TensorType, ...]):
    def prepare(context, node):
        check_arity(node, 1)
        options = node.builtin_data
        state = node.user_data
        source, output = input_tensor(context, node, 0), output_tensor(context, node)
        ensure_eq(len(source.shape), 4, f"{op_name} input rank")
        ensure_types_eq(source, output, f"{op_name} input/output types")
        if source.type not in types:
            reject_quantized(source, op_name)
        ensure_type(source, types, "input", op_name)
        ensure(options.stride_h > 0 and options.stride_w > 0, f"{op_name} strides must be positive")
        n, h, w, channels = source.shape
        kernel = (options.filter_height, options.filter_width)
        strides = (options.stride_h, options.stride_w)
        out = _output_hw(options.padding, (h, w), kernel, strides)
        pads = tuple(
            padding_before_after((h, w)[i], max(kernel[i], 1), strides[i], 1, out[i]) for i in range(2)
        )
        window = Window(kernel, strides, (1, 1), pads, out)
        context.resize_tensor(output, (n, *out, channels))
        state.window = window
        if source.type in _QUANTIZED:
            state.clamp = _quantized_clamp(output, options.fused_activation_function)
        else:
            state.clamp = activation_clamp(options.fused_activation_function)
        temporaries = []
        if op_name == "L2_POOL_2D":
            _scratch(context, state.squares, source.type, source.shape)
            temporaries.append(state.squares)
        state.plan, state.count = None, float(kernel[0] * kernel[1])
        if min(out) == 0 or n * channels == 0:
            state.mode = "taps"
            state.plan = column_steps(source.shape, window, staged=False)
        elif out == (1, 1) and kernel == (h, w) and not any(sum(pads, ())):
            state.mode = "global"
        else:
            overlapping = kernel[0] * kernel[1] > strides[0] * strides[1]
            plan = column_steps(source.shape, window, staged=overlapping and strides[1] > 1)
            taps = len(plan.steps)
            state.mode = "windows" if n * out[0] * out[1] * channels < _ELEMENTS_PER_TAP * taps else "taps"
            if state.mode == "taps":
                state.plan = plan
                if plan.stage_shape is not None:
                    _scratch(context, state.stage, source.type, plan.stage_shape)
                    temporaries.append(state.stage)
            if any(sum(pads, ())):  # some windows hang over the edge: fewer valid taps there
                counts = np.zeros(out, np.float32)
                for region, _, _, _ in plan.steps:
                    counts[region[1:3]] += 1
                state.count = counts[:, :, None] if counts.min() != counts.max() else float(counts.flat[0])
        if state.stage not in temporaries and context.tensors[state.stage].type is not None:
            # staged by an earlier prepare (another input shape): keep it planned, but empty
            _scratch(context, state.stage, source.type, (0,))
            temporaries.append(state.stage)
        node.temporaries = tuple(temporaries)

    return prepare


def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _fold(context, node, x: np.ndarray, out: np.ndarray, ufunc: np.ufunc, initial) -> None:
    """out = the ufunc-fold of every tap's input slice."""
    plan = node.user_data.plan
    if plan.stage_shape is not None:
        stage = context.tensors[node.temporaries[-1]].data
        stage_columns(x, stage, plan)
        x = stage
    steps = plan.steps
    if plan.direct:
        np.copyto(out, x[steps[0][1]])
        steps = steps[1:]
    else:
        out.fill(initial)
    for dst, src, _, _ in steps:
        region = out[dst]
        ufunc(region, x[src], out=region)


def _reduce(context, node, x: np.ndarray, out: np.ndarray, ufunc: np.ufunc, pad_value) -> None:
    state = node.user_data
    if state.mode == "taps":
        _fold(context, node, x, out, ufunc, pad_value)
    elif state.mode == "global":
        ufunc.reduce(x.reshape(x.shape[0], -1, x.shape[3]), axis=1, out=out.reshape(out.shape[0], -1))
    else:
        ufunc.reduce(windows(x, state.window, pad_value), axis=(3, 4), out=out)


def max_pool_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    x = tensors[node.inputs[0]].data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    _reduce(context, node, x, out, np.maximum, _lowest(x.dtype))
    if state.clamp is not None:
        state.clamp(out)


def average_pool_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    _reduce(context, node, tensors[node.inputs[0]].data, out, np.add, 0)
    np.divide(out, state.count, out=out)
    if state.clamp is not None:
        state.clamp(out)


def l2_pool_invoke(context, node):
    tensors = context.tensors
    state = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    squares = tensors[node.temporaries[0]].data
    np.square(tensors[node.inputs[0]].data, out=squares)
    _reduce(context, node, squares, out, np.add, 0)
    np.divide(out, state.count, out=out)
    np.sqrt(out, out=out)
    if state.clamp is not None:
        state.clamp(out)


for _op, _versions, _types, _invoke in (
    (BuiltinOperator.AVERAGE_POOL_2D, (1, 3), _FLOAT, average_pool_invoke),
    (BuiltinOperator.MAX_POOL_2D, (1, 3), _MAX_TYPES, max_pool_invoke),
    (BuiltinOperator.L2_POOL_2D, (1, 1), _FLOAT, l2_pool_invoke),
):
    register_builtin(
        _op,
        _versions,
        types=_types,
        init=_pool_init,
        prepare=pool_prepare_for(_op.name, _types),
        invoke=_invoke,
    )

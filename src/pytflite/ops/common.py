"""Helpers every kernel family uses: input/output access with arity checks, broadcasting, fused activations,
temporaries."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from operator import setitem

import numpy as np

from ..core.context import Context
from ..core.node import OPTIONAL_TENSOR, Node
from ..core.step_program import Written
from ..core.tensor import Tensor
from ..core.types import AllocationType, TensorType
from ..errors import KernelError, ensure
from ..model.options import ActivationFunctionType

# NumPy's clip ufunc itself: np.clip's Python layer costs more than clamping a small tensor (~1 us a call).
try:
    from numpy._core.umath import clip
except ImportError:  # NumPy 1.x
    from numpy.core.umath import clip

# Every element type a pure data-movement kernel (reshape, gather, concat, ...) can copy.
ANY_TYPE = tuple(t for t in TensorType if t not in (TensorType.RESOURCE, TensorType.VARIANT))


class Computation:
    """A computation on arrays given by its calls (the kernels' side of Registration.calls):
    `calls(*arrays)` makes the calls of nothing that compute it on those arrays (a tuple of them, or one
    Written statement); calling it with the arrays computes it, as an invoke does: by `run(*arrays)`
    where given (the same computation without making the calls; required where the calls are a Written
    statement), else by making the calls. calls_on turns any compute function into calls, so a kernel's
    calls come from the function its op data holds."""

    __slots__ = ("calls", "run")

    def __init__(self, calls: Callable[..., tuple | Written], run: Callable[..., None] | None = None):
        self.calls = calls
        self.run = run if run is not None else self._make_calls

    def __call__(self, *arrays: np.ndarray) -> None:
        self.run(*arrays)

    def _make_calls(self, *arrays: np.ndarray) -> None:
        for call in self.calls(*arrays):
            call()


def make_calls(calls: Iterable[Callable[[], object]]) -> None:
    """Make each of a kernel's calls in order (an invoke running what Registration.calls returns)."""
    for call in calls:
        call()


def calls_on(compute: Callable, *arrays: np.ndarray) -> tuple | Written:
    """compute(*arrays) as calls (Registration.calls): a Computation's own, else the one call of
    `compute` (a NumPy ufunc takes its out positionally)."""
    if isinstance(compute, Computation):
        return compute.calls(*arrays)
    return (partial(compute, *arrays),)


def copy_calls(out: np.ndarray, view: np.ndarray, source: np.ndarray) -> tuple | None:
    """The call copying `view`, a view of the array `source`, into `out` (Registration.calls); None
    where NumPy could not make it a view (a reshape regrouping strided elements copies), so that it
    would hold old values."""
    if view.size and not np.may_share_memory(view, source):
        return None
    return (partial(setitem, out, Ellipsis, view),)


def check_arity(node: Node, inputs: int | Sequence[int], outputs: int = 1) -> None:
    """Fail unless the node has one of the allowed input counts and exactly `outputs` outputs."""
    allowed = (inputs,) if isinstance(inputs, int) else tuple(inputs)
    if len(node.inputs) not in allowed:
        expected = " or ".join(str(n) for n in allowed)
        raise KernelError(f"input count {len(node.inputs)} != {expected}")
    if len(node.outputs) != outputs:
        raise KernelError(f"output count {len(node.outputs)} != {outputs}")


def input_tensor(context: Context, node: Node, i: int) -> Tensor:
    index = node.inputs[i]
    if index == OPTIONAL_TENSOR:
        raise KernelError(f"Tensor at index {i} was optional but was expected")
    return context.tensors[index]


def optional_input_tensor(context: Context, node: Node, i: int) -> Tensor | None:
    if i >= len(node.inputs) or node.inputs[i] == OPTIONAL_TENSOR:
        return None
    return context.tensors[node.inputs[i]]


def output_tensor(context: Context, node: Node, i: int = 0) -> Tensor:
    index = node.outputs[i]
    if index == OPTIONAL_TENSOR:  # -1 would silently index the last tensor
        raise KernelError(f"Tensor at index {i} was optional but was expected")
    return context.tensors[index]


def broadcast_shape(first: Sequence[int], second: Sequence[int]) -> tuple[int, ...]:
    """The NumPy/TFLite broadcast of two shapes, with TFLite's error when they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(tuple(first), tuple(second)))
    except ValueError:
        raise KernelError(
            f"Given shapes, [{','.join(map(str, first))}] and [{','.join(map(str, second))}], are not broadcastable."
        ) from None


def activation_clamp(activation: ActivationFunctionType) -> Callable[[np.ndarray], None] | None:
    """The in-place clamp a fused activation applies to a float result, or None for no-op.

    TFLite's CalculateActivationRange knows only the three ReLU variants; any other fused activation
    (TANH, SIGN_BIT) leaves the output unclamped in the elementwise kernels, and so it does here.
    """
    if activation not in _CLAMP_RANGES:
        return None
    low, high = (np.array(v, np.float32) for v in _CLAMP_RANGES[activation])
    return lambda out: clip(out, low, high, out=out)


_CLAMP_RANGES = {
    ActivationFunctionType.RELU: (0.0, np.inf),
    ActivationFunctionType.RELU6: (0.0, 6.0),
    ActivationFunctionType.RELU_N1_TO_1: (-1.0, 1.0),
}


def float_activation_range(activation: ActivationFunctionType) -> tuple[float, float]:
    """CalculateActivationRange: the float clamp of a fused activation (none, -inf to inf, for the
    others)."""
    return _CLAMP_RANGES.get(activation, (-np.inf, np.inf))


def add_scratch_tensors(context: Context, count: int) -> tuple[int, ...]:
    """context.add_tensors for a builtin kernel's own scratch memory (typed and sized later with
    scratch_tensor): marked kernel_scratch, so the Python API's tensor listing leaves them out (TFLite's
    kernels have other temporaries, or none)."""
    indices = context.add_tensors(count)
    for index in indices:
        context.tensors[index].kernel_scratch = True
    return indices


def scratch_tensor(context: Context, index: int, tensor_type: TensorType, shape: Sequence[int]) -> None:
    """Type and size an arena temporary a kernel's init added (context.add_tensors)."""
    scratch = context.tensors[index]
    scratch.type = tensor_type
    scratch.allocation_type = AllocationType.ARENA_RW
    context.resize_tensor(scratch, tuple(shape))


def check_scratch(context: Context, what: str, shape: Sequence[int], dtype) -> None:
    """Hold an array a kernel makes for itself in prepare (not an arena temporary) to the interpreter's
    Limits, before making it: shapes that follow options or data can ask for any amount of memory."""
    limits = context.subgraph.limits
    if limits is not None:
        limits.check_scratch(what, shape, np.dtype(dtype).itemsize)


def set_temporaries(context: Context, node: Node, owned: Sequence[int], used: Sequence[int]) -> None:
    """node.temporaries = `used`. A temporary of `owned` that an earlier prepare (another input shape)
    sized and this plan leaves unused is emptied: the arena would go on placing its bytes."""
    for index in owned:
        if index not in used and context.tensors[index].type is not None:
            context.resize_tensor(context.tensors[index], (0,))
    node.temporaries = tuple(used)


# Element types that carry affine quantization: their arithmetic needs requantization.
QUANTIZED_TYPES = (TensorType.UINT8, TensorType.INT8, TensorType.INT16, TensorType.INT4)


def reject_quantized(tensor: Tensor, op_name: str) -> None:
    """Fail on a quantized input: a kernel variant not written yet, distinct from an invalid model."""
    if tensor.type in QUANTIZED_TYPES:
        raise KernelError(f"{op_name} of a quantized {tensor.type.name} input is not supported yet")


def reject_quantized_or_hybrid(source: Tensor, weights: Tensor, op_name: str) -> None:
    """Also fail on hybrid quantization: float32 activations with integer weights."""
    if source.type == TensorType.FLOAT32 and weights.type in QUANTIZED_TYPES:
        raise KernelError(
            f"{op_name} of a FLOAT32 input with {weights.type.name} weights (hybrid quantization) is not supported yet"
        )
    reject_quantized(source, op_name)


def ensure_same_quantization(source, output) -> None:
    """Min/max-like kernels pass quantized values through: the output must use the input's scale and
    zero point (and int16 a zero point of 0)."""
    ensure(
        source.params.scale == output.params.scale,
        f"input scale {source.params.scale} != output scale {output.params.scale}",
    )
    ensure(
        source.params.zero_point == output.params.zero_point,
        f"input zero_point {source.params.zero_point} != output zero_point {output.params.zero_point}",
    )
    if source.type == TensorType.INT16:
        ensure(source.params.zero_point == 0, f"int16 zero_point {source.params.zero_point} != 0")


# Integer types np.take, np.put, np.repeat and np.choose refuse as indices: they cast indices to np.intp
# only when the cast is safe, and np.intp is int32 on 32-bit NumPy (Pyodide's wasm32, armv7, i386).
_NOT_INTP_SAFE = frozenset(
    np.dtype(t) for t in (np.int64, np.uint32, np.uint64) if not np.can_cast(t, np.intp)
)


# The TensorType of np.intp, for an arena temporary holding np.take's indices (int32 on 32-bit NumPy).
INTP_TYPE = TensorType.INT64 if np.dtype(np.intp).itemsize == 8 else TensorType.INT32


def as_indices(values: np.ndarray) -> np.ndarray:
    """`values`, indices the caller has bounds-checked, in a type np.take accepts: unchanged (no copy)
    when it casts safely to np.intp, as int32 always and int64 on 64-bit NumPy do; else as np.intp."""
    return values.astype(np.intp) if values.dtype in _NOT_INTP_SAFE else values

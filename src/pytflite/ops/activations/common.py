"""What the activation kernels share: the element types, float32 constants, the one-input checks and
registration, blockwise evaluation, and the op data and invokes of the ops computed by one
`compute(x, out)`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType
from ...errors import ensure_type, ensure_types_eq
from ..common import calls_on, check_arity, input_tensor, output_tensor
from ..jit import compiled
from ..kernel_type import OPTIMIZED, KernelType
from ..registry import register_builtin

FLOAT = (TensorType.FLOAT32,)
U8, I8, I16 = TensorType.UINT8, TensorType.INT8, TensorType.INT16
BYTES = (U8, I8)
QUANTIZED = (U8, I8, I16)
DTYPES = {U8: np.dtype(np.uint8), I8: np.dtype(np.int8), I16: np.dtype(np.int16)}
ALL = FLOAT + QUANTIZED


def f32(value: float) -> np.ndarray:
    return np.array(value, np.float32)


ZERO, ONE, MINUS_ONE, THREE, SIX = f32(0), f32(1), f32(-1), f32(3), f32(6)
INF, MINUS_INF = f32(np.inf), f32(-np.inf)

# Long ufunc chains run block by block over the flattened tensor, so that their intermediates stay in
# the CPU cache instead of streaming whole-tensor temporaries through memory.
BLOCK = 32768


def in_blocks(compute: Callable, block: int = BLOCK) -> Callable:
    """`compute(x, out)` applied to consecutive blocks of `block` elements (a multiple of 4)."""

    def run(x, out):
        size = out.size
        if size <= block or not out.flags.c_contiguous:
            compute(x, out)
            return
        flat, flat_out = x.reshape(-1), out.reshape(-1)
        for start in range(0, size, block):
            compute(flat[start : start + block], flat_out[start : start + block])

    return run


def check_unary(context, node, op_name: str, types: tuple[TensorType, ...]):
    """Checks of a one-input op whose output has the input's type and shape; resizes the output."""
    check_arity(node, 1)
    source, output = input_tensor(context, node, 0), output_tensor(context, node)
    ensure_type(source, types, "input", op_name)
    ensure_types_eq(source, output, f"{op_name} input/output types")
    context.resize_tensor(output, source.shape)
    return source, output


@dataclass(frozen=True, slots=True)
class ActivationData:
    """The op data of the activations computed by one function, picked in prepare for the input's type
    and parameters (LEAKY_RELU, PRELU and LOCAL_RESPONSE_NORMALIZATION have their own)."""

    compute: Callable[[np.ndarray, np.ndarray], None]  # compute(x, out)


def _float_compute(compute: Callable, compiled_float: tuple[str, str] | None) -> Callable:
    kernel = None if compiled_float is None else compiled(*compiled_float)
    if kernel is None:
        return compute

    def run(x, out):
        if x.flags.c_contiguous and out.flags.c_contiguous:  # flat views of the tensors' buffers
            kernel(x.reshape(-1), out.reshape(-1))
        else:
            compute(x, out)

    return run


def compute_invoke(context, node):
    """Invoke of the ops whose prepare leaves an ActivationData."""
    tensors = context.tensors
    node.user_data.compute(tensors[node.inputs[0]].data, tensors[node.outputs[0]].data)


def unary_calls(float_calls: Callable | None = None, compute: Callable | None = None) -> Callable:
    """Registration.calls of the ops registered by unary_kernel: `float_calls(x, out)` where given for a
    float32 input the NumPy `compute` runs (None: not for these arrays), else the call of the function
    prepare picked (the compiled kernel where it took one) on the node's arrays."""

    def calls(context, node):
        tensors = context.tensors
        source = tensors[node.inputs[0]]
        x, out = source.data, tensors[node.outputs[0]].data
        if (
            float_calls is not None
            and source.type == TensorType.FLOAT32
            and node.user_data.compute is compute
        ):
            made = float_calls(x, out)
            if made is not None:
                return made
        return calls_on(node.user_data.compute, x, out)

    return calls


def unary_kernel(
    op: BuiltinOperator,
    versions: tuple[int, int],
    compute: Callable,
    quantized: Callable | None = None,
    types: tuple[TensorType, ...] = FLOAT,
    float_calls: Callable | None = None,
    quantized_for: Callable[[KernelType], Callable] | None = None,
    compiled_float: tuple[str, str] | None = None,
) -> None:
    """Register a one-input op: `compute(x, out)` for float32, `quantized(input, output, arithmetic)` making
    the compute function of the other `types` in prepare (`arithmetic`: the host's, for its
    float-to-int conversions);
    `float_calls(x, out)` the float32 calls with their own scratch (see unary_calls);
    `quantized_for(kernel_type)`, given instead of `quantized` where BUILTIN_REF's kernel differs, makes
    `quantized` for each kernel type; `compiled_float` (module, function): a compiled `compute` over flat
    arrays, taken in prepare where compiled kernels run (ops/jit.py)."""

    def prepare_for(kernel_type: KernelType) -> Callable:
        quantized_for_types = quantized if quantized_for is None else quantized_for(kernel_type)

        def prepare(context, node):
            source, output = check_unary(context, node, op.name, types)
            if source.type == TensorType.FLOAT32:
                node.user_data = ActivationData(_float_compute(compute, compiled_float))
            else:
                node.user_data = ActivationData(quantized_for_types(source, output, context.host.arithmetic))

        return prepare

    twins = {"prepare": prepare_for(OPTIMIZED)} if quantized_for is None else {"prepare_for": prepare_for}
    register_builtin(
        op,
        versions,
        types=types,
        op_data=ActivationData,
        invoke=compute_invoke,
        calls=unary_calls(float_calls, compute),
        **twins,
    )


def nonempty_invoke(context, node):
    """SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION: the ActivationData's compute, unless the output is empty."""
    tensors = context.tensors
    out = tensors[node.outputs[0]].data
    if out.size:
        node.user_data.compute(tensors[node.inputs[0]].data, out)


def as_rows(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1, x.shape[-1]) if x.ndim else x.reshape(1, 1)

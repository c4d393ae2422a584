"""PartitionGraph: the ONNX graph one delegated partition becomes, built node by node by the translators.

It knows the TFLite tensors of the partition and hands each translator ONNX value names for them:

- constants (MmapRo / PersistentRo tensors) become initializers, converted once per layout;
- 4-D (and 5-D) values carry a layout: TFLite's channels-last, or channels-first (NCHW / NCDHW), which
  is what ONNX's Conv, pooling, Resize, DepthToSpace and LRN want. A value is transposed only when a
  consumer asks for the other layout, and each transposition is made once, so a CNN partition switches
  layout at its boundary and stays channels-first inside;
- quantized tensors (int8/uint8 with affine parameters, only when the delegate allows quantized nodes)
  are seen by translators as float: a DequantizeLinear is put after each one and a QuantizeLinear
  before each quantized output, the QDQ form ONNX Runtime fuses into QLinearConv / QLinearMatMul /
  QLinearAdd and friends.

Translators raise Unsupported when a node falls outside what they translate exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ...core.node import OPTIONAL_TENSOR
from ...core.quantization import AffineQuantization
from ...core.tensor import Tensor
from ...core.types import AllocationType, TensorType

OPSET = 20

ONNX_TYPES = {
    TensorType.FLOAT32: TensorProto.FLOAT,
    TensorType.FLOAT16: TensorProto.FLOAT16,
    TensorType.INT32: TensorProto.INT32,
    TensorType.INT64: TensorProto.INT64,
    TensorType.INT16: TensorProto.INT16,
    TensorType.INT8: TensorProto.INT8,
    TensorType.UINT8: TensorProto.UINT8,
    TensorType.BOOL: TensorProto.BOOL,
}
QUANTIZED_TYPES = (TensorType.INT8, TensorType.UINT8)
_CONSTANT = (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO)

# A layout is the permutation that takes a TFLite (channels-last) value to the ONNX value: None is
# TFLite's own order.
CHANNELS_FIRST = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}


class Unsupported(Exception):
    """The node cannot be translated exactly; the message says why (is_node_supported's reason)."""


def channels_first(rank: int) -> tuple[int, ...] | None:
    return CHANNELS_FIRST.get(rank)


def inverse(perm: Sequence[int]) -> tuple[int, ...]:
    result = [0] * len(perm)
    for i, p in enumerate(perm):
        result[p] = i
    return tuple(result)


def permute_axis(axis: int, layout: Sequence[int] | None) -> int:
    """Where TFLite axis `axis` (non-negative) lies in a value of this layout."""
    return axis if layout is None else inverse(layout)[axis]


def is_quantized(tensor: Tensor) -> bool:
    q = tensor.quantization
    return (
        tensor.type in QUANTIZED_TYPES
        and isinstance(q, AffineQuantization)
        and q.scale.size > 0
        and q.zero_point.size > 0
    )


class PartitionGraph:
    """The ONNX graph under construction for one partition (or for one node, to test support)."""

    def __init__(
        self,
        tensors: Sequence[Tensor],
        *,
        allow_quantized: bool = False,
        relax_fp16: bool = False,
        from_shapes: frozenset[int] = frozenset(),
    ):
        self.tensors = tensors
        self.allow_quantized = allow_quantized
        # tensors not constant yet whose values follow from constants and shapes (folded in prepare,
        # before a partition's session is made): what a support test may take as constants
        self.from_shapes = from_shapes
        self.relax_fp16 = relax_fp16  # keep float16 constants float16 (converted to a float16 graph later)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.input_tensors: list[int] = []  # TFLite tensors fed at run time, in ONNX input order
        self._values: dict[int, tuple[str, tuple[int, ...] | None]] = {}  # t -> (name, layout)
        self._views: dict[tuple[int, Any], str] = {}  # (t, layout) -> name, for each layout made
        self._floats: dict[tuple[int, Any], str] = {}  # dequantized views of quantized tensors
        self._counter = 0

    # --- names ------------------------------------------------------------------------------------

    def fresh(self, hint: str = "v") -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    # --- TFLite tensors ---------------------------------------------------------------------------

    def tensor(self, t: int) -> Tensor:
        return self.tensors[t]

    def shape(self, t: int) -> tuple[int, ...]:
        return tuple(self.tensors[t].shape)

    def rank(self, t: int) -> int:
        return len(self.tensors[t].shape)

    def is_constant(self, t: int) -> bool:
        tensor = self.tensors[t]
        return tensor.allocation_type in _CONSTANT and tensor.data is not None

    def constant(self, t: int) -> np.ndarray | None:
        """The value of a constant tensor (None for a run-time value or an absent optional input)."""
        if t == OPTIONAL_TENSOR or not self.is_constant(t):
            return None
        return np.asarray(self.tensors[t].data)

    def known_in_prepare(self, t: int) -> bool:
        """Whether a tensor's value is known once the partition is prepared: a constant, or computed
        from constants and shapes alone (`from_shapes`)."""
        return self.is_constant(t) or t in self.from_shapes

    def require_constant(self, t: int, what: str) -> np.ndarray:
        value = self.constant(t)
        if value is None:
            raise Unsupported(f"{what} must be a constant")
        return value

    def quantized(self, t: int) -> bool:
        """A quantized tensor this graph handles in float (DequantizeLinear after it)."""
        return self.allow_quantized and is_quantized(self.tensors[t])

    def layout(self, t: int) -> tuple[int, ...] | None:
        """The layout a run-time value currently has in the graph (None: TFLite's)."""
        if self.is_constant(t) or t not in self._values:
            return None
        return self._values[t][1]

    def onnx_type(self, t: int) -> int:
        tensor_type = self.tensors[t].type
        if tensor_type not in ONNX_TYPES:
            raise Unsupported(f"tensor type {tensor_type!r} has no ONNX equivalent here")
        return ONNX_TYPES[tensor_type]

    def check_types(self, tensors: Sequence[int], allowed: Sequence[TensorType], what: str = "") -> None:
        """Every present tensor has an allowed type; a quantized int8/uint8 tensor counts as FLOAT32
        when quantized nodes are allowed, and is refused otherwise."""
        for t in tensors:
            if t == OPTIONAL_TENSOR:
                continue
            tensor = self.tensors[t]
            if tensor.type in QUANTIZED_TYPES and is_quantized(tensor):
                if not self.allow_quantized:
                    raise Unsupported("quantized tensors stay on the CPU kernels (allow_quantized=False)")
                if TensorType.FLOAT32 in allowed:
                    continue
            if tensor.type not in allowed:
                names = ", ".join(a.name for a in allowed)
                raise Unsupported(f"{what or 'tensor'} #{t} is {tensor.type!r}, not one of {names}")

    # --- values -----------------------------------------------------------------------------------

    def value(self, t: int, layout: Sequence[int] | None = None) -> str:
        """The ONNX name of tensor `t` in `layout` (float, for a quantized tensor)."""
        layout = tuple(layout) if layout is not None else None
        if self.quantized(t):
            key = (t, layout)
            if key not in self._floats:
                self._floats[key] = self._dequantize(t, layout)
            return self._floats[key]
        return self.raw(t, layout)

    def raw(self, t: int, layout: Sequence[int] | None = None) -> str:
        """The ONNX name of tensor `t` in `layout`, in its own element type."""
        layout = tuple(layout) if layout is not None else None
        key = (t, layout)
        if key in self._views:
            return self._views[key]
        if self.is_constant(t):
            data = np.asarray(self.tensors[t].data)
            if self.tensors[t].type == TensorType.FLOAT16 and data.dtype != np.float16:
                data = data.view(np.float16)
            name = self.const(data if layout is None else np.transpose(data, layout), f"c{t}")
        else:
            if t not in self._values:
                self._add_input(t)
            base, current = self._values[t]
            if current == layout:
                name = base
            else:  # value[current] -> tflite order -> value[layout]
                to_tflite = inverse(current) if current is not None else tuple(range(self.rank(t)))
                perm = to_tflite if layout is None else tuple(to_tflite[i] for i in layout)
                name = self.op("Transpose", [base], perm=list(perm))
        self._views[key] = name
        return name

    def _add_input(self, t: int) -> None:
        tensor = self.tensors[t]
        name = f"t{t}"
        shape = list(tensor.shape) or [1]  # 0-d values cross the boundary as [1] (IO binding needs a dim)
        self.inputs.append(helper.make_tensor_value_info(name, self.onnx_type(t), shape))
        self.input_tensors.append(t)
        if not tensor.shape:
            name = self.op("Reshape", [name, self.ints([])])
        self._values[t] = (name, None)
        self._views[(t, None)] = name

    def define(self, t: int, name: str, layout: Sequence[int] | None = None) -> None:
        """Record that ONNX value `name` (float, when `t` is quantized) holds tensor `t` in `layout`."""
        layout = tuple(layout) if layout is not None else None
        if self.quantized(t):
            self._floats[(t, layout)] = name
            name = self._quantize(t, name, layout)
        self._values[t] = (name, layout)
        self._views[(t, layout)] = name

    # --- quantization -----------------------------------------------------------------------------

    def _quant_params(self, t: int, layout: tuple[int, ...] | None) -> tuple[list[str], dict[str, int]]:
        tensor = self.tensors[t]
        q = tensor.quantization
        zero_dtype = np.int8 if tensor.type == TensorType.INT8 else np.uint8
        scale = np.asarray(q.scale, np.float32)
        zero = np.asarray(q.zero_point).astype(zero_dtype)
        attrs = {}
        if scale.size > 1:
            attrs["axis"] = permute_axis(q.quantized_dimension, layout)
        else:
            scale, zero = scale.reshape(()), zero.reshape(())
        return [self.const(scale, f"s{t}"), self.const(zero, f"z{t}")], attrs

    def _dequantize(self, t: int, layout: tuple[int, ...] | None) -> str:
        raw = self.raw(t, layout)
        params, attrs = self._quant_params(t, layout)
        return self.op("DequantizeLinear", [raw, *params], **attrs)

    def _quantize(self, t: int, name: str, layout: tuple[int, ...] | None) -> str:
        params, attrs = self._quant_params(t, layout)
        return self.op("QuantizeLinear", [name, *params], **attrs)

    def bias(self, t: int, input_t: int, weight_t: int) -> str | None:
        """A convolution's bias as float: int32 quantized biases are dequantized with the product of
        the input and weight scales (the QDQ pattern ONNX Runtime folds into QLinearConv)."""
        if t == OPTIONAL_TENSOR:
            return None
        tensor = self.tensors[t]
        if tensor.type == TensorType.FLOAT32:
            return self.value(t)
        if not (self.allow_quantized and tensor.type == TensorType.INT32 and self.quantized(input_t)):
            raise Unsupported(f"bias #{t} of type {tensor.type!r}")
        data = self.require_constant(t, "a quantized bias")
        w = self.tensors[weight_t].quantization
        scale = np.asarray(self.tensors[input_t].quantization.scale, np.float32) * np.asarray(
            w.scale, np.float32
        )
        zero = np.zeros(scale.shape, np.int32)
        attrs = {"axis": 0} if scale.size > 1 else {}
        if scale.size == 1:
            scale, zero = scale.reshape(()), zero.reshape(())
        return self.op(
            "DequantizeLinear",
            [self.const(data, f"c{t}"), self.const(scale, f"bs{t}"), self.const(zero, f"bz{t}")],
            **attrs,
        )

    # --- building ---------------------------------------------------------------------------------

    def const(self, value: np.ndarray | float | int | Sequence, hint: str = "k", dtype: Any = None) -> str:
        array = np.asarray(value, dtype=dtype)
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def ints(self, values: Sequence[int]) -> str:
        """An int64 1-D constant (axes, shapes, pads, starts/ends)."""
        return self.const(np.asarray(list(values), np.int64), "i")

    def op(self, op_type: str, inputs: Sequence[str | None], outputs: int = 1, **attrs: Any) -> Any:
        """Append a node; returns its output name (a list of names when `outputs` > 1)."""
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, ["" if i is None else i for i in inputs], names, **attrs))
        return names[0] if outputs == 1 else names

    def add_output(self, t: int) -> None:
        """Make tensor `t`, in TFLite's layout and type, an output of the graph named `o<t>`."""
        name = self.raw(t, None)
        out = f"o{t}"
        if self.shape(t):
            self.nodes.append(helper.make_node("Identity", [name], [out]))
        else:
            self.nodes.append(helper.make_node("Reshape", [name, self.ints([1])], [out]))
        shape = list(self.shape(t)) or [1]
        self.outputs.append(helper.make_tensor_value_info(out, self.onnx_type(t), shape))

    def model(self, name: str = "partition") -> Any:
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 9
        return model

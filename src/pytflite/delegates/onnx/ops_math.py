"""Elementwise and reduction ops: arithmetic, comparisons, logic, unary math, activations, softmax
family, normalizations, reductions, CAST and SELECT.

Elementwise ops follow their inputs' layout: when the run-time inputs are channels-first 4-D values,
they stay so (constants are broadcast and permuted at translation time), which keeps residual ADDs
and activations between convolutions free of transposes.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ...core.node import Node
from ...core.types import BuiltinOperator as Op
from ...core.types import TensorType
from .graph import ONNX_TYPES, PartitionGraph, Unsupported, channels_first, permute_axis
from .registry import activation, arity, fused, translates

F32 = TensorType.FLOAT32
_NUMERIC = (F32, TensorType.INT32, TensorType.INT64)
_EXACT_INT = (TensorType.INT32, TensorType.INT64)


def broadcast(g: PartitionGraph, inputs: list[int], output: int) -> tuple[list[str], tuple | None]:
    """Input names for a broadcasting op and the layout its output gets.

    Channels-first when every run-time input has the output's rank and one of them is already
    channels-first; lower-rank constants are then broadcast to that rank and permuted."""
    rank = g.rank(output)
    layout = channels_first(rank)
    runtime = [t for t in inputs if not g.is_constant(t)]
    if not (
        layout
        and runtime
        and all(g.rank(t) == rank for t in runtime)
        and any(g.layout(t) == layout for t in runtime)
        and not any(g.quantized(t) and g.rank(t) != rank for t in inputs)
    ):
        layout = None
    names = []
    for t in inputs:
        if layout is not None and g.rank(t) != rank:
            data = g.constant(t)
            data = data.reshape((1,) * (rank - data.ndim) + data.shape)
            names.append(g.const(np.transpose(data, layout), f"c{t}"))
        else:
            names.append(g.value(t, layout))
    return names, layout


_BINARY = {
    Op.ADD: "Add",
    Op.SUB: "Sub",
    Op.MUL: "Mul",
    Op.DIV: "Div",
    Op.MAXIMUM: "Max",
    Op.MINIMUM: "Min",
    Op.POW: "Pow",
}
_COMPARE = {
    Op.EQUAL: "Equal",
    Op.LESS: "Less",
    Op.LESS_EQUAL: "LessOrEqual",
    Op.GREATER: "Greater",
    Op.GREATER_EQUAL: "GreaterOrEqual",
    Op.NOT_EQUAL: "Equal",
}
_LOGICAL = {Op.LOGICAL_AND: "And", Op.LOGICAL_OR: "Or"}


@translates(*_BINARY, Op.SQUARED_DIFFERENCE, Op.FLOOR_DIV, Op.FLOOR_MOD)
def binary(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 2)
    a, b = node.inputs
    y = node.outputs[0]
    if g.tensor(a).type == F32 or g.quantized(a):
        g.check_types([a, b, y], (F32,))
    elif op in (Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM, Op.FLOOR_MOD):
        g.check_types([a, b, y], _EXACT_INT)
    else:
        raise Unsupported(f"{g.tensor(a).type!r} operands")
    if g.quantized(a) and op in (Op.FLOOR_DIV, Op.FLOOR_MOD, Op.POW):
        raise Unsupported("quantized FLOOR_DIV / FLOOR_MOD / POW")
    (x, z), layout = broadcast(g, [a, b], y)
    if op in _BINARY:
        out = g.op(_BINARY[op], [x, z])
    elif op == Op.SQUARED_DIFFERENCE:
        d = g.op("Sub", [x, z])
        out = g.op("Mul", [d, d])
    elif op == Op.FLOOR_DIV:
        out = g.op("Floor", [g.op("Div", [x, z])])
    elif g.tensor(a).type != F32:  # FLOOR_MOD on integers: the result takes the divisor's sign
        out = g.op("Mod", [x, z], fmod=0)
    else:  # fmod, then moved into the divisor's sign as std::fmod-based TFLite does
        r = g.op("Mod", [x, z], fmod=1)
        zero = g.const(np.float32(0), "zero")
        differs = g.op("Xor", [g.op("Less", [r, zero]), g.op("Less", [z, zero])])
        fix = g.op("And", [g.op("Not", [g.op("Equal", [r, zero])]), differs])
        out = g.op("Where", [fix, g.op("Add", [r, z]), r])
    g.define(y, activation(g, out, fused(node)), layout)


@translates(*_COMPARE, *_LOGICAL)
def compare(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 2)
    a, b = node.inputs
    y = node.outputs[0]
    if op in _LOGICAL:
        g.check_types([a, b, y], (TensorType.BOOL,))
    else:
        if g.quantized(a) or g.quantized(b):
            raise Unsupported("quantized comparisons")
        g.check_types([a, b], _NUMERIC)
        g.check_types([y], (TensorType.BOOL,))
    (x, z), layout = broadcast(g, [a, b], y)
    out = g.op(_LOGICAL.get(op) or _COMPARE[op], [x, z])
    if op == Op.NOT_EQUAL:
        out = g.op("Not", [out])
    g.define(y, out, layout)


@translates(Op.LOGICAL_NOT)
def logical_not(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    g.check_types([node.inputs[0], node.outputs[0]], (TensorType.BOOL,))
    x = node.inputs[0]
    g.define(node.outputs[0], g.op("Not", [g.value(x, g.layout(x))]), g.layout(x))


_UNARY = {
    Op.ABS: "Abs",
    Op.NEG: "Neg",
    Op.SQRT: "Sqrt",
    Op.EXP: "Exp",
    Op.LOG: "Log",
    Op.SIN: "Sin",
    Op.COS: "Cos",
    Op.TANH: "Tanh",
    Op.LOGISTIC: "Sigmoid",
    Op.FLOOR: "Floor",
    Op.CEIL: "Ceil",
    Op.ROUND: "Round",
    Op.SIGN: "Sign",
    Op.RELU: "Relu",
    Op.HARD_SWISH: "HardSwish",
    Op.ELU: "Elu",
}
_INT_UNARY = (Op.ABS, Op.NEG, Op.SIGN)
_CLIPS = {Op.RELU6: (0.0, 6.0), Op.RELU_N1_TO_1: (-1.0, 1.0), Op.RELU_0_TO_1: (0.0, 1.0)}


@translates(*_UNARY, *_CLIPS, Op.RSQRT, Op.SQUARE, Op.LEAKY_RELU, Op.GELU)
def unary(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    x, y = node.inputs[0], node.outputs[0]
    if op in _INT_UNARY and g.tensor(x).type in _EXACT_INT:
        g.check_types([x, y], _EXACT_INT)
    else:
        g.check_types([x, y], (F32,))
    if g.quantized(x) and op in (Op.RSQRT, Op.SQRT, Op.LOG, Op.EXP, Op.SIGN, Op.SIN, Op.COS):
        raise Unsupported("quantized transcendental")
    layout = g.layout(x)
    v = g.value(x, layout)
    if op in _UNARY:
        out = g.op(_UNARY[op], [v])
    elif op in _CLIPS:
        lo, hi = _CLIPS[op]
        out = g.op("Clip", [v, g.const(np.float32(lo), "lo"), g.const(np.float32(hi), "hi")])
    elif op == Op.RSQRT:
        out = g.op("Reciprocal", [g.op("Sqrt", [v])])
    elif op == Op.SQUARE:
        out = g.op("Mul", [v, v])
    elif op == Op.LEAKY_RELU:
        out = g.op("LeakyRelu", [v], alpha=float(node.builtin_data.alpha))
    else:  # GELU
        approximate = bool(getattr(node.builtin_data, "approximate", False))
        out = g.op("Gelu", [v], approximate="tanh" if approximate else "none")
    g.define(y, out, layout)


@translates(Op.PRELU)
def prelu(g: PartitionGraph, node: Node, op: int) -> None:
    """relu(x) + alpha * min(x, 0): exact, and much faster in ONNX Runtime than per-channel PRelu."""
    arity(node, 2)
    x, alpha = node.inputs
    y = node.outputs[0]
    g.check_types([x, alpha, y], (F32,))
    (v, a), layout = broadcast(g, [x, alpha], y)
    negative = g.op("Mul", [a, g.op("Min", [v, g.const(np.float32(0), "zero")])])
    g.define(y, g.op("Add", [g.op("Relu", [v]), negative]), layout)


@translates(Op.SOFTMAX, Op.LOG_SOFTMAX)
def softmax(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    x, y = node.inputs[0], node.outputs[0]
    g.check_types([x, y], (F32,))
    if g.rank(x) < 1:
        raise Unsupported("scalar input")
    v = g.value(x)
    beta = float(getattr(node.builtin_data, "beta", 1.0) or 1.0) if op == Op.SOFTMAX else 1.0
    if beta != 1.0:
        v = g.op("Mul", [v, g.const(np.float32(beta), "beta")])
    g.define(y, g.op("Softmax" if op == Op.SOFTMAX else "LogSoftmax", [v], axis=-1))


@translates(Op.L2_NORMALIZATION)
def l2_normalization(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    x, y = node.inputs[0], node.outputs[0]
    g.check_types([x, y], (F32,))
    if g.quantized(x):
        raise Unsupported("quantized L2_NORMALIZATION")
    v = g.value(x)
    norm = g.op("Sqrt", [g.op("ReduceSumSquare", [v, g.ints([-1])], keepdims=1)])
    norm = g.op("Max", [norm, g.const(np.float32(1e-6), "eps")])
    g.define(y, activation(g, g.op("Div", [v, norm]), fused(node)))


@translates(Op.LOCAL_RESPONSE_NORMALIZATION)
def local_response_normalization(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    x, y = node.inputs[0], node.outputs[0]
    g.check_types([x, y], (F32,))
    if g.rank(x) != 4 or g.quantized(x):
        raise Unsupported("LRN of a non-4-D or quantized input")
    o = node.builtin_data
    size = 2 * int(o.radius) + 1
    out = g.op(
        "LRN",
        [g.value(x, channels_first(4))],
        size=size,
        alpha=float(np.float32(o.alpha) * size),
        beta=float(o.beta),
        bias=float(o.bias),
    )
    g.define(y, out, channels_first(4))


_REDUCE = {
    Op.MEAN: "ReduceMean",
    Op.SUM: "ReduceSum",
    Op.REDUCE_MAX: "ReduceMax",
    Op.REDUCE_MIN: "ReduceMin",
    Op.REDUCE_PROD: "ReduceProd",
    Op.REDUCE_ANY: "ReduceMax",
    Op.REDUCE_ALL: "ReduceMin",
}


_GLOBAL_POOL = {Op.MEAN: "GlobalAveragePool", Op.REDUCE_MAX: "GlobalMaxPool"}


def _axes(g: PartitionGraph, t: int, rank: int) -> list[int]:
    axes = g.require_constant(t, "the axes").reshape(-1).astype(np.int64)
    if any(a < -rank or a >= rank for a in axes):
        raise Unsupported("axis out of range")
    return sorted({int(a) % rank for a in axes}) if rank else []


@translates(*_REDUCE)
def reduce(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 2)
    x, axes_t = node.inputs
    y = node.outputs[0]
    boolean = op in (Op.REDUCE_ANY, Op.REDUCE_ALL)
    if boolean:
        g.check_types([x, y], (TensorType.BOOL,))
    elif op in (Op.SUM, Op.REDUCE_MAX, Op.REDUCE_MIN) and g.tensor(x).type in _EXACT_INT:
        g.check_types([x, y], _EXACT_INT)
    else:
        g.check_types([x, y], (F32,))
    if g.quantized(x) and op in (Op.SUM, Op.REDUCE_PROD):
        raise Unsupported("quantized SUM / REDUCE_PROD")
    rank = g.rank(x)
    axes = _axes(g, axes_t, rank)
    keep = bool(node.builtin_data.keep_dims)
    layout = g.layout(x)
    if layout is not None and not keep:
        kept = [i for i in range(rank) if i not in axes]
        if [p for p in layout if p in kept] != kept:
            layout = None  # the remaining axes would come out in another order
    v = g.value(x, layout)
    if boolean:
        v = g.op("Cast", [v], to=TensorProto.INT32)
    pooled = axes == [1, 2] and layout == channels_first(4) and g.tensor(x).type == F32
    if op in _GLOBAL_POOL and pooled and not g.quantized(x):
        # over H and W of a channels-first value: the global pool runs in ONNX Runtime's NCHWc
        # layout, straight on a convolution's output, where ReduceMean needs it reordered first
        out = g.op(_GLOBAL_POOL[op], [v])
        if not keep:
            out = g.op("Reshape", [out, g.ints(g.shape(y))])
        g.define(y, out, layout if keep else None)
        return
    if not axes:
        out = g.op("Identity", [v])
    else:
        onnx_axes = sorted(permute_axis(a, layout) for a in axes)
        out = g.op(_REDUCE[op], [v, g.ints(onnx_axes)], keepdims=int(keep))
    if boolean:
        out = g.op("Cast", [out], to=TensorProto.BOOL)
    if not keep and [d for i, d in enumerate(g.shape(x)) if i not in axes] != list(g.shape(y)):
        out = g.op("Reshape", [out, g.ints(g.shape(y))])  # e.g. a [1] result where ONNX gives a scalar
    g.define(y, out, layout if keep else None)


@translates(Op.ARG_MAX, Op.ARG_MIN)
def arg_max(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 2)
    x, axis_t = node.inputs
    y = node.outputs[0]
    g.check_types([x], _NUMERIC)
    g.check_types([y], _EXACT_INT)
    axis = _axes(g, axis_t, g.rank(x))
    if len(axis) != 1:
        raise Unsupported("one axis expected")
    out = g.op("ArgMax" if op == Op.ARG_MAX else "ArgMin", [g.value(x)], axis=axis[0], keepdims=0)
    if g.tensor(y).type != TensorType.INT64:
        out = g.op("Cast", [out], to=ONNX_TYPES[g.tensor(y).type])
    g.define(y, out)


@translates(Op.CUMSUM)
def cumsum(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 2)
    x, axis_t = node.inputs
    y = node.outputs[0]
    g.check_types([x, y], _NUMERIC)
    if g.quantized(x):
        raise Unsupported("quantized CUMSUM")
    axis = _axes(g, axis_t, g.rank(x))
    o = node.builtin_data
    out = g.op(
        "CumSum",
        [g.value(x), g.const(np.int64(axis[0]), "axis")],
        exclusive=int(bool(o.exclusive)),
        reverse=int(bool(o.reverse)),
    )
    g.define(y, out)


@translates(Op.CAST)
def cast(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 1)
    x, y = node.inputs[0], node.outputs[0]
    allowed = (F32, TensorType.INT32, TensorType.INT64, TensorType.BOOL)
    if g.quantized(x) or g.quantized(y):
        raise Unsupported("CAST of quantized tensors")
    g.check_types([x], allowed)
    g.check_types([y], (*allowed, TensorType.INT16, TensorType.INT8, TensorType.UINT8))
    if g.tensor(x).type == F32 and g.tensor(y).type != F32 and g.tensor(y).type != TensorType.BOOL:
        raise Unsupported("float-to-integer CAST (out-of-range values differ)")
    layout = g.layout(x)
    g.define(y, g.op("Cast", [g.value(x, layout)], to=ONNX_TYPES[g.tensor(y).type]), layout)


@translates(Op.SELECT, Op.SELECT_V2)
def select(g: PartitionGraph, node: Node, op: int) -> None:
    arity(node, 3)
    c, a, b = node.inputs
    y = node.outputs[0]
    g.check_types([c], (TensorType.BOOL,))
    g.check_types([a, b, y], _NUMERIC)
    if g.quantized(a) or g.quantized(b):
        raise Unsupported("quantized SELECT")
    if op == Op.SELECT and g.rank(c) == 1 and g.rank(a) > 1 and g.shape(c) != g.shape(a)[-1:]:
        # SELECT v1 with a vector condition picks whole rows along the first axis
        cond = g.op("Reshape", [g.value(c), g.ints([g.shape(c)[0]] + [1] * (g.rank(a) - 1))])
        out = g.op("Where", [cond, g.value(a), g.value(b)])
        g.define(y, out)
        return
    (cond, x, z), layout = broadcast(g, [c, a, b], y)
    g.define(y, g.op("Where", [cond, x, z]), layout)

"""SVDF: float, hybrid (int8 weights) and integer (int8 input, int16 state) kernels."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ...core.types import BuiltinOperator, type_name
from ...errors import KernelError, ensure, ensure_eq
from ...fidelity.arithmetic import HostArithmetic
from ...model.options import ActivationFunctionType
from ..common import output_tensor
from ..quant.fixed_point import multiply_by_quantized_multiplier, quantize_multiplier, wrap
from ..registry import register_builtin
from .activations import activation_function
from .common import F32, WEIGHT_INT, T
from .hybrid import HybridMatrix, hybrid_matrix, hybrid_product


@dataclass(frozen=True)
class SvdfData:
    rank: int
    units: int
    filters: int
    memory: int
    kind: str  # "float", "hybrid" or "integer"
    arithmetic: HostArithmetic  # the host's, read in prepare
    feature: HybridMatrix | None = None  # hybrid: constant weights (None: packed at each invoke)
    time: np.ndarray | None = None  # hybrid: constant time weights [filters, memory] in float32
    scales: tuple = ()  # integer: the two (multiplier, shift) pairs
    zero_points: tuple = ()  # integer: input and output zero points
    # what TFLite computes once, at the first invoke: the hybrid weight row sums ("feature") and runtime
    # time weights dequantized ("time")
    once: dict = field(default_factory=dict)


def svdf_prepare(context, node):
    ensure_eq(len(node.outputs), 1, "node->outputs->size")
    ensure_eq(len(node.inputs), 5, "node->inputs->size")
    options = node.builtin_data
    source, feature, time = (context.tensors[i] for i in node.inputs[:3])
    bias = None if node.inputs[3] < 0 else context.tensors[node.inputs[3]]
    state = context.tensors[node.inputs[4]]
    ensure(
        source.type in (T.FLOAT32, T.INT8),
        "input->type == kTfLiteFloat32 || input->type == kTfLiteInt8 was not true.",
    )
    ensure_eq(len(source.shape), 2, "SVDF input rank")
    ensure_eq(len(feature.shape), 2, "SVDF weights_feature rank")
    ensure_eq(len(time.shape), 2, "SVDF weights_time rank")
    rank = options.rank
    batch = source.shape[0]
    filters = feature.shape[0]
    ensure(rank != 0, "rank != 0 was not true.")
    ensure_eq(filters % rank, 0, "num_filters % rank")
    units = filters // rank
    memory = time.shape[1]
    ensure_eq(source.shape[1], feature.shape[1], "input->dims->data[1]")
    ensure_eq(time.shape[0], filters, "weights_time->dims->data[0]")
    if bias is not None:
        ensure_eq(bias.shape[0], units, "bias->dims->data[0]")
    ensure_eq(len(state.shape), 2, "NumDimensions(state)")
    ensure_eq(state.shape[0], batch, "SizeOfDimension(state, 0)")
    ensure_eq(state.shape[1], memory * filters, "SizeOfDimension(state, 1)")
    output = output_tensor(context, node)
    context.resize_tensor(output, (batch, units))
    if source.type == T.INT8:
        kind = "integer"
    elif feature.type in WEIGHT_INT:
        kind = "hybrid"
    elif feature.type == T.FLOAT32:
        kind = "float"
    else:
        raise KernelError(f"Type {type_name(feature.type)} not currently supported.")
    if feature.sparsity is not None or time.sparsity is not None:
        raise KernelError("SVDF with sparse weights is not supported")
    data = SvdfData(rank, units, filters, memory, kind, context.host.arithmetic)
    if kind == "integer":
        data = _svdf_integer_prepare(data, options, source, feature, time, bias, state, output)
    elif kind == "float":
        ensure(
            time.type == T.FLOAT32 and (bias is None or bias.type == T.FLOAT32) and state.type == T.FLOAT32,
            "SVDF float weights need FLOAT32 weights_time, bias and state",
        )
    else:
        ensure(time.type in WEIGHT_INT, "SVDF hybrid weights_time must be INT8")
        ensure(
            (bias is None or bias.type == T.FLOAT32) and state.type == T.FLOAT32,
            "SVDF hybrid needs FLOAT32 bias and state",
        )
        matrix = None
        if feature.is_constant_or_persistent:
            blocks = [(feature.data, feature.params.scale)]
            matrix = hybrid_matrix(blocks, data.arithmetic, data.once, "feature")
        time_weights = _svdf_hybrid_time(time) if time.is_constant_or_persistent else None
        data = dataclasses.replace(data, feature=matrix, time=time_weights)
    node.user_data = data


def _svdf_hybrid_time(time) -> np.ndarray:
    """The int8 time weights in float32, as TFLite dequantizes them (on the first invoke only)."""
    return time.data.view(np.int8).astype(F32) * F32(time.params.scale)


def _svdf_integer_prepare(data, options, source, feature, time, bias, state, output) -> SvdfData:

    if options.fused_activation_function != ActivationFunctionType.RELU:  # TFLite checks it at Eval
        raise KernelError(
            f"params->activation != kTfLiteActRelu ({int(options.fused_activation_function)} != 1)"
        )

    ensure(
        feature.type == T.INT8, f"SVDF integer weights_feature must be INT8, got {type_name(feature.type)}"
    )
    ensure(time.type == T.INT16, f"SVDF integer weights_time must be INT16, got {type_name(time.type)}")
    ensure(state.type == T.INT16, f"SVDF integer state must be INT16, got {type_name(state.type)}")
    ensure(output.type == T.INT8, f"SVDF integer output must be INT8, got {type_name(output.type)}")
    ensure(bias is None or bias.type == T.INT32, "SVDF integer bias must be INT32")
    for tensor, name in (
        (source, "input"),
        (feature, "weights_feature"),
        (state, "state"),
        (time, "weights_time"),
        (output, "output"),
    ):
        ensure(
            tensor.quantization is not None,
            f"{name}->quantization.type != kTfLiteNoQuantization was not true.",
        )
    scale = lambda tensor: F32(tensor.quantization.scale[0])  # noqa: E731
    # float arithmetic, as TFLite computes them before widening to double
    first = float(scale(source) * scale(feature) / scale(state))
    second = float(scale(state) * scale(time) / scale(output))
    return dataclasses.replace(
        data,
        scales=(quantize_multiplier(first), quantize_multiplier(second)),
        zero_points=(int(source.quantization.zero_point[0]), int(output.quantization.zero_point[0])),
    )


def svdf_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    source, feature, time = (tensors[i] for i in node.inputs[:3])
    bias = None if node.inputs[3] < 0 else tensors[node.inputs[3]].data
    state_tensor = tensors[node.inputs[4]]
    ensure(state_tensor.is_variable, "state != nullptr was not true.")
    options = node.builtin_data
    out = tensors[node.outputs[0]].data
    batch = source.shape[0]
    flat = state_tensor.data.reshape(-1)
    if flat.size:
        flat[:-1] = flat[1:].copy()  # shift the whole memory left by one (std::copy)
    state = state_tensor.data.reshape(batch, data.filters, data.memory)
    if data.kind == "integer":
        return _svdf_integer(data, options, source.data, feature.data, time.data, bias, state, out)
    x = source.data
    if data.kind == "float":
        state[:, :, -1] = x @ feature.data.T if x.shape[1] else 0
        weights_time = time.data
    else:
        matrix = data.feature
        if matrix is None:  # runtime weights
            blocks = [(feature.data, feature.params.scale)]
            matrix = hybrid_matrix(blocks, data.arithmetic, data.once, "feature")
        weights_time = data.time
        if weights_time is None:  # runtime time weights: TFLite dequantizes them once, at the first invoke
            weights_time = data.once.get("time")
            if weights_time is None:
                weights_time = data.once["time"] = _svdf_hybrid_time(time)
        if x.any():
            state[:, :, -1] = hybrid_product(matrix, x, bool(options.asymmetric_quantize_inputs))
        else:
            state[:, :, -1] = 0
    products = np.einsum("bfm,fm->bf", state, weights_time, dtype=F32)
    np.sum(products.reshape(batch, data.units, data.rank), axis=2, out=out)
    if bias is not None:
        out += bias
    activate = activation_function(options.fused_activation_function)
    if activate is not None:
        activate(out, out)


def _svdf_integer(data, options, x, feature, time, bias, state, out) -> None:

    (m1, s1), (m2, s2) = data.scales
    input_zp, output_zp = data.zero_points
    # exact: int8 products summed far below 2**53
    dots = (x.astype(np.float64) - input_zp) @ feature.astype(np.float64).T
    dots = multiply_by_quantized_multiplier(wrap(dots.astype(np.int64)), m1, s1)
    state[:, :, -1] = np.clip(dots, -32768, 32767)
    products = np.einsum("bfm,fm->bf", state.astype(np.int64), time.astype(np.int64))
    sums = wrap(products).reshape(-1, data.units, data.rank).sum(axis=2)
    sums = wrap(sums)
    if bias is not None:
        sums = wrap(sums + bias.astype(np.int64))
    scaled = multiply_by_quantized_multiplier(sums, m2, s2) + output_zp
    out[...] = np.clip(scaled, -128, 127)


register_builtin(
    BuiltinOperator.SVDF,
    (1, 4),
    types=(T.FLOAT32, T.INT8),
    op_data=SvdfData,
    prepare=svdf_prepare,
    invoke=svdf_invoke,
)

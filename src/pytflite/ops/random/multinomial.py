"""MULTINOMIAL: num_samples class indices per row of a [batch, classes] float32 logits matrix.

Per row, LiteRT sums exp(logit - max) over the finite logits in double precision into a running
(unnormalised) CDF, and each sample is the first class whose CDF exceeds u * total, u a double in
[0, 1) from two Philox words (one block serves two samples; rows continue where the last one stopped).
The samples come from a copy of the stream, which itself jumps ahead by a fixed
batch * round_up(num_samples, 4) * 2 * 256 blocks per invoke, as TensorFlow's op does. The output
(int32 or int64) is dynamic unless both inputs are constant. NumPy's float64 exp stands in for the C
library's exp; where the two differ in a CDF's last bit, a sample changes only if u * total falls
between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.types import BuiltinOperator, TensorType, type_name
from ...errors import KernelError, ensure, ensure_eq, ensure_type
from ..common import check_arity, input_tensor, output_tensor
from ..registry import register_builtin
from .philox import PhiloxStream, philox_words, uint32_pairs_to_unit_double

_OUTPUT_TYPES = (TensorType.INT32, TensorType.INT64)
_LOWEST = np.finfo(np.float32).min  # where the running maximum starts (a row may have no finite logit)


def _samples(stream: PhiloxStream, logits: np.ndarray, num_samples: int) -> np.ndarray:
    batch = logits.shape[0]
    start = stream.counter
    stream.skip((batch * ((num_samples + 3) // 4 * 4) * 2 * 256) & ((1 << 64) - 1))
    words = philox_words(stream.key, start, -(-batch * num_samples // 2))[: 2 * batch * num_samples]
    targets = uint32_pairs_to_unit_double(words[0::2], words[1::2]).reshape(batch, num_samples)

    finite = np.isfinite(logits)
    peak = np.max(np.where(finite, logits, _LOWEST), axis=1, keepdims=True).astype(np.float64)
    weights = np.exp(np.where(finite, logits.astype(np.float64) - peak, -np.inf))  # non-finite: 0
    cdf = np.cumsum(weights, axis=1)  # sequential, as TFLite's running total
    targets *= cdf[:, -1:]
    return np.stack([np.searchsorted(row, wanted, side="right") for row, wanted in zip(cdf, targets)])


@dataclass(frozen=True)
class MultinomialData:
    stream: PhiloxStream  # advanced by every invoke; a new one at every prepare
    dynamic: bool  # the output shape is set at invoke (an input is computed at run time)


def _num_samples(tensor) -> int:
    count = int(tensor.data.reshape(-1)[0])
    ensure(count >= 0, "num_samples >= 0 was not true.")
    return count


def multinomial_prepare(context, node):
    check_arity(node, 2)
    logits, num_samples = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    ensure(logits.type == TensorType.FLOAT32, "logits->type == kTfLiteFloat32 was not true.")
    ensure_type(num_samples, TensorType.INT32, "num_samples", "MULTINOMIAL")
    if output.type not in _OUTPUT_TYPES:
        raise KernelError(f"Unsupported output datatype for Multinomial op: {type_name(output.type)}")
    ensure_eq(len(logits.shape), 2, "NumDimensions(logits)")
    ensure(logits.shape[1] > 0, "num_classes > 0 was not true.")
    ensure_eq(len(num_samples.shape), 0, "NumDimensions(num_samples)")
    dynamic = not (logits.is_constant_or_persistent and num_samples.is_constant_or_persistent)
    node.user_data = MultinomialData(PhiloxStream.from_options(node.builtin_data), dynamic)
    if dynamic:
        context.set_tensor_to_dynamic(output)
    else:
        context.resize_tensor(output, (logits.shape[0], _num_samples(num_samples)))


def multinomial_invoke(context, node):
    data = node.user_data
    tensors = context.tensors
    logits, output = tensors[node.inputs[0]].data, tensors[node.outputs[0]]
    count = _num_samples(tensors[node.inputs[1]])
    if data.dynamic:
        context.resize_tensor(output, (logits.shape[0], count))
    if output.data.size == 0:  # nothing drawn, and the stream's jump is zero
        return
    np.copyto(output.data, _samples(data.stream, logits, count), casting="unsafe")


register_builtin(
    BuiltinOperator.MULTINOMIAL,
    (1, 1),
    types=(TensorType.FLOAT32,),
    op_data=MultinomialData,
    prepare=multinomial_prepare,
    invoke=multinomial_invoke,
    stateful=True,
)

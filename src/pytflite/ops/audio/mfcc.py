"""Mfcc: mel-frequency cepstral coefficients of a [channels, frames, bins] squared-magnitude spectrogram
(AudioSpectrogram's output with magnitude_squared) at the int32 sample rate of the second input; output
[channels, frames, dct_coefficient_count] float32.

Options (flexbuffer): upper_frequency_limit, lower_frequency_limit (read as integers, then float, as
TFLite does), filterbank_channel_count, dct_coefficient_count. TFLite sets up the filterbank in Eval,
so parameters it rejects fail at invoke, as "params->dct_coefficient_count != mfcc_output.size()"; we
build the tables in prepare when the sample rate is a constant, and in invoke otherwise.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace

import numpy as np

from ...core.types import TensorType
from ...errors import KernelError, ensure_condition_eq, ensure_type_condition
from ..common import check_arity, input_tensor, output_tensor
from ..custom_op_options import as_c_int, as_int64, read_map
from ..registry import register_custom
from .mel import MfccPlan, MfccSetupError


@dataclass(frozen=True)
class MfccData:
    upper_frequency_limit: float
    lower_frequency_limit: float
    filterbank_channel_count: int
    dct_coefficient_count: int
    plan: MfccPlan | None = None  # set by prepare when the sample rate is constant and accepted


def mfcc_init(context, buffer, length):
    options = read_map("Mfcc", buffer)

    def frequency(key: str) -> float:  # AsInt64 into a float field
        return float(np.float32(as_int64(options, key)))

    return MfccData(
        frequency("upper_frequency_limit"),
        frequency("lower_frequency_limit"),
        as_c_int(options, "filterbank_channel_count"),
        as_c_int(options, "dct_coefficient_count"),
    )


def mfcc_prepare(context, node):
    data = replace(node.user_data, plan=None)
    check_arity(node, 2)
    spectrogram, rate = input_tensor(context, node, 0), input_tensor(context, node, 1)
    output = output_tensor(context, node)
    rank = len(spectrogram.shape)
    ensure_condition_eq(rank, 3, "NumDimensions(input_wav) != 3")
    ensure_condition_eq(math.prod(rate.shape), 1, "NumElements(input_rate) != 1")
    ensure_type_condition(output, TensorType.FLOAT32, "output->type != kTfLiteFloat32")
    ensure_type_condition(spectrogram, output.type, "input_wav->type != output->type")
    ensure_type_condition(rate, TensorType.INT32, "input_rate->type != kTfLiteInt32")
    if rate.is_constant_or_persistent:
        with contextlib.suppress(KernelError):  # rejected parameters fail at invoke, as in TFLite
            data = replace(data, plan=_plan(data, spectrogram, rate))
    node.user_data = data
    context.resize_tensor(output, (*spectrogram.shape[:2], data.dct_coefficient_count))


def _plan(data: MfccData, spectrogram, rate) -> MfccPlan:
    try:
        return MfccPlan.build(
            spectrogram.shape[2],
            float(rate.data.reshape(-1)[0]),
            data.filterbank_channel_count,
            data.dct_coefficient_count,
            data.lower_frequency_limit,
            data.upper_frequency_limit,
        )
    except MfccSetupError as error:
        raise KernelError(
            f"Mfcc cannot set up its filterbank and DCT ({error}): params->dct_coefficient_count != "
            f"mfcc_output.size() ({data.dct_coefficient_count} != 0)"
        ) from None


def mfcc_invoke(context, node):
    tensors = context.tensors
    data = node.user_data
    out = tensors[node.outputs[0]].data
    if out.size == 0:
        return
    spectrogram = tensors[node.inputs[0]]
    plan = data.plan if data.plan is not None else _plan(data, spectrogram, tensors[node.inputs[1]])
    plan.apply(spectrogram.data, out)


register_custom(
    "Mfcc",
    (1, 1),
    types=(TensorType.FLOAT32,),
    op_data=MfccData,
    init=mfcc_init,
    prepare=mfcc_prepare,
    invoke=mfcc_invoke,
)

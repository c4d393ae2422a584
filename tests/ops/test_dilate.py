"""DILATE against LiteRT: ranks 1 to 5, element types of every size, constant and run-time dilations,
and the checks TFLite makes (in prepare on types, in invoke on the dilations)."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite.core.types import tensor_type_for_dtype
from tests.ops.refusals import fails_like_litert
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert


def dilate(value, dilations, padding, constant=True) -> SingleOpModel:
    value = np.asarray(value)
    return SingleOpModel(
        Op.DILATE,
        [Operand(value), Operand(np.asarray(dilations, np.int32), constant=constant), Operand(padding)],
        [tensor_type_for_dtype(value.dtype)],
    )


@pytest.mark.parametrize(
    "shape, dilations",
    [
        ((17,), (3,)),
        ((20, 30), (2, 1)),
        ((4, 9, 7), (1, 3, 2)),
        ((3, 4, 5, 6), (2, 2, 1, 1)),
        ((2, 3, 4, 5, 6), (1, 1, 1, 1, 1)),
        ((2, 3, 4, 2, 3), (1, 2, 1, 3, 2)),
    ],
)
@pytest.mark.parametrize("constant", [True, False])
def test_float_inputs_spread_with_padding(shape, dilations, constant):
    value = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
    dilate(value, dilations, np.float32(-7.5), constant).check(rtol=0)


@pytest.mark.parametrize(
    "dtype", [np.int8, np.uint8, np.bool_, np.int16, np.float16, np.int32, np.int64, np.float64, np.complex64]
)
def test_every_element_size(dtype):
    value = np.arange(60).reshape(3, 4, 5).astype(dtype)
    dilate(value, (2, 3, 2), np.ones((), dtype)).check(rtol=0)


def test_refusals_in_tflites_words():
    value = np.ones((2, 3), np.float32)
    fails_like_litert(
        dilate(value, (1, 2), np.int32(0)),
        "ctx.input_tensor->type != ctx.padding_value_tensor->type (1 != 2)",
    )
    for constant in (True, False):
        fails_like_litert(
            dilate(value, (0, 2), np.float32(0), constant),
            "ctx.dilations_tensor->data.i32[i] >= 1 was not true.",
        )
        # TFLite checks the first factor only and crashes on a later zero; pytflite refuses it
        dilate(value, (1, 0), np.float32(0), constant).fails(r"data\.i32\[i\] >= 1 was not true")
        fails_like_litert(
            dilate(value, (1, 2, 3), np.float32(0), constant),
            "ctx.dilations_tensor->dims->data[0] != ctx.input_tensor->dims->size (3 != 2)",
        )

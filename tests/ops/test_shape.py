"""RESHAPE against LiteRT: shape from a constant tensor, from options, with -1, and at run time."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("target", [[6, 4], [-1, 2], [24], [2, -1, 3], [1, 1, 24, 1]])
def test_shape_tensor(target):
    (out,) = SingleOpModel(
        Op.RESHAPE, [Operand(X), Operand(np.array(target, np.int32), constant=True)], [T.FLOAT32]
    ).check()
    assert out.shape == X.reshape(target).shape


@pytest.mark.parametrize("target", [[4, 6], [-1], [3, 8]])
def test_shape_option(target):
    (out,) = SingleOpModel(Op.RESHAPE, [Operand(X)], [T.FLOAT32], {"new_shape": target}).check()
    assert out.shape == X.reshape(target).shape


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.bool_, np.int64])
def test_other_types(dtype):
    x = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    SingleOpModel(
        Op.RESHAPE,
        [Operand(x), Operand(np.array([2, 6], np.int32), constant=True)],
        [pytflite.core.types.tensor_type_for_dtype(np.dtype(dtype))],
    ).check()


def test_runtime_shape():
    (out,) = SingleOpModel(Op.RESHAPE, [Operand(X), Operand(np.array([4, 6], np.int32))], [T.FLOAT32]).check()
    assert out.shape == (4, 6)


def test_bad_element_count():
    model, _ = SingleOpModel(
        Op.RESHAPE, [Operand(X), Operand(np.array([5, 5], np.int32), constant=True)], [T.FLOAT32]
    ).build()
    with pytest.raises(RuntimeError, match=r"num_input_elements != num_output_elements \(24 != 25\)"):
        pytflite.Interpreter(model_content=model).allocate_tensors()

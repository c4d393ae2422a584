"""TensorList ops on what the fixtures do not reach: TF 2.18.1's refusals, in its words (recorded from
its eager ops), and lists as values."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite.flex import TensorList, TfNode, kernel_for
from pytflite.flex.dtypes import BY_NAME

F32 = BY_NAME["float32"]
UNKNOWN = np.array([-1], np.int32)


def run(op: str, *inputs, **attrs):
    return kernel_for(op).compute(TfNode(op, op, {"element_dtype": F32, **attrs}), *inputs)


def held(value) -> np.ndarray:
    """A list as a VARIANT tensor holds it."""
    holder = np.empty((), dtype=object)
    holder[()] = value
    return holder


def reserved(count: int, shape=UNKNOWN) -> np.ndarray:
    return held(run("TensorListReserve", shape, np.int32(count)))


@pytest.mark.parametrize(
    ("op", "inputs", "message"),
    [
        (
            "TensorListSetItem",
            lambda: (reserved(2), np.int32(5), np.zeros(3, np.float32)),
            "Trying to modify element 5 in a list with 2 elements.",
        ),
        (
            "TensorListGetItem",
            lambda: (reserved(2), np.int32(5), UNKNOWN),
            "Trying to access element 5 in a list with 2 elements.",
        ),
        (
            "TensorListGetItem",
            lambda: (reserved(2), np.int32(0), UNKNOWN),
            r"Trying to read an uninitialized tensor but element_shape is not fully defined: \[\?\] and no list element is set.",
        ),
        (
            "TensorListStack",
            lambda: (reserved(2), UNKNOWN),
            r"Tried to stack list which only contains uninitialized tensors and has a non-fully-defined element_shape: \[\?\]",
        ),
        (
            "TensorListStack",
            lambda: (reserved(0), UNKNOWN),
            r"Tried to stack elements of an empty list with non-fully-defined element_shape: \[\?\]",
        ),
        ("TensorListPopBack", lambda: (reserved(0), UNKNOWN), "Trying to pop from an empty list."),
        (
            "TensorListPushBack",
            lambda: (reserved(0), np.zeros(3, np.int32)),
            "Invalid data types; op elements int32 but list elements float",
        ),
        (
            "TensorListSetItem",
            lambda: (reserved(2, np.array([3], np.int32)), np.int32(0), np.zeros(4, np.float32)),
            r"Tried to set a tensor with incompatible shape at a list index. Item element shape: \[4\] list shape: \[3\]",
        ),
        (
            "TensorListReserve",
            lambda: (UNKNOWN, np.int32(-2)),
            "The num_elements to reserve must be a non negative number, but got -2",
        ),
        (
            "TensorListResize",
            lambda: (reserved(2), np.int32(-1)),
            "TensorListSlice expects size to be non-negative. Got: -1",
        ),
        (
            "TensorListFromTensor",
            lambda: (np.float32(1), UNKNOWN),
            r"Tensor must be at least a vector, but saw shape: \[\]",
        ),
    ],
)
def test_refusals_are_tfs(op, inputs, message):
    with pytest.raises(ValueError, match=message):
        run(op, *inputs())


def test_stack_checks_the_element_count():
    with pytest.raises(
        ValueError, match="Operation expected a list with 3 elements but got a list with 2 elements."
    ):
        run("TensorListStack", reserved(2, np.array([3], np.int32)), np.array([3], np.int32), num_elements=3)


def test_a_list_is_a_value_that_set_item_does_not_change():
    before = reserved(2, np.array([2], np.int32))
    after = run("TensorListSetItem", before, np.int32(1), np.array([1.0, 2.0], np.float32))
    assert before[()].items == (None, None)
    stacked = run("TensorListStack", held(after), np.array([2], np.int32))
    np.testing.assert_array_equal(stacked, [[0, 0], [1, 2]])  # an unset element reads as zeros


def test_an_item_is_copied_in_not_kept():
    item = np.array([1.0, 2.0], np.float32)
    tensors = run("TensorListPushBack", reserved(0), item)
    item[:] = 7
    assert isinstance(tensors, TensorList)
    np.testing.assert_array_equal(tensors.items[0], [1.0, 2.0])


def test_resize_pads_with_unset_elements_and_cuts():
    tensors = run("TensorListFromTensor", np.arange(6, dtype=np.float32).reshape(3, 2), UNKNOWN)
    grown = run("TensorListResize", held(tensors), np.int32(5))
    assert len(grown) == 5 and grown.items[3] is None
    np.testing.assert_array_equal(
        run("TensorListLength", held(run("TensorListResize", held(grown), np.int32(1)))), 1
    )
    np.testing.assert_array_equal(
        run("TensorListElementShape", held(grown), shape_type=BY_NAME["int64"]), [2]
    )

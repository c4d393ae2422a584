"""Input validation at the API: set_tensor, resize_tensor_input and the signature runner refuse bad
arguments with LiteRT's exception types (ValueError for a bad value, RuntimeError for what the runtime
refuses, TypeError for an argument of the wrong kind), and accept every array layout NumPy can give."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import InvalidArgumentError
from tests.oracle import requires_litert
from tests.test_interpreter_api import assert_same_outcome, both, mlp_model, outcome


def allocated(**kwargs) -> pytflite.Interpreter:
    interpreter = pytflite.Interpreter(model_content=mlp_model(**kwargs))
    interpreter.allocate_tensors()
    return interpreter


def _read_only() -> np.ndarray:
    array = np.arange(4, dtype=np.float32).reshape(1, 4)
    array.flags.writeable = False
    return array


LAYOUTS = {
    "read_only": _read_only(),
    "strided": np.arange(8, dtype=np.float32).reshape(1, 8)[:, ::2],
    "fortran": np.asfortranarray(np.arange(4, dtype=np.float32).reshape(1, 4)),
    "broadcast": np.broadcast_to(np.float32(2.5), (1, 4)),
    "big_endian": np.arange(4, dtype=">f4").reshape(1, 4),
    "memoryview": memoryview(np.arange(4, dtype=np.float32).reshape(1, 4)),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_set_tensor_accepts_every_layout_and_copies_the_values(name):
    value = LAYOUTS[name]
    interpreter = allocated()
    interpreter.set_tensor(0, value)
    np.testing.assert_array_equal(interpreter.get_tensor(0), np.asarray(value, np.float32))
    interpreter.invoke()  # the copy is the tensor's own memory: the caller's array is never written
    np.testing.assert_array_equal(np.asarray(value, np.float32), np.asarray(LAYOUTS[name], np.float32))


@requires_litert
@pytest.mark.parametrize("name", ["read_only", "strided", "fortran", "broadcast", "memoryview"])
def test_layouts_match_litert(name):
    ours, theirs = both(mlp_model())
    results = []
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
        interpreter.set_tensor(0, LAYOUTS[name])
        interpreter.invoke()
        results.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


@requires_litert
@pytest.mark.parametrize(
    "value",
    [
        np.zeros([1, 4], dtype=[("a", "<f4")]),
        np.zeros([1, 4], "datetime64[s]"),
        np.zeros([1, 4], np.complex64),
        np.zeros([1, 4], np.float16),
        [[1.0, 2.0], [3.0]],
        {"a": 1},
        b"abcdabcdabcdabcd",
        np.float32(1.0),
    ],
    ids=["structured", "datetime", "complex", "float16", "ragged", "dict", "bytes", "scalar"],
)
def test_set_tensor_refuses_bad_values_as_litert_does(value):
    ours, theirs = both(mlp_model())
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
    assert_same_outcome(
        outcome(lambda: ours.set_tensor(0, value)), outcome(lambda: theirs.set_tensor(0, value))
    )


@pytest.mark.parametrize("index", [0.0, "0", None, [0]])
def test_tensor_index_must_be_an_integer(index):
    interpreter = allocated()
    for call in (
        lambda: interpreter.set_tensor(index, np.zeros([1, 4], np.float32)),
        lambda: interpreter.get_tensor(index),
        lambda: interpreter.tensor(index),
        lambda: interpreter.resize_tensor_input(index, [1, 4]),
    ):
        with pytest.raises(TypeError, match="tensor_index must be an int"):
            call()


def test_numpy_integer_indices_are_accepted():
    interpreter = allocated()
    interpreter.set_tensor(np.int64(0), np.zeros([1, 4], np.float32))
    interpreter.get_tensor(np.int32(0))


@pytest.mark.parametrize(
    ("shape", "error", "message"),
    [
        ([[1, 4]], ValueError, "Shape should be 1D instead of 2."),
        (3, ValueError, "Shape should be 1D instead of 0."),
        ("ab", ValueError, "Failed to convert numpy value into readable tensor."),
        ([2**40, 4], ValueError, "does not fit in int32 dimensions"),
        ([-1, 4], RuntimeError, r"negative dimension in shape \[-1, 4\]"),
        ([2**31 - 1, 4], RuntimeError, r"has 8589934588 elements, over the limit of 2147483647"),
    ],
)
def test_resize_tensor_input_validation(shape, error, message):
    interpreter = pytflite.Interpreter(model_content=mlp_model(dynamic_batch=True))
    with pytest.raises(error, match=message):
        interpreter.resize_tensor_input(0, shape)
    if error is ValueError:
        assert issubclass(InvalidArgumentError, ValueError)
        with pytest.raises(InvalidArgumentError):
            interpreter.resize_tensor_input(0, shape)


def test_resize_index_out_of_range_is_the_runtime_error_litert_raises():
    interpreter = pytflite.Interpreter(model_content=mlp_model())
    with pytest.raises(
        RuntimeError, match=r"tensor_index < context_.tensors_size && tensor_index >= 0 was not true"
    ):
        interpreter.resize_tensor_input(99, [1, 4])


def test_strict_resize_changes_only_unknown_dimensions():
    interpreter = pytflite.Interpreter(model_content=mlp_model(dynamic_batch=True))
    interpreter.resize_tensor_input(0, [3, 4], strict=True)
    interpreter.allocate_tensors()
    with pytest.raises(RuntimeError, match="only allows mutating unknown dimensions"):
        interpreter.resize_tensor_input(0, [3, 5], strict=True)


@pytest.mark.parametrize("value", [None, "abc", [[1.0, 2.0, 3.0, 4.0]], np.zeros([1, 4], np.float64)])
def test_signature_runner_checks_types_before_resizing(value):
    interpreter = pytflite.Interpreter(model_content=mlp_model(dynamic_batch=True))
    runner = interpreter.get_signature_runner()
    with pytest.raises(InvalidArgumentError, match="Cannot set tensor: Got value of type"):
        runner(features=value)
    # the refused value left the graph as it was: a good call still runs at the original shape
    result = runner(features=np.ones([1, 4], np.float32))
    assert result["probabilities"].shape == (1, 3)


@requires_litert
@pytest.mark.parametrize(
    "kwargs",
    [
        {"b": 1},
        {},
        {"features": np.ones([1, 4], np.float32), "b": 1},
        {"features": np.ones([3, 4], np.float64)},
    ],
    ids=["wrong_name", "missing", "extra", "dtype"],
)
def test_signature_runner_argument_errors_match_litert(kwargs):
    ours, theirs = both(mlp_model(dynamic_batch=True))
    assert_same_outcome(
        outcome(lambda: ours.get_signature_runner()(**kwargs)),
        outcome(lambda: theirs.get_signature_runner()(**kwargs)),
    )


def test_signature_runner_resizes_for_a_new_batch():
    interpreter = pytflite.Interpreter(model_content=mlp_model(dynamic_batch=True))
    runner = interpreter.get_signature_runner()
    assert runner(features=np.ones([5, 4], np.float32))["doubled"].shape == (5, 4)
    assert runner(features=np.ones([2, 4], np.float32))["doubled"].tolist() == [[2.0] * 4] * 2

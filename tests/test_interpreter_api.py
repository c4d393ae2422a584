"""pytflite.Interpreter as a drop-in for ai_edge_litert's: each scenario runs the same script against both
interpreters and compares everything it observed (values, detail dicts, exception types and messages)."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_matches, details_equal, litert, requires_litert

pytestmark = requires_litert


def mlp_model(dynamic_batch: bool = False) -> bytes:
    """x[b,4] -> FC(relu) -> softmax, plus a second output (x * 2), with an optional -1 batch."""
    builder = ModelBuilder()
    signature = [-1, 4] if dynamic_batch else None
    x = builder.add_input("x", T.FLOAT32, [1, 4], shape_signature=signature)
    w = builder.add_constant("w", np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    b = builder.add_constant("b", np.array([0.1, 0.0, -0.2], np.float32))
    h = builder.add_tensor("h", T.FLOAT32, [1, 3], shape_signature=[-1, 3] if dynamic_batch else None)
    builder.add_operator(Op.FULLY_CONNECTED, [x, w, b], [h], {"fused_activation_function": "RELU"})
    y = builder.add_tensor(
        "probabilities", T.FLOAT32, [1, 3], shape_signature=[-1, 3] if dynamic_batch else None
    )
    builder.add_operator(Op.SOFTMAX, [h], [y], {"beta": 1.0})
    two = builder.add_constant("two", np.array(2.0, np.float32))
    z = builder.add_tensor("doubled", T.FLOAT32, [1, 4], shape_signature=signature)
    builder.add_operator(Op.MUL, [x, two], [z])
    builder.add_output(y)
    builder.add_output(z)
    builder.add_signature("serving_default", {"features": x}, {"probabilities": y, "doubled": z})
    return builder.build()


def both(model: bytes, **kwargs):
    ours = pytflite.Interpreter(model_content=model, **kwargs)
    theirs = litert.Interpreter(
        model_content=model,
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        **kwargs,
    )
    return ours, theirs


def outcome(call):
    """What a call did: ('ok', value) or (the exception's class, its message)."""
    try:
        return ("ok", call())
    except Exception as error:  # the point is to compare whatever happens
        return (type(error), str(error))


def assert_same_outcome(ours, theirs):
    """Same result, or the same message in an exception of LiteRT's class (or a subclass of it)."""
    if theirs[0] == "ok" or ours[0] == "ok":
        assert ours[0] == theirs[0], (ours, theirs)
    else:
        assert issubclass(ours[0], theirs[0]), (ours, theirs)
        # TF_LITE_ENSURE messages start with the C++ source location; the rest must match
        assert ours[1] == re.sub(r"[\w/]+\.(?:cc|h):\d+ ", "", theirs[1])
        return
    if isinstance(theirs[1], np.ndarray):
        assert_matches(ours[1], theirs[1])
    elif isinstance(theirs[1], list):
        assert len(ours[1]) == len(theirs[1])
        for a, b in zip(ours[1], theirs[1]):
            assert_matches(a, b)
    else:
        assert ours[1] == theirs[1]


def test_inference_and_details():
    x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    results = []
    for interpreter in both(mlp_model()):
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        results.append(interpreter)
    ours, theirs = results
    for getter in ("get_input_details", "get_output_details", "get_tensor_details"):
        mine, reference = getattr(ours, getter)(), getattr(theirs, getter)()
        assert len(mine) == len(reference)
        for a, b in zip(mine, reference):
            details_equal(a, b)
    for detail in theirs.get_output_details():
        assert_same_outcome(
            ("ok", ours.get_tensor(detail["index"])), ("ok", theirs.get_tensor(detail["index"]))
        )
    assert ours.num_subgraphs() == theirs.num_subgraphs() == 1
    assert ours.get_signature_list() == theirs.get_signature_list()


@pytest.mark.parametrize(
    "value",
    [
        np.zeros([1, 4], np.float64),
        np.zeros([1, 4], np.int32),
        np.zeros([4], np.float32),
        np.zeros([1, 5], np.float32),
        np.zeros([2, 4], np.float32),
        [[1.0, 2.0, 3.0, 4.0]],
        "abc",
        None,
        np.zeros([1, 4], np.float32)[:, ::-1],
        np.zeros([1, 4], np.float32),
    ],
    ids=["float64", "int32", "rank", "dim", "batch", "list", "str", "none", "strided", "ok"],
)
def test_set_tensor_checks(value):
    ours, theirs = both(mlp_model())
    before = [outcome(lambda i=i: i.set_tensor(0, value)) for i in (ours, theirs)]
    assert_same_outcome(*before)
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
    after = [outcome(lambda i=i: i.set_tensor(0, value)) for i in (ours, theirs)]
    assert_same_outcome(*after)


def _tensor_count_normalized(result):
    # LiteRT's FULLY_CONNECTED adds 6 scratch tensors in prepare; the tensor count is not part of the contract
    return (result[0], re.sub(r"max tensor index \d+", "max tensor index N", str(result[1])))


@pytest.mark.parametrize("index", [-1, 100])
def test_tensor_index_errors(index):
    ours, theirs = both(mlp_model())
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
    for call in (lambda i: i.get_tensor(index), lambda i: i.set_tensor(index, np.zeros([1, 4], np.float32))):
        assert_same_outcome(
            _tensor_count_normalized(outcome(lambda: call(ours))),
            _tensor_count_normalized(outcome(lambda: call(theirs))),
        )


def test_get_tensor_before_allocation():
    ours, theirs = both(mlp_model())
    assert_same_outcome(outcome(lambda: ours.get_tensor(0)), outcome(lambda: theirs.get_tensor(0)))
    assert_same_outcome(outcome(lambda: ours.get_tensor(1)), outcome(lambda: theirs.get_tensor(1)))


def test_invoke_before_allocate():
    ours, theirs = both(mlp_model())
    assert_same_outcome(outcome(ours.invoke), outcome(theirs.invoke))


def test_tensor_views_block_allocate_invoke_and_resize():
    for interpreter in both(mlp_model()):
        interpreter.allocate_tensors()
        view_function = interpreter.tensor(interpreter.get_input_details()[0]["index"])
        view_function()[...] = 1.0
        interpreter.invoke()  # holding the function alone does not block
        held = view_function()
        slice_of_view = held[:, 1:]
        del held
        gc.collect()
        for call in (
            interpreter.invoke,
            interpreter.allocate_tensors,
            lambda: interpreter.resize_tensor_input(0, [2, 4]),
        ):
            with pytest.raises(RuntimeError, match="There is at least 1 reference to internal data"):
                call()
        del slice_of_view
        gc.collect()
        interpreter.invoke()
    ours, theirs = both(mlp_model())
    outs = []
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
        interpreter.tensor(0)()[...] = np.array([[1, 2, 3, 4]], np.float32)
        interpreter.invoke()
        outs.append(interpreter.tensor(interpreter.get_output_details()[1]["index"])().copy())
    np.testing.assert_array_equal(outs[0], outs[1])


def test_reference_message_is_exact():
    ours, theirs = both(mlp_model())
    for interpreter in (ours, theirs):
        interpreter.allocate_tensors()
    keep = [ours.tensor(0)(), theirs.tensor(0)()]
    assert_same_outcome(outcome(ours.invoke), outcome(theirs.invoke))
    del keep


@pytest.mark.parametrize(
    ("shape", "strict"),
    [([3, 4], False), ([3, 4], True), ([1, 5], True), ([1, 4, 1], True), ([[1, 4]], False), ([2, 4], False)],
)
def test_resize_tensor_input(shape, strict):
    for dynamic in (False, True):
        ours, theirs = both(mlp_model(dynamic_batch=dynamic))
        assert_same_outcome(
            outcome(lambda: ours.resize_tensor_input(0, shape, strict=strict)),
            outcome(lambda: theirs.resize_tensor_input(0, shape, strict=strict)),
        )
        results = []
        for interpreter in (ours, theirs):

            def run(interpreter=interpreter):
                interpreter.allocate_tensors()
                input_shape = interpreter.get_input_details()[0]["shape"]
                interpreter.set_tensor(
                    0, np.arange(np.prod(input_shape), dtype=np.float32).reshape(input_shape)
                )
                interpreter.invoke()
                return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]

            results.append(outcome(run))
        assert_same_outcome(*results)
        for a, b in zip(ours.get_output_details(), theirs.get_output_details()):
            details_equal(a, b)


def test_signature_runner():
    ours, theirs = both(mlp_model(dynamic_batch=True))
    x = np.array([[0.5, -1.0, 2.0, 0.25], [1, 2, 3, 4], [0, 0, 0, 0]], np.float32)
    runners = [i.get_signature_runner() for i in (ours, theirs)]
    got = [r(features=x) for r in runners]
    assert list(got[0]) == list(got[1])
    for key in got[1]:
        np.testing.assert_allclose(got[0][key], got[1][key], rtol=1e-5)
    for kind in ("get_input_details", "get_output_details"):
        mine, reference = getattr(runners[0], kind)(), getattr(runners[1], kind)()
        assert list(mine) == list(reference)
        for name in reference:
            details_equal(mine[name], reference[name])
    for call in (
        lambda r: r(),
        lambda r: r(features=x, extra=x),
        lambda r: r(wrong=x),
    ):
        assert_same_outcome(outcome(lambda: call(runners[0])), outcome(lambda: call(runners[1])))
    for key in ("missing", None):
        assert_same_outcome(
            outcome(lambda: ours.get_signature_runner(key or "")),
            outcome(lambda: theirs.get_signature_runner(key or "")),
        )


def test_signature_runner_requires_a_key_with_several_signatures():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator(Op.RELU, [x], [y])
    builder.add_output(y)
    builder.add_signature("a", {"x": x}, {"y": y})
    builder.add_signature("b", {"x": x}, {"y": y})
    ours, theirs = both(builder.build())
    assert_same_outcome(
        outcome(lambda: ours.get_signature_runner()), outcome(lambda: theirs.get_signature_runner())
    )
    assert ours.get_signature_list() == theirs.get_signature_list()


def test_ops_details():
    ours, theirs = both(mlp_model())
    mine, reference = ours._get_ops_details(), theirs._get_ops_details()
    assert len(mine) == len(reference) == 3
    for a, b in zip(mine, reference):
        assert set(a) == set(b)
        assert a["index"] == b["index"] and a["op_name"] == b["op_name"]
        assert np.array_equal(a["inputs"], b["inputs"]) and a["inputs"].dtype == b["inputs"].dtype
        assert np.array_equal(a["outputs"], b["outputs"])
        assert a["operand_types"] == b["operand_types"] and a["result_types"] == b["result_types"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_threads": 0},
        {"num_threads": 2.0},
        {"num_threads": 2},
        {"experimental_op_resolver_type": "AUTO"},
        {"experimental_preserve_all_tensors": True},
    ],
)
def test_constructor_arguments(kwargs):
    model = mlp_model()
    ours = outcome(lambda: pytflite.Interpreter(model_content=model, **kwargs) and None)
    theirs = outcome(lambda: litert.Interpreter(model_content=model, **kwargs) and None)
    if theirs[0] == "ok" or ours[0] == "ok":
        assert ours[0] == theirs[0], (ours, theirs)
    else:
        assert issubclass(ours[0], theirs[0])
        if "resolver" not in ours[1]:
            assert ours[1] == theirs[1]


def test_constructor_needs_exactly_one_model_source(tmp_path):
    path = tmp_path / "m.tflite"
    path.write_bytes(mlp_model())
    for kwargs in ({}, {"model_path": str(path), "model_content": mlp_model()}):
        assert_same_outcome(
            outcome(lambda: pytflite.Interpreter(**kwargs) and None),
            outcome(lambda: litert.Interpreter(**kwargs) and None),
        )


def test_op_resolver_types_are_accepted_by_name():
    model = mlp_model()
    for kind in pytflite.OpResolverType:
        pytflite.Interpreter(model_content=model, experimental_op_resolver_type=kind).allocate_tensors()
    pytflite.Interpreter(model_content=model, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)


def test_preserve_all_tensors_keeps_intermediates():
    x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    values = []
    for interpreter in both(mlp_model(), experimental_preserve_all_tensors=True):
        interpreter.allocate_tensors()
        interpreter.set_tensor(0, x)
        interpreter.invoke()
        values.append(interpreter.get_tensor(3))  # h, an intermediate
    np.testing.assert_allclose(values[0], values[1], rtol=1e-6)

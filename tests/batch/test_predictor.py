"""Predictor against a plain Interpreter run, row by row or as one batch: corpus models (fixed batch,
signatures, a custom op) and ModelBuilder models with a dynamic batch dimension."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from pytflite import Interpreter
from pytflite.batch import BatchError, Predictor

from .conftest import EXAMPLES, corpus_model, dense_model, two_input_model

RAGGED = (7, 16, 3, 16)


def interpreter_outputs(path: str, rows: np.ndarray) -> list[np.ndarray]:
    """Each output of `path` for `rows` as one batch (resized to its size), by a plain Interpreter."""
    interpreter = Interpreter(model_path=path)
    interpreter.resize_tensor_input(0, rows.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], rows)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def test_dynamic_batch_cache_reuses_one_interpreter_per_size(dense_path, monkeypatch):
    allocations = []
    allocate = Interpreter.allocate_tensors
    monkeypatch.setattr(Interpreter, "allocate_tensors", lambda self: allocations.append(1) or allocate(self))
    predictor = Predictor(dense_path, cache_size=4)
    assert predictor.input_names == ("x",) and predictor.output_names == ("y", "s")
    rng = np.random.default_rng(0)
    for size in RAGGED:
        x = rng.standard_normal([size, 6]).astype(np.float32)
        out = predictor({"x": x})
        expected = interpreter_outputs(dense_path, x)
        allocations.pop()  # the reference's own allocation
        np.testing.assert_array_equal(out["y"], expected[0])
        np.testing.assert_array_equal(out["s"], expected[1])
    assert len(allocations) == 3  # sizes 7, 16, 3: the second 16 reused its interpreter
    assert [key[0] for key in predictor.cached_batch_sizes] == [7, 3, 16]


def test_cache_is_lru_of_cache_size(dense_path):
    predictor = Predictor(dense_path, cache_size=2)
    for size in RAGGED:
        predictor({"x": np.ones([size, 6], np.float32)})
    assert [key[0] for key in predictor.cached_batch_sizes] == [3, 16]


def test_pad_mode_runs_every_invoke_at_pad_to_rows(dense_path):
    predictor = Predictor(dense_path, batching="pad", pad_to=5)
    rng = np.random.default_rng(1)
    for size in RAGGED:
        x = rng.standard_normal([size, 6]).astype(np.float32)
        out = predictor({"x": x})
        assert out["y"].shape == (size, 4)
        np.testing.assert_allclose(out["y"], interpreter_outputs(dense_path, x)[0], rtol=1e-6)
    assert [key[0] for key in predictor.cached_batch_sizes] == [5]


def test_fixed_batch_of_one_runs_row_by_row(tmp_path):
    path = tmp_path / "one.tflite"
    path.write_bytes(dense_model(batch=1))
    x = np.random.default_rng(2).standard_normal([7, 6]).astype(np.float32)
    out = Predictor(str(path))({"x": x})
    rows = [interpreter_outputs(str(path), x[i : i + 1])[0] for i in range(7)]
    np.testing.assert_array_equal(out["y"], np.concatenate(rows))


def test_corpus_mlp_fixed_batch_of_two_with_an_odd_batch():
    path = corpus_model("mlp")
    x = np.random.default_rng(3).standard_normal([7, 20]).astype(np.float32)
    out = Predictor(path)({"features": x})["Identity"]
    padded = np.concatenate([x, x[-1:]])
    expected = np.concatenate([interpreter_outputs(path, padded[i : i + 2])[0] for i in range(0, 8, 2)])
    np.testing.assert_array_equal(out, expected[:7])


def test_corpus_multi_signature_each_signature_row_by_row():
    path = corpus_model("multi_signature")
    with pytest.raises(BatchError, match="signatures encode, decode|signatures decode, encode"):
        Predictor(path)
    rng = np.random.default_rng(4)
    x = rng.standard_normal([5, 8]).astype(np.float32)
    scale = rng.uniform(0.5, 2, [5]).astype(np.float32)
    encode = Predictor(path, signature="encode")
    assert set(encode.input_names) == {"x", "scale"} and set(encode.output_names) == {"code", "norm"}
    out = encode({"x": x, "scale": scale})
    runner = Interpreter(model_path=path).get_signature_runner("encode")
    for i in range(5):
        row = runner(x=x[i : i + 1], scale=scale[i : i + 1])
        np.testing.assert_array_equal(out["code"][i], row["code"][0])
        np.testing.assert_array_equal(out["norm"][i], row["norm"][0])
    recon = Predictor(path, signature="decode")({"code": out["code"]})["recon"]
    assert recon.shape == (5, 8)


def test_signature_with_two_dynamic_inputs_and_pickle(tmp_path):
    path = tmp_path / "mul.tflite"
    path.write_bytes(two_input_model())
    predictor = Predictor(str(path), signature="mul")
    a, b = np.arange(21, dtype=np.float32).reshape(7, 3), np.full([7, 3], 2.0, np.float32)
    np.testing.assert_array_equal(predictor({"left": a, "right": b})["product"], a * b)
    clone = pickle.loads(pickle.dumps(predictor))
    assert clone.cached_batch_sizes == ()  # rebuilt from its arguments, no interpreter travelled
    np.testing.assert_array_equal(clone({"left": a, "right": b})["product"], a * b)
    assert len(pickle.dumps(predictor)) < 1000


def test_custom_op_by_importable_reference_item_by_item():
    path = corpus_model("atan_custom")  # input x[5]: no batch axis, so each batch row is one input
    x = np.random.default_rng(5).standard_normal([4, 5]).astype(np.float32)
    for spec in (f"{EXAMPLES / 'atan_custom_op.py'}:register", str(EXAMPLES / "atan_custom_op.py")):
        predictor = Predictor(path, custom_ops=[spec])
        out = predictor({"x": x})
        assert out["Identity"].shape == (4, 5)
        clone = pickle.loads(pickle.dumps(predictor))
        np.testing.assert_array_equal(clone({"x": x})["Identity"], out["Identity"])
    offset = Interpreter(model_path=path, op_resolver=None).get_tensor(1)
    np.testing.assert_allclose(out["Identity"], np.arctan(x + offset), rtol=1e-6)


def test_python_delegate_by_reference(dense_path):
    x = np.random.default_rng(6).standard_normal([3, 6]).astype(np.float32)
    delegated = Predictor(dense_path, delegates=["replay:FULLY_CONNECTED,ADD"])
    plain = Predictor(dense_path)
    np.testing.assert_array_equal(delegated({"x": x})["s"], plain({"x": x})["s"])
    session = delegated._sessions[delegated.cached_batch_sizes[0]]
    assert session.interpreter.delegate_partitions()  # the delegate claimed the graph


@pytest.mark.parametrize(
    ("kwargs", "batch", "message"),
    [
        ({}, {"y": np.ones([2, 6], np.float32)}, "missing: x"),
        ({}, {"x": np.ones([2, 5], np.float32)}, r"takes \[n, 6\], the batch is \[2, 5\]"),
        ({}, {"x": np.ones([2, 6], np.complex64)}, "cannot convert complex64"),
        ({}, {"x": np.ones([0, 6], np.float32)}, "empty"),
        ({"batching": "pad"}, None, "needs pad_to"),
        ({"batching": "bucket"}, None, "batching must be one of"),
        ({"custom_ops": ["no_such_module_xyz:register"]}, None, "no_such_module_xyz"),
        ({"delegates": ["nodelegate"]}, None, "not module:Factory"),
        ({"signature": "nope"}, None, "no signature 'nope'"),
    ],
)
def test_bad_arguments_and_batches_are_named(dense_path, kwargs, batch, message):
    with pytest.raises(BatchError, match=message):
        Predictor(dense_path, **kwargs)(batch)


def test_integer_input_is_converted_to_the_model_type(dense_path):
    x = np.arange(12).reshape(2, 6)
    predictor = Predictor(dense_path)
    np.testing.assert_array_equal(predictor({"x": x})["y"], predictor({"x": x.astype(np.float32)})["y"])

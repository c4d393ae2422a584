"""Zero-copy loading (model/loading.py): constants view the mapped file or the given bytes, and the
interpreters of one model share its description."""

from __future__ import annotations

import gc
import mmap
import os
import weakref

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.limits import Limits
from pytflite.model.builder import ModelBuilder

WEIGHTS = np.arange(256 * 1024, dtype=np.float32).reshape(512, 512)  # 1 MiB


def fc_model(weights: np.ndarray = WEIGHTS) -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [1, weights.shape[1]])
    w = builder.add_constant("w", weights)
    y = builder.add_tensor("y", T.FLOAT32, [1, weights.shape[0]])
    builder.add_operator(Op.FULLY_CONNECTED, [x, w, -1], [y])
    builder.add_output(y)
    return builder.build()


def weights_of(interpreter: pytflite.Interpreter) -> np.ndarray:
    return interpreter.subgraphs[0].tensors[1].data


def test_constants_view_the_model_bytes_without_a_copy():
    content = fc_model()
    interpreter = pytflite.Interpreter(model_content=content)
    weights = weights_of(interpreter)
    assert np.shares_memory(weights, np.frombuffer(content, np.uint8))
    assert not weights.flags.writeable
    np.testing.assert_array_equal(weights, WEIGHTS)


def test_constants_view_the_mapped_file_without_a_copy(tmp_path):
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    model = pytflite.Interpreter(model_path=str(path)).model
    assert type(model.buffer).__name__ == "mmap"
    with pytest.raises(TypeError):
        model.buffer[0] = 1  # mapped read-only
    weights = model.subgraphs[0].tensors[1].data
    assert np.shares_memory(weights, np.frombuffer(model.buffer, np.uint8))


def _no_mmap(*args, **kwargs):
    raise OSError("mmap is unavailable on wasm32-wasi")  # what WASI's CPython raises


def test_a_file_that_cannot_be_mapped_is_read(tmp_path, monkeypatch):
    """Where the platform has no mmap (WASI), model_path reads the file, as LiteRT falls back to
    copying it; the model runs as from the mapped file."""
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    monkeypatch.setattr(mmap, "mmap", _no_mmap)
    interpreter = pytflite.Interpreter(model_path=str(path))
    assert isinstance(interpreter.model.buffer, bytes)
    interpreter.allocate_tensors()
    x = np.ones([1, 512], np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    np.testing.assert_array_equal(
        interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), x @ WEIGHTS.T
    )


def test_a_file_that_can_be_neither_mapped_nor_read_names_both_failures(tmp_path, monkeypatch):
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    monkeypatch.setattr(mmap, "mmap", _no_mmap)
    real_open = open

    class Unreadable:
        def __init__(self, file):
            self.file = file

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.file.close()

        def fileno(self):
            return self.file.fileno()

        def read(self):
            raise OSError(5, "Input/output error")

    monkeypatch.setattr("builtins.open", lambda *a, **k: Unreadable(real_open(*a, **k)))
    with pytest.raises(
        ValueError, match=r"Could not open .*mmap is unavailable on wasm32-wasi; read: .*Input/output"
    ):
        pytflite.Interpreter(model_path=str(path))


def test_a_mutable_buffer_is_copied_once():
    content = bytearray(fc_model())
    interpreter = pytflite.Interpreter(model_content=content)
    content[:] = bytes(len(content))  # the interpreter's constants do not change with it
    np.testing.assert_array_equal(weights_of(interpreter), WEIGHTS)


def test_interpreters_of_one_file_share_its_description(tmp_path):
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    first, second = (pytflite.Interpreter(model_path=str(path)) for _ in range(2))
    assert first.model is second.model
    assert (
        pytflite.Interpreter(model_path=str(path), limits=Limits(max_call_depth=3)).model is not first.model
    )


def test_a_rewritten_file_is_read_again(tmp_path):
    path = tmp_path / "fc.tflite"
    path.write_bytes(fc_model())
    before = pytflite.Interpreter(model_path=str(path))
    path.write_bytes(fc_model(-WEIGHTS))
    os.utime(path, ns=(0, os.stat(path).st_mtime_ns + 1))  # a new mtime even on a coarse clock
    after = pytflite.Interpreter(model_path=str(path))
    assert after.model is not before.model
    np.testing.assert_array_equal(weights_of(after), -WEIGHTS)


def test_interpreters_of_one_bytes_object_share_its_description():
    content = fc_model()
    first = pytflite.Interpreter(model_content=content)
    assert pytflite.Interpreter(model_content=content).model is first.model
    assert pytflite.Interpreter(model_content=bytes(bytearray(content))).model is not first.model


def test_the_description_lives_only_as_long_as_its_interpreters():
    interpreter = pytflite.Interpreter(model_content=fc_model())
    model = weakref.ref(interpreter.model)
    del interpreter
    gc.collect()
    assert model() is None

"""On-device training without TensorFlow: TF's training recipe (train / infer / save / restore
signatures, converted by TF 2.18.1; tests/fixtures/flex/make_training.py) trains here with TF 2.18.1's
losses, and its V1 checkpoints cross both ways: pytflite restores TF's, and writes the same bytes TF
writes for the same weights (TF 2.18.1 restoring a checkpoint pytflite saved was checked by hand:
logits within 1.2e-6). V2 checkpoints (tensor bundles, tests/fixtures/flex/make_bundles.py) are read
and written byte for byte as TF's SaveV2 writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytflite
from pytflite.flex import TfNode, kernel_for
from pytflite.flex.bundle import bundle_entries, read_bundle, write_bundle
from pytflite.flex.checkpoint import read_checkpoint, write_checkpoint
from pytflite.flex.dtypes import BY_NAME
from pytflite.flex.sstable import read_table, write_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "flex" / "training"
MODELS = ["training_mlp", "training_cnn", "training_mlp_adam", "training_mlp_v2_checkpoint"]
V1_MODELS = MODELS[
    :3
]  # the converter drops SaveV2 from the V2 model's `save`: TF's interpreter saves nothing
BUNDLES = FIXTURES.parent / "bundles"


def _interpreter(name: str) -> pytflite.Interpreter:
    return pytflite.Interpreter(model_path=str(FIXTURES / f"{name}.tflite"))


def _path(path) -> np.ndarray:
    return np.array(str(path), dtype=np.bytes_)


@pytest.mark.parametrize("name", MODELS)
def test_train_gives_tensorflows_losses_step_after_step(name):
    recorded = np.load(FIXTURES / f"{name}.npz")
    interpreter = _interpreter(name)
    infer, train = interpreter.get_signature_runner("infer"), interpreter.get_signature_runner("train")
    x, y = recorded["x"], recorded["y"]
    np.testing.assert_allclose(infer(x=x[0])["logits"], recorded["first_logits"], rtol=1e-5, atol=1e-6)
    losses = [float(train(x=x[i % 4], y=y[i % 4])["loss"]) for i in range(len(recorded["losses"]))]
    np.testing.assert_allclose(losses, recorded["losses"], rtol=1e-5)
    np.testing.assert_allclose(infer(x=x[0])["logits"], recorded["logits"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", V1_MODELS)
def test_checkpoints_cross_between_tensorflow_and_pytflite(name, tmp_path):
    recorded = np.load(FIXTURES / f"{name}.npz")
    interpreter = _interpreter(name)
    tf_checkpoint = FIXTURES / f"{name}.ckpt"
    restored = interpreter.get_signature_runner("restore")(checkpoint_path=_path(tf_checkpoint))
    assert set(restored) == set(read_checkpoint(str(tf_checkpoint)))
    logits = interpreter.get_signature_runner("infer")(x=recorded["x"][0])["logits"]
    np.testing.assert_allclose(logits, recorded["logits"], rtol=1e-6, atol=1e-6)
    saved = tmp_path / "weights.ckpt"
    interpreter.get_signature_runner("save")(checkpoint_path=_path(saved))
    assert saved.read_bytes() == tf_checkpoint.read_bytes()


def test_restore_v2_reads_the_bundle_tf_saved():
    recorded = np.load(FIXTURES / "training_mlp_v2_checkpoint.npz")
    interpreter = _interpreter("training_mlp_v2_checkpoint")
    train = interpreter.get_signature_runner("train")
    for i in range(5):  # weights away from the bundle's
        train(x=recorded["x"][i % 4], y=recorded["y"][i % 4])
    restore = interpreter.get_signature_runner("restore")
    restore(checkpoint_path=_path(FIXTURES / "training_mlp_v2_checkpoint.ckpt"))
    logits = interpreter.get_signature_runner("infer")(x=recorded["x"][0])["logits"]
    np.testing.assert_allclose(logits, recorded["first_logits"], rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="Failed to find any matching files for"):
        restore(checkpoint_path=_path(FIXTURES / "absent"))


@pytest.mark.parametrize("name", ["numbers", "strings"])
def test_v2_bundles_read_and_write_as_tf_writes_them(name, tmp_path):
    prefix = str(BUNDLES / name)
    entries = bundle_entries(prefix)[1]
    names = sorted(entries, key=lambda n: entries[n].offset)  # the order SaveV2 was given them in
    tensors = read_bundle(prefix, names)
    mine = str(tmp_path / name)
    write_bundle(mine, names, [value for _, value in tensors], [dtype for dtype, _ in tensors])
    for suffix in (".index", ".data-00000-of-00001"):
        assert Path(mine + suffix).read_bytes() == Path(prefix + suffix).read_bytes(), suffix


def test_a_v2_bundle_refuses_what_tf_refuses(tmp_path):
    restore = kernel_for("RestoreV2").compute
    prefix = np.array(str(BUNDLES / "numbers").encode(), dtype=object)
    names, slices = np.array([b"f"], dtype=object), np.array([b""], dtype=object)
    with pytest.raises(
        ValueError, match="tensor_name = f; expected dtype int32 does not equal original dtype float"
    ):
        restore(TfNode("RestoreV2", "r", {"dtypes": [BY_NAME["int32"]]}), prefix, names, slices)
    with pytest.raises(ValueError, match="Key q not found in checkpoint"):
        restore(
            TfNode("RestoreV2", "r", {"dtypes": [BY_NAME["float32"]]}),
            prefix,
            np.array([b"q"], object),
            slices,
        )
    corrupt = tmp_path / "bad"
    (tmp_path / "bad.index").write_bytes((BUNDLES / "numbers.index").read_bytes())
    data = bytearray((BUNDLES / "numbers.data-00000-of-00001").read_bytes())
    data[0] ^= 1
    (tmp_path / "bad.data-00000-of-00001").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"shard 0 \(12 bytes\): Checksum does not match: stored 2276747625"):
        restore(
            TfNode("RestoreV2", "r", {"dtypes": [BY_NAME["float32"]]}),
            np.array(str(corrupt).encode(), dtype=object),
            names,
            slices,
        )


def test_restore_names_what_it_cannot_find(tmp_path):
    interpreter = _interpreter("training_mlp")
    restore = interpreter.get_signature_runner("restore")
    with pytest.raises(RuntimeError, match="Failed to find any matching files"):
        restore(checkpoint_path=_path(tmp_path / "absent.ckpt"))
    other = tmp_path / "other.ckpt"
    write_checkpoint(str(other), ["unrelated:0"], [np.zeros(3, np.float32)], [BY_NAME["float32"]])
    with pytest.raises(RuntimeError, match=r'Tensor name "dense/\w+:0" not found in checkpoint files'):
        restore(checkpoint_path=_path(other))


def test_checkpoint_values_of_every_type_round_trip(tmp_path):
    arrays = {
        "f64": np.linspace(-1, 1, 6).reshape(2, 3),
        "i64": np.array([-(2**40), 0, 7], np.int64),
        "i8": np.array([-128, 127], np.int8),
        "flag": np.array([True, False]),
        "words": np.array([b"", b"\xff\x00x"], object),
        "z": np.array([1 + 2j, -3j], np.complex64),
        "half": np.array([0.5, -2.0], np.float16),
        "scalar": np.array(3.5, np.float32),
        "name\x00with\xffodd bytes": np.ones(1, np.float32),
    }
    path = str(tmp_path / "all.ckpt")
    dtypes = [BY_NAME["string" if a.dtype == object else a.dtype.name] for a in arrays.values()]
    write_checkpoint(path, list(arrays), list(arrays.values()), dtypes)
    read = read_checkpoint(path)
    for name, array in arrays.items():
        _, value = read[name]
        assert value.dtype == array.dtype and value.shape == array.shape, name
        np.testing.assert_array_equal(value, array)


def test_a_table_of_many_blocks_reads_back():
    entries = [(b"key%05d" % i, bytes([i % 256]) * (3000 + i)) for i in range(200)]  # ~700 KB: 3 blocks
    table = write_table(entries)
    assert list(read_table(table)) == entries
    with pytest.raises(ValueError, match="not a TensorFlow checkpoint table"):
        list(read_table(table[:-1]))

"""The attack surfaces the coverage-guided fuzzer (fuzz/guided.py) drives, as plain functions of the
input bytes that raise Crash for a crash, and each surface's seed corpus. Without atheris: the test suite
replays the committed corpus (fuzz/corpus/SURFACE/) through them (tests/robustness/test_guided_corpus.py).

- model:      bytes -> Interpreter(model_content=...): the reader, the verifier, building the subgraphs;
- allocate:   the same, then allocate_tensors (every kernel's prepare);
- invoke:     the same, then random inputs (from the bytes' hash) and two invokes (harness.run_model),
              on the builtin or BUILTIN_REF kernels, with or without the compiled ones (by the hash);
- flexbuffer: bytes -> decode_custom_options (a custom op's options);
- npy, npz, wav, png, parquet: bytes as a file of that kind -> the batch readers (open_source, load).

A crash is what fuzz/harness.py calls one: an exception that is not a deliberate refusal (a pytflite
error whose cause chain holds pytflite errors only; for the batch readers their BatchError too), or any
MemoryError.
"""

from __future__ import annotations

import hashlib
import io
import random
import tempfile
import wave
from pathlib import Path

import numpy as np

import pytflite
from fuzz.cases import corpus_seeds, random_graph
from fuzz.harness import FUZZ_LIMITS, cause_chain, is_refusal, run_model
from pytflite.batch.io import open_source
from pytflite.batch.predictor import BatchError
from pytflite.ops import jit

CORPUS = Path(__file__).resolve().parent / "corpus"
_READERS = ("npy", "npz", "wav", "png", "parquet")
SURFACES = ("model", "allocate", "invoke", "flexbuffer", *_READERS)
_SMALL_MODEL = 64 << 10  # corpus models up to this size seed the model surfaces


class Crash(Exception):
    """What the fuzz target raises for a crash (libFuzzer stops on an uncaught exception)."""


def _check(error: BaseException, refusals: tuple[type, ...] = ()) -> None:
    if isinstance(error, refusals) and not any(
        isinstance(link, MemoryError) for link in cause_chain(error, True)
    ):
        return
    if not isinstance(error, refusals) and is_refusal(error):
        return
    raise Crash(f"{type(error).__name__}: {error}") from error


def _model(data: bytes, allocate: bool) -> None:
    try:
        interpreter = pytflite.Interpreter(model_content=data, limits=FUZZ_LIMITS)
        if allocate:
            interpreter.allocate_tensors()
    except Exception as error:
        _check(error)


def _invoke(data: bytes) -> None:
    """run_model on the bytes, its inputs seeded by their hash, which also picks the kernels: the
    builtin or the reference (BUILTIN_REF) ones, with or without the compiled kernels."""
    digest = hashlib.sha256(data).digest()
    reference, compiled = digest[4] & 1, digest[4] & 2
    resolver = pytflite.OpResolverType.BUILTIN_REF if reference else pytflite.OpResolverType.AUTO
    jit.set_enabled(bool(compiled))
    try:
        outcome = run_model(data, int.from_bytes(digest[:4], "little"), resolver=resolver)
    finally:
        jit.set_enabled(None)
    if outcome.kind == "crash":
        raise Crash(outcome.detail)


def _flexbuffer(data: bytes) -> None:
    try:
        pytflite.decode_custom_options(data)
    except Exception as error:
        _check(error)


def _reader(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        if suffix in ("wav", "png"):  # the folder readers: one item a file
            path = Path(folder) / "items"
            path.mkdir()
            (path / f"item.{suffix}").write_bytes(data)
        else:
            path = Path(folder) / f"items.{suffix}"
            path.write_bytes(data)
        try:
            source = open_source(path, ["x"])
            for key in source.keys[:4]:
                source.load(key)
        except Exception as error:
            _check(error, (BatchError,))


def target(surface: str):
    if surface in ("model", "allocate"):
        return lambda data: _model(data, surface == "allocate")
    if surface == "invoke":
        return _invoke
    if surface == "flexbuffer":
        return _flexbuffer
    return lambda data: _reader(data, surface)


def seeds(surface: str) -> dict[str, bytes]:
    """The seed corpus of a surface: name -> bytes."""
    if surface in ("model", "allocate", "invoke"):
        found = {f"graph_{i}": random_graph(random.Random(f"guided:{i}")) for i in range(24)}
        found.update({s.name: s.data for s in corpus_seeds() if len(s.data) <= _SMALL_MODEL})
        return found
    if surface == "flexbuffer":
        from flatbuffers import flexbuffers

        values = [{"scale": 2.5}, {"axis": 1, "name": "x", "flags": [1, 2, 3]}, [1.5, 2, "a"], 7, "text"]
        return {f"options_{i}": bytes(flexbuffers.Dumps(v)) for i, v in enumerate(values)}
    rng = np.random.default_rng(0)
    if surface == "npy":
        buffer = io.BytesIO()
        np.save(buffer, rng.standard_normal((3, 4)).astype(np.float32))
        return {"floats": buffer.getvalue()}
    if surface == "npz":
        buffer = io.BytesIO()
        np.savez(buffer, x=rng.integers(0, 9, (2, 5)).astype(np.int8))
        return {"int8": buffer.getvalue()}
    if surface == "wav":
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as sound:
            sound.setnchannels(1)
            sound.setsampwidth(2)
            sound.setframerate(16000)
            sound.writeframes((rng.standard_normal(64) * 1000).astype("<i2").tobytes())
        return {"mono16": buffer.getvalue()}
    if surface == "png":
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (4, 5, 3), dtype=np.uint8)).save(buffer, format="PNG")
        return {"rgb": buffer.getvalue()}
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": [[1.0, 2.0], [3.0, 4.0]]}), buffer)
    return {"lists": buffer.getvalue()}


def write_seed_corpus(surface: str) -> Path:
    folder = CORPUS / surface
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for name, data in seeds(surface).items():
        (folder / name).write_bytes(data)
    return folder

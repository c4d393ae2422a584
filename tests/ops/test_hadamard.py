"""aeq.hadamard_rotation (a default custom op of LiteRT's BuiltinOpResolver) against LiteRT, bit for bit:
sizes below and above LiteRT's unrolled 64, rank 2 and 3, feature sizes the transform size does not
divide, sizes that are no power of two, int32 inputs; refusals."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import litert, requires_litert, run

pytestmark = requires_litert


def rotation(
    shape: tuple[int, ...], size: int, tensor_type: T = T.FLOAT32, output_type: T | None = None
) -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", tensor_type, list(shape))
    y = builder.add_tensor("y", output_type or tensor_type, list(shape))
    options = {"hadamard_size": size, "random_binary_vector": [1, -1] * max(1, size // 2)}
    builder.add_operator("aeq.hadamard_rotation", [x], [y], custom_options=options)
    builder.add_output(y)
    return builder.build()


def both(model: bytes, feeds: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ours = run(pytflite.Interpreter(model_content=model), feeds)[0]
    resolver = litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    theirs = run(litert.Interpreter(model_content=model, experimental_op_resolver_type=resolver), feeds)[0]
    return ours, theirs


CASES = [
    ((4, 8), 4),
    ((3, 16), 16),
    ((2, 5, 64), 64),
    ((1, 3, 256), 128),
    ((2, 256), 256),
    ((3, 10), 4),
    ((2, 3, 12), 8),
    ((4, 6), 3),
    ((2, 9), 1),
]


@pytest.mark.parametrize(("shape", "size"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_rotation_as_litert(shape, size):
    x = np.random.default_rng(size).standard_normal(shape).astype(np.float32) * 10
    ours, theirs = both(rotation(shape, size), [x])
    np.testing.assert_array_equal(ours.view(np.uint32), theirs.view(np.uint32))
    if size & (size - 1) == 0 and shape[-1] % size == 0:  # a rotation: lengths are kept
        np.testing.assert_allclose(np.linalg.norm(ours), np.linalg.norm(x), rtol=1e-5)


def test_int32_bits_are_transformed_as_litert_does():
    x = np.random.default_rng(1).integers(-(2**20), 2**20, (2, 8), dtype=np.int32)
    ours, theirs = both(rotation((2, 8), 8, T.INT32), [x])
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (rotation((2, 8), 0), "hadamard_size 0 is not positive"),
        (rotation((8,), 4), "needs an input of rank 2 or 3, got rank 1"),
        (rotation((2, 8), 4, T.INT8), "aeq.hadamard_rotation"),
    ],
)
def test_bad_models_are_refused_with_a_reason(model, message):
    interpreter = pytflite.Interpreter(model_content=model)
    with pytest.raises(RuntimeError, match=message):
        interpreter.allocate_tensors()

"""Small ModelBuilder models with a dynamic batch dimension, written to a temporary folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import CORPUS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def dense_model(batch: int = -1) -> bytes:
    """x[n, 6] -> FULLY_CONNECTED (4) -> RELU: y[n, 4], and a second output s = y + y (batch -1: dynamic)."""
    rng = np.random.default_rng(3)
    builder = ModelBuilder()
    rows = 1 if batch < 0 else batch
    x = builder.add_input("x", T.FLOAT32, [rows, 6], shape_signature=[batch, 6])
    weights = builder.add_constant("w", rng.standard_normal([4, 6]).astype(np.float32))
    bias = builder.add_constant("b", rng.standard_normal([4]).astype(np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [rows, 4], shape_signature=[batch, 4])
    builder.add_operator(Op.FULLY_CONNECTED, [x, weights, bias], [y], {"fused_activation_function": "RELU"})
    s = builder.add_tensor("s", T.FLOAT32, [rows, 4], shape_signature=[batch, 4])
    builder.add_operator(Op.ADD, [y, y], [s])
    builder.add_output(y)
    builder.add_output(s)
    return builder.build()


def two_input_model() -> bytes:
    """a[n, 3] * b[n, 3] -> product, with a signature 'mul' naming them."""
    builder = ModelBuilder()
    a = builder.add_input("a", T.FLOAT32, [1, 3], shape_signature=[-1, 3])
    b = builder.add_input("b", T.FLOAT32, [1, 3], shape_signature=[-1, 3])
    product = builder.add_tensor("product", T.FLOAT32, [1, 3], shape_signature=[-1, 3])
    builder.add_operator(Op.MUL, [a, b], [product])
    builder.add_output(product)
    builder.add_signature("mul", {"left": a, "right": b}, {"product": product})
    return builder.build()


@pytest.fixture
def dense_path(tmp_path) -> str:
    path = tmp_path / "dense.tflite"
    path.write_bytes(dense_model())
    return str(path)


def corpus_model(name: str) -> str:
    path = CORPUS / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"public corpus not found at {CORPUS}")
    return str(path)

"""DENSIFY against LiteRT: sparse constants written by ModelBuilder (CSR and dense levels, traversal
orders, blocks; float32, float16 and int8), the sparse tensor's own details and get_tensor, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import DimensionType
from pytflite.core.types import AllocationType
from pytflite.model.builder import ModelBuilder
from tests.oracle import assert_matches, details_equal, litert_interpreter, requires_litert, run

pytestmark = requires_litert

DENSE, CSR = DimensionType.DENSE, DimensionType.SPARSE_CSR


def densify_model(
    dense, formats, order=None, block_map=(), block_size=(), tensor_type=None, quantization=None
):
    """DENSIFY of a sparse constant, added to a runtime input so that the result flows on."""
    builder = ModelBuilder()
    tensor_type = (
        tensor_type or {np.float32: T.FLOAT32, np.float16: T.FLOAT16, np.int8: T.INT8}[dense.dtype.type]
    )
    sparse = builder.add_sparse_constant(
        "w",
        dense,
        formats,
        traversal_order=order,
        block_map=block_map,
        block_size=block_size,
        tensor_type=tensor_type,
        quantization=quantization,
    )
    expanded = builder.add_tensor("dense", tensor_type, dense.shape, quantization=quantization)
    builder.add_operator(Op.DENSIFY, [sparse], [expanded])
    builder.add_output(expanded)
    return builder.build()


def assert_same_as_litert(model):
    ours, theirs = pytflite.Interpreter(model_content=model), litert_interpreter(model)
    mine, reference = run(ours, [])[0], run(theirs, [])[0]
    assert mine.dtype == reference.dtype and np.array_equal(mine, reference)
    details_equal(ours.get_tensor_details()[0], theirs.get_tensor_details()[0])
    stored, stored_reference = ours.get_tensor(0), theirs.get_tensor(0)  # the stored values, flat
    assert stored.shape == stored_reference.shape and np.array_equal(stored, stored_reference)
    return mine


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_densify_matches_litert(data):
    rank = data.draw(st.integers(1, 3))
    blocked = data.draw(st.booleans()) and rank >= 2
    block_map, block_size = ((rank - 1,), (data.draw(st.sampled_from([2, 4])),)) if blocked else ((), ())
    shape = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    if blocked:
        shape[-1] *= block_size[0]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    dtype = data.draw(st.sampled_from([np.float32, np.float16, np.int8]))
    dense = (rng.standard_normal(shape) * 20).astype(dtype)
    dense[rng.random(shape) < 0.6] = 0
    dense.flat[-1] = 3  # a sparse constant with no values at all has no buffer: not a constant
    formats = [data.draw(st.sampled_from([DENSE, CSR])) for _ in range(rank)]
    order = list(data.draw(st.permutations(range(rank)))) + [rank] * blocked
    quantization = (0.5, 0) if dtype == np.int8 else None
    model = densify_model(dense, formats, order, block_map, block_size, quantization=quantization)
    assert np.array_equal(assert_same_as_litert(model), dense)


def test_densified_weights_feed_a_fully_connected():
    rng = np.random.default_rng(4)
    weights = rng.standard_normal((6, 8)).astype(np.float32)
    weights[:, 2:6] = 0
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3, 8])
    sparse = builder.add_sparse_constant("w", weights, ["DENSE", "SPARSE_CSR"], block_map=[1], block_size=[2])
    dense = builder.add_tensor("w_dense", T.FLOAT32, weights.shape)
    y = builder.add_tensor("y", T.FLOAT32, [3, 6])
    builder.add_operator(Op.DENSIFY, [sparse], [dense])
    builder.add_operator(Op.FULLY_CONNECTED, [x, dense, -1], [y])
    builder.add_output(y)
    model = builder.build()
    feeds = [rng.standard_normal((3, 8)).astype(np.float32)]
    interpreter = pytflite.Interpreter(model_content=model)
    ours = run(interpreter, feeds)[0]
    assert_matches(ours, run(litert_interpreter(model), feeds)[0])
    np.testing.assert_allclose(ours, feeds[0] @ weights.T, rtol=1e-5, atol=1e-6)
    # expanded once, in prepare, into memory of its own
    assert interpreter.subgraphs[0].tensors[dense].allocation_type == AllocationType.PERSISTENT_RO


def test_densify_rejects_what_it_cannot_expand():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 2])
    y = builder.add_tensor("y", T.FLOAT32, [2, 2])
    builder.add_operator(Op.DENSIFY, [x], [y])
    builder.add_output(y)
    with pytest.raises(RuntimeError, match="DENSIFY input must be a constant tensor"):
        pytflite.Interpreter(model_content=builder.build()).allocate_tensors()
    builder = ModelBuilder()
    c = builder.add_constant("c", np.ones((2, 2), np.float32))
    y = builder.add_tensor("y", T.FLOAT32, [2, 2])
    builder.add_operator(Op.DENSIFY, [c], [y])
    builder.add_output(y)
    with pytest.raises(RuntimeError, match="DENSIFY input has no sparsity parameters"):
        pytflite.Interpreter(model_content=builder.build()).allocate_tensors()
    model = densify_model(np.eye(2, dtype=np.int32), [DENSE, CSR], tensor_type=T.INT32)
    with pytest.raises(RuntimeError, match=r"Type INT32 \(input\) is unsupported by op DENSIFY"):
        pytflite.Interpreter(model_content=model).allocate_tensors()

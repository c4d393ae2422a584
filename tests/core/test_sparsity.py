"""The sparse tensor format: compressing and expanding round-trip, over shapes, formats, traversal
orders and blocks; and the format itself on a hand-checked example."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytflite.core.quantization import DimensionType
from pytflite.core.sparsity import densify, sparsify
from pytflite.errors import KernelError

DENSE, CSR = DimensionType.DENSE, DimensionType.SPARSE_CSR


@st.composite
def sparse_cases(draw):
    rank = draw(st.integers(1, 3))
    block_map = tuple(sorted(draw(st.sets(st.integers(0, rank - 1), max_size=2))))
    block_size = tuple(draw(st.sampled_from([1, 2, 4])) for _ in block_map)
    shape = []
    for dimension in range(rank):
        multiple = block_size[block_map.index(dimension)] if dimension in block_map else 1
        shape.append(multiple * draw(st.integers(1, 4)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    dense = rng.standard_normal(shape).astype(np.float32)
    dense[rng.random(shape) < draw(st.floats(0, 1))] = 0
    formats = [draw(st.sampled_from([DENSE, CSR])) for _ in range(rank)]
    order = list(draw(st.permutations(range(rank)))) + list(
        rank + np.array(draw(st.permutations(range(len(block_map)))), dtype=int)
    )
    return dense, formats, order, block_map, block_size


@settings(max_examples=150, deadline=None)
@given(sparse_cases())
def test_round_trip(case):
    dense, formats, order, block_map, block_size = case
    values, sparsity = sparsify(dense, formats, order, block_map, block_size)
    assert np.array_equal(densify(values, dense.shape, sparsity), dense)
    if formats and all(f == CSR for f in formats) and not block_map:
        assert values.size == np.count_nonzero(dense)  # only nonzeros are stored


def test_csr_matrix_layout():
    dense = np.array([[0, 5, 0, 0], [0, 0, 0, 0], [7, 0, 0, 8]], np.float32)
    values, sparsity = sparsify(dense, [DENSE, CSR])
    assert values.tolist() == [5, 7, 8]
    rows, columns = sparsity.dim_metadata
    assert rows.format == DENSE and rows.dense_size == 3
    assert columns.array_segments.tolist() == [0, 1, 1, 3]
    assert columns.array_indices.tolist() == [1, 0, 3]


def test_blocks_store_whole_blocks():
    dense = np.zeros((2, 8), np.int8)
    dense[0, 5] = 3  # block 1 of row 0 is stored whole, zeros included
    values, sparsity = sparsify(dense, [DENSE, CSR], block_map=[1], block_size=[4])
    assert values.tolist() == [0, 3, 0, 0]
    assert sparsity.block_map == (1,) and sparsity.dim_metadata[2].dense_size == 4
    assert np.array_equal(densify(values, dense.shape, sparsity), dense)


def test_malformed_sparsity_is_reported():
    values, sparsity = sparsify(np.eye(3, dtype=np.float32), [DENSE, CSR])
    with pytest.raises(KernelError, match="describes 3 stored values but the tensor holds 2"):
        densify(values[:2], (3, 3), sparsity)
    with pytest.raises(KernelError, match="outside dimension 1 of size 2"):
        densify(values, (3, 2), sparsity)
    with pytest.raises(KernelError, match="traversal dimensions"):
        densify(values, (3, 3, 1), sparsity)
    with pytest.raises(ValueError, match="must list the 2 dimensions"):
        sparsify(np.eye(2), [DENSE, CSR], traversal_order=[0, 2, 1], block_map=[1], block_size=[1])

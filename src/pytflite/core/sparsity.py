"""TFLite's sparse tensor format: expanding a sparse constant to its dense form, and compressing one.

A sparse tensor stores only some of its values, walked in `traversal_order` over the tensor's dimensions
plus one extra dimension per block (`block_map[b]` names the dimension block b splits; its size is the
block's dense_size). Each level of that walk is DENSE (every index 0..dense_size-1) or SPARSE_CSR: a node
at the level above, numbered p, has the children `array_indices[array_segments[p]:array_segments[p + 1]]`.
The stored values are the leaves of the walk, in order. A DENSE level numbers its children p*size + i,
a CSR level by their position in `array_indices`.

Both directions work level by level on whole NumPy arrays of nodes (no per-element Python).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import KernelError
from .quantization import DimensionMetadata, DimensionType, SparsityParameters


def densify(values: np.ndarray, shape: Sequence[int], sparsity: SparsityParameters) -> np.ndarray:
    """The dense array of `shape` that the stored `values` and `sparsity` describe (FormatConverter's
    SparseToDense): zeros where nothing is stored."""
    order, levels = sparsity.traversal_order, sparsity.dim_metadata
    block_map = sparsity.block_map or ()
    rank = len(shape)
    if len(order) != len(levels) or len(order) != rank + len(block_map):
        raise KernelError(
            f"sparsity has {len(order)} traversal dimensions and {len(levels)} dimension metadata for a "
            f"{rank}-D tensor with {len(block_map)} block dimensions"
        )
    numbers = np.zeros(1, np.int64)  # each node's number at the current level
    coordinates: list[np.ndarray] = []  # per level walked, each node's index
    for meta in levels:
        if meta.format == DimensionType.DENSE:
            size = meta.dense_size
            parents = np.repeat(np.arange(numbers.size), size)
            index = np.tile(np.arange(size, dtype=np.int64), numbers.size)
            numbers = numbers[parents] * size + index
        else:
            segments = meta.array_segments.astype(np.int64)
            indices = meta.array_indices.astype(np.int64)
            known = numbers + 1 < segments.size
            start = np.where(known, segments[np.minimum(numbers, segments.size - 1)], 0)
            stop = np.where(known, segments[np.minimum(numbers + 1, segments.size - 1)], 0)
            counts = np.maximum(stop - start, 0).astype(np.intp)  # np.repeat's count type
            parents = np.repeat(np.arange(numbers.size), counts)
            first_child = np.cumsum(counts) - counts
            numbers = start[parents] + np.arange(parents.size) - first_child[parents]
            inside = numbers < indices.size  # as TFLite: a segment past the indices ends early
            parents, numbers = parents[inside], numbers[inside]
            index = indices[numbers]
        coordinates = [c[parents] for c in coordinates] + [index]
    if numbers.size > values.size:
        raise KernelError(
            f"sparsity describes {numbers.size} stored values but the tensor holds {values.size}"
        )
    original = [np.zeros(numbers.size, np.int64) for _ in range(rank)]
    for level in range(rank):
        original[order[level]] = coordinates[level]
    for level in range(rank, len(order)):
        block = order[level] - rank
        dimension = block_map[block]
        original[dimension] = (
            original[dimension] * levels[order[rank + block]].dense_size + coordinates[level]
        )
    for dimension, size in enumerate(shape):
        if numbers.size and (original[dimension].min() < 0 or original[dimension].max() >= size):
            raise KernelError(f"sparsity indices fall outside dimension {dimension} of size {size}")
    dense = np.zeros(tuple(shape), values.dtype)
    if numbers.size:
        dense[tuple(original)] = values[: numbers.size]
    return dense


def sparsify(
    dense: np.ndarray,
    formats: Sequence[DimensionType],
    traversal_order: Sequence[int] | None = None,
    block_map: Sequence[int] = (),
    block_size: Sequence[int] = (),
) -> tuple[np.ndarray, SparsityParameters]:
    """The stored values and sparsity parameters of `dense` (FormatConverter's DenseToSparse).

    `formats` gives each original dimension's format; block dimensions are always DENSE. A CSR level
    keeps only the children with a nonzero somewhere below them; the values of a DENSE innermost level
    are all stored, those of a CSR one only where nonzero.
    """
    dense = np.asarray(dense)
    rank = dense.ndim
    order = tuple(range(rank + len(block_map))) if traversal_order is None else tuple(traversal_order)
    if len(formats) != rank or len(block_map) != len(block_size):
        raise ValueError("sparsify needs a format per dimension and a size per block")
    if sorted(order[:rank]) != list(range(rank)) or sorted(order[rank:]) != list(range(rank, len(order))):
        raise ValueError(
            f"traversal order {list(order)} must list the {rank} dimensions, then the block dimensions"
        )
    split_shape: list[int] = []  # each blocked dimension split into (blocks, block size)
    inner_axes = []
    for dimension, size in enumerate(dense.shape):
        if dimension in block_map:
            block = block_size[list(block_map).index(dimension)]
            if size % block:
                raise ValueError(
                    f"dimension {dimension} of size {size} is not a multiple of block size {block}"
                )
            split_shape += [size // block, block]
            inner_axes.append(len(split_shape) - 1)
        else:
            split_shape.append(size)
    outer_axes = [a for a in range(len(split_shape)) if a not in inner_axes]
    block_axes = [inner_axes[sorted(block_map).index(d)] for d in block_map]
    expanded = dense.reshape(split_shape).transpose(outer_axes + block_axes).transpose(order)
    level_formats = [formats[order[i]] if order[i] < rank else DimensionType.DENSE for i in range(len(order))]
    nonzero = expanded != 0
    numbers = np.zeros(1, np.int64)  # flat positions of the kept nodes in the grid of the levels so far
    metadata = []
    for level, (size, form) in enumerate(zip(expanded.shape, level_formats)):
        children = (numbers[:, None] * size + np.arange(size)).reshape(numbers.size, size)
        if form == DimensionType.DENSE:
            metadata.append(DimensionMetadata(DimensionType.DENSE, dense_size=size))
            numbers = children.reshape(-1)
            continue
        below = nonzero.reshape(*expanded.shape[: level + 1], -1).any(axis=-1).reshape(-1)
        keep = below[children]
        segments = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int32)
        indices = np.nonzero(keep)[1].astype(np.int32)
        metadata.append(
            DimensionMetadata(DimensionType.SPARSE_CSR, array_segments=segments, array_indices=indices)
        )
        numbers = children[keep]
    parameters = SparsityParameters(order, tuple(block_map) if block_map else None, tuple(metadata))
    return expanded.reshape(-1)[numbers], parameters

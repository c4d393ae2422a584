"""Quantization and sparsity parameters of a tensor (TfLiteQuantization, TfLiteSparsity).

A quantized value q stands for the real number `scale * (q - zero_point)`. Per-tensor quantization has one
scale; per-channel (per-axis) quantization has one scale and zero point per slice along
`quantized_dimension`. `QuantizationParams` is the legacy single-pair view TFLite keeps beside it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


def _frozen_array(values, dtype) -> np.ndarray:
    array = np.array(values, dtype=dtype).reshape(-1)
    array.flags.writeable = False
    return array


@dataclass(frozen=True)
class QuantizationParams:
    """The legacy per-tensor view (TfLiteQuantizationParams): (0.0, 0) unless exactly one scale."""

    scale: float = 0.0
    zero_point: int = 0


NOT_QUANTIZED = QuantizationParams()  # the legacy view of a tensor without one scale (frozen: shared)


@dataclass(frozen=True, eq=False)
class AffineQuantization:
    """Affine quantization (TfLiteAffineQuantization): scales and zero points as read-only arrays."""

    scale: np.ndarray
    zero_point: np.ndarray
    quantized_dimension: int = 0

    def __init__(self, scale, zero_point, quantized_dimension: int = 0):
        object.__setattr__(self, "scale", _frozen_array(scale, np.float32))
        object.__setattr__(self, "zero_point", _frozen_array(zero_point, np.int64))
        object.__setattr__(self, "quantized_dimension", int(quantized_dimension))

    @property
    def is_per_tensor(self) -> bool:
        return self.scale.size == 1

    def legacy(self) -> QuantizationParams:
        if self.scale.size != 1 or self.zero_point.size < 1:
            return NOT_QUANTIZED
        return QuantizationParams(float(self.scale[0]), int(self.zero_point[0]))

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, AffineQuantization)
            and np.array_equal(self.scale, other.scale)
            and np.array_equal(self.zero_point, other.zero_point)
            and self.quantized_dimension == other.quantized_dimension
        )

    def __repr__(self) -> str:
        return (
            f"AffineQuantization(scale={self.scale.tolist()}, zero_point={self.zero_point.tolist()}, "
            f"quantized_dimension={self.quantized_dimension})"
        )


@dataclass(frozen=True)
class BlockwiseQuantization:
    """Blockwise quantization: scales (float16) and zero points live in other tensors of the subgraph."""

    scale_tensor: int
    zero_point_tensor: int  # -1: all zero points are 0
    block_size: int
    quantized_dimension: int = 0


class DimensionType(enum.IntEnum):
    DENSE = 0
    SPARSE_CSR = 1


@dataclass(frozen=True, eq=False)
class DimensionMetadata:
    """How one dimension of a sparse tensor is stored: densely (dense_size) or as CSR segments/indices."""

    format: DimensionType
    dense_size: int = 0
    array_segments: np.ndarray = field(default_factory=lambda: _frozen_array([], np.int32))
    array_indices: np.ndarray = field(default_factory=lambda: _frozen_array([], np.int32))


@dataclass(frozen=True, eq=False)
class SparsityParameters:
    """TfLiteSparsity: traversal order, block map and per-dimension metadata of a sparse constant."""

    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...] | None
    dim_metadata: tuple[DimensionMetadata, ...]

    def as_dict(self) -> dict:
        """The `sparsity_parameters` entry of a tensor's details dict, as LiteRT builds it."""
        result: dict = {"traversal_order": np.array(self.traversal_order, dtype=np.int32)}
        if self.block_map is not None:
            result["block_map"] = np.array(self.block_map, dtype=np.int32)
        entries = []
        for meta in self.dim_metadata:
            if meta.format == DimensionType.DENSE:
                entries.append({"format": 0, "dense_size": meta.dense_size})
            else:
                entries.append(
                    {
                        "format": 1,
                        "array_segments": meta.array_segments.astype(np.int32),
                        "array_indices": meta.array_indices.astype(np.int32),
                    }
                )
        result["dim_metadata"] = entries
        return result

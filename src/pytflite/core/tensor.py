"""Tensor: one value slot of a subgraph (TfLiteTensor).

`data` is a NumPy array of the tensor's shape and storage dtype, or None while the tensor has no memory.
Where it points depends on `allocation_type`: a read-only view on the mapped model file for constants,
a view into the subgraph's arena for ordinary tensors, an array of its own for dynamic tensors. Kernels
read and write `data` in place; they must look it up at each call, because re-planning moves it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .quantization import NOT_QUANTIZED, AffineQuantization, BlockwiseQuantization, SparsityParameters
from .types import AllocationType, TensorType, bytes_required, storage_dtype, type_name

if TYPE_CHECKING:
    from .delegate import Delegate

NULL_BUFFER_HANDLE = -1  # kTfLiteNullBufferHandle


class Tensor:
    """A tensor's type, shape, quantization, memory and delegate state, with the C API's field names."""

    __slots__ = (
        "index",
        "name",
        "type",
        "shape",
        "dims_signature",
        "data",
        "bytes",
        "allocation_type",
        "quantization",
        "params",
        "sparsity",
        "is_variable",
        "delegate",
        "buffer_handle",
        "data_is_stale",
        "buffer_index",
        "kernel_scratch",
    )

    def __init__(
        self,
        index: int,
        tensor_type: TensorType | None = None,
        shape: tuple[int, ...] = (),
        name: str = "",
        *,
        shape_signature: tuple[int, ...] | None = None,
        quantization: AffineQuantization | BlockwiseQuantization | None = None,
        sparsity: SparsityParameters | None = None,
        is_variable: bool = False,
        allocation_type: AllocationType = AllocationType.MEM_NONE,
        data: np.ndarray | None = None,
        buffer_index: int = 0,
    ):
        self.index = index
        self.name = name
        self.type = tensor_type
        self.shape = tuple(shape)
        self.dims_signature = None if shape_signature is None else tuple(shape_signature)
        self.data = data
        self.bytes = 0 if tensor_type is None else bytes_required(tensor_type, self.shape)
        self.allocation_type = allocation_type
        self.set_quantization(quantization)
        self.sparsity = sparsity
        self.is_variable = is_variable
        self.delegate: Delegate | None = None
        self.buffer_handle = NULL_BUFFER_HANDLE
        self.data_is_stale = False
        self.buffer_index = buffer_index  # the model buffer a constant came from (0: none)
        # memory one of pytflite's builtin kernels added for itself (ops/common.add_scratch_tensors): no
        # tensor of TFLite's, so get_tensor_details leaves it out as LiteRT has no such tensor
        self.kernel_scratch = False

    @property
    def shape_signature(self) -> tuple[int, ...]:
        """The model's shape with -1 for dimensions unknown until run time; the current shape if the
        model gave no signature (TfLiteTensorGetDimsSignature)."""
        return self.dims_signature if self.dims_signature else self.shape

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of `data`."""
        return storage_dtype(self.type)

    @property
    def is_constant(self) -> bool:
        """A constant of the model (TFLite's IsConstantTensor: kTfLiteMmapRo)."""
        return self.allocation_type == AllocationType.MMAP_RO

    @property
    def is_constant_or_persistent(self) -> bool:
        """Known at prepare time: a model constant, or an output a kernel computed in prepare
        (TFLite's IsConstantOrPersistentTensor: kTfLiteMmapRo or kTfLitePersistentRo). What kernels
        test before reading a tensor's values in prepare."""
        return self.allocation_type in (AllocationType.MMAP_RO, AllocationType.PERSISTENT_RO)

    @property
    def is_dynamic(self) -> bool:
        return self.allocation_type == AllocationType.DYNAMIC

    def set_quantization(self, quantization: AffineQuantization | BlockwiseQuantization | None) -> None:
        """Replace the quantization and keep the legacy `params` view in step with it."""
        self.quantization = quantization
        self.params = quantization.legacy() if isinstance(quantization, AffineQuantization) else NOT_QUANTIZED

    def __repr__(self) -> str:
        state = "no data" if self.data is None else self.allocation_type.name
        return f"Tensor(#{self.index} {self.name!r} {type_name(self.type)}{list(self.shape)} {state})"

"""SingleOpModel: build a one-operator model with ModelBuilder and check it against LiteRT."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import pytflite
from pytflite import TensorType
from pytflite.model.builder import ModelBuilder
from tests.oracle import compare_with_litert, run


@dataclass
class Operand:
    """An operator input: a runtime input (value fed at invoke) or a constant baked into the model."""

    value: np.ndarray
    constant: bool = False
    type: TensorType | None = None
    quantization: Any = None
    shape_signature: Sequence[int] | None = None


@dataclass
class SingleOpModel:
    op: Any
    inputs: list[Operand | None]  # None: an absent optional input (-1)
    output_types: list[TensorType]
    options: Any = None
    version: int = 1
    output_quantization: list[Any] = field(default_factory=list)
    output_shapes: list[Sequence[int]] | None = None  # declared output shapes; kernels compute the real ones

    def build(self) -> tuple[bytes, list[np.ndarray]]:
        builder = ModelBuilder()
        indices, feeds = [], []
        for i, operand in enumerate(self.inputs):
            if operand is None:
                indices.append(-1)
                continue
            value = np.asarray(operand.value)
            tensor_type = operand.type or _type_of(value)
            if operand.constant:
                indices.append(
                    builder.add_tensor(
                        f"c{i}", tensor_type, value.shape, data=value, quantization=operand.quantization
                    )
                )
            else:
                indices.append(
                    builder.add_input(
                        f"in{i}",
                        tensor_type,
                        value.shape,
                        quantization=operand.quantization,
                        shape_signature=operand.shape_signature,
                    )
                )
                feeds.append(value)
        outputs = []
        for i, tensor_type in enumerate(self.output_types):
            quantization = self.output_quantization[i] if i < len(self.output_quantization) else None
            shape = self.output_shapes[i] if self.output_shapes else []
            outputs.append(builder.add_tensor(f"out{i}", tensor_type, shape, quantization=quantization))
            builder.add_output(outputs[-1])
        builder.add_operator(self.op, indices, outputs, self.options, version=self.version)
        return builder.build(), feeds

    def check(
        self,
        rtol: float = 1e-5,
        scale: float | None = None,
        resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES",
    ) -> list[np.ndarray]:
        """Run in LiteRT and pytflite with the OpResolverType named `resolver`; assert the outputs match
        (floats within `rtol` of the outputs' magnitude, or of `scale`); return pytflite's."""
        model, feeds = self.build()
        return compare_with_litert(model, feeds, rtol=rtol, scale=scale, resolver=resolver)

    def fails(self, message: str) -> None:
        """pytflite refuses the model with `message` (at allocation or invocation)."""
        model, feeds = self.build()
        with pytest.raises(RuntimeError, match=message):
            run(pytflite.Interpreter(model_content=model), feeds)


def check_ref(model: SingleOpModel) -> list[np.ndarray]:
    """Compare with LiteRT when both run BUILTIN_REF (TFLite's reference kernels)."""
    return model.check(resolver="BUILTIN_REF")


def _type_of(value: np.ndarray) -> TensorType:
    from pytflite.core.types import tensor_type_for_dtype

    return tensor_type_for_dtype(value.dtype)

"""Compare get_tensor_details() with LiteRT's, index for index, for one model under one resolver."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

import pytflite
from tests.oracle import litert

RESOLVERS = ("BUILTIN", "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF")


def listed(interpreter, inputs: Sequence[np.ndarray] | None = None) -> list[tuple]:
    """(index, name, shape, dtype) of every tensor get_tensor_details() lists after allocate_tensors, or
    after an invoke with `inputs` when given."""
    interpreter.allocate_tensors()
    if inputs is not None:
        for detail, value in zip(interpreter.get_input_details(), inputs):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
    return [
        (d["index"], d["name"], tuple(int(n) for n in d["shape"]), np.dtype(d["dtype"]).name)
        for d in interpreter.get_tensor_details()
    ]


def assert_listed_as_litert(
    model: bytes | str | Path,
    resolver: str = "BUILTIN",
    num_threads: int | None = None,
    inputs: Sequence[np.ndarray] | None = None,
) -> list[tuple]:
    """The listing of `model` (bytes or a path) under the OpResolverType named `resolver`, after an
    invoke with `inputs` when given; fails showing the first difference when it is not LiteRT's."""
    source = {"model_content": model} if isinstance(model, bytes) else {"model_path": str(model)}
    theirs = listed(
        litert.Interpreter(
            **source,
            experimental_op_resolver_type=getattr(litert.OpResolverType, resolver),
            num_threads=num_threads,
        ),
        inputs,
    )
    ours = listed(
        pytflite.Interpreter(
            **source,
            experimental_op_resolver_type=getattr(pytflite.OpResolverType, resolver),
            num_threads=num_threads,
        ),
        inputs,
    )
    for mine, reference in zip(ours, theirs):
        assert mine == reference, f"{resolver}: pytflite lists {mine} where LiteRT lists {reference}"
    assert len(ours) == len(theirs), f"{resolver}: pytflite lists {len(ours)} tensors, LiteRT {len(theirs)}"
    return ours

"""One-operator models for the kernels whose index arrays the public corpus does not reach, written as a
small corpus (manifest.json, NAME.tflite, NAME.npz with input_I keys) that driver.py runs like the real
one: GATHER and GATHER_ND with int64 indices, every resizing path, DENSIFY's CSR levels, ARG_MAX's row
kernel on NaN rows, TOPK_V2 and UNIQUE (and CAST's saturation limits). Under 32-bit NumPy each failed with "Cannot cast array data from
dtype('int64') to dtype('int32')", or computed a wrong index, before its indices were made np.intp.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization, DimensionType
from pytflite.model.builder import ModelBuilder
from tests.single_op import Operand, SingleOpModel


def _resize(op, x, size, tensor_type, constant=True, **options) -> SingleOpModel:
    quantization = None if tensor_type == T.FLOAT32 else AffineQuantization(0.25, 0)
    return SingleOpModel(
        op,
        [Operand(x, type=tensor_type, quantization=quantization), Operand(np.int32(size), constant=constant)],
        [tensor_type],
        {"align_corners": False, "half_pixel_centers": False, **options},
        version=1 if tensor_type == T.FLOAT32 else 4,
        output_quantization=[quantization],
    )


def _densify() -> tuple[bytes, list[np.ndarray]]:
    """A CSR-compressed constant expanded by DENSIFY, then added to a runtime input."""
    dense = np.zeros([4, 6], np.float32)
    dense[[0, 0, 2, 3, 3, 3], [1, 4, 0, 2, 3, 5]] = np.arange(1, 7)
    builder = ModelBuilder()
    sparse = builder.add_sparse_constant(
        "w", dense, [DimensionType.DENSE, DimensionType.SPARSE_CSR], tensor_type=T.FLOAT32
    )
    expanded = builder.add_tensor("dense", T.FLOAT32, dense.shape)
    builder.add_operator(Op.DENSIFY, [sparse], [expanded])
    x = builder.add_input("x", T.FLOAT32, dense.shape)
    total = builder.add_tensor("sum", T.FLOAT32, dense.shape)
    builder.add_operator(Op.ADD, [x, expanded], [total])
    builder.add_output(total)
    return builder.build(), [np.linspace(-1, 1, dense.size, dtype=np.float32).reshape(dense.shape)]


def models() -> dict[str, tuple[bytes, list[np.ndarray]]]:
    """name -> (model, its inputs in input order)."""
    rng = np.random.default_rng(13)
    image = rng.standard_normal([2, 3, 5, 2]).astype(np.float32) * 4
    bytes_image = rng.integers(-128, 128, [2, 3, 5, 2]).astype(np.int8)
    rows = rng.choice(np.float32([np.nan, -1, 0, 2.5, 2.5, -np.inf, np.inf, 7]), size=(5, 37))
    made = {
        "gather_int64": SingleOpModel(
            Op.GATHER,
            [Operand(image.reshape(6, 5, 2)), Operand(np.int64([[4, 0], [2, 2], [1, 3]]))],
            [T.FLOAT32],
            {"axis": 1},
        ),
        "gather_batch_dims_int64": SingleOpModel(
            Op.GATHER,
            [Operand(image.reshape(2, 15, 2)), Operand(np.int64([[14, 0, 7], [3, 3, 9]]))],
            [T.FLOAT32],
            {"axis": 1, "batch_dims": 1},
            version=4,
        ),
        "gather_nd_int64": SingleOpModel(
            Op.GATHER_ND,
            [Operand(image), Operand(np.int64([[1, 2, 4], [0, 0, 0], [1, 1, 3]]))],
            [T.FLOAT32],
        ),
        "resize_nearest_fixed_point": _resize(
            Op.RESIZE_NEAREST_NEIGHBOR, bytes_image.view(np.uint8), [7, 4], T.UINT8
        ),
        "resize_nearest_half_pixel": _resize(
            Op.RESIZE_NEAREST_NEIGHBOR, image, [5, 9], T.FLOAT32, half_pixel_centers=True
        ),
        "resize_nearest_align_corners": _resize(
            Op.RESIZE_NEAREST_NEIGHBOR, image, [6, 3], T.FLOAT32, align_corners=True
        ),
        "resize_bilinear_float": _resize(Op.RESIZE_BILINEAR, image, [7, 8], T.FLOAT32),
        "resize_bilinear_int8": _resize(
            Op.RESIZE_BILINEAR, bytes_image, [5, 11], T.INT8, half_pixel_centers=True
        ),
        "resize_bilinear_uint8": _resize(Op.RESIZE_BILINEAR, bytes_image.view(np.uint8), [4, 7], T.UINT8),
        "resize_bilinear_run_time_size": _resize(
            Op.RESIZE_BILINEAR, image, [6, 6], T.FLOAT32, constant=False, align_corners=True
        ),
        "arg_max_nan_rows": SingleOpModel(
            Op.ARG_MAX,
            [Operand(rows), Operand(np.int32([-1]), constant=True)],
            [T.INT64],
            {"output_type": T.INT64},
        ),
        "topk": SingleOpModel(
            Op.TOPK_V2,
            [Operand(image.reshape(6, 10)), Operand(np.int32(4), constant=True)],
            [T.FLOAT32, T.INT32],
        ),
        "unique_int64_index": SingleOpModel(
            Op.UNIQUE,
            [Operand(np.float32([3, 1, 3, 0, 1, 7, 0]))],
            [T.FLOAT32, T.INT64],
            {"idx_out_type": T.INT64},
        ),
        # not an index: a saturating CAST's limits, which plain Python ints would make int32
        "cast_saturating_int64": SingleOpModel(
            Op.CAST,
            [Operand(np.float32([1e19, -1e19, np.nan, 3.5, -2.5, 9.3e18]))],
            [T.INT64],
        ),
    }
    return {"index_" + name: model.build() for name, model in made.items()} | {"index_densify": _densify()}


def write_corpus(folder: Path) -> Path:
    """The models as a corpus driver.py runs (plain mode: set the inputs, invoke, read the outputs)."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, (model, inputs) in models().items():
        (folder / f"{name}.tflite").write_bytes(model)
        np.savez(folder / f"{name}.npz", **{f"input_{i}": value for i, value in enumerate(inputs)})
        entries.append({"name": name, "file": f"{name}.tflite", "npz": f"{name}.npz", "mode": "plain"})
    (folder / "manifest.json").write_text(json.dumps({"models": entries}, indent=1))
    return folder

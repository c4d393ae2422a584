"""tf.raw_ops.Save and Restore: the ops of TensorFlow's on-device training recipe that write and read
a V1 checkpoint (flex/checkpoint.py), so that a checkpoint written here restores in TF and back; and
SaveV2 / RestoreV2, TF's V2 checkpoint (a tensor bundle, flex/bundle.py) that tf.train writes."""

from __future__ import annotations

import numpy as np

from ..bundle import read_bundle, write_bundle
from ..checkpoint import read_checkpoint, write_checkpoint
from ..node_def import TfNode
from ..registry import register


def _texts(values: np.ndarray) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values.reshape(-1)]


def _whole_tensors(shape_and_slices: np.ndarray, count: int) -> None:
    slices = _texts(shape_and_slices)
    if len(slices) != count:
        raise ValueError(f"Expected {count} shape_and_slices, got {len(slices)}")
    if any(slices):
        raise ValueError("pytflite saves and restores whole tensors only (shape_and_slices must be empty)")


def _text(value: np.ndarray) -> str:
    item = value.reshape(-1)[0] if value.size == 1 else None
    if not isinstance(item, bytes | str):
        raise ValueError(f"Input filename tensor must be a scalar string, got shape {list(value.shape)}")
    return item.decode() if isinstance(item, bytes) else item


@register("Save")
def _save(node: TfNode, filename, tensor_names, *data):
    """Save: tensors under their names in one V1 checkpoint file."""
    names = _texts(tensor_names)
    if len(names) != len(data):
        raise ValueError(f"Expected {len(data)} tensor names, got {len(names)}")
    write_checkpoint(_text(filename), names, [np.asarray(d) for d in data], list(node.attr("T")))
    return ()


@register("Restore")
def _restore(node: TfNode, file_pattern, tensor_name):
    """Restore: one tensor of a V1 checkpoint, by name, of type `dt`."""
    pattern, name = _text(file_pattern), _text(tensor_name)
    tensors = read_checkpoint(pattern)
    if name not in tensors:
        raise ValueError(f'Tensor name "{name}" not found in checkpoint files {pattern}')
    dtype, value = tensors[name]
    expected = node.attr("dt")
    if dtype != expected:
        raise ValueError(
            f"Expected to restore a tensor of type {expected.type_string}, got a tensor of type {dtype.type_string} instead: "
            f"tensor_name = {name}"
        )
    return value


@register("SaveV2")
def _save_v2(node: TfNode, prefix, tensor_names, shape_and_slices, *tensors):
    """SaveV2: whole tensors under their names as a V2 checkpoint at a prefix."""
    names = _texts(tensor_names)
    if len(names) != len(tensors):
        raise ValueError(f"Expected {len(tensors)} tensor names, got {len(names)}")
    _whole_tensors(shape_and_slices, len(names))
    write_bundle(_text(prefix), names, [np.asarray(t) for t in tensors], list(node.attr("dtypes")))
    return ()


@register("RestoreV2")
def _restore_v2(node: TfNode, prefix, tensor_names, shape_and_slices):
    """RestoreV2: whole tensors of a V2 checkpoint (or a V1 file) by name, of the types `dtypes`."""
    names, expected = _texts(tensor_names), list(node.attr("dtypes"))
    _whole_tensors(shape_and_slices, len(names))
    path = _text(prefix)
    try:
        found = read_bundle(path, names)
    except FileNotFoundError:
        raise ValueError(
            f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files for {path}"
        ) from None
    values = []
    for name, wanted, (dtype, value) in zip(names, expected, found, strict=True):
        if dtype != wanted:
            raise ValueError(
                f"tensor_name = {name}; expected dtype {wanted.type_string} does not equal original dtype "
                f"{dtype.type_string}"
            )
        values.append(value)
    return tuple(values)

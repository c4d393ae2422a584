"""tf.raw_ops.Save and Restore: the ops of TensorFlow's on-device training recipe that write and read
a V1 checkpoint (flex/checkpoint.py), so that a checkpoint written here restores in TF and back."""

from __future__ import annotations

import numpy as np

from ..checkpoint import read_checkpoint, write_checkpoint
from ..node_def import TfNode
from ..registry import register


def _text(value: np.ndarray) -> str:
    item = value.reshape(-1)[0] if value.size == 1 else None
    if not isinstance(item, bytes | str):
        raise ValueError(f"Input filename tensor must be a scalar string, got shape {list(value.shape)}")
    return item.decode() if isinstance(item, bytes) else item


@register("Save")
def _save(node: TfNode, filename, tensor_names, *data):
    """Save: tensors under their names in one V1 checkpoint file."""
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in tensor_names.reshape(-1)]
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
            f"Expected to restore a tensor of type {expected.name}, got a tensor of type {dtype.name} instead: "
            f"tensor_name = {name}"
        )
    return value

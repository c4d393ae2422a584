"""OnnxRuntimeDelegate: an accelerating delegate running delegated partitions with ONNX Runtime.

Needs the optional extra: `pip install 'pytflite[ort]'` (onnxruntime and onnx). Importing pytflite does
not import this module.

    from pytflite.delegates.onnxruntime import OnnxRuntimeDelegate
    interpreter = pytflite.Interpreter(model_path, experimental_delegates=[OnnxRuntimeDelegate()])

The implementation lives in `pytflite.delegates.onnx`; see docs/onnxruntime.md.
"""

from __future__ import annotations

try:
    import onnx  # noqa: F401
    import onnxruntime  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "OnnxRuntimeDelegate needs onnxruntime and onnx: pip install 'pytflite[ort]'"
    ) from error

from .onnx.delegate import OnnxRuntimeDelegate, OnnxRuntimeKernel, translate_partition
from .onnx.graph import PartitionGraph, Unsupported
from .onnx.registry import TRANSLATORS

__all__ = [
    "TRANSLATORS",
    "OnnxRuntimeDelegate",
    "OnnxRuntimeKernel",
    "PartitionGraph",
    "Unsupported",
    "translate_partition",
]

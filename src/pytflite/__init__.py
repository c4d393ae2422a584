"""pytflite: a TensorFlow Lite runtime in Python.

    import pytflite as tfl
    interpreter = tfl.Interpreter(model_path="model.tflite")   # drop-in for tf.lite.Interpreter
    interpreter.allocate_tensors()

The C API's building blocks are public too: Tensor, Node, Registration, Context, Delegate (and the
SimpleDelegate helpers), op resolvers for Python custom ops, and ModelBuilder to write `.tflite` files.
`pytflite.flex` (Select TF ops: `pytflite.flex.register`) is imported on first use, with protobuf.
"""

from .core.context import Context
from .core.delegate import Delegate, DelegateFlags, GraphPartitionHelper, SimpleDelegate, SimpleDelegateKernel
from .core.limits import Limits
from .core.node import OPTIONAL_TENSOR, DelegateParams, Node, Registration
from .core.quantization import AffineQuantization, QuantizationParams, SparsityParameters
from .core.subgraph import Subgraph
from .core.tensor import Tensor
from .core.types import AllocationType, BuiltinOperator, Status, TensorType
from .delegates.loading import load_delegate
from .errors import (
    InterpreterError,
    InvalidArgumentError,
    KernelError,
    ModelError,
    ensure,
    ensure_eq,
    ensure_type,
    ensure_types_eq,
)
from .fidelity.host import KNOWN_PROFILES, HostProfile
from .interpreter import Interpreter, InterpreterWithCustomOps, OpResolverType, SignatureRunner
from .model import options
from .model.builder import ModelBuilder
from .model.custom_options import decode_custom_options
from .ops.resolver import BuiltinOpResolver, BuiltinRefOpResolver, MutableOpResolver, OpResolver

__version__ = "0.1.0"


def __getattr__(name: str):
    """`pytflite.flex` on first use: it imports protobuf, which only models with Flex ops need."""
    if name == "flex":
        import importlib

        return importlib.import_module(".flex", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KNOWN_PROFILES",
    "OPTIONAL_TENSOR",
    "AffineQuantization",
    "AllocationType",
    "BuiltinOpResolver",
    "BuiltinOperator",
    "BuiltinRefOpResolver",
    "Context",
    "Delegate",
    "DelegateFlags",
    "DelegateParams",
    "GraphPartitionHelper",
    "HostProfile",
    "Interpreter",
    "InterpreterError",
    "InterpreterWithCustomOps",
    "InvalidArgumentError",
    "KernelError",
    "Limits",
    "ModelBuilder",
    "ModelError",
    "MutableOpResolver",
    "Node",
    "OpResolver",
    "OpResolverType",
    "QuantizationParams",
    "Registration",
    "SignatureRunner",
    "SimpleDelegate",
    "SimpleDelegateKernel",
    "SparsityParameters",
    "Status",
    "Subgraph",
    "Tensor",
    "TensorType",
    "decode_custom_options",
    "ensure",
    "ensure_eq",
    "ensure_type",
    "ensure_types_eq",
    "load_delegate",
    "options",
]

"""What the native delegate tests share: where the example is, an interpreter of either runtime over a
model, and its DELEGATE node count."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytflite
from tests.oracle import litert, litert_interpreter

# the header the delegates include, and the guide's MyDelegate
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "native_delegate"


def make_interpreter(module, model: bytes | str, delegates):
    """A pytflite or (module is litert) LiteRT interpreter on its builtin kernels, with `delegates`."""
    if module is litert:
        return litert_interpreter(model, experimental_delegates=delegates)
    if isinstance(model, bytes):
        return pytflite.Interpreter(model_content=model, experimental_delegates=delegates)
    return pytflite.Interpreter(model_path=str(model), experimental_delegates=delegates)


def delegate_nodes(interpreter) -> int:
    return sum(op["op_name"] == "DELEGATE" for op in interpreter._get_ops_details())


def add_sub_model() -> bytes:
    """The example's model (examples/native_delegate/make_model.py): w = (x + y - x) * y - y."""
    spec = importlib.util.spec_from_file_location("native_delegate_make_model", EXAMPLE / "make_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.add_sub_model()

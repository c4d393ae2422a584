"""The custom-operator guide's example, in Python: run atan(x + offset) with a Python `Atan` kernel.

`models/atan_custom.tflite` is the tutorial model made by the TensorFlow converter (ADD, then the custom
op "Atan"). TFLite cannot run it without a C++ kernel; here the kernel is two Python functions.

    python examples/atan_custom_op.py
    pytflite run examples/models/atan_custom.tflite --custom-ops examples/atan_custom_op.py

(the command line loads `register` from this file).
"""

from pathlib import Path

import numpy as np

import pytflite as tfl
from pytflite.ops import jit

MODEL = Path(__file__).parent / "models" / "atan_custom.tflite"


def atan_prepare(context, node):
    x = context.tensors[node.inputs[0]]
    context.resize_tensor(context.tensors[node.outputs[0]], x.shape)


def atan_invoke(context, node):
    np.arctan(context.tensors[node.inputs[0]].data, out=context.tensors[node.outputs[0]].data)


def register(resolver: tfl.MutableOpResolver) -> None:
    """Add the Python Atan kernel to `resolver`."""
    resolver.add_custom(
        "Atan", tfl.Registration(prepare=atan_prepare, invoke=atan_invoke, custom_name="Atan")
    )


def main() -> None:
    resolver = tfl.MutableOpResolver()
    resolver.add_all(tfl.BuiltinOpResolver())
    register(resolver)

    interpreter = tfl.Interpreter(model_path=str(MODEL), op_resolver=resolver)
    interpreter.allocate_tensors()
    x = np.array([-8.0, 0.5, 2.0, 2.2, 201.0], np.float32)
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    y = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    offset = float(interpreter.get_tensor(1))  # the trained constant the model adds before Atan

    print(f"model:        {MODEL.name} ({', '.join(o['op_name'] for o in interpreter._get_ops_details())})")
    print(
        f"kernels:      {'compiled (numba)' if jit.compiled_kernels_run() else 'NumPy only (no numba here, or PYTFLITE_JIT=0)'}"
    )
    print(f"x:            {x}")
    print(f"atan(x + {offset:.4f}) by pytflite: {y}")
    print(f"numpy reference:                {np.arctan(x + np.float32(offset))}")
    assert np.allclose(y, np.arctan(x + np.float32(offset)), rtol=1e-6)

    try:
        tfl.Interpreter(model_path=str(MODEL)).allocate_tensors()
    except RuntimeError as error:
        print(f"without the Python Atan, as TFLite: {str(error).splitlines()[0]}")


if __name__ == "__main__":
    main()

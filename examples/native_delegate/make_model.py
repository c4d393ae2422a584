"""Writes the model the README's commands run: w = (x + y - x) * y - y on [2, 3] float32 inputs.

MyDelegate claims the ADD -> SUB pair (one partition passing `t` between its own nodes) and the last SUB;
the MUL stays on the CPU between them.

    python examples/native_delegate/make_model.py add_sub.tflite
"""

import sys

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder


def add_sub_model() -> bytes:
    builder = ModelBuilder()
    x, y = (builder.add_input(name, T.FLOAT32, [2, 3]) for name in ("x", "y"))
    t, u, v, w = (builder.add_tensor(name, T.FLOAT32, [2, 3]) for name in ("t", "u", "v", "w"))
    builder.add_operator(Op.ADD, [x, y], [t])
    builder.add_operator(Op.SUB, [t, x], [u])
    builder.add_operator(Op.MUL, [u, y], [v])
    builder.add_operator(Op.SUB, [v, y], [w])
    builder.add_output(w)
    return builder.build()


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "add_sub.tflite"
    with open(path, "wb") as file:
        file.write(add_sub_model())
    print(f"wrote {path}")

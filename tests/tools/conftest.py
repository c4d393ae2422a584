"""Shared fixtures for the tool tests: small ModelBuilder models, user modules (custom ops, delegates)
written to a temporary folder, and `cli(...)`, which runs the `pytflite` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder

ROOT = Path(__file__).resolve().parents[2]


def classifier_model() -> bytes:
    """image -> CONV_2D -> ADD(image) -> CONV_2D -> MEAN -> FULLY_CONNECTED -> SOFTMAX (5 classes)."""
    rng = np.random.default_rng(7)
    builder = ModelBuilder()
    image = builder.add_input("image", T.FLOAT32, [1, 8, 8, 3])

    def conv(name, source, channels_out):
        weights = builder.add_constant(
            f"{name}/w", rng.standard_normal([channels_out, 3, 3, 3]).astype(np.float32)
        )
        bias = builder.add_constant(f"{name}/b", rng.standard_normal([channels_out]).astype(np.float32))
        out = builder.add_tensor(name, T.FLOAT32, [1, 8, 8, channels_out])
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"}
        builder.add_operator(Op.CONV_2D, [source, weights, bias], [out], options)
        return out

    first = conv("conv1", image, 3)
    summed = builder.add_tensor("residual", T.FLOAT32, [1, 8, 8, 3])
    builder.add_operator(Op.ADD, [first, image], [summed])
    second = conv("conv2", summed, 6)
    axes = builder.add_constant("axes", np.array([1, 2], np.int32))
    pooled = builder.add_tensor("pooled", T.FLOAT32, [1, 6])
    builder.add_operator(Op.MEAN, [second, axes], [pooled], {"keep_dims": False})
    weights = builder.add_constant("fc/w", rng.standard_normal([5, 6]).astype(np.float32))
    bias = builder.add_constant("fc/b", np.zeros(5, np.float32))
    logits = builder.add_tensor("logits", T.FLOAT32, [1, 5])
    builder.add_operator(Op.FULLY_CONNECTED, [pooled, weights, bias], [logits])
    probabilities = builder.add_tensor("probabilities", T.FLOAT32, [1, 5])
    builder.add_operator(Op.SOFTMAX, [logits], [probabilities], {"beta": 1.0})
    builder.add_output(probabilities)
    return builder.build()


def custom_op_model() -> bytes:
    """x -> ADD(offset) -> custom "Atan"."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [5])
    offset = builder.add_constant("offset", np.array([1.0], np.float32))
    added = builder.add_tensor("added", T.FLOAT32, [5])
    builder.add_operator(Op.ADD, [x, offset], [added])
    y = builder.add_tensor("y", T.FLOAT32, [5])
    builder.add_operator("Atan", [added], [y])
    builder.add_output(y)
    return builder.build()


def signature_model() -> bytes:
    """Two signatures on two subgraphs: 'double' (x * 2) and 'shift' (x + 1)."""
    builder = ModelBuilder()
    for key, op, constant in (("double", Op.MUL, 2.0), ("shift", Op.ADD, 1.0)):
        subgraph = builder.add_subgraph(key)
        x = subgraph.add_input("x", T.FLOAT32, [1, 4])
        c = subgraph.add_constant("c", np.array([constant], np.float32))
        y = subgraph.add_tensor("y", T.FLOAT32, [1, 4])
        subgraph.add_operator(op, [x, c], [y])
        subgraph.add_output(y)
        builder.add_signature(key, {"x": x}, {"y": y}, subgraph_index=len(builder.subgraphs) - 1)
    return builder.build()


USER_MODULES = {
    "atan_ops.py": '''
        """Custom ops for `pytflite --custom-ops`: the guide's Atan."""
        import numpy as np
        import pytflite as tfl


        def prepare(context, node):
            context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)


        def invoke(context, node):
            np.arctan(context.tensors[node.inputs[0]].data, out=context.tensors[node.outputs[0]].data)


        def register(resolver):
            resolver.add_custom("Atan", tfl.Registration(prepare=prepare, invoke=invoke))
    ''',
    "delegates.py": '''
        """Delegates for `pytflite --delegate delegates.py:NAME`."""
        import pytflite as tfl
        from pytflite.delegates.replay import ReplayKernel


        class ConvMean(tfl.SimpleDelegate):
            """The delegate guide's MyDelegate: claims CONV_2D and MEAN."""

            name = "ConvMean"

            def is_node_supported(self, context, node, registration):
                return registration.builtin_code in (tfl.BuiltinOperator.CONV_2D, tfl.BuiltinOperator.MEAN)

            def create_kernel(self):
                return ReplayKernel()


        class OffByOneKernel(ReplayKernel):
            def eval(self, context, node):
                super().eval(context, node)
                for t in node.outputs:
                    context.tensors[t].data[...] += 1.0


        class BrokenMean(tfl.SimpleDelegate):
            """Runs MEAN and adds one to its result: a delegate bug for `compare` to find."""

            name = "BrokenMean"

            def is_node_supported(self, context, node, registration):
                return registration.builtin_code == tfl.BuiltinOperator.MEAN

            def create_kernel(self):
                return OffByOneKernel()
    ''',
}


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """A folder with the test models and user modules."""
    folder = tmp_path_factory.mktemp("tools")
    (folder / "classifier.tflite").write_bytes(classifier_model())
    (folder / "custom.tflite").write_bytes(custom_op_model())
    (folder / "signatures.tflite").write_bytes(signature_model())
    for name, source in USER_MODULES.items():
        (folder / name).write_text(textwrap.dedent(source).lstrip())
    return folder


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120):
    """`python -m pytflite ARGS` in a subprocess; returns the CompletedProcess (text)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTFLITE_DEBUG"}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytflite", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=timeout,
    )


@pytest.fixture
def cli(workdir):
    """Run the CLI in the work folder; fails the test with stderr when the exit code is unexpected."""

    def call(*args: str, expect: int = 0, env: dict[str, str] | None = None):
        result = run_cli(*args, cwd=workdir, env=env)
        assert result.returncode == expect, (
            f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
        return result

    return call

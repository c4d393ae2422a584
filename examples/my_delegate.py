"""The delegate guide's MyDelegate, in Python: it claims CONV_2D and MEAN nodes and runs them.

Written twice:
1. with the raw API, as the guide's C++: a Registration for the delegate kernel, and a delegate prepare
   that walks the execution plan and asks the runtime to replace the supported nodes;
2. with SimpleDelegate, which does the walking, partitioning and replacement itself.

Both kernels are ReplayKernel (pytflite/delegates/replay.py): it evaluates its partition by running the
claimed nodes' own kernels, so the delegated results equal the CPU path bit for bit. A real delegate
would call its accelerator there instead.

    python examples/my_delegate.py
"""

import numpy as np

import pytflite as tfl
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.delegates.replay import ReplayKernel

SUPPORTED = (Op.CONV_2D, Op.MEAN)


# --- 1. The raw API -------------------------------------------------------------------------------


def my_delegate_kernel_registration():
    def init(context, params, length):  # params: DelegateParams(delegate, nodes_to_replace, inputs, outputs)
        kernel = ReplayKernel()
        kernel.init(context, params)  # reads the replaced nodes with context.get_node_and_registration
        return kernel

    return tfl.Registration(
        init=init,
        free=lambda context, kernel: None,
        prepare=lambda context, node: node.user_data.prepare(context, node),
        invoke=lambda context, node: node.user_data.eval(context, node),
        builtin_code=Op.DELEGATE,
        custom_name="MyDelegate",
    )


def delegate_prepare(context, delegate):
    supported = []
    for node_index in context.get_execution_plan():
        node, registration = context.get_node_and_registration(node_index)
        if registration.builtin_code in SUPPORTED:
            supported.append(node_index)
    return context.replace_node_subsets_with_delegate_kernels(my_delegate_kernel_registration(), supported, delegate)


def raw_delegate() -> tfl.Delegate:
    return tfl.Delegate(prepare=delegate_prepare, flags=tfl.DelegateFlags.NONE)


# --- 2. The same with SimpleDelegate ----------------------------------------------------------------


class MyDelegate(tfl.SimpleDelegate):
    name = "MyDelegate"

    def is_node_supported(self, context, node, registration):
        return registration.builtin_code in SUPPORTED

    def create_kernel(self):
        return ReplayKernel()


# --- A model to delegate ----------------------------------------------------------------------------


def build_model() -> bytes:
    """image -> CONV_2D -> ADD(image features) -> CONV_2D -> MEAN over H, W -> FULLY_CONNECTED -> SOFTMAX."""
    rng = np.random.default_rng(7)
    builder = tfl.ModelBuilder()
    image = builder.add_input("image", T.FLOAT32, [1, 8, 8, 3])

    def conv(name, source, channels_in, channels_out):
        weights = builder.add_constant(f"{name}/w", rng.standard_normal([channels_out, 3, 3, channels_in]).astype(np.float32))
        bias = builder.add_constant(f"{name}/b", rng.standard_normal([channels_out]).astype(np.float32))
        out = builder.add_tensor(name, T.FLOAT32, [1, 8, 8, channels_out])
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1, "fused_activation_function": "RELU"}
        builder.add_operator(Op.CONV_2D, [source, weights, bias], [out], options)
        return out

    first = conv("conv1", image, 3, 3)
    summed = builder.add_tensor("residual", T.FLOAT32, [1, 8, 8, 3])
    builder.add_operator(Op.ADD, [first, image], [summed])
    second = conv("conv2", summed, 3, 6)
    axes = builder.add_constant("axes", np.array([1, 2], np.int32))
    pooled = builder.add_tensor("pooled", T.FLOAT32, [1, 6])
    builder.add_operator(Op.MEAN, [second, axes], [pooled], {"keep_dims": False})
    weights = builder.add_constant("fc/w", rng.standard_normal([4, 6]).astype(np.float32))
    bias = builder.add_constant("fc/b", np.zeros(4, np.float32))
    logits = builder.add_tensor("logits", T.FLOAT32, [1, 4])
    builder.add_operator(Op.FULLY_CONNECTED, [pooled, weights, bias], [logits])
    probabilities = builder.add_tensor("probabilities", T.FLOAT32, [1, 4])
    builder.add_operator(Op.SOFTMAX, [logits], [probabilities], {"beta": 1.0})
    builder.add_output(probabilities)
    return builder.build()


def describe_plan(interpreter: tfl.Interpreter) -> str:
    subgraph = interpreter.subgraphs[0]
    parts = []
    for node_index in subgraph.execution_plan:
        node, registration = subgraph.nodes[node_index]
        if node.delegate is None:
            parts.append(f"{node_index}:{registration.op_name}")
        else:
            replaced = ", ".join(f"{i}:{subgraph.nodes[i][1].op_name}" for i in node.builtin_data.nodes_to_replace)
            parts.append(f"{node_index}:{registration.op_name}[{replaced}]")
    return " -> ".join(parts)


def run(interpreter: tfl.Interpreter, image: np.ndarray) -> np.ndarray:
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def main() -> None:
    model = build_model()
    image = np.random.default_rng(0).standard_normal([1, 8, 8, 3]).astype(np.float32)

    cpu = tfl.Interpreter(model_content=model)
    expected = run(cpu, image)
    print(f"plan before delegation: {describe_plan(cpu)}")

    raw = tfl.Interpreter(model_content=model)
    raw.modify_graph_with_delegate(raw_delegate())
    print(f"raw-API MyDelegate:     {describe_plan(raw)}")

    simple = tfl.Interpreter(model_content=model, experimental_delegates=[MyDelegate()])
    print(f"SimpleDelegate version: {describe_plan(simple)}")

    for name, interpreter in (("raw API", raw), ("SimpleDelegate", simple)):
        result = run(interpreter, image)
        assert np.array_equal(result, expected), name
        print(f"{name:>14}: {result[0]} (identical to the CPU path)")


if __name__ == "__main__":
    main()

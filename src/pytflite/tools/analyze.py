"""`pytflite analyze`: what tf.lite.experimental.Analyzer prints (subgraphs, ops on T# tensors, tensors
with shapes, types and buffers, signatures, the size table), then what is particular to pytflite: which
operators this runtime has kernels for, whether the model loads and allocates, and with `--delegate`,
which nodes each delegate claims and the partitions it gets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from tflite.Model import Model

from ..core.node import is_flex_op
from ..core.types import BuiltinOperator, TensorType
from ..model.options import CallOnceOptions, IfOptions, WhileOptions
from ..model.reader import ModelDescription, read_model
from ..ops.registry import kernel_infos
from ..ops.resolver import BuiltinOpResolver
from .loading import ToolError, build_interpreter, delegate_from_args, op_resolver

SPLITTER = "-" * 63
_MAX_VALUES = 5


def op_name(model: ModelDescription, opcode_index: int) -> str:
    code = model.operator_codes[opcode_index]
    if code.builtin_code == BuiltinOperator.CUSTOM:
        return code.custom_code or "UnknownCustomOp"
    try:
        return BuiltinOperator(code.builtin_code).name
    except ValueError:
        return f"UNKNOWN_BUILTIN_{code.builtin_code}"


def tensor_ref(subgraph_index: int, tensor_index: int) -> str:
    """T#3 in the primary graph, T#1_3 in subgraph 1 (the Analyzer's notation)."""
    if subgraph_index != 0 and tensor_index != -1:
        return f"T#{subgraph_index}_{tensor_index}"
    return f"T#{tensor_index}"


def _values(data: np.ndarray | None, tensor_type: TensorType) -> str:
    """The first five constant values, as the Analyzer shows them (int32 constants also in op lists)."""
    if data is None:
        return ""
    flat = np.asarray(data).reshape(-1)
    if tensor_type in (
        TensorType.INT32,
        TensorType.UINT32,
        TensorType.FLOAT32,
        TensorType.INT8,
        TensorType.UINT8,
    ):
        shown = [f"{v:.6g}" if tensor_type == TensorType.FLOAT32 else str(int(v)) for v in flat[:_MAX_VALUES]]
    else:
        shown = ["??"] * min(flat.size, _MAX_VALUES)
    return "[" + ", ".join(shown) + (", ..." if flat.size > _MAX_VALUES else "") + "]"


def _buffers(data: bytes) -> list[tuple[int, bool]]:
    """(size, all zeros) of every buffer of the flatbuffer, inline or stored after it."""
    model = Model.GetRootAs(data, 0)
    result = []
    for i in range(model.BuffersLength()):
        buffer = model.Buffers(i)
        if not buffer.DataIsNone():
            raw = buffer.DataAsNumpy()
            result.append((int(raw.size), not bool(np.any(raw))))
        elif buffer.Offset() > 1:
            raw = np.frombuffer(data, np.uint8, count=buffer.Size(), offset=buffer.Offset())
            result.append((int(raw.size), not bool(np.any(raw))))
        else:
            result.append((0, True))
    return result


def _tensor_list(model: ModelDescription, subgraph_index: int, tensors, with_values: bool = False) -> str:
    parts = []
    for t in tensors:
        text = tensor_ref(subgraph_index, t)
        if with_values and t != -1:
            tensor = model.subgraphs[subgraph_index].tensors[t]
            if tensor.type == TensorType.INT32 and tensor.data is not None:
                text += _values(tensor.data, tensor.type)
        parts.append(text)
    return ", ".join(parts)


def _introduction(model: ModelDescription) -> str:
    """The Analyzer's opening paragraph: the subgraph count, and how to read T# with the first op."""
    text = (
        f"Your TFLite model has '{len(model.subgraphs)}' subgraph(s). In the subgraph description below,\n"
        "T# represents the Tensor numbers. "
    )
    first_graph = model.subgraphs[0]
    if first_graph.operators:
        first = first_graph.operators[0]
        ins = " and ".join(f"tensor #{t}" for t in first.inputs)
        outs = " and ".join(f"tensor #{t}" for t in first.outputs)
        text += (
            f"For example, in Subgraph#0, the {op_name(model, first.opcode_index)} op takes\n"
            f"{ins} as input and produces {outs} as output.\n"
        )
    return text + "\n"


def _subgraph_text(model: ModelDescription, s: int, buffers: list[tuple[int, bool]]) -> tuple[str, int]:
    """One subgraph's ops and tensors, as the Analyzer lists them, and the bytes of its constant buffers
    (for the size table)."""
    subgraph = model.subgraphs[s]
    out = []
    name = f" {subgraph.name}" if subgraph.name else ""
    out.append(
        f"Subgraph#{s}{name}({_tensor_list(model, s, subgraph.inputs)}) -> "
        f"[{_tensor_list(model, s, subgraph.outputs)}]\n"
    )
    for j, op in enumerate(subgraph.operators):
        line = f"  Op#{j} {op_name(model, op.opcode_index)}({_tensor_list(model, s, op.inputs, True)}"
        options = op.builtin_options
        if isinstance(options, CallOnceOptions):
            line += f"Subgraph#{options.init_subgraph_index}"
        elif isinstance(options, IfOptions):
            line += f", Then: Subgraph#{options.then_subgraph_index}, Else: Subgraph#{options.else_subgraph_index}"
        elif isinstance(options, WhileOptions):
            line += f", Cond: Subgraph#{options.cond_subgraph_index}, Body: Subgraph#{options.body_subgraph_index}"
        out.append(line + f") -> [{_tensor_list(model, s, op.outputs)}]\n")
    out.append(f"\nTensors of Subgraph#{s}\n")
    usage = 0
    for t, tensor in enumerate(subgraph.tensors):
        line = f"  {tensor_ref(s, t)}({tensor.name}) "
        if tensor.shape_signature is not None:
            line += "shape_signature:[" + ", ".join(map(str, tensor.shape_signature)) + "]"
        else:
            line += "shape:[" + ", ".join(map(str, tensor.shape)) + "]"
        line += f", type:{tensor.type.name}"
        b = tensor.buffer_index
        if 0 < b < len(buffers) and buffers[b][0]:
            line += f" RO {buffers[b][0]} bytes, buffer: {b}, data:{_values(tensor.data, tensor.type)}"
            usage += buffers[b][0]
        out.append(line + "\n")
    out.append("\n")
    return "".join(out), usage


def _signatures_text(model: ModelDescription) -> str:
    """The Analyzer's list of SignatureDefs (nothing when the model has none)."""
    if not model.signatures:
        return ""
    out = [SPLITTER + "\n", f"Your TFLite model has '{len(model.signatures)}' signature_def(s).\n\n"]
    for i, signature in enumerate(model.signatures):
        out.append(f"Signature#{i} key: '{signature.key}'\n")
        out.append(f"- Subgraph: Subgraph#{signature.subgraph_index}\n")
        out.append("- Inputs: \n")
        for name, t in signature.inputs.items():
            out.append(f"    '{name}' : {tensor_ref(signature.subgraph_index, t)}\n")
        out.append("- Outputs: \n")
        for name, t in signature.outputs.items():
            out.append(f"    '{name}' : {tensor_ref(signature.subgraph_index, t)}\n")
        out.append("\n")
    return "".join(out)


def _size_text(model: ModelDescription, buffers: list[tuple[int, bool]], usage: list[int]) -> str:
    """The Analyzer's closing size table: data and non-data bytes, per subgraph when several, zero buffers."""
    size = model.size
    total = sum(b for b, _ in buffers)
    zeros = sum(b for b, zero in buffers if zero)
    out = [SPLITTER + "\n", f"{'Model size':>24}: {size:10d} bytes\n"]
    out.append(
        f"{'Non-data buffer size':>24}: {size - total:10d} bytes ({(size - total) / size * 100:05.2f} %)\n"
    )
    out.append(f"{'Total data buffer size':>24}: {total:10d} bytes ({total / size * 100:05.2f} %)\n")
    if len(model.subgraphs) > 1:
        for s, used in enumerate(usage):
            out.append(
                f"          - {'Subgraph#' + str(s):<12}: {used:10d} bytes ({used / size * 100:05.2f} %)\n"
            )
    out.append(f"{'(Zero value buffers)':>24}: {zeros:10d} bytes ({zeros / size * 100:05.2f} %)\n")
    out.append(
        "\n* Buffers of TFLite model are mostly used for constant tensors.\n"
        "  And zero value buffers are buffers filled with zeros.\n"
        "  Non-data buffers area are used to store operators, subgraphs and etc.\n"
        "  You can find more details from "
        "https://github.com/tensorflow/tensorflow/blob/master/tensorflow/lite/schema/schema.fbs\n"
    )
    return "".join(out)


def analyzer_text(model: ModelDescription, data: bytes) -> str:
    """The Analyzer's report of a model."""
    buffers = _buffers(data)
    subgraphs = [_subgraph_text(model, s, buffers) for s in range(len(model.subgraphs))]
    return (
        _introduction(model)
        + "".join(text for text, _ in subgraphs)
        + _signatures_text(model)
        + _size_text(model, buffers, [usage for _, usage in subgraphs])
    )


def support_text(model: ModelDescription, custom_ops: list[str]) -> str:
    """Which of the model's operators (op, version) pytflite has kernels for."""
    resolver = op_resolver(custom_ops) or BuiltinOpResolver()
    sources = {info.op: info.source for info in kernel_infos()}
    counts: dict[int, int] = {}
    for subgraph in model.subgraphs:
        for op in subgraph.operators:
            counts[op.opcode_index] = counts.get(op.opcode_index, 0) + 1
    lines = [SPLITTER, "Operators in pytflite (kernels for this op and version):", ""]
    missing = 0
    for index in sorted(counts, key=lambda i: op_name(model, i)):
        code = model.operator_codes[index]
        name = op_name(model, index)
        if code.builtin_code == BuiltinOperator.CUSTOM:
            found = resolver.find_custom(name, code.version) is not None
            where = "custom op" + ("" if found else ": not registered (add it with --custom-ops ops.py)")
            if not found and is_flex_op(name):  # the Flex kernel runs it (interpreter_builder)
                found, where = _flex_support(model, index)
        else:
            found = resolver.find_builtin(code.builtin_code, code.version) is not None
            source = sources.get(code.builtin_code)
            where = (
                source
                if found
                else f"no kernel for version {code.version}"
                if source
                else "no kernel for this operator"
            )
        missing += not found
        lines.append(
            f"  {'yes' if found else 'NO ':<4}{name + ' v' + str(code.version):<32}x{counts[index]:<4} {where}"
        )
    lines.append("")
    lines.append(
        f"{len(counts) - missing} of {len(counts)} operator kinds have a kernel"
        + (f"; {missing} missing." if missing else ".")
    )
    return "\n".join(lines) + "\n"


def _flex_support(model: ModelDescription, opcode_index: int) -> tuple[bool, str]:
    """Whether pytflite's Flex kernels run every node of a Flex op (flex/), and where the kernel is."""
    from ..flex.kernel import flex_init  # imports protobuf: only for models with Flex ops

    problems, modules = [], set()
    for subgraph in model.subgraphs:
        for op in subgraph.operators:
            if op.opcode_index == opcode_index:
                data = flex_init(None, op.custom_options, len(op.custom_options or b""))
                if data.problem is not None and data.problem not in problems:
                    problems.append(data.problem)
                elif data.kernel is not None:
                    module = data.kernel.compute.__module__  # pytflite's as a path, a user's as named
                    own = module.startswith("pytflite.")
                    modules.add(module.removeprefix("pytflite.").replace(".", "/") + ".py" if own else module)
    if problems:
        return False, "Select TF op: no kernel for " + "; ".join(
            problems
        ) + " (add one with pytflite.flex.register)"
    return True, "Select TF op: " + ", ".join(sorted(modules))


def runtime_text(args: Any) -> str:
    """Load and allocate in pytflite (with the delegates): status, memory, and each delegate's claim."""
    lines = [SPLITTER]
    delegates = delegate_from_args(args)
    try:
        interpreter = build_interpreter(args.model, custom_ops=args.custom_ops, delegates=delegates)
        interpreter.allocate_tensors()
    except (ToolError, RuntimeError, ValueError) as error:
        lines.append("pytflite: the model does not run yet:")
        lines.append("  " + str(error).strip().replace("\n", "\n  "))
        return "\n".join(lines) + "\n"
    memory = interpreter.memory_report()
    lines.append(
        f"pytflite: loads and allocates; arena {memory.arena_bytes} bytes "
        f"(lower bound {memory.arena_lower_bound_bytes}), constants {memory.constant_bytes} bytes."
    )
    if not delegates:
        return "\n".join(lines) + "\n"
    names = ", ".join(args.delegate)
    for index, subgraph in enumerate(interpreter.subgraphs):
        partitions = interpreter.delegate_partitions(index)
        if not partitions and index:
            continue
        claimed = sum(len(p.nodes) for p in partitions)
        total = len(subgraph.execution_plan) - len(partitions) + claimed
        lines.append("")
        lines.append(
            f"Delegate {names} claims {claimed} of {total} nodes of Subgraph#{index} "
            f"in {len(partitions)} partition(s):"
        )
        for number, partition in enumerate(partitions):
            ops = ", ".join(f"Op#{n} {name}" for n, name in zip(partition.nodes, partition.op_names))
            lines.append(
                f"  Partition {number} -> node #{partition.node_index} {partition.delegate_name}: {ops}"
            )
            lines.append(
                f"      inputs [{_tensor_list(interpreter.model, index, partition.input_tensors)}] -> "
                f"outputs [{_tensor_list(interpreter.model, index, partition.output_tensors)}]"
            )
        plan = [f"#{i} {subgraph.nodes[i][1].op_name}" for i in subgraph.execution_plan]
        lines.append("  Plan after delegation: " + " -> ".join(plan))
    return "\n".join(lines) + "\n"


def command(args: Any) -> int:
    path = Path(args.model)
    if not path.is_file():
        raise ToolError(f"no such model file: {args.model}")
    data = path.read_bytes()
    try:
        model = read_model(data)
    except ValueError as error:
        raise ToolError(f"cannot read {args.model}: {error}") from None
    print(analyzer_text(model, data), end="")
    print(support_text(model, args.custom_ops), end="")
    print(runtime_text(args), end="")
    return 0

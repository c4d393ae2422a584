"""Structural verification of an untrusted `.tflite` model, before anything in it is trusted.

A model file is attacker-controlled input: TFLite's CVEs came from out-of-range indices, negative or huge
dimensions, buffers shorter than their tensors, graph cycles and control-flow recursion. Two layers:

- flatbuffer bounds (`check_table`, `check_vector`): the reader calls them on every table and vector
  it touches, so no offset, length or vtable points outside the file;
- model rules (`verify_model`): run on the parsed description before the runtime builds anything:
  tensor indices, dimensions, element counts and memory against `Limits`, operator arity, acyclic
  control-flow subgraph references, and execution order (TFLite's VerifySubGraphConsistency).

Every failure is a ModelError (a ValueError, as LiteRT raises for a model it cannot build) whose message
names the field, the index and the limit.
"""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.types import NON_POD_TYPES, BuiltinOperator, TensorType, bytes_required
from ..errors import KernelError, ModelError
from .arity import OPERATOR_ARITY

if TYPE_CHECKING:
    from .reader import ModelDescription, OperatorCodeDescription, SubgraphDescription

NOT_A_FLATBUFFER = "The model is not a valid Flatbuffer buffer"
OPTIONAL_TENSOR = -1
_GIB = 1 << 30
_OBJECT_BYTES = 8  # a STRING/RESOURCE/VARIANT element is a Python object reference at run time


@dataclasses.dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile model from exhausting memory or time; the defaults admit real models.

    max_bytes: the declared bytes of all non-constant tensors together (checked at load), and of any one
        tensor whenever it is resized (allocate, invoke, resize_tensor_input) and of the primary arena.
    max_elements: elements of one tensor (TFLite's dimensions are int32).
    max_call_depth: nesting of control-flow subgraphs (IF/WHILE/CALL_ONCE calling each other).
    max_while_iterations: iterations of one WHILE node per invoke; None lets a loop run forever, as TFLite.
    """

    max_bytes: int = 4 * _GIB
    max_elements: int = 2**31 - 1
    max_call_depth: int = 64
    max_while_iterations: int | None = None

    def tensor_bytes(self, tensor_type: TensorType | None, shape: Sequence[int]) -> int:
        """Memory a tensor of this type and shape takes at run time (object references for non-POD)."""
        if tensor_type is None:
            return 0
        if tensor_type in NON_POD_TYPES:
            return math.prod(shape) * _OBJECT_BYTES
        return bytes_required(tensor_type, shape)

    def check_resize(self, tensor: Any, shape: Sequence[int]) -> None:
        """Runtime guard for Context.resize_tensor: a kernel may compute any shape from data."""
        self._check(f"resize_tensor: tensor {tensor.index}", shape, self.tensor_bytes(tensor.type, shape))

    def check_scratch(self, what: str, shape: Sequence[int], itemsize: int) -> None:
        """Runtime guard for an array a kernel makes for itself (an index plan, running sums), called
        before it is made: the same caps as a tensor's."""
        self._check(what, shape, math.prod(shape) * itemsize)

    def _check(self, what: str, shape: Sequence[int], size: int) -> None:
        elements = element_bound(shape)
        if elements > self.max_elements:
            raise KernelError(
                f"{what} shape {list(shape)} has {elements} elements, over the limit of {self.max_elements}"
            )
        if size > self.max_bytes:
            raise KernelError(
                f"{what} shape {list(shape)} needs {size} bytes, over the limit of {self.max_bytes} bytes"
            )


DEFAULT_LIMITS = Limits()


def element_bound(shape: Sequence[int]) -> int:
    """The elements a shape holds, zero dimensions left out: [0, 2**31-1, 2**31-1] holds nothing, but
    NumPy still refuses to make it ("array is too big"), so such a shape counts as its other dims."""
    return math.prod(d for d in shape if d)


# --- flatbuffer bounds ------------------------------------------------------------------------------

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")


def check_table(
    buffer: Any, position: int, size: int, what: str, vtables: dict[int, int] | None = None
) -> None:
    """A table at `position` lies inside the buffer with its vtable (flatbuffers' VerifyTableStart).

    Python's struct reads wrap around on negative offsets instead of failing, so an unchecked vtable
    offset would silently read the file's tail; checking every table the reader touches closes that.
    `vtables` caches the object size of each vtable already checked (tables share them).
    """
    if not 0 <= position <= size - 4:
        raise ModelError(
            f"{NOT_A_FLATBUFFER}: {what} table at offset {position} is outside the {size}-byte file"
        )
    vtable = position - _I32.unpack_from(buffer, position)[0]
    object_size = vtables.get(vtable) if vtables is not None else None
    if object_size is None:
        object_size = _check_vtable(buffer, vtable, size, what)
        if vtables is not None:
            vtables[vtable] = object_size
    if position + object_size > size:
        raise ModelError(f"{NOT_A_FLATBUFFER}: {what} table of {object_size} bytes runs past the file end")


def _check_vtable(buffer: Any, vtable: int, size: int, what: str) -> int:
    """A vtable inside the file whose fields lie inside its table; returns the table's size."""
    if not 0 <= vtable <= size - 4 or vtable % 2:
        raise ModelError(
            f"{NOT_A_FLATBUFFER}: {what} vtable at offset {vtable} is outside the {size}-byte file"
        )
    vtable_size, object_size = _U16.unpack_from(buffer, vtable)[0], _U16.unpack_from(buffer, vtable + 2)[0]
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > size:
        raise ModelError(f"{NOT_A_FLATBUFFER}: {what} vtable of {vtable_size} bytes runs past the file end")
    if object_size < 4:
        raise ModelError(f"{NOT_A_FLATBUFFER}: {what} table size {object_size} is below 4 bytes")
    fields = struct.unpack_from(f"<{(vtable_size - 4) // 2}H", buffer, vtable + 4)
    for slot, field in enumerate(fields):
        if field and not 4 <= field < object_size:
            raise ModelError(
                f"{NOT_A_FLATBUFFER}: {what} field {slot} at offset {field} is outside its {object_size}-byte table"
            )
    return object_size


def check_vector(start: int, length: int, element_size: int, size: int, what: str) -> int:
    """A vector of `length` elements starting at `start` lies inside the file; returns `length`."""
    if length < 0 or start < 4 or start + length * element_size > size:
        raise ModelError(
            f"{NOT_A_FLATBUFFER}: {what} vector of {length} elements at offset {start} runs past the "
            f"end of the {size}-byte file"
        )
    return length


def check_constant_size(label: str, tensor_type: TensorType, shape: Sequence[int], available: int) -> int:
    """A constant's buffer holds at least the tensor's bytes; returns the bytes needed."""
    if tensor_type in (TensorType.RESOURCE, TensorType.VARIANT):  # run-time handles, never file data
        raise ModelError(
            f"{label} is invalidly specified in schema: a {tensor_type.name} tensor has a buffer."
        )
    needed = bytes_required(tensor_type, shape)
    if available < needed:
        raise ModelError(
            f"{label} is invalidly specified in schema: its buffer holds {available} bytes but "
            f"{tensor_type.name}{list(shape)} needs {needed}."
        )
    return needed


# --- model rules ------------------------------------------------------------------------------------


def verify_model(model: ModelDescription, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check every structural rule of the module docstring; raise ModelError on the first violation."""
    _verify_memory(model, limits)
    for index, subgraph in enumerate(model.subgraphs):
        _verify_io(subgraph, index)
        _verify_operators(subgraph, index, model.operator_codes)
        _verify_execution_order(subgraph, index, model.operator_codes)
    _verify_signatures(model)
    _verify_call_graph(model, limits)


def check_shape(label: str, shape: Sequence[int], signature: Sequence[int] | None, limits: Limits) -> None:
    """Dimensions >= 0 (-1 only in shape_signature, of the same rank) and at most `max_elements`."""
    if any(d < 0 for d in shape):
        raise ModelError(
            f"{label} has a negative dimension in shape {list(shape)} (-1 is allowed only in shape_signature)."
        )
    if signature is not None and (len(signature) != len(shape) or any(d < -1 for d in signature)):
        raise ModelError(f"{label} has shape_signature {list(signature)} not matching shape {list(shape)}.")
    elements = element_bound(shape)
    if elements > limits.max_elements:
        raise ModelError(
            f"{label} shape {list(shape)} has {elements} elements (zero dimensions left out), over the limit "
            f"of {limits.max_elements}."
        )


def _verify_memory(model: ModelDescription, limits: Limits) -> None:
    """The non-constant tensors of all subgraphs fit in `max_bytes` together (an arena bound)."""
    total = 0
    for index, subgraph in enumerate(model.subgraphs):
        for t, tensor in enumerate(subgraph.tensors):
            if tensor.data is None:
                total += limits.tensor_bytes(tensor.type, tensor.shape)
                if total > limits.max_bytes:
                    raise ModelError(
                        f"Tensor {t} of subgraph {index} ({tensor.name!r}) shape {list(tensor.shape)} brings "
                        f"the model's non-constant tensors to {total} bytes, over the limit of "
                        f"{limits.max_bytes} bytes."
                    )


def _check_indices(indices: Sequence[int], count: int, what: str, index: int, optional: bool) -> None:
    for i in indices:
        if not (0 <= i < count or (optional and i == OPTIONAL_TENSOR)):
            raise ModelError(
                f"Invalid tensor index {i} in {what} of subgraph {index}. The subgraph has {count} tensors"
            )


def _verify_io(subgraph: SubgraphDescription, index: int) -> None:
    count = len(subgraph.tensors)
    _check_indices(subgraph.inputs, count, "inputs", index, optional=False)
    _check_indices(subgraph.outputs, count, "outputs", index, optional=False)


def op_label(code: OperatorCodeDescription) -> str:
    """An operator code's name for messages: the builtin name or the custom op's name."""
    if code.builtin_code == BuiltinOperator.CUSTOM:
        return code.custom_code or "CUSTOM"
    try:
        return BuiltinOperator(code.builtin_code).name
    except ValueError:
        return f"builtin {code.builtin_code}"


def _verify_operators(
    subgraph: SubgraphDescription, index: int, codes: Sequence[OperatorCodeDescription]
) -> None:
    """Opcode and tensor indices in range; input and output counts within the op's arity."""
    count = len(subgraph.tensors)
    for o, op in enumerate(subgraph.operators):
        if not 0 <= op.opcode_index < len(codes):
            raise ModelError(
                f"Operator {o} of subgraph {index} has opcode_index {op.opcode_index}, "
                f"but the model has {len(codes)} operator codes."
            )
        code = codes[op.opcode_index]
        where = f"operator {o} ({op_label(code)})"
        _check_indices(op.inputs, count, f"inputs of {where}", index, optional=True)
        _check_indices(op.outputs, count, f"outputs of {where}", index, optional=True)
        _check_indices(op.intermediates, count, f"intermediates of {where}", index, optional=True)
        arity = OPERATOR_ARITY.get(code.builtin_code)
        if arity is None:
            continue
        for kind, tensors, (low, high) in (
            ("inputs", op.inputs, arity[0]),
            ("outputs", op.outputs, arity[1]),
        ):
            if not low <= len(tensors) <= (high if high is not None else len(tensors)):
                allowed = f"{low}" if low == high else f"{low} to {'any' if high is None else high}"
                raise ModelError(
                    f"Operator {o} ({op_label(code)}) of subgraph {index} has {len(tensors)} {kind}; "
                    f"{op_label(code)} takes {allowed}."
                )


def _verify_execution_order(
    subgraph: SubgraphDescription, index: int, codes: Sequence[OperatorCodeDescription]
) -> None:
    """Each operator reads only graph inputs, constants, variables or outputs of earlier operators,
    and writes each tensor once (TFLite's VerifySubGraphConsistency, with its messages)."""
    tensors = subgraph.tensors
    constant = {t for t, d in enumerate(tensors) if d.data is not None}
    variable = {t for t, d in enumerate(tensors) if d.is_variable and d.data is None}
    graph_inputs = set(subgraph.inputs)
    # a tensor with no elements holds nothing to read (e.g. the empty shape of a RESHAPE to a scalar),
    # unless an operator writes it: then it may be resized, and read before it is written
    written = {t for op in subgraph.operators for t in op.outputs}
    empty = {t for t, d in enumerate(tensors) if 0 in d.shape and t not in written}
    available = constant | variable | graph_inputs | empty
    produced: set[int] = set()
    for o, op in enumerate(subgraph.operators):
        name = op_label(codes[op.opcode_index])
        where = f"to op {o} ({name}) of subgraph {index}"
        for position, t in enumerate(op.inputs):
            if t == OPTIONAL_TENSOR or t in available or t in produced:
                continue
            if name == "RESHAPE" and position == 1 and len(tensors[t].shape) != 1:
                continue  # a placeholder shape input; RESHAPE then reads its options (as at invoke)
            raise ModelError(f"Input tensor {t} {where} is not produced")
        for t in op.outputs:
            if t == OPTIONAL_TENSOR or t in op.inputs:
                continue  # in-place: custom ops may alias; a builtin is refused by the builder, as TFLite does
            if t in constant:
                raise ModelError(f"Output tensor {t} {where} is a constant")
            if t in variable:
                raise ModelError(f"Output tensor {t} {where} is a variable")
            if t in graph_inputs:
                raise ModelError(f"Output tensor {t} {where} is a subgraph input")
            if t in produced:
                raise ModelError(
                    f"Output tensor {t} {where} is an output from another op. There is a cycle in the graph"
                )
            produced.add(t)


def _verify_signatures(model: ModelDescription) -> None:
    for signature in model.signatures:
        if not 0 <= signature.subgraph_index < len(model.subgraphs):
            raise ModelError(
                f"SignatureDef {signature.key!r} refers to subgraph {signature.subgraph_index}, "
                f"but the model has {len(model.subgraphs)}."
            )
        count = len(model.subgraphs[signature.subgraph_index].tensors)
        for name, t in (*signature.inputs.items(), *signature.outputs.items()):
            if not 0 <= t < count:
                raise ModelError(
                    f"SignatureDef {signature.key!r} maps {name!r} to tensor {t}, but "
                    f"subgraph {signature.subgraph_index} has {count} tensors."
                )


def subgraph_references(options: Any) -> list[tuple[str, int]]:
    """(field, subgraph index) for every `*_subgraph_index` field of an operator's options."""
    if options is None or not dataclasses.is_dataclass(options):
        return []
    return [
        (f.name, getattr(options, f.name))
        for f in dataclasses.fields(options)
        if f.name.endswith("subgraph_index")
    ]


def _verify_call_graph(model: ModelDescription, limits: Limits) -> None:
    """Control-flow subgraph references form no cycle and nest at most `max_call_depth` deep.

    An index out of range is left to the op's prepare, which reports it as TFLite does; a cycle would
    recurse without end (LiteRT overflows its stack), so it is refused here.
    """
    count = len(model.subgraphs)
    calls: list[list[tuple[int, str]]] = []
    for index, subgraph in enumerate(model.subgraphs):
        edges = []
        for o, op in enumerate(subgraph.operators):
            for field_name, target in subgraph_references(op.builtin_options):
                if 0 <= target < count:
                    name = op_label(model.operator_codes[op.opcode_index])
                    edges.append((target, f"operator {o} ({name}) of subgraph {index} {field_name}={target}"))
        calls.append(edges)
    depth: list[int | None] = [None] * count  # longest call chain below each finished subgraph
    for root in range(count):
        if depth[root] is not None:
            continue
        # iterative DFS: a hostile model may nest deeper than Python's recursion limit
        path, on_path, stack = [root], {root}, [iter(calls[root])]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                node = path.pop()
                on_path.discard(node)
                stack.pop()
                depth[node] = max((1 + depth[t] for t, _ in calls[node]), default=0)
                continue
            target, via = step
            if target in on_path:
                raise ModelError(
                    f"Subgraph {target} calls itself through {via}: control-flow subgraphs cannot recurse."
                )
            if depth[target] is None:
                if len(path) > limits.max_call_depth:
                    raise ModelError(
                        f"Control-flow subgraphs nest deeper than the limit of {limits.max_call_depth} "
                        f"(at {via})."
                    )
                path.append(target)
                on_path.add(target)
                stack.append(iter(calls[target]))
        if depth[root] > limits.max_call_depth:
            raise ModelError(
                f"Control-flow subgraphs nest {depth[root]} deep below subgraph {root}, over the limit of "
                f"{limits.max_call_depth}."
            )

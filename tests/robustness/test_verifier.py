"""Each rule of the load-time verifier (model/verifier.py), shown by a minimal hostile model.

A broken model must fail with a pytflite error (ModelError, a ValueError, at load; InterpreterError, a
RuntimeError, at run time) whose message names the field, the index and the limit; never an IndexError,
a KeyError, a struct.error, a MemoryError, a segfault or a hang.
"""

from __future__ import annotations

import contextlib
import struct

import numpy as np
import pytest
from tflite.Model import Model

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import InterpreterError, Limits, ModelError
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from pytflite.model.reader import read_model
from tests.oracle import CORPUS


def add_model() -> ModelBuilder:
    """x + c -> y: tensors 0 (input), 1 (constant), 2 (output)."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2, 3])
    c = builder.add_constant("c", np.arange(6, dtype=np.float32).reshape(2, 3))
    y = builder.add_tensor("y", T.FLOAT32, [2, 3])
    builder.add_operator(Op.ADD, [x, c], [y])
    builder.add_output(y)
    return builder


def load(model: bytes | ModelBuilder, **kwargs) -> pytflite.Interpreter:
    data = model.build() if isinstance(model, ModelBuilder) else model
    return pytflite.Interpreter(model_content=data, **kwargs)


def rejects(model, pattern: str, **kwargs) -> None:
    with pytest.raises(ModelError, match=pattern):
        load(model, **kwargs)


# --- flatbuffer bounds ------------------------------------------------------------------------------


def _tensor_table_position(data: bytes, index: int) -> int:
    return Model.GetRootAs(data, 0).Subgraphs(0).Tensors(index)._tab.Pos


def test_vtable_outside_the_file():
    data = bytearray(add_model().build())
    position = _tensor_table_position(bytes(data), 2)
    data[position : position + 4] = struct.pack("<i", position + 1000)  # vtable before the file start
    rejects(bytes(data), r"tensor 2 of subgraph 0 vtable at offset -1000 is outside the \d+-byte file")


def test_table_field_outside_its_table():
    data = bytearray(add_model().build())
    position = _tensor_table_position(bytes(data), 2)
    vtable = position - struct.unpack_from("<i", data, position)[0]
    data[vtable + 4 : vtable + 6] = struct.pack("<H", 0xFFF0)  # field 0 (shape) far past the table
    # tensors share vtables, so the first tensor using this one is reported
    rejects(bytes(data), r"tensor \d of subgraph 0 field 0 at offset 65520 is outside its \d+-byte table")


def test_buffer_vector_longer_than_the_file():
    builder = add_model()
    data = bytearray(builder.build())
    buffer = Model.GetRootAs(bytes(data), 0).Buffers(1)._tab
    start = buffer.Vector(buffer.Offset(4))
    data[start - 4 : start] = struct.pack("<I", 10**8)
    rejects(bytes(data), r"buffer 1 data vector of 100000000 elements at offset \d+ runs past the end")


def _corrupt_length(data: bytearray, table, slot: int) -> None:
    """Make the vector or string in field `slot` of a table (generated or raw) 2**28 elements long."""
    tab = getattr(table, "_tab", table)
    position = tab.Vector(tab.Offset(4 + 2 * slot)) - 4
    data[position : position + 4] = struct.pack("<I", 2**28)


@pytest.mark.parametrize(("slot", "field"), [(0, "shape"), (3, "name")])
def test_tensor_vector_or_string_longer_than_the_file(slot, field):
    data = bytearray(add_model().build())
    _corrupt_length(data, Model.GetRootAs(bytes(data), 0).Subgraphs(0).Tensors(2), slot)
    rejects(
        bytes(data), rf"tensor 2 of subgraph 0 {field} vector of 268435456 elements at offset \d+ runs past"
    )


def _options_table(data: bytes):
    return Model.GetRootAs(data, 0).Subgraphs(0).Operators(0).BuiltinOptions()


def test_options_string_longer_than_the_file():
    b = ModelBuilder()
    handle = b.add_tensor("handle", T.RESOURCE, [1])
    b.add_operator(Op.VAR_HANDLE, [], [handle], {"container": "c", "shared_name": "v"})
    b.add_output(handle)
    data = bytearray(b.build())
    _corrupt_length(data, _options_table(bytes(data)), slot=0)
    rejects(
        bytes(data),
        r"builtin options of operator 0 \(VAR_HANDLE\) container vector of 268435456 elements at offset",
    )


def test_options_vector_longer_than_the_file():
    b = ModelBuilder()
    x = b.add_input("x", T.INT32, [2])
    y = b.add_tensor("y", T.INT32, [2])
    b.add_operator(Op.RESHAPE, [x], [y], {"new_shape": [2]})
    b.add_output(y)
    data = bytearray(b.build())
    _corrupt_length(data, _options_table(bytes(data)), slot=0)
    rejects(bytes(data), r"builtin options of operator 0 \(RESHAPE\) new_shape vector of 268435456 elements")


@pytest.mark.parametrize("value", [0xFFFFFFF0, 0x7FFFFFFF, 0x10000, 3])
def test_any_corrupted_word_fails_with_a_model_error(value):
    """Every read is checked before it happens: no corrupted offset, length or vtable escapes the reader
    as a struct.error, an IndexError or a bare NumPy ValueError (the reader has no catch-all)."""
    model = add_model().build()
    for position in range(0, len(model) - 3, 4):  # offsets and lengths are 4-byte aligned
        data = bytearray(model)
        data[position : position + 4] = struct.pack("<I", value)
        with contextlib.suppress(ModelError):
            read_model(bytes(data))


def test_external_buffer_offset_past_the_end():
    builder = add_model()
    data = builder.build(buffers_after_flatbuffer=True)
    rejects(data[:-8], "Constant buffer 1 specified an out of range offset: .* past the end of the")


# --- indices ------------------------------------------------------------------------------------------


def test_operator_tensor_index_out_of_range():
    builder = add_model()
    builder.main.operators[0].inputs = (0, 7)
    rejects(
        builder, r"Invalid tensor index 7 in inputs of operator 0 \(ADD\) of subgraph 0. The subgraph has 3"
    )


def test_subgraph_input_index_may_not_be_optional():
    builder = add_model()
    builder.main.inputs = [-1]
    rejects(builder, "Invalid tensor index -1 in inputs of subgraph 0. The subgraph has 3 tensors")


def test_opcode_index_out_of_range():
    builder = add_model()
    builder.main.operators[0].opcode_index = 2**31 - 1
    rejects(
        builder, "Operator 0 of subgraph 0 has opcode_index 2147483647, but the model has 1 operator codes"
    )


def test_signature_tensor_index_out_of_range():
    builder = add_model()
    builder.add_signature("serve", {"x": 0}, {"y": 3})
    rejects(builder, "SignatureDef 'serve' maps 'y' to tensor 3, but subgraph 0 has 3 tensors")


# --- buffers, dimensions, memory -------------------------------------------------------------------------


def test_buffer_shorter_than_its_tensor():
    builder = add_model()
    builder.main.tensors[1].shape = (2, 4)
    rejects(
        builder,
        r"Tensor 1 of subgraph 0 is invalidly specified .* holds 24 bytes but FLOAT32\[2, 4\] needs 32",
    )


def test_negative_dimension():
    builder = add_model()
    builder.main.tensors[2].shape = (2, -1)
    rejects(
        builder,
        r"Tensor 2 of subgraph 0 \('y'\) has a negative dimension in shape \[2, -1\] \(-1 is allowed only",
    )


def test_minus_one_is_allowed_in_shape_signature_only():
    builder = add_model()
    builder.main.tensors[0].shape_signature = (-1, 3)
    load(builder).allocate_tensors()
    builder.main.tensors[0].shape_signature = (-2, 3)
    rejects(builder, r"shape_signature \[-2, 3\] not matching shape \[2, 3\]")
    builder.main.tensors[0].shape_signature = (-1,)
    rejects(builder, r"shape_signature \[-1\] not matching shape \[2, 3\]")


def test_element_count_limit_counts_all_nonzero_dimensions():
    builder = add_model()
    builder.main.tensors[2].shape = (0, 2**31 - 1, 2**31 - 1)  # no elements, but NumPy cannot make it
    rejects(
        builder, r"Tensor 2 of subgraph 0 \('y'\) .* has 4611686014132420609 elements .* limit of 2147483647"
    )


def test_memory_limit_on_non_constant_tensors():
    builder = add_model()
    builder.main.tensors[2].shape = (2**15, 2**15)  # 4 GiB of float32
    rejects(builder, r"non-constant tensors to 4294967320 bytes, over the limit of 4294967296 bytes")
    rejects(add_model(), "over the limit of 40 bytes", limits=Limits(max_bytes=40))
    load(add_model(), limits=Limits(max_bytes=48))  # x and y: 24 bytes each; the constant is in the file


def test_default_limits_admit_every_corpus_model():
    models = sorted(CORPUS.glob("*.tflite"))
    if not models:
        pytest.skip(f"the public corpus is not at {CORPUS}")
    for path in models:
        pytflite.Interpreter(model_path=str(path))


# --- operators ------------------------------------------------------------------------------------------


def test_operator_arity():
    builder = add_model()
    builder.main.operators[0].inputs = (0, 1, 1)
    rejects(builder, r"Operator 0 \(ADD\) of subgraph 0 has 3 inputs; ADD takes 2.")
    builder = add_model()
    builder.main.operators[0].outputs = ()
    rejects(builder, r"Operator 0 \(ADD\) of subgraph 0 has 0 outputs; ADD takes 1.")


def test_variadic_and_custom_operators_are_not_limited():
    builder = ModelBuilder()
    parts = [builder.add_input(f"x{i}", T.FLOAT32, [1, 2]) for i in range(5)]
    y = builder.add_tensor("y", T.FLOAT32, [5, 2])
    builder.add_operator(Op.CONCATENATION, parts, [y], {"axis": 0})
    builder.add_output(y)
    load(builder).allocate_tensors()


# --- control-flow subgraphs ------------------------------------------------------------------------------


def _while_model(body: int) -> ModelBuilder:
    """WHILE i < 10: i = body(i), with the condition in subgraph 1 and the body at `body`."""
    b = ModelBuilder()
    i = b.add_input("i", T.INT32, [1])
    o = b.add_tensor("o", T.INT32, [1])
    b.add_output(o)
    b.add_operator(Op.WHILE, [i], [o], {"cond_subgraph_index": 1, "body_subgraph_index": body})
    cond = b.add_subgraph("cond")
    ci = cond.add_input("i", T.INT32, [1])
    limit = cond.add_constant("limit", np.array([10], np.int32))
    keep = cond.add_tensor("keep", T.BOOL, [1])
    cond.add_operator(Op.LESS, [ci, limit], [keep])
    cond.add_output(keep)
    body_graph = b.add_subgraph("body")
    bi = body_graph.add_input("i", T.INT32, [1])
    one = body_graph.add_constant("one", np.array([1], np.int32))
    bo = body_graph.add_tensor("next", T.INT32, [1])
    body_graph.add_operator(Op.ADD, [bi, one], [bo])
    body_graph.add_output(bo)
    return b


def test_while_body_calling_the_main_subgraph_is_refused():
    # LiteRT overflows its stack on this model (a segfault)
    rejects(
        _while_model(body=0),
        r"Subgraph 0 calls itself through operator 0 \(WHILE\) of subgraph 0 body_subgraph_index=0: "
        "control-flow subgraphs cannot recurse",
    )


def test_call_once_cycle_between_two_subgraphs_is_refused():
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1])
    y = b.add_tensor("y", T.FLOAT32, [1])
    b.add_output(y)
    b.add_operator(Op.CALL_ONCE, [], [], {"init_subgraph_index": 1})
    b.add_operator(Op.ABS, [x], [y])
    b.add_subgraph("a").add_operator(Op.CALL_ONCE, [], [], {"init_subgraph_index": 2})
    b.add_subgraph("b").add_operator(Op.CALL_ONCE, [], [], {"init_subgraph_index": 1})
    rejects(
        b, r"Subgraph 1 calls itself through operator 0 \(CALL_ONCE\) of subgraph 2 init_subgraph_index=1"
    )


def test_nesting_depth_limit():
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1])
    y = b.add_tensor("y", T.FLOAT32, [1])
    b.add_output(y)
    b.add_operator(Op.ABS, [x], [y])
    b.add_operator(Op.CALL_ONCE, [], [], {"init_subgraph_index": 1})
    for index in range(1, 6):
        b.add_subgraph(f"s{index}").add_operator(Op.CALL_ONCE, [], [], {"init_subgraph_index": index + 1})
    b.add_subgraph("leaf")
    load(b, limits=Limits(max_call_depth=6)).allocate_tensors()
    rejects(b, "nest deeper than the limit of 4", limits=Limits(max_call_depth=4))


def test_valid_while_loop_runs_and_its_iteration_limit_holds():
    interpreter = load(_while_model(body=2))
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([0], np.int32))
    interpreter.invoke()
    assert interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).tolist() == [10]
    limited = load(_while_model(body=2), limits=Limits(max_while_iterations=5))
    limited.allocate_tensors()
    limited.set_tensor(0, np.array([0], np.int32))
    with pytest.raises(InterpreterError, match=r"WHILE ran 5 iterations, the limit .* is 5"):
        limited.invoke()


# --- execution order (TFLite's VerifySubGraphConsistency) -------------------------------------------------


def test_input_that_nothing_produces():
    builder = add_model()
    z = builder.add_tensor("z", T.FLOAT32, [2, 3])
    builder.main.operators[0].inputs = (0, z)
    rejects(builder, r"Input tensor 3 to op 0 \(ADD\) of subgraph 0 is not produced")


def test_operator_reading_a_later_output():
    builder = add_model()
    z = builder.add_tensor("z", T.FLOAT32, [2, 3])
    builder.add_operator(Op.ABS, [2], [z])  # op 1 reads y, op 0's output
    builder.main.operators.reverse()
    rejects(builder, r"Input tensor 2 to op 0 \(ABS\) of subgraph 0 is not produced")


@pytest.mark.parametrize(
    ("output", "what"),
    [(1, "is a constant"), (0, "is a subgraph input"), (2, "is an output from another op")],
)
def test_outputs_written_once_and_never_over_inputs_or_constants(output, what):
    builder = add_model()
    extra = builder.add_tensor("x2", T.FLOAT32, [2, 3])
    builder.main.inputs.append(extra)
    builder.add_operator(Op.ABS, [extra], [output])
    rejects(builder, rf"Output tensor {output} to op 1 \(ABS\) of subgraph 0 {what}")


def test_variable_written_by_an_op_is_refused():
    builder = add_model()
    state = builder.add_tensor("state", T.FLOAT32, [2, 3], is_variable=True)
    builder.add_operator(Op.ABS, [2], [state])
    rejects(builder, r"Output tensor 3 to op 1 \(ABS\) of subgraph 0 is a variable")


# --- run-time limits --------------------------------------------------------------------------------------


def test_a_kernel_cannot_resize_past_the_limit():
    b = ModelBuilder()
    dims = b.add_input("dims", T.INT32, [2])
    value = b.add_constant("value", np.array(1.0, np.float32))
    out = b.add_tensor("out", T.FLOAT32, [1, 1])
    b.add_operator(Op.FILL, [dims, value], [out])
    b.add_output(out)
    interpreter = load(b, limits=Limits(max_bytes=1 << 20))
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([1024, 1024], np.int32))
    with pytest.raises(
        InterpreterError, match=r"tensor 2 shape \[1024, 1024\] needs 4194304 bytes, over the limit"
    ):
        interpreter.invoke()


def test_resize_tensor_input_past_the_limit_is_a_runtime_error():
    interpreter = load(add_model(), limits=Limits(max_bytes=1 << 20))
    with pytest.raises(
        RuntimeError, match=r"tensor 0 shape \[1024, 1024\] needs 4194304 bytes, over the limit"
    ):
        interpreter.resize_tensor_input(0, [1024, 1024])


def test_arena_over_the_limit_is_refused_at_allocate():
    """Each tensor fits the limit, but four of them are alive at once (ADD_N reads them all)."""
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1], shape_signature=[-1])
    parts = []
    for i in range(4):
        h = b.add_tensor(f"h{i}", T.FLOAT32, [1], shape_signature=[-1])
        b.add_operator(Op.ABS, [x], [h])
        parts.append(h)
    y = b.add_tensor("y", T.FLOAT32, [1], shape_signature=[-1])
    b.add_operator(Op.ADD_N, parts, [y])
    b.add_output(y)
    interpreter = load(b, limits=Limits(max_bytes=6000))
    interpreter.resize_tensor_input(0, [1000])
    with pytest.raises(
        InterpreterError, match="allocate_tensors: the arena needs .* over the limit of 6000 bytes"
    ):
        interpreter.allocate_tensors()
    with pytest.raises(RuntimeError, match="not ready"):
        interpreter.invoke()
    roomy = load(b, limits=Limits(max_bytes=40000))
    roomy.resize_tensor_input(0, [1000])
    roomy.allocate_tensors()


def test_the_arena_limit_holds_in_called_subgraphs_too():
    """The planner of every subgraph holds its arena to Limits.max_bytes before growing it: an IF branch
    whose tensors each pass the limit but together do not is refused when IF prepares it, the reason in
    the error text; with room, that branch runs."""
    b = ModelBuilder()
    main = b.main
    cond = main.add_input("cond", T.BOOL, [])
    x = main.add_input("x", T.FLOAT32, [2, 3])
    out = main.add_tensor("out", T.FLOAT32, [2, 3], shape_signature=[-1, 3])
    main.add_output(out)
    main.add_operator(Op.IF, [cond, x], [out], {"then_subgraph_index": 1, "else_subgraph_index": 2})
    small = b.add_subgraph("small")
    sx = small.add_input("x", T.FLOAT32, [2, 3])
    doubled = small.add_tensor("doubled", T.FLOAT32, [2, 3])
    small.add_operator(Op.ADD, [sx, sx], [doubled])
    small.add_output(doubled)
    large = b.add_subgraph("large")
    lx = large.add_input("x", T.FLOAT32, [2, 3])
    multiples = large.add_constant("multiples", np.array([300, 1], np.int32))
    tiled = large.add_tensor("tiled", T.FLOAT32, [2, 3], shape_signature=[-1, 3])
    large.add_operator(Op.TILE, [lx, multiples], [tiled])
    total = large.add_tensor("total", T.FLOAT32, [2, 3], shape_signature=[-1, 3])
    large.add_operator(Op.ADD, [tiled, tiled], [total])  # two 7,200-byte tensors alive at once
    large.add_output(total)
    tight = load(b, limits=Limits(max_bytes=8000))
    with pytest.raises(
        InterpreterError, match=r"the arena needs \d+ bytes, over the limit of 8000[\s\S]*\(IF\)"
    ):
        tight.allocate_tensors()
    roomy = load(b, limits=Limits(max_bytes=40000))
    roomy.allocate_tensors()
    roomy.set_tensor(1, np.ones([2, 3], np.float32))
    roomy.set_tensor(0, np.array(False))
    roomy.invoke()
    np.testing.assert_array_equal(roomy.get_tensor(out), np.full([600, 3], 2, np.float32))

"""The fused row write of a WHILE body (ops/row_write.py): TensorFlow's SLICE / item / SLICE ->
CONCATENATION write of row k into a sequence buffer runs as one static step, with the results, errors and
profiler events of the original kernels, which run instead whenever k does not fit."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.ops.row_write import is_rewritten
from pytflite.tools.profiler import Profiler
from tests.ops.test_control_flow import counting_while
from tests.oracle import assert_matches, litert_interpreter, requires_litert, run

pytestmark = requires_litert

ROWS = 4


def row_writing_loop(body_signature: bool = False) -> bytes:
    """while i < n: buf[i] = h * (i + 1); i += 1, with buf[i] written as TensorFlow writes it:
    CONCATENATION(SLICE(buf, [0, 0], [i, -1]), item, SLICE(buf, [i + 1, 0], [-1, -1])).
    `body_signature`: the body is also a signature ("body"), which a signature runner invokes alone."""
    specs = (("i", T.INT32, []), ("n", T.INT32, []), ("buf", T.FLOAT32, [ROWS, 2]), ("h", T.FLOAT32, [2]))
    b, body, (bi, bn, buf, h) = counting_while(specs)
    one = body.add_constant("one", np.int32(1))
    one_shape, row_shape = (
        body.add_constant(n, np.array(v, np.int32)) for n, v in (("s1", [1]), ("s2", [1, 2]))
    )
    zeros, minus = (
        body.add_constant(n, np.array(v, np.int32)) for n, v in (("zeros", [0, 0]), ("minus", [-1, -1]))
    )
    zero, whole = (body.add_constant(n, np.array([v], np.int32)) for n, v in (("zero", 0), ("whole", -1)))
    i1, factor = body.add_tensor("i1", T.INT32, []), body.add_tensor("factor", T.FLOAT32, [])
    k, k1 = body.add_tensor("k", T.INT32, [1]), body.add_tensor("k1", T.INT32, [1])
    size, begin = body.add_tensor("size", T.INT32, [2]), body.add_tensor("begin", T.INT32, [2])
    head = body.add_tensor("head", T.FLOAT32, [ROWS - 1, 2], shape_signature=[-1, 2])
    tail = body.add_tensor("tail", T.FLOAT32, [0, 2], shape_signature=[-1, 2])
    value, item = body.add_tensor("value", T.FLOAT32, [2]), body.add_tensor("item", T.FLOAT32, [1, 2])
    buf1 = body.add_tensor("buf1", T.FLOAT32, [ROWS, 2])
    body.add_operator(Op.ADD, [bi, one], [i1])
    body.add_operator(Op.CAST, [i1], [factor])
    body.add_operator(Op.MUL, [h, factor], [value])
    body.add_operator(Op.RESHAPE, [bi, one_shape], [k])
    body.add_operator(Op.CONCATENATION, [k, whole], [size], {"axis": 0})
    body.add_operator(Op.SLICE, [buf, zeros, size], [head])
    body.add_operator(Op.RESHAPE, [i1, one_shape], [k1])
    body.add_operator(Op.CONCATENATION, [k1, zero], [begin], {"axis": 0})
    body.add_operator(Op.SLICE, [buf, begin, minus], [tail])
    body.add_operator(Op.RESHAPE, [value, row_shape], [item])
    body.add_operator(Op.CONCATENATION, [head, item, tail], [buf1], {"axis": 0})
    for o in (i1, bn, buf1, h):
        body.add_output(o)
    if body_signature:
        names = ("i", "n", "buf", "h")
        b.add_signature(
            "body", dict(zip(names, (bi, bn, buf, h))), dict(zip(names, (i1, bn, buf1, h))), subgraph_index=2
        )
    return b.build()


def feeds(start: int, limit: int) -> list[np.ndarray]:
    buf = np.arange(ROWS * 2, dtype=np.float32).reshape(ROWS, 2) - 3
    return [np.array(start, np.int32), np.array(limit, np.int32), buf, np.array([0.5, -1.25], np.float32)]


def unfused(model: bytes) -> pytflite.Interpreter:
    """An interpreter that runs the original kernels (every tensor kept readable: no fusion)."""
    return pytflite.Interpreter(model_content=model, experimental_preserve_all_tensors=True)


def _equal(ours, theirs) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("start, limit", [(0, ROWS), (1, 3), (2, 2), (0, 0)])
def test_the_fused_loop_matches_litert_and_the_original_kernels(start, limit):
    model = row_writing_loop()
    interpreter = pytflite.Interpreter(model_content=model)
    ours = run(interpreter, feeds(start, limit))
    for a, b in zip(ours, run(litert_interpreter(model), feeds(start, limit))):
        assert_matches(a, b)
    _equal(ours, run(unfused(model), feeds(start, limit)))
    body = interpreter.subgraphs[2]
    assert is_rewritten(body) and not body.has_dynamic_tensors  # fused: the body is static
    loop = interpreter.subgraphs[0].nodes[0][0].user_data.loop
    assert loop.bound() is not None  # and the WHILE runs as a bound loop
    _equal(run(interpreter, feeds(start, limit)), ours)  # again, bound


def test_k_past_the_buffer_fails_as_the_original_kernels_do_and_later_invokes_still_work():
    model = row_writing_loop()
    interpreter, reference = pytflite.Interpreter(model_content=model), unfused(model)
    messages = []
    for runner in (interpreter, reference):
        with pytest.raises(RuntimeError) as caught:
            run(runner, feeds(0, ROWS + 1))  # row ROWS does not exist: the tail SLICE begins past the end
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert "(SLICE) failed to invoke" in messages[0]
    with pytest.raises(RuntimeError):
        run(litert_interpreter(model), feeds(0, ROWS + 1))
    _equal(run(interpreter, feeds(0, ROWS)), run(reference, feeds(0, ROWS)))


def test_k_of_minus_one_grows_the_buffer_as_the_original_kernels_do():
    """SLICE's size -1 takes the whole axis: row -1 makes the concatenation 2 * ROWS + 1 rows, which the
    fused step cannot give, so the loop runs again with the original kernels."""
    model = row_writing_loop()
    interpreter = pytflite.Interpreter(model_content=model)
    ours = run(interpreter, feeds(-1, 2))
    assert ours[2].shape == (2 * ROWS + 1, 2)
    for a, b in zip(ours, run(litert_interpreter(model), feeds(-1, 2))):
        assert_matches(a, b)
    _equal(ours, run(unfused(model), feeds(-1, 2)))
    assert not is_rewritten(interpreter.subgraphs[2])  # it stopped fusing
    _equal(run(interpreter, feeds(0, ROWS)), run(unfused(model), feeds(0, ROWS)))


def test_a_profiler_sees_every_node_of_every_iteration():
    model = row_writing_loop()
    interpreter = pytflite.Interpreter(model_content=model)
    expected = run(interpreter, feeds(0, 3))
    profiler = Profiler()
    profiler.attach(interpreter)
    with profiler.run():
        interpreter.invoke()
    profiler.detach(interpreter)
    body_events = [e.tag for e in profiler.runs[0] if e.metadata2 == 2]
    ops = ["ADD", "CAST", "MUL", "RESHAPE", "CONCATENATION", "SLICE", "RESHAPE", "CONCATENATION", "SLICE"]
    assert body_events == [*ops, "RESHAPE", "CONCATENATION"] * 3
    _equal([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()], expected)


def test_a_user_kernel_under_a_builtin_code_keeps_the_body_unfused():
    """A loop is rerun from its inputs after a failed row write only when it is pure; a kernel the user
    registers under a builtin code (here MUL, counting its calls) may keep state, so the body is not fused
    and every call reaches the user's kernel exactly once per iteration."""
    calls = []
    builtin = pytflite.BuiltinOpResolver().find_builtin(Op.MUL, 1)

    def counting_invoke(context, node):
        calls.append(node.index)
        return builtin.invoke(context, node)

    resolver = pytflite.MutableOpResolver()
    resolver.add_all(pytflite.BuiltinOpResolver())
    resolver.add_builtin(Op.MUL, pytflite.Registration(prepare=builtin.prepare, invoke=counting_invoke), 1)
    interpreter = pytflite.Interpreter(model_content=row_writing_loop(), op_resolver=resolver)
    ours = run(interpreter, feeds(0, ROWS))
    assert not is_rewritten(interpreter.subgraphs[2])
    assert len(calls) == ROWS
    _equal(ours, run(unfused(row_writing_loop()), feeds(0, ROWS)))


def test_a_body_a_signature_runs_alone_keeps_its_own_nodes():
    """A body subgraph that a signature names may run without its WHILE, where a misfit cannot make the
    loop run again: it is never fused, and runs alone as the original kernels do (row -1 grows the
    buffer)."""
    model = row_writing_loop(body_signature=True)
    interpreter = pytflite.Interpreter(model_content=model)
    _equal(run(interpreter, feeds(0, ROWS)), run(unfused(model), feeds(0, ROWS)))
    assert not is_rewritten(interpreter.subgraphs[2])
    values = dict(zip(("i", "n", "buf", "h"), feeds(-1, 2)))
    ours = interpreter.get_signature_runner("body")(**values)
    theirs = unfused(model).get_signature_runner("body")(**values)
    assert ours["buf"].shape == (2 * ROWS + 1, 2)
    _equal([ours[k] for k in sorted(ours)], [theirs[k] for k in sorted(theirs)])


def test_a_dropped_interpreter_of_a_fused_loop_is_freed():
    """The fused body's rewrite, kept in row_write's table weakly keyed by the body, held the body (and
    so the interpreter's subgraphs) strongly: every interpreter of such a loop stayed in memory (found
    by the coverage-guided fuzzer's growing memory)."""
    interpreter = pytflite.Interpreter(model_content=row_writing_loop())
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), feeds(0, 4), strict=True):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    body = interpreter.subgraphs[2]
    assert is_rewritten(body)
    body = weakref.ref(body)
    del interpreter
    gc.collect()
    assert body() is None

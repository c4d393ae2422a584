"""Native delegates and pytflite's profiler (issue #19): `context->profiler` is a tflite::Profiler C++
object forwarding to the pytflite profiler, so a compiled delegate's TFLITE_SCOPED_DELEGATE_OPERATOR_PROFILE
events reach it. LiteRT's Python API has no profiler to compare with; the expected events are what TFLite's
Subgraph reports: the DELEGATE node as an operator event (unless the delegate asks for per-operator
profiling), the delegate's own events inside it with the node index it gives and the subgraph index."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import pytflite
from pytflite.core.profiling import EventType, ProfilerHooks
from pytflite.delegates.native import abi
from pytflite.delegates.native.context import native_context
from pytflite.tools.profiler import Profiler, ProfileSummary
from tests.delegates.native.test_native_delegates import MODEL, inputs, invoke

pytestmark = pytest.mark.skipif(abi.check_platform() is not None, reason=str(abi.check_platform()))

OP, DELEGATE_OP = EventType.OPERATOR_INVOKE_EVENT, EventType.DELEGATE_OPERATOR_INVOKE_EVENT
# MODEL's nodes: ADD 0, MUL 1, ABS 2, SUB 3; the arith delegate's DELEGATE nodes are 4 (ADD, MUL) and 5 (SUB)
DELEGATE_NODES = [("ArithDelegate", OP, 4, 0), ("ArithDelegate", OP, 5, 0)]
ABS = ("ABS", OP, 2, 0)
DELEGATE_OPS = [("ADD", DELEGATE_OP, 0, 0), ("MUL", DELEGATE_OP, 1, 0), ("SUB", DELEGATE_OP, 3, 0)]


class Recorder(ProfilerHooks):
    """Every call, in order; handles are the begin calls' positions in `calls`."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def begin_event(self, tag: str, event_type: int, metadata1: int = 0, metadata2: int = 0) -> int:
        self.calls.append(("begin", tag, EventType(event_type), metadata1, metadata2))
        return len(self.calls) - 1

    def end_event(self, handle: int) -> None:
        self.calls.append(("end", handle))

    def add_event(self, tag: str, event_type: int, elapsed_us: float, metadata1: int = 0, metadata2: int = 0):
        self.calls.append(("add", tag, EventType(event_type), elapsed_us, metadata1, metadata2))


def arith_interpreter(built, **options) -> pytflite.Interpreter:
    return pytflite.Interpreter(
        model_content=MODEL, experimental_delegates=[pytflite.load_delegate(built["arith"], options)]
    )


@pytest.mark.parametrize(
    ("options", "force", "expected"),
    [
        ({}, False, [DELEGATE_NODES[0], *DELEGATE_OPS[:2], ABS, DELEGATE_NODES[1], DELEGATE_OPS[2]]),
        # the delegate asks to report its ops itself: its nodes are not timed, unless the profiler insists
        ({"per_operator_profiling": 1}, False, [*DELEGATE_OPS[:2], ABS, DELEGATE_OPS[2]]),
        (
            {"per_operator_profiling": 1},
            True,
            [DELEGATE_NODES[0], *DELEGATE_OPS[:2], ABS, DELEGATE_NODES[1], DELEGATE_OPS[2]],
        ),
    ],
)
def test_delegate_ops_are_profiled_inside_their_delegate_node(built, options, force, expected):
    interp = arith_interpreter(built, profile=1, **options)
    profiler = Profiler()
    profiler.force_delegate_node_profiling = force
    profiler.attach(interp)
    for seed in (0, 1):  # the first invoke after allocation, then a steady one
        with profiler.run():
            invoke(interp, inputs(2, seed))
    for events in profiler.runs:
        assert [(e.tag, e.event_type, e.metadata1, e.metadata2) for e in events] == expected
    summary = ProfileSummary.from_profiler(profiler, interp)
    assert sorted(summary.delegate.details) == ["Delegate/ADD:0", "Delegate/MUL:1", "Delegate/SUB:3"]
    assert all(detail.times_called == 2 for detail in summary.delegate.details.values())


def test_delegate_events_nest_in_their_delegate_node(built):
    """The begin and end calls in order: each op the delegate runs lies within its DELEGATE node's event."""
    interp = arith_interpreter(built, profile=1)
    recorder = Recorder()
    recorder.attach(interp)
    x, y = inputs(2, 3)
    np.testing.assert_array_equal(invoke(interp, [x, y]), np.abs(np.maximum(x + y, 0) * y) - y)
    assert recorder.calls == [
        ("begin", *DELEGATE_NODES[0]),
        ("begin", *DELEGATE_OPS[0]),
        ("end", 1),
        ("begin", *DELEGATE_OPS[1]),
        ("end", 3),
        ("end", 0),
        ("begin", *ABS),
        ("end", 6),
        ("begin", *DELEGATE_NODES[1]),
        ("begin", *DELEGATE_OPS[2]),
        ("end", 9),
        ("end", 8),
    ]


def test_profiler_is_null_without_a_profiler(built):
    """`context->profiler` is NULL before a profiler is set, a tflite::Profiler while one is, and NULL
    again once it is removed, also in the check-free invoke steps (which run only without a profiler)
    right after a profiled invoke; the delegate runs either way."""
    interp = arith_interpreter(built, profile=1, ops="SUB")  # its one DELEGATE node runs as a bare C step
    struct = native_context(interp.subgraphs[0].context).struct
    x, y = inputs(2, 4)
    expected = np.abs(np.maximum(x + y, 0) * y) - y
    np.testing.assert_array_equal(invoke(interp, [x, y]), expected)
    assert interp.subgraphs[0].runner.fast_steps is not None
    assert struct.profiler is None
    recorder = Recorder()
    with recorder.attached(interp):
        interp.invoke()
        assert struct.profiler is not None
    assert [call[1] for call in recorder.calls if call[0] == "begin"] == [
        "ADD",
        "MUL",
        "ABS",
        "ArithDelegate",
        "SUB",
    ]
    calls = len(recorder.calls)
    interp.invoke()
    np.testing.assert_array_equal(interp.get_tensor(interp.get_output_details()[0]["index"]), expected)
    assert struct.profiler is None
    assert len(recorder.calls) == calls


def test_each_virtual_method_reaches_the_profiler(built):
    """A C++ caller of every tflite::Profiler method (the vtable slots in declaration order): metadata2
    becomes the subgraph index, EndEvent's metadata and AddEventWithData are dropped."""
    interp = arith_interpreter(built)
    interp.allocate_tensors()
    recorder = Recorder()
    recorder.attach(interp)
    native = native_context(interp.subgraphs[0].context)
    native.sync([])
    library = ctypes.CDLL(str(built["arith"]))
    library.arith_delegate_profile_all.argtypes = [ctypes.c_void_p]
    library.arith_delegate_profile_all(native.struct.profiler)
    assert recorder.calls == [
        ("begin", "begin", EventType.DEFAULT, 1, 0),
        ("begin", "inner", EventType.DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT, 7, 0),
        ("end", 1),
        ("end", 0),
        ("add", "added", EventType.OPERATOR_INVOKE_EVENT, 250, 5, 0),
    ]

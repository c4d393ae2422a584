"""A native delegate's life, as LiteRT's own Python tests check it with their test delegate
(tflite/python/interpreter_test.py): how many delegates were created, destroyed and asked to prepare a
graph, options reaching the plugin, a failing creation, and that kernels are freed before their delegate
whichever of the interpreter and the delegate the user drops first. Each case runs under pytflite and
under ai-edge-litert with the same counting_delegate.cc library."""

from __future__ import annotations

import ctypes
import gc

import pytest

import pytflite
from pytflite.delegates.native import abi
from tests.delegates.native.helpers import make_interpreter
from tests.delegates.native.test_native_delegates import MODEL
from tests.oracle import litert

pytestmark = pytest.mark.skipif(abi.check_platform() is not None, reason=str(abi.check_platform()))

RUNTIMES = [pytest.param(pytflite, id="pytflite"), pytest.param(litert, id="litert")]
_Callback = ctypes.CFUNCTYPE(None, ctypes.c_char_p)


class Counts:
    """The library's counters (created, destroyed, prepared, options_counter) and its event log."""

    def __init__(self, path):
        self.library = ctypes.CDLL(str(path))
        self.library.counting_delegate_reset.argtypes = [_Callback]
        self.events: list[str] = []
        self._callback = _Callback(lambda text: self.events.append(text.decode()))
        gc.collect()  # earlier tests' delegates go now, not while this one counts
        self.library.counting_delegate_reset(self._callback)

    def __call__(self) -> tuple[int, int, int, int]:
        gc.collect()
        counts = (ctypes.c_int * 4)()
        self.library.counting_delegate_counts(counts)
        return tuple(counts)

    def close(self) -> None:
        self.library.counting_delegate_reset(_Callback())  # NULL: no calls into a dead callback


@pytest.fixture
def counts(built):
    if litert is None:
        pytest.skip("ai-edge-litert (the reference oracle) is not installed")
    counter = Counts(built["counting"])
    yield counter
    counter.close()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_delegate_lives_as_long_as_its_interpreter(built, counts, runtime):
    interpreter = make_interpreter(runtime, MODEL, [runtime.load_delegate(built["counting"])])
    assert counts() == (1, 0, 1, 0)
    del interpreter
    assert counts() == (1, 1, 1, 0)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_one_delegate_shared_by_two_interpreters(built, counts, runtime):
    delegate = runtime.load_delegate(built["counting"])
    assert counts() == (1, 0, 0, 0)
    first = make_interpreter(runtime, MODEL, [delegate])
    second = make_interpreter(runtime, MODEL, [delegate])
    assert counts() == (1, 0, 2, 0)
    del delegate, first
    assert counts() == (1, 0, 2, 0)
    del second
    assert counts() == (1, 1, 2, 0)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_options_reach_the_plugin(built, counts, runtime):
    plain = runtime.load_delegate(built["counting"])
    counted = runtime.load_delegate(built["counting"], {"unused": False, "options_counter": 2})
    assert counts() == (2, 0, 0, 2)
    del plain, counted
    assert counts() == (2, 2, 0, 2)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_failing_creation(built, counts, runtime):
    """LiteRT's text, and its call of the destroy entry point with the NULL the plugin returned."""
    library = str(built["counting"])
    with pytest.raises(ValueError) as raised:
        runtime.load_delegate(library, {"fail": "fail"})
    assert str(raised.value) == (
        f"Failed to load delegate from {library}\nCountingDelegate: creation failed as asked."
    )
    del raised
    assert counts() == (1, 1, 0, 0)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("dropped_first", ["delegate", "interpreter"])
def test_kernels_are_freed_before_their_delegate(built, counts, runtime, dropped_first):
    delegate = runtime.load_delegate(built["counting"], {"claim_first_node": 1})
    interpreter = make_interpreter(runtime, MODEL, [delegate])
    interpreter.allocate_tensors()
    if dropped_first == "delegate":
        del delegate
        counts()
        assert counts.events == []  # the interpreter still uses it
        del interpreter
    else:
        del interpreter
        counts()
        assert counts.events == ["kernel freed"]
        del delegate
    assert counts() == (1, 1, 1, 0)
    assert counts.events == ["kernel freed", "delegate destroyed"]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_delegates_go_at_once_without_the_cycle_collector(built, counts, runtime):
    """LiteRT's own tests read the counters through `delegate._library` / `interpreter._delegates` and
    expect a delegate destroyed as soon as its last user is dropped, with no gc.collect() in between."""

    def read(library) -> tuple[int, ...]:
        values = (ctypes.c_int * 4)()
        library.counting_delegate_counts(values)
        return tuple(values)

    gc.disable()
    try:
        interpreter = make_interpreter(runtime, MODEL, [runtime.load_delegate(built["counting"])])
        library = interpreter._delegates[0]._library
        assert read(library) == (1, 0, 1, 0)
        del interpreter
        assert read(library) == (1, 1, 1, 0)
        delegate = runtime.load_delegate(built["counting"])
        first = make_interpreter(runtime, MODEL, [delegate])
        second = make_interpreter(runtime, MODEL, [delegate])
        del delegate, first
        assert read(library) == (2, 1, 3, 0)
        del second
        assert read(library) == (2, 2, 3, 0)
    finally:
        gc.enable()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_native_pointer_is_litert_s_method(built, counts, runtime):
    delegate = runtime.load_delegate(built["counting"])
    pointer = delegate._get_native_delegate_pointer()
    assert isinstance(pointer, int) and pointer != 0
    if runtime is pytflite:
        assert pointer == delegate.native_address

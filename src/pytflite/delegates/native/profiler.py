"""NativeProfiler: the `tflite::Profiler` C++ object that `TfLiteContext::profiler` points to.

Native delegates time what they run through `context->profiler`, a C++ object with virtual methods
(TFLite's tflite/core/api/profiler.h, as LiteRT 2.x declares it). On the Itanium C++ ABI (64-bit Linux)
such an object starts with a pointer to its vtable, whose slots follow the declaration order:

    ~Profiler() twice (the complete and the deleting destructor)
    uint32_t BeginEvent(const char* tag, EventType, int64_t metadata1, int64_t metadata2)
    void EndEvent(uint32_t handle, int64_t metadata1, int64_t metadata2)
    void EndEvent(uint32_t handle)
    void AddEvent(const char* tag, EventType, uint64_t metric, int64_t metadata1, int64_t metadata2)
    void AddEventWithData(const char* tag, EventType, const void* data)

(EventType is an int enum; the vtable's two words before the slots, offset-to-top and the type info, are
0 and NULL: C++ code must not dynamic_cast the profiler.) One object per subgraph forwards to whatever
pytflite profiler the subgraph's context has when it is called (ProfilerHooks), as TFLite's
SubgraphAwareProfiler does: metadata2 becomes the subgraph's index, EndEvent's metadata is dropped (the
Python interface has none), AddEventWithData is ignored (nor has it data events), and the destructors do
nothing (pytflite owns the object). The slots are module-level thunks, so C code holding a stale pointer
can never call freed code; a Python exception in the profiler is reported into the interpreter's error
text and never unwinds through C.
"""

from __future__ import annotations

import ctypes
import itertools
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...core.context import Context

_HANDLES = 1 << 32  # BeginEvent returns a uint32_t


class NativeProfiler:
    """The tflite::Profiler of one subgraph; `address` is what `context->profiler` gets. Its methods take
    the virtual methods' arguments."""

    def __init__(self, context: Context):
        self._context = weakref.ref(context)
        self._object = ctypes.c_void_p(_VTABLE_SLOTS)  # the whole object: its vtable pointer
        self.address = ctypes.addressof(self._object)
        self._open: dict[int, tuple[Any, Any]] = {}  # C handle -> (Python profiler, its handle)
        self._handles = itertools.count()
        _PROFILERS[self.address] = self

    def begin_event(self, tag: bytes | None, event_type: int, metadata1: int, metadata2: int) -> int:
        context = self._context()
        profiler = None if context is None else context.profiler
        if profiler is None:
            return 0
        handle = profiler.begin_event(_text(tag), event_type, metadata1, context.subgraph.index)
        key = next(self._handles) % _HANDLES
        self._open[key] = (profiler, handle)
        return key

    def end_event(self, key: int, metadata1: int = 0, metadata2: int = 0) -> None:
        if key in self._open:
            profiler, handle = self._open.pop(key)
            profiler.end_event(handle)

    def add_event(
        self, tag: bytes | None, event_type: int, metric: int, metadata1: int, metadata2: int
    ) -> None:
        context = self._context()
        profiler = None if context is None else context.profiler
        if profiler is not None:
            profiler.add_event(_text(tag), event_type, metric, metadata1, context.subgraph.index)

    def report(self, error: BaseException) -> None:
        context = self._context()
        if context is not None:
            context.report_error(f"profiler: {type(error).__name__}: {error}")


def _text(tag: bytes | None) -> str:
    return (tag or b"").decode("utf-8", "replace")


# --- the vtable ------------------------------------------------------------------------------------------

_PROFILERS: weakref.WeakValueDictionary[int, NativeProfiler] = weakref.WeakValueDictionary()


def _forward(method: str, default: Any = None) -> Any:
    """A slot calling `method` on the NativeProfiler at `this` (`default` after an exception)."""

    def slot(this: int, *args: Any) -> Any:
        profiler = _PROFILERS.get(this)
        if profiler is None:
            return default
        try:
            return getattr(profiler, method)(*args)
        except BaseException as error:  # nothing may unwind through C
            profiler.report(error)
            return default

    return slot


_vp, _tag, _type, _i64, _u32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int64, ctypes.c_uint32
_nothing = ctypes.CFUNCTYPE(None, _vp)(lambda this: None)  # the destructors
_SLOTS = (
    _nothing,  # complete object destructor
    _nothing,  # deleting destructor
    ctypes.CFUNCTYPE(_u32, _vp, _tag, _type, _i64, _i64)(_forward("begin_event", 0)),
    ctypes.CFUNCTYPE(None, _vp, _u32, _i64, _i64)(_forward("end_event")),
    ctypes.CFUNCTYPE(None, _vp, _u32)(_forward("end_event")),
    ctypes.CFUNCTYPE(None, _vp, _tag, _type, ctypes.c_uint64, _i64, _i64)(_forward("add_event")),
    ctypes.CFUNCTYPE(None, _vp, _tag, _type, _vp)(lambda this, tag, event_type, data: None),
)
_VTABLE = (ctypes.c_void_p * (2 + len(_SLOTS)))(
    0, None, *(ctypes.cast(s, ctypes.c_void_p).value for s in _SLOTS)
)
_VTABLE_SLOTS = ctypes.addressof(_VTABLE) + 2 * ctypes.sizeof(ctypes.c_void_p)  # where the object points

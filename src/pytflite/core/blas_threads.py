"""BLAS thread count for an interpreter's invokes (what `num_threads` means for NumPy kernels).

NumPy's matrix products run on the BLAS library's own thread pool. When an interpreter is given
`num_threads`, each invoke sets that pool's size and restores it afterwards, through threadpoolctl (a
dependency of pytflite, imported when the first interpreter with `num_threads` is made, so `import
pytflite` stays light), or through OpenBLAS's own functions where threadpoolctl lets the invoking thread
size it (_Pool). Where threadpoolctl sees no BLAS library (Pyodide's NumPy has no threaded BLAS,
a NumPy built without BLAS), there is no pool to size and the setting changes nothing. The pool is
process-wide, so interpreters invoked concurrently with different `num_threads` see each other's
setting; one interpreter per thread with equal `num_threads` is fine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class BlasThreads:
    """Context manager: inside it, the BLAS pool has `count` threads."""

    def __init__(self, count: int):
        self.count = count
        self._pools = tuple(_Pool(library) for library in _blas_libraries())
        self._changed: list[tuple] = []  # (how to size it, its count before) for each pool __enter__ set

    def __enter__(self) -> None:
        count, thread = self.count, threading.current_thread()
        changed = []
        for pool in self._pools:
            previous = pool.get()
            if previous != count:  # (a setting costs more than a reading, and is often unneeded)
                size = pool.sizer(thread)
                size(count)
                changed.append((size, previous))
        self._changed = changed

    def __exit__(self, *exc_info) -> None:
        for size, previous in self._changed:
            size(previous)


class _Pool:
    """One BLAS library's pool, read and sized through its threadpoolctl controller, which lets only
    one thread size an OpenBLAS on its own threads (two threads resizing it at once can break it). Where
    threadpoolctl's record shows that the invoking thread is that one, the pool is read and sized by
    OpenBLAS's own two functions instead: a fifth of the cost, which small models feel at every invoke
    (the record is threadpoolctl's internal state: without it, every call goes through threadpoolctl)."""

    def __init__(self, controller):
        self.controller = controller
        self._get, self._set = _openblas_functions(controller)
        self._sizer = getattr(type(controller), "_SHARED_STATE", None)  # .controlling_thread

    def get(self) -> int:
        return self._get() if self._get is not None else self.controller.get_num_threads()

    def sizer(self, thread: threading.Thread) -> Callable[[int], object]:
        """The function that sizes the pool from `thread`."""
        if self._set is not None and getattr(self._sizer, "controlling_thread", None) is thread:
            return self._set
        return self.controller.set_num_threads


# OpenBLAS's names for its functions, as builds prefix and suffix them (threadpoolctl tries the same)
_OPENBLAS_AFFIXES = [(prefix, suffix) for prefix in ("", "scipy_") for suffix in ("", "64_", "_64")]


def _openblas_functions(controller) -> tuple:
    """OpenBLAS's own (get, set) thread-count functions for a controller of an OpenBLAS on its own
    threads (with OpenMP threads, threadpoolctl sizes the calling thread's OpenMP pool instead); else
    (None, None)."""
    library = getattr(controller, "dynlib", None)
    if controller.internal_api != "openblas" or getattr(controller, "threading_layer", None) == "openmp":
        return None, None
    for prefix, suffix in _OPENBLAS_AFFIXES:
        try:  # (indexing makes functions of our own, not the library's cached ones)
            functions = tuple(
                library[f"{prefix}openblas_{name}_num_threads{suffix}"] for name in ("get", "set")
            )
        except (AttributeError, TypeError):
            continue
        return functions
    return None, None


_LIBRARIES: list | None = None


def _blas_libraries() -> list:
    global _LIBRARIES
    if _LIBRARIES is None:
        from threadpoolctl import ThreadpoolController

        _LIBRARIES = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    return _LIBRARIES

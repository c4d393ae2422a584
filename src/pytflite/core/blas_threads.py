"""BLAS thread count for an interpreter's invokes (what `num_threads` means for NumPy kernels).

NumPy's matrix products run on the BLAS library's own thread pool. When an interpreter is given
`num_threads`, each invoke sets that pool's size and restores it afterwards, through threadpoolctl (a
dependency of pytflite, imported when the first interpreter with `num_threads` is made, so `import
pytflite` stays light). Where threadpoolctl sees no BLAS library (Pyodide's NumPy has no threaded BLAS,
a NumPy built without BLAS), there is no pool to size and the setting changes nothing. The pool is
process-wide, so interpreters invoked concurrently with different `num_threads` see each other's
setting; one interpreter per thread with equal `num_threads` is fine.
"""

from __future__ import annotations


class BlasThreads:
    """Context manager: inside it, the BLAS pool has `count` threads."""

    def __init__(self, count: int):
        self.count = count
        self._libraries = tuple(_blas_libraries())
        self._changed: list[tuple] = []  # (library, its count before) for each one __enter__ set

    def __enter__(self) -> None:
        count = self.count
        changed = []
        for library in self._libraries:
            previous = library.get_num_threads()
            if previous != count:  # (a setting costs more than a reading, and is often unneeded)
                library.set_num_threads(count)
                changed.append((library, previous))
        self._changed = changed

    def __exit__(self, *exc_info) -> None:
        for library, previous in self._changed:
            library.set_num_threads(previous)


_LIBRARIES: list | None = None


def _blas_libraries() -> list:
    global _LIBRARIES
    if _LIBRARIES is None:
        from threadpoolctl import ThreadpoolController

        _LIBRARIES = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
    return _LIBRARIES

"""NumPy's BLAS runs on one thread during every invoke, so float results do not depend on threads.

A multithreaded BLAS splits a product between its threads, and the split decides which of its kernels
(a full register panel or an edge one, a dot product or partial sums added afterwards) computes each
output: OpenBLAS's results change in the last bits with the pool's size (a 64x513x64 SGEMM, a 1x1280x1000
SGEMV), and a whole network's outputs by up to 2.6e-4 of their magnitude. LiteRT's do not change with its
thread count. So while any interpreter invokes, every BLAS pool NumPy uses has one thread, whatever
`num_threads`, OPENBLAS_NUM_THREADS or the invoking thread; the pool's own size comes back when the last
concurrent invoke ends. (On 2-core machines BLAS's second thread sped the corpus models up by 0-10%;
`num_threads` remains what TFLite's context recommends to kernels and delegates.)

A process-wide pool (OpenBLAS on its own threads, MKL, BLIS) is sized by the first of concurrent invokes
and restored by the last (`_Pinning`, under a lock), through OpenBLAS's own functions where it has them:
threadpoolctl lets only the first thread that sized an OpenBLAS size it again, which would leave the
pool of another thread's invoke unchanged. A per-thread pool (OpenBLAS on OpenMP) is sized in the invoking
thread at each invoke. threadpoolctl finds the libraries, at the first invoke; where it sees none
(Pyodide's NumPy, a NumPy without BLAS) or cannot load (a Python without ctypes) there is nothing to
pin. What still depends on the BLAS build and the CPU is which kernel a product's shape gets: results
stay within float tolerance of LiteRT, not bit-identical across machines or batch shapes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class _Pool:
    """One BLAS library's pool: its size read and set through OpenBLAS's own two functions where the
    library is an OpenBLAS on its own threads, else through its threadpoolctl controller."""

    def __init__(self, controller):
        self.per_thread = getattr(controller, "threading_layer", None) == "openmp"
        functions = _openblas_functions(controller)
        self.get: Callable[[], int] = functions[0] if functions else controller.get_num_threads
        self.set: Callable[[int], object] = functions[1] if functions else controller.set_num_threads


class _Pinning:
    """Context manager: inside it, every BLAS pool has one thread. Re-entrant across threads: a
    process-wide pool is set by the first entry and restored by the last exit. The pools are found at
    the first entry (threadpoolctl: about 1 ms), or given. (Its two methods run at every invoke: they are
    written for a microsecond.)"""

    def __init__(self, pools: list[_Pool] | None = None):
        self._shared: list[tuple[Callable, Callable]] | None = None  # (get, set) of each pool
        self._own: list[tuple[Callable, Callable]] = []
        self._lock = threading.Lock()
        if pools is not None:
            self._use(pools)
        self._inside = 0
        self._restore: list[tuple[Callable, int]] = []  # (setter, size before) of the shared pools
        self._local = threading.local()  # .inside, .restore: the same for this thread's own pools

    def _use(self, pools: list[_Pool]) -> None:
        self._own = [(pool.get, pool.set) for pool in pools if pool.per_thread]
        self._shared = [(pool.get, pool.set) for pool in pools if not pool.per_thread]

    def _find_pools(self) -> list[tuple[Callable, Callable]]:
        with self._lock:
            if self._shared is None:
                try:
                    from threadpoolctl import ThreadpoolController
                except ImportError:  # threadpoolctl needs ctypes: a Python built without it sizes nothing
                    controllers = []
                else:
                    controllers = ThreadpoolController().lib_controllers
                self._use([_Pool(c) for c in controllers if c.user_api == "blas"])
            return self._shared

    def __enter__(self) -> None:
        shared = self._shared
        if shared is None:
            shared = self._find_pools()
        if shared:
            with self._lock:
                if not self._inside:
                    self._restore = _pin(self._shared)
                self._inside += 1
        if self._own:
            local = self._local
            inside = getattr(local, "inside", 0)
            if not inside:
                local.restore = _pin(self._own)
            local.inside = inside + 1

    def __exit__(self, *exc_info) -> None:
        if self._own:
            local = self._local
            local.inside -= 1
            if not local.inside:
                for set_size, size in local.restore:
                    set_size(size)
        if self._shared:
            with self._lock:
                self._inside -= 1
                if not self._inside:
                    for set_size, size in self._restore:
                        set_size(size)


def _pin(pools: list[tuple[Callable, Callable]]) -> list[tuple[Callable, int]]:
    """Sets each pool to one thread; what restores them (a setting costs more than a reading)."""
    restore = []
    for get_size, set_size in pools:
        size = get_size()
        if size != 1:
            set_size(1)
            restore.append((set_size, size))
    return restore


# OpenBLAS's names for its functions, as builds prefix and suffix them (threadpoolctl tries the same)
_OPENBLAS_AFFIXES = [(prefix, suffix) for prefix in ("", "scipy_") for suffix in ("", "64_", "_64")]


def _openblas_functions(controller) -> tuple | None:
    """OpenBLAS's own (get, set) thread-count functions for a controller of an OpenBLAS on its own
    threads; else None."""
    library = getattr(controller, "dynlib", None)
    if controller.internal_api != "openblas" or getattr(controller, "threading_layer", None) == "openmp":
        return None
    for prefix, suffix in _OPENBLAS_AFFIXES:
        try:  # (indexing makes functions of our own, not the library's cached ones)
            return tuple(library[f"{prefix}openblas_{name}_num_threads{suffix}"] for name in ("get", "set"))
        except (AttributeError, TypeError):
            continue
    return None


ONE_BLAS_THREAD = _Pinning()

"""Optional compiled kernels: loops that NumPy cannot run in a few calls, compiled by numba.

Some kernels spend their time in many tiny NumPy calls that depend on each other (an LSTM's time steps:
nine calls a step on rows of a few dozen values), so Python's per-call cost, not arithmetic, sets their
speed. Where numba is installed (the `jit` extra), such a kernel may hand that loop to a function of a
`*_compiled.py` module, which imports numba at its top and is imported only through `compiled()`, on the
kernel's first prepare: `import pytflite` never imports numba. Every kernel keeps its NumPy path, which
runs where numba is missing or cannot load (Pyodide, armv7, free-threaded Python, a numba built for
another NumPy) or when `PYTFLITE_JIT=0` is set; the tests run both. numba caches what it compiles on disk
(its cache=True), so only a machine's first use pays for the compilation.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable

logger = logging.getLogger("pytflite")

ENV_VAR = "PYTFLITE_JIT"

# how every compiled kernel is compiled: cached on disk, without the GIL, Python's error checks off (a
# kernel's caller has checked its operands), never fast-math (results must be the NumPy path's)
OPTIONS = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False}

_lock = threading.Lock()
_forced: bool | None = None  # set_enabled's choice; None: the environment decides
_modules: dict[str, object | None] = {}  # a compiled module by name, None where it could not load
_UNSEEN = object()


def _wanted() -> bool:
    if _forced is not None:
        return _forced
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def set_enabled(enabled: bool | None) -> None:
    """Turn the compiled kernels on or off for kernels prepared from now on (None: back to what
    PYTFLITE_JIT says, on unless it is 0)."""
    global _forced
    _forced = enabled


def read_only(values):
    """`values` as a read-only array (itself when it is one, else a view): the compiled kernels' numba
    signatures take their constant operands (weights, scales, bias) read-only, as the model's shared
    constants are, and numba matches an array to a signature by its writability too."""
    if not values.flags.writeable:
        return values
    view = values.view()
    view.flags.writeable = False
    return view


def compiled_kernels_run() -> bool:
    """Whether kernels prepared now would take their compiled forms (on, and numba loads)."""
    return _wanted() and available()


def available() -> bool:
    """Whether numba can be imported here (imports it: call only where a compiled kernel is wanted)."""
    return _load("numba") is not None


def _load(name: str):
    loaded = _modules.get(name, _UNSEEN)  # (without the lock once loaded: kernels look up per invoke)
    if loaded is not _UNSEEN:
        return loaded
    with _lock:
        if name not in _modules:
            try:
                _modules[name] = importlib.import_module(name)
            except Exception as error:  # ImportError, or a numba that rejects this NumPy or Python
                # numba missing is normal; one of pytflite's compiled modules failing to compile is not
                report = logger.info if name == "numba" else logger.warning
                report("pytflite: compiled kernels unavailable (%s: %s); NumPy kernels run", name, error)
                _modules[name] = None
        return _modules[name]


def compiled(module: str, function: str) -> Callable | None:
    """The compiled `function` of pytflite's module `module` (a `*_compiled` module under pytflite.ops),
    or None when compiled kernels are off or numba cannot load: the caller then runs its NumPy path."""
    if not compiled_kernels_run():
        return None
    loaded = _load(f"{__package__}.{module}")
    return None if loaded is None else getattr(loaded, function)

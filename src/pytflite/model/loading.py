"""Loading a model once for all the interpreters made from it.

An Interpreter's model is a file path or a bytes object. The file is memory-mapped (read, where the
platform has no mmap) and the bytes are used as they are: constant tensors are read-only views on them
(model/reader.py), so constructing an interpreter reads only the model's structure, never a copy of its
weights. Interpreters made from the
same file (same device, inode, size and modification time) or the same bytes object, with the same
limits, get the same ModelDescription: its mapping, its parsed structure and the constants kernels
derive from the weights (core/derived.py) are in memory once, however many interpreters use them. The
description lives as long as an interpreter holds it; this registry only finds it (weak references).

LiteRT shares nothing between interpreters constructed separately; the difference is invisible, since
everything shared is read-only.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from collections.abc import Callable, Hashable

from ..core.limits import Limits
from ..errors import ModelError
from .reader import ModelDescription, read_model

_lock = threading.Lock()
_loaded: weakref.WeakValueDictionary[Hashable, ModelDescription] = weakref.WeakValueDictionary()


def load_model_file(path: str | os.PathLike, limits: Limits) -> ModelDescription:
    """The model in the file at `path`, memory-mapped (read into memory where it cannot be mapped);
    shared with the interpreters already using it."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            status = os.fstat(f.fileno())
            if status.st_size == 0:
                raise ModelError("mmap of size 0 requested.The model allocation is null/empty")
            key = ("file", status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, limits)
            return _shared(key, lambda: read_model(_map_or_read(f), limits))
    except OSError as e:
        raise ModelError(
            f"Could not open '{path}'.The model allocation is null/empty ({e.strerror or e})"
        ) from None


def _map_or_read(f) -> mmap.mmap | bytes:
    """The open file's bytes, memory-mapped; read into memory where the platform cannot map files
    (WASI has no mmap: `mmap.mmap` raises OSError there), as LiteRT falls back from its MMAPAllocation
    to a FileCopyAllocation."""
    try:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as mapping_error:
        try:
            return f.read()
        except OSError as reading_error:
            raise OSError(f"mmap: {mapping_error}; read: {reading_error}") from None


def load_model_content(content: bytes, limits: Limits) -> ModelDescription:
    """The model in `content` (immutable bytes, viewed, not copied); shared with the interpreters
    already using the same bytes object. (The description holds `content`, so no other object can
    have its id while the registry finds the description.)"""
    return _shared(("bytes", id(content), limits), lambda: read_model(content, limits))


def _shared(key: Hashable, read: Callable[[], ModelDescription]) -> ModelDescription:
    """The registered model for `key`, or the one `read()` makes, registered."""
    with _lock:
        model = _loaded.get(key)
    if model is not None:
        return model
    model = read()
    with _lock:  # another thread may have read the same model meanwhile: use the one registered first
        return _loaded.setdefault(key, model)

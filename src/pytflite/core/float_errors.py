"""NumPy's float errors ignored while a subgraph invokes, as np.errstate(all="ignore") ignores them
(overflow, division by zero and NaN are results in TFLite, not warnings), at a sixth of its cost:
np.errstate builds NumPy's error state anew at every entry (about 1 us, which small models feel at every
invoke), while NumPy 2 keeps that state in a context variable, which ignore() sets to a state made once
(NumPy's internals: where they are not there, as in NumPy 1, np.errstate itself is entered).

    token = ignore()
    try:
        ...
    finally:
        restore(token)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

try:
    from numpy._core._ufunc_config import _extobj_contextvar
    from numpy._core.umath import _make_extobj

    _IGNORED = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):
    _extobj_contextvar = None

ignore: Callable[[], Any]
restore: Callable[[Any], None]

if _extobj_contextvar is not None:

    def ignore() -> Any:
        """Ignore float errors (in this thread and context) until restore(the token returned)."""
        return _extobj_contextvar.set(_IGNORED)

    restore = _extobj_contextvar.reset

else:

    def ignore() -> Any:
        """Ignore float errors until restore(the state returned)."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(state: Any) -> None:
        state.__exit__(None, None, None)

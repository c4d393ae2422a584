"""Program: a kernel's invoke as a flat list of NumPy calls bound to views made once per binding.

On a small layer the views an invoke makes (reshapes, strided windows, dtype views) and the Python
between its NumPy calls cost as much as the calls themselves: a 1x1 int8 convolution of 6x6x96 makes
about a dozen views around eight calls. Tensors' data arrays stay the same objects from one allocation to
the next, so a kernel builds its calls (functools.partial objects over the views) on the first invoke,
keeps them with the arrays they were built from, and rebuilds them only when one of those arrays is no
longer the tensor's data (a new allocation, a resize, a runtime weight recomputed).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

Call = Callable[[], object]


class Program:
    """The calls `build(*operands)` returns for the current operands (the op data and the arrays the
    invoke reads and writes), run in order."""

    __slots__ = ("_build", "_operands", "_calls")

    def __init__(self, build: Callable[..., Sequence[Call]]):
        self._build = build
        self._operands: tuple = ()
        self._calls: Sequence[Call] = ()

    def run(self, *operands) -> None:
        """Run the calls for these operands (rebuilt when any is not the object they were built from)."""
        if len(operands) != len(self._operands) or any(map(operator.is_not, operands, self._operands)):
            self._calls = self._build(*operands)
            self._operands = operands
        for call in self._calls:
            call()

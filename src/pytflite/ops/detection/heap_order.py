"""The order libstdc++'s heap algorithms give equal keys, which LiteRT's NMS kernels let through.

NON_MAX_SUPPRESSION_V4/V5 pop candidates from a std::priority_queue and TFLite_Detection_PostProcess's
fast NMS ranks each anchor's classes with std::partial_sort: both are heaps, so candidates with equal
scores (common with quantized scores) come out in an order no sort by key reproduces. The functions
here replay libstdc++'s push_heap / pop_heap / make_heap / sort_heap step for step (the LiteRT wheels
are built against libstdc++), on Python lists: they are inherently sequential, and the heaps they run
on hold at most a few thousand entries.

`less(a, b)` is the container's comparator: the heap keeps a largest element (by `less`) at index 0.
While the keys in a queue are all different any heap pops the same order, and DistinctKeyQueue (on
Python's heapq, in C) stands in for the replay until an equal key arrives.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

Less = Callable[[Any, Any], bool]


def _push_heap(heap: list, hole: int, top: int, value: Any, less: Less) -> None:
    """Move `value` up from `hole` towards `top` past every parent it beats (std::__push_heap)."""
    parent = (hole - 1) // 2
    while hole > top and less(heap[parent], value):
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value


def _adjust_heap(heap: list, hole: int, length: int, value: Any, less: Less) -> None:
    """Sift the hole at `hole` down to a leaf along the larger children, then push `value` up from
    there (std::__adjust_heap: Floyd's variant, which is what orders equal keys)."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(heap[child], heap[child - 1]):
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _push_heap(heap, hole, top, value, less)


class PriorityQueue:
    """std::priority_queue<T, std::deque<T>, Less>: push, pop (returns the top) and len."""

    def __init__(self, less: Less):
        self._heap: list = []
        self._less = less

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, value: Any) -> None:
        self._heap.append(value)
        _push_heap(self._heap, len(self._heap) - 1, 0, value, self._less)

    def pop(self) -> Any:
        heap = self._heap
        top = heap[0]
        last = heap.pop()
        if heap:  # pop_heap moved the top to the back, sifted the old back element in from the root
            _adjust_heap(heap, 0, len(heap), last, self._less)
        return top


class EqualKeys(Exception):
    """A DistinctKeyQueue was given a key equal to one it holds: from here on the heap's order counts."""


class DistinctKeyQueue:
    """A priority queue of (key, ...) tuples, largest key first, for keys that are never equal while
    queued (push raises EqualKeys otherwise): then its pops are PriorityQueue's, only faster."""

    def __init__(self):
        self._heap: list = []
        self._keys: set = set()

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, value: tuple) -> None:
        if value[0] in self._keys:
            raise EqualKeys
        self._keys.add(value[0])
        heapq.heappush(self._heap, (-value[0], value))

    def pop(self) -> tuple:
        value = heapq.heappop(self._heap)[1]
        self._keys.remove(value[0])
        return value


def partial_sort_descending(values: Sequence[float], count: int) -> list[int]:
    """The first `count` of the indices 0..n-1 after std::partial_sort(iota, count, values[i] >
    values[j]): the `count` largest values' indices, largest first, equal values in libstdc++'s order."""
    order = list(range(len(values)))

    def greater(i: int, j: int) -> bool:
        return values[i] > values[j]

    for parent in range((count - 2) // 2, -1, -1):  # make_heap of the first `count`
        _adjust_heap(order, parent, count, order[parent], greater)
    for i in range(count, len(order)):  # heap_select: a later index beating the heap's top replaces it
        if greater(order[i], order[0]):
            value = order[i]
            order[i] = order[0]
            _adjust_heap(order, 0, count, value, greater)
    for last in range(count - 1, 0, -1):  # sort_heap
        value = order[last]
        order[last] = order[0]
        _adjust_heap(order, 0, last, value, greater)
    return order[:count]

"""Arena planning: give every planned tensor an offset in one shared buffer (TFLite's ArenaPlanner).

A tensor lives from the plan step that first writes it (`first`) to the step that last reads it (`last`).
Tensors whose lifetimes do not overlap may share bytes, so a whole graph runs in a buffer much smaller
than the sum of its intermediates. Placement follows TFLite: tensors alive for the whole run first, then
by size (largest first), each in the best-fitting gap among the allocations it overlaps. TFLite aligns
every tensor to 64 bytes (a cache line); here a tensor is aligned to the largest power of two dividing its
size, at most 64. That is at least its element size (all NumPy needs), still 64 for every tensor whose
size is a multiple of 64 (large activations in practice), and lets tensors of equal sizes tile the arena
without gaps: with 64 bytes for all, a small graph's 40- or 96-byte tensors would take 64 or 128 each.
Variables and persistent temporaries go to a second arena that is never reused.

`Tensor.data` of an arena tensor is a NumPy view into the buffer. When the buffer grows it moves (its
contents are copied), and every view is re-bound; kernels therefore read `tensor.data` at each call.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InterpreterError
from .node import OPTIONAL_TENSOR, Node
from .tensor import Tensor
from .types import AllocationType, TensorType, storage_dtype, stored_shape

ALIGNMENT = 64  # kDefaultTensorAlignment: the buffer's, and the most any tensor gets
UNASSIGNED = 2**31 - 1  # kNodeNotAssigned: "never" for first, "until the end" for last
_ARENA_TYPES = frozenset({AllocationType.ARENA_RW, AllocationType.ARENA_RW_PERSISTENT})


def alignment_for(size: int) -> int:
    """A tensor's alignment: the largest power of two dividing its size, at most 64 bytes."""
    return ALIGNMENT if size == 0 else min(ALIGNMENT, size & -size)


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


@dataclass(order=True)
class _Allocation:
    offset: int
    size: int
    tensor: int
    first: int
    last: int


class _Arena:
    """One growable buffer and the allocations currently placed in it (SimpleMemoryArena)."""

    def __init__(self) -> None:
        self.active: list[_Allocation] = []  # sorted by offset
        self.high_water = 0
        self._storage = np.empty(0, np.uint8)
        self.buffer = self._storage

    def allocate(self, tensor: int, size: int, first: int, last: int) -> _Allocation:
        if size == 0:
            return _Allocation(0, 0, tensor, first, last)
        alignment = alignment_for(size)
        best_offset, best_gap, current = None, None, 0
        for alloc in self.active:
            if alloc.last < first or alloc.first > last:
                continue  # lifetimes do not overlap: the bytes may be shared
            candidate = _align(current, alignment)
            if candidate + size <= alloc.offset and (best_gap is None or alloc.offset - candidate < best_gap):
                best_offset, best_gap = candidate, alloc.offset - current
            current = max(current, alloc.offset + alloc.size)
            if best_gap == 0:
                break
        if best_offset is None:
            best_offset = _align(current, alignment)
        self.high_water = max(self.high_water, best_offset + size)
        allocation = _Allocation(best_offset, size, tensor, first, last)
        bisect.insort(self.active, allocation)
        return allocation

    def commit(self) -> bool:
        """Grow the buffer to the high-water mark, keeping its contents; True if it moved."""
        if self.high_water <= self.buffer.size:
            return False
        storage = np.zeros(self.high_water + ALIGNMENT, np.uint8)
        start = -storage.ctypes.data % ALIGNMENT
        buffer = storage[start : start + self.high_water]
        buffer[: self.buffer.size] = self.buffer
        self._storage, self.buffer = storage, buffer
        return True


class ArenaLimitError(InterpreterError):
    """The arena would grow past Limits.max_bytes (raised before it grows)."""


class ArenaPlanner:
    """Plans lifetimes over an execution plan and places ArenaRw / ArenaRwPersistent tensors."""

    def __init__(
        self, tensors: list[Tensor], preserve_all_tensors: bool = False, max_bytes: int | None = None
    ):
        self.tensors = tensors
        self.preserve_all_tensors = preserve_all_tensors
        self.max_bytes = max_bytes  # Limits.max_bytes: both arenas together, checked before they grow
        self.first: list[int] = []
        self.last: list[int] = []
        self.allocations: dict[int, _Allocation] = {}
        self.rw = _Arena()
        self.persistent = _Arena()
        # tensors by the plan position that first writes them (may hold stale entries: check `first`)
        self._by_first: dict[int, list[int]] = {}
        self._plan: Sequence[Node] = ()  # the plan's nodes, as planned

    @property
    def arena_bytes(self) -> int:
        return self.rw.high_water

    @property
    def persistent_bytes(self) -> int:
        return self.persistent.high_water

    def plan_allocations(
        self,
        plan: Sequence[Node],
        inputs: Sequence[int],
        outputs: Sequence[int],
        variables: Sequence[int],
    ) -> None:
        """Compute each tensor's lifetime [first, last] in plan positions (PlanAllocations)."""
        self._plan = plan
        count = len(self.tensors)
        self.first = [UNASSIGNED] * count
        self.last = [UNASSIGNED] * count
        self.allocations.clear()
        self.rw = _Arena()
        self.persistent = _Arena()
        readers = [0] * count
        for t in outputs:  # graph outputs are never freed
            if t != OPTIONAL_TENSOR:
                readers[t] += 1
        for t in list(variables) + [t for t in inputs if t != OPTIONAL_TENSOR]:
            readers[t] += 1
            self.first[t] = 0
        for node in plan:
            for t in node.inputs:
                if t != OPTIONAL_TENSOR:
                    readers[t] += 1
        for position, node in enumerate(plan):
            for t in node.outputs:
                if t != OPTIONAL_TENSOR and self.first[t] == UNASSIGNED:
                    self.first[t] = position
            if self.preserve_all_tensors:
                continue
            for t in node.inputs:
                if t == OPTIONAL_TENSOR:
                    continue
                readers[t] -= 1
                if readers[t] == 0 and self.first[t] != UNASSIGNED:
                    self.last[t] = position
        self._by_first = {}
        for t, position in enumerate(self.first):
            if position != UNASSIGNED:
                self._by_first.setdefault(position, []).append(t)

    def _first_written_in(self, first: int, last: int) -> list[int]:
        """The tensors first written at plan positions [first, last], in index order."""
        by_first, firsts = self._by_first, self.first
        if len(by_first) <= last - first:
            found = [t for p, ts in by_first.items() if first <= p <= last for t in ts if firsts[t] == p]
        else:
            found = []
            for p in range(first, last + 1):
                ts = by_first.get(p)
                if ts:
                    found.extend(t for t in ts if firsts[t] == p)
        found.sort()
        return found

    def reset_allocations(self) -> None:
        """Forget all rw placements (the full re-plan of AllocateTensors)."""
        for t in list(self.allocations):
            if self.tensors[t].allocation_type == AllocationType.ARENA_RW:
                del self.allocations[t]
                self.tensors[t].data = None
        self.rw.active.clear()

    def execute_allocations(self, first: int, last: int) -> bool:
        """Place the tensors first written in plan positions [first, last] and bind their data; True if
        a buffer moved (every arena tensor has new data then, so arrays held since are stale)."""
        plan = self._plan
        count = len(self.tensors)
        if len(self.first) < count:  # kernels may have added temporaries in prepare
            self.first += [UNASSIGNED] * (count - len(self.first))
            self.last += [UNASSIGNED] * (count - len(self.last))
        for position in range(first, min(last + 1, len(plan))):
            for t in plan[position].temporaries:
                if self.first[t] != position:
                    self.first[t] = position
                    self._by_first.setdefault(position, []).append(t)
                if not self.preserve_all_tensors:
                    self.last[t] = position

        in_range = self._first_written_in(first, last)
        to_place = []
        for t in in_range:
            tensor = self.tensors[t]
            current = self.allocations.get(t)
            if (
                tensor.allocation_type == AllocationType.ARENA_RW
                and (current is None or current.size < tensor.bytes)
            ) or (tensor.allocation_type == AllocationType.ARENA_RW_PERSISTENT and current is None):
                to_place.append(t)
        if to_place:
            # Avoid every kept rw placement whose lifetime reaches this range (also those of later tensors
            # kept when a dynamic resize re-prepares the plan's tail); a tensor placed again leaves its old, too small place.
            replaced = set(to_place)
            tensors = self.tensors
            self.rw.active = sorted(
                a
                for t, a in self.allocations.items()
                if a.size
                and a.last >= first
                and t not in replaced
                and tensors[t].allocation_type == AllocationType.ARENA_RW
            )
            for t in sorted(to_place, key=self._placement_order):
                tensor = tensors[t]
                if tensor.allocation_type == AllocationType.ARENA_RW:
                    self.allocations[t] = self.rw.allocate(t, tensor.bytes, self.first[t], self.last[t])
                else:
                    self.allocations[t] = self.persistent.allocate(t, tensor.bytes, self.first[t], UNASSIGNED)
        needed = self.rw.high_water + self.persistent.high_water
        if self.max_bytes is not None and needed > self.max_bytes:
            raise ArenaLimitError(
                f"allocate_tensors: the arena needs {needed} bytes, over the limit of {self.max_bytes} bytes "
                "(Limits.max_bytes)"
            )
        moved = self.rw.commit() | self.persistent.commit()
        # A full allocation (or a moved buffer) binds every placement that needs it; a lazy one during
        # invoke (after a dynamic resize) only the tensors of its range that were placed or resized.
        full = moved or first == 0
        for t in list(self.allocations) if full else in_range:
            allocation = self.allocations.get(t)
            if allocation is None:
                continue
            tensor = self.tensors[t]
            if tensor.allocation_type not in (AllocationType.ARENA_RW, AllocationType.ARENA_RW_PERSISTENT):
                del self.allocations[t]  # a kernel made it dynamic: it has memory of its own now
            elif full:
                if moved or tensor.data is None or first <= self.first[t] <= last:
                    self._bind(tensor, allocation)
            elif tensor.data is None or t in to_place:
                self._bind(tensor, allocation)
        return moved

    def lower_bound(self, plan_length: int) -> int:
        """The most bytes of rw tensors alive at any one plan step: no placement can use less."""
        live = np.zeros(max(plan_length, 1) + 1, np.int64)
        for t, allocation in self.allocations.items():
            if self.tensors[t].allocation_type == AllocationType.ARENA_RW and allocation.size:
                last = plan_length - 1 if allocation.last == UNASSIGNED else allocation.last
                live[allocation.first] += allocation.size
                live[last + 1] -= allocation.size
        return int(np.cumsum(live).max(initial=0))

    def _placement_order(self, t: int) -> tuple:
        # whole-run tensors first (by index), then largest first, then earliest written first
        whole_run = self.first[t] == 0 and self.last[t] == UNASSIGNED
        return (0, t, 0) if whole_run else (1, -self.tensors[t].bytes, self.first[t])

    def _bind(self, tensor: Tensor, allocation: _Allocation) -> None:
        arena = self.rw if tensor.allocation_type == AllocationType.ARENA_RW else self.persistent
        raw = arena.buffer[allocation.offset : allocation.offset + tensor.bytes]
        tensor.data = raw.view(storage_dtype(tensor.type)).reshape(stored_shape(tensor.type, tensor.shape))


@dataclass(frozen=True)
class MemoryReport:
    """Bytes by kind of memory. arena_lower_bound_bytes is the most live rw-tensor bytes at any plan
    step; the arena can be no smaller, and TFLite-style placement keeps it close."""

    arena_bytes: int
    arena_lower_bound_bytes: int
    persistent_arena_bytes: int
    constant_bytes: int
    dynamic_bytes: int


def _held_bytes(tensor: Tensor) -> int:
    """The bytes a tensor's data takes as TFLite keeps it: a string tensor as its buffer (a count, an
    offset per string and one past the last, then the strings), so that the figure is the same on every
    platform; a resource or variant tensor holds handles, not bytes."""
    data = tensor.data
    if data.dtype != object:
        return data.nbytes
    if tensor.type != TensorType.STRING:
        return 0
    return 4 * (data.size + 2) + sum(
        len(value) for value in data.reshape(-1) if isinstance(value, bytes | str)
    )


def memory_report(tensors: Sequence[Tensor], planner: ArenaPlanner | None, plan_length: int) -> MemoryReport:
    """Where a subgraph's bytes are: its arenas (and their lower bound), constants, dynamic tensors."""
    by_type: dict[AllocationType, int] = {}
    for tensor in tensors:
        if tensor.data is not None and tensor.allocation_type not in _ARENA_TYPES:
            by_type[tensor.allocation_type] = by_type.get(tensor.allocation_type, 0) + _held_bytes(tensor)
    return MemoryReport(
        arena_bytes=0 if planner is None else planner.arena_bytes,
        arena_lower_bound_bytes=0 if planner is None else planner.lower_bound(plan_length),
        persistent_arena_bytes=0 if planner is None else planner.persistent_bytes,
        constant_bytes=by_type.get(AllocationType.MMAP_RO, 0),
        dynamic_bytes=by_type.get(AllocationType.DYNAMIC, 0) + by_type.get(AllocationType.PERSISTENT_RO, 0),
    )

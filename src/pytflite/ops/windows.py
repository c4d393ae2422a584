"""Sliding windows, shared by the convolutions and pooling: TFLite's output sizes and padding, per-tap
plans (which outputs a kernel tap reaches and which inputs they read), and the staging copy that lays an
input into a zero- (or identity-) bordered scratch array, so that every window is a strided view of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import KernelError, ensure
from ..model.options import Padding

_ALL = slice(None)


# --- geometry -------------------------------------------------------------------------------------------


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (rounds toward zero)."""
    return -((-a) // b) if a < 0 else a // b


def output_size(
    padding: Padding, size: int, filter_size: int, stride: int, dilation: int, checked: bool = False
) -> int:
    """Output extent of one spatial dimension (TFLite's ComputeOutSize, with C++'s truncating division).

    A negative size is an error in the checked variant (the convolutions) and 0 in the unchecked one
    (pooling), as LiteRT behaves; a VALID window larger than the input may still give 0.
    """
    effective = (filter_size - 1) * dilation + 1
    if filter_size <= 0 or stride <= 0 or dilation <= 0 or size < 0:
        value = -1
    elif padding == Padding.SAME:
        value = (size + stride - 1) // stride
    else:
        value = _trunc_div(size + stride - effective, stride)
    if value < 0:
        if checked:
            raise KernelError(
                f"input size {size} is too small for a filter of {filter_size} (dilation {dilation}, "
                f"stride {stride}) with {Padding(padding).name} padding"
            )
        return 0
    return value


def padding_before_after(
    size: int, filter_size: int, stride: int, dilation: int, out: int
) -> tuple[int, int]:
    """Zeros before and after one spatial dimension (ComputePaddingWithOffset): the odd one goes after."""
    effective = (filter_size - 1) * dilation + 1
    total = max((out - 1) * stride + effective - size, 0)
    return total // 2, total - total // 2


@dataclass(frozen=True)
class Window:
    """A 2-D sliding window: filter size, strides, dilation and the zero padding it needs."""

    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[tuple[int, int], tuple[int, int]]
    out: tuple[int, int]


def plan_window(options, input_hw, kernel_hw, dilation=(1, 1), checked: bool = False) -> Window:
    """The window of a 2-D op whose options carry padding, stride_h and stride_w."""
    strides = (options.stride_h, options.stride_w)
    ensure(strides[0] > 0 and strides[1] > 0, f"strides must be positive, got {list(strides)}")
    ensure(dilation[0] > 0 and dilation[1] > 0, f"dilation must be positive, got {list(dilation)}")
    out = tuple(
        output_size(options.padding, input_hw[i], kernel_hw[i], strides[i], dilation[i], checked)
        for i in range(2)
    )
    pads = tuple(
        padding_before_after(input_hw[i], kernel_hw[i], strides[i], dilation[i], out[i]) for i in range(2)
    )
    return Window(tuple(kernel_hw), strides, tuple(dilation), pads, out)


@dataclass(frozen=True)
class Tap:
    """One kernel position: the output positions it reaches and the input positions they read, as
    per-spatial-dimension slices (the source one strided); `empty` when it reaches none."""

    index: tuple[int, ...]
    out: tuple[slice, ...]
    source: tuple[slice, ...]
    empty: bool


def tap_plan(
    in_sizes: Sequence[int],
    out_sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilation: Sequence[int],
    pads: Sequence[int],
) -> list[Tap]:
    """Every tap of a window over `in_sizes`: output o of tap k reads input o*stride + k*dilation - pad."""
    taps = []
    for index in itertools.product(*(range(k) for k in kernel)):
        ranges, sources = [], []
        for size, out, k, s, d, p in zip(in_sizes, out_sizes, index, strides, dilation, pads):
            offset = k * d - p  # the input position output 0 reads
            lo = max(0, -((offset) // s)) if offset < 0 else 0
            hi = min(out, (size - 1 - offset) // s + 1) if size - 1 - offset >= 0 else 0
            hi = max(hi, lo)
            ranges.append((lo, hi))
            start = lo * s + offset
            sources.append(slice(start, start + (hi - lo - 1) * s + 1, s) if hi > lo else slice(0, 0))
        empty = any(hi <= lo for lo, hi in ranges)
        taps.append(Tap(tuple(index), tuple(slice(lo, hi) for lo, hi in ranges), tuple(sources), empty))
    return taps


# --- staging: an input copied into a scratch array whose borders hold the padding -----------------------


@dataclass(frozen=True)
class Staging:
    """How a window op lays its input into a scratch array that it then reads through strided views.

    `copies` are (scratch region, input region) pairs. The scratch elements no copy writes (the padding)
    are `borders`: strided views, each (byte offset, shape, byte strides) over the whole scratch, so a
    frame of padding costs a few NumPy calls. The scratch is an arena temporary that other nodes
    overwrite, so every invoke writes both. `repeat` > 1 repeats each input channel that many times.
    """

    shape: tuple[int, ...]
    copies: tuple[tuple[tuple, tuple], ...]
    borders: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]
    repeat: int = 1

    def fill(self, x: np.ndarray, scratch: np.ndarray, pad_value) -> None:
        for call in self.calls(x, scratch, pad_value):
            call()

    def calls(self, x: np.ndarray, scratch: np.ndarray, pad_value) -> list[Callable[[], object]]:
        """fill as a list of calls on views of `x` and `scratch`, for kernels that keep them from one
        invoke to the next (Registration.calls): each copy of an input region, then each border."""
        if self.repeat == 1:
            calls: list = [partial(np.copyto, scratch[dst], x[src]) for dst, src in self.copies]
        else:
            target = scratch.reshape(*self.shape[:-1], -1, self.repeat)
            calls = [
                partial(np.copyto, target[(*dst, m)], x[src])  # one broadcast copy runs in 1-element loops
                for dst, src in self.copies
                for m in range(self.repeat)
            ]
        for offset, shape, strides in self.borders:
            calls.append(partial(np.ndarray(shape, scratch.dtype, scratch, offset, strides).fill, pad_value))
        return calls


def _progressions(items: list, key, alike=lambda first, item: True) -> list[tuple]:
    """Greedy runs of `items`, each alike its run's first, whose key (a number) grows by a constant step:
    (first item, step, count)."""
    runs: list[list] = []
    for item in items:
        last = runs[-1] if runs else None
        if last and alike(last[0], item) and (last[2] == 1 or key(item) == key(last[0]) + last[1] * last[2]):
            last[1] = key(item) - key(last[0]) if last[2] == 1 else last[1]
            last[2] += 1
        else:
            runs.append([item, 0, 1])
    return [tuple(run) for run in runs]


def make_staging(shape: Sequence[int], copies, itemsize: int, repeat: int = 1) -> Staging:
    """The staging of `copies` into a scratch of `shape` (batch first). Its borders are found from a
    mask of what the copies write: gaps of equal length at equal distances, and runs of such runs at
    equal distances, make one view each (a frame of 2-D padding is two: the rows above and below, and
    the gaps between the rows; 3-D padding adds the planes between the depth slices).

    The mask takes a byte per element of one batch of the scratch: size the scratch tensor first
    (`scratch_tensor`), so that the interpreter's Limits refuse a huge one before the mask is made."""
    inner = tuple(shape[1:])
    written = np.zeros(inner, bool)
    for dst, _ in copies:
        written[dst[1:]] = True
    edges = np.flatnonzero(np.diff(np.concatenate(([True], written.reshape(-1), [True]))))
    by_length: dict[int, list[int]] = {}
    for start, end in zip(edges[0::2].tolist(), edges[1::2].tolist()):
        by_length.setdefault(end - start, []).append(start)
    batch = int(np.prod(inner, dtype=np.int64)) * itemsize
    borders = []
    for length, starts in by_length.items():
        runs = _progressions(starts, lambda start: start)  # (start, period, count)
        for (start, period, count), step, repeats in _progressions(
            runs, lambda run: run[0], lambda first, run: run[1:] == first[1:]
        ):
            borders.append(
                (
                    start * itemsize,
                    (shape[0], repeats, count, length),
                    (batch, step * itemsize, period * itemsize, itemsize),
                )
            )
    return Staging(tuple(shape), tuple(copies), tuple(borders), repeat)


def padded_copies(shape: Sequence[int], extents: Sequence[int], pads: Sequence[int]) -> list:
    """The copy that places an [N, *spatial, C] input at offset `pads` in a scratch of spatial `extents`
    (cropped to them); none when the scratch holds padding only."""
    dst, src = [_ALL], [_ALL]
    for size, extent, pad in zip(shape[1:-1], extents, pads):
        lo, hi = pad, min(pad + size, extent)
        if hi <= lo:
            return []
        dst.append(slice(lo, hi))
        src.append(slice(0, hi - pad))
    return [((*dst, _ALL), (*src, _ALL))]


def byte_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array of `shape`."""
    strides, step = [], itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def staged_input(staging: Staging | None, x: np.ndarray, tensors, index: int, pad_value=0) -> np.ndarray:
    """What a window op reads through its strided views: with no staging the input itself (C-contiguous,
    as tensor data is; a stray view is copied), else the input staged into the temporary `index`."""
    if staging is None:
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    scratch = tensors[index].data
    staging.fill(x, scratch, pad_value)
    return scratch

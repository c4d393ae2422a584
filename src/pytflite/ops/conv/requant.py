"""Requant: exact integer accumulators to a quantized output, rounded as LiteRT's kernel rounds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ...core.derived import derived_constants_of, derived_key
from ...errors import ensure
from ..common import clip
from ..jit import compiled, read_only
from ..quant import fixed_point as fp
from ..quant.integer_gemm import neon_shifts
from .rows import apply_row, channel_row, row_calls


def _uniform(values: np.ndarray):
    """A per-channel parameter as one NumPy scalar when every channel has the same (faster to broadcast)."""
    return values[0] if values.size and np.all(values == values[0]) else values


# what the multiply-high adds before its shift by 31, for the roundings that shift twice (vq(r)dmulh)
_HIGH_HALF_ROUNDING = {"simd": 1 << 30, "neon": 0}


@dataclass
class Requant:
    """Exact integer accumulators [..., C] to the output type, rounded as the kernel LiteRT runs rounds:

    - "simd": ruy's kernels and TFLite's NEON blocks (vqrdmulh then vrshl, LiteRT's x86 build runs them
      through an SSE translation): the high-half multiply and the right shift both round halves up, and
      two such roundings compose into one: floor((acc * m + 2**30 + 2**(30 + r)) / 2**(31 + r)), the
      output zero point joining the added constant;
    - "neon": ruy's ARM kernels (vshl, vqdmulh, vrshl): "simd" but for the truncated high half, and with
      a right shift r of at least 1 (integer_gemm.neon_shifts): floor((acc * m + 2**(30 + r)) / 2**(31 + r));
    - "single": ruy's portable C++ kernel (fidelity/ruy.py): floor((acc * m + 2**(30 - e)) / 2**(31 - e))
      for TFLite's exponent e (one rounding, half up, a left shift inside the 64-bit shift), the result
      truncated to int32;
    - "scalar": TFLite's MultiplyByQuantizedMultiplier (the final shift rounds halves away from zero);
    - "wide": its int64 overload (16x8 kernels with int64 bias): the multiplier reduced to 16 bits, one
      rounding, the result truncated to int32.

    `scalar_from`: NEON's per-channel Quantize (depthwise and transposed int8/int16 outputs) rounds 8
    channels at a time and the last C % 8 channels in scalar code, from this channel on.
    `scalar_tail`: the flat uint8 Quantize rounds blocks of 16 values, its last size % 16 in scalar code.
    `wrap`: the accumulators may leave int32 (only when prepare could not bound them): wrap them.

    The accumulator is a float product (exact integers) plus per-channel integer terms (bias and
    zero-point sums). "simd" (and "neon") is computed in float64 when that is exact: acc * m * 2**left and the
    constant are integers below 2**53 (so the product, the sum and the floor are exact) and acc << left
    stays in int32 (no wrap): floor(product * m' + c') with m' = m * 2**(left - 31 - r) and
    c' = (constant + terms * m * 2**left) * 2**(-31 - r), four passes instead of seven in int64.
    The constant also holds a lift K >= -low, a multiple of 2**bits for the output's width where that
    stays exact, else -low (in the same exact integer numerator): every reachable value lies within
    int32 (the numerator is below 2**53 and the shift at least 31) and, once clamped, is non-negative,
    so its cast to int32 (int16 when the bounds allow) truncates to the floor wherever the clamp does
    not replace it; the clamp to [low + K, high + K] runs on those narrow integers, and their cast to
    the unsigned view of the output wraps K away (a K of -low is added back, wrapping).
    """

    multiplier: np.ndarray  # int64 [C]
    shift: np.ndarray  # int64 [C]: TFLite's exponent, > 0 shifts left
    zero_point: int
    low: int
    high: int
    dtype: np.dtype  # the output's
    rounding: str = "simd"
    scalar_from: int | None = None
    scalar_tail: int = 0
    wrap: bool = False
    product_bound: int | None = None  # |product| bound for the float64 path (None: never)
    _left: Any = None
    _m: Any = None
    _add: Any = None
    _total: Any = None
    _add_zero_point: bool = True
    _fast: Any = None  # (terms, FloatMap) of the float64 path for constant terms
    _rows: Any = None  # _Rows: the per-channel values tiled over rows, for the last pixels and terms
    _shared: Any = None  # (share, terms) from share_constants

    def __post_init__(self) -> None:
        self.dtype = np.dtype(self.dtype)
        m = np.asarray(self.multiplier, np.int64).reshape(-1)
        s = np.asarray(self.shift, np.int64).reshape(-1)
        self.multiplier, self.shift = m, s
        left, right = self._shifts()
        # the int64 overload and ruy's portable kernel fold a left shift into their total shift
        self._left = _uniform(left) if np.any(left) and self.rounding not in ("wide", "single") else None
        if self.rounding in _HIGH_HALF_ROUNDING:
            total = 31 + right
            add = _HIGH_HALF_ROUNDING[self.rounding] + np.where(right > 0, np.int64(1) << (30 + right), 0)
            # |acc * m| < 2**62 and add < 2**62: the zero point joins the sum when it keeps it in int64
            fold = abs(self.zero_point) * (2.0 ** float(total.max(initial=0))) < 2.0**60
            if fold:
                add = add + (np.int64(self.zero_point) << total)
            self._add_zero_point = not fold
            self._m, self._add, self._total = _uniform(m), _uniform(add), _uniform(total)
        elif self.rounding == "single":
            total = 31 - s
            ensure(bool(np.all(total >= 1)), f"requantization exponent {int(s.max())} is above 30")
            self._m, self._add, self._total = (
                _uniform(m),
                _uniform(np.int64(1) << (total - 1)),
                _uniform(total),
            )
        elif self.rounding == "wide":
            reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
            total = 15 - s
            self._m, self._add, self._total = (
                _uniform(reduced),
                _uniform(np.int64(1) << (total - 1)),
                _uniform(total),
            )

    def _shifts(self) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's (left, right) shifts for TFLite's exponents."""
        if self.rounding == "neon":
            return neon_shifts(self.shift)
        return np.maximum(self.shift, 0), np.maximum(-self.shift, 0)

    def share_constants(self, context, node, terms) -> None:
        """Let the model's interpreters share the float64 path's map and rows (core/derived.py) for
        these terms, the node's constant ones (or None). The map depends on the node's constants, its
        kernel and the config, and on the input's shape only through the rounding and the product bound
        (in the key, as the rows' pixels are). Keeps the model's cache and the key, not the context."""
        cache = derived_constants_of(context)
        if cache is not None:
            self._shared = (cache, derived_key(context, node, "requant"), terms)

    def _share(self, terms, what: str, compute: Callable[[], Any]):
        """compute(), computed once per model when these are the terms share_constants named."""
        if self._shared is None or self._shared[2] is not terms:
            return compute()
        cache, key = self._shared[:2]
        return cache.get((key, what, self.rounding, self.product_bound), compute)

    def float_constants(self, terms: np.ndarray | None) -> FloatMap | None:
        """The float64 path's map for these per-channel terms, or None when it is not exact."""
        if self.rounding not in _HIGH_HALF_ROUNDING or self.wrap or self.product_bound is None:
            return None
        fast = self._fast
        if fast is not None and fast[0] is terms:
            return fast[1]
        arrays = self._share(terms, "map", lambda: _arrays(self._float_map(terms)))
        self._fast = (terms, _float_map_of(arrays))
        return self._fast[1]

    def _float_map(self, terms: np.ndarray | None) -> FloatMap | None:
        """The float64 path's map, or None when it is not exact. Every channel's integers are Python's
        (unbounded): arrays of objects, so NumPy loops over the channels, exactly."""
        channels, bound, zero_point = self.multiplier.size, int(self.product_bound), int(self.zero_point)
        terms = np.broadcast_to(0 if terms is None else terms, (channels,)).astype(object)
        m = self.multiplier.astype(object)
        left, right = (shift.astype(object) for shift in self._shifts())
        total = 31 + right
        if np.any((bound + np.abs(terms)) << left >= 2**31):
            return None  # acc << left could wrap in int32
        high = _HIGH_HALF_ROUNDING[self.rounding]
        rounding = high + np.where(right > 0, 1 << (30 + right), 0) + (zero_point << total)
        numerator = rounding + (terms * m << left)
        span = bound * m << left  # |product * m * 2**left|
        lowest = min([self.low, *((numerator - span) >> total)])
        highest = max([self.high, *((numerator + span) >> total)])
        unit = 1 << (8 * self.dtype.itemsize)
        # the lift that the cast to the output's unsigned view wraps away, else the least one (added back)
        for lift in dict.fromkeys((-(self.low // unit) * unit, max(-self.low, 0))):
            lifted_numerator = numerator + (lift << total)
            if not np.any(span + np.abs(lifted_numerator) >= 2**53):
                break
        else:
            return None
        scales = (m * 2.0 ** (left - total)).astype(np.float64)
        constants = (lifted_numerator * 2.0**-total).astype(np.float64)
        narrow = unit == 256 and lowest + lift > -(1 << 15) and highest + lift < (1 << 15) - 1
        lifted = np.dtype(np.int16 if narrow else np.int32)
        back = np.array(-lift, self.dtype) if lift % unit else None  # wraps: -lift modulo 2**bits
        return FloatMap(
            scales,
            constants,
            np.array(self.low + lift, lifted),
            np.array(self.high + lift, lifted),
            back,
        )

    def _scalar(self, acc: np.ndarray, channels) -> np.ndarray:
        result = fp.multiply_by_quantized_multiplier(acc, self.multiplier[channels], self.shift[channels])
        return result + self.zero_point

    def _tiled(self, pixels: int, terms) -> _Rows:
        """The per-channel values tiled over rows of `pixels` outputs (rows.py), kept for the last
        (pixels, terms): the kernels ask for their constant terms in prepare, so invoke reuses them."""
        rows = self._rows
        if rows is not None and rows.pixels == pixels and rows.terms is terms:
            return rows

        def tile(values):
            return values if np.ndim(values) == 0 else channel_row(values, pixels)

        fast = self.float_constants(terms)
        if fast is not None:  # the int64 path's rows are never read: not made (they are the larger ones)
            tiled = self._share(
                terms,
                f"rows {pixels}",
                lambda: tuple(channel_row(v, pixels) for v in (fast.scale, fast.constant)),
            )
            rows = _Rows(pixels, terms, tiled)
        else:
            channels = self.multiplier.size
            rows = _Rows(
                pixels,
                terms,
                None,
                None if terms is None else channel_row(np.broadcast_to(terms, (channels,)), pixels, np.int64),
                *(tile(v) for v in (self._left, self._m, self._add, self._total)),
            )
        self._rows = rows
        return rows

    def prepare(self, pixels: int, terms=None) -> None:
        """Tile, in prepare, what requantize needs for outputs of `pixels` pixels and these (constant)
        terms."""
        self._tiled(pixels, terms)

    def requantize(self, product: np.ndarray, terms, wide: np.ndarray, out: np.ndarray) -> None:
        """out = the requantized product + terms. `product`: exact integer-valued floats shaped like
        `out` ([..., C], C-contiguous, a scratch: overwritten); `terms`: int64 per-channel terms or None;
        `wide`: an int64 scratch shaped like `out`. The per-channel values apply over long rows
        (rows.py): no NumPy buffers."""
        calls = self.float_calls(product, terms, wide, out)
        if calls is None:
            channels = out.shape[-1]
            rows = self._tiled(out.size // channels if channels else 0, terms)
            np.copyto(wide, product, casting="unsafe")  # exact integers
            if terms is not None:
                apply_row(np.add, wide, rows.terms_row, wide)
            self._apply(wide, out, rows)
            return
        tails = self._scalar_tails(product, terms, out)  # before the calls reuse the product's memory
        for call in calls:
            call()
        for target, values in tails:
            target[...] = values

    def float_path(self, terms) -> bool:
        """Whether requantize takes the float64 path for these terms with no scalar tails (float_calls
        is then all of it)."""
        return not self.has_tails and self.float_constants(terms) is not None

    @property
    def has_tails(self) -> bool:
        """Whether some outputs are rounded by scalar code after the rest (scalar_from, scalar_tail)."""
        return self.scalar_tail > 0 or (
            self.scalar_from is not None and self.scalar_from < self.multiplier.size
        )

    def float_calls(self, product: np.ndarray, terms, wide: np.ndarray, out: np.ndarray) -> list | None:
        """requantize's float64 path on these arrays as calls to make, but for the scalar
        tails; None when the int64 path applies. The lifted integers go into the product's memory."""
        channels = out.shape[-1]
        rows = self._tiled(out.size // channels if channels else 0, terms)
        if rows.fast is None:
            return None
        fast = self.float_constants(terms)
        kernel = _compiled("requantize", product, out)
        if kernel is not None:
            channels = out.shape[-1]
            return [
                partial(
                    kernel,
                    product.reshape(-1, channels),
                    read_only(fast.scale),
                    read_only(fast.constant),
                    *self.lifted_bounds(fast),
                    out.reshape(-1, channels),
                )
            ]
        scale, constant = rows.fast
        t = wide.view(np.float64)
        values, calls = product, []
        if product.dtype != t.dtype:  # exact: a cast inside the product would run buffered
            calls.append(partial(np.copyto, t, product))
            values = t
        calls += row_calls(np.multiply, values, scale, t)
        calls += row_calls(np.add, t, constant, t)
        return calls + self.finish_calls(t, out, product, terms)

    def _scalar_tails(self, product: np.ndarray, terms, out: np.ndarray) -> list:
        """The outputs scalar code rounds, as (view of out, values) pairs."""
        channels = out.shape[-1]
        tails = []
        if self.scalar_from is not None and self.scalar_from < channels:
            tail = (Ellipsis, slice(self.scalar_from, None))
            acc = product[tail].astype(np.int64)
            if terms is not None:
                acc += np.broadcast_to(terms, (channels,))[self.scalar_from :]
            values = self._scalar(acc, slice(self.scalar_from, None))
            tails.append((out[tail], np.clip(values, self.low, self.high)))
        if self.scalar_tail:
            count = self.scalar_tail
            acc = product.reshape(-1)[-count:].astype(np.int64)
            if terms is not None:
                acc += np.tile(np.broadcast_to(terms, (channels,)), count // channels + 2)[-count:]
            values = fp.multiply_by_quantized_multiplier(acc, self.multiplier[0], self.shift[0])
            tails.append((out.reshape(-1)[-count:], np.clip(values + self.zero_point, self.low, self.high)))
        return tails

    def finish_calls(self, values: np.ndarray, out: np.ndarray, scratch: np.ndarray, terms) -> list:
        """out = clamp(floor(values) - lift, low, high) for the float64 path's values for these terms
        (`values` = product * m' + c', as many as out has), as calls to make: the cast to integers (in
        `scratch`, a C-contiguous array of at least 4 bytes per output, not `values`), their clamp,
        their cast to the unsigned view of out, which wraps the lift away (else it is added back)."""
        fast = self.float_constants(terms)
        kernel = _compiled("finish", values, out)
        if kernel is not None:
            channels = out.shape[-1]
            shaped = values.reshape(-1, channels), out.reshape(-1, channels)
            return [partial(kernel, shaped[0], *self.lifted_bounds(fast), shaped[1])]
        lifted = scratch.reshape(-1).view(np.uint8)[: out.size * fast.low.itemsize]
        lifted = lifted.view(fast.low.dtype).reshape(out.shape)
        unsigned = out.view(np.dtype(f"u{out.dtype.itemsize}"))
        calls = [
            partial(np.copyto, lifted, values.reshape(out.shape), casting="unsafe"),
            partial(clip, lifted, fast.low, fast.high, out=lifted),
            partial(np.copyto, unsigned, lifted, casting="unsafe"),
        ]
        if fast.back is not None:
            calls.append(partial(np.add, out, fast.back, out=out))
        return calls

    def lifted_bounds(self, fast: FloatMap) -> tuple[int, int, int]:
        """The float64 path's clamp bounds (lifted) and the lift, as integers (the compiled kernels')."""
        lowest = int(fast.low)
        return lowest, int(fast.high), lowest - self.low

    def _apply(self, acc: np.ndarray, out: np.ndarray, rows: _Rows) -> None:
        """Requantize `acc` (int64, overwritten) into `out` (same shape, the output's integer type)."""
        if self.wrap:
            fp.wrap(acc, out=acc)
        channels = acc.shape[-1]
        tail = None
        if self.rounding != "scalar" and self.scalar_from is not None and self.scalar_from < channels:
            tail = self._scalar(acc[..., self.scalar_from :], slice(self.scalar_from, None))
        flat_tail = None
        if self.rounding != "scalar" and self.scalar_tail:
            flat = acc.reshape(-1)[-self.scalar_tail :]  # per-tensor (uint8): one multiplier
            flat_tail = fp.multiply_by_quantized_multiplier(flat, self.multiplier[0], self.shift[0])
            flat_tail += self.zero_point
        if self.rounding == "scalar":
            acc[...] = self._scalar(acc, slice(None))
        else:
            if rows.left is not None:
                _per_channel(np.left_shift, acc, rows.left)
                fp.wrap(acc, out=acc)  # C shifts (multiplies) in int32
            _per_channel(np.multiply, acc, rows.m)
            _per_channel(np.add, acc, rows.add)
            _per_channel(np.right_shift, acc, rows.total)
            if self.rounding in ("wide", "single"):
                fp.wrap(acc, out=acc)
            if self.rounding != "wide" and self._add_zero_point and self.zero_point:
                np.add(acc, self.zero_point, out=acc)
        if tail is not None:
            acc[..., self.scalar_from :] = tail
        if flat_tail is not None:
            acc.reshape(-1)[-self.scalar_tail :] = flat_tail
        clip(acc, self.low, self.high, out=acc)
        np.copyto(out, acc, casting="unsafe")  # a cast inside the clip would run buffered


_COMPILED_TYPES = {np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)}


def _compiled(name: str, values: np.ndarray, out: np.ndarray):
    """requant_compiled's `name` for these arrays (C-contiguous, with the channels last), or None: no
    compiled kernels here, or arrays it does not take."""
    if out.dtype not in _COMPILED_TYPES or values.dtype not in (np.float32, np.float64) or out.size == 0:
        return None
    if name == "finish" and values.dtype != np.float64:
        return None
    if not (values.flags.c_contiguous and out.flags.c_contiguous) or values.size != out.size:
        return None
    return compiled("conv.requant_compiled", name)


def _per_channel(ufunc, acc: np.ndarray, values) -> None:
    """acc = ufunc(acc, values): a scalar, or a channel_row."""
    if np.ndim(values) == 0:
        ufunc(acc, values, out=acc)
    else:
        apply_row(ufunc, acc, values, acc)


class FloatMap(NamedTuple):
    """The float64 path: values = product * scale + constant (per channel), every reachable one in
    (-2**31, 2**31) (in (-2**15, 2**15) when `low` is int16) and, in the clamp range, non-negative: the
    constant lifts them by a multiple of 2**bits, or by -low (and `back` adds that back, wrapping)."""

    scale: np.ndarray  # float64 [C]: m * 2**(left - 31 - r)
    constant: np.ndarray  # float64 [C]: (rounding + zero point + lift + terms * m * 2**left) * 2**(-31 - r)
    low: np.ndarray  # 0-d, the cast's integer type: the clamp's low + lift
    high: np.ndarray
    back: np.ndarray | None  # 0-d, the output's type: -lift (None: the cast wraps it away)


def _arrays(fast: FloatMap | None) -> tuple[np.ndarray, ...]:
    """A FloatMap as derived constants hold it, a tuple of arrays: () for None, `back` left out when
    None."""
    return () if fast is None else tuple(a for a in fast if a is not None)


def _float_map_of(arrays: tuple[np.ndarray, ...]) -> FloatMap | None:
    """The FloatMap _arrays made these arrays of."""
    if not arrays:
        return None
    return FloatMap(*arrays) if len(arrays) == len(FloatMap._fields) else FloatMap(*arrays, None)


@dataclass(frozen=True)
class _Rows:
    """Requant's per-channel values tiled over rows of `pixels` outputs, for `terms`."""

    pixels: int
    terms: Any
    fast: tuple[np.ndarray, np.ndarray] | None  # the float64 path's (m', c') rows
    # the int64 path's (made only when it is taken): terms, then NumPy scalars when uniform, rows otherwise
    terms_row: np.ndarray | None = None
    left: Any = None
    m: Any = None
    add: Any = None
    total: Any = None

"""Requant: exact integer accumulators to a quantized output, rounded as LiteRT's kernel rounds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...errors import ensure
from ..common import clip
from ..quant import fixed_point as fp
from .rows import apply_row, channel_row, row_calls


def _uniform(values: np.ndarray):
    """A per-channel parameter as one NumPy scalar when every channel has the same (faster to broadcast)."""
    return values[0] if values.size and np.all(values == values[0]) else values


@dataclass
class Requant:
    """Exact integer accumulators [..., C] to the output type, rounded as the kernel LiteRT runs rounds:

    - "simd": ruy's kernels and TFLite's NEON blocks (vqrdmulh then vrshl, LiteRT's x86 build runs them
      through an SSE translation): the high-half multiply and the right shift both round halves up, and
      two such roundings compose into one: floor((acc * m + 2**30 + 2**(30 + r)) / 2**(31 + r)), the
      output zero point joining the added constant;
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
    zero-point sums). "simd" is computed in float64 when that is exact: acc * m * 2**left and the
    constant are integers below 2**53 (so the product, the sum and the floor are exact) and acc << left
    stays in int32 (no wrap): floor(product * m' + c') with m' = m * 2**(left - 31 - r) and
    c' = (constant + terms * m * 2**left) * 2**(-31 - r), four passes instead of seven in int64.
    For an 8-bit clamp range the constant also holds -low (in the same exact integer numerator), so
    the clamped value lies in [0, high - low]: its cast to the unsigned type of the output's width
    truncates, which for a non-negative value is the floor (a pass over float64 values saved), and
    adding low back in the output's wrapping integer arithmetic gives the result (a pass over bytes).
    Wider ranges (int16) keep the floor: their -low would cost the constant up to 16 bits of room.
    """

    multiplier: np.ndarray  # int64 [C]
    shift: np.ndarray  # int64 [C]: TFLite's exponent, > 0 shifts left
    zero_point: int
    low: int
    high: int
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
    _fast: Any = None  # (terms, (m', c')) of the float64 path for constant terms
    _rows: Any = None  # _Rows: the per-channel values tiled over rows, for the last pixels and terms
    _bounds: Any = None  # finish_calls' 0-d bounds, unsigned type and low (made on first use)

    def __post_init__(self) -> None:
        m = np.asarray(self.multiplier, np.int64).reshape(-1)
        s = np.asarray(self.shift, np.int64).reshape(-1)
        self.multiplier, self.shift = m, s
        left, right = np.maximum(s, 0), np.maximum(-s, 0)
        # the int64 overload and ruy's portable kernel fold a left shift into their total shift
        self._left = _uniform(left) if np.any(left) and self.rounding not in ("wide", "single") else None
        if self.rounding == "simd":
            total = 31 + right
            add = (np.int64(1) << 30) + np.where(right > 0, np.int64(1) << (30 + right), 0)
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

    def _float_constants(self, terms: np.ndarray | None):
        """(m', c') of the float64 path for these per-channel terms, or None when it is not exact."""
        if self.rounding != "simd" or self.wrap or self.product_bound is None:
            return None
        fast = self._fast
        if fast is not None and fast[0] is terms:
            return fast[1]
        channels = self.multiplier.size
        terms_list = (
            [0] * channels if terms is None else [int(t) for t in np.broadcast_to(terms, (channels,))]
        )
        scales, constants = [], []
        right = np.maximum(-self.shift, 0)
        result = None
        for c in range(channels):
            m, left, r = int(self.multiplier[c]), max(int(self.shift[c]), 0), int(right[c])
            total = 31 + r
            constant = (1 << 30) + ((1 << (30 + r)) if r else 0) + ((self.zero_point - self._offset) << total)
            constant += terms_list[c] * m << left
            if (self.product_bound + abs(terms_list[c])) << left >= 2**31:
                break  # acc << left could wrap in int32
            if (self.product_bound * m << left) + abs(constant) >= 2**53:
                break
            scales.append(m * 2.0 ** (left - total))
            constants.append(constant * 2.0**-total)
        else:
            result = (np.array(scales, np.float64), np.array(constants, np.float64))
        self._fast = (terms, result)
        return result

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

        fast = self._float_constants(terms)
        channels = self.multiplier.size
        rows = self._rows = _Rows(
            pixels,
            terms,
            None if fast is None else tuple(channel_row(v, pixels) for v in fast),
            None if terms is None else channel_row(np.broadcast_to(terms, (channels,)), pixels, np.int64),
            *(tile(v) for v in (self._left, self._m, self._add, self._total)),
        )
        return rows

    def prepare(self, pixels: int, terms=None) -> None:
        """Tile, in prepare, what requantize needs for outputs of `pixels` pixels and these (constant)
        terms."""
        self._tiled(pixels, terms)

    def requantize(self, product: np.ndarray, terms, wide: np.ndarray, out: np.ndarray) -> None:
        """out = the requantized product + terms. `product`: exact integer-valued floats shaped like
        `out` ([..., C]); `terms`: int64 per-channel terms or None; `wide`: an int64 scratch shaped
        like `out`. The per-channel values apply over long rows (rows.py): no NumPy buffers."""
        calls = self.float_calls(product, terms, wide, out)
        if calls is None:
            channels = out.shape[-1]
            rows = self._tiled(out.size // channels if channels else 0, terms)
            np.copyto(wide, product, casting="unsafe")  # exact integers
            if terms is not None:
                apply_row(np.add, wide, rows.terms_row, wide)
            self._apply(wide, out, rows)
            return
        for call in calls:
            call()
        self._scalar_tails(product, terms, out)

    def float_path(self, terms) -> bool:
        """Whether requantize takes the float64 path for these terms with no scalar tails (float_calls
        is then all of it)."""
        return not self.has_tails and self._float_constants(terms) is not None

    @property
    def has_tails(self) -> bool:
        """Whether some outputs are rounded by scalar code after the rest (scalar_from, scalar_tail)."""
        return self.scalar_tail > 0 or (
            self.scalar_from is not None and self.scalar_from < self.multiplier.size
        )

    def float_calls(self, product: np.ndarray, terms, wide: np.ndarray, out: np.ndarray) -> list | None:
        """requantize's float64 path on these arrays as calls to make (program.py), but for the scalar
        tails; None when the int64 path applies."""
        channels = out.shape[-1]
        rows = self._tiled(out.size // channels if channels else 0, terms)
        if rows.fast is None:
            return None
        scale, constant = rows.fast
        t = wide.view(np.float64)
        values, calls = product, []
        if product.dtype != t.dtype:  # exact: a cast inside the product would run buffered
            calls.append(partial(np.copyto, t, product))
            values = t
        calls += row_calls(np.multiply, values, scale, t)
        calls += row_calls(np.add, t, constant, t)
        return calls + self.finish_calls(t, out)

    def _scalar_tails(self, product: np.ndarray, terms, out: np.ndarray) -> None:
        channels = out.shape[-1]
        if self.scalar_from is not None and self.scalar_from < channels:
            tail = (Ellipsis, slice(self.scalar_from, None))
            acc = product[tail].astype(np.int64)
            if terms is not None:
                acc += np.broadcast_to(terms, (channels,))[self.scalar_from :]
            out[tail] = np.clip(self._scalar(acc, slice(self.scalar_from, None)), self.low, self.high)
        if self.scalar_tail:
            flat = out.reshape(-1)
            count = self.scalar_tail
            acc = product.reshape(-1)[-count:].astype(np.int64)
            if terms is not None:
                acc += np.tile(np.broadcast_to(terms, (channels,)), count // channels + 2)[-count:]
            values = fp.multiply_by_quantized_multiplier(acc, self.multiplier[0], self.shift[0])
            flat[-count:] = np.clip(values + self.zero_point, self.low, self.high)

    def finish(self, scaled: np.ndarray, out: np.ndarray) -> None:
        """The float64 path's last steps on values already multiplied and offset (overwritten)."""
        for call in self.finish_calls(scaled, out):
            call()

    @property
    def _offset(self) -> int:
        """What the float64 path's values are offset by (-offset): low for an 8-bit clamp range, else 0."""
        return self.low if self.low >= -128 and self.high <= 255 else 0

    def finish_calls(self, values: np.ndarray, out: np.ndarray) -> list:
        """out = clamp(floor(values + offset), low, high) for the float64 path's values (overwritten; as
        many as out has), as calls to make. With an offset: the clamp to [0, high - low], the cast to the
        unsigned view of out (truncation is the floor of a non-negative value), then low added back,
        wrapping."""
        bounds = self._bounds
        if bounds is None:
            low = np.array(self.low, out.dtype) if self._offset else None
            floor = self.low - self._offset, self.high - self._offset
            unsigned = out.dtype if low is None else np.dtype(f"u{out.dtype.itemsize}")
            bounds = self._bounds = (*(np.array(float(v)) for v in floor), unsigned, low)
        lowest, highest, unsigned, low = bounds
        values = values.reshape(out.shape)
        calls = [partial(np.floor, values, out=values)] if low is None else []
        calls.append(partial(clip, values, lowest, highest, out=values))
        calls.append(partial(np.copyto, out.view(unsigned), values, casting="unsafe"))
        if low is not None:
            calls.append(partial(np.add, out, low, out=out))
        return calls

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


def _per_channel(ufunc, acc: np.ndarray, values) -> None:
    """acc = ufunc(acc, values): a scalar, or a channel_row."""
    if np.ndim(values) == 0:
        ufunc(acc, values, out=acc)
    else:
        apply_row(ufunc, acc, values, acc)


@dataclass(frozen=True)
class _Rows:
    """Requant's per-channel values tiled over rows of `pixels` outputs, for `terms`."""

    pixels: int
    terms: Any
    fast: tuple[np.ndarray, np.ndarray] | None  # the float64 path's (m', c') rows
    terms_row: np.ndarray | None  # int64
    left: Any  # the rest: NumPy scalars when uniform, rows otherwise
    m: Any
    add: Any
    total: Any

"""Requant: exact integer accumulators to a quantized output, rounded as LiteRT's kernel rounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ensure
from ..common import clip
from ..quant import fixed_point as fp


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
    _rows: Any = None  # ((m', c'), row width, m' and c' tiled over a row)

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
            constant = (1 << 30) + ((1 << (30 + r)) if r else 0) + (self.zero_point << total)
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

    def requantize(self, product: np.ndarray, terms, wide: np.ndarray, out: np.ndarray) -> None:
        """out = the requantized product + terms. `product`: exact integer-valued floats shaped like
        `out` ([..., W, C]); `terms`: int64 per-channel terms or None; `wide`: an int64 scratch shaped
        like `out`. The float64 path runs on rows of W*C values (per-channel constants tiled over a
        row: C alone is too short an inner loop)."""
        fast = self._float_constants(terms)
        if fast is None:
            np.copyto(wide, product, casting="unsafe")  # exact integers
            if terms is not None:
                np.add(wide, terms, out=wide)
            self.apply(wide, out)
            return
        width = out.shape[-2] * out.shape[-1] if out.ndim > 1 else out.shape[-1]
        rows = self._rows
        if rows is None or rows[0] is not fast or rows[1] != width:
            rows = self._rows = (fast, width, *(np.tile(v, width // v.size) for v in fast))
        scale, constant = rows[2], rows[3]
        t = wide.view(np.float64).reshape(-1, width)
        np.multiply(product.reshape(-1, width), scale, out=t)
        np.add(t, constant, out=t)
        np.floor(t, out=t)
        clip(t, self.low, self.high, out=t)
        np.copyto(out.reshape(-1, width), t, casting="unsafe")
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
        """The float64 path's last steps on values already multiplied and offset (in place)."""
        width = out.shape[-2] * out.shape[-1] if out.ndim > 1 else out.shape[-1]
        rows = scaled.reshape(-1, width)
        np.floor(rows, out=rows)
        clip(rows, self.low, self.high, out=rows)
        np.copyto(out.reshape(-1, width), rows, casting="unsafe")

    def apply(self, acc: np.ndarray, out: np.ndarray) -> None:
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
            if self._left is not None:
                np.left_shift(acc, self._left, out=acc)
                fp.wrap(acc, out=acc)  # C shifts (multiplies) in int32
            np.multiply(acc, self._m, out=acc)
            np.add(acc, self._add, out=acc)
            np.right_shift(acc, self._total, out=acc)
            if self.rounding in ("wide", "single"):
                fp.wrap(acc, out=acc)
            if self.rounding != "wide" and self._add_zero_point and self.zero_point:
                np.add(acc, self.zero_point, out=acc)
        if tail is not None:
            acc[..., self.scalar_from :] = tail
        if flat_tail is not None:
            acc.reshape(-1)[-self.scalar_tail :] = flat_tail
        clip(acc, self.low, self.high, out=out, casting="unsafe")

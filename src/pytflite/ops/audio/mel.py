"""The MFCC transform of one spectrogram frame, as TFLite's internal Mfcc computes it in double precision:
square root of the squared-magnitude bins, a triangular mel filterbank, log with a 1e-12 floor, and a
DCT-II keeping the lowest coefficients.

`MfccPlan.build` is TFLite's Mfcc::Initialize (filterbank and DCT tables; the same bin-to-channel mapping
and edge weights), `MfccPlan.apply` its Compute for all frames at once. TFLite sums each channel and each
coefficient one term at a time, in order; `_ordered_sum` keeps that order (np.sum would pair terms), so
the double sums are the same (a cancelling sum, as in silence, shows it) and the float32 outputs match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FILTERBANK_FLOOR = 1e-12


def freq_to_mel(freq: float) -> float:
    return 1127.0 * math.log1p(freq / 700.0)


class MfccSetupError(ValueError):
    """TFLite's Mfcc::Initialize would return false for these parameters (the message says why)."""


@dataclass(frozen=True)
class MfccPlan:
    start: int  # the first and last spectrogram bins the filterbank reads (DC is always excluded)
    end: int
    terms: np.ndarray  # [channels, K]: per filterbank channel, its terms' indices in summation order
    weights: np.ndarray  # [end - start + 1]: each bin's share for the channel whose right side it is on
    cosines: np.ndarray  # [coefficients, channels]: the DCT table
    spectrum_too_short: bool  # TFLite's filterbank then returns nothing, and the DCT of nothing is 0

    @classmethod
    def build(
        cls, bins: int, sample_rate: float, channels: int, coefficients: int, lower: float, upper: float
    ) -> MfccPlan:
        problems = [
            (channels < 1, f"filterbank_channel_count {channels} < 1"),
            (sample_rate <= 0, f"sample rate {sample_rate:g} <= 0"),
            (bins < 2, f"spectrogram has {bins} < 2 bins"),
            (lower < 0, f"lower_frequency_limit {lower:g} < 0"),
            (upper <= lower, f"upper_frequency_limit {upper:g} <= lower_frequency_limit {lower:g}"),
            (coefficients < 1, f"dct_coefficient_count {coefficients} < 1"),
            (
                coefficients > channels,
                f"dct_coefficient_count {coefficients} > filterbank_channel_count {channels}",
            ),
        ]
        reasons = [reason for failed, reason in problems if failed]
        if reasons:
            raise MfccSetupError("; ".join(reasons))
        mel_low = freq_to_mel(lower)
        spacing = (freq_to_mel(upper) - mel_low) / float(channels + 1)
        centers = np.array([mel_low + spacing * (i + 1) for i in range(channels + 1)])
        hz_per_bin = 0.5 * sample_rate / float(bins - 1)
        start = int(1.5 + lower / hz_per_bin)
        end = int(upper / hz_per_bin)
        used = np.arange(start, min(end, bins - 1) + 1)
        mels = np.array([freq_to_mel(i * hz_per_bin) for i in used])
        # The channel whose triangle's right side a bin is on: the last center below it (-1: none).
        right = np.searchsorted(centers[:channels], mels, side="left") - 1
        upper_center = centers[right + 1]
        lower_center = np.where(right >= 0, centers[np.maximum(right, 0)], mel_low)
        weights = (upper_center - mels) / (upper_center - lower_center)
        return cls(
            start,
            end,
            _summation_terms(right, channels),
            weights,
            _dct_table(channels, coefficients),
            spectrum_too_short=bins <= end,
        )

    def apply(self, spectrogram: np.ndarray, out: np.ndarray) -> None:
        """MFCCs of every frame of a float32 [..., bins] squared-magnitude spectrogram into `out`."""
        if self.spectrum_too_short:
            out.fill(0.0)
            return
        magnitude = np.sqrt(spectrogram[..., self.start : self.end + 1].astype(np.float64))
        right_side = magnitude * self.weights
        left_side = magnitude - right_side
        zero = np.zeros((*magnitude.shape[:-1], 1))
        terms = np.concatenate([left_side, right_side, zero], axis=-1)
        filterbank = _ordered_sum(terms[..., self.terms.T])
        log_mel = np.log(np.maximum(filterbank, FILTERBANK_FLOOR))
        np.copyto(out, _ordered_sum(log_mel[..., None] * self.cosines.T), casting="same_kind")


def _ordered_sum(terms: np.ndarray) -> np.ndarray:
    """The sum over axis -2, adding one term after another as TFLite's loops do."""
    total = terms[..., 0, :].copy()
    for k in range(1, terms.shape[-2]):
        total += terms[..., k, :]
    return total


def _summation_terms(right: np.ndarray, channels: int) -> np.ndarray:
    """Indices into [left sides, right sides, 0] of each channel's terms in TFLite's order: bin by bin,
    a channel first gets the left-side shares of the bins below its center, then the right-side shares
    of those above; rows are padded with the index of the trailing 0."""
    count = len(right)
    rows = []
    for channel in range(channels):
        left_terms = np.flatnonzero(right == channel - 1)
        right_terms = count + np.flatnonzero(right == channel)
        rows.append(np.concatenate([left_terms, right_terms]))
    width = max(1, *(len(row) for row in rows))
    terms = np.full((channels, width), 2 * count, np.intp)
    for channel, row in enumerate(rows):
        terms[channel, : len(row)] = row
    return terms


def _dct_table(channels: int, coefficients: int) -> np.ndarray:
    norm = math.sqrt(2.0 / channels)
    step = math.pi / channels
    return np.array(
        [[norm * math.cos(i * step * (j + 0.5)) for j in range(channels)] for i in range(coefficients)]
    )

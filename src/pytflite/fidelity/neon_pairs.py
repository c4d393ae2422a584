"""The int16 pairs of ARM's int8 matrix kernels: where LiteRT's ARM builds do not sum exactly.

ruy's NEON kernels for 8-bit products (aarch64 cores without dot products) and gemmlowp's (TFLite for
32-bit ARM) multiply int8 operands in 16-deep blocks and add the products of depths k and k + 8 in
int16 (smull, smlal2) before widening them to int32 (sadalp). Two products of -128 x -128 make 32768,
which int16 wraps to -32768: the accumulator comes out 65536 lower. uint8 operands are multiplied as int8
(value - 128), so there a weight of 0 meeting an input of 0 at both depths does it. The depth is padded to
whole blocks with the zero point, as ruy packs it. ruy assumes int8 weights in [-127, 127], which TFLite's
converters write; other weights reach it (recorded: tests/fixtures/litert_aarch64.npz, *_paired_lowest).
Kernels ask `weight_pairs` in prepare, for constant weights, and correct their exact accumulators with
the object it returns: nothing to do in the usual case, where no weight pair can wrap.
"""

from __future__ import annotations

import numpy as np

from .host import HostProfile

_BLOCK = 16
_HALF = 8
WRAP = 1 << 16  # what one wrapped pair takes from an accumulator


def pairs_wrap(host: HostProfile) -> bool:
    """Whether the host's 8-bit matrix kernels add product pairs in int16: ARM, but aarch64 cores with dot
    products (ruy's sdot kernels are exact)."""
    if host.arch == "arm":
        return True
    return host.arch == "aarch64" and "asimddp" not in host.features


def lowest_pairs(values: np.ndarray, int8_offset: int, pad: int) -> np.ndarray:
    """[..., depth] operand values -> [..., pairs] float64 indicator of the pairs (k, k + 8) of each
    16-deep block where both are -128 as the kernel multiplies them (value + int8_offset); the depth
    padded to whole blocks with `pad` (the operand's zero point)."""
    values = np.asarray(values)
    depth = values.shape[-1]
    blocks = -(-depth // _BLOCK)
    lowest = np.full((*values.shape[:-1], blocks * _BLOCK), pad + int8_offset == -128)
    lowest[..., :depth] = values.astype(np.int64) + int8_offset == -128
    lowest = lowest.reshape(*values.shape[:-1], blocks, 2, _HALF)
    return (
        (lowest[..., 0, :] & lowest[..., 1, :]).reshape(*values.shape[:-1], blocks * _HALF).astype(np.float64)
    )


class WeightPairs:
    """A constant weight matrix's wrapping pairs, and the correction they make to accumulators."""

    def __init__(self, pairs: np.ndarray, int8_offset: int, input_pad: int):
        self.pairs = pairs  # float64 [units, pairs]
        self.int8_offset = int8_offset
        self.input_pad = input_pad

    def correction(self, inputs: np.ndarray) -> np.ndarray:
        """What the kernel's int16 pairs take from the accumulators [rows, units] of `inputs` [rows,
        depth] (the raw operand values): 65536 for each pair of -128 x -128 products (int64)."""
        count = lowest_pairs(inputs, self.int8_offset, self.input_pad) @ self.pairs.T  # exact small integers
        return count.astype(np.int64) * WRAP


def weight_pairs(
    host: HostProfile, weights: np.ndarray, uint8: bool, weight_zero_point: int, input_zero_point: int
) -> WeightPairs | None:
    """The wrapping pairs of constant `weights` [units, depth] (raw values) in the host's ruy or gemmlowp
    product, or None: the host sums exactly, or no pair of these weights can wrap."""
    if not pairs_wrap(host):
        return None
    offset = -128 if uint8 else 0
    pairs = lowest_pairs(weights, offset, weight_zero_point)
    if not pairs.any():
        return None
    return WeightPairs(pairs, offset, input_zero_point)

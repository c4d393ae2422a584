"""Philox-4x32-10 as TensorFlow's PhiloxRandom runs it, vectorised over blocks, and the per-node stream.

Philox is counter based: block i of a stream is a pure function of (key, counter + i), so any number of
blocks is one NumPy pass of ten rounds over a counter array. The counter is 128 bits (four uint32 words,
word 0 least significant), the key 64 bits; each block is four uint32 words.

LiteRT builds a node's stream from its RandomOptions in every prepare (so a re-prepare, e.g. after a
resize, restarts it): the options pass through TfLiteRandomParams' `int` fields, so only the low 32 bits
of each seed count, sign-extended to 64; `seed` becomes the key and `seed2` the counter's high 64 bits.
Both zero means "unseeded": LiteRT then takes two 64-bit seeds from a process-wide generator seeded by
/dev/urandom, which cannot be reproduced; we draw them from the OS's entropy instead.
"""

from __future__ import annotations

import numpy as np

_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)
_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_ROUNDS = 10
_U64 = (1 << 64) - 1
_U128 = (1 << 128) - 1

_unseeded = np.random.default_rng()  # LiteRT: a process-wide mt19937_64 seeded from /dev/urandom


def _as_int32(value: int) -> int:
    """The option as TfLiteRandomParams' `int` field holds it."""
    return ((int(value) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


class PhiloxStream:
    """One node's generator: a fixed key and a 128-bit counter that each drawn block advances by one.

    Mutable on purpose: it is the state LiteRT keeps in the node's OpData and carries across invokes.
    """

    def __init__(self, seed: int, seed2: int):
        self.key = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
        self.counter = (seed2 & _U64) << 64

    @classmethod
    def from_options(cls, options) -> PhiloxStream:
        seed, seed2 = _as_int32(options.seed), _as_int32(options.seed2)
        if seed == 0 and seed2 == 0:
            seed, seed2 = (int(v) for v in _unseeded.integers(0, 1 << 64, size=2, dtype=np.uint64))
        return cls(seed & _U64, seed2 & _U64)

    def draw(self, blocks: int) -> np.ndarray:
        """The next `blocks` blocks as one flat uint32 array of 4 * blocks words."""
        words = philox_words(self.key, self.counter, blocks)
        self.skip(blocks)
        return words

    def skip(self, blocks: int) -> None:
        self.counter = (self.counter + blocks) & _U128


def philox_words(key: tuple[int, int], counter: int, blocks: int) -> np.ndarray:
    """Blocks counter, counter + 1, ... under `key`, flattened: 4 * blocks uint32 words in stream order."""
    low = np.uint64(counter & _U64) + np.arange(blocks, dtype=np.uint64)  # wraps modulo 2**64
    high = np.uint64(counter >> 64) + (low < np.uint64(counter & _U64)).astype(np.uint64)
    c0, c1, c2, c3 = low & _MASK32, low >> _SHIFT32, high & _MASK32, high >> _SHIFT32
    k0, k1 = key
    for _ in range(_ROUNDS):
        product0 = _MULTIPLIERS[0] * c0  # both factors < 2**32: exact in uint64
        product2 = _MULTIPLIERS[1] * c2
        c0, c1, c2, c3 = (
            (product2 >> _SHIFT32) ^ c1 ^ np.uint64(k0),
            product2 & _MASK32,
            (product0 >> _SHIFT32) ^ c3 ^ np.uint64(k1),
            product0 & _MASK32,
        )
        k0, k1 = (k0 + _KEY_STEPS[0]) & 0xFFFFFFFF, (k1 + _KEY_STEPS[1]) & 0xFFFFFFFF
    return np.stack((c0, c1, c2, c3), axis=1).astype(np.uint32).reshape(-1)


def uint32_to_unit_float(words: np.ndarray) -> np.ndarray:
    """Floats in [0, 1): 23 random mantissa bits under exponent 0, minus one (TF's Uint32ToFloat)."""
    return ((words & np.uint32(0x7FFFFF)) | np.uint32(127 << 23)).view(np.float32) - np.float32(1)


def uint32_pairs_to_unit_double(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """Doubles in [0, 1) from 20 + 32 random mantissa bits (TF's Uint64ToDouble)."""
    mantissa = ((high & np.uint32(0xFFFFF)).astype(np.uint64) << _SHIFT32) | low.astype(np.uint64)
    return (mantissa | np.uint64(1023 << 52)).view(np.float64) - 1.0

"""FarmHash's Fingerprint64 (farmhashna::Hash64), vectorised over many keys of one length.

LSH_PROJECTION hashes (seed, input row) keys with it; the value is fixed forever by FarmHash's
fingerprint contract, so reproducing it makes the projection bit-exact. Keys are rows of a uint8 array;
all arithmetic is uint64 arithmetic modulo 2**64, as in C++.
"""

from __future__ import annotations

import numpy as np

_K0 = np.uint64(0xC3A5C85C97CB3127)
_K1 = np.uint64(0xB492B66FBE98F273)
_K2 = np.uint64(0x9AE16A3B2F90404F)
_U64 = np.uint64


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """Fingerprint64 of each row of `keys` (uint8, shape [count, length]) as uint64."""
    keys = np.ascontiguousarray(keys, dtype=np.uint8)
    length = keys.shape[1]
    with np.errstate(over="ignore"):
        if length <= 16:
            return _hash_0_to_16(keys, length)
        if length <= 32:
            return _hash_17_to_32(keys, length)
        if length <= 64:
            return _hash_33_to_64(keys, length)
        return _hash_long(keys, length)


def _fetch64(keys: np.ndarray, at: int) -> np.ndarray:
    return keys[:, at : at + 8].copy().view("<u8").reshape(-1).astype(np.uint64)


def _fetch32(keys: np.ndarray, at: int) -> np.ndarray:
    return keys[:, at : at + 4].copy().view("<u4").reshape(-1).astype(np.uint64)


def _rotate(value: np.ndarray, shift: int) -> np.ndarray:
    """Rotate right by `shift` bits."""
    return value if shift == 0 else (value >> _U64(shift)) | (value << _U64(64 - shift))


def _shift_mix(value: np.ndarray) -> np.ndarray:
    return value ^ (value >> _U64(47))


def _mix16(u: np.ndarray, v: np.ndarray, mul) -> np.ndarray:
    """Two 64-bit words hashed to one (Murmur-style), with multiplier `mul`."""
    a = (u ^ v) * mul
    a ^= a >> _U64(47)
    b = (v ^ a) * mul
    b ^= b >> _U64(47)
    return b * mul


def _hash_0_to_16(keys: np.ndarray, length: int) -> np.ndarray:
    mul = _K2 + _U64(2 * length)
    if length >= 8:
        a = _fetch64(keys, 0) + _K2
        b = _fetch64(keys, length - 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        return _mix16(c, d, mul)
    if length >= 4:
        a = _fetch32(keys, 0)
        return _mix16(_U64(length) + (a << _U64(3)), _fetch32(keys, length - 4), mul)
    if length > 0:
        y = keys[:, 0].astype(np.uint64) + (keys[:, length >> 1].astype(np.uint64) << _U64(8))
        z = _U64(length) + (keys[:, length - 1].astype(np.uint64) << _U64(2))
        # y and z are 32-bit in C++; their products with the 64-bit constants are 64-bit
        return _shift_mix((y * _K2) ^ (z * _K0)) * _K2
    return np.full(keys.shape[0], _K2, np.uint64)


def _hash_17_to_32(keys: np.ndarray, length: int) -> np.ndarray:
    mul = _K2 + _U64(2 * length)
    a = _fetch64(keys, 0) * _K1
    b = _fetch64(keys, 8)
    c = _fetch64(keys, length - 8) * mul
    d = _fetch64(keys, length - 16) * _K2
    return _mix16(_rotate(a + b, 43) + _rotate(c, 30) + d, a + _rotate(b + _K2, 18) + c, mul)


def _hash_33_to_64(keys: np.ndarray, length: int) -> np.ndarray:
    mul = _K2 + _U64(2 * length)
    a = _fetch64(keys, 0) * _K2
    b = _fetch64(keys, 8)
    c = _fetch64(keys, length - 8) * mul
    d = _fetch64(keys, length - 16) * _K2
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _mix16(y, a + _rotate(b + _K2, 18) + c, mul)
    e = _fetch64(keys, 16) * mul
    f = _fetch64(keys, 24)
    g = (y + _fetch64(keys, length - 32)) * mul
    h = (z + _fetch64(keys, length - 24)) * mul
    return _mix16(_rotate(e + f, 43) + _rotate(g, 30) + h, e + _rotate(f + a, 18) + g, mul)


def _weak_32(keys: np.ndarray, at: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 16-byte hash of 32 key bytes from offset `at` and two seeds."""
    w, x, y, z = (_fetch64(keys, at + 8 * i) for i in range(4))
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotate(a, 44)
    return a + z, b + c


def _hash_long(keys: np.ndarray, length: int) -> np.ndarray:
    """Keys over 64 bytes: 64-byte blocks mixed into a 56-byte state, then the last 64 bytes."""
    count = keys.shape[0]
    seed = _U64(81)
    x = np.full(count, seed, np.uint64)
    y = np.full(count, seed * _K1 + _U64(113), np.uint64)
    z = _shift_mix(y * _K2 + _U64(113)) * _K2
    v0 = v1 = w0 = w1 = np.zeros(count, np.uint64)
    x = x * _K2 + _fetch64(keys, 0)
    for at in range(0, ((length - 1) // 64) * 64, 64):
        x = _rotate(x + y + v0 + _fetch64(keys, at + 8), 37) * _K1
        y = _rotate(y + v1 + _fetch64(keys, at + 48), 42) * _K1
        x = x ^ w1
        y = y + v0 + _fetch64(keys, at + 40)
        z = _rotate(z + w0, 33) * _K1
        v0, v1 = _weak_32(keys, at, v1 * _K1, x + w0)
        w0, w1 = _weak_32(keys, at + 32, z + w1, y + _fetch64(keys, at + 16))
        x, z = z, x
    mul = _K1 + ((z & _U64(0xFF)) << _U64(1))
    last = length - 64
    w0 = w0 + _U64((length - 1) & 63)
    v0 = v0 + w0
    w0 = w0 + v0
    x = _rotate(x + y + v0 + _fetch64(keys, last + 8), 37) * mul
    y = _rotate(y + v1 + _fetch64(keys, last + 48), 42) * mul
    x = x ^ (w1 * _U64(9))
    y = y + v0 * _U64(9) + _fetch64(keys, last + 40)
    z = _rotate(z + w0, 33) * mul
    v0, v1 = _weak_32(keys, last, v1 * mul, x + w0)
    w0, w1 = _weak_32(keys, last + 32, z + w1, y + _fetch64(keys, last + 16))
    x, z = z, x
    return _mix16(_mix16(v0, w0, mul) + _shift_mix(y) * _K0 + z, _mix16(v1, w1, mul) + x, mul)

"""TF's string hashing: hash buckets (tf.strings.to_hash_bucket_fast / _strong / legacy) and the
Fingerprint op, with the three 64-bit hashes behind them written out in Python integers.

- Fingerprint64 (StringToHashBucketFast, Fingerprint): FarmHash's farmhashna::Hash64, the function
  TF's Fingerprint64 is. Strings up to 64 bytes take one of three short mixes; longer ones run
  64-byte blocks through a 56-byte state, ending with the last 64 bytes.
- SipHash-2-4 keyed by the op's two-int key (StringToHashBucketStrong; highwayhash's SipHash in TF).
- TF's Hash64 with its seed 0xDECAFCAFFE (legacy StringToHashBucket), a MurmurHash2-64 variant.

A bucket is the unsigned hash modulo num_buckets.
"""

from __future__ import annotations

import numpy as np

from ..node_def import TfNode
from ..registry import register
from .common import shape_text
from .strings import shown

_MASK = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F  # FarmHash's primes
_MUL = 0x9DDFEA08EB382D69


def _word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 8], "little")


def _half_word(data: bytes, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little")


def _rotate(value: int, shift: int) -> int:
    """Rotate right within 64 bits."""
    return ((value >> shift) | (value << (64 - shift))) & _MASK if shift else value


def _shift_mix(value: int) -> int:
    return value ^ (value >> 47)


def _mix_pair(u: int, v: int, mul: int = _MUL) -> int:
    """FarmHash's HashLen16: two words into one."""
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _hash_0_to_16(data: bytes) -> int:
    n = len(data)
    if n >= 8:
        mul = _K2 + n * 2
        a = (_word(data, 0) + _K2) & _MASK
        b = _word(data, n - 8)
        c = (_rotate(b, 37) * mul + a) & _MASK
        d = ((_rotate(a, 25) + b) * mul) & _MASK
        return _mix_pair(c, d, mul)
    if n >= 4:
        return _mix_pair(n + (_half_word(data, 0) << 3), _half_word(data, n - 4), _K2 + n * 2)
    if n:
        y = data[0] + (data[n >> 1] << 8)
        z = n + (data[n - 1] << 2)
        return (_shift_mix((y * _K2 ^ z * _K0) & _MASK) * _K2) & _MASK
    return _K2


def _quarter_mix(a: int, b: int, c: int, d: int) -> tuple[int, int]:
    """The two words FarmHash mixes from four: rotations of a + b and c, and of b against a and c."""
    first = (_rotate((a + b) & _MASK, 43) + _rotate(c, 30) + d) & _MASK
    return first, (a + _rotate((b + _K2) & _MASK, 18) + c) & _MASK


def _hash_17_to_32(data: bytes) -> int:
    n = len(data)
    mul = _K2 + n * 2
    a = (_word(data, 0) * _K1) & _MASK
    c = (_word(data, n - 8) * mul) & _MASK
    d = (_word(data, n - 16) * _K2) & _MASK
    return _mix_pair(*_quarter_mix(a, _word(data, 8), c, d), mul)


def _hash_33_to_64(data: bytes) -> int:
    n = len(data)
    mul = _K2 + n * 2
    a = (_word(data, 0) * _K2) & _MASK
    c = (_word(data, n - 8) * mul) & _MASK
    d = (_word(data, n - 16) * _K2) & _MASK
    y, second = _quarter_mix(a, _word(data, 8), c, d)
    z = _mix_pair(y, second, mul)
    e = (_word(data, 16) * mul) & _MASK
    f = _word(data, 24)
    g = ((y + _word(data, n - 32)) * mul) & _MASK
    h = ((z + _word(data, n - 24)) * mul) & _MASK
    first = (_rotate((e + f) & _MASK, 43) + _rotate(g, 30) + h) & _MASK
    return _mix_pair(first, (e + _rotate((f + a) & _MASK, 18) + g) & _MASK, mul)


def _weak_32(data: bytes, at: int, a: int, b: int) -> tuple[int, int]:
    """FarmHash's WeakHashLen32WithSeeds: 32 bytes and two seeds into two words."""
    w, x, y, z = (_word(data, at + 8 * i) for i in range(4))
    a = (a + w) & _MASK
    b = _rotate((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotate(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def _block(data: bytes, at: int, state: list[int], mul: int, last: bool) -> None:
    """One 64-byte round of the long hash over state [x, y, z, v0, v1, w0, w1]."""
    x, y, z, v0, v1, w0, w1 = state
    x = (_rotate((x + y + v0 + _word(data, at + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotate((y + v1 + _word(data, at + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w1 * 9) & _MASK if last else w1
    y = (y + (v0 * 9 if last else v0) + _word(data, at + 40)) & _MASK
    z = (_rotate((z + w0) & _MASK, 33) * mul) & _MASK
    v0, v1 = _weak_32(data, at, (v1 * mul) & _MASK, (x + w0) & _MASK)
    w0, w1 = _weak_32(data, at + 32, (z + w1) & _MASK, (y + _word(data, at + 16)) & _MASK)
    state[:] = [z, y, x, v0, v1, w0, w1]  # x and z trade places each round


def fingerprint64(data: bytes) -> int:
    """FarmHash Fingerprint64 (farmhashna::Hash64) of `data`, as an unsigned 64-bit int."""
    n = len(data)
    if n <= 16:
        return _hash_0_to_16(data)
    if n <= 32:
        return _hash_17_to_32(data)
    if n <= 64:
        return _hash_33_to_64(data)
    seed = 81
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    state = [(seed * _K2 + _word(data, 0)) & _MASK, y, z, 0, 0, 0, 0]
    end = (n - 1) // 64 * 64
    for at in range(0, end, 64):
        _block(data, at, state, _K1, last=False)
    mul = _K1 + ((state[2] & 0xFF) << 1)
    state[5] = (state[5] + ((n - 1) & 63)) & _MASK
    state[3] = (state[3] + state[5]) & _MASK
    state[5] = (state[5] + state[3]) & _MASK
    _block(data, n - 64, state, mul, last=True)
    x, y, z, v0, v1, w0, w1 = state
    first = (_mix_pair(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _MASK
    return _mix_pair(first, (_mix_pair(v1, w1, mul) + x) & _MASK, mul)


def _rotate_left(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (64 - shift))) & _MASK


def siphash24(key0: int, key1: int, data: bytes) -> int:
    """SipHash-2-4 of `data` under the 128-bit key (key0, key1)."""
    v = [
        key0 ^ 0x736F6D6570736575,
        key1 ^ 0x646F72616E646F6D,
        key0 ^ 0x6C7967656E657261,
        key1 ^ 0x7465646279746573,
    ]

    def rounds(count: int) -> None:
        v0, v1, v2, v3 = v
        for _ in range(count):
            v0 = (v0 + v1) & _MASK
            v1 = _rotate_left(v1, 13) ^ v0
            v0 = _rotate_left(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotate_left(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotate_left(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotate_left(v1, 17) ^ v2
            v2 = _rotate_left(v2, 32)
        v[:] = [v0, v1, v2, v3]

    full = len(data) - len(data) % 8
    words = [_word(data, at) for at in range(0, full, 8)]
    words.append(int.from_bytes(data[full:], "little") | ((len(data) & 0xFF) << 56))
    for m in words:
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def tf_hash64(data: bytes, seed: int = 0xDECAFCAFFE) -> int:
    """TF's Hash64 (tsl/platform/hash.cc): MurmurHash2-64 over little-endian words."""
    m = 0xC6A4A7935BD1E995
    n = len(data)
    h = (seed ^ (n * m)) & _MASK
    full = n - n % 8
    for at in range(0, full, 8):
        k = (_word(data, at) * m) & _MASK
        k ^= k >> 47
        h = ((h ^ ((k * m) & _MASK)) * m) & _MASK
    if n % 8:
        h = ((h ^ int.from_bytes(data[full:], "little")) * m) & _MASK
    h ^= h >> 47
    h = (h * m) & _MASK
    return h ^ (h >> 47)


def _buckets(x: np.ndarray, hash_function, num_buckets: int) -> np.ndarray:
    return np.array([hash_function(v) % num_buckets for v in x.reshape(-1)], dtype=np.int64).reshape(x.shape)


@register("StringToHashBucketFast")
def _string_to_hash_bucket_fast(node: TfNode, x):
    """StringToHashBucketFast: FarmHash Fingerprint64 modulo num_buckets."""
    return _buckets(x, fingerprint64, node.attr("num_buckets"))


@register("StringToHashBucketStrong")
def _string_to_hash_bucket_strong(node: TfNode, x):
    """StringToHashBucketStrong: SipHash-2-4 under the two-int `key`, modulo num_buckets."""
    key = node.attr("key")
    if len(key) != 2:
        raise ValueError("Key must have 2 elements")
    key0, key1 = (k & _MASK for k in key)
    return _buckets(x, lambda v: siphash24(key0, key1, v), node.attr("num_buckets"))


@register("StringToHashBucket")
def _string_to_hash_bucket(node: TfNode, x):
    """StringToHashBucket (deprecated tf.strings.to_hash_bucket): TF's Hash64 modulo num_buckets."""
    return _buckets(x, tf_hash64, node.attr("num_buckets"))


@register("Fingerprint")
def _fingerprint(node: TfNode, data, method):
    """Fingerprint (tf.fingerprint): farmhash64 of each row's little-endian bytes, 8 uint8 a row.

    A row of several strings hashes the concatenated fingerprints of its strings.
    """
    if method.ndim != 0:
        raise ValueError(f"`method` should be a scalar string: {shape_text(method.shape)}")
    if method[()] != b"farmhash64":
        raise ValueError(f"Unsupported fingerprint method: {shown(method[()])}")
    if data.ndim == 0:
        raise ValueError(f"`data` should have at least one dimension: {shape_text(data.shape)}")
    rows = data.reshape(data.shape[0], -1) if data.shape[0] else data.reshape(0, 0)
    if data.dtype == object:
        encoded = [
            row[0] if len(row) == 1 else b"".join(fingerprint64(s).to_bytes(8, "little") for s in row)
            for row in rows
        ]
    else:
        little = rows.astype(rows.dtype.newbyteorder("<"), copy=False)
        encoded = [row.tobytes() for row in little]
    hashes = [fingerprint64(v).to_bytes(8, "little") for v in encoded]
    return np.frombuffer(b"".join(hashes), dtype=np.uint8).reshape(len(hashes), 8).copy()

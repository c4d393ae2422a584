"""TF's stateless random ops, bit for bit: the same seed gives TF's numbers.

A seed pair becomes a Philox-4x32-10 key and counter by one Philox block of its own (under a fixed key,
the seed as counter: StatelessRandomGetKeyCounter). The V1 ops take the seed pair; the V2 ops take key,
counter and algorithm (1 Philox; 3, auto-select, is Philox on CPU; TF's CPU kernels refuse ThreeFry, 2).
The stream is pytflite's Philox (ops/random/philox.py), the one LiteRT's random builtins draw from.

Each distribution turns one block (four 32-bit words) into a fixed group of values and a tensor takes
groups in order, its last one cut short: uniform float32 / float16 / bfloat16 from 23 / 10 / 7 mantissa
bits of a word (4 a block), float64 from 20 + 32 bits of two (2 a block); normals by Box-Muller on word
pairs (float64: two words per uniform); integers by modulo of one word (64-bit: two). The truncated
normal rejects |x| >= 2, so its group of 4 (float64: 2) values takes a varying count of words: TF gives
group g its own stretch of the stream, starting 256 words per value past the start, to stay independent
of how threads split the tensor. Float functions in Box-Muller are the C library's, as TF's.
"""

from __future__ import annotations

import math

import numpy as np

from ...ops.quant.lut import c_float_function
from ...ops.random.philox import PhiloxStream, philox_words, uint32_pairs_to_unit_double, uint32_to_unit_float
from ..dtypes import BY_NAME
from ..node_def import TfNode
from ..registry import register
from .common import shape_text

_PHILOX, _AUTO_SELECT = 1, 3
_SEED_KEY = (0x3EC8F720, 0x02461E29)  # the key that scrambles a seed pair into key and counter
_SEED_TYPES = {"int32", "int64"}
_SHAPE_TYPES = {"int32", "int64"}
_FLOATS = {"float16", "bfloat16", "float32", "float64"}
_V1_FLOATS = {"float16", "float32", "float64"}
_INTS = {"int32", "int64"}
_FULL_INTS = {"int32", "int64", "uint32", "uint64"}
_TRUNCATE = 2.0
_WORDS_PER_VALUE_RESERVED = 256  # the truncated normal's stretch of words per value
_MASK32 = (1 << 32) - 1
_LOGF, _SINF, _COSF = (c_float_function(name) for name in ("logf", "sinf", "cosf"))
_LOG, _SIN, _COS = (np.frompyfunc(f, 1, 1) for f in (math.log, math.sin, math.cos))  # libm's doubles


# Streams: seed pair -> (key, counter) -> Philox stream.


def _seed_key_counter(seed: np.ndarray) -> tuple[tuple[int, int], int]:
    """The Philox key and 128-bit counter of a seed pair (each sign-extended to 64 bits)."""
    if seed.shape != (2,):
        raise ValueError(f"seed must have shape [2], not {shape_text(seed.shape)}")
    seed0, seed1 = (int(v) & ((1 << 64) - 1) for v in seed)
    mix = [int(w) for w in philox_words(_SEED_KEY, seed0 | seed1 << 64, 1)]
    return (mix[0], mix[1]), (mix[2] | mix[3] << 32) << 64


def _stream(key: tuple[int, int], counter: int) -> PhiloxStream:
    stream = PhiloxStream(key[0] | key[1] << 32, 0)
    stream.counter = counter
    return stream


def _v2_stream(key: np.ndarray, counter: np.ndarray, alg: np.ndarray):
    """The maker of a V2 op's stream, its inputs checked as TF checks them before the shape; the
    algorithm itself is refused only when there is something to draw."""
    if alg.ndim != 0:
        raise ValueError(f"input 3 (0-based) must have shape [], not {shape_text(alg.shape)}")
    algorithm = _PHILOX if int(alg) == _AUTO_SELECT else int(alg)
    if key.shape != (1,):
        raise ValueError(
            f"key must have shape [1], not {shape_text(key.shape)}. (Note that batched keys are not supported yet.)"
        )
    if counter.ndim != 1 or counter.shape[0] < algorithm:  # TF takes the id for the counter's length
        raise ValueError(
            f"counter must be a vector with length at least {algorithm}; got shape: {shape_text(counter.shape)}. "
            "(Note that batched counters are not supported yet.)"
        )

    def make() -> PhiloxStream:
        if algorithm != _PHILOX:
            raise ValueError(f"Unsupported algorithm id: {algorithm}")
        if counter.shape[0] < 2:  # TF would read past the counter's end
            raise ValueError(f"Philox needs a counter of 2 words; got shape: {shape_text(counter.shape)}")
        k, c = int(key[0]), [int(v) for v in counter[:2]]
        return _stream((k & _MASK32, k >> 32), c[0] | c[1] << 64)

    return make


def _output_shape(shape: np.ndarray) -> tuple[int, ...]:
    if shape.ndim != 1:
        raise ValueError(f"shape must be a vector of {{int32,int64}}, got shape {shape_text(shape.shape)}")
    for dim in shape:
        if dim < 0:
            raise ValueError(f"Dimension {int(dim)} must be >= 0")
    return tuple(int(d) for d in shape)


# Distributions: (stream, count) -> `count` values of the output dtype.


def _blocks(stream: PhiloxStream, count: int, per_block: int) -> np.ndarray:
    """The words of the ceil(count / per_block) blocks that `count` values take."""
    return stream.draw(-(-count // per_block))


def _unit_doubles(words: np.ndarray) -> np.ndarray:
    return uint32_pairs_to_unit_double(words[0::2], words[1::2])


def _to_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values as bfloat16 bits, rounded to nearest even (Eigen's conversion)."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(
        np.uint16
    )


def _from_float32(values: np.ndarray, dtype: str) -> np.ndarray:
    return _to_bfloat16(values) if dtype == "bfloat16" else values.astype(BY_NAME[dtype].numpy)


def _uniform(stream: PhiloxStream, count: int, dtype: str) -> np.ndarray:
    """uniform floats in [0, 1)

    float16 and bfloat16 take 10 and 7 mantissa bits from the low 16 bits of a word."""
    if dtype == "float64":
        return _unit_doubles(_blocks(stream, count, 2))[:count]
    words = _blocks(stream, count, 4)[:count]
    if dtype == "float32":
        return uint32_to_unit_float(words)
    bits = 10 if dtype == "float16" else 7
    fraction = (words & np.uint32((1 << bits) - 1)).astype(np.float32) / np.float32(1 << bits)
    return _from_float32(fraction, dtype)


def _box_muller_float(words: np.ndarray) -> np.ndarray:
    """Two float32 normals per word pair, in pair order: sin(v) * r, cos(v) * r."""
    u1 = np.maximum(uint32_to_unit_float(words[0::2]), np.float32(1e-7))
    v1 = (np.float64(2 * np.pi) * uint32_to_unit_float(words[1::2])).astype(np.float32)
    radius = np.sqrt(np.float32(-2) * _LOGF(u1))
    return np.stack((_SINF(v1) * radius, _COSF(v1) * radius), axis=1).reshape(-1)


def _box_muller_double(words: np.ndarray) -> np.ndarray:
    """Two float64 normals per four words: u1 from the first two, v from the last two."""
    u = _unit_doubles(words)
    u1 = np.maximum(u[0::2], 1e-7)
    v1 = 2 * np.pi * u[1::2]
    radius = np.sqrt(-2.0 * _LOG(u1).astype(np.float64))
    return np.stack((_SIN(v1).astype(np.float64) * radius, _COS(v1).astype(np.float64) * radius), 1).reshape(
        -1
    )


def _normal(stream: PhiloxStream, count: int, dtype: str) -> np.ndarray:
    """standard normals (Box-Muller)

    float16 and bfloat16 round float32's."""
    if dtype == "float64":
        return _box_muller_double(_blocks(stream, count, 2))[:count]
    return _from_float32(_box_muller_float(_blocks(stream, count, 4))[:count], dtype)


def _truncated_normal(stream: PhiloxStream, count: int, dtype: str) -> np.ndarray:
    """standard normals with |x| < 2

    Drawn group by group, each group from its own stretch of the stream."""
    double = dtype == "float64"
    group, box_muller = (2, _box_muller_double) if double else (4, _box_muller_float)
    groups, start, skip = -(-count // group), stream.counter, group * _WORDS_PER_VALUE_RESERVED // 4
    starts = [start + index * skip for index in range(groups)]
    # Two blocks (four candidates, float32 eight) nearly always hold a group: take its first accepted
    # ones at once; draw on, one group at a time, for the rare group that needs more.
    candidates = box_muller(np.concatenate([philox_words(stream.key, at, 2) for at in starts]))
    candidates = candidates.reshape(groups, -1)
    kept = np.abs(candidates) < _TRUNCATE
    first = np.argsort(~kept, axis=1, kind="stable")[:, :group]
    values = np.take_along_axis(candidates, first, axis=1)
    for index in np.flatnonzero(kept.sum(axis=1) < group):
        stream.counter = starts[index]
        accepted = np.empty(0, candidates.dtype)
        while accepted.size < group:
            more = box_muller(stream.draw(2))
            accepted = np.concatenate((accepted, more[np.abs(more) < _TRUNCATE]))
        values[index] = accepted[:group]
    flat = values.reshape(-1)[:count]
    return flat if double else _from_float32(flat, dtype)


def _words64(words: np.ndarray) -> np.ndarray:
    return words[0::2].astype(np.uint64) | words[1::2].astype(np.uint64) << np.uint64(32)


def _full_int(stream: PhiloxStream, count: int, dtype: str) -> np.ndarray:
    """integers over the whole range of the type

    One word each, two for 64-bit types."""
    if dtype in ("int64", "uint64"):
        return _words64(_blocks(stream, count, 2))[:count].view(dtype)
    return _blocks(stream, count, 4)[:count].view(dtype)


def _uniform_int(stream: PhiloxStream, count: int, dtype: str, low: int, high: int) -> np.ndarray:
    """integers in [minval, maxval)

    low + bits % (high - low), wrapping as TF's unsigned arithmetic does."""
    if dtype == "int64":
        bits, width = _words64(_blocks(stream, count, 2))[:count], 64
    else:
        bits, width = _blocks(stream, count, 4)[:count].astype(np.uint64), 32
    mask = (1 << width) - 1
    span = np.uint64((high - low) & mask)
    result = (bits % span + np.uint64(low & mask)) & np.uint64(mask)
    return result.astype(np.uint64 if width == 64 else np.uint32).view(dtype)


def _fill(dtype: str, shape: tuple[int, ...], make_stream, distribution, bounds=()) -> np.ndarray:
    """A tensor of `shape` drawn by `distribution`; nothing is drawn (nor the bounds or the algorithm
    checked) for an empty one, as in TF."""
    count = math.prod(shape)
    if count == 0:
        return np.zeros(shape, BY_NAME[dtype].numpy)
    limits = _int_bounds(*bounds) if bounds else ()
    return distribution(make_stream(), count, dtype, *limits).reshape(shape)


def _int_bounds(minval: np.ndarray, maxval: np.ndarray) -> tuple[int, int]:
    for name, value in (("minval", minval), ("maxval", maxval)):
        if value.ndim != 0:
            raise ValueError(f"{name} must be 0-D, got shape {shape_text(value.shape)}")
    low, high = int(minval), int(maxval)
    if low >= high:
        raise ValueError(f"Need minval < maxval, got {low} >= {high}")
    return low, high


# The ops.


def _register(op: str, distribution, dtypes) -> None:
    """The V1 op (shape, seed[, minval, maxval]) and, named op + "V2", the V2 op (shape, key, counter,
    alg[, minval, maxval])."""
    line = distribution.__doc__.splitlines()[0]

    def v1(node: TfNode, shape, seed, *bounds):
        dims = _output_shape(shape)
        key, counter = _seed_key_counter(seed)
        return _fill(node.attr("dtype").name, dims, lambda: _stream(key, counter), distribution, bounds)

    def v2(node: TfNode, shape, key, counter, alg, *bounds):
        make_stream = _v2_stream(key, counter, alg)
        return _fill(node.attr("dtype").name, _output_shape(shape), make_stream, distribution, bounds)

    v1.__doc__, v2.__doc__ = (
        f"{op}: {line}, from a seed pair.",
        f"{op}V2: {line}, from key, counter and algorithm.",
    )
    register(
        op,
        v1,
        types={"dtype": _V1_FLOATS if dtypes == _FLOATS else dtypes, "T": _SHAPE_TYPES, "Tseed": _SEED_TYPES},
    )
    register(op + "V2", v2, types={"dtype": dtypes, "Tshape": _SHAPE_TYPES})


_register("StatelessRandomUniform", _uniform, _FLOATS)
_register("StatelessRandomNormal", _normal, _FLOATS)
_register("StatelessTruncatedNormal", _truncated_normal, _FLOATS)
_register("StatelessRandomUniformInt", _uniform_int, _INTS)
_register("StatelessRandomUniformFullInt", _full_int, _FULL_INTS)


def _key_counter_outputs(seed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    (k0, k1), counter = _seed_key_counter(seed)
    key = np.array([k0 | k1 << 32], np.uint64)
    return key, np.array([counter & ((1 << 64) - 1), counter >> 64], np.uint64)


@register("StatelessRandomGetKeyCounter", types={"Tseed": _SEED_TYPES})
def _get_key_counter(node: TfNode, seed):
    """StatelessRandomGetKeyCounter: the Philox key and counter of a seed pair."""
    return _key_counter_outputs(seed)


@register("StatelessRandomGetKeyCounterAlg", types={"Tseed": _SEED_TYPES})
def _get_key_counter_alg(node: TfNode, seed):
    """StatelessRandomGetKeyCounterAlg: the key and counter of a seed pair, and Philox's id."""
    return (*_key_counter_outputs(seed), np.array(_PHILOX, np.int32))


@register("StatelessRandomGetAlg")
def _get_alg(node: TfNode):
    """StatelessRandomGetAlg: the algorithm CPU kernels use, Philox (1)."""
    return np.array(_PHILOX, np.int32)


def _as_float(values: np.ndarray, dtype: str) -> np.ndarray:
    """An input's values as NumPy floats (bfloat16 arrives as its bits)."""
    if dtype == "bfloat16":
        return (values.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return values


@register(
    "StatelessMultinomial",
    types={"T": _FLOATS, "Tseed": _SEED_TYPES, "output_dtype": {"int32", "int64"}},
)
def _multinomial(node: TfNode, logits, num_samples, seed):
    """StatelessMultinomial: per row, num_samples classes drawn with probability softmax(logits).

    Each sample is the first class whose running sum of exp(logit - max) (double, finite logits only)
    exceeds u * total, u a double from two words; the rows draw one after another from one stream, as
    TF's CPU kernel does while it runs them in one thread (as it does for small inputs: larger ones it
    splits among threads, each starting its rows at its own place in the stream)."""
    stream = _stream(*_seed_key_counter(seed))
    if logits.ndim != 2:
        raise ValueError(f"logits should be a matrix, got shape {shape_text(logits.shape)}")
    if num_samples.ndim != 0:
        raise ValueError(f"num_samples should be a scalar, got shape {shape_text(num_samples.shape)}")
    count = int(num_samples)
    if count < 0:
        raise ValueError(f"num_samples should be nonnegative, got {count}")
    batch, classes = logits.shape
    if classes == 0:
        raise ValueError(f"num_classes should be positive, got {classes}")
    output = node.attr("output_dtype").numpy
    if batch * count == 0:
        return np.zeros((batch, count), output)
    values = _as_float(logits, node.attr("T").name)
    finite = np.isfinite(values)
    peak = np.max(np.where(finite, values, np.finfo(values.dtype).min), axis=1, keepdims=True)
    weights = np.where(finite, np.exp(values.astype(np.float64) - peak.astype(np.float64)), 0.0)
    cdf = np.cumsum(weights, axis=1)  # sequential sums, as TF's running total
    targets = _unit_doubles(_blocks(stream, 2 * batch * count, 4))[: batch * count].reshape(batch, count)
    targets *= cdf[:, -1:]
    samples = [np.searchsorted(row, wanted, side="right") for row, wanted in zip(cdf, targets, strict=True)]
    return np.stack(samples).astype(output)

"""Lookup tables of quantized elementwise functions, built exactly as TFLite's LUTPopulate builds them.

An 8-bit table holds the function's quantized result for each of the 256 inputs: dequantize in float32,
apply the float function, scale by float32(1 / output_scale), round half away from zero, add the zero
point and clamp. A 16-bit table has 513 entries sampling the input range at 512 steps, each nudged by
half the interpolation error at its step's midpoint; `lookup_16bit` interpolates between entries on the
input's top 9 bits with its low 7 bits.

The float functions are TFLite's, evaluated the way its C++ evaluates them: float32 arithmetic, and the
C library's float functions (expf, tanhf, expm1f, erfcf, logf). Those are called from the platform's C
math library through ctypes (a few hundred calls per table, at prepare); NumPy's float32 exp and tanh, or
float64 results rounded to float32, differ from glibc's in the last bit for a few percent of arguments,
which moves a table entry whenever the scaled value lies near a rounding boundary. Without a loadable C
math library (or without ctypes, which is loaded only here, when a first table is built), the float64
functions rounded to float32 stand in.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ...fidelity.arithmetic import float_to_int32
from .fixed_point import round_half_away, wrap

FloatFunction = Callable[[np.ndarray], np.ndarray]


@functools.cache
def _libm():
    """ctypes and the C math library; where none can be found by name (Pyodide links it into the
    interpreter itself), the process's own symbols. None without either."""
    try:
        import ctypes
        import ctypes.util
    except ImportError:  # a Python built without ctypes
        return None
    for path in (ctypes.util.find_library("m"), ctypes.util.find_library("c"), None):
        try:
            library = ctypes.CDLL(path)
        except (OSError, TypeError):  # TypeError: Windows has no process-wide handle
            continue
        if hasattr(library, "expf"):
            return ctypes, library
    return None


def c_float_function(name: str) -> FloatFunction:
    """The C library's float function `name` (e.g. "tanhf") over a float32 array."""
    loaded = _libm()
    function = None if loaded is None else getattr(loaded[1], name, None)
    if function is not None:
        ctypes = loaded[0]
        function.restype = ctypes.c_float
        function.argtypes = [ctypes.c_float]

        def apply(x: np.ndarray) -> np.ndarray:
            flat = np.asarray(x, np.float32).reshape(-1)
            result = np.fromiter((function(v) for v in flat.tolist()), np.float32, flat.size)
            return result.reshape(np.shape(x))

        return apply
    double = _c_semantics(getattr(math, name[:-1]))

    def fallback(x: np.ndarray) -> np.ndarray:
        flat = np.asarray(x, np.float32).reshape(-1)
        result = np.fromiter((double(v) for v in flat.tolist()), np.float64, flat.size).astype(np.float32)
        return result.reshape(np.shape(x))

    return fallback


def _c_semantics(function: Callable[[float], float]) -> Callable[[float], float]:
    """A math-module function that overflows to infinity, as the C function does, instead of raising."""

    def call(v: float) -> float:
        try:
            return function(v)
        except OverflowError:  # (exp, expm1 of large values)
            return math.inf

    return call


def c_double_function(name: str) -> FloatFunction:
    """A double C math function over a float64 array (Python's math module calls the C library's)."""
    double = _c_semantics(getattr(math, name))
    return lambda x: np.fromiter(
        (double(v) for v in np.asarray(x, np.float64).reshape(-1).tolist()), np.float64
    ).reshape(np.shape(x))


expf = c_float_function("expf")
tanhf = c_float_function("tanhf")
expm1f = c_float_function("expm1f")
erfcf = c_float_function("erfcf")
logf = c_float_function("logf")


def every_value(dtype: np.dtype) -> np.ndarray:
    """Every value of an 8- or 16-bit integer type, in increasing order, as int64."""
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1, dtype=np.int64)


_UNSIGNED = {np.dtype(np.uint8): np.uint8, np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16}


def table_kernel(table_by_value: np.ndarray, dtype: np.dtype) -> Callable:
    """compute(x, out): out = table[x] for a table over every input value (indexed by value - min)."""
    dtype = np.dtype(dtype)
    # reordered so that the input's bits read as unsigned index it (as TFLite's int8 tables are)
    table = np.roll(np.asarray(table_by_value).astype(dtype), int(np.iinfo(dtype).min))
    unsigned = _UNSIGNED[dtype]

    def compute(x, out):
        np.take(table, x.view(unsigned), out=out, mode="clip")

    return compute


def populate_8bit(
    transform: FloatFunction,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
    dtype: np.dtype,
) -> np.ndarray:
    """TFLite's 256-entry table (LUTPopulate for int8/uint8), here indexed by input value - min."""
    info = np.iinfo(dtype)
    values = every_value(dtype)
    f32 = np.float32
    with np.errstate(all="ignore"):
        dequantized = f32(input_scale) * (values - input_zero_point).astype(np.float32)
        transformed = transform(dequantized)
        inverse_scale = f32(1) / f32(output_scale)
        rescaled = round_half_away(transformed * inverse_scale)
        # LiteRT's build clamps values beyond int32 to the type's range (the compiler folds the clamp
        # into the conversion); NaN still converts to INT32_MIN, hence the type's minimum
        # x86's conversion for every host: only a NaN tells them apart here (docs/fidelity.md)
        quantized = float_to_int32(rescaled + f32(output_zero_point), saturate=True, x86=True)
    return np.clip(quantized, info.min, info.max).astype(dtype)


def populate_16bit(
    transform: FloatFunction,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
    float_type: type = np.float32,
) -> np.ndarray:
    """TFLite's 513-entry int16 interpolation table (LUTPopulateInt16), computed in `float_type`."""
    t = float_type
    lowest, highest = -32768, 32767
    with np.errstate(all="ignore"):
        input_min = t(input_scale) * t(lowest - input_zero_point)
        input_max = t(input_scale) * t(highest - input_zero_point)
        output_min = t(output_scale) * t(lowest - output_zero_point)
        output_max = t(output_scale) * t(highest - output_zero_point)
        step = (input_max - input_min) / t(512)
        half_step = step / t(2)
        scaling = t(65536) / (output_max - output_min)
        steps = np.arange(512).astype(t)
        start = input_min + steps * step
        value = transform(start)
        midpoint = transform(start + half_step)
        following = transform(input_min + (steps + t(1)) * step)
        sample = round_half_away(value * scaling)
        interpolated = round_half_away((following * scaling + sample) / t(2))
        midpoint_error = interpolated - round_half_away(midpoint * scaling)
        bias = round_half_away(midpoint_error / t(2))
        last = round_half_away(transform(np.array([input_max], t)) * scaling)
        samples = np.concatenate([sample - bias, last])
        # std::min(std::max(v, lowest), highest) lets NaN through, and the int16 cast makes it 0
        clamped = np.where(samples < t(lowest), t(lowest), samples)
        clamped = np.where(t(highest) < clamped, t(highest), clamped)
    return wrap(float_to_int32(clamped, x86=True), 16)  # a NaN ends as 0 on every host after the wrap


def lookup_16bit(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """TFLite's LUTLookup for int16: interpolate `table` (513 entries) at int16 `values`."""
    values = np.asarray(values, np.int64)
    index = 256 + (values >> 7)
    offset = values & 0x7F
    base = table[index]
    slope = wrap(table[index + 1] - base, 16)
    return wrap(base + ((slope * offset + 64) >> 7), 16)


def int16_table(
    transform: FloatFunction,
    input_scale: float,
    input_zero_point: int,
    output_scale: float,
    output_zero_point: int,
) -> np.ndarray:
    """The int16 result of TFLite's interpolated lookup for every int16 input, as a table by value."""
    table = populate_16bit(transform, input_scale, input_zero_point, output_scale, output_zero_point)
    return lookup_16bit(every_value(np.int16), table)


# TFLite's sigmoid(i / 24) table in unsigned Q0.16 (common.h's sigmoid_table_uint16), which its int16
# LOGISTIC and TANH interpolate. It is round(65536 * sigmoid(i / 24)), capped at 65535, except at the
# entries listed below, which are one above that.
_SIGMOID_ONE_ABOVE = [
    int(i)
    for i in "4 8 12 14 15 16 17 19 20 21 22 25 27 28 29 30 31 33 34 35 37 39 40 41 43 44 45 46 49 50 "
    "54 62 63 64 66 82 86 93 100 103 112 116 135 255".split()
]


def _sigmoid_table() -> np.ndarray:
    table = np.array([min(round(65536 / (1 + math.exp(-i / 24))), 65535) for i in range(256)], np.int64)
    table[_SIGMOID_ONE_ABOVE] += 1
    return table


SIGMOID_TABLE_UINT16 = _sigmoid_table()

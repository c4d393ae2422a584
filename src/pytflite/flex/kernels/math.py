"""TF's elementwise arithmetic, comparisons, casts, selection and reductions, on any dtype TF computes
them in (float64, int64, complex...: the types TFLite's builtins lack).

Broadcasting is NumPy's, which is TF's (BCast). Integers wrap as TF's do (two's complement); an integer
division or modulo by zero is refused, as TF refuses it. Float functions are NumPy's: TF's come from
Eigen (its own exp, log, tanh, logistic and erf approximations for float32; the C library's for float64),
so results agree to within a few ulps, not bit for bit (docs/flex.md).
"""

from __future__ import annotations

import math as _math

import numpy as np

from ..dtypes import COMPLEX, FLOATS, INTEGERS, NUMBERS, REAL
from ..node_def import TfNode
from ..registry import register

_INEXACT = FLOATS | COMPLEX


def _same_type(result: np.ndarray, like: np.ndarray) -> np.ndarray:
    """NumPy promotes some mixed scalars (an int32 op int32 stays int32, float16 math may widen): TF's
    result has its input's type."""
    return np.asarray(result).astype(like.dtype, copy=False)


def _binary(op: str, function, types=NUMBERS) -> None:
    def compute(node: TfNode, x, y):
        return _same_type(function(x, y), x)

    compute.__doc__ = f"{op}: elementwise, broadcast."
    register(op, compute, types={"T": types})


def _unary(op: str, function, types=NUMBERS) -> None:
    def compute(node: TfNode, x):
        return _same_type(function(x), x)

    compute.__doc__ = f"{op}: elementwise."
    register(op, compute, types={"T": types})


def _integer_divisor(y: np.ndarray) -> None:
    if y.dtype.kind in "iu" and not np.all(y):
        raise ValueError("Integer division by zero")


def _div(x, y):
    """C's division: integers truncate toward zero."""
    if x.dtype.kind in "iu":
        _integer_divisor(y)
        quotient = np.floor_divide(x, y)
        remainder = np.remainder(x, y)
        return quotient + ((remainder != 0) & ((x < 0) != (y < 0))).astype(x.dtype)
    return np.divide(x, y)


def _floor_div(x, y):
    if x.dtype.kind in "iu":
        _integer_divisor(y)
        return np.floor_divide(x, y)
    return np.floor(np.divide(x, y))


def _floor_mod(x, y):
    if x.dtype.kind in "iu":
        _integer_divisor(y)
    return np.mod(x, y)


def _truncate_mod(x, y):
    if x.dtype.kind in "iu":
        _integer_divisor(y)
    return np.fmod(x, y)


def _pow(x, y):
    if x.dtype.kind in "iu" and np.any(y < 0):
        raise ValueError("Integers to negative integer powers are not allowed")
    return np.power(x, y)


def _add(node: TfNode, x, y):
    """Add / AddV2: elementwise sum, broadcast; strings concatenate (Add)."""
    if x.dtype == object:
        return np.frompyfunc(lambda a, b: a + b, 2, 1)(x, y).astype(object)
    return _same_type(np.add(x, y), x)


register("AddV2", _add, types={"T": NUMBERS})
register("Add", _add, types={"T": NUMBERS | {"string"}})
_binary("Sub", np.subtract)
_binary("Mul", np.multiply)
_binary("RealDiv", np.divide, _INEXACT)
_binary("Div", _div)
_binary("FloorDiv", _floor_div, REAL)
_binary("FloorMod", _floor_mod, REAL)
_binary("TruncateDiv", _div, INTEGERS)
_binary("TruncateMod", _truncate_mod, REAL)
_binary("Minimum", np.minimum, REAL)
_binary("Maximum", np.maximum, REAL)
_binary("Pow", _pow)
_binary(
    "SquaredDifference", lambda x, y: np.square(np.abs(x - y)) if x.dtype.kind == "c" else np.square(x - y)
)
_binary("Atan2", np.arctan2, FLOATS)
_binary("DivNoNan", lambda x, y: np.where(y == 0, 0, np.divide(x, np.where(y == 0, 1, y))), _INEXACT)
_binary("MulNoNan", lambda x, y: np.where(y == 0, 0, x * y), _INEXACT)
_binary("Xdivy", lambda x, y: np.where(x == 0, 0, np.divide(x, y)), _INEXACT)
_binary("Xlogy", lambda x, y: np.where(x == 0, 0, x * np.log(y)), _INEXACT)
_binary("BitwiseAnd", np.bitwise_and, INTEGERS)
_binary("BitwiseOr", np.bitwise_or, INTEGERS)
_binary("BitwiseXor", np.bitwise_xor, INTEGERS)
_binary("LeftShift", np.left_shift, INTEGERS)
_binary("RightShift", np.right_shift, INTEGERS)


def _logical(op: str, function) -> None:
    def compute(node: TfNode, x, y):
        return function(x, y)

    compute.__doc__ = f"{op}: elementwise on bools, broadcast."
    register(op, compute)


_logical("LogicalAnd", np.logical_and)
_logical("LogicalOr", np.logical_or)


@register("LogicalNot")
def _logical_not(node: TfNode, x):
    """LogicalNot: elementwise on bools."""
    return np.logical_not(x)


def _vectorized(function):
    """A math-module function elementwise (its C library result, as TF's float64 kernels)."""
    each = np.frompyfunc(function, 1, 1)
    return lambda x: each(x).astype(x.dtype) if x.size else x.copy()


def _sigmoid(x):
    if x.dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def _rsqrt(x):
    return 1 / np.sqrt(x)


_unary("Neg", np.negative)
_unary("Abs", np.abs, REAL)
_unary("Square", np.square)
_unary("Sqrt", np.sqrt, _INEXACT)
_unary("Rsqrt", _rsqrt, _INEXACT)
_unary("Reciprocal", lambda x: 1 / x, _INEXACT)
_unary("Inv", lambda x: 1 / x, _INEXACT)
_unary("Exp", np.exp, _INEXACT)
_unary("Expm1", np.expm1, _INEXACT)
_unary("Log", np.log, _INEXACT)
_unary("Log1p", np.log1p, _INEXACT)
_unary("Sin", np.sin, _INEXACT)
_unary("Cos", np.cos, _INEXACT)
_unary("Tan", np.tan, _INEXACT)
_unary("Asin", np.arcsin, _INEXACT)
_unary("Acos", np.arccos, _INEXACT)
_unary("Atan", np.arctan, _INEXACT)
_unary("Sinh", np.sinh, _INEXACT)
_unary("Cosh", np.cosh, _INEXACT)
_unary("Asinh", np.arcsinh, _INEXACT)
_unary("Acosh", np.arccosh, _INEXACT)
_unary("Atanh", np.arctanh, _INEXACT)
_unary("Tanh", np.tanh, _INEXACT)
_unary("Sigmoid", _sigmoid, _INEXACT)
_unary("Erf", _vectorized(_math.erf), FLOATS)
_unary("Erfc", _vectorized(_math.erfc), FLOATS)
_unary("Lgamma", _vectorized(_math.lgamma), FLOATS)
_unary("Floor", np.floor, FLOATS)
_unary("Ceil", np.ceil, FLOATS)
_unary("Round", np.round, REAL)  # half to even, as TF
_unary("Rint", np.rint, FLOATS)
_unary("Sign", np.sign)
_unary("Softplus", lambda x: np.logaddexp(0, x), FLOATS)
_unary("Softsign", lambda x: x / (1 + np.abs(x)), FLOATS)
_unary("Relu", lambda x: np.maximum(x, 0), REAL)
_unary("Relu6", lambda x: np.clip(x, 0, 6), REAL)
_unary("Elu", lambda x: np.where(x < 0, np.expm1(np.minimum(x, 0)), x), FLOATS)
_unary("Invert", np.invert, INTEGERS)
_unary("OnesLike", np.ones_like)
_unary("ZerosLike", np.zeros_like)


@register("Selu", types={"T": FLOATS})
def _selu(node: TfNode, x):
    """Selu: scale * (x if x > 0 else alpha * (exp(x) - 1)), TF's constants."""
    scale, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    negative = (alpha * scale) * np.expm1(np.minimum(x, 0))
    return _same_type(np.where(x > 0, scale * x, negative), x)


@register("LeakyRelu", types={"T": FLOATS})
def _leaky_relu(node: TfNode, x):
    """LeakyRelu: x where positive, alpha * x elsewhere."""
    alpha = node.attr("alpha", 0.2)
    return _same_type(np.where(x > 0, x, x * x.dtype.type(alpha)), x)


def _predicate(op: str, function, types=REAL) -> None:
    def compute(node: TfNode, x):
        return function(x)

    compute.__doc__ = f"{op}: an elementwise test, as bools."
    register(op, compute, types={"T": types})


_predicate("IsNan", np.isnan, FLOATS)
_predicate("IsInf", np.isinf, FLOATS)
_predicate("IsFinite", np.isfinite, FLOATS)


def _compare(op: str, function, types) -> None:
    def compute(node: TfNode, x, y):
        if not node.attr("incompatible_shape_error", True):
            try:
                np.broadcast_shapes(x.shape, y.shape)
            except ValueError:  # TF then answers "not equal" as one value
                return np.asarray(op == "NotEqual")
        return np.asarray(function(x, y))

    compute.__doc__ = f"{op}: elementwise comparison, broadcast."
    register(op, compute, types={"T": types})


_compare("Less", np.less, REAL)
_compare("LessEqual", np.less_equal, REAL)
_compare("Greater", np.greater, REAL)
_compare("GreaterEqual", np.greater_equal, REAL)
_compare("Equal", np.equal, NUMBERS | {"string", "bool"})
_compare("NotEqual", np.not_equal, NUMBERS | {"string", "bool"})


@register("ApproximateEqual", types={"T": NUMBERS})
def _approximate_equal(node: TfNode, x, y):
    """ApproximateEqual: |x - y| < tolerance, elementwise."""
    return np.abs(x - y) < node.attr("tolerance", 1e-5)


@register("Cast", types={"SrcT": NUMBERS | {"bool"}, "DstT": NUMBERS | {"bool"}})
def _cast(node: TfNode, x):
    """Cast: C's conversion (floats truncate toward zero into integers; complex to real keeps the real
    part; anything to bool is `!= 0`)."""
    target = node.attr("DstT").numpy
    if target == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and target.kind != "c":
        x = x.real
    with np.errstate(invalid="ignore"):
        return x.astype(target)


@register("Select")
def _select(node: TfNode, condition, x, y):
    """Select: a condition of x's shape picks elementwise; a vector condition picks x's rows."""
    if condition.ndim == 1 and x.ndim > 1:
        condition = condition.reshape((-1,) + (1,) * (x.ndim - 1))
    elif condition.shape != x.shape and condition.ndim:
        raise ValueError(f"Select: condition of shape {list(condition.shape)} for inputs of {list(x.shape)}")
    return np.where(condition, x, y).astype(x.dtype, copy=False)


@register("SelectV2")
def _select_v2(node: TfNode, condition, x, y):
    """SelectV2: np.where, everything broadcast."""
    return np.where(condition, x, y).astype(x.dtype, copy=False)


def _axes(axis: np.ndarray, rank: int) -> tuple[int, ...]:
    axes = tuple(int(a) for a in np.atleast_1d(axis))
    for a in axes:
        if not -rank <= a < max(rank, 1):
            raise ValueError(f"Invalid reduction dimension ({a} for input with {rank} dimension(s)")
    return tuple(sorted({a % rank for a in axes})) if rank else ()


def _reduction(op: str, function, types) -> None:
    def compute(node: TfNode, x, axis):
        axes = _axes(axis, x.ndim)
        result = function(x, axes)
        if node.attr("keep_dims", False):
            result = np.expand_dims(result, axes) if axes else result
        return np.asarray(result).astype(x.dtype, copy=False)

    compute.__doc__ = f"{op}: reduction over the axes of its second input (keep_dims)."
    register(op, compute, types={"T": types})


def _mean(x, axes):
    if x.dtype.kind in "iu":  # an integer mean: the wrapped sum divided with truncation, as TF
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
        total = np.sum(x, axis=axes, dtype=x.dtype)
        return _div(np.asarray(total), np.asarray(count, dtype=x.dtype)) if count else total
    return np.mean(x, axis=axes)


def _extreme(function, initial_of):
    def reduce(x, axes):
        return function(x, axis=axes, initial=initial_of(x.dtype)) if x.size == 0 else function(x, axis=axes)

    return reduce


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min if dtype.kind in "iu" else False


def _highest(dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max if dtype.kind in "iu" else True


_reduction("Sum", lambda x, axes: np.sum(x, axis=axes, dtype=x.dtype), NUMBERS)
_reduction("Prod", lambda x, axes: np.prod(x, axis=axes, dtype=x.dtype), NUMBERS)
_reduction("Mean", _mean, NUMBERS)
_reduction("Max", _extreme(np.max, _lowest), REAL)
_reduction("Min", _extreme(np.min, _highest), REAL)
_reduction("All", lambda x, axes: np.all(x, axis=axes), {"bool"})
_reduction("Any", lambda x, axes: np.any(x, axis=axes), {"bool"})


def _arg_reduction(op: str, function) -> None:
    def compute(node: TfNode, x, axis):
        if x.shape[int(axis) % max(x.ndim, 1)] == 0:
            raise ValueError(f"{op}: reduction axis has no elements")
        return function(x, axis=int(axis)).astype(node.attr("output_type").numpy)

    compute.__doc__ = f"{op}: index of the first extreme element along an axis."
    register(op, compute, types={"T": REAL})


_arg_reduction("ArgMax", np.argmax)
_arg_reduction("ArgMin", np.argmin)


def _scan(op: str, function) -> None:
    def compute(node: TfNode, x, axis):
        axis = int(axis) % max(x.ndim, 1)
        if node.attr("reverse", False):
            x = np.flip(x, axis)
        result = function(x, axis=axis, dtype=x.dtype)
        if node.attr("exclusive", False):
            identity = np.zeros_like if op == "Cumsum" else np.ones_like
            head = identity(np.take(result, [0], axis=axis))
            result = np.concatenate([head, np.take(result, range(x.shape[axis] - 1), axis=axis)], axis=axis)
        return np.flip(result, axis) if node.attr("reverse", False) else result

    compute.__doc__ = f"{op}: running {'sum' if op == 'Cumsum' else 'product'} along an axis."
    register(op, compute, types={"T": NUMBERS})


_scan("Cumsum", np.cumsum)
_scan("Cumprod", np.cumprod)


@register("AddN", types={"T": NUMBERS})
def _add_n(node: TfNode, *inputs):
    """AddN: the sum of its inputs, in order."""
    total = inputs[0].copy()
    for value in inputs[1:]:
        total = total + value
    return _same_type(total, inputs[0])

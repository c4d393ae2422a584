"""MAXIMUM and MINIMUM, with TFLite's handling of NaN."""

from __future__ import annotations

import numpy as np

from ...core.types import BuiltinOperator
from ...errors import ensure_type
from .binary import BinaryOp, register_binary
from .common import T, binary_tensors, output_shape
from .widened import widened_ufunc

_MIN_MAX_TYPES = (T.FLOAT32, T.FLOAT16, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64)


def _min_max_prepare(op_name: str, propagating: np.ufunc, ignoring: np.ufunc):
    """TFLite picks `a > b ? a : b` (MAXIMUM): NaN in a gives b, NaN in b gives NaN. np.fmax gives that
    when b has no NaN, np.maximum when a has none; otherwise maximum(fmax(a, b), b). Quantized inputs
    are compared raw, as TFLite does (it never rescales here)."""

    def prepare(context, node):
        first, second, output = binary_tensors(context, node, op_name)
        ensure_type(first, _MIN_MAX_TYPES, "input", op_name)
        context.resize_tensor(output, output_shape(first, second, op_name))
        if first.dtype.kind != "f":
            ufunc = propagating
        elif second.is_constant_or_persistent and not np.isnan(second.data).any():
            ufunc = ignoring
        elif first.is_constant_or_persistent and not np.isnan(first.data).any():
            ufunc = propagating
        else:  # NaN in b: the second call makes it NaN again; ties (signed zeros) give b as in TFLite

            def ufunc(a, b, out):
                ignoring(a, b, out=out)
                propagating(out, b, out=out)

        return BinaryOp(
            widened_ufunc(ufunc, first, second, output.shape) if isinstance(ufunc, np.ufunc) else ufunc,
            elementwise=True,
        )

    return prepare


register_binary(
    BuiltinOperator.MAXIMUM, (1, 4), _MIN_MAX_TYPES, _min_max_prepare("MAXIMUM", np.maximum, np.fmax)
)
register_binary(
    BuiltinOperator.MINIMUM, (1, 4), _MIN_MAX_TYPES, _min_max_prepare("MINIMUM", np.minimum, np.fmin)
)

"""What LEAKY_RELU and PRELU share: the cheapest exact float32 computation for their alpha, the op data
and the invoke."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..common import clip
from .common import INF, MINUS_INF, ZERO

# x where x > 0 (LEAKY_RELU) / x >= 0 (PRELU), else alpha * x. With 0 < alpha <= 1 that is
# max(x, alpha*x), with alpha >= 1 min(x, alpha*x); with any finite alpha max(x, 0) + alpha*min(x, 0)
# (exact: one of the two terms is 0). Only a NaN or infinite alpha needs an elementwise select.


def _scaled_pick(pick: np.ufunc) -> Callable:
    def compute(x, alpha, out):
        np.multiply(x, alpha, out=out)
        pick(out, x, out=out)

    return compute


def _split_scale(x, alpha, out):
    clip(x, MINUS_INF, ZERO, out=out)
    out *= alpha
    out += clip(x, ZERO, INF)


def select_above(x, alpha, out):
    np.multiply(x, alpha, out=out)
    np.copyto(out, x, where=x > ZERO)


def select_at_or_above(x, alpha, out):
    np.multiply(x, alpha, out=out)
    np.copyto(out, x, where=x >= ZERO)


def alpha_compute(alpha: np.ndarray | None, select: Callable) -> Callable:
    """The cheapest exact computation for these alpha values (None: not known before invoke)."""
    if alpha is None or alpha.size == 0 or not np.isfinite(alpha).all():
        return select
    if ((alpha > 0) & (alpha <= 1)).all():
        return _scaled_pick(np.maximum)
    if (alpha >= 1).all():
        return _scaled_pick(np.minimum)
    return _split_scale


@dataclass(frozen=True)
class AlphaData:
    alpha: np.ndarray | None  # the alpha operand, when known in prepare; None: PRELU's input 1 at invoke
    compute: Callable[[np.ndarray, np.ndarray, np.ndarray], None]


def alpha_invoke(context, node):
    """LEAKY_RELU and PRELU."""
    tensors = context.tensors
    data = node.user_data
    alpha = data.alpha
    if alpha is None:
        alpha = tensors[node.inputs[1]].data
    data.compute(tensors[node.inputs[0]].data, alpha, tensors[node.outputs[0]].data)

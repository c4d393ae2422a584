"""get_tensor_details() lists the temporaries LiteRT's reduction kernels add, as LiteRT does: four per
node, the axes, accumulator and dimensions listed once prepare or Eval sized them; none for the nodes
XNNPACK takes under the default resolver."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel
from tests.tensor_listing import RESOLVERS, assert_listed_as_litert

pytestmark = requires_litert

X = np.linspace(-2, 2, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
CASES = [
    (Op.MEAN, X),
    (Op.SUM, X),
    (Op.SUM, (X * 10).astype(np.int32)),
    (Op.REDUCE_PROD, X),
    (Op.REDUCE_MAX, X),
    (Op.REDUCE_MIN, (X * 10).astype(np.int64)),
    (Op.REDUCE_ANY, X > 0),
]


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("constant_axes", [True, False], ids=["constant-axes", "computed-axes"])
@pytest.mark.parametrize(("op", "x"), CASES, ids=[f"{op.name}-{x.dtype}" for op, x in CASES])
def test_reduction_temporaries_as_litert(op, x, constant_axes, resolver):
    axes = np.array([0, 2], np.int32) if x.dtype != np.int32 else np.array(1, np.int32)
    model, feeds = SingleOpModel(
        op,
        [Operand(x), Operand(axes, constant=constant_axes)],
        [
            T.BOOL
            if x.dtype == np.bool_
            else {np.float32: T.FLOAT32, np.int32: T.INT32, np.int64: T.INT64}[x.dtype.type]
        ],
        {"keep_dims": op == Op.SUM},
        version=1,
    ).build()
    assert_listed_as_litert(model, resolver)
    assert_listed_as_litert(model, resolver, inputs=feeds)

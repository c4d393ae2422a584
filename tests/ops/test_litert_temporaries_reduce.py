"""get_tensor_details() lists the temporaries LiteRT's reduction kernels add, as LiteRT does: four per
node, the axes, accumulator and dimensions listed once prepare or Eval sized them; none for the nodes
XNNPACK takes under the default resolver."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.tensor_listing import temporaries
from pytflite.tensor_listing.rules import TemporaryRules
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


def mean_model() -> tuple[bytes, list]:
    """MEAN of X over axes 0 and 2: four temporaries under LiteRT's builtin kernels."""
    return SingleOpModel(
        Op.MEAN,
        [Operand(X), Operand(np.array([0, 2], np.int32), constant=True)],
        [T.FLOAT32],
        {"keep_dims": False},
    ).build()


def test_a_rule_that_fails_lists_less_and_never_fails_the_model(caplog, monkeypatch):
    """The listing is a view: a rule raising on a node it did not foresee leaves that node's temporaries
    out, with a warning on the "pytflite" logger naming the node, and the model allocates and runs as
    before (a log record, so that not even -W error turns it into a failure)."""

    def broken(context, node, op, kernels):
        raise IndexError("no such input")

    rules_for = temporaries.rules_for
    monkeypatch.setattr(
        temporaries, "rules_for", lambda op: TemporaryRules(broken) if op == Op.MEAN else rules_for(op)
    )
    model, feeds = mean_model()
    interpreter = pytflite.Interpreter(
        model_content=model,
        experimental_op_resolver_type=pytflite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        interpreter.allocate_tensors()
    assert "node 0 (MEAN): IndexError: no such input" in caplog.text
    assert [d["index"] for d in interpreter.get_tensor_details()] == [0, 1, 2]
    interpreter.set_tensor(0, feeds[0])
    interpreter.invoke()
    np.testing.assert_allclose(interpreter.get_tensor(2), X.mean(axis=(0, 2)), rtol=1e-6)


def test_the_listing_can_be_switched_off():
    """With experimental_list_litert_temporaries=False no tensor stands for LiteRT's temporaries: the
    listing is the model's tensors, and the model runs as before."""
    model, feeds = mean_model()
    kernels = pytflite.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    listed, unlisted = (
        pytflite.Interpreter(
            model_content=model,
            experimental_op_resolver_type=kernels,
            experimental_list_litert_temporaries=on,
        )
        for on in (True, False)
    )
    for interpreter in (listed, unlisted):
        interpreter.allocate_tensors()
        interpreter.set_tensor(0, feeds[0])
        interpreter.invoke()
    assert len(listed.get_tensor_details()) > 3
    assert [d["index"] for d in unlisted.get_tensor_details()] == [0, 1, 2]
    assert unlisted.subgraphs[0].observer is None
    np.testing.assert_array_equal(unlisted.get_tensor(2), listed.get_tensor(2))

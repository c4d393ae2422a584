"""NumericVerify (a default custom op of LiteRT's BuiltinOpResolver, written by TensorFlow's
QuantizationDebugger) against LiteRT: differences bit for bit under both resolvers (the optimized and the
reference dequantization), the mismatch failure and its text, the statistics report, a constant input
dequantized once, and the tensor listing with its temporary."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder
from tests.oracle import litert, requires_litert, run
from tests.tensor_listing import RESOLVERS, assert_listed_as_litert

pytestmark = requires_litert

SHAPE = (2, 13)
TYPES = {np.int8: T.INT8, np.uint8: T.UINT8, np.int16: T.INT16, np.float16: T.FLOAT16}


def verify_model(dtype, tolerance: float, log_if_failed: bool, constant: np.ndarray | None = None) -> bytes:
    builder = ModelBuilder()
    zero_point = 0 if dtype in (np.int16, np.float16) else (5 if dtype == np.int8 else 130)
    quantization = None if dtype == np.float16 else AffineQuantization([0.05], [zero_point])
    if constant is None:
        x = builder.add_input("q", TYPES[dtype], list(SHAPE), quantization=quantization)
    else:
        x = builder.add_tensor("q", TYPES[dtype], list(SHAPE), data=constant, quantization=quantization)
    reference = builder.add_input("reference", T.FLOAT32, list(SHAPE))
    y = builder.add_tensor("difference", T.FLOAT32, list(SHAPE))
    options = {"tolerance": tolerance, "log_if_failed": log_if_failed}
    builder.add_operator("NumericVerify", [x, reference], [y], custom_options=options)
    builder.add_output(y)
    return builder.build()


def inputs(dtype, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if dtype == np.float16:
        q = rng.standard_normal(SHAPE).astype(np.float16)
        return q, q.astype(np.float32) + rng.uniform(-0.01, 0.01, SHAPE).astype(np.float32)
    info = np.iinfo(dtype)
    q = rng.integers(info.min, info.max + 1, SHAPE).astype(dtype)
    zero_point = 0 if dtype == np.int16 else (5 if dtype == np.int8 else 130)
    reference = (q.astype(np.float32) - zero_point) * np.float32(0.05)
    return q, reference + rng.uniform(-0.02, 0.02, SHAPE).astype(np.float32)


def interpreters(model: bytes, resolver: str):
    ours = pytflite.Interpreter(
        model_content=model, experimental_op_resolver_type=getattr(pytflite.OpResolverType, resolver)
    )
    theirs = litert.Interpreter(
        model_content=model, experimental_op_resolver_type=getattr(litert.OpResolverType, resolver)
    )
    return ours, theirs


def outcome(interpreter, feeds) -> np.ndarray | str:
    """The output, or the text of the failure."""
    try:
        return run(interpreter, feeds)[0]
    except RuntimeError as error:
        return str(error)


@pytest.mark.parametrize("resolver", ["BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"])
@pytest.mark.parametrize("dtype", list(TYPES), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("log_if_failed", [False, True])
def test_differences_as_litert(dtype, log_if_failed, resolver):
    """A tolerance no quantized element exceeds (a float16 input has a scale of 0, so any difference
    fails it, in both runtimes)."""
    model = verify_model(dtype, 5.0, log_if_failed)
    ours, theirs = (
        outcome(interpreter, list(inputs(dtype))) for interpreter in interpreters(model, resolver)
    )
    if isinstance(theirs, str):
        assert ours == theirs and dtype == np.float16 and log_if_failed
    else:
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("resolver", ["BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"])
def test_a_mismatch_fails_the_invoke_with_litert_s_text(resolver):
    model = verify_model(np.int8, 0.1, True)
    q, reference = inputs(np.int8)
    reference[1, 3] += 1.0  # far past 0.1 * scale
    ours, theirs = (outcome(interpreter, [q, reference]) for interpreter in interpreters(model, resolver))
    assert isinstance(ours, str) and ours == theirs and "Mismatch: " in ours


def test_statistics_are_reported_as_litert_reports_them():
    """Without log_if_failed the kernel logs the differences' statistics; LiteRT's error reporter keeps
    every report, so a later node's failure carries them: a checking node after a logging one gives the
    same text in both runtimes."""
    builder = ModelBuilder()
    x = builder.add_input("q", T.INT8, list(SHAPE), quantization=AffineQuantization([0.05], [5]))
    reference = builder.add_input("reference", T.FLOAT32, list(SHAPE))
    for name, tolerance, log_if_failed in (("logged", 0.0, False), ("checked", 0.1, True)):
        y = builder.add_tensor(name, T.FLOAT32, list(SHAPE))
        options = {"tolerance": tolerance, "log_if_failed": log_if_failed}
        builder.add_operator("NumericVerify", [x, reference], [y], custom_options=options)
        builder.add_output(y)
    q, expected = inputs(np.int8)
    expected[0, 0] += 1.0
    model = builder.build()
    ours, theirs = (
        outcome(i, [q, expected]) for i in interpreters(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    )
    assert isinstance(ours, str) and ours == theirs and ours.startswith("std: ") and "Mismatch: " in ours


def test_a_constant_input_is_dequantized_once():
    q, reference = inputs(np.int8)
    model = verify_model(np.int8, 0.0, False, constant=q)
    for interpreter in interpreters(model, "BUILTIN_WITHOUT_DEFAULT_DELEGATES"):
        first = run(interpreter, [reference])[0]
        again = run(interpreter, [reference + 1])[0]  # the output is kept, not recomputed
        np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_listing_shows_the_dequantized_temporary(resolver):
    model = verify_model(np.int8, 0.0, False)
    assert_listed_as_litert(model, resolver)
    assert_listed_as_litert(model, resolver, inputs=list(inputs(np.int8)))

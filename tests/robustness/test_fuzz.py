"""A CI-sized share of the fuzz job (fuzz/run_fuzz.py runs 100k cases): hostile models made from the
corpus and random graphs must fail only with pytflite's errors, within a time limit per case."""

from __future__ import annotations

import random

import numpy as np
import pytest
from fuzz.cases import make_case, random_graph
from fuzz.harness import is_refusal, run_case_with_timeout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytflite
from pytflite import TensorType as T
from pytflite.errors import KernelError, ensure
from pytflite.model.builder import ModelBuilder

CI_CASES = 3000
SECONDS_PER_CASE = 5.0


def _failures(outcomes) -> list[str]:
    return [
        f"{label}: {o.kind} at {o.stage}\n{o.detail}" for label, o in outcomes if o.kind in ("crash", "hang")
    ]


def _invoke_error(kernel_invoke) -> BaseException:
    """What invoke raises when a custom op's invoke is `kernel_invoke`."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [2])
    y = builder.add_tensor("y", T.FLOAT32, [2])
    builder.add_operator("Probe", [x], [y])
    builder.add_output(y)
    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("Probe", pytflite.Registration(invoke=kernel_invoke))
    interpreter = pytflite.Interpreter(model_content=builder.build(), op_resolver=resolver)
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.zeros(2, np.float32))
    with pytest.raises(pytflite.InterpreterError) as caught:
        interpreter.invoke()
    return caught.value


def test_a_wrapped_kernel_bug_is_a_crash_and_a_deliberate_check_a_refusal():
    def index_bug(context, node):
        context.tensors[node.outputs[0]].data[5] = 0  # IndexError, wrapped by the runtime

    def check(context, node):
        ensure(False, "Probe refuses its input")

    def translated_bug(context, node):
        try:
            [][0]
        except IndexError as error:
            raise KernelError("an IndexError in disguise") from error

    assert not is_refusal(_invoke_error(index_bug))
    assert not is_refusal(_invoke_error(translated_bug))
    assert is_refusal(_invoke_error(check))
    assert not is_refusal(IndexError("not a pytflite error at all"))
    translated = KernelError("not a number")
    translated.__context__, translated.__suppress_context__ = ValueError(), True  # `raise ... from None`
    assert is_refusal(translated)
    translated.__context__ = MemoryError()  # but running out of memory is never a refusal
    assert not is_refusal(translated)


def test_mutated_corpus_and_random_graphs():
    outcomes = []
    for number in range(CI_CASES):
        label, model = make_case(seed=7, number=number)
        outcomes.append((f"case {number} ({label})", run_case_with_timeout(model, number, SECONDS_PER_CASE)))
    assert not _failures(outcomes), "\n".join(_failures(outcomes)[:5])
    kinds = {o.kind for _, o in outcomes}
    assert {"ok", "rejected"} <= kinds  # the generators reach both the kernels and the verifier


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(rng=st.randoms(use_true_random=False), broken=st.booleans())
def test_random_graphs_from_hypothesis(rng: random.Random, broken: bool):
    outcome = run_case_with_timeout(random_graph(rng, broken=broken), 0, SECONDS_PER_CASE)
    assert outcome.kind in ("ok", "rejected"), outcome.detail

"""A CI-sized share of the fuzz job (fuzz/run_fuzz.py runs 100k cases): hostile models made from the
corpus and random graphs must fail only with pytflite's errors, within a time limit per case."""

from __future__ import annotations

import random

from fuzz.cases import make_case, random_graph
from fuzz.harness import run_case_with_timeout
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CI_CASES = 3000
SECONDS_PER_CASE = 5.0


def _failures(outcomes) -> list[str]:
    return [
        f"{label}: {o.kind} at {o.stage}\n{o.detail}" for label, o in outcomes if o.kind in ("crash", "hang")
    ]


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

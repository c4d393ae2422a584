"""The public corpus: real converter-made models with LiteRT's outputs (../shared/corpus/public).

Every model must load and describe itself exactly as LiteRT does. A model whose ops pytflite does not
implement yet must fail to load with TFLite's "Didn't find op" error naming the op; every model that
loads with the builtin resolver must reproduce LiteRT's outputs stored in its .npz.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import pytflite
from pytflite.core.delegate import DelegateFlags
from tests.oracle import (
    CORPUS,
    AnyOpResolver,
    assert_matches,
    details_equal,
    litert_interpreter,
    requires_litert,
)
from tests.pyodide.driver import corpus_resolver

pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(), reason=f"public corpus not found at {CORPUS}"
)

MANIFEST = (
    json.loads((CORPUS / "manifest.json").read_text())
    if (CORPUS / "manifest.json").exists()
    else {"models": []}
)
MODELS = {entry["name"]: entry for entry in MANIFEST["models"]}


@requires_litert
@pytest.mark.parametrize("name", sorted(MODELS))
def test_details_match_litert(name):
    path = CORPUS / MODELS[name]["file"]
    ours = pytflite.Interpreter(model_path=str(path), op_resolver=AnyOpResolver())
    theirs = litert_interpreter(path)
    assert ours.num_subgraphs() == theirs.num_subgraphs()
    for mine, reference in zip(ours.get_input_details(), theirs.get_input_details()):
        details_equal(mine, reference)
    for mine, reference in zip(ours.get_output_details(), theirs.get_output_details()):
        details_equal(mine, reference)
    assert len(ours.get_input_details()) == len(theirs.get_input_details())
    assert len(ours.get_output_details()) == len(theirs.get_output_details())
    for subgraph in range(theirs.num_subgraphs()):
        mine_all, reference_all = ours.get_tensor_details(subgraph), theirs.get_tensor_details(subgraph)
        assert [d["index"] for d in mine_all] == [d["index"] for d in reference_all]
        for mine, reference in zip(mine_all, reference_all):
            details_equal(mine, reference)
    assert ours.get_signature_list() == theirs.get_signature_list()
    assert ours._get_full_signature_list() == theirs._get_full_signature_list()
    for key in theirs.get_signature_list():
        mine_runner, reference_runner = ours.get_signature_runner(key), theirs.get_signature_runner(key)
        for kind in ("get_input_details", "get_output_details"):
            mine, reference = getattr(mine_runner, kind)(), getattr(reference_runner, kind)()
            assert list(mine) == list(reference)
            for tensor_name in reference:
                details_equal(mine[tensor_name], reference[tensor_name])
    mine_ops, reference_ops = ours._get_ops_details(), theirs._get_ops_details()
    assert [(o["index"], o["op_name"]) for o in mine_ops] == [
        (o["index"], o["op_name"]) for o in reference_ops
    ]
    for mine, reference in zip(mine_ops, reference_ops):
        assert np.array_equal(mine["inputs"], reference["inputs"]) and np.array_equal(
            mine["outputs"], reference["outputs"]
        )
        assert (
            mine["operand_types"] == reference["operand_types"]
            and mine["result_types"] == reference["result_types"]
        )


@pytest.mark.parametrize("name", sorted(MODELS))
def test_loads_or_names_the_missing_builtin(name):
    """With the builtin resolver a model either loads, or fails naming an op absent from our kernels."""
    path = CORPUS / MODELS[name]["file"]
    resolver = corpus_resolver()
    try:
        pytflite.Interpreter(model_path=str(path), op_resolver=resolver)
    except ValueError as error:
        match = re.match(r"Didn't find op for builtin opcode '(\w+)' version '(\d+)'", str(error))
        assert match, str(error)
        op, version = pytflite.BuiltinOperator[match.group(1)], int(match.group(2))
        assert op.name in MODELS[name]["op_histogram"]
        assert resolver.find_builtin(op, version) is None


# Models allowed to skip because a kernel they need is not written yet, each with the reason. Pinned:
# empty today, so every corpus model must run; a model that stops running fails its tests.
NOT_YET_SUPPORTED: dict[str, str] = {}


def _skip_if_missing(name: str) -> None:
    if name in NOT_YET_SUPPORTED:
        pytest.skip(f"{name}: {NOT_YET_SUPPORTED[name]}")


def _plain_models() -> list[str]:
    return sorted(
        n
        for n, m in MODELS.items()
        if "input_0" in m.get("npz_keys", []) and "output_0" in m.get("npz_keys", [])
    )


# The corpus's outputs were recorded by LiteRT on an x86-64 machine (manifest: environment), whose
# int8 products ran ruy's SIMD kernels (every AVX2 or newer kind agrees) and whose convolutions are too
# short for Eigen's L1-dependent blocking: any recorded x86 kind reproduces them. Comparing as that kind
# keeps the expectation from depending on the CPU that runs the test.
RECORDED_ON = pytflite.KNOWN_PROFILES["amd_zen4"]


@pytest.mark.parametrize("name", _plain_models())
def test_outputs_match_litert(name):
    _skip_if_missing(name)
    data = np.load(CORPUS / MODELS[name]["npz"])
    interpreter = pytflite.Interpreter(
        model_path=str(CORPUS / MODELS[name]["file"]),
        op_resolver=corpus_resolver(),
        experimental_host_profile=RECORDED_ON,
    )
    interpreter.allocate_tensors()
    for invoke in range(3):  # the first runs the step lists step by step, later ones written out
        interpreter.reset_all_variables()  # (a stateful LSTM would go on from the last invoke's state)
        for i, detail in enumerate(interpreter.get_input_details()):
            interpreter.set_tensor(detail["index"], data[f"input_{i}"])
        interpreter.invoke()
        for i, detail in enumerate(interpreter.get_output_details()):
            if f"output_{i}" in data:
                assert_matches(
                    interpreter.get_tensor(detail["index"]),
                    data[f"output_{i}"],
                    what=f"{name} invoke {invoke} output {i}",
                )


@pytest.mark.parametrize("name", _plain_models())
def test_float_outputs_do_not_depend_on_threads(name):
    """The same bits for num_threads None, 1, 2 and 4, under BLAS pools of 1 and 2 threads, as LiteRT's
    outputs do not change with its thread count (core/blas_threads.py)."""
    import threadpoolctl

    _skip_if_missing(name)
    data = np.load(CORPUS / MODELS[name]["npz"])
    runs = []
    for pool in (1, 2):
        with threadpoolctl.threadpool_limits(pool, user_api="blas"):
            for num_threads in (None, 1, 2, 4):
                interpreter = pytflite.Interpreter(
                    model_path=str(CORPUS / MODELS[name]["file"]),
                    op_resolver=corpus_resolver(),
                    num_threads=num_threads,
                )
                interpreter.allocate_tensors()
                for i, detail in enumerate(interpreter.get_input_details()):
                    interpreter.set_tensor(detail["index"], data[f"input_{i}"])
                interpreter.invoke()
                runs.append([interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()])
    for run in runs[1:]:
        for ours, first in zip(run, runs[0]):
            np.testing.assert_array_equal(ours, first, err_msg=name)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_allocates(name):
    """Every model of the corpus loads and allocates: its ops and kernel variants all exist."""
    _skip_if_missing(name)
    interpreter = pytflite.Interpreter(
        model_path=str(CORPUS / MODELS[name]["file"]), op_resolver=corpus_resolver()
    )
    interpreter.allocate_tensors()


def _stateful_models() -> list[str]:
    return sorted(n for n, m in MODELS.items() if m["mode"] == "stateful")


@pytest.mark.parametrize("name", _stateful_models())
def test_state_carries_across_invokes_as_in_litert(name):
    """Consecutive invokes of one signature runner continue from the state the previous one left;
    reset_all_variables resets variable tensors only (as in LiteRT: resource variables keep their
    values and CALL_ONCE does not run again), which the last invoke checks against LiteRT itself."""
    _skip_if_missing(name)
    data = np.load(CORPUS / MODELS[name]["npz"])
    path = str(CORPUS / MODELS[name]["file"])
    interpreter = pytflite.Interpreter(model_path=path)
    (key,) = interpreter.get_signature_list()
    runner = interpreter.get_signature_runner(key)
    (input_name,) = interpreter.get_signature_list()[key]["inputs"]
    output_names = list(runner.get_output_details())
    for k in range(3):
        outputs = runner(**{input_name: data[f"input_0__invoke{k}"]})
        for i, output_name in enumerate(
            sorted(output_names, key=lambda n: runner.get_output_details()[n]["index"])
        ):
            assert_matches(
                outputs[output_name], data[f"output_{i}__invoke{k}"], what=f"{name} invoke {k} output {i}"
            )
    reference = litert_interpreter(path)
    reference_runner = reference.get_signature_runner(key)
    for k in range(3):
        reference_runner(**{input_name: data[f"input_0__invoke{k}"]})
    interpreter.reset_all_variables()
    reference.reset_all_variables()
    after, reference_after = (r(**{input_name: data["input_0__invoke0"]}) for r in (runner, reference_runner))
    for output_name in output_names:
        assert_matches(after[output_name], reference_after[output_name], what=f"{name} after reset")


def test_atan_without_the_custom_op_fails_with_tflites_message():
    interpreter = pytflite.Interpreter(model_path=str(CORPUS / "atan_custom.tflite"))
    expected = (
        "Encountered unresolved custom op: Atan.\nSee instructions: "
        "https://www.tensorflow.org/lite/guide/ops_custom Node number 1 (Atan) failed to prepare."
    )
    with pytest.raises(RuntimeError) as error:
        interpreter.allocate_tensors()
    assert str(error.value) == expected
    with pytest.raises(RuntimeError) as error:
        interpreter.invoke()
    assert str(error.value) == expected + "Invoke called on model that is not ready."  # LiteRT accumulates


def _claim_sets(subgraph) -> dict[str, list[int]]:
    ops = [subgraph.nodes[i][1].builtin_code for i in subgraph.execution_plan]
    plan = subgraph.execution_plan
    return {
        "conv_mean": [
            i
            for i, op in zip(plan, ops)
            if op in (pytflite.BuiltinOperator.CONV_2D, pytflite.BuiltinOperator.MEAN)
        ],
        "add_mul": [
            i
            for i, op in zip(plan, ops)
            if op in (pytflite.BuiltinOperator.ADD, pytflite.BuiltinOperator.MUL)
        ],
        "every_other": plan[::2],
        "all": list(plan),
    }


@pytest.mark.parametrize("name", sorted(MODELS))
def test_partitions_of_every_subgraph_are_executable(name):
    from pytflite.core.partition import PlanNode, partition_graph
    from tests.core.test_partition import check_invariants

    interpreter = pytflite.Interpreter(
        model_path=str(CORPUS / MODELS[name]["file"]), op_resolver=AnyOpResolver()
    )
    for subgraph in interpreter.subgraphs:
        plan = [
            PlanNode(
                i,
                subgraph.nodes[i][0].inputs,
                subgraph.nodes[i][0].outputs,
                subgraph.nodes[i][0].might_have_side_effect,
            )
            for i in subgraph.execution_plan
        ]
        for claimed in _claim_sets(subgraph).values():
            for greedy in (True, False):
                subsets = partition_graph(
                    plan, len(subgraph.tensors), subgraph.outputs, claimed, len(subgraph.nodes), greedy=greedy
                )
                check_invariants(plan, len(subgraph.tensors), subgraph.outputs, set(claimed), subsets)


@pytest.mark.parametrize("claim", ["conv_mean", "add_mul", "every_other", "all"])
@pytest.mark.parametrize("name", _plain_models())
def test_delegated_outputs_equal_the_cpu_path_bit_for_bit(name, claim):
    from pytflite.delegates.replay import ReplayDelegate

    _skip_if_missing(name)
    path = str(CORPUS / MODELS[name]["file"])
    data = np.load(CORPUS / MODELS[name]["npz"])

    def run(interpreter):
        interpreter.allocate_tensors()
        for i, detail in enumerate(interpreter.get_input_details()):
            interpreter.set_tensor(detail["index"], data[f"input_{i}"])
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]

    expected = run(pytflite.Interpreter(model_path=path, op_resolver=corpus_resolver()))
    interpreter = pytflite.Interpreter(model_path=path, op_resolver=corpus_resolver())
    claimed = set(_claim_sets(interpreter.subgraphs[0])[claim])
    delegate = ReplayDelegate(
        claim=lambda context, node, registration: node.index in claimed,
        flags=DelegateFlags.ALLOW_DYNAMIC_TENSORS,  # control flow and lazy ops make dynamic tensors
    )
    interpreter.modify_graph_with_delegate(delegate)
    assert sum(len(p.nodes) for p in interpreter.delegate_partitions()) == len(claimed)
    for got, want in zip(run(interpreter), expected, strict=True):
        np.testing.assert_array_equal(got, want)


def _models_with_key(suffix: str) -> list[str]:
    return sorted(
        n for n, m in MODELS.items() if any(k.endswith(suffix) or suffix in k for k in m.get("npz_keys", []))
    )


@pytest.mark.parametrize("name", _models_with_key("__batch"))
def test_dynamic_batch_matches_litert_after_resizing(name):
    _skip_if_missing(name)
    data = np.load(CORPUS / MODELS[name]["npz"])
    interpreter = pytflite.Interpreter(model_path=str(CORPUS / MODELS[name]["file"]))
    for batch in MODELS[name]["extra"]["batches"]:
        x = data[f"input_0__batch{batch}"]
        interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], x.shape)
        interpreter.allocate_tensors()
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
        interpreter.invoke()
        for i, detail in enumerate(interpreter.get_output_details()):
            expected = data[f"output_{i}__batch{batch}"]
            assert_matches(
                interpreter.get_tensor(detail["index"]), expected, what=f"{name} batch {batch} output {i}"
            )


@pytest.mark.parametrize(
    "name", sorted(n for n, m in MODELS.items() if m.get("signature_defs") and m["mode"] == "signatures")
)
def test_every_signature_matches_litert(name):
    _skip_if_missing(name)
    data = np.load(CORPUS / MODELS[name]["npz"])
    interpreter = pytflite.Interpreter(model_path=str(CORPUS / MODELS[name]["file"]))
    for key, signature in interpreter.get_signature_list().items():
        runner = interpreter.get_signature_runner(key)
        outputs = runner(**{n: data[f"{key}__input_{n}"] for n in signature["inputs"]})
        for output_name in signature["outputs"]:
            assert_matches(
                outputs[output_name], data[f"{key}__output_{output_name}"], what=f"{name} {key} {output_name}"
            )

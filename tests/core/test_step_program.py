"""StepProgram: a step list's first run walks it, later runs call it written out as one function (Direct
steps as their calls, Written steps as their statements); both report a failing step with its node."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest

import pytflite
from pytflite.core.step_program import Direct, Respecialize, StepProgram, Written
from tests.core.test_kernel_calls import add_then_custom_op


class _Reported(Exception):
    pass


def _program(steps: list) -> tuple[StepProgram, list]:
    reports: list = []

    def failed(node, **why):
        reports.append((node.index, why))
        raise _Reported

    return StepProgram(
        [(step, SimpleNamespace(index=i)) for i, step in enumerate(steps)], None, failed
    ), reports


def test_every_kind_of_step_runs_the_same_walked_and_written():
    x, doubled, total, out = (np.zeros((), np.int64) for _ in range(4))
    plain_calls = []

    def increment(context, node):
        x[()] += 1

    def double():
        plain_calls.append("double")
        doubled[()] = x[()] * 2

    program, reports = _program(
        [
            increment,
            Written("{doubled}[()] = {x}[()] * 2", double, doubled=doubled, x=x),
            Direct(partial(np.add, x, doubled, total), partial(np.multiply, total, 10, out=out)),
        ]
    )
    for run in (1, 2, 3):
        program.run()
        assert (x, doubled, total, out) == (run, 2 * run, 3 * run, 30 * run)
    assert plain_calls == ["double"]  # written runs make the statement, not the plain step's call
    assert reports == []


@pytest.mark.parametrize("runs_before", [0, 1, 2])
def test_a_failing_step_is_reported_with_its_node(runs_before):
    x = np.zeros(3, np.float32)
    state = {"fail": False}

    def maybe_raise(context, node):
        if state["fail"]:
            raise ValueError("bad value")

    program, reports = _program(
        [Direct(partial(np.add, x, 1, x)), maybe_raise, Direct(partial(np.add, x, 1, x))]
    )
    for _ in range(runs_before):
        program.run()
    state["fail"] = True
    with pytest.raises(_Reported):
        program.run()
    (index, why) = reports[0]
    assert index == 1 and isinstance(why["error"], ValueError)


def test_a_failing_call_of_a_direct_step_is_reported_with_its_node():
    x, y = np.zeros(3, np.float32), np.zeros(2, np.float32)
    mismatched = Direct(partial(np.add, x, 1, x), partial(np.copyto, y, x))  # its second call fails
    program, reports = _program([Direct(partial(np.add, x, 1, x)), mismatched])
    for _ in range(3):  # walked, then written out
        with pytest.raises(_Reported):
            program.run()
    assert [(index, type(why["error"])) for index, why in reports] == [(1, ValueError)] * 3


@pytest.mark.parametrize("runs_before", [0, 2])
def test_a_status_other_than_ok_is_reported_with_its_node(runs_before):
    state = {"status": None}
    program, reports = _program([lambda context, node: None, lambda context, node: state["status"]])
    for _ in range(runs_before):
        program.run()
    state["status"] = pytflite.Status.ERROR
    with pytest.raises(_Reported):
        program.run()
    assert reports == [(1, {"status": pytflite.Status.ERROR})]


@pytest.mark.parametrize("runs_before", [0, 2])
def test_respecialize_passes_through_unreported(runs_before):
    state = {"raise": False}

    def fused(context, node):
        if state["raise"]:
            raise Respecialize

    program, reports = _program([fused])
    for _ in range(runs_before):
        program.run()
    state["raise"] = True
    with pytest.raises(Respecialize):
        program.run()
    assert reports == []


def failing_op(fail_on: int, name: str = "Failing", compute=np.copyto) -> pytflite.Registration:
    """A custom op `name` writing compute(output, input) whose invoke fails on its `fail_on`-th call."""
    calls = []

    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(context, node):
        calls.append(1)
        if len(calls) == fail_on:
            raise pytflite.KernelError(f"{name} fails on purpose.")
        compute(context.tensors[node.outputs[0]].data, context.tensors[node.inputs[0]].data)

    return pytflite.Registration(prepare=prepare, invoke=invoke, custom_name=name)


@pytest.mark.parametrize("fail_on", [1, 2, 5])
def test_an_interpreter_reports_the_failing_node_on_every_invoke(fail_on):
    interpreter = add_then_custom_op(failing_op(fail_on))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.array([1, 2], np.float32))
    for _ in range(fail_on - 1):
        interpreter.invoke()
        np.testing.assert_array_equal(
            interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), [2, 3]
        )
    with pytest.raises(
        RuntimeError, match=r"Failing fails on purpose\.Node number 1 \(Failing\) failed to invoke\."
    ):
        interpreter.invoke()

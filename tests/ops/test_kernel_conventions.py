"""The kernel convention of docs/architecture.md, checked over every registered builtin kernel.

(The op-data rule is also checked on every prepare the suite runs: tests/kernel_conventions.py.)
"""

from __future__ import annotations

import dataclasses

import pytest

from pytflite.core.types import BuiltinOperator
from pytflite.ops import registry
from pytflite.ops.registry import builtin_kernels, kernel_infos, register_builtin
from tests.kernel_conventions import op_data_violation


def _versions(info):
    return range(info.versions[0], info.versions[1] + 1)


def test_every_kernel_declares_a_frozen_op_data_class_or_none():
    for info in kernel_infos():
        op_data = info.op_data
        assert op_data is None or (
            dataclasses.is_dataclass(op_data) and op_data.__dataclass_params__.frozen
        ), info


def test_builtin_ref_twins_are_registered_with_their_kernel():
    default, reference = builtin_kernels(), builtin_kernels(reference=True)
    assert default.keys() == reference.keys()
    for info in kernel_infos():
        for version in _versions(info):
            key = (int(info.op), version)
            same = reference[key] is default[key]
            assert same != info.has_builtin_ref_twin, (info.op.name, version)
            if info.has_builtin_ref_twin:  # the twin is the same kernel with some callbacks replaced
                assert reference[key].builtin_code == default[key].builtin_code
                assert reference[key].version == version


def test_registration_refuses_an_op_data_class_that_is_not_frozen():
    @dataclasses.dataclass
    class Mutable:
        value: int

    with pytest.raises(TypeError, match="not a frozen dataclass"):
        register_builtin(BuiltinOperator.ADD, (99, 99), op_data=Mutable, invoke=lambda c, n: None)
    assert (int(BuiltinOperator.ADD), 99) not in registry.builtin_kernels()


def test_the_op_data_check_names_what_is_wrong():
    @dataclasses.dataclass(frozen=True)
    class Data:
        value: int

    assert op_data_violation(None, Data) is None
    assert op_data_violation(Data(1), Data) is None
    assert "declares no op_data" in op_data_violation(Data(1), None)
    assert "declared op_data is Data" in op_data_violation(lambda x: x, Data)

"""Op resolvers: exact (op, version) lookup, overrides, add_all, chaining, and the three custom-op styles."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import Registration
from pytflite.ops.resolver import OpResolver


def noop(context, node):
    return None


def test_builtin_lookup_is_exact_on_version():
    resolver = pytflite.BuiltinOpResolver()
    assert resolver.find_builtin(Op.ADD, 1).version == 1
    assert resolver.find_builtin(Op.ADD, 6).builtin_code == Op.ADD
    assert resolver.find_builtin(Op.ADD, 7) is None
    assert resolver.find_op(Op.RESHAPE, 1) is resolver.find_builtin(Op.RESHAPE, 1)
    assert resolver.find_op("Atan", 1) is None


def test_add_custom_and_version_ranges():
    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("MyOp", Registration(invoke=noop), min_version=2, max_version=3)
    assert resolver.find_custom("MyOp", 1) is None
    found = resolver.find_custom("MyOp", 3)
    assert (found.builtin_code, found.custom_name, found.version) == (Op.CUSTOM, "MyOp", 3)
    assert resolver.custom_ops() == [("MyOp", 2), ("MyOp", 3)]
    with pytest.raises(ValueError):
        resolver.add_custom("Bad", Registration(invoke=noop), min_version=3, max_version=2)


def test_add_builtin_overrides_and_add_all_replaces():
    builtins = pytflite.BuiltinOpResolver()
    mine = pytflite.MutableOpResolver()
    mine.add_all(builtins)
    override = Registration(invoke=noop)
    mine.add_builtin(Op.RELU, override, 1, 3)
    assert mine.find_builtin(Op.RELU, 2).invoke is noop
    assert builtins.find_builtin(Op.RELU, 2).invoke is not noop  # the source is untouched
    other = pytflite.MutableOpResolver()
    other.add_all(mine)
    assert other.find_builtin(Op.RELU, 1).invoke is noop and other.find_builtin(Op.ADD, 1) is not None


def test_chained_resolvers_are_consulted_in_order():
    class Everything(OpResolver):
        def find_builtin(self, op, version):
            return Registration(builtin_code=op, version=version, invoke=noop)

    resolver = pytflite.MutableOpResolver()
    resolver.add_builtin(Op.ADD, Registration(invoke=lambda c, n: 1))
    resolver.add_all(Everything())
    assert resolver.find_builtin(Op.ADD, 1).invoke is not noop
    assert resolver.find_builtin(Op.CONV_2D, 7).invoke is noop


def test_kernels_may_be_classes_or_instances():
    class AsNamespace:
        def invoke(context, node):  # no self: used straight from the class
            return None

    class AsInstance:
        def __init__(self):
            self.calls = 0

        def invoke(self, context, node):
            self.calls += 1

    resolver = pytflite.MutableOpResolver()
    resolver.add_custom("A", AsNamespace)
    instance = AsInstance()
    resolver.add_custom("B", instance)
    assert resolver.find_custom("A", 1).invoke is AsNamespace.invoke
    resolver.find_custom("B", 1).invoke(None, None)
    assert instance.calls == 1
    with pytest.raises(TypeError, match="invoke"):
        resolver.add_custom("C", object())


def test_registration_names():
    assert Registration(builtin_code=Op.CONV_2D).op_name == "CONV_2D"
    assert Registration(custom_name="Atan").op_name == "Atan"
    assert Registration(builtin_code=Op.DELEGATE, custom_name="MyDelegate").op_name == "MyDelegate"
    assert Registration().op_name == "UnknownCustomOp"


def test_reference_resolver_has_every_builtin_of_the_default_one():
    default, reference = pytflite.BuiltinOpResolver(), pytflite.BuiltinRefOpResolver()
    assert default.builtin_ops() == reference.builtin_ops()
    assert (Op.FULLY_CONNECTED, 14) in default.builtin_ops()
    assert np.all([v >= 1 for _, v in default.builtin_ops()])

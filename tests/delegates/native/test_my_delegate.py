"""The delegate guide's MyDelegate (examples/native_delegate/my_delegate.cc), compiled, under pytflite
and under ai-edge-litert: its kernel runs its partition's ADD and SUB nodes one by one through
`context->tensors`. The model is the example's, w = (x + y - x) * y - y: the partition ADD -> SUB passes
`t` between its own nodes, MUL runs on the CPU, the last SUB is a second partition."""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.delegates.native import abi
from pytflite.model.builder import ModelBuilder
from tests.delegates.native.helpers import add_sub_model, delegate_nodes, make_interpreter
from tests.oracle import litert, requires_litert, run

pytestmark = [
    pytest.mark.skipif(abi.check_platform() is not None, reason=str(abi.check_platform())),
    requires_litert,
]

RUNTIMES = (pytflite, litert)


def broadcasting_model() -> bytes:
    builder = ModelBuilder()
    x, bias = builder.add_input("x", T.FLOAT32, [2, 3]), builder.add_input("bias", T.FLOAT32, [3])
    out = builder.add_tensor("out", T.FLOAT32, [2, 3])
    builder.add_operator(Op.ADD, [x, bias], [out])
    builder.add_output(out)
    return builder.build()


VALUES = [np.linspace(-2, 3, 6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 0.75, np.float32)]


def failure_texts(built, model: bytes, values: list[np.ndarray]) -> list[str]:
    """Each runtime's error text for two invokes (the second adds to the first, as in LiteRT)."""
    texts = []
    for runtime in RUNTIMES:
        interpreter = make_interpreter(runtime, model, [runtime.load_delegate(str(built["my"]))])
        for _ in range(2):
            with pytest.raises(RuntimeError) as raised:
                run(interpreter, values)
        texts.append(str(raised.value))
    return texts


def test_tensors_between_a_partition_s_nodes_have_no_memory_as_in_litert(built):
    """TFLite allocates only the tensors its execution plan uses: the guide's kernel, reading `t`
    through context->tensors, finds no data in either runtime."""
    ours, theirs = failure_texts(built, add_sub_model(), VALUES)
    assert (
        ours == theirs == "MyDelegate: tensor t has no memoryNode number 4 (MyDelegate) failed to invoke." * 2
    )


def test_kernel_gives_them_memory_by_making_them_dynamic(built):
    """The kernel's Prepare writes kTfLiteDynamic into `t`'s allocation_type and resizes it; then `t`
    (dynamic, so never reused by the arena) and the output read as in LiteRT."""
    model = add_sub_model()
    interpreters = [
        make_interpreter(
            runtime, model, [runtime.load_delegate(str(built["my"]), {"internal_tensors": "dynamic"})]
        )
        for runtime in RUNTIMES
    ]
    ours, theirs = interpreters
    assert delegate_nodes(ours) == delegate_nodes(theirs) == 2
    for interpreter in interpreters:
        run(interpreter, VALUES)
    t, w = 2, ours.get_output_details()[0]["index"]
    assert ours.get_tensor_details()[t]["name"] == "t"
    for index in (t, w):
        np.testing.assert_array_equal(ours.get_tensor(index), theirs.get_tensor(index))
    x, y = VALUES
    np.testing.assert_array_equal(ours.get_tensor(t), x + y)
    np.testing.assert_array_equal(ours.get_tensor(w), (x + y - x) * y - y)


def test_broadcasting_add_fails_with_kTfLiteDelegateError_as_in_litert(built):
    """IsNodeSupported claims the broadcasting ADD; Eval refuses it without a report."""
    values = [VALUES[0], np.ones(3, np.float32)]
    ours, theirs = failure_texts(built, broadcasting_model(), values)
    assert ours == theirs == "Node number 1 (MyDelegate) failed to invoke." * 2

"""Applying delegates: node replacement, failure and restore, dynamic-tensor refusal, undo on resize and
redo on allocate, stacking, buffer handles, SimpleDelegate partition selection."""

from __future__ import annotations

import gc
import logging

import numpy as np
import pytest

import pytflite as tfl
from pytflite import BuiltinOperator as Op
from pytflite import DelegateFlags, Status
from pytflite import TensorType as T
from pytflite.delegates.replay import ReplayDelegate, ReplayKernel
from pytflite.model.builder import ModelBuilder
from tests.core.test_lifecycle import NonZero


def arithmetic_model(batch: int = 2) -> bytes:
    """x -> ADD c -> MUL c -> RELU -> SUB x -> y ; plus a second output from the MUL."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [batch, 4])
    c = builder.add_constant("c", np.array([0.5, -1.0, 2.0, 3.0], np.float32))
    a = builder.add_tensor("a", T.FLOAT32, [batch, 4])
    builder.add_operator(Op.ADD, [x, c], [a])
    m = builder.add_tensor("m", T.FLOAT32, [batch, 4])
    builder.add_operator(Op.MUL, [a, c], [m])
    r = builder.add_tensor("r", T.FLOAT32, [batch, 4])
    builder.add_operator(Op.RELU, [m], [r])
    y = builder.add_tensor("y", T.FLOAT32, [batch, 4])
    builder.add_operator(Op.SUB, [r, x], [y])
    builder.add_output(y)
    builder.add_output(m)
    return builder.build()


X = np.array([[1, -2, 3, -4], [0.5, 0.25, -0.125, 8]], np.float32)


def outputs(interpreter, x=X):
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, x)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def assert_same(first, second):
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


EXPECTED = outputs(tfl.Interpreter(model_content=arithmetic_model()))


class GuideDelegate:
    """The delegate guide's shape, raw API: claims ops, kernel replays the claimed nodes' kernels."""

    def __init__(self, ops, flags=DelegateFlags.NONE):
        self.ops = ops
        self.prepare_calls = 0
        self.kernel_inits = []
        self.delegate = tfl.Delegate(prepare=self.prepare, flags=flags)

    def registration(self):
        def init(context, params, length):
            self.kernel_inits.append(params)
            kernel = ReplayKernel()
            kernel.init(context, params)
            return kernel

        return tfl.Registration(
            init=init,
            prepare=lambda context, node: node.user_data.prepare(context, node),
            invoke=lambda context, node: node.user_data.eval(context, node),
            builtin_code=Op.DELEGATE,
            custom_name="GuideDelegate",
        )

    def prepare(self, context, delegate):
        self.prepare_calls += 1
        supported = []
        for node_index in context.get_execution_plan():
            _, registration = context.get_node_and_registration(node_index)
            if registration.builtin_code in self.ops:
                supported.append(node_index)
        return context.replace_node_subsets_with_delegate_kernels(self.registration(), supported, delegate)


def test_claimed_nodes_become_one_delegate_node_and_results_are_unchanged():
    guide = GuideDelegate({Op.ADD, Op.MUL})
    interpreter = tfl.Interpreter(model_content=arithmetic_model())
    subgraph = interpreter.subgraphs[0]
    assert subgraph.execution_plan == [0, 1, 2, 3]
    interpreter.modify_graph_with_delegate(guide.delegate)
    assert subgraph.execution_plan == [4, 2, 3]
    assert len(subgraph.nodes) == 5  # the originals stay, the DELEGATE node is appended
    (params,) = guide.kernel_inits
    assert params == tfl.DelegateParams(guide.delegate, (0, 1), (0, 1), (3,))  # "a" (2) stays inside
    node, registration = subgraph.nodes[4]
    assert registration.builtin_code == Op.DELEGATE and registration.custom_name == "GuideDelegate"
    assert node.delegate is guide.delegate and node.inputs == (0, 1) and node.outputs == (3,)
    assert subgraph.tensors[3].delegate is guide.delegate and subgraph.tensors[2].delegate is None
    assert [o["op_name"] for o in interpreter._get_ops_details()] == ["ADD", "MUL", "RELU", "SUB", "DELEGATE"]
    (partition,) = interpreter.delegate_partitions()
    assert (partition.node_index, partition.delegate_name, partition.nodes, partition.op_names) == (
        4,
        "GuideDelegate",
        (0, 1),
        ("ADD", "MUL"),
    )
    assert_same(outputs(interpreter), EXPECTED)


def test_experimental_delegates_argument_and_an_empty_claim():
    interpreter = tfl.Interpreter(
        model_content=arithmetic_model(), experimental_delegates=[GuideDelegate({Op.CONV_2D}).delegate]
    )
    assert interpreter.subgraphs[0].execution_plan == [0, 1, 2, 3]
    assert_same(outputs(interpreter), EXPECTED)


def test_preview_does_not_replace():
    seen = {}

    def prepare(context, delegate):
        seen["preview"] = context.preview_delegate_partitioning([0, 3])
        seen["plan"] = context.get_execution_plan()

    interpreter = tfl.Interpreter(
        model_content=arithmetic_model(), experimental_delegates=[tfl.Delegate(prepare=prepare)]
    )
    assert seen["plan"] == (0, 1, 2, 3)
    assert seen["preview"] == [
        tfl.DelegateParams(None, (0,), (0, 1), (2,)),
        tfl.DelegateParams(None, (3,), (0, 4), (5,)),
    ]
    assert interpreter.subgraphs[0].execution_plan == [0, 1, 2, 3]


def failing_kernel_registration(where):
    def init(context, params, length):
        if where == "init":
            raise ValueError("no accelerator")
        return "kernel"

    def prepare(context, node):
        if where == "prepare":
            raise tfl.KernelError("unsupported shape")

    return tfl.Registration(
        init=init, prepare=prepare, invoke=lambda c, n: None, builtin_code=Op.DELEGATE, custom_name="Broken"
    )


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("delegate", "delegate refused"),
        ("status", ""),
        ("init", "Failed to initialize kernel."),
        ("prepare", "unsupported shape"),
    ],
)
def test_a_failing_delegate_leaves_a_working_interpreter(where, message):
    def prepare(context, delegate):
        if where == "delegate":
            raise tfl.KernelError("delegate refused")
        if where == "status":
            return Status.ERROR
        context.replace_node_subsets_with_delegate_kernels(
            failing_kernel_registration(where), [1, 2], delegate
        )

    interpreter = tfl.Interpreter(model_content=arithmetic_model())
    with pytest.raises(RuntimeError) as error:
        interpreter.modify_graph_with_delegate(tfl.Delegate(prepare=prepare))
    assert message in str(error.value)
    assert str(error.value).endswith("Restored original execution plan after delegate application failure.")
    assert error.value.status == Status.DELEGATE_ERROR
    subgraph = interpreter.subgraphs[0]
    assert subgraph.execution_plan == [0, 1, 2, 3] and len(subgraph.nodes) == 4
    assert_same(outputs(interpreter), EXPECTED)


def dynamic_model() -> bytes:
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [4])
    positive = builder.add_tensor("positive", T.FLOAT32, [4])
    builder.add_operator("NonZero", [x], [positive])
    y = builder.add_tensor("y", T.FLOAT32, [4])
    builder.add_operator(Op.RELU, [positive], [y])
    builder.add_output(y)
    return builder.build()


def dynamic_interpreter(**kwargs):
    resolver = tfl.MutableOpResolver()
    resolver.add_all(tfl.BuiltinOpResolver())
    resolver.add_custom("NonZero", NonZero)
    return tfl.Interpreter(model_content=dynamic_model(), op_resolver=resolver, **kwargs)


def test_static_delegates_are_refused_on_dynamic_graphs():
    interpreter = dynamic_interpreter()
    with pytest.raises(
        RuntimeError, match="only supports static-sized tensors with a graph that has dynamic-sized tensors"
    ) as error:
        interpreter.modify_graph_with_delegate(ReplayDelegate({Op.RELU}))
    assert error.value.status == Status.APPLICATION_ERROR
    interpreter.modify_graph_with_delegate(
        ReplayDelegate({Op.RELU}, flags=DelegateFlags.ALLOW_DYNAMIC_TENSORS)
    )
    assert len(interpreter.delegate_partitions()) == 1
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([1, -1, 2, -2], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(
        interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), [1, 2]
    )


def test_resize_undoes_static_delegates_and_allocate_redoes_them():
    guide = GuideDelegate({Op.RELU, Op.SUB})
    interpreter = tfl.Interpreter(model_content=arithmetic_model(), experimental_delegates=[guide.delegate])
    subgraph = interpreter.subgraphs[0]
    assert subgraph.state.name == "INVOKABLE_AND_IMMUTABLE"
    assert guide.prepare_calls == 1 and subgraph.execution_plan == [0, 1, 4]
    interpreter.resize_tensor_input(0, [3, 4])
    assert subgraph.execution_plan == [0, 1, 2, 3] and len(subgraph.nodes) == 4  # undone
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 6
    got = outputs(interpreter, x)  # allocate re-applies the delegate
    assert guide.prepare_calls == 2 and len(guide.kernel_inits) == 2
    assert subgraph.execution_plan == [0, 1, 4]
    assert_same(got, outputs(tfl.Interpreter(model_content=arithmetic_model(3)), x))


def test_dynamic_capable_delegates_stay_across_resizes():
    delegate = ReplayDelegate({Op.RELU}, flags=DelegateFlags.ALLOW_DYNAMIC_TENSORS)
    interpreter = tfl.Interpreter(model_content=arithmetic_model(), experimental_delegates=[delegate])
    plan = list(interpreter.subgraphs[0].execution_plan)
    interpreter.resize_tensor_input(0, [1, 4])
    assert interpreter.subgraphs[0].execution_plan == plan
    x = X[:1]
    assert_same(outputs(interpreter, x), outputs(tfl.Interpreter(model_content=arithmetic_model(1)), x))


def test_graph_is_immutable_after_a_static_delegate():
    interpreter = tfl.Interpreter(
        model_content=arithmetic_model(), experimental_delegates=[ReplayDelegate({Op.ADD})]
    )
    with pytest.raises(RuntimeError, match="AddNodeWithParameters is disallowed when graph is immutable."):
        interpreter.subgraphs[0].add_node_with_parameters(
            [0], [2], [], None, None, tfl.Registration(invoke=lambda c, n: None)
        )


def test_delegates_stack_and_see_earlier_delegate_nodes():
    first = ReplayDelegate({Op.ADD, Op.MUL})
    seen = []

    def claim(context, node, registration):
        seen.append(registration.op_name)
        return registration.builtin_code in (Op.RELU, Op.SUB)

    second = ReplayDelegate(claim=claim)
    second.name = "Second"
    interpreter = tfl.Interpreter(model_content=arithmetic_model(), experimental_delegates=[first, second])
    assert seen == ["ReplayDelegate", "RELU", "SUB"]  # the second sees the first's DELEGATE node
    partitions = interpreter.delegate_partitions()
    assert [(p.delegate_name, p.op_names) for p in partitions] == [
        ("ReplayDelegate", ("ADD", "MUL")),
        ("Second", ("RELU", "SUB")),
    ]
    assert_same(outputs(interpreter), EXPECTED)
    interpreter.resize_tensor_input(0, [1, 4])  # both are undone, then redone in order
    assert_same(
        outputs(interpreter, X[:1]), outputs(tfl.Interpreter(model_content=arithmetic_model(1)), X[:1])
    )
    assert [p.delegate_name for p in interpreter.delegate_partitions()] == ["ReplayDelegate", "Second"]


def test_a_delegate_may_claim_another_delegates_node():
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [4])
    a = builder.add_tensor("a", T.FLOAT32, [4])
    builder.add_operator(Op.RELU, [x], [a])
    y = builder.add_tensor("y", T.FLOAT32, [4])
    builder.add_operator(Op.MUL, [a, a], [y])
    builder.add_output(y)
    model = builder.build()
    outer = ReplayDelegate(claim=lambda c, n, r: r.builtin_code in (Op.DELEGATE, Op.MUL))
    outer.name = "Outer"
    interpreter = tfl.Interpreter(
        model_content=model, experimental_delegates=[ReplayDelegate({Op.RELU}), outer]
    )
    assert [(p.delegate_name, p.op_names) for p in interpreter.delegate_partitions()] == [
        ("Outer", ("ReplayDelegate", "MUL"))
    ]
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.array([-1, 2, -3, 4], np.float32))
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(2), [0, 4, 0, 16])


class DeviceMemoryDelegate(tfl.SimpleDelegate):
    """Runs its nodes, then keeps the results in "device" memory: the tensors are left stale until the
    runtime asks for them with copy_from_buffer_handle."""

    name = "DeviceMemory"

    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.device: dict[int, np.ndarray] = {}
        self.copies: list[int] = []
        self.freed: list[int] = []

    def is_node_supported(self, context, node, registration):
        return registration.builtin_code in self.ops

    def create_kernel(self):
        delegate = self

        class Kernel(ReplayKernel):
            def eval(self, context, node):
                super().eval(context, node)
                for t in node.outputs:
                    tensor = context.tensors[t]
                    delegate.device[t] = tensor.data.copy()
                    tensor.data[...] = np.nan  # what a CPU reader would see without the copy back
                    if tensor.buffer_handle == -1:
                        context.subgraph.delegation.set_buffer_handle(t, t, delegate)
                    tensor.data_is_stale = True

        return Kernel()

    def copy_from_buffer_handle(self, context, delegate, handle, tensor):
        self.copies.append(handle)
        tensor.data[...] = self.device[handle]

    def free_buffer_handle(self, context, delegate, handle):
        self.freed.append(handle)


@pytest.mark.parametrize(
    ("ops", "stale"),
    [({Op.ADD, Op.MUL}, 3), ({Op.SUB}, 5)],
    ids=["read-by-a-cpu-node", "graph-output"],
)
def test_stale_delegate_outputs_are_copied_back_before_use(ops, stale):
    delegate = DeviceMemoryDelegate(ops)
    interpreter = tfl.Interpreter(model_content=arithmetic_model(), experimental_delegates=[delegate])
    assert_same(outputs(interpreter), EXPECTED)
    assert delegate.copies == [stale]  # m before RELU reads it; y when invoke() returns
    assert not interpreter.subgraphs[0].tensors[stale].data_is_stale
    interpreter.invoke()
    assert delegate.copies == [stale, stale]
    del interpreter
    gc.collect()
    assert delegate.freed == [stale]


def test_simple_delegate_selects_the_largest_partitions(caplog):
    # claim ADD and RELU: two partitions of one node each; MUL and SUB: likewise
    claim_all_but_mul = ReplayDelegate({Op.ADD, Op.RELU, Op.SUB}, max_delegated_partitions=1)
    with caplog.at_level(logging.INFO, logger="pytflite"):
        interpreter = tfl.Interpreter(
            model_content=arithmetic_model(), experimental_delegates=[claim_all_but_mul]
        )
    assert [p.op_names for p in interpreter.delegate_partitions()] == [("RELU", "SUB")]
    assert "ReplayDelegate delegate: 2 nodes delegated out of 4 nodes with 2 partitions." in caplog.text
    too_small = ReplayDelegate({Op.ADD, Op.RELU, Op.SUB}, min_nodes_per_partition=3)
    interpreter = tfl.Interpreter(model_content=arithmetic_model(), experimental_delegates=[too_small])
    assert interpreter.delegate_partitions() == []
    assert_same(outputs(interpreter), EXPECTED)


def test_graph_partition_helper_orders_by_size_and_stops_at_the_minimum():
    results = {}

    def prepare(context, delegate):
        helper = tfl.GraphPartitionHelper(
            context, lambda c, n, r: r.builtin_code != Op.MUL or (False, "no MUL")
        )
        info = set()
        helper.partition(info)
        results["sizes"] = [len(p.nodes_to_replace) for p in helper.first_n_largest_partitions()]
        results["first"] = helper.nodes_of_first_n_largest_partitions(1)
        results["min"] = helper.first_n_largest_partitions(0, 2)
        results["info"] = info
        results["counts"] = (helper.num_total_nodes, helper.num_supported_nodes, helper.num_partitions)

    tfl.Interpreter(model_content=arithmetic_model(), experimental_delegates=[tfl.Delegate(prepare=prepare)])
    assert results["sizes"] == [2, 1]
    assert results["first"] == [2, 3]
    assert [p.nodes_to_replace for p in results["min"]] == [(2, 3)]
    assert results["info"] == {"MUL: no MUL"}
    assert results["counts"] == (4, 3, 2)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, [(0, 1), (3,)]),
        ({"experimental_preserve_all_tensors": True}, [(0,), (1,), (3,)]),
        ({"experimental_disable_delegate_node_fusion": True}, [(0,), (1,), (3,)]),
    ],
)
def test_interpreter_options_shape_the_partitions(kwargs, expected):
    interpreter = tfl.Interpreter(
        model_content=arithmetic_model(),
        experimental_delegates=[ReplayDelegate({Op.ADD, Op.MUL, Op.SUB})],
        **kwargs,
    )
    assert [p.nodes for p in interpreter.delegate_partitions()] == expected
    assert_same(outputs(interpreter), EXPECTED)


def test_kernel_prepare_uninitialized_and_failures_name_the_delegate_node():
    def prepare(context, delegate):
        registration = tfl.Registration(
            prepare=lambda c, n: Status.ERROR,
            invoke=lambda c, n: None,
            builtin_code=Op.DELEGATE,
            custom_name="Named",
        )
        context.replace_node_subsets_with_delegate_kernels(registration, [0], delegate)

    with pytest.raises(
        RuntimeError, match=r"Node number 4 \(Named\) failed to prepare.Restored original execution plan"
    ):
        tfl.Interpreter(
            model_content=arithmetic_model(), experimental_delegates=[tfl.Delegate(prepare=prepare)]
        )

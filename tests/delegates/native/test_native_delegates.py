"""Native delegates (issue #19): C++ delegates compiled here, loaded by pytflite's `load_delegate` and,
for comparison, by ai-edge-litert's own `load_delegate` of the same library."""

from __future__ import annotations

import ctypes
import gc
import subprocess

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.types import AllocationType
from pytflite.delegates.native import abi
from pytflite.delegates.native.context import native_context, tensor_address
from pytflite.delegates.native.printf import ReportErrorFn, format_printf, split_arguments
from pytflite.model.builder import ModelBuilder
from tests.delegates.native.helpers import delegate_nodes, make_interpreter
from tests.oracle import litert, requires_litert

pytestmark = pytest.mark.skipif(abi.check_platform() is not None, reason=str(abi.check_platform()))

SHAPE = [2, 3]


def chain_model() -> bytes:
    """out = abs(relu(x + y) * y) - y: ADD and MUL, then ABS (which the delegate never claims), then SUB."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, SHAPE, shape_signature=[-1, 3])
    y = builder.add_input("y", T.FLOAT32, SHAPE, shape_signature=[-1, 3])
    a, m, t, out = (builder.add_tensor(name, T.FLOAT32, SHAPE) for name in ("a", "m", "t", "out"))
    builder.add_operator(Op.ADD, [x, y], [a], {"fused_activation_function": "RELU"})
    builder.add_operator(Op.MUL, [a, y], [m])
    builder.add_operator(Op.ABS, [m], [t])
    builder.add_operator(Op.SUB, [t, y], [out])
    builder.add_output(out)
    return builder.build()


MODEL = chain_model()


def inputs(rows: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((rows, 3)).astype(np.float32) for _ in range(2)]


def interpreter(module, delegates):
    return make_interpreter(module, MODEL, delegates)


def invoke(interp, values: list[np.ndarray]) -> np.ndarray:
    for detail, value in zip(interp.get_input_details(), values):
        if list(detail["shape"]) != list(value.shape):
            interp.resize_tensor_input(detail["index"], value.shape)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), values):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


# --- layouts -------------------------------------------------------------------------------------------


def test_ctypes_layouts_match_the_compiled_header(built):
    """Sizes and field offsets printed by a C++ program over the header equal the ctypes layouts."""
    printed = subprocess.run([built["layout"]], capture_output=True, text=True, check=True).stdout.split("\n")
    checked = 0
    for line in filter(None, printed):
        name, value = line.split()
        struct_name, _, field = name.partition(".")
        struct = getattr(abi, struct_name)
        ours = getattr(struct, field).offset if field else ctypes.sizeof(struct)
        assert ours == int(value), f"{name}: ctypes says {ours}, g++ says {value}"
        checked += 1
    assert checked > 40
    assert ctypes.sizeof(abi.TfLiteTensor) == 112 and ctypes.sizeof(abi.TfLiteContext) == 200


# --- against LiteRT ------------------------------------------------------------------------------------


@requires_litert
@pytest.mark.parametrize(
    ("options", "partitions"),
    [
        ({}, [("ADD", "MUL"), ("SUB",)]),
        ({"ops": "ADD,SUB"}, [("ADD",), ("SUB",)]),
        ({"max_partitions": 1}, [("ADD", "MUL")]),
        ({"worker_thread": 1}, [("ADD", "MUL"), ("SUB",)]),  # calls back from its own thread: no deadlock
        ({"buffer_handles": 1}, [("ADD", "MUL"), ("SUB",)]),  # outputs kept in the delegate's buffers
        ({"scratch": 1}, [("ADD", "MUL"), ("SUB",)]),  # kernels replace node->temporaries
        ({"profile": 1}, [("ADD", "MUL"), ("SUB",)]),  # kernels time their ops when there is a profiler
        ({"external_context": 1}, [("ADD", "MUL"), ("SUB",)]),  # Set/GetExternalContext round trip
    ],
)
def test_delegate_runs_as_under_litert(built, options, partitions):
    ours = interpreter(pytflite, [pytflite.load_delegate(built["arith"], options)])
    theirs = interpreter(litert, [litert.load_delegate(str(built["arith"]), options)])
    assert [p.op_names for p in ours.delegate_partitions()] == partitions
    assert delegate_nodes(ours) == delegate_nodes(theirs) == len(partitions)
    # the same shapes twice (the second run takes the check-free steps), then a resize (delegates redone)
    for values in (inputs(2, 0), inputs(2, 1), inputs(5, 2)):
        np.testing.assert_array_equal(invoke(ours, values), invoke(theirs, values))


def test_delegate_kernels_work_in_the_arena_in_place(built):
    """The TfLiteTensor structs point at the tensors' own arrays: no copies at the partition boundary."""
    ours = interpreter(pytflite, [pytflite.load_delegate(built["arith"])])
    x, y = inputs(2, 3)
    result = invoke(ours, [x, y])
    subgraph = ours.subgraphs[0]
    native = native_context(subgraph.context)
    for partition in ours.delegate_partitions():
        for index in (*partition.input_tensors, *partition.output_tensors):
            assert native.struct.tensors and tensor_address(subgraph.tensors[index].data) is not None
            assert native._tensors[index].data == tensor_address(subgraph.tensors[index].data)
    np.testing.assert_array_equal(result, np.abs(np.maximum(x + y, 0) * y) - y)


@requires_litert
def test_delegate_buffers_are_copied_back_and_freed_as_in_litert(built):
    """With buffer_handles=1 each partition's outputs stay in the delegate's buffers, marked stale: the
    runtime copies `m` back before ABS reads it and `out` after invoke (2 copies per invoke), and frees
    both handles when the interpreter goes, in pytflite as in LiteRT."""
    library = ctypes.CDLL(str(built["arith"]))

    def copies_and_frees() -> tuple[int, int]:
        counts = (ctypes.c_int * 2)()
        library.arith_delegate_buffer_counts(counts)
        return tuple(counts)

    for runtime in (pytflite, litert):
        gc.collect()
        copies_and_frees()
        interp = interpreter(runtime, [runtime.load_delegate(str(built["arith"]), {"buffer_handles": 1})])
        for values in (inputs(2, 7), inputs(2, 8), inputs(4, 9)):
            x, y = values
            np.testing.assert_array_equal(invoke(interp, values), np.abs(np.maximum(x + y, 0) * y) - y)
            assert copies_and_frees() == (2, 0), runtime.__name__
        if runtime is pytflite:  # what the C code wrote into the TfLiteTensor structs, read back
            m = interp.subgraphs[0].tensors[3]
            assert (m.name, m.data_is_stale) == ("m", False) and m.buffer_handle >= 0
            assert m.delegate is interp._delegates[0]
        del interp
        gc.collect()
        assert copies_and_frees() == (0, 2), runtime.__name__


def test_a_handle_attached_from_python_does_not_end_the_delegate_early(built):
    """Only handles C code wrote keep a native delegate alive: freeing one attached from Python
    (Delegation.set_buffer_handle) must not count as a release, or the C delegate would be destroyed while
    its kernels still run."""
    library = ctypes.CDLL(str(built["arith"]))
    gc.collect()
    live = library.arith_delegate_live_count()
    delegate = pytflite.load_delegate(built["arith"], {"buffer_handles": 1})
    interp = interpreter(pytflite, [delegate])
    invoke(interp, inputs(2, 11))
    delegation = interp.subgraphs[0].delegation
    users = delegate._plugin.users  # its kernels and the handles C code gave tensors
    for handle in range(1000, 1006):  # an input the delegate never gave a handle; each call frees the last
        delegation.set_buffer_handle(0, handle, delegate)
    assert delegate._plugin.users == users
    del delegate
    x, y = inputs(2, 12)
    np.testing.assert_array_equal(invoke(interp, [x, y]), np.abs(np.maximum(x + y, 0) * y) - y)
    assert library.arith_delegate_live_count() == live + 1
    del interp, delegation
    gc.collect()
    assert library.arith_delegate_live_count() == live


def test_a_delegate_node_has_its_tensor_lists_from_its_creation(built):
    """A Prepare that reads the plan again after replacing nodes (inspect_plan=1) gets the DELEGATE nodes
    with their inputs, outputs, intermediates and temporaries, as TFLite gives a node when it is added:
    NULL there would crash the delegate, as it did before the kernel's own prepare had run."""
    ours = interpreter(pytflite, [pytflite.load_delegate(built["arith"], {"inspect_plan": 1})])
    assert delegate_nodes(ours) == 2
    x, y = inputs(2, 13)
    np.testing.assert_array_equal(invoke(ours, [x, y]), np.abs(np.maximum(x + y, 0) * y) - y)


def test_handles_of_a_delegate_without_free_buffer_handle_do_not_keep_it_alive(built):
    """A delegate whose buffers go with it (no FreeBufferHandle) is still destroyed with the interpreter
    once the tensors holding its buffer handles let go of them."""
    library = ctypes.CDLL(str(built["arith"]))
    gc.collect()
    live = library.arith_delegate_live_count()
    delegate = pytflite.load_delegate(built["arith"], {"buffer_handles": 1, "no_free_handle": 1})
    ours = interpreter(pytflite, [delegate])
    x, y = inputs(2, 14)
    np.testing.assert_array_equal(invoke(ours, [x, y]), np.abs(np.maximum(x + y, 0) * y) - y)
    del delegate, ours
    gc.collect()
    assert library.arith_delegate_live_count() == live


def test_c_pointers_in_a_tensor_struct_stay_until_what_they_describe_changes(built):
    """TFLite keeps tensor->dims (and the name, the quantization) until a resize; C code may hold them.
    With buffer_handles=1 every invoke changes data_is_stale and the buffer handle fields, so the struct
    is written again: its dims and name pointers must not move (the old buffers would be freed)."""
    interp = interpreter(pytflite, [pytflite.load_delegate(built["arith"], {"buffer_handles": 1})])
    invoke(interp, inputs(2, 13))
    native = native_context(interp.subgraphs[0].context)
    m = next(t.index for t in interp.subgraphs[0].tensors if t.name == "m")
    before = (native._tensors[m].dims, native._tensors[m].name)
    invoke(interp, inputs(2, 14))
    invoke(interp, inputs(2, 15))
    assert (native._tensors[m].dims, native._tensors[m].name) == before
    invoke(interp, inputs(3, 16))  # a resize: new dims, as in TFLite
    assert native._tensors[m].dims != before[0]
    assert abi.read_int_array(native._tensors[m].dims) == (3, 3)


def test_kernel_replacing_its_temporaries(built):
    """A kernel's Prepare adds a tensor, frees node->temporaries and points it at a new array holding the
    tensor, then types and sizes it in the C struct: the DELEGATE node gets that arena temporary."""
    ours = interpreter(pytflite, [pytflite.load_delegate(built["arith"], {"scratch": 1})])
    invoke(ours, inputs(3, 10))
    subgraph = ours.subgraphs[0]
    delegate_steps = [i for i in subgraph.execution_plan if subgraph.nodes[i][1].builtin_code == Op.DELEGATE]
    temporaries = [subgraph.nodes[i][0].temporaries for i in delegate_steps]
    assert [len(t) for t in temporaries] == [1, 1] and temporaries[0] != temporaries[1]
    for (index,) in temporaries:
        tensor = subgraph.tensors[index]
        assert (tensor.type, tensor.shape, tensor.allocation_type) == (
            T.FLOAT32,
            (9,),
            AllocationType.ARENA_RW,
        )
        assert tensor.data is not None


# --- failures ------------------------------------------------------------------------------------------


@requires_litert
def test_creation_failure_reads_as_in_litert(built):
    library = str(built["arith"])
    with pytest.raises(ValueError) as ours:
        pytflite.load_delegate(library, {"fail": "no device"})
    with pytest.raises(ValueError) as theirs:
        litert.load_delegate(library, {"fail": "no device"})
    assert (
        str(ours.value)
        == str(theirs.value)
        == f"Failed to load delegate from {library}\nArithDelegate refused: no device"
    )


def test_library_without_plugin_entry_points_is_refused(built):
    library = str(built["no_entry_points"])
    with pytest.raises(
        ValueError, match=rf"^Failed to load delegate from {library}\n.*does not export tflite_plugin"
    ):
        pytflite.load_delegate(library)


def test_opaque_api_delegate_is_refused_at_load(built):
    with pytest.raises(ValueError, match="opaque delegate API"):
        pytflite.load_delegate(built["arith"], {"opaque": 1})


def test_failing_delegate_prepare_leaves_a_usable_interpreter(built):
    """The runtime refuses the delegate's bad request (kTfLiteError), the delegate gives up, and the
    interpreter runs on its CPU kernels."""
    ours = interpreter(pytflite, [])
    with pytest.raises(
        RuntimeError, match="node index 100000 out of range.*Restored original execution plan"
    ):
        ours.modify_graph_with_delegate(pytflite.load_delegate(built["arith"], {"probe_bad_node": 1}))
    x, y = inputs(2, 4)
    np.testing.assert_array_equal(invoke(ours, [x, y]), np.abs(np.maximum(x + y, 0) * y) - y)
    assert delegate_nodes(ours) == 0


def test_python_exception_in_a_callback_is_an_error_status(built, monkeypatch):
    from pytflite.delegates.native.context import NativeContext

    def broken(self, plan_out):
        raise ZeroDivisionError("plan exploded")

    monkeypatch.setattr(NativeContext, "get_execution_plan", broken)
    ours = interpreter(pytflite, [])
    with pytest.raises(RuntimeError, match="ZeroDivisionError: plan exploded"):
        ours.modify_graph_with_delegate(pytflite.load_delegate(built["arith"]))
    monkeypatch.undo()
    x, y = inputs(2, 5)
    np.testing.assert_array_equal(invoke(ours, [x, y]), np.abs(np.maximum(x + y, 0) * y) - y)


# --- ReportError and teardown --------------------------------------------------------------------------


def test_report_error_formats_the_variadic_arguments(built):
    """A C caller's printf arguments, in registers and on the stack, come out formatted."""
    library = ctypes.CDLL(str(built["arith"]))
    lines = []

    def report(context, fmt, *arguments):
        lines.append(format_printf(fmt, *split_arguments(arguments)))

    callback = ReportErrorFn(report)
    library.arith_delegate_report.argtypes = [ctypes.c_void_p, ReportErrorFn]
    library.arith_delegate_report(None, callback)
    assert lines == [
        "int -42 uint 4000000000 long -1234567890123 size 77 hex 0xff char Z str text pct % f 3.142 g 0.5 e 1.23e+04",
        "1 2 3 4 5 6 7 8 9 10 | 1.500000 2.500000 3.500000 4.500000 5.500000 6.500000 7.500000 8.500000 "
        "9.500000 10.500000",
    ]


def test_delegate_is_destroyed_when_nothing_uses_it(built):
    library = ctypes.CDLL(str(built["arith"]))
    gc.collect()  # other tests' garbage
    before = library.arith_delegate_live_count()
    delegate = pytflite.load_delegate(built["arith"])
    ours = interpreter(pytflite, [delegate])
    invoke(ours, inputs(2, 6))
    assert library.arith_delegate_live_count() == before + 1
    del delegate  # the interpreter's kernels still use it
    gc.collect()
    assert library.arith_delegate_live_count() == before + 1
    del ours
    gc.collect()
    assert library.arith_delegate_live_count() == before


def test_builtin_data_is_written_as_the_c_option_structs():
    """Schema enums become TfLite's (padding VALID is 2 in C), fields keep their values."""
    from pytflite.delegates.native.builtin_data import c_builtin_data
    from pytflite.model import options

    conv = c_builtin_data(
        Op.CONV_2D,
        options.Conv2DOptions(
            padding=options.Padding.VALID, stride_w=2, stride_h=3, fused_activation_function=3
        ),
    )
    assert (conv.padding, conv.stride_width, conv.stride_height, conv.activation) == (2, 2, 3, 3)
    assert (conv.dilation_width_factor, conv.dilation_height_factor) == (1, 1)
    pool = c_builtin_data(Op.MAX_POOL_2D, options.Pool2DOptions(padding=options.Padding.SAME, filter_width=4))
    assert (pool.padding, pool.filter_width) == (1, 4)
    reshape = c_builtin_data(Op.RESHAPE, options.ReshapeOptions(new_shape=(1, -1, 7)))
    assert (reshape.num_dimensions, list(reshape.shape)[:3]) == (3, [1, -1, 7])
    assert c_builtin_data(Op.MEAN, options.ReducerOptions(keep_dims=True)).keep_dims
    assert (
        c_builtin_data(Op.ADD, None).activation == 0
    )  # no options in the model: zeros, as TFLite's defaults
    assert c_builtin_data(Op.TANH, None) is None

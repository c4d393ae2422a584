"""LiteRT's own Python API checks (the behaviours of tflite/python/interpreter_test.py, written anew):
InterpreterWithCustomOps and its registerers, load_delegate, string tensors, num_threads. Each check runs
against ai-edge-litert too where LiteRT has the behaviour, and compares exception types and messages."""

from __future__ import annotations

import importlib.metadata
import re
import textwrap
import warnings

import numpy as np
import pytest

import pytflite
import pytflite.interpreter as ours
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from tests.oracle import CORPUS, litert, requires_litert
from tests.tensor_listing import RESOLVERS, assert_listed_as_litert
from tests.test_interpreter_api import assert_same_outcome, mlp_model, outcome

pytestmark = requires_litert

MODEL = mlp_model()
X = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)


def outputs(interpreter) -> list[np.ndarray]:
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], X)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


# --- InterpreterWithCustomOps ------------------------------------------------------------------------

CALLS: list[str] = []


def twice_model() -> bytes:
    """x -> custom "Twice" -> y: runs only where a registerer added Twice."""
    builder = ModelBuilder()
    x = builder.add_input("x", T.FLOAT32, [3])
    y = builder.add_tensor("y", T.FLOAT32, [3])
    builder.add_operator("Twice", [x], [y])
    builder.add_output(y)
    return builder.build()


def register_twice(resolver: pytflite.MutableOpResolver) -> None:
    """A registerer, found by name as tests.test_litert_api:register_twice or .register_twice."""
    assert resolver.find_builtin(Op.ADD, 1) is not None  # the builtins are there already
    CALLS.append("by name")

    def prepare(context, node):
        context.resize_tensor(context.tensors[node.outputs[0]], context.tensors[node.inputs[0]].shape)

    def invoke(context, node):
        np.multiply(context.tensors[node.inputs[0]].data, 2, out=context.tensors[node.outputs[0]].data)

    resolver.add_custom("Twice", pytflite.Registration(prepare=prepare, invoke=invoke, custom_name="Twice"))


NOT_A_FUNCTION = 42


def test_exported_where_litert_exports_them():
    for name in ("InterpreterWithCustomOps", "load_delegate", "Delegate", "Interpreter", "SignatureRunner"):
        assert hasattr(litert, name) and hasattr(ours, name), name
    assert pytflite.InterpreterWithCustomOps is ours.InterpreterWithCustomOps
    assert pytflite.load_delegate is ours.load_delegate


def test_no_custom_ops_is_a_plain_interpreter():
    for registerers in (None, []):
        mine = ours.InterpreterWithCustomOps(model_content=MODEL, custom_op_registerers=registerers)
        theirs = litert.InterpreterWithCustomOps(model_content=MODEL, custom_op_registerers=registerers)
        assert mine._safe_to_run() and theirs._safe_to_run()
        for a, b in zip(outputs(mine), outputs(theirs)):
            np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize(
    "registerer",
    [register_twice, "tests.test_litert_api:register_twice", "tests.test_litert_api.register_twice"],
    ids=["function", "module:function", "module.function"],
)
def test_registerer_adds_its_ops(registerer):
    CALLS.clear()
    interpreter = ours.InterpreterWithCustomOps(
        model_content=twice_model(), custom_op_registerers=[registerer]
    )
    assert CALLS == ["by name"]
    interpreter.allocate_tensors()
    interpreter.set_tensor(0, np.float32([1, 2, 3]))
    interpreter.invoke()
    np.testing.assert_array_equal(interpreter.get_tensor(1), [2, 4, 6])


def test_named_registerers_run_before_functions_as_in_litert():
    CALLS.clear()
    ours.InterpreterWithCustomOps(
        model_content=twice_model(),
        custom_op_registerers=[
            lambda resolver: CALLS.append("function"),
            "tests.test_litert_api.register_twice",
        ],
    )
    assert CALLS == ["by name", "function"]


@pytest.mark.parametrize(
    "name",
    [
        "CompletelyBogusRegistererName",
        "no_such_module_xyz.Registerer",
        "tests.test_litert_api:missing_function",
        "tests.test_litert_api.NOT_A_FUNCTION",
    ],
)
def test_registerer_failure(name):
    results = [
        outcome(lambda kind=kind: kind(model_content=MODEL, custom_op_registerers=[name]))
        for kind in (ours.InterpreterWithCustomOps, litert.InterpreterWithCustomOps)
    ]
    for kind, message in results:
        assert kind is not str and issubclass(kind, ValueError), results
        # the reason (after "with error") is the platform's: dlerror's text there, the import's here
        assert message.startswith(f"Looking up symbol '{name}' failed with error '"), message
        assert message.endswith("'."), message


def test_model_errors_come_before_registerer_errors():
    for kwargs in ({}, {"model_content": b"not a model at all"}):
        results = [
            outcome(lambda kind=kind: kind(custom_op_registerers=["bogus"], **kwargs))
            for kind in (ours.InterpreterWithCustomOps, litert.InterpreterWithCustomOps)
        ]
        for kind, message in results:
            assert issubclass(kind, ValueError) and "Looking up symbol" not in message, results


def test_a_registerer_that_is_neither_name_nor_function_is_a_type_error():
    for kind in (ours.InterpreterWithCustomOps, litert.InterpreterWithCustomOps):
        with pytest.raises(TypeError):
            kind(model_content=MODEL, custom_op_registerers=[3])


# --- load_delegate -----------------------------------------------------------------------------------

PLUGIN = """
from pytflite.delegates.replay import ReplayDelegate
from pytflite import BuiltinOperator

def tflite_plugin_create_delegate(options):
    if options.get("fail"):
        raise ValueError("Fail argument sent.")
    return ReplayDelegate(ops=[BuiltinOperator[name] for name in options.get("ops", "MUL").split(",")])
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A Python delegate plugin: importable as `mlp_plugin`, and as a file."""
    path = tmp_path / "mlp_plugin.py"
    path.write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


def run_app(interpreter_module, library, options=None):
    """Code written for LiteRT: try the delegate, fall back to the CPU (tf.lite's documented pattern)."""
    try:
        delegates = [interpreter_module.load_delegate(library, options)]
    except (ValueError, OSError):  # LiteRT: OSError when it cannot open the library
        delegates = []
    interpreter = interpreter_module.InterpreterWithCustomOps(
        model_content=MODEL, custom_op_registerers=[], experimental_delegates=delegates
    )
    return delegates, outputs(interpreter), interpreter


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # LiteRT's Delegate.__del__
@pytest.mark.parametrize("spec", ["mlp_plugin", "file", "pytflite.delegates.replay:ReplayDelegate"])
def test_an_application_written_for_litert_runs_with_a_python_delegate(plugin, spec):
    library = str(plugin) if spec == "file" else spec
    options = {"ops": [Op.MUL]} if spec.endswith("ReplayDelegate") else {"ops": "MUL"}
    delegates, mine, interpreter = run_app(ours, library, options)
    assert len(delegates) == 1
    assert [p.op_names for p in interpreter.delegate_partitions()] == [("MUL",)]
    _, theirs, _ = run_app(litert, library, options)  # LiteRT cannot load it and falls back to the CPU
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_delegate_creation_failure_is_litert_value_error(plugin):
    with pytest.raises(ValueError, match=r"^Failed to load delegate from mlp_plugin\n") as error:
        ours.load_delegate("mlp_plugin", {"fail": True})
    assert "Fail argument sent." in str(error.value)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # LiteRT's Delegate.__del__
@pytest.mark.parametrize("library", ["libedgetpu.so.1", "delegate.dll", "libmetal_delegate.dylib"])
def test_native_libraries_fail_as_in_litert_and_say_what_loads(library):
    with pytest.raises(ValueError) as mine:
        ours.load_delegate(library)
    text = str(mine.value)
    assert text.startswith(f"Failed to load delegate from {library}\n")
    assert "pytflite loads Python delegates" in text and "tflite_plugin_create_delegate" in text
    # LiteRT cannot open a library that is not there: an OSError, which fallback code may catch instead
    theirs = outcome(lambda: litert.load_delegate(library))
    assert issubclass(theirs[0], OSError) and isinstance(mine.value, OSError)


@pytest.mark.parametrize(
    ("library", "reason"),
    [
        ("no_such_module_xyz", "is not module:Factory and not an importable module"),
        ("json", "defines no tflite_plugin_create_delegate(options)"),
        ("pytflite.delegates.replay:Missing", "has no attribute Missing"),
        ("json:JSONDecoder", "did not return a delegate (got JSONDecoder)"),
        ("json:dumps", "json:dumps(): dumps() missing 1 required positional argument"),
        ("replay:NOT_AN_OP", "unknown builtin operator"),
    ],
)
def test_unloadable_specs_name_the_problem(library, reason):
    with pytest.raises(
        ValueError, match=rf"^Failed to load delegate from {re.escape(library)}\n.*{re.escape(reason)}"
    ):
        ours.load_delegate(library)


# --- string tensors ----------------------------------------------------------------------------------


def string_models() -> dict[str, bytes]:
    """gather_string (a [10] string input gathered by [3] int64 indices) and a 0-d string input."""
    gather = ModelBuilder()
    x = gather.add_input("input", T.STRING, [10])
    indices = gather.add_input("indices", T.INT64, [3])
    y = gather.add_tensor("output", T.STRING, [3])
    gather.add_operator(Op.GATHER, [x, indices], [y], {"axis": 0})
    gather.add_output(y)
    gather.add_signature("serving_default", {"input": x, "indices": indices}, {"output": y})
    zero_d = ModelBuilder()
    x = zero_d.add_input("input", T.STRING, [])
    shape = zero_d.add_constant("shape", np.array([1], np.int32))
    y = zero_d.add_tensor("output", T.STRING, [1])
    zero_d.add_operator(Op.RESHAPE, [x, shape], [y])
    zero_d.add_output(y)
    return {"gather": gather.build(), "zero_d": zero_d.build()}


STRING_MODELS = string_models()


def both(name: str):
    pair = []
    for kind in (pytflite.Interpreter, litert.Interpreter):
        interpreter = kind(model_content=STRING_MODELS[name])
        interpreter.allocate_tensors()
        pair.append(interpreter)
    return pair


class OtherLibraryTensor:
    """A tensor of another library: has a shape and converts to NumPy, but is no ndarray."""

    def __init__(self, array):
        self._array = array
        self.shape = array.shape

    def __array__(self, dtype=None, copy=None):
        return self._array


@pytest.mark.parametrize(
    "value",
    [np.array(b"abcd" + bytes(16)), np.array(b"hi\x00"), np.array("abc"), np.array(b"")],
    ids=["trailing-nuls", "one-nul", "str", "empty"],
)
def test_zero_dim_string_keeps_its_raw_bytes(value):
    got = []
    for interpreter in both("zero_d"):
        interpreter.set_tensor(0, value)
        interpreter.invoke()
        got.append((interpreter.get_tensor(0).item(0), interpreter.get_tensor(2).tolist()))
    assert got[0] == got[1]
    assert len(got[0][0]) == value.nbytes


def test_string_gather_as_litert():
    got = []
    for interpreter in both("gather"):
        interpreter.set_tensor(1, np.array([1, 2, 3], np.int64))
        interpreter.set_tensor(0, np.array(list("abcdefghij")))
        interpreter.invoke()
        got.append(interpreter.get_tensor(2))
    assert got[0].tolist() == got[1].tolist() == [b"b", b"c", b"d"]
    assert got[0].dtype == got[1].dtype


@pytest.mark.parametrize(
    "value",
    [
        list("abcdefghij"),
        tuple("abcdefghij"),
        OtherLibraryTensor(np.array(list("abcdefghij"))),
        b"abc",
        np.bytes_(b"abc"),
        np.array([1, b"a", *[b"b"] * 8], dtype=object),
        list(range(10)),
    ],
    ids=["list", "tuple", "other-tensor", "bytes", "numpy-bytes", "object-int", "int-list"],
)
def test_string_input_must_be_a_numpy_array(value):
    results = []
    for interpreter in both("gather"):
        results.append(outcome(lambda interpreter=interpreter: interpreter.set_tensor(0, value)))
    assert_same_outcome(*results)


def test_signature_runner_refuses_another_librarys_tensor_as_litert():
    value = OtherLibraryTensor(np.array(list("abcdefghij")))
    results = []
    for interpreter in both("gather"):
        runner = interpreter.get_signature_runner()
        results.append(outcome(lambda runner=runner: runner(input=value, indices=np.int64([1, 2, 3]))))
    assert_same_outcome(*results)
    assert results[0][1] == "Passed in value type is not a numpy array, got type OtherLibraryTensor."


def test_signature_runner_refuses_a_list_for_a_string_input():
    """LiteRT fails earlier here, reading the list's `.shape` (AttributeError); pytflite takes lists for
    other inputs, so a string input gets set_tensor's ValueError."""
    runner = both("gather")[0].get_signature_runner()
    with pytest.raises(ValueError, match="^Passed in value type is not a numpy array, got type list.$"):
        runner(input=list("abcdefghij"), indices=np.int64([1, 2, 3]))
    result = runner(input=np.array(list("abcdefghij")), indices=[1, 2, 3])
    assert result["output"].tolist() == [b"b", b"c", b"d"]


# --- num_threads -------------------------------------------------------------------------------------


def test_threadpoolctl_is_a_required_dependency():
    requirements = importlib.metadata.requires("pytflite") or []
    assert any(re.match(r"threadpoolctl\b[^;]*$", r) for r in requirements), requirements


def test_num_threads_gives_the_same_float_results_without_warnings():
    """num_threads is what TFLite's context recommends to kernels and delegates; NumPy's BLAS runs on one
    thread whatever it is (core/blas_threads.py), so float results do not change with it."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = outputs(pytflite.Interpreter(model_content=MODEL))
        for threads in (1, 2, 4):
            for a, b in zip(
                outputs(pytflite.Interpreter(model_content=MODEL, num_threads=threads)), expected
            ):
                np.testing.assert_array_equal(a, b)


# --- get_tensor_details -----------------------------------------------------------------------------


def _float_conv(builder: ModelBuilder) -> int:
    """A model input x [1, 8, 8, 3] through a float CONV_2D 3x3 to 4 channels: its output tensor."""
    x = builder.add_input("x", T.FLOAT32, [1, 8, 8, 3])
    w = builder.add_constant("w", np.linspace(-1, 1, 4 * 3 * 3 * 3, dtype=np.float32).reshape(4, 3, 3, 3))
    b = builder.add_constant("b", np.zeros(4, np.float32))
    c = builder.add_tensor("c", T.FLOAT32, [1, 8, 8, 4])
    builder.add_operator(Op.CONV_2D, [x, w, b], [c], {"padding": "SAME", "stride_h": 1, "stride_w": 1})
    return c


def conv_model() -> bytes:
    """x -> CONV_2D 3x3 -> AVERAGE_POOL_2D: kernels whose pytflite versions keep scratch memory."""
    builder = ModelBuilder()
    c = _float_conv(builder)
    y = builder.add_tensor("y", T.FLOAT32, [1, 4, 4, 4])
    pool = {"padding": "VALID", "stride_h": 2, "stride_w": 2, "filter_height": 2, "filter_width": 2}
    builder.add_operator(Op.AVERAGE_POOL_2D, [c], [y], pool)
    builder.add_output(y)
    return builder.build()


def test_tensor_details_leave_out_pytflites_kernel_scratch_as_litert_has_none():
    """LiteRT's default resolver hands a float convolution to XNNPACK, whose nodes add no tensors: it lists
    the model's tensors only. pytflite's kernels keep scratch tensors of their own, which are no TFLite
    tensors: listed, they would make the count and order differ."""
    model = conv_model()
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    assert any(t.kernel_scratch and t.type is not None for t in interpreter.subgraphs[0].tensors)
    assert len(assert_listed_as_litert(model, "BUILTIN")) == 5


def reduce_after_conv_model() -> bytes:
    """CONV_2D (pytflite's kernel adds scratch tensors at init) then REDUCE_PROD (XNNPACK never takes it,
    so LiteRT's kernel adds its four temporaries under every resolver, three of them listed)."""
    builder = ModelBuilder()
    c = _float_conv(builder)
    axes = builder.add_constant("axes", np.array([1, 2], np.int32))
    y = builder.add_tensor("y", T.FLOAT32, [1, 4])
    builder.add_operator(Op.REDUCE_PROD, [c, axes], [y], {"keep_dims": False})
    builder.add_output(y)
    return builder.build()


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_litert_s_kernel_temporaries_are_listed_under_litert_s_indices(resolver):
    """The temporaries LiteRT's kernels add are listed under the indices LiteRT gives them, whatever
    scratch pytflite's own kernels keep; get_tensor, tensor() and set_tensor reach the same tensors."""
    model = reduce_after_conv_model()
    rows = assert_listed_as_litert(model, resolver)
    prod_temporaries = [row[2:] for row in rows if row[0] >= 6][-3:]
    assert prod_temporaries == [((4,), "int32"), ((2,), "int32"), ((4,), "float32")]
    interpreter = pytflite.Interpreter(
        model_content=model, experimental_op_resolver_type=getattr(pytflite.OpResolverType, resolver)
    )
    interpreter.allocate_tensors()
    for index, _, shape, dtype in rows:
        assert interpreter.get_tensor(index).shape == shape and interpreter.get_tensor(index).dtype == dtype
        assert interpreter._get_tensor_details(index, 0)["index"] == index
    last = rows[-1][0]
    interpreter.set_tensor(last, np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(interpreter.tensor(last)(), np.arange(4))
    with pytest.raises(
        ValueError, match=f"Invalid tensor index {last + 2} exceeds max tensor index {last + 2}"
    ):
        interpreter.get_tensor(last + 2)  # the reduction's fourth temporary, unlisted, is the last one


# every model of the public corpus (the manifest may add more: they are found by name)
CORPUS_MODELS = sorted(path.stem for path in CORPUS.glob("*.tflite")) or ["mobilenet_v2_f32"]


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("name", CORPUS_MODELS)
def test_corpus_tensor_details_are_litert_s(name, resolver):
    """Every corpus model LiteRT loads lists the same tensors, index for index, under every resolver."""
    path = CORPUS / f"{name}.tflite"
    if not path.exists():
        pytest.skip(f"public corpus not found at {CORPUS}")
    try:
        litert.Interpreter(
            model_path=str(path), experimental_op_resolver_type=getattr(litert.OpResolverType, resolver)
        ).allocate_tensors()
    except (RuntimeError, ValueError) as error:  # LiteRT lacks a kernel version, or a custom op
        pytest.skip(f"LiteRT does not run {name} under {resolver}: {str(error).splitlines()[0]}")
    assert_listed_as_litert(path, resolver)
    recorded = np.load(path.with_suffix(".npz"))
    inputs = [recorded[f"input_{i}"] for i in range(len(recorded.files)) if f"input_{i}" in recorded]
    if inputs:  # after a run too: LiteRT's Eval sizes some temporaries its prepare left dynamic
        assert_listed_as_litert(path, resolver, inputs=inputs)

"""What the fuzzer (fuzz/run_fuzz.py) found, reduced to ModelBuilder models: each once ended in a NumPy or
Python error inside a kernel (an IndexError, a failed cast, a write into a constant) or allocated far past
the interpreter's Limits. Each must now be refused with a pytflite error naming the problem, raised by a
check (fuzz.harness.is_refusal), or run as TFLite runs it."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from fuzz.harness import is_refusal
from tflite.BuiltinOptions import BuiltinOptions

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.quantization import AffineQuantization
from pytflite.model.builder import ModelBuilder
from pytflite.model.options import options_class, read_options
from tests.oracle import CORPUS

# a broken loop fails on the iteration limit rather than running forever
BOUNDED = pytflite.Limits(max_while_iterations=100)
SMALL = pytflite.Limits(max_bytes=16 << 20, max_while_iterations=100)


def run(model: bytes, feeds=(), limits: pytflite.Limits = BOUNDED) -> list[np.ndarray]:
    interpreter = pytflite.Interpreter(model_content=model, limits=limits)
    interpreter.allocate_tensors()
    for detail, value in zip(interpreter.get_input_details(), feeds):
        interpreter.set_tensor(detail["index"], value)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]


def refused(model: bytes, message: str, feeds=(), limits: pytflite.Limits = BOUNDED) -> None:
    with pytest.raises(pytflite.InterpreterError, match=message) as caught:
        run(model, feeds, limits)
    assert is_refusal(caught.value), caught.value.__cause__


# --- the model file ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tensor_type", [T.RESOURCE, T.VARIANT], ids=lambda t: t.name)
def test_a_handle_type_constant_is_refused_at_load(tensor_type):
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [3])
    handle = b.add_tensor("handle", tensor_type, [3, 1], data=np.zeros(12, np.uint8))
    y = b.add_tensor("y", T.FLOAT32, [3])
    b.add_operator(Op.ABS, [x], [y])
    b.add_output(y)
    b.add_output(handle)
    with pytest.raises(pytflite.ModelError, match=f"a {tensor_type.name} tensor has a buffer") as caught:
        pytflite.Interpreter(model_content=b.build())
    assert is_refusal(caught.value)


def test_options_union_type_without_its_table_reads_as_the_defaults():
    """A corrupted offset can leave an operator's options type set and its table absent."""
    assert read_options(1, BuiltinOptions.SoftmaxOptions, None) == options_class("SoftmaxOptions")()


def test_an_empty_tensor_read_before_a_later_operator_writes_it():
    """An empty tensor needs no producer, unless an operator writes (and resizes) it: ELU was prepared
    with the [5, 0] input, then RELU6 made that tensor [3] and ELU wrote 3 values into [5, 0]."""
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [3])
    early = b.add_tensor("early", T.FLOAT32, [5, 0])
    y = b.add_tensor("y", T.FLOAT32, [5, 0])
    b.add_operator(Op.ELU, [early], [y])
    b.add_operator(Op.RELU6, [x], [early])
    b.add_output(y)
    with pytest.raises(
        pytflite.ModelError, match="Input tensor 1 to op 0 \\(ELU\\) of subgraph 0 is not produced"
    ):
        pytflite.Interpreter(model_content=b.build())


# --- outputs a kernel cannot write ----------------------------------------------------------------------


def test_var_handle_output_with_no_element_for_the_id():
    b = ModelBuilder()
    handle = b.add_tensor("handle", T.RESOURCE, [0])
    b.add_operator(Op.VAR_HANDLE, [], [handle], {"container": "", "shared_name": "v"})
    b.add_output(handle)
    refused(b.build(), r"VAR_HANDLE output shape \[0\] has no element to hold the resource id")


@pytest.mark.parametrize("op", [Op.LOGISTIC, Op.SOFTMAX], ids=lambda op: op.name)
def test_an_optional_output_is_not_the_last_tensor(op):
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 4])
    y = b.add_tensor("y", T.FLOAT32, [1, 4])
    b.add_operator(Op.ABS, [x], [y])
    b.add_operator(op, [x], [-1], {"beta": 1.0} if op == Op.SOFTMAX else None)
    b.add_output(y)  # the last tensor, which -1 used to reach
    refused(b.build(), "Tensor at index 0 was optional but was expected", [np.ones((1, 4), np.float32)])


# --- IF and WHILE ---------------------------------------------------------------------------------------


def while_model(
    body_input_constant=False, output_type=T.INT32, body_output_written=True, optional_input=False
) -> bytes:
    """i = 0; while i < 3: i += 1 -- with one of the body's or the node's tensors broken."""
    b = ModelBuilder()
    i0 = b.add_input("i0", T.INT32, [])
    out = b.add_tensor("out", output_type, [])
    inputs = [-1] if optional_input else [i0]
    b.add_operator(Op.WHILE, inputs, [out], {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    b.add_output(out)
    cond = b.add_subgraph("cond")
    ci = cond.add_input("i", T.INT32, [])
    less = cond.add_tensor("less", T.BOOL, [])
    cond.add_operator(Op.LESS, [ci, cond.add_constant("three", np.int32(3))], [less])
    cond.add_output(less)
    body = b.add_subgraph("body")
    if body_input_constant:
        bi = body.add_constant("i", np.int32(0))
        body.inputs.append(bi)
    else:
        bi = body.add_input("i", T.INT32, [])
    bo = body.add_tensor("next", T.INT32, [])
    if body_output_written:
        body.add_operator(Op.ADD, [bi, body.add_constant("one", np.int32(1))], [bo])
    body.add_output(bo)
    return b.build()


def test_while_runs_when_nothing_is_broken():
    assert run(while_model(), [np.int32(0)])[0] == 3


def test_while_body_input_that_is_a_constant():
    refused(
        while_model(body_input_constant=True),
        "WHILE body subgraph input 0 is a constant tensor, it cannot receive a value",
        [np.int32(0)],
    )


def test_while_output_of_another_type_than_the_body_gives():
    refused(
        while_model(output_type=T.UINT32),
        "WHILE body subgraph output 0 is INT32, the node's output UINT32",
        [np.int32(0)],
    )


def test_while_body_output_that_no_node_writes():
    refused(
        while_model(body_output_written=False),
        r"WHILE body subgraph output 0 \(tensor \d+\) is never written",
        [np.int32(0)],
    )


def test_while_input_that_is_optional():
    refused(
        while_model(optional_input=True), "Tensor at index 0 was optional but was expected", [np.int32(0)]
    )


def test_while_condition_listing_one_tensor_as_two_inputs():
    """Values of shapes [2] and [3] for one tensor: a copy into the wrong shape at invoke."""
    b = ModelBuilder()
    specs = (("i", []), ("x", [2]), ("y", [3]))
    inputs = [b.add_input(name, T.INT32, shape) for name, shape in specs]
    outs = [b.add_tensor(f"{name}_out", T.INT32, shape) for name, shape in specs]
    b.add_operator(Op.WHILE, inputs, outs, {"cond_subgraph_index": 1, "body_subgraph_index": 2})
    b.add_output(outs[0])
    cond = b.add_subgraph("cond")
    ci, cx = cond.add_input("i", T.INT32, []), cond.add_input("x", T.INT32, [2])
    cond.inputs.append(cx)
    less = cond.add_tensor("less", T.BOOL, [])
    cond.add_operator(Op.LESS, [ci, cond.add_constant("three", np.int32(3))], [less])
    cond.add_output(less)
    body = b.add_subgraph("body")
    bi, bx, by = (body.add_input(name, T.INT32, shape) for name, shape in specs)
    bo = body.add_tensor("next", T.INT32, [])
    body.add_operator(Op.ADD, [bi, body.add_constant("one", np.int32(1))], [bo])
    for output in (bo, bx, by):
        body.add_output(output)
    feeds = [np.int32(0), np.zeros(2, np.int32), np.zeros(3, np.int32)]
    refused(b.build(), r"WHILE condition subgraph input 2 is tensor \d+, already its input 1", feeds)


def test_if_output_of_another_type_than_the_branch_gives():
    b = ModelBuilder()
    cond = b.add_input("cond", T.BOOL, [])
    x = b.add_input("x", T.INT32, [2])
    out = b.add_tensor("out", T.FLOAT32, [2])
    b.add_operator(Op.IF, [cond, x], [out], {"then_subgraph_index": 1, "else_subgraph_index": 2})
    b.add_output(out)
    for name in ("then", "else"):
        branch = b.add_subgraph(name)
        bx = branch.add_input("x", T.INT32, [2])
        result = branch.add_tensor("abs", T.INT32, [2])
        branch.add_operator(Op.ABS, [bx], [result])
        branch.add_output(result)
    refused(
        b.build(),
        "IF then subgraph output 0 is INT32, the node's output FLOAT32",
        [np.array(True), np.array([1, -2], np.int32)],
    )


# --- FULLY_CONNECTED --------------------------------------------------------------------------------------


def test_fully_connected_with_zero_depth_weights_gives_zeros():
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [2, 4])
    w = b.add_constant("w", np.zeros((3, 0), np.float32))
    y = b.add_tensor("y", T.FLOAT32, [2, 3])
    b.add_operator(Op.FULLY_CONNECTED, [x, w, -1], [y])
    b.add_output(y)
    (out,) = run(b.build(), [np.ones((2, 4), np.float32)])
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))  # TFLite's memset


@pytest.mark.parametrize("hybrid", [False, True])
def test_fully_connected_bias_of_rank_three(hybrid):
    """The bias is `units` values whatever its shape: [1, 1, 3] must not broadcast into a new axis."""
    weights = np.array([[1, 0, -1, 2], [0, 1, 1, 0], [2, -1, 0, 1]], np.float32)
    bias = np.array([0.5, -1.0, 2.0], np.float32)
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [2, 4])
    if hybrid:
        q = AffineQuantization([1.0], [0])
        w = b.add_tensor("w", T.INT8, weights.shape, data=weights.astype(np.int8), quantization=q)
    else:
        w = b.add_constant("w", weights)
    bias_index = b.add_constant("b", bias.reshape(1, 1, 3))
    y = b.add_tensor("y", T.FLOAT32, [2, 3])
    b.add_operator(Op.FULLY_CONNECTED, [x, w, bias_index], [y])
    b.add_output(y)
    source = np.array([[1, 2, 3, 4], [-1, 0, 2, 1]], np.float32)
    (out,) = run(b.build(), [source])
    np.testing.assert_allclose(out, source @ weights.T + bias, rtol=0.02, atol=0.1)


# --- LOCAL_RESPONSE_NORMALIZATION ------------------------------------------------------------------------


def _lrn(radius: int) -> bytes:
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 2, 2, 5])
    y = b.add_tensor("y", T.FLOAT32, [1, 2, 2, 5])
    options = {"radius": radius, "bias": 1.0, "alpha": 0.5, "beta": 0.75}
    b.add_operator(Op.LOCAL_RESPONSE_NORMALIZATION, [x], [y], options)
    b.add_output(y)
    return b.build()


def test_local_response_normalization_radius_far_wider_than_the_channels():
    """Its running sums once took 2 * radius values per pixel: 64 GiB for a radius of 2**31 - 1."""
    x = np.random.default_rng(0).standard_normal([1, 2, 2, 5]).astype(np.float32)
    (wide,) = run(_lrn(2**31 - 1), [x], SMALL)
    (covering,) = run(_lrn(5), [x])
    np.testing.assert_array_equal(wide, covering)


# --- scratch held to the Limits before it is allocated ----------------------------------------------------


def _window_model(op: Op) -> bytes:
    """A 2x2 input whose window (a 4001-wide filter, or a 2x2 filter dilated 4000 times) needs a
    4002x4002 padded staging copy: 64 MB of float32, over the 16 MiB limit."""
    b = ModelBuilder()
    x = b.add_input("x", T.FLOAT32, [1, 2, 2, 1])
    y = b.add_tensor("y", T.FLOAT32, [1, 2, 2, 1])
    if op == Op.AVERAGE_POOL_2D:
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
        b.add_operator(op, [x], [y], options | {"filter_height": 4001, "filter_width": 4001})
    else:
        w = b.add_constant("w", np.ones((1, 2, 2, 1), np.float32))
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
        options |= {"dilation_h_factor": 4000, "dilation_w_factor": 4000}
        if op == Op.DEPTHWISE_CONV_2D:
            options["depth_multiplier"] = 1
        b.add_operator(op, [x, w, b.add_constant("bias", np.zeros(1, np.float32))], [y], options)
    b.add_output(y)
    return b.build()


def _transpose_model() -> bytes:
    """A stride-4000 TRANSPOSE_CONV of a 2x2 input: a 4001x4001 output, planned before it was checked."""
    b = ModelBuilder()
    shape = b.add_constant("shape", np.array([1, 4001, 4001, 1], np.int32))
    w = b.add_constant("w", np.ones((1, 1, 1, 1), np.float32))
    x = b.add_input("x", T.FLOAT32, [1, 2, 2, 1])
    y = b.add_tensor("y", T.FLOAT32, [1, 1, 1, 1])  # the kernel sizes it from `shape`
    options = {"padding": "VALID", "stride_h": 4000, "stride_w": 4000}
    b.add_operator(Op.TRANSPOSE_CONV, [shape, w, x], [y], options)
    b.add_output(y)
    return b.build()


@pytest.mark.parametrize(
    "op", [Op.AVERAGE_POOL_2D, Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.TRANSPOSE_CONV], ids=lambda op: op.name
)
def test_scratch_over_the_limit_is_refused_before_it_is_allocated(op):
    model = _transpose_model() if op == Op.TRANSPOSE_CONV else _window_model(op)
    tracemalloc.start()  # NumPy reports its array memory to tracemalloc
    try:
        refused(model, "over the limit of 16777216 bytes", [np.ones((1, 2, 2, 1), np.float32)], SMALL)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < SMALL.max_bytes, f"{peak} bytes allocated before the refusal"


# --- compiled kernels on a constant input (a node folded in prepare reads the model's read-only arrays) ---

_INT8 = AffineQuantization(np.array([0.05], np.float32), np.array([2], np.int64))


def _constant_input_model(op: Op, constant: bool, hybrid_neighbour: bool, units: int) -> bytes:
    """`op` on x [1, 5, 5, 4] (a model constant, or an input fed the same values) to `units` channels,
    then y + z, z an input (fed 0); with `hybrid_neighbour`, a hybrid FULLY_CONNECTED elsewhere puts the
    subgraph in exact-summation mode (the exact float CONV_2D's compiled loops: along the channels, or
    for few channels along the pixels)."""
    rng = np.random.default_rng(61890)
    values = rng.standard_normal([1, 5, 5, 4]).astype(np.float32)
    b = ModelBuilder()
    x = b.add_constant("x", values) if constant else b.add_input("x", T.FLOAT32, [1, 5, 5, 4])
    out_channels = units
    if op == Op.FULLY_CONNECTED:  # hybrid: float input, int8 weights
        flat = b.add_tensor("flat", T.FLOAT32, [25, 4])
        b.add_operator(Op.RESHAPE, [x, b.add_constant("shape", np.array([25, 4], np.int32))], [flat])
        w = b.add_constant("w", rng.integers(-127, 128, [units, 4]).astype(np.int8), quantization=_INT8)
        y = b.add_tensor("y", T.FLOAT32, [25, units])
        bias = b.add_constant("bias", np.ones(units, np.float32))
        b.add_operator(op, [flat, w, bias], [y], {"asymmetric_quantize_inputs": True}, version=3)
        shape = [25, units]
    else:
        w_shape = [1, 3, 3, 4] if op == Op.DEPTHWISE_CONV_2D else [units, 3, 3, 4]
        w = b.add_constant("w", rng.standard_normal(w_shape).astype(np.float32))
        bias = b.add_constant("bias", rng.standard_normal([out_channels]).astype(np.float32))
        y = b.add_tensor("y", T.FLOAT32, [1, 5, 5, out_channels])
        options = {"padding": "SAME", "stride_h": 1, "stride_w": 1}
        if op == Op.DEPTHWISE_CONV_2D:
            options["depth_multiplier"] = 1
        b.add_operator(op, [x, w, bias], [y], options)
        shape = [1, 5, 5, out_channels]
    z = b.add_input("z", T.FLOAT32, [1])
    out = b.add_tensor("out", T.FLOAT32, shape)
    b.add_operator(Op.ADD, [y, z], [out])
    b.add_output(out)
    if hybrid_neighbour:
        u = b.add_input("u", T.FLOAT32, [1, 4])
        w = b.add_constant("w2", rng.integers(-127, 128, [2, 4]).astype(np.int8), quantization=_INT8)
        v = b.add_tensor("v", T.FLOAT32, [1, 2])
        b.add_operator(Op.FULLY_CONNECTED, [u, w, -1], [v], version=3)
        b.add_output(v)
    return b.build(), values


@pytest.mark.parametrize(
    "op, hybrid_neighbour, units",
    [
        (Op.FULLY_CONNECTED, False, 3),
        (Op.DEPTHWISE_CONV_2D, False, 4),
        (Op.DEPTHWISE_CONV_2D, True, 4),
        (Op.CONV_2D, True, 8),
        (Op.CONV_2D, True, 32),
    ],
    ids=["hybrid_fully_connected", "depthwise", "depthwise_exact", "conv_exact_by_pixels", "conv_exact"],
)
def test_a_node_folded_on_a_constant_input_computes_what_it_computes_at_invoke(
    op, hybrid_neighbour, units, kernels
):
    """Seed 11, case 61890: folding a hybrid FULLY_CONNECTED called its compiled row quantizer with the
    model's read-only input, a signature it lacked (a numba TypeError); the compiled depthwise and exact
    CONV_2D loops had the same gap. Folded, each gives what it gives on the same values as an input."""
    constant_model, values = _constant_input_model(op, True, hybrid_neighbour, units)
    input_model, _ = _constant_input_model(op, False, hybrid_neighbour, units)
    extra = [np.ones([1, 4], np.float32)] if hybrid_neighbour else []
    folded = run(constant_model, [np.zeros(1, np.float32), *extra])
    invoked = run(input_model, [values, np.zeros(1, np.float32), *extra])
    for a, b in zip(folded, invoked, strict=True):
        np.testing.assert_array_equal(a, b)


# --- quantization parameters out of range -------------------------------------------------------------


def _int8_fully_connected(input_zero_point: int, depth: int = 48) -> bytes:
    rng = np.random.default_rng(73711)
    b = ModelBuilder()
    q_in = AffineQuantization(np.array([0.5], np.float32), np.array([input_zero_point], np.int64))
    q_w = AffineQuantization(np.array([0.002], np.float32), np.array([0], np.int64))
    q_out = AffineQuantization(np.array([2.0], np.float32), np.array([-128], np.int64))
    x = b.add_input("x", T.INT8, [1, depth], quantization=q_in)
    w = b.add_constant("w", rng.integers(-127, 128, [20, depth]).astype(np.int8), quantization=q_w)
    y = b.add_tensor("y", T.INT8, [1, 20], quantization=q_out)
    b.add_operator(Op.FULLY_CONNECTED, [x, w, -1], [y], version=4)
    b.add_output(y)
    return b.build()


def test_a_zero_point_beyond_int32_is_wrapped_as_litert_holds_it():
    """Seed 11, case 73711: an input zero point of 2**56 + 12 made FULLY_CONNECTED's prepare raise a bare
    OverflowError (its exact-integer bound). LiteRT keeps zero points in C ints: the model runs as
    with zero point 12 (which LiteRT itself runs: compared)."""
    x = np.arange(-24, 24, dtype=np.int8).reshape(1, 48)
    wrapped, plain = _int8_fully_connected((1 << 56) + 12), _int8_fully_connected(12)
    interpreter = pytflite.Interpreter(model_content=wrapped)
    assert interpreter.get_input_details()[0]["quantization_parameters"]["zero_points"].tolist() == [12]
    np.testing.assert_array_equal(run(wrapped, [x])[0], run(plain, [x])[0])
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    reference = litert.Interpreter(
        model_content=plain,
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    reference.allocate_tensors()
    reference.set_tensor(reference.get_input_details()[0]["index"], x)
    reference.invoke()
    np.testing.assert_array_equal(
        run(wrapped, [x])[0], reference.get_tensor(reference.get_output_details()[0]["index"])
    )


def test_integer_sums_past_float64s_exact_range_are_refused_by_a_check():
    refused(_int8_fully_connected((1 << 31) - 1, depth=1 << 15), r"past float64's exact integers \(2\*\*53\)")


def _assign_without_value() -> bytes:
    b = ModelBuilder()
    handle = b.add_tensor("handle", T.RESOURCE, [1])
    b.add_operator(Op.VAR_HANDLE, [], [handle], {"container": "", "shared_name": "v"})
    b.add_operator(Op.ASSIGN_VARIABLE, [handle, -1], [])
    value = b.add_tensor("value", T.FLOAT32, [2])
    b.add_operator(Op.READ_VARIABLE, [handle], [value])
    b.add_output(value)
    return b.build()


def test_assign_variable_without_a_value_is_refused_at_prepare():
    """Seed 11, case 94877: an ASSIGN_VARIABLE whose value input is optional (-1) stored a variable of no
    type, and the READ_VARIABLE after it failed with an AttributeError. Its prepare refuses the missing
    value, as TFLite's GetInputSafe does (LiteRT refuses this model too)."""
    refused(_assign_without_value(), "Tensor at index 1 was optional but was expected")
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    with pytest.raises(RuntimeError):
        reference = litert.Interpreter(model_content=_assign_without_value())
        reference.allocate_tensors()
        reference.invoke()


# --- found by seeds 1-10 (1,000,000 cases) --------------------------------------------------------------

_GRU_CASES = [(2, 69764), (2, 90991), (6, 91579), (7, 76065), (7, 41329), (8, 51215), (10, 56216)]


@pytest.mark.parametrize("seed, case", _GRU_CASES, ids=[f"seed{s}-case{c}" for s, c in _GRU_CASES])
def test_a_while_loop_rerun_unfused_fails_with_its_own_error(seed, case):
    """Mutated gru models: the WHILE's fused row write met values it was not specialized for (the
    internal Respecialize signal), and the unfused rerun then failed in a body kernel (SLICE,
    CONCATENATION, the iteration limit) - raised inside the `except Respecialize`, so the signal hung in
    the error's context as a non-pytflite exception. The rerun now runs after the except block."""
    from fuzz.cases import make_case
    from fuzz.harness import run_case_with_timeout

    if not (CORPUS / "gru.tflite").exists():
        pytest.skip(f"the public corpus (gru.tflite) is not at {CORPUS}")
    label, model = make_case(seed, case)
    assert label.endswith(":gru")
    assert run_case_with_timeout(model, case, 10.0).kind in ("ok", "rejected")


def test_stablehlo_gather_with_a_negative_index_vector_dim_is_refused():
    """Seed 10, case 48858: index_vector_dim -1 passed LiteRT's `<= rank` check and read the indices'
    shape at -1 (an IndexError on a rank-0 index tensor)."""
    b = ModelBuilder()
    operand = b.add_input("operand", T.INT32, [2])
    indices = b.add_input("indices", T.INT64, [])
    y = b.add_tensor("y", T.INT32, [])
    options = {"offset_dims": [], "collapsed_slice_dims": [], "start_index_map": [1], "index_vector_dim": -1}
    b.add_operator(Op.STABLEHLO_GATHER, [operand, indices], [y], {**options, "slice_sizes": [0]})
    b.add_output(y)
    refused(b.build(), "index_vector_dim -1 is negative")


# --- found by the coverage-guided fuzzer (fuzz/guided.py) ---------------------------------------------


@pytest.mark.parametrize(
    "suffix, content",
    [
        (".npy", b""),
        (".npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4', (   \n"),
        (".npz", b"PK\x03\x04garbage"),
    ],
    ids=["empty_npy", "npy_header_cut", "bad_zip"],
)
def test_a_damaged_batch_file_is_a_batch_error_naming_it(tmp_path, suffix, content):
    """An empty .npy made np.load raise EOFError, a cut header tokenize's TokenError, a damaged .npz
    zipfile's BadZipFile, each out of open_source; now a BatchError naming the file."""
    from pytflite.batch.io import open_source
    from pytflite.batch.predictor import BatchError

    path = tmp_path / f"items{suffix}"
    path.write_bytes(content)
    with pytest.raises(BatchError, match=f"items{suffix}: cannot read it") as caught:
        open_source(path, ["x"])
    assert caught.value.__cause__ is None and caught.value.__suppress_context__  # the decoder's, translated


def test_a_damaged_png_item_is_an_item_error(tmp_path):
    """Pillow raises SyntaxError on a broken PNG chunk: the folder reader's load names the item."""
    from pytflite.batch.io import ItemError, open_source

    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x81\xf7\xbc\x0f")
    source = open_source(tmp_path, ["x"])
    with pytest.raises(ItemError, match="a.png"):
        source.load(source.keys[0])


def test_custom_options_that_are_no_flexbuffer_are_a_model_error():
    with pytest.raises(pytflite.ModelError, match="custom options are not a valid flexbuffer"):
        pytflite.decode_custom_options(b"\xff\xff\xff")  # type 63: none of flexbuffers


@pytest.mark.parametrize("scale", [float("nan"), 0.0, 1e-45])
def test_a_fused_activation_bound_that_is_no_int32_is_refused_by_a_check(scale):
    """Guided fuzzing (allocate): a quantized CONV_2D whose output scale was NaN made its RELU bound's
    rounding raise a bare ValueError (float NaN to integer); a zero or tiny scale, an OverflowError."""
    from pytflite.errors import KernelError
    from pytflite.ops.quant.fixed_point import quantize_value

    with pytest.raises(KernelError, match="is not an int32"):
        quantize_value(6.0, scale, 0)

"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL against LiteRT, bit for bit: several seeds
(including ones LiteRT truncates to 32 bits), constant and run-time shapes, repeated invokes (the stream
continues), re-prepares (resize, a lazily prepared node restarting its stream), non-finite logits, and the
errors. Unseeded nodes (seed = seed2 = 0) cannot be reproduced, by design: their distributions are tested.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytflite
from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.model.builder import ModelBuilder
from pytflite.ops.random.philox import philox_words
from tests.oracle import litert_interpreter, requires_litert, run
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert

RANDOM_OPS = (Op.RANDOM_UNIFORM, Op.RANDOM_STANDARD_NORMAL)
# (seed, seed2): LiteRT keeps each seed's low 32 bits, sign-extended (2**31 is -2**31, 2**33 + 1 is 1).
SEEDS = [(1, 2), (42, 0), (0, 7), (-7, 2**33 + 1), (2**31, -1), (123456789, 987654321)]


def _invoke_sequence(model: bytes, steps) -> tuple[list, list]:
    """Run `steps` (callables on an allocated interpreter, each returning outputs) on LiteRT and pytflite."""
    results = []
    for interpreter in (litert_interpreter(model), pytflite.Interpreter(model_content=model)):
        interpreter.allocate_tensors()
        results.append([step(interpreter) for step in steps])
    return results[0], results[1]


def _invoke(*feeds):
    def step(interpreter):
        for detail, value in zip(interpreter.get_input_details(), feeds):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]

    return step


def _assert_same(reference, ours):
    for i, (theirs, mine) in enumerate(zip(reference, ours, strict=True)):
        for a, b in zip(theirs, mine, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape, (
                f"invoke {i}: {b.dtype}{b.shape} != {a.dtype}{a.shape}"
            )
            np.testing.assert_array_equal(b, a, err_msg=f"invoke {i}")


def random_model(op, shape, seed, seed2, constant=True, output_type=T.FLOAT32):
    return SingleOpModel(
        op,
        [Operand(np.array(shape, np.int32), constant=constant)],
        [output_type],
        options={"seed": seed, "seed2": seed2},
    )


def multinomial_model(logits, num_samples, seed, seed2, constant=True, output_type=T.INT64):
    return SingleOpModel(
        Op.MULTINOMIAL,
        [Operand(logits, constant=constant), Operand(np.array(num_samples, np.int32), constant=constant)],
        [output_type],
        options={"seed": seed, "seed2": seed2},
    )


def test_philox_known_answers():
    """Random123's known-answer vectors for Philox-4x32-10, and the counter's carry between its halves."""
    assert philox_words((0, 0), 0, 1).tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = (1 << 128) - 1
    assert philox_words((0xFFFFFFFF,) * 2, ones, 1).tolist() == [
        0x408F276D,
        0x41C83B0E,
        0xA20BC7C6,
        0x6D5451FD,
    ]
    counter = 0x03707344_13198A2E_85A308D3_243F6A88
    assert philox_words((0xA4093822, 0x299F31D0), counter, 1).tolist() == [
        0xD16CFE09,
        0x94FDCCEB,
        0x5001E420,
        0x24126EA1,
    ]
    edge = (5 << 64) | ((1 << 64) - 1)
    np.testing.assert_array_equal(philox_words((3, 4), edge, 3)[4:], philox_words((3, 4), 6 << 64, 2))


@pytest.mark.parametrize("op", RANDOM_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("seed, seed2", SEEDS)
def test_streams_match_litert(op, seed, seed2):
    """Three invokes continue one stream; shapes of every length modulo 4 (normals pair up in blocks)."""
    for shape, constant in (([3, 5, 7], True), ([1001], False), ([2, 1], True), ([4, 0, 3], True)):
        model, feeds = random_model(op, shape, seed, seed2, constant).build()
        _assert_same(*_invoke_sequence(model, [_invoke(*feeds)] * 3))


@pytest.mark.parametrize("op", RANDOM_OPS, ids=lambda op: op.name)
def test_large_output_matches_litert(op):
    """A quarter million values: every logf/sinf/cosf rounding LiteRT's C library makes, reproduced."""
    model, feeds = random_model(op, [250, 1000], 7, 11).build()
    _assert_same(*_invoke_sequence(model, [_invoke(*feeds)] * 2))


@pytest.mark.parametrize("op", RANDOM_OPS, ids=lambda op: op.name)
def test_run_time_shape_and_resize(op):
    """The shape input changes between invokes (the dynamic output follows, the stream goes on); a resize
    of the shape input re-prepares the node, which restarts its stream, as LiteRT does."""
    model, _ = random_model(op, [2, 3], 5, 6, constant=False).build()

    def resize(interpreter):
        index = interpreter.get_input_details()[0]["index"]
        interpreter.resize_tensor_input(index, [3])
        interpreter.allocate_tensors()
        return []

    steps = [
        _invoke(np.array([2, 3], np.int32)),
        _invoke(np.array([5, 1], np.int32)),
        resize,
        _invoke(np.array([2, 3, 4], np.int32)),
        _invoke(np.array([1, 1, 9], np.int32)),
    ]
    reference, ours = _invoke_sequence(model, steps)
    _assert_same(reference, ours)
    assert np.array_equal(ours[3][0].ravel()[:6], ours[0][0].ravel())  # restarted


def test_node_after_dynamic_output_restarts_each_invoke():
    """A node after one with a dynamic output is prepared again inside every invoke (as LiteRT does), so
    its stream restarts each time; the allocate_tensors call in between changes neither stream."""
    builder = ModelBuilder()
    shape = builder.add_input("shape", T.INT32, [2])
    uniform = builder.add_tensor("uniform", T.FLOAT32, [])
    normal_shape = builder.add_tensor("normal_shape", T.INT32, [1], data=np.array([6], np.int32))
    normal = builder.add_tensor("normal", T.FLOAT32, [])
    builder.add_operator(Op.RANDOM_UNIFORM, [shape], [uniform], {"seed": 1, "seed2": 2})
    builder.add_operator(Op.RANDOM_STANDARD_NORMAL, [normal_shape], [normal], {"seed": 3, "seed2": 4})
    builder.add_output(uniform)
    builder.add_output(normal)

    def allocate(interpreter):
        interpreter.allocate_tensors()
        return []

    steps = [_invoke(np.array([2, k], np.int32)) for k in (1, 2, 3)]
    steps += [allocate, _invoke(np.array([1, 1], np.int32))]
    reference, ours = _invoke_sequence(builder.build(), steps)
    _assert_same(reference, ours)
    assert np.array_equal(ours[0][1], ours[2][1])


@pytest.mark.parametrize("seed, seed2", SEEDS[:4])
@pytest.mark.parametrize("output_type", [T.INT32, T.INT64], ids=["int32", "int64"])
def test_multinomial_matches_litert(seed, seed2, output_type):
    """Batches, odd and zero sample counts, a thousand classes, and rows with inf, -inf and NaN logits
    (skipped by the CDF; a row with no finite logit yields num_classes)."""
    rng = np.random.default_rng(seed % 1000)
    logits = (3 * rng.standard_normal((16, 1000))).astype(np.float32)
    logits[1, ::7] = -np.inf
    logits[2, 5] = np.inf
    logits[3, 10:20] = np.nan
    logits[4] = -np.inf
    for num_samples, constant in ((37, True), (64, False), (0, True), (1, False)):
        model, feeds = multinomial_model(logits, num_samples, seed, seed2, constant, output_type).build()
        _assert_same(*_invoke_sequence(model, [_invoke(*feeds)] * 3))


def test_multinomial_resize():
    """A resized logits input re-prepares the node: new batch, restarted stream."""
    logits = np.random.default_rng(0).standard_normal((4, 50)).astype(np.float32)
    model, feeds = multinomial_model(logits, 9, 3, 8, constant=False).build()

    def resize(interpreter):
        interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], [7, 50])
        interpreter.allocate_tensors()
        return []

    bigger = np.random.default_rng(1).standard_normal((7, 50)).astype(np.float32)
    steps = [_invoke(*feeds), _invoke(*feeds), resize, _invoke(bigger, feeds[1]), _invoke(bigger, feeds[1])]
    _assert_same(*_invoke_sequence(model, steps))


def _unseeded_draws(model: bytes, count: int) -> list[np.ndarray]:
    interpreter = pytflite.Interpreter(model_content=model)
    interpreter.allocate_tensors()
    draws = []
    for _ in range(count):
        interpreter.invoke()
        draws.append(interpreter.get_tensor(interpreter.get_output_details()[0]["index"]).copy())
    return draws


@pytest.mark.parametrize("seed", [0, 2**32], ids=["zero", "truncated-to-zero"])
def test_unseeded_uniform_and_normal(seed):
    """seed = seed2 = 0 (after LiteRT's 32-bit truncation) draws fresh seeds: each interpreter gets its
    own stream, which LiteRT's cannot be compared with; values follow U[0, 1) and N(0, 1)."""
    n = 200_000
    uniform_model, _ = random_model(Op.RANDOM_UNIFORM, [n], seed, 0).build()
    first, second = _unseeded_draws(uniform_model, 2)
    other = _unseeded_draws(uniform_model, 1)[0]
    assert not np.array_equal(first, second) and not np.array_equal(first, other)
    assert first.min() >= 0 and first.max() < 1
    # mean 1/2, variance 1/12, equal-width decile counts: each within ~5 standard errors
    assert abs(first.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n)
    assert abs(first.var() - 1 / 12) < 5 * np.sqrt(1 / 180 / n)
    counts = np.histogram(first, bins=10, range=(0, 1))[0]
    assert np.all(np.abs(counts - n / 10) < 5 * np.sqrt(n * 0.09))

    normal_model, _ = random_model(Op.RANDOM_STANDARD_NORMAL, [n], seed, 0).build()
    values = _unseeded_draws(normal_model, 1)[0]
    assert abs(values.mean()) < 5 / np.sqrt(n)
    assert abs(values.var() - 1) < 5 * np.sqrt(2 / n)
    below = np.array([np.mean(values < q) for q in (-1.0, 0.0, 1.0)])
    np.testing.assert_allclose(below, [0.158655, 0.5, 0.841345], atol=5 * np.sqrt(0.25 / n))


def test_unseeded_multinomial_frequencies():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.0, 0.0, 0.3]], np.float32) + 1e-30)
    model, _ = multinomial_model(logits, 50_000, 0, 0).build()
    samples = _unseeded_draws(model, 1)[0]
    frequencies = np.stack([np.bincount(row, minlength=4) / row.size for row in samples])
    np.testing.assert_allclose(frequencies, np.exp(logits), atol=5 * np.sqrt(0.25 / 50_000))


def _litert_refuses(model: SingleOpModel) -> None:
    content, feeds = model.build()
    with pytest.raises(RuntimeError):
        run(litert_interpreter(content), feeds)


@pytest.mark.parametrize(
    "model, message",
    [
        (random_model(Op.RANDOM_UNIFORM, [2, 2], 1, 1, output_type=T.FLOAT64), "RandomUniform op: FLOAT64"),
        (
            random_model(Op.RANDOM_STANDARD_NORMAL, [2], 1, 1, output_type=T.INT32),
            "RandomStandardNormal op: INT32",
        ),
        (
            SingleOpModel(
                Op.RANDOM_UNIFORM, [Operand(np.array([2, 2], np.int64), constant=True)], [T.FLOAT32]
            ),
            r"Type INT64 \(shape\) is unsupported by op RandomUniform",
        ),
        (random_model(Op.RANDOM_UNIFORM, [[2, 2]], 1, 1), r"NumDimensions\(shape\) 2 != 1"),
        (
            multinomial_model(np.zeros((2, 3), np.float32), 4, 1, 1, output_type=T.FLOAT32),
            "Multinomial op: FLOAT32",
        ),
        (multinomial_model(np.zeros((2, 3), np.int32), 4, 1, 1), "logits->type == kTfLiteFloat32"),
        (multinomial_model(np.zeros((2, 3, 1), np.float32), 4, 1, 1), r"NumDimensions\(logits\) 3 != 2"),
        (multinomial_model(np.zeros((2, 0), np.float32), 4, 1, 1), "num_classes > 0"),
        (multinomial_model(np.zeros((2, 3), np.float32), -1, 1, 1, constant=False), "num_samples >= 0"),
        (
            SingleOpModel(
                Op.MULTINOMIAL,
                [Operand(np.zeros((2, 3), np.float32)), Operand(np.array([4], np.int32))],
                [T.INT64],
            ),
            r"NumDimensions\(num_samples\) 1 != 0",
        ),
    ],
)
def test_errors(model, message):
    model.fails(message)
    _litert_refuses(model)

"""The stateless random kernels beyond what the random_* fixtures reach: values recorded from TF 2.18.1
for the dtypes and paths a TFLite model rarely carries (bfloat16, unsigned, the full int64 range, the
truncated normal's rare long draws), and TF's refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite.flex import TfNode, kernel_for
from pytflite.flex.dtypes import BY_NAME


def run(op: str, attrs: dict, *inputs):
    node = TfNode(op, "test", {name: BY_NAME[value] for name, value in attrs.items()})
    return kernel_for(op).compute(node, *(np.asarray(v) for v in inputs))


def key_counter(seed):
    return run("StatelessRandomGetKeyCounter", {"Tseed": "int32"}, np.array(seed, np.int32))


def v2(op: str, dtype: str, shape, seed=(1, 2), alg=1, *bounds):
    key, counter = key_counter(seed)
    attrs = {"dtype": dtype, "Tshape": "int32"}
    return run(op, attrs, np.array(shape, np.int32), key, counter, np.array(alg, np.int32), *bounds)


def v1(op: str, dtype: str, shape, seed, seed_type="int64"):
    attrs = {"dtype": dtype, "T": "int32", "Tseed": seed_type}
    return run(op, attrs, np.array(shape, np.int32), np.array(seed, seed_type))


def test_key_and_counter_of_a_seed_pair():
    key, counter = key_counter([1, 2])
    assert key.dtype == np.uint64 and counter.dtype == np.uint64
    assert key.tolist() == [10413732777507651514]
    assert counter.tolist() == [0, 17830669156045600267]


def test_key_counter_alg_and_alg():
    key, counter, alg = run("StatelessRandomGetKeyCounterAlg", {"Tseed": "int64"}, np.array([1, 2], np.int64))
    assert key.tolist() == [10413732777507651514] and counter.tolist() == [0, 17830669156045600267]
    assert alg.dtype == np.int32 and int(alg) == 1
    assert int(run("StatelessRandomGetAlg", {})) == 1


def test_int32_seeds_sign_extend_as_int64_ones():
    expected = np.array([0.983554, 0.7610462, 0.32639456], np.float32)
    for seed_type in ("int32", "int64"):
        got = v1("StatelessRandomUniform", "float32", [3], [-1, 7], seed_type)
        np.testing.assert_array_equal(got, expected)


def test_bfloat16_uniform_and_normal_bits():
    assert v2("StatelessRandomUniformV2", "bfloat16", [5]).tolist() == [16048, 16226, 16120, 15896, 15896]
    assert v2("StatelessRandomNormalV2", "bfloat16", [5]).tolist() == [16139, 15956, 15767, 15678, 49063]


def test_unsigned_full_range_integers():
    assert v2("StatelessRandomUniformFullIntV2", "uint64", [3]).tolist() == [
        7464880146280614444,
        1591045637757961278,
        17389275318164050067,
    ]
    got = v2("StatelessRandomUniformFullIntV2", "uint32", [3], alg=3)  # auto-select is Philox
    assert got.dtype == np.uint32 and got.tolist() == [1105988140, 1738052849, 3959391294]


def test_uniform_int_over_the_whole_int64_range():
    bounds = (np.array(-(2**63), np.int64), np.array(2**63 - 1, np.int64))
    got = v2("StatelessRandomUniformIntV2", "int64", [5], (1, 2), 1, *bounds)
    assert got.tolist() == [
        -1758491890574161364,
        -7632326399096814530,
        8165903281309274259,
        -6699008520847773605,
        -2338817709208748885,
    ]


def test_truncated_normal_groups_that_need_more_than_two_blocks():
    """Seeds whose first group rejects more candidates than two Philox blocks hold."""
    doubles = v1("StatelessTruncatedNormal", "float64", [3], [2979, 0])
    np.testing.assert_array_equal(doubles, [0.9046192554821164, 0.005281866918941999, -0.46766050845482127])
    floats = v1("StatelessTruncatedNormal", "float32", [5], [41707, 0])
    expected = np.array([0.013384786, 1.3188607, 1.8851658, -0.00841326, 1.0192748], np.float32)
    np.testing.assert_array_equal(floats, expected)


def test_an_empty_output_never_meets_the_algorithm():
    got = v2("StatelessRandomUniformV2", "float32", [0, 3], alg=2)
    assert got.shape == (0, 3) and got.dtype == np.float32


def test_multinomial_with_no_finite_logit_answers_the_class_count():
    attrs = {"T": "float32", "Tseed": "int32", "output_dtype": "int64"}
    logits = np.full((1, 2), -np.inf, np.float32)
    got = run("StatelessMultinomial", attrs, logits, np.array(3, np.int32), np.array([1, 2], np.int32))
    assert got.dtype == np.int64 and got.tolist() == [[2, 2, 2]]


@pytest.mark.parametrize(
    ("alg", "key", "counter", "message"),
    [
        (2, [1], [1, 2], "Unsupported algorithm id: 2"),
        (0, [1], [1, 2], "Unsupported algorithm id: 0"),
        (4, [1], [1, 2], "counter must be a vector with length at least 4; got shape: [2]"),
        (1, [1, 2], [1, 2], "key must have shape [1], not [2]"),
        (1, [1], [], "counter must be a vector with length at least 1; got shape: [0]"),
        (1, [1], [1], "Philox needs a counter of 2 words; got shape: [1]"),
    ],
)
def test_v2_refusals(alg, key, counter, message):
    attrs = {"dtype": "float32", "Tshape": "int32"}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        run(
            "StatelessRandomUniformV2",
            attrs,
            np.array([3], np.int32),
            np.array(key, np.uint64),
            np.array(counter, np.uint64),
            np.array(alg, np.int32),
        )


def test_algorithm_must_be_a_scalar():
    key, counter = key_counter([1, 2])
    with pytest.raises(ValueError, match=r"input 3 \(0-based\) must have shape \[\], not \[1\]"):
        run(
            "StatelessRandomNormalV2",
            {"dtype": "float32"},
            np.array([3], np.int32),
            key,
            counter,
            np.array([1]),
        )


def test_shape_and_seed_refusals():
    with pytest.raises(ValueError, match="Dimension -1 must be >= 0"):
        v1("StatelessRandomUniform", "float32", [3, -1], [1, 2])
    with pytest.raises(ValueError, match=r"shape must be a vector of \{int32,int64\}, got shape \[1,1\]"):
        v1("StatelessRandomUniform", "float32", [[3]], [1, 2])
    with pytest.raises(ValueError, match=r"seed must have shape \[2\], not \[3\]"):
        v1("StatelessRandomNormal", "float32", [3], [1, 2, 3])


def test_uniform_int_bounds():
    bounds = (np.array(5, np.int32), np.array(5, np.int32))
    with pytest.raises(ValueError, match="Need minval < maxval, got 5 >= 5"):
        v2("StatelessRandomUniformIntV2", "int32", [3], (1, 2), 1, *bounds)
    with pytest.raises(ValueError, match=r"minval must be 0-D, got shape \[1\]"):
        v2("StatelessRandomUniformIntV2", "int32", [3], (1, 2), 1, np.array([1], np.int32), bounds[1])
    # bounds are not looked at for an empty output, as in TF
    assert v2("StatelessRandomUniformIntV2", "int32", [0], (1, 2), 1, *bounds).shape == (0,)


@pytest.mark.parametrize(
    ("logits", "samples", "message"),
    [
        (np.zeros(2, np.float32), 1, r"logits should be a matrix, got shape \[2\]"),
        (np.zeros((2, 0), np.float32), 1, "num_classes should be positive, got 0"),
        (np.zeros((2, 2), np.float32), -1, "num_samples should be nonnegative, got -1"),
        (np.zeros((2, 2), np.float32), [1], r"num_samples should be a scalar, got shape \[1\]"),
    ],
)
def test_multinomial_refusals(logits, samples, message):
    attrs = {"T": "float32", "Tseed": "int32", "output_dtype": "int32"}
    with pytest.raises(ValueError, match=message):
        run("StatelessMultinomial", attrs, logits, np.array(samples, np.int32), np.array([1, 2], np.int32))

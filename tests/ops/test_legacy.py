"""HASHTABLE_LOOKUP, EMBEDDING_LOOKUP_SPARSE, LSH_PROJECTION and SKIP_GRAM against LiteRT, all
bit-exact: sorted, unsorted and duplicate keys; in-order and revisited sparse cells with every combiner;
hash keys of every FarmHash length class; sentences with odd whitespace; and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite import BuiltinOperator as Op
from pytflite import TensorType as T
from pytflite.core.types import tensor_type_for_dtype
from pytflite.model import options as O
from tests.ops.refusals import fails_like_litert
from tests.oracle import requires_litert
from tests.single_op import Operand, SingleOpModel

pytestmark = requires_litert


def strings(items) -> Operand:
    return Operand(
        np.array([s if isinstance(s, bytes) else s.encode() for s in items], dtype=object), type=T.STRING
    )


# --- HASHTABLE_LOOKUP ---------------------------------------------------------------------------------


def hashtable_lookup(lookup, keys, values: Operand, hits_type=T.UINT8) -> SingleOpModel:
    value_type = values.type or tensor_type_for_dtype(np.asarray(values.value).dtype)
    return SingleOpModel(
        Op.HASHTABLE_LOOKUP,
        [Operand(np.asarray(lookup, np.int32)), Operand(np.asarray(keys, np.int32)), values],
        [value_type, hits_type],
    )


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int64, np.bool_, np.float16])
@pytest.mark.parametrize("keys_kind", ["sorted", "unsorted", "duplicates"])
def test_hashtable_lookup_finds_rows_as_bsearch(dtype, keys_kind):
    rng = np.random.default_rng(1)
    keys = np.sort(rng.choice(5000, 1000, replace=False)).astype(np.int32)
    if keys_kind == "unsorted":
        keys[::7] = rng.permutation(keys[::7])
    elif keys_kind == "duplicates":
        keys = np.sort(rng.integers(0, 300, 1000)).astype(np.int32)
    values = (rng.random((1000, 3, 2)) * 100).astype(dtype)
    lookup = np.r_[rng.choice(keys, 2000), rng.integers(0, 5000, 2000)].astype(np.int32)
    hashtable_lookup(lookup, keys, Operand(values)).check(rtol=0)


def test_hashtable_lookup_of_strings():
    rng = np.random.default_rng(2)
    keys = np.sort(rng.choice(1000, 200, replace=False))
    values = strings([f"word {k}" * (k % 4) for k in keys])  # empty strings among them
    hashtable_lookup(rng.integers(0, 1000, 500), keys, values).check()


def test_hashtable_lookup_orders_keys_whose_difference_overflows():
    # 2**31 - 1 minus -100 overflows int32; LiteRT's bsearch still turns right at the middle key
    keys = np.array([-(2**31), -100, 2**31 - 1], np.int32)
    lookup = np.array([2**31 - 1, -(2**31), -100, 5], np.int32)
    _, hits = hashtable_lookup(lookup, keys, Operand(np.arange(3, dtype=np.float32))).check(rtol=0)
    np.testing.assert_array_equal(hits, [1, 1, 1, 0])


def test_hashtable_lookup_refusals():
    fails_like_litert(
        hashtable_lookup([1], np.zeros(0), Operand(np.zeros((0, 2), np.float32))),
        "num_rows != 0 was not true.",
    )
    fails_like_litert(
        hashtable_lookup([1], [1], Operand(np.zeros((1, 2), np.float32)), hits_type=T.INT32),
        "hits->type != kTfLiteUInt8 (2 != 3)",
    )
    fails_like_litert(
        hashtable_lookup([1], [1, 2], Operand(np.zeros((1, 2), np.float32))),
        "SizeOfDimension(key, 0) != SizeOfDimension(value, 0) (2 != 1)",
    )
    model = hashtable_lookup([1], [1], Operand(np.zeros(1, np.float32)))
    model.inputs[0] = Operand(np.array([1], np.int64))
    fails_like_litert(model, "lookup->type != kTfLiteInt32 (4 != 2)")


# --- EMBEDDING_LOOKUP_SPARSE ----------------------------------------------------------------------------


def lookup_sparse(ids, indices, dense_shape, weights, table, combiner) -> SingleOpModel:
    return SingleOpModel(
        Op.EMBEDDING_LOOKUP_SPARSE,
        [Operand(np.asarray(a)) for a in (ids, indices, dense_shape, weights, table)],
        [T.FLOAT32],
        options=O.EmbeddingLookupSparseOptions(combiner=combiner),
    )


def sparse_ids(rng, cells: tuple[int, ...], per_cell: int, rows: int, in_order: bool):
    count = int(np.prod(cells)) * per_cell
    coordinates = np.stack([rng.integers(0, n, count) for n in cells], axis=1)
    if in_order:
        coordinates = coordinates[np.lexsort(coordinates.T[::-1])]
    last = np.arange(count)[:, None] % per_cell
    indices = np.concatenate([coordinates, last], axis=1).astype(np.int32)
    return rng.integers(0, rows, count).astype(np.int32), indices, np.array([*cells, per_cell], np.int32)


@pytest.mark.parametrize("combiner", [O.CombinerType.SUM, O.CombinerType.MEAN, O.CombinerType.SQRTN])
@pytest.mark.parametrize("in_order", [True, False])
@pytest.mark.parametrize("cells, table_shape", [((40,), (500, 16)), ((6, 7), (300, 4, 5))])
def test_embedding_lookup_sparse_combines_runs_as_tflite(combiner, in_order, cells, table_shape):
    rng = np.random.default_rng(len(cells))
    ids, indices, dense_shape = sparse_ids(rng, cells, 5, table_shape[0], in_order)
    weights = rng.random(ids.size).astype(np.float32) + 0.1
    table = rng.standard_normal(table_shape).astype(np.float32)
    lookup_sparse(ids, indices, dense_shape, weights, table, combiner).check(rtol=0)


def test_embedding_lookup_sparse_refusals():
    table = np.ones((4, 2), np.float32)
    ids, indices, shape, weights = (
        np.array([1, 4], np.int32),
        np.zeros((2, 2), np.int32),
        np.array([1, 2], np.int32),
        np.ones(2, np.float32),
    )
    fails_like_litert(
        lookup_sparse(ids, indices, shape, weights, table, O.CombinerType.SUM),
        "Embedding Lookup Sparse: index out of bounds. Got 4, and bounds are [0, 3]",
    )
    fails_like_litert(
        lookup_sparse(ids[:1], indices, shape, weights, table, O.CombinerType.SUM),
        "SizeOfDimension(indices, 0) != SizeOfDimension(ids, 0) (2 != 1)",
    )
    fails_like_litert(
        lookup_sparse(ids * 0, indices, np.array([1, 2, 3], np.int32), weights, table, O.CombinerType.SUM),
        "SizeOfDimension(dense_shape, 0) != lookup_rank (3 != 2)",
    )
    fails_like_litert(
        lookup_sparse(ids * 0, indices, shape, weights, np.ones(4, np.float32), O.CombinerType.SUM),
        "NumDimensions(value) >= 2 was not true.",
    )


# --- LSH_PROJECTION -------------------------------------------------------------------------------------


def lsh(seeds, source: Operand, weight=None, kind=O.LSHProjectionType.DENSE) -> SingleOpModel:
    inputs = [Operand(np.asarray(seeds, np.float32)), source]
    if weight is not None:
        inputs.append(Operand(np.asarray(weight, np.float32)))
    return SingleOpModel(Op.LSH_PROJECTION, inputs, [T.INT32], options=O.LSHProjectionOptions(type=kind))


@pytest.mark.parametrize("kind", [O.LSHProjectionType.DENSE, O.LSHProjectionType.SPARSE])
@pytest.mark.parametrize("row_bytes", [0, 4, 12, 20, 40, 64, 100, 252])  # key lengths across every branch
@pytest.mark.parametrize("weighted", [True, False])
def test_lsh_projection_hashes_rows_with_fingerprint64(kind, row_bytes, weighted):
    rng = np.random.default_rng(row_bytes)
    source = rng.integers(0, 256, (30, row_bytes), dtype=np.uint8)
    weight = rng.standard_normal(30) if weighted else None
    lsh(rng.standard_normal((8, 12)), Operand(source), weight, kind).check(rtol=0)


@pytest.mark.parametrize("bits", [1, 16, 30, 31, 32])
def test_lsh_projection_sparse_signatures_wrap_as_tflite(bits):
    rng = np.random.default_rng(bits)
    source = rng.standard_normal((20, 3)).astype(np.float32)
    lsh(rng.standard_normal((6, bits)), Operand(source), kind=O.LSHProjectionType.SPARSE).check(rtol=0)


def test_lsh_projection_of_strings_hashes_their_serialized_bytes():
    rng = np.random.default_rng(5)
    words = strings(["alpha", "beta", "", "gamma delta", "e" * 70, "z"])
    lsh(rng.standard_normal((10, 8)), words, rng.standard_normal(6)).check(rtol=0)


def test_lsh_projection_refusals():
    source = Operand(np.ones((3, 2), np.float32))
    fails_like_litert(lsh(np.ones((2, 33)), source), "SizeOfDimension(hash, 1) <= 32 was not true.")
    fails_like_litert(lsh(np.ones(4), source), "NumDimensions(hash) != 2 (1 != 2)")
    fails_like_litert(
        lsh(np.ones((2, 3)), source, np.ones(2)),
        "SizeOfDimension(weight, 0) != SizeOfDimension(input, 0) (2 != 3)",
    )
    fails_like_litert(
        lsh(np.ones((2, 3)), source, kind=O.LSHProjectionType.UNKNOWN),
        "unknown projection type",
        litert_says_it=False,
    )


# --- SKIP_GRAM ------------------------------------------------------------------------------------------

SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "  leading spaces drop the first word",
    "\tone",
    "trailing\twhitespace and  doubled   gaps \n",
    "",
    "single",
    " ".join(f"w{i}" for i in range(40)),
]


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize(
    "size, skip, all_sizes",
    [(1, 0, False), (2, 0, False), (3, 2, True), (3, 1, False), (4, 3, True), (0, 1, True)],
)
def test_skip_grams_as_tflite(sentence, size, skip, all_sizes):
    options = O.SkipGramOptions(ngram_size=size, max_skip_size=skip, include_all_ngrams=all_sizes)
    SingleOpModel(Op.SKIP_GRAM, [strings([sentence, "ignored"])], [T.STRING], options=options).check()


def test_skip_gram_refuses_a_non_string_input():
    model = SingleOpModel(
        Op.SKIP_GRAM, [Operand(np.ones(2, np.int32))], [T.STRING], options=O.SkipGramOptions()
    )
    fails_like_litert(model, "input_tensor->type != kTfLiteString (INT32 != STRING)")

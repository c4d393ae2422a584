"""The array kernels (kernels/arrays.py, blocks.py, indexing.py) on what the arrays_* fixtures don't
reach: TF's refusals word for word, and the index rules at their edges. Every expected value and
message here is TF 2.18.1's."""

from __future__ import annotations

import numpy as np
import pytest

from pytflite.flex import TfNode, kernel_for
from pytflite.flex.dtypes import BY_NAME

F64, I32, I64 = BY_NAME["float64"], BY_NAME["int32"], BY_NAME["int64"]
X = np.arange(12.0).reshape(3, 4)


def run(op: str, *inputs, **attrs):
    node = TfNode(op, "", attrs)
    kernel = kernel_for(op)
    assert not kernel.refused_types(node), kernel.refused_types(node)
    return kernel.compute(node, *inputs)


def refusal(op: str, *inputs, **attrs) -> str:
    with pytest.raises(ValueError) as caught:
        run(op, *inputs, **attrs)
    return str(caught.value)


def ints(*values, dtype=np.int32):
    return np.array(values, dtype=dtype)


def strided(x, begin, end, strides, **masks):
    return run("StridedSlice", x, ints(*begin), ints(*end), ints(*strides), **masks)


def test_strided_slice_clamps_each_bound_toward_the_stride():
    np.testing.assert_array_equal(strided(X, [10], [-10], [-2]), X[[2, 0]])
    assert strided(X, [-10], [10], [-2]).shape == (0, 4)
    np.testing.assert_array_equal(strided(X, [-1], [-5], [-1]), X[::-1])


def test_strided_slice_masks():
    # a new axis wins over a shrink on the same index; a shrink ignores the begin mask
    assert strided(X, [1, 0], [2, 1], [1, 1], new_axis_mask=1, shrink_axis_mask=1).shape == (1, 1, 4)
    np.testing.assert_array_equal(strided(X, [2, 0], [2, 1], [1, 1], begin_mask=1, shrink_axis_mask=1), [8.0])
    # new axes after an ellipsis, and an ellipsis over no dimension at all
    assert strided(X, [0, 0, 0], [0, 0, 0], [1, 1, 1], ellipsis_mask=1, new_axis_mask=6).shape == (3, 4, 1, 1)
    assert strided(np.float64(3), [0], [1], [1], ellipsis_mask=1).shape == ()
    np.testing.assert_array_equal(strided(np.float64(3), [0], [1], [1], new_axis_mask=1), [3.0])
    np.testing.assert_array_equal(strided(X, [1], [0], [2], shrink_axis_mask=1), X[1])


@pytest.mark.parametrize(
    ("x", "begin", "end", "strides", "masks", "message"),
    [
        (X, [0, 0], [1, 1], [0, 1], {}, "strides[0] must be non-zero"),
        (X, [5], [6], [1], {"shrink_axis_mask": 1}, "slice index 5 of dimension 0 out of bounds."),
        (X, [-4], [6], [1], {"shrink_axis_mask": 1}, "slice index -1 of dimension 0 out of bounds."),
        (X, [1], [0], [-1], {"shrink_axis_mask": 1}, "only stride 1 allowed on non-range indexing."),
        (
            X,
            [0, 0, 0],
            [1, 1, 1],
            [1, 1, 1],
            {},
            "Index out of range using input dim 2; input has only 2 dims",
        ),
        (X, [0, 0], [1, 1], [1, 1], {"ellipsis_mask": 3}, "Multiple ellipses in slice spec not allowed"),
        (np.float64(1), [0], [1], [1], {}, "Attempting to slice scalar input."),
    ],
)
def test_strided_slice_refusals(x, begin, end, strides, masks, message):
    assert refusal("StridedSlice", x, ints(*begin), ints(*end), ints(*strides), **masks) == message


def test_strided_slice_wants_equal_vectors():
    message = refusal("StridedSlice", X, ints(0, 0), ints(1), ints(1, 1))
    assert message == (
        "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [2], [1], and [2] instead."
    )


@pytest.mark.parametrize(
    ("begin", "size", "message"),
    [
        ([1, 0], [3, -1], "Expected size[0] in [0, 2], but got 3"),
        ([-1, 0], [1, -1], "Expected begin[0] in [0, 3], but got -1"),
        ([0, 0], [-2, 1], "Expected size[0] in [0, 3], but got -2"),
        (
            [1],
            [1],
            "Expected begin and size arguments to be 1-D tensors of size 2, but got shapes [1] and [1] instead.",
        ),
    ],
)
def test_slice_refusals(begin, size, message):
    assert refusal("Slice", X, ints(*begin), ints(*size)) == message


_ZERO_SIZED = [([0, 3], [0, -1], (0, 3)), ([2, 0, 3], [0, -1], (0, 6)), ([0, 3], [-1, 0], (3, 0))]
_ZERO_SIZED += [
    ([0, 3], [5, -1], (5, 0)),
    ([0, 3], [0, -1, 2], (0, 1, 2)),
    ([0], [0, -1], (0, 1)),
    ([1], [], ()),
]


@pytest.mark.parametrize(("source", "target", "shape"), _ZERO_SIZED)
def test_reshape_infers_minus_one_beside_zeros_as_tf(source, target, shape):
    assert run("Reshape", np.zeros(source), ints(*target)).shape == shape


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            [5, -1],
            "Input to reshape is a tensor with 12 values, but the requested shape requires a multiple of 5",
        ),
        ([5, 2], "Input to reshape is a tensor with 12 values, but the requested shape has 10"),
        ([-1, -1], "Only one input size may be -1, not both 0 and 1"),
        ([-2, -6], "Size 0 must be non-negative, not -2"),
    ],
)
def test_reshape_refusals(target, message):
    assert refusal("Reshape", X, ints(*target)) == message


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "message"),
    [
        ("Transpose", (X, ints(0, 0)), {}, "1 is missing from {0,0}."),
        ("Transpose", (X, ints(2, 0)), {}, "2 is out of range [0 .. 2)"),
        (
            "Transpose",
            (X, ints(0)),
            {},
            "transpose expects a vector of size 2. But input(1) is a vector of size 1",
        ),
        ("ExpandDims", (X, np.int32(-4)), {}, "Tried to expand dim index -4 for tensor with 2 dimensions."),
        ("ExpandDims", (X, ints(1, 0)), {}, "'dim' must be a tensor with a single value"),
        ("Squeeze", (X,), {"squeeze_dims": [0]}, "Can not squeeze dim[0], expected a dimension of 1, got 3"),
        (
            "Squeeze",
            (X,),
            {"squeeze_dims": [2]},
            "Tried to squeeze dim index 2 for tensor with 2 dimensions.",
        ),
        (
            "ConcatV2",
            (X, np.zeros([2, 3]), np.int32(0)),
            {},
            "ConcatOp : Dimension 1 in both shapes must be equal: shape[0] = [3,4] vs. shape[1] = [2,3]",
        ),
        (
            "ConcatV2",
            (X, X, np.int32(2)),
            {},
            "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got 2",
        ),
        (
            "ConcatV2",
            (np.float64(1), np.float64(2), np.int32(0)),
            {},
            "ConcatOp : Can't concatenate scalars (use tf.stack instead)",
        ),
        ("ConcatV2", (X, X, ints(0, 1)), {}, "axis tensor should be a scalar integer, but got shape [2]"),
        ("Pack", (X, X), {"axis": 3}, "axis = 3 not in [-3, 3)"),
        (
            "Pack",
            (X, np.zeros([2, 3])),
            {"axis": 0},
            "Shapes of all inputs must match: values[0].shape = [3,4] != values[1].shape = [2,3]",
        ),
        ("Unpack", (X,), {"num": 4, "axis": 0}, "Input shape axis 0 must equal 4, got shape [3,4]"),
        (
            "Split",
            (np.int32(1), X),
            {"num_split": 3},
            "Number of ways to split should evenly divide the split dimension, but got split_dim 1 (size = 4) and num_split 3",
        ),
        (
            "Split",
            (np.int32(2), X),
            {"num_split": 1},
            "-input rank(-2) <= split_dim < input rank (2), but got 2",
        ),
        ("Split", (ints(1), X), {"num_split": 2}, "split_dim must be a scalar but has rank 1"),
        (
            "SplitV",
            (X, ints(-1, -1), np.int32(1)),
            {"num_split": 2},
            "There can only be one -1 in the input.",
        ),
        (
            "SplitV",
            (X, ints(5, -1), np.int32(1)),
            {"num_split": 2},
            "Determined shape must either match input shape along split_dim exactly if fully specified, or be less than the size of the input along split_dim if not fully specified.  Got: 5",
        ),
        ("Tile", (X, ints(2, -1)), {}, "Expected multiples[1] >= 0, but got -1"),
        ("BroadcastTo", (X, ints(2, 3, 3)), {}, "Incompatible shapes: [3,4] vs. [2,3,3]"),
        (
            "BroadcastTo",
            (X, ints(4)),
            {},
            "Rank of input (2) must be no greater than rank of output shape (1).",
        ),
        ("BroadcastArgs", (ints(2, 1, 4), ints(3, 2)), {"T": I32}, "Incompatible shapes: [2,1,4] vs. [3,2]"),
        ("ReverseV2", (X, ints(1, -1)), {}, "axis 1 specified more than once."),
        ("ReverseV2", (X, ints(2)), {}, "'axis'[0] = 2 is out of valid range [0, 1"),
        ("Roll", (X, ints(1), ints(-3)), {}, "axis -1 is out of range"),
        ("Roll", (X, ints(1, 2), ints(0)), {}, "shift and axis must have the same size"),
        (
            "ReverseSequence",
            (X, ints(0, 2, 5)),
            {"seq_dim": 1, "batch_dim": 0},
            "seq_lens(2) > input.dims(1)",
        ),
        (
            "ReverseSequence",
            (X, ints(1, 2)),
            {"seq_dim": 0, "batch_dim": 1},
            "Length of seq_lengths != input.dims(1), (2 vs. 4)",
        ),
        (
            "ReverseSequence",
            (X, ints(1, 2, 3)),
            {"seq_dim": 3, "batch_dim": 0},
            "seq_dim must be < input rank ( 3 vs. 2)",
        ),
        ("Fill", (ints(2, -1), np.float64(1)), {}, "Dimension -1 must be >= 0"),
        ("Fill", (ints(2, 1), np.array([1.0, 2.0])), {}, "value must represent a scalar, got shape [2]"),
        ("InvertPermutation", (ints(2, 2, 1, dtype=np.int64),), {"T": I64}, "2 is duplicated in the input."),
        ("InvertPermutation", (ints(3, 0, 1, dtype=np.int64),), {"T": I64}, "3 is not between 0 and 3"),
    ],
)
def test_layout_refusals(op, inputs, attrs, message):
    assert refusal(op, *inputs, **attrs) == message


def test_layout_edge_cases():
    np.testing.assert_array_equal(run("Roll", X, ints(1, -1, 5), ints(0, 1, 1)), np.roll(X, (1, 4), (0, 1)))
    reversed_rows = run("ReverseSequence", X, ints(0, 2, 4, dtype=np.int64), seq_dim=1, batch_dim=0)
    np.testing.assert_array_equal(reversed_rows, [[0, 1, 2, 3], [5, 4, 6, 7], [11, 10, 9, 8]])
    z = np.array([[1 + 2j, 3j]])
    np.testing.assert_array_equal(run("ConjugateTranspose", z, ints(1, 0)), [[1 - 2j], [-3j]])
    np.testing.assert_array_equal(run("Fill", ints(2, 1), np.array([1.0])), [[1.0], [1.0]])  # a legacy scalar
    words = np.array([b"a", b"b"], dtype=object)
    assert run("Tile", words, ints(2)).tolist() == [b"a", b"b", b"a", b"b"]
    assert run("Empty", ints(2), dtype=BY_NAME["string"], init=True).tolist() == [b"", b""]


def test_range_values_are_start_plus_i_delta():
    tenths = run("Range", np.float64(0.1), np.float64(1.0), np.float64(0.1), Tidx=F64)
    assert tenths.tolist() == [0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7000000000000001, 0.8, 0.9]
    single = run("Range", np.float32(0.1), np.float32(1.0), np.float32(0.1), Tidx=BY_NAME["float32"])
    assert single.dtype == np.float32 and single[6] == np.float32(0.7000000476837158)
    assert run("Range", np.int64(2), np.int64(-11), np.int64(-3), Tidx=I64).tolist() == [2, -1, -4, -7, -10]


@pytest.mark.parametrize(
    ("start", "limit", "delta", "message"),
    [
        (2.0, 1.0, 0.3, "Requires start <= limit when delta > 0: 2/1"),
        (0.5, 0.25, 0.125, "Requires start <= limit when delta > 0: 0.5/0.25"),
        (1.0, 2.0, -0.5, "Requires start >= limit when delta < 0: 1/2"),
        (2.0, 1.0, 0.0, "Requires delta != 0: 0"),
    ],
)
def test_range_refusals(start, limit, delta, message):
    assert refusal("Range", np.float64(start), np.float64(limit), np.float64(delta), Tidx=F64) == message


def test_range_of_a_type_tf_has_no_cpu_kernel_for_is_refused():
    assert kernel_for("Range").refused_types(TfNode("Range", "", {"Tidx": BY_NAME["int16"]})) == [
        "Tidx=int16"
    ]


def test_lin_space():
    values = run("LinSpace", np.float64(0.1), np.float64(1.7), np.int32(7), T=F64, Tidx=I32)
    expected = [0.1, 0.3666666666666667, 0.6333333333333333, 0.9, 1.1666666666666667, 1.4333333333333333, 1.7]
    assert values.tolist() == expected
    assert (
        refusal("LinSpace", np.float64(1), np.float64(2), np.int32(0), T=F64, Tidx=I32)
        == "Requires num > 0: 0"
    )


def test_ensure_shape_names_the_input_as_the_flex_delegate_does():
    assert run("EnsureShape", X, shape=(3, -1)) is X
    assert refusal("EnsureShape", X, shape=(-1, 5)) == (
        "Shape of tensor dummy_input [3,4] is not compatible with expected shape [?,5]."
    )
    assert run("EnsureShape", X, shape=None) is X


@pytest.mark.parametrize(
    ("op", "values", "message"),
    [
        ("CheckNumerics", [1.0, np.nan], "bad x : Tensor had NaN values"),
        ("CheckNumerics", [-np.inf, np.nan], "bad x : Tensor had Inf and NaN values"),
        ("CheckNumericsV2", [np.inf, 1.0], "bad x : Tensor had +Inf values"),
        ("CheckNumericsV2", [-np.inf, np.nan, np.inf], "bad x : Tensor had -Inf, +Inf, and NaN values"),
    ],
)
def test_check_numerics(op, values, message):
    assert refusal(op, np.array(values), T=F64, message=b"bad x") == message
    assert run(op, np.array([1.0, 2.0]), T=F64, message=b"bad x").tolist() == [1.0, 2.0]


def test_check_numerics_reads_bfloat16_bits():
    bits = np.array([0x3F80, 0x7FC0], dtype=np.uint16)  # 1.0 and a NaN
    assert refusal("CheckNumerics", bits, T=BY_NAME["bfloat16"], message=b"m") == "m : Tensor had NaN values"


def test_bitcast_shapes():
    c128 = BY_NAME["complex128"]
    assert run("Bitcast", np.array([1 + 2j, 3j]), T=c128, type=F64).tolist() == [[1.0, 2.0], [0.0, 3.0]]
    assert run("Bitcast", np.array([1.0, 2.0]), T=F64, type=c128).shape == ()
    assert refusal("Bitcast", np.array([1.0, 2.0, 3.0]), T=F64, type=c128) == "Cannot bitcast from 2 to 18"


def test_pads():
    words = np.array([b"a", b"b"], dtype=object)
    assert run("MirrorPad", words, ints(1, 1).reshape(1, 2), mode=b"REFLECT").tolist() == [
        b"b",
        b"a",
        b"b",
        b"a",
    ]
    assert run("Pad", words[:1], ints(1, 1).reshape(1, 2)).tolist() == [b"", b"a", b""]
    assert refusal("MirrorPad", X, ints(3, 0, 0, 0).reshape(2, 2), mode=b"REFLECT") == (
        "paddings must be less than the dimension size: 3, 0 not less than 3"
    )
    assert refusal("MirrorPad", X, ints(4, 0, 0, 0).reshape(2, 2), mode=b"SYMMETRIC") == (
        "paddings must be no greater than the dimension size: 4, 0 greater than 3"
    )
    assert refusal("Pad", X, ints(-1, 0, 0, 0).reshape(2, 2)) == "Paddings must be non-negative: -1 0"
    assert refusal("MirrorPad", X, ints(1, 2).reshape(1, 2), mode=b"REFLECT") == (
        "The first dimension of paddings must be the rank of inputs[1,2], [3,4]"
    )
    assert refusal("PadV2", X, ints(1, 0, 0, 2).reshape(2, 2), np.array([1.0])) == (
        "constant_values must be a scalar. Found: [1]"
    )


def test_block_moves():
    grid = np.arange(2 * 4 * 5 * 3.0).reshape(2, 4, 5, 3)
    batched = run("SpaceToBatchND", grid, ints(2, 3), ints(0, 0, 1, 0).reshape(2, 2), T=F64)
    assert batched.shape == (12, 2, 2, 3)
    restored = run("BatchToSpaceND", batched, ints(2, 3), ints(0, 0, 1, 0).reshape(2, 2), T=F64)
    np.testing.assert_array_equal(restored, grid)
    assert refusal("SpaceToBatchND", grid, ints(2, 2), np.zeros((2, 2), np.int32), T=F64) == (
        "padded_shape[1]=5 is not divisible by block_shape[1]=2"
    )
    assert refusal("SpaceToBatchND", grid, ints(0, 2), ints(0, 0, 0, 1).reshape(2, 2), T=F64) == (
        "All values in block_shape must be positive, got value, 0 at index 0."
    )
    assert refusal("BatchToSpaceND", batched, ints(5), ints(0, 0).reshape(1, 2), T=F64) == (
        "Input batch dimension (12) is not divisible by product of block sizes (5)"
    )
    image = np.zeros((2, 4, 6, 3))
    assert refusal("SpaceToDepth", image, block_size=4) == (
        "Image width 6 and height 4 should be divisible by block_size: 4"
    )
    assert refusal("DepthToSpace", image, block_size=2) == "Input depth dimension 3 should be divisible by: 4"


@pytest.mark.parametrize(
    ("indices", "axis", "batch_dims", "message"),
    [
        ([[0, 1], [5, 0]], 1, 0, "indices[1,0] = 5 is not in [0, 4)"),
        ([0, -1], 1, 0, "indices[1] = -1 is not in [0, 4)"),
        ([0], 2, 0, "Expected axis in the range [-2, 2), but got 2"),
        ([[0], [1]], 1, 1, "params.shape[0]: 3 should be equal to indices.shape[0]: 2"),
        ([[0], [1], [2]], 0, 1, "batch_dims (1) must be less than or equal to axis (0)."),
        ([[0], [1], [2]], 1, 2, "batch_dims (2) must be less than rank(params) (2)."),
        ([[0], [1], [7]], 1, 1, "indices[2,0] = 7 is not in [0, 4)"),
    ],
)
def test_gather_refusals(indices, axis, batch_dims, message):
    assert (
        refusal("GatherV2", X, np.array(indices, np.int32), np.int32(axis), batch_dims=batch_dims) == message
    )


def test_gather_with_batch_dims():
    picked = run("GatherV2", X, np.array([[0], [1], [2]], np.int32), np.int32(1), batch_dims=-1)
    np.testing.assert_array_equal(picked, [[0.0], [5.0], [10.0]])


def test_gather_nd():
    assert refusal("GatherNd", X, np.array([[[0, 1]], [[3, 0]]], np.int32)) == (
        "indices[1,0] = [3, 0] does not index into param shape [3,4], node name: GatherNd"
    )
    assert refusal("GatherNd", X, ints(0, 1, 1).reshape(1, 3)) == (
        "index innermost dimension length must be <= params rank; saw: 3 vs. 2"
    )
    assert run("GatherNd", X, np.zeros((2, 0), np.int32)).shape == (2, 3, 4)
    ignored = run("GatherNd", X, ints(0, 5, 1, 1).reshape(2, 2), bad_indices_policy=b"IGNORE")
    assert ignored.tolist() == [0.0, 5.0]


def test_scatters():
    duplicates = ints(1, 1).reshape(2, 1)
    assert run("ScatterNd", duplicates, np.array([1.0, 2.0]), ints(3)).tolist() == [0.0, 3.0, 0.0]
    words = np.array([b"a", b"b"], dtype=object)
    assert run("ScatterNd", duplicates, words, ints(2)).tolist() == [b"", b"ab"]
    assert run("TensorScatterUpdate", np.zeros(3), duplicates, np.array([1.0, 2.0])).tolist() == [
        0.0,
        2.0,
        0.0,
    ]
    assert refusal("ScatterNd", ints(3).reshape(1, 1), np.array([1.0]), ints(3)) == (
        "indices[0] = [3] does not index into shape [3]"
    )
    assert refusal("ScatterNd", ints(1).reshape(1, 1), np.array([1.0, 2.0]), ints(3)) == (
        "Dimensions [0,1) of indices[shape=[1,1]] must match dimensions [0,1) of updates[shape=[2]]"
    )
    assert refusal("TensorScatterUpdate", np.zeros((3, 2)), ints(1).reshape(1, 1), np.ones(3)) == (
        "Outer dimensions of indices and update must match. Indices shape: [1,1], updates shape:[3]"
    )
    assert refusal("TensorScatterUpdate", np.zeros((3, 2)), ints(0, 1).reshape(1, 2), np.ones((1, 1))) == (
        "Inner dimensions of output shape must match inner dimensions of updates shape. Output: [3,2] updates: [1,1]"
    )
    skipped = run(
        "TensorScatterAdd",
        np.ones(3),
        ints(7, 1).reshape(2, 1),
        np.array([1.0, 2.0]),
        T=F64,
        bad_indices_policy=b"IGNORE",
    )
    assert skipped.tolist() == [1.0, 3.0, 1.0]


def test_where_and_unique():
    np.testing.assert_array_equal(
        run("Where", np.array([[0.0, np.nan], [-0.0, 2.0]]), T=F64), [[0, 1], [1, 1]]
    )
    assert refusal("Where", np.float64(2), T=F64) == "WhereOp : Unhandled input dimensions: 0"
    values, index = run("Unique", np.array([np.nan, np.nan, 0.0, -0.0]), T=F64, out_idx=I64)
    assert np.isnan(values[:2]).all() and values[2] == 0.0 and index.tolist() == [0, 1, 2, 2]
    assert refusal("Unique", X, T=F64, out_idx=I32) == "unique expects a 1D vector."
    kept, at = run("ListDiff", np.array([1.0, 2, 3, 2]), np.array([2.0, 5]), out_idx=I64)
    assert kept.tolist() == [1.0, 3.0] and at.tolist() == [0, 2]


def test_top_k():
    values, index = run("TopKV2", np.array([[1.0, 3.0, 3.0, -1.0, 7.0]]), np.int32(3), T=F64)
    assert values.tolist() == [[7.0, 3.0, 3.0]] and index.tolist() == [[4, 1, 2]]
    assert refusal("TopKV2", np.array([1.0]), np.int32(2), T=F64) == (
        "input must have at least k columns. Had 1, needed 2"
    )
    assert refusal("TopKV2", np.array([1.0]), np.int32(-1), T=F64) == "Need k >= 0, got -1"
    assert refusal("TopKV2", np.float64(1), np.int32(1), T=F64) == "input must be >= 1-D, got shape []"


def test_sorted_segments_of_no_rows_hold_zero_or_one():
    data, ids = np.array([1.0, 2.0, 3.0]), ints(0, 2, 2)
    assert run("SegmentSum", data, ids, T=F64).tolist() == [1.0, 0.0, 5.0]
    assert run("SegmentMax", data, ids, T=F64).tolist() == [1.0, 0.0, 3.0]
    assert run("SegmentProd", data, ids, T=F64).tolist() == [1.0, 1.0, 6.0]
    assert run("SegmentMean", np.array([-1, -2], np.int64), ints(0, 0), T=I64).tolist() == [-1]


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ([1, 0, 1], "segment ids are not increasing"),
        ([0, 2, 1], "segment ids are not increasing"),
        (
            [-1, 0, 0],
            "Segment id -1 out of range [0, 1), possibly because 'segment_ids' input is not sorted.",
        ),
        ([1, 1, -1], "segment ids must be >= 0"),
        ([0, 0], "segment_ids should be the same size as dimension 0 of input."),
    ],
)
def test_sorted_segment_refusals(ids, message):
    assert refusal("SegmentSum", np.array([1.0, 2.0, 3.0]), ints(*ids), T=F64) == message


def test_unsorted_segments():
    data = np.array([1.0, 2.0, 3.0])
    assert run("UnsortedSegmentMax", data, ints(0, 2, 2), np.int32(4), T=F64).tolist() == [
        1.0,
        -1.7976931348623157e308,
        3.0,
        -1.7976931348623157e308,
    ]
    assert run("UnsortedSegmentSum", data, ints(-1, 2, 2), np.int32(4), T=F64).tolist() == [
        0.0,
        0.0,
        5.0,
        0.0,
    ]
    assert refusal(
        "UnsortedSegmentSum", np.ones((2, 2)), ints(0, 1, 7, 1).reshape(2, 2), np.int32(2), T=F64
    ) == ("segment_ids[1,0] = 7 is out of range [0, 2)")
    assert refusal("UnsortedSegmentSum", data, ints(0, 0), np.int32(2), T=F64) == (
        "data.shape = [3] does not start with segment_ids.shape = [2]"
    )


def test_bincounts():
    counted = run("DenseBincount", ints(1, 1, 7), np.int32(5), np.zeros(0), T=F64)
    assert counted.tolist() == [0.0, 2.0, 0.0, 0.0, 0.0]
    binary = run(
        "DenseBincount", ints(1, 1, 3), np.int32(5), np.array([0.5, 1, 2]), T=F64, binary_output=True
    )
    assert binary.tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert (
        refusal("DenseBincount", ints(1, -1), np.int32(5), np.zeros(0), T=F64)
        == "Input arr must be non-negative!"
    )


def test_stitch_and_partition():
    gap = run("DynamicStitch", ints(0, 3), np.array([b"a", b"b"], dtype=object))
    assert gap.tolist() == [b"a", b"", b"", b"b"]
    assert refusal("DynamicStitch", ints(0, -1), np.array([1.0, 2.0])) == "indices[1] is out of range"
    partitions = np.array([[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 5]], np.int32)
    assert (
        refusal("DynamicPartition", X, partitions, num_partitions=2) == "partitions[2,3] = 5 is not in [0, 2)"
    )


def test_dense_set_operations():
    set1, set2 = np.array([[3, 1, 1, 2], [0, 0, 0, 0]]), np.array([[2, 5], [7, 8]])
    indices, values, shape = run("DenseToDenseSetOperation", set1, set2, set_operation=b"union", T=I64)
    assert values.tolist() == [1, 2, 3, 5, 0, 7, 8] and shape.tolist() == [2, 4]
    assert indices.tolist() == [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [1, 1], [1, 2]]
    assert refusal("DenseToDenseSetOperation", np.array([3]), np.array([3]), set_operation=b"a-b", T=I64) == (
        "Shape [1] has rank 1 < 2"
    )


def test_one_hot_and_diagonals():
    hot = run(
        "OneHot", ints(0, -1, 3, 5).reshape(2, 2), np.int32(4), np.float64(2), np.float64(-1), axis=0, TI=I32
    )
    assert hot.shape == (4, 2, 2) and hot[:, 0, 0].tolist() == [2.0, -1.0, -1.0, -1.0]
    assert refusal("OneHot", ints(0), np.int32(2), np.float64(1), np.float64(0), axis=-2, TI=I32) == (
        "Expected axis to be -1 or between [0, 2).  But received: -2"
    )
    square = run("Diag", np.array([[1.0, 2.0], [3.0, 4.0]]), T=F64)
    assert square.shape == (2, 2, 2, 2) and run("DiagPart", square, T=F64).tolist() == [
        [1.0, 2.0],
        [3.0, 4.0],
    ]
    assert (
        refusal("DiagPart", np.zeros((2, 3, 2, 2)), T=F64)
        == "Invalid shape [2,3,2,2]: dimensions 1 and 3 do not match."
    )

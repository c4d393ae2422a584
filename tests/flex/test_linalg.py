"""The linear algebra kernels (flex/kernels/linalg.py) where the fixtures do not reach: TF's error texts,
its handling of singular, indefinite and NaN matrices, the ops the converter never emits (BatchMatMulV3,
BatchMatMul, the V1/V2 diagonal ops) and the attrs it rewrites away (MatMul's transpose_a). Expected
values are TF 2.18.1's."""

from __future__ import annotations

import re

import numpy as np
import pytest

import pytflite.flex
from pytflite.flex.dtypes import BY_NAME


def run(op: str, attrs: dict, *inputs):
    """Kernel `op` on `inputs`; attrs name dtypes by string ("float64")."""
    values = {k: BY_NAME[v] if isinstance(v, str) and v in BY_NAME else v for k, v in attrs.items()}
    return pytflite.flex.kernel_for(op).compute(pytflite.flex.TfNode(op, op, values), *inputs)


def refused(message: str):
    return pytest.raises(ValueError, match=f"^{re.escape(message)}$")


def test_mat_mul_transposes_without_conjugating_and_wraps_integers():
    a = np.array([[1 + 2j, 3], [0, 1j]], np.complex64)
    np.testing.assert_allclose(
        run("MatMul", {"T": "complex64", "transpose_a": True}, a, np.eye(2, dtype=a.dtype)), a.T
    )
    wrapped = run(
        "MatMul", {"T": "int32"}, np.array([[2**30, 2**30]], np.int32), np.array([[2], [2]], np.int32)
    )
    assert wrapped.tolist() == [[0]]


def test_float16_products_accumulate_in_float32():
    a, b = np.array([[2048, 1, 1, 1, 1]], np.float16), np.ones((5, 1), np.float16)
    result = run("MatMul", {"T": "float16"}, a, b)
    assert result.dtype == np.float16 and result.tolist() == [[2052]]


@pytest.mark.parametrize(
    ("op", "a", "b", "message"),
    [
        ("MatMul", (2, 3), (4, 5), "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]"),
        ("MatMul", (2, 3, 3), (3, 5), "In[0] and In[1] has different ndims: [2,3,3] vs. [3,5]"),
        ("MatMul", (2, 3, 3), (2, 3, 3), "In[0] and In[1] ndims must be == 2: 3"),
        (
            "BatchMatMulV2",
            (2, 3, 4),
            (3, 4, 5),
            "In[0] and In[1] must have compatible batch dimensions: [2,3,4] vs. [3,4,5]",
        ),
        ("BatchMatMulV2", (4,), (4, 5), "In[0] ndims must be >= 2: 1"),
        (
            "BatchMatMul",
            (2, 3, 4),
            (1, 4, 5),
            "In[0].dim(0) and In[1].dim(0) must be the same: [2,3,4] vs [1,4,5]",
        ),
    ],
)
def test_products_refuse_shapes_as_tf(op, a, b, message):
    with refused(message):
        run(op, {"T": "float64"}, np.ones(a), np.ones(b))


def test_batch_mat_mul_v3_computes_in_tout():
    x, y = np.full((2, 1, 4), 100, np.int8), np.full((1, 4, 1), 200, np.uint8)
    result = run("BatchMatMulV3", {"Ta": "int8", "Tb": "uint8", "Tout": "int32"}, x, y)
    assert result.dtype == np.int32 and result.tolist() == [[[80000]], [[80000]]]


def test_batch_mat_mul_adjoints_conjugate():
    x = np.array([[[1j, 2], [3, 4 - 1j]]])
    np.testing.assert_allclose(
        run("BatchMatMul", {"T": "complex128", "adj_x": True}, x, np.eye(2)[None]), np.conj(x).swapaxes(1, 2)
    )


@pytest.mark.parametrize(
    ("equation", "shapes", "message"),
    [
        (
            "ij,jk,kl->il",
            [(2, 2)] * 3,
            "Expecting 1 or 2 input subscripts in equation 'ij,jk,kl->il' but got: 3",
        ),
        ("ij,jk", [(2, 2), (2, 3)], "Expecting exactly one '->' in einsum equation: ij,jk"),
        (
            "ij,jk->ik",
            [(2, 2), (3, 2)],
            "Expected dimension 2 at axis 0 of the input shaped [3,2] but got dimension 3",
        ),
        (
            "ij,ij->ij",
            [(1, 2), (3, 2)],
            "Expected dimension 1 at axis 0 of the input shaped [3,2] but got dimension 3",
        ),
        ("ij->ji", [(2, 3, 4)], "Expected input 0 to have rank 2 but got: 3"),
        ("...ij->...ji", [(2,)], "Expected input 0 to have rank at least 2 but got: 1"),
        ("ii->i", [(2, 3)], "Expected dimension 2 at axis 1 of the input shaped [2,3] but got dimension 3"),
    ],
)
def test_einsum_refuses_equations_as_tf(equation, shapes, message):
    with refused(message):
        run("Einsum", {"T": "float64", "equation": equation}, *[np.ones(s) for s in shapes])


def test_einsum_wraps_int64():
    result = run(
        "Einsum", {"T": "int64", "equation": "ij,jk->ik"}, np.full((1, 2), 2**62), np.full((2, 1), 2)
    )
    assert result.tolist() == [[0]]


@pytest.mark.parametrize("matrix", [[[1.0, 2.0], [2.0, 4.0]], [[np.nan, 1.0], [0.0, 2.0]]])
def test_a_singular_or_nan_matrix_is_not_invertible(matrix):
    with refused("Input is not invertible."):
        run("MatrixInverse", {"T": "float64"}, np.array(matrix))


@pytest.mark.parametrize("op", ["MatrixInverse", "MatrixDeterminant", "Cholesky"])
def test_square_matrices_are_required(op):
    with refused("Input matrix must be square."):
        run(op, {"T": "float64"}, np.ones((2, 3)))
    with refused("Input tensor 0 must have rank >= 2, got 1"):
        run(op, {"T": "float64"}, np.ones(3))


def test_inverse_of_the_adjoint():
    x = np.array([[1, 1j], [0, 2]])
    np.testing.assert_allclose(
        run("MatrixInverse", {"T": "complex128", "adjoint": True}, x), [[1, 0], [0.5j, 0.5]]
    )


def test_determinants_of_edge_matrices():
    """Singular: sign 0, log -inf; NaN: a NaN sign (NumPy's slogdet says 1); overflow: inf; empty: 1."""
    x = np.array(
        [[[1.0, 2], [2, 4]], [[np.nan, 1], [0, 2]], [[1e300, 1], [0, 1e300]], [[-np.inf, 0], [0, 1]]]
    )
    sign, log_abs = run("LogMatrixDeterminant", {"T": "float64"}, x)
    np.testing.assert_array_equal(sign, [0, np.nan, 1, -1])
    np.testing.assert_allclose(log_abs, [-np.inf, np.nan, 1381.5510557964274, np.inf])
    np.testing.assert_array_equal(run("MatrixDeterminant", {"T": "float64"}, x), [0, np.nan, np.inf, -np.inf])
    assert run("MatrixDeterminant", {"T": "float32"}, np.ones((2, 0, 0), np.float32)).tolist() == [1, 1]


def test_complex_log_determinant_is_complex():
    sign, log_abs = run("LogMatrixDeterminant", {"T": "complex128"}, np.array([[1j, 2], [3, 4]]))
    np.testing.assert_allclose(sign, -0.8320502943378437 + 0.554700196225229j)
    assert log_abs.dtype == np.complex128
    np.testing.assert_allclose(log_abs, 1.9756218592907138)


def test_cholesky_of_an_indefinite_matrix_fills_its_lower_triangle_with_nan():
    x = np.array([[[4.0, 0], [0, 4]], [[1, 2], [2, 1]]])
    result = run("Cholesky", {"T": "float64"}, x)
    np.testing.assert_array_equal(result, [[[2, 0], [0, 2]], [[np.nan, 0], [np.nan, np.nan]]])
    late = run("Cholesky", {"T": "float64"}, np.array([[4.0, 2, 0], [2, 5, 0], [0, 0, -1]]))
    assert np.isnan(late[np.tril_indices(3)]).all() and not late[np.triu_indices(3, 1)].any()


def test_cholesky_lets_a_nan_pivot_propagate_and_ignores_the_upper_triangle():
    result = run("Cholesky", {"T": "float64"}, np.array([[4.0, 2, 0], [2, 5, 0], [np.nan, 0, 1]]))
    np.testing.assert_array_equal(result[:2, :2], [[2, 0], [1, 2]])
    assert np.isnan(result[2]).all()
    np.testing.assert_allclose(
        run("Cholesky", {"T": "float64"}, np.array([[4.0, 100], [2, 3]])), [[2, 0], [1, 2**0.5]]
    )


def test_qr_of_empty_matrices():
    q, r = run("Qr", {"T": "float64", "full_matrices": True}, np.ones((3, 0)))
    np.testing.assert_array_equal(q, np.eye(3))
    assert r.shape == (3, 0)


def test_triangular_solve_divides_by_a_zero_pivot():
    result = run(
        "MatrixTriangularSolve",
        {"T": "float64", "lower": True},
        np.array([[0.0, 0], [1, 1]]),
        np.ones((2, 1)),
    )
    assert result.tolist() == [[np.inf], [-np.inf]]


def test_triangular_solve_reads_one_triangle_and_its_adjoint():
    m, rhs = np.array([[2.0, 5], [1, 1]]), np.ones((2, 1))
    assert run("MatrixTriangularSolve", {"T": "float64", "lower": True}, m, rhs).tolist() == [[0.5], [0.5]]
    assert run(
        "MatrixTriangularSolve", {"T": "float64", "lower": True, "adjoint": True}, m, rhs
    ).tolist() == [[0], [1]]


@pytest.mark.parametrize(
    ("matrix", "rhs", "message"),
    [
        ((2, 2), (3, 1), "In[0] mismatch In[1] shape: 2 vs. 3: [2,2] [3,1] 1 0"),
        ((2, 3), (2, 1), "In[0] matrices in the last dimensions must be square (3 =/= 2)"),
        ((2, 2, 2), (3, 2, 1), "In[0] and In[1] must have compatible batch dimensions: [2,2,2] vs. [3,2,1]"),
        ((2,), (2, 1), "In[0] ndims must be >= 2: 1"),
    ],
)
def test_triangular_solve_refuses_shapes_as_tf(matrix, rhs, message):
    with refused(message):
        run("MatrixTriangularSolve", {"T": "float64", "lower": True}, np.ones(matrix), np.ones(rhs))


def test_band_part_keeps_bools_and_refuses_wide_bands():
    x = np.ones((3, 3), bool)
    assert run("MatrixBandPart", {"T": "bool"}, x, np.int64(0), np.int64(1)).sum() == 5
    with refused("num_lower must be negative or less or equal to number of rows (2) got: 3"):
        run("MatrixBandPart", {"T": "float64"}, np.ones((2, 3)), np.int64(3), np.int64(-1))
    with refused("num_upper must be negative or less or equal to number of columns (3) got: 4"):
        run("MatrixBandPart", {"T": "float64"}, np.ones((2, 3)), np.int64(2), np.int64(4))
    with refused("num_lower must be scalar, got shape [1]"):
        run("MatrixBandPart", {"T": "float64"}, np.ones((3, 3)), np.array([1]), np.int64(0))


DIAGONALS = np.arange(1, 10.0).reshape(3, 3)


@pytest.mark.parametrize(
    ("op", "align", "expected"),
    [
        ("MatrixDiagV3", "RIGHT_LEFT", [[4, 2, 9], [7, 5, 3], [9, 8, 6]]),
        ("MatrixDiagV3", "LEFT_LEFT", [[4, 1, 9], [7, 5, 2], [9, 8, 6]]),
        ("MatrixDiagV2", None, [[4, 1, 9], [7, 5, 2], [9, 8, 6]]),
    ],
)
def test_matrix_diag_aligns_as_its_version_says(op, align, expected):
    attrs = {"T": "float64"} | ({"align": align.encode()} if align else {})
    k = np.array([-1, 1], np.int32)
    result = run(op, attrs, DIAGONALS, k, np.int32(-1), np.int32(-1), np.float64(9))
    assert result.tolist() == expected


def test_matrix_diag_of_a_rectangle():
    k = np.array([-1, 1], np.int32)
    result = run(
        "MatrixDiagV3",
        {"T": "float64", "align": b"RIGHT_RIGHT"},
        DIAGONALS,
        k,
        np.int32(3),
        np.int32(5),
        np.float64(9),
    )
    assert result.tolist() == [[4, 1, 9, 9, 9], [8, 5, 2, 9, 9], [9, 9, 6, 3, 9]]


@pytest.mark.parametrize(
    ("k", "rows", "cols", "message"),
    [
        (0, 2, -1, "The number of rows is too small."),
        (0, -1, 2, "The number of columns is too small."),
        (
            0,
            4,
            5,
            "The number of rows or columns is not consistent with the specified d_lower, d_upper, and diagonal.",
        ),
        (
            [-2, 0],
            -1,
            -1,
            "The number of diagonals provided in the input does not match the lower_diag_index and upper_diag_index range.",
        ),
        ([1, 0], -1, -1, "lower_diag_index must not be larger than upper_diag_index: 1 > 0"),
        ([1, 0, 1], -1, -1, "diag_index must have only one or two elements, received 3 elements."),
        ([], -1, -1, "Expected diag_index to have at least 1 element"),
    ],
)
def test_matrix_diag_refuses_as_tf(k, rows, cols, message):
    diagonal = np.ones(3) if np.ndim(k) == 0 else np.ones((2, 3))
    with refused(message):
        run(
            "MatrixDiagV3",
            {"T": "float64"},
            diagonal,
            np.array(k, np.int32),
            np.int32(rows),
            np.int32(cols),
            np.float64(0),
        )


def test_matrix_diag_part_pads_by_alignment():
    x, k = np.arange(12.0).reshape(3, 4), np.array([-1, 2], np.int32)
    right_left = run("MatrixDiagPartV3", {"T": "float64", "align": b"RIGHT_LEFT"}, x, k, np.float64(-1))
    assert right_left.tolist() == [[-1, 2, 7], [1, 6, 11], [0, 5, 10], [4, 9, -1]]
    left_right = run("MatrixDiagPartV3", {"T": "float64", "align": b"LEFT_RIGHT"}, x, k, np.float64(-1))
    assert left_right.tolist() == [[2, 7, -1], [1, 6, 11], [0, 5, 10], [-1, 4, 9]]
    assert run("MatrixDiagPart", {"T": "float64"}, np.arange(1, 7.0).reshape(2, 3)).tolist() == [1, 5]


def test_matrix_diag_part_bounds():
    x = np.ones((3, 4))
    with refused("lower_diag_index is out of bound: 4. It must be between -3 and 4"):
        run("MatrixDiagPartV3", {"T": "float64"}, x, np.int32(4), np.float64(0))
    with refused("upper_diag_index is out of bound: 4 It must be between -3 and 4"):
        run("MatrixDiagPartV3", {"T": "float64"}, x, np.array([0, 4], np.int32), np.float64(0))
    with refused("lower_diag_index is out of bound: -3 It must be between -3 and 4"):
        run("MatrixSetDiagV3", {"T": "float64"}, x, np.ones((4, 3)), np.array([-3, 0], np.int32))


def test_matrix_set_diag_refuses_a_diagonal_of_the_wrong_shape():
    with refused("diag_index must have at least one element"):
        run("MatrixSetDiagV3", {"T": "float64"}, np.ones((3, 3)), np.ones(3), np.zeros(0, np.int32))
    with pytest.raises(
        ValueError, match=r"Input shape: \[3,4\]\nDiagonal shape: \[2\]\nExpected diagonal shape: \[3\]$"
    ):
        run("MatrixSetDiag", {"T": "float64"}, np.ones((3, 4)), np.ones(2))


def test_matrix_set_diag_writes_diagonals_in_place_of_the_old():
    result = run(
        "MatrixSetDiagV2", {"T": "float64"}, np.zeros((3, 3)), DIAGONALS, np.array([-1, 1], np.int32)
    )
    assert result.tolist() == [[4, 1, 0], [7, 5, 2], [0, 8, 6]]

"""TF's linear algebra on the innermost two dimensions (matrices), any leading ones a batch: products
(MatMul, BatchMatMul V1-V3, Einsum), factorizations and solves (MatrixInverse, MatrixDeterminant,
LogMatrixDeterminant, Cholesky, Qr, MatrixTriangularSolve) and band and diagonal ops (MatrixBandPart,
MatrixDiag*, MatrixDiagPart*, MatrixSetDiag*).

Products, LU and QR are NumPy's (BLAS and LAPACK), TF's are Eigen's: the same algorithms (LU with
partial pivoting, Householder QR whose R diagonal has the same signs), so results agree to rounding,
not bit for bit. float16 is computed in float32 and rounded, as TF's MatMul accumulates it. Cholesky
and the triangular solve are written out here, to keep TF's handling of failures: Cholesky fills the
lower triangle of a matrix that is not positive definite with NaN, a zero pivot of a solve divides.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX, NUMBERS
from ..node_def import TfNode
from ..registry import register
from .common import shape_text

_INEXACT = frozenset({"float16", "float32", "float64"}) | COMPLEX
_PRODUCT = frozenset({"int32", "int64"}) | _INEXACT
_DIAGONALS = NUMBERS | {"bool"}  # moved, not computed: bfloat16's bits are fine
_SOLVABLE = _INEXACT - {"float16"}


def _computable(x: np.ndarray) -> np.ndarray:
    """float16 as float32 (LAPACK has no half precision; TF accumulates half products in float)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _adjoint(x: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(x, -1, -2))


def _matrices(x: np.ndarray, square: bool = False) -> np.ndarray:
    """Refuses what TF's linear algebra kernels refuse: a rank under 2, a non-square matrix."""
    if x.ndim < 2:
        raise ValueError(f"Input tensor 0 must have rank >= 2, got {x.ndim}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError("Input matrix must be square.")
    return x


# Products ---------------------------------------------------------------------------------------


def _product(x, y, adjoint_x: bool, adjoint_y: bool, conjugate: bool, dtype) -> np.ndarray:
    """x @ y with either transposed first (and conjugated, for BatchMatMul's adjoints), batch dims
    broadcast, refusing mismatched inner dims with TF's message."""
    flip = _adjoint if conjugate else (lambda m: np.swapaxes(m, -1, -2))
    left = flip(x) if adjoint_x else x
    right = flip(y) if adjoint_y else y
    if left.shape[-1] != right.shape[-2]:
        raise ValueError(
            f"Matrix size-incompatible: In[0]: {shape_text(x.shape)}, In[1]: {shape_text(y.shape)}"
        )
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    return np.matmul(left.astype(work, copy=False), right.astype(work, copy=False)).astype(dtype)


def _batch_dims(x: np.ndarray, y: np.ndarray) -> None:
    """BatchMatMulV2's rule: matrices on both sides, batch dims that broadcast."""
    for position, operand in enumerate((x, y)):
        if operand.ndim < 2:
            raise ValueError(f"In[{position}] ndims must be >= 2: {operand.ndim}")
    try:
        np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    except ValueError:
        raise ValueError(
            f"In[0] and In[1] must have compatible batch dimensions: {shape_text(x.shape)} vs. {shape_text(y.shape)}"
        ) from None


@register("MatMul", types={"T": _PRODUCT})
def _mat_mul(node: TfNode, a, b):
    """MatMul: a @ b of two matrices, either transposed first (transpose_a, transpose_b)."""
    if a.ndim != b.ndim:
        raise ValueError(
            f"In[0] and In[1] has different ndims: {shape_text(a.shape)} vs. {shape_text(b.shape)}"
        )
    if a.ndim != 2:
        raise ValueError(f"In[0] and In[1] ndims must be == 2: {a.ndim}")
    transpose_a, transpose_b = node.attr("transpose_a", False), node.attr("transpose_b", False)
    return _product(a, b, transpose_a, transpose_b, False, a.dtype)


@register("BatchMatMul", types={"T": _PRODUCT})
def _batch_mat_mul(node: TfNode, x, y):
    """BatchMatMul: x @ y per matrix of equal batch dims, either adjoint first (adj_x, adj_y)."""
    if x.ndim != y.ndim:
        raise ValueError(
            f"In[0] and In[1] has different ndims: {shape_text(x.shape)} vs. {shape_text(y.shape)}"
        )
    _batch_dims(x, y)
    for axis in range(x.ndim - 2):
        if x.shape[axis] != y.shape[axis]:
            raise ValueError(
                f"In[0].dim({axis}) and In[1].dim({axis}) must be the same: "
                f"{shape_text(x.shape)} vs {shape_text(y.shape)}"
            )
    return _product(x, y, node.attr("adj_x", False), node.attr("adj_y", False), True, x.dtype)


@register("BatchMatMulV2", types={"T": _PRODUCT | {"int16"}})
def _batch_mat_mul_v2(node: TfNode, x, y):
    """BatchMatMulV2: x @ y per matrix, batch dims broadcast, either adjoint first (adj_x, adj_y)."""
    _batch_dims(x, y)
    return _product(x, y, node.attr("adj_x", False), node.attr("adj_y", False), True, x.dtype)


@register(
    "BatchMatMulV3",
    types={
        "Ta": _PRODUCT | {"int8", "uint8", "int16"},
        "Tb": _PRODUCT | {"int8", "uint8", "int16"},
        "Tout": _PRODUCT | {"int16"},
    },
)
def _batch_mat_mul_v3(node: TfNode, x, y):
    """BatchMatMulV3: BatchMatMulV2 of operands of types Ta and Tb, computed in type Tout.

    int8 x uint8 products thus accumulate in int32."""
    _batch_dims(x, y)
    dtype = node.attr("Tout").numpy
    return _product(x, y, node.attr("adj_x", False), node.attr("adj_y", False), True, dtype)


def _label_axes(subscript: str, rank: int) -> list[tuple[str, int]]:
    """(label, axis) of each labelled axis of an operand; an ellipsis stands for the axes between."""
    head, _, tail = subscript.partition("...")
    return [(label, axis) for axis, label in enumerate(head)] + [
        (label, rank - len(tail) + axis) for axis, label in enumerate(tail)
    ]


def _check_einsum(equation: str, inputs) -> None:
    """TF's checks of an Einsum equation against its operands: one or two of them, each of the rank
    its subscript says, a label the same size wherever it appears (NumPy would broadcast a 1)."""
    if equation.count("->") != 1:
        raise ValueError(f"Expecting exactly one '->' in einsum equation: {equation}")
    subscripts = equation.split("->")[0].split(",")
    if len(subscripts) > 2:
        raise ValueError(
            f"Expecting 1 or 2 input subscripts in equation '{equation}' but got: {len(subscripts)}"
        )
    if len(subscripts) != len(inputs):
        raise ValueError(f"Expected {len(subscripts)} inputs but got: {len(inputs)}")
    sizes: dict[str, int] = {}
    for position, (subscript, operand) in enumerate(zip(subscripts, inputs, strict=True)):
        labels = len(subscript.replace("...", ""))
        if "..." not in subscript and operand.ndim != labels:
            raise ValueError(f"Expected input {position} to have rank {labels} but got: {operand.ndim}")
        if operand.ndim < labels:
            raise ValueError(
                f"Expected input {position} to have rank at least {labels} but got: {operand.ndim}"
            )
        for label, axis in _label_axes(subscript, operand.ndim):
            expected = sizes.setdefault(label, operand.shape[axis])
            if operand.shape[axis] != expected:
                raise ValueError(
                    f"Expected dimension {expected} at axis {axis} of the input shaped "
                    f"{shape_text(operand.shape)} but got dimension {operand.shape[axis]}"
                )


@register("Einsum", types={"T": _PRODUCT})
def _einsum(node: TfNode, *inputs):
    """Einsum: the contraction its equation attr names (one or two operands, ellipsis broadcast)."""
    equation = node.text("equation")
    _check_einsum(equation, inputs)
    return np.asarray(np.einsum(equation, *inputs)).astype(inputs[0].dtype, copy=False)


# Factorizations and solves ----------------------------------------------------------------------


@register("MatrixInverse", types={"T": _INEXACT})
def _matrix_inverse(node: TfNode, x):
    """MatrixInverse: the inverse of each matrix (of its adjoint, with adjoint), by LU.

    A zero or NaN pivot makes TF refuse the whole batch."""
    work = _computable(_matrices(x, square=True))
    if node.attr("adjoint", False):
        work = _adjoint(work)
    try:
        if np.isnan(work).any():
            raise np.linalg.LinAlgError
        inverse = np.linalg.inv(work)
    except np.linalg.LinAlgError:
        raise ValueError("Input is not invertible.") from None
    return inverse.astype(x.dtype)


def _slogdet(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sign, log |det|) per matrix from its LU factors, as TF's: a singular matrix has sign 0 and
    log -inf, one holding NaN a NaN sign (NumPy says 1); an empty matrix 1 and 0."""
    with np.errstate(invalid="ignore"):
        sign, log_abs = np.linalg.slogdet(_matrices(x, square=True))
    sign = np.where(np.isnan(log_abs), np.nan, sign)
    return sign.astype(x.dtype), log_abs.astype(x.dtype)


@register("MatrixDeterminant", types={"T": _SOLVABLE})
def _matrix_determinant(node: TfNode, x):
    """MatrixDeterminant: sign * exp(log |det|) per matrix, as TF forms it."""
    sign, log_abs = _slogdet(x)
    with np.errstate(over="ignore"):
        return np.asarray(sign * np.exp(log_abs)).astype(x.dtype)


@register("LogMatrixDeterminant", types={"T": _SOLVABLE})
def _log_matrix_determinant(node: TfNode, x):
    """LogMatrixDeterminant: (sign, log |det|) per matrix; complex types give both as complex."""
    sign, log_abs = _slogdet(x)
    return np.asarray(sign), np.asarray(log_abs)


@register("Cholesky", types={"T": _SOLVABLE})
def _cholesky(node: TfNode, x):
    """Cholesky: the lower factor L (L @ L^H = x) of each matrix, from its lower triangle.

    As Eigen, a pivot <= 0 fails (a NaN one does not, it propagates); TF then fills the lower
    triangle of that matrix with NaN (its upper one it leaves unwritten: here 0)."""
    _matrices(x, square=True)
    size = x.shape[-1]
    factor = np.zeros_like(x)
    failed = np.zeros(x.shape[:-2], dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        for k in range(size):
            row = factor[..., k, :k]
            pivot = x[..., k, k].real - np.sum(np.abs(row) ** 2, axis=-1)
            failed |= pivot <= 0
            root = np.sqrt(np.maximum(pivot, 0))
            factor[..., k, k] = root
            column = x[..., k + 1 :, k] - np.matmul(factor[..., k + 1 :, :k], np.conj(row)[..., None])[..., 0]
            factor[..., k + 1 :, k] = column / root[..., None]
    factor[failed] = np.where(np.tri(size, dtype=bool), np.nan, 0)
    return factor


@register("Qr", types={"T": _INEXACT})
def _qr(node: TfNode, x):
    """Qr: (q, r) of each matrix by Householder reflections, reduced or full (full_matrices).

    Q and R are unique up to the signs of R's diagonal; LAPACK picks the same ones as Eigen."""
    mode = "complete" if node.attr("full_matrices", False) else "reduced"
    q, r = np.linalg.qr(_computable(_matrices(x)), mode=mode)
    return q.astype(x.dtype), r.astype(x.dtype)


@register("MatrixTriangularSolve", types={"T": _SOLVABLE})
def _matrix_triangular_solve(node: TfNode, matrix, rhs):
    """MatrixTriangularSolve: x with T @ x = rhs, T a triangle of matrix (lower) or its adjoint.

    Batch dims broadcast. A zero on T's diagonal divides (inf, NaN), as TF."""
    lower, adjoint = node.attr("lower", True), node.attr("adjoint", False)
    for position, operand in enumerate((matrix, rhs)):
        if operand.ndim < 2:
            raise ValueError(f"In[{position}] ndims must be >= 2: {operand.ndim}")
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(
            "In[0] matrices in the last dimensions must be square "
            f"({matrix.shape[-1]} =/= {matrix.shape[-2]})"
        )
    _batch_dims(matrix, rhs)
    if matrix.shape[-1] != rhs.shape[-2]:
        raise ValueError(
            f"In[0] mismatch In[1] shape: {matrix.shape[-1]} vs. {rhs.shape[-2]}: {shape_text(matrix.shape)} "
            f"{shape_text(rhs.shape)} {int(lower)} {int(adjoint)}"
        )
    triangle = np.tril(matrix) if lower else np.triu(matrix)
    if adjoint:
        triangle, lower = _adjoint(triangle), not lower
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    size = matrix.shape[-1]
    triangle = np.broadcast_to(triangle, (*batch, size, size))
    solution = np.zeros(batch + rhs.shape[-2:], dtype=matrix.dtype)
    rhs = np.broadcast_to(rhs, solution.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(size) if lower else reversed(range(size)):
            known = slice(0, i) if lower else slice(i + 1, size)
            residual = (
                rhs[..., i, :]
                - np.matmul(triangle[..., i : i + 1, known], solution[..., known, :])[..., 0, :]
            )
            solution[..., i, :] = residual / triangle[..., i, i, None]
    return solution


# Band and diagonals -----------------------------------------------------------------------------


def _scalar_index(value: np.ndarray, name: str) -> int:
    if np.ndim(value) != 0:
        raise ValueError(f"{name} must be scalar, got shape {shape_text(np.shape(value))}")
    return int(value)


@register("MatrixBandPart", types={"T": _DIAGONALS})
def _matrix_band_part(node: TfNode, x, num_lower, num_upper):
    """MatrixBandPart: x zeroed outside num_lower subdiagonals and num_upper superdiagonals.

    A negative count keeps that whole triangle."""
    if x.ndim < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {shape_text(x.shape)}")
    rows, cols = x.shape[-2:]
    lower, upper = _scalar_index(num_lower, "num_lower"), _scalar_index(num_upper, "num_upper")
    if lower > rows:
        raise ValueError(
            f"num_lower must be negative or less or equal to number of rows ({rows}) got: {lower}"
        )
    if upper > cols:
        raise ValueError(
            f"num_upper must be negative or less or equal to number of columns ({cols}) got: {upper}"
        )
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]  # column - row: the diagonal's index
    band = ((lower < 0) | (-offset <= lower)) & ((upper < 0) | (offset <= upper))
    return np.where(band, x, np.zeros((), x.dtype))


def _diagonal_range(k: np.ndarray | None, empty: str = "Expected diag_index to have at least 1 element"):
    """The (lowest, highest) diagonal of a k input: a scalar or one or two values; None: V1's 0.
    `empty`: the op's message for no value (MatrixSetDiag's differs)."""
    if k is None:
        return 0, 0
    if np.ndim(k) > 1:
        raise ValueError(f"diag_index must be a scalar or vector, received shape: {shape_text(np.shape(k))}")
    values = np.ravel(k)
    if values.size == 0:
        raise ValueError(empty)
    if values.size > 2:
        raise ValueError(f"diag_index must have only one or two elements, received {values.size} elements.")
    low, high = int(values[0]), int(values[-1])
    if low > high:
        raise ValueError(f"lower_diag_index must not be larger than upper_diag_index: {low} > {high}")
    return low, high


def _diagonal_cells(rows: int, cols: int, low: int, high: int, width: int, align: str):
    """Where the diagonals low..high of a rows x cols matrix sit in their packed form: for each
    packed cell (slot, position) in a (high-low+1, width) block, its matrix cell (row, col), as
    index arrays. Slot 0 holds diagonal `high`. A diagonal shorter than `width` sits at the left or
    right of its slot, as `align` (superdiagonals_subdiagonals, e.g. "RIGHT_LEFT") says; the main
    diagonal counts as both."""
    superdiagonals, _, subdiagonals = align.partition("_")
    slots, positions, row_cells, col_cells = [], [], [], []
    for slot, diagonal in enumerate(range(high, low - 1, -1)):
        length = max(0, min(rows + min(0, diagonal), cols - max(0, diagonal)))
        left = (diagonal >= 0 and superdiagonals == "LEFT") or (diagonal <= 0 and subdiagonals == "LEFT")
        start = 0 if left else width - length
        steps = np.arange(length)
        slots.append(np.full(length, slot))
        positions.append(start + steps)
        row_cells.append(steps + max(0, -diagonal))
        col_cells.append(steps + max(0, diagonal))
    return tuple(np.concatenate(part).astype(np.intp) for part in (slots, positions, row_cells, col_cells))


def _diagonal_bounds(rows: int, cols: int, low: int, high: int, lower_mark: str) -> None:
    """MatrixDiagPart's and MatrixSetDiag's bounds on k (lower_mark: the "." MatrixDiagPart's
    message puts after a lower index, not after an upper one, nor does MatrixSetDiag's)."""
    for name, index, mark in (("lower", low, lower_mark), ("upper", high, "")):
        if not (-rows < index < cols or index == 0):
            raise ValueError(
                f"{name}_diag_index is out of bound: {index}{mark} It must be between {-rows} and {cols}"
            )


def _alignment(node: TfNode) -> str:
    """V3's align attr; V1 and V2 (no attr) pack every diagonal at the left."""
    return node.text("align", "LEFT_LEFT")


def _matrix_diag(node: TfNode, diagonal, k=None, num_rows=None, num_cols=None, padding_value=None):
    """MatrixDiag V1-V3: matrices whose diagonals k are `diagonal`, padding_value elsewhere.

    k: one diagonal or a [low, high] range (V1: the main one); num_rows and num_cols: -1 for the
    smallest that fit, both -1 for square."""
    low, high = _diagonal_range(k)
    if diagonal.ndim < 1:
        raise ValueError(f"diagonal must be at least 1-dim, received shape: {shape_text(diagonal.shape)}")
    count = high - low + 1
    if count > 1 and (diagonal.ndim < 2 or diagonal.shape[-2] != count):
        raise ValueError(
            "The number of diagonals provided in the input does not match the lower_diag_index and "
            "upper_diag_index range."
        )
    width = diagonal.shape[-1]
    least_rows, least_cols = width - min(high, 0), width + max(low, 0)
    rows = -1 if num_rows is None else int(np.ravel(num_rows)[0])
    cols = -1 if num_cols is None else int(np.ravel(num_cols)[0])
    if rows != -1 and rows < least_rows:
        raise ValueError("The number of rows is too small.")
    if cols != -1 and cols < least_cols:
        raise ValueError("The number of columns is too small.")
    if rows == -1 and cols == -1:
        rows = cols = max(least_rows, least_cols)
    rows = least_rows if rows == -1 else rows
    cols = least_cols if cols == -1 else cols
    if rows != least_rows and cols != least_cols:
        raise ValueError(
            "The number of rows or columns is not consistent with the specified d_lower, d_upper, and diagonal."
        )
    packed = diagonal.reshape((*diagonal.shape[: diagonal.ndim - (2 if count > 1 else 1)], count, width))
    pad = np.zeros((), diagonal.dtype) if padding_value is None else np.ravel(padding_value)[0]
    output = np.full((*packed.shape[:-2], rows, cols), pad, dtype=diagonal.dtype)
    slots, positions, row_cells, col_cells = _diagonal_cells(rows, cols, low, high, width, _alignment(node))
    output[..., row_cells, col_cells] = packed[..., slots, positions]
    return output


def _matrix_diag_part(node: TfNode, x, k=None, padding_value=None):
    """MatrixDiagPart V1-V3: the diagonals k of each matrix, packed as MatrixDiag reads them.

    Several diagonals take a row each, from the highest; padding_value fills a short one's row."""
    low, high = _diagonal_range(k)
    if x.ndim < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {shape_text(x.shape)}")
    rows, cols = x.shape[-2:]
    _diagonal_bounds(rows, cols, low, high, ".")
    count, width = high - low + 1, max(0, min(rows + min(high, 0), cols - max(low, 0)))
    pad = np.zeros((), x.dtype) if padding_value is None else np.ravel(padding_value)[0]
    packed = np.full((*x.shape[:-2], count, width), pad, dtype=x.dtype)
    slots, positions, row_cells, col_cells = _diagonal_cells(rows, cols, low, high, width, _alignment(node))
    packed[..., slots, positions] = x[..., row_cells, col_cells]
    return packed if count > 1 else packed[..., 0, :]


def _matrix_set_diag(node: TfNode, x, diagonal, k=None):
    """MatrixSetDiag V1-V3: x with its diagonals k replaced by `diagonal` (packed as MatrixDiag's)."""
    low, high = _diagonal_range(k, "diag_index must have at least one element")
    if x.ndim < 2:
        raise ValueError(f"input must be at least 2-dim, received shape: {shape_text(x.shape)}")
    if diagonal.ndim < 1:
        raise ValueError(f"diagonal must be at least 1-dim, received shape: {shape_text(diagonal.shape)}")
    rows, cols = x.shape[-2:]
    _diagonal_bounds(rows, cols, low, high, "")
    count = high - low + 1
    if count > 1 and (diagonal.ndim < x.ndim or diagonal.shape[x.ndim - 2] != count):
        raise ValueError(
            "The number of diagonals provided in `diag` is not consistent with `lower_diag_index` and "
            "`upper_diag_index`"
        )
    width = min(rows + min(high, 0), cols - max(low, 0))
    expected = x.shape[:-2] + ((count,) if count > 1 else ()) + (width,)
    if diagonal.shape != expected:
        raise ValueError(
            "Either first dimensions of diagonal don't match input.shape[:-2], or diagonal.shape[:-1] is "
            "not equal to the longests diagonal in range [lower_diag_index:upper_diag_index].\n"
            f"Input shape: {shape_text(x.shape)}\nDiagonal shape: {shape_text(diagonal.shape)}\n"
            f"Expected diagonal shape: {shape_text(expected)}"
        )
    output = x.copy()
    packed = diagonal.reshape((*x.shape[:-2], count, width))
    slots, positions, row_cells, col_cells = _diagonal_cells(rows, cols, low, high, width, _alignment(node))
    output[..., row_cells, col_cells] = packed[..., slots, positions]
    return output


for _version in ("", "V2", "V3"):
    register(f"MatrixDiag{_version}", _matrix_diag, types={"T": _DIAGONALS})
    register(f"MatrixDiagPart{_version}", _matrix_diag_part, types={"T": _DIAGONALS})
    register(f"MatrixSetDiag{_version}", _matrix_set_diag, types={"T": _DIAGONALS})
register("BatchMatrixDiag", _matrix_diag, types={"T": _DIAGONALS})
register("BatchMatrixDiagPart", _matrix_diag_part, types={"T": _DIAGONALS})
register("BatchMatrixSetDiag", _matrix_set_diag, types={"T": _DIAGONALS})
register("BatchMatrixInverse", _matrix_inverse, types={"T": _SOLVABLE})

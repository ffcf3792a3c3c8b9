"""srcad.sparse: sparse operations with exact, sparse, deterministic derivatives.

Each function here runs srcad's compiled kernels; srcad differentiates calls of them through
the rules in srcad/rules/sparse_rules.py (they are library functions, never transformed).

Sparse arguments are CSR, CSC or COO (`_array` or `_matrix`); a differentiated argument in another
format raises srcad.InputError naming the conversion (`A.tocsr()`), as do index arrays that do
not fit the shape and an axis other than None, 0, 1. A duplicate entry counts once with its
duplicates summed wherever scipy sums them (reduce_max/min here), and receives the summed entry's
derivative. Besides these functions srcad differentiates scipy's own sparse operations (see the
README): products with dense and sparse operands, A.T, A.multiply, A * s, A.power, A.diagonal,
A.toarray, scipy.sparse.diags/hstack/vstack, and the methods users call on a matrix
(srcad/runtime/sparse/methods.py): abs(A), A.max()/A.min() (axis None/0/1; implicit zeros take part
as in scipy, a tie split evenly among the tied elements), A.astype(float dtype), A.tocsr()/tocsc()/
tocoo(), every subscript (A[i], A[i, :], A[:, j], A[rows], A[::2]), A.getrow/getcol, and the
zero-preserving elementwise methods (A.sin(), A.sqrt(), A.expm1(), ...; A.floor(), A.sign() and the
other step functions carry no derivative). A row A[i] of a sparse *array* is 1-D: `.toarray()`,
`.sum()`, `.data` take it; a product needs it 2-D (A[[i]]).

- `matmul(A, X)`: A @ X for a scipy sparse A (CSR, CSC, COO; `_array` or `_matrix`) and a
  dense 1-D or 2-D X, as a dense ndarray.
- `reduce_max(A, axis=None)`, `reduce_min`: over stored entries only (explicit zeros count,
  implicit zeros do not). axis=None gives a scalar, axis=1 a dense 1-D array with one entry per
  row, axis=0 one per column. An empty row/column gives -inf (max) / +inf (min) and receives no
  gradient; the gradient of a group is split evenly among its tied entries.
- `segment_sum(data, segment_ids, num_segments)`, `segment_max`, `segment_min`: over the first
  axis of a dense `data`, `segment_ids` in any order; the result has shape
  `(num_segments,) + data.shape[1:]`; an empty segment gives 0 / -inf / +inf and no gradient.
- `add(A, B)`, `subtract(A, B)`: A + B and A - B of two sparse matrices on the union of their
  patterns, every stored entry kept (scipy's `A + B` drops entries whose sum is zero, and with
  them their derivative; srcad asks for these where that happened).
- `accumulate(acc, g)`: acc += g in place, deterministically (also `srcad.accumulate`).

What srcad works out once per sparsity pattern (a transposed index, a sort, a bounds check) is
cached, and used only while a fingerprint of the index arrays' content matches: index buffers a
data loader refills in place between calls are read as they are now. Segment ids and RowSparse
rows outside -n..n-1 raise srcad.InputError (an IndexError too) naming the argument.
"""
from ..runtime import sparse as _rt

__all__ = ["matmul", "add", "subtract", "reduce_max", "reduce_min", "segment_sum", "segment_max", "segment_min",
           "accumulate"]


def matmul(A, X):
    """``A @ X`` through srcad's compiled kernel: a dense ndarray (never ``np.matrix``).

    The generated code uses the same kernel for ``A @ X`` with a sparse A.

    Parameters
    ----------
    A : scipy sparse matrix or array (CSR, CSC or COO)
    X : ndarray
        1-D or 2-D, with A.shape[1] rows.

    Returns
    -------
    ndarray

    Raises
    ------
    InputError
        When the shapes do not fit or A is not a supported sparse format.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import srcad
    >>> A = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> print(srcad.sparse.matmul(A, np.array([3.0, 4.0])))
    [3. 8.]
    """
    return _rt.sparse_matmul(A, X)


def add(A, B):
    """``A + B`` for two sparse matrices, on the union of their stored entries (none dropped,
    explicit zeros kept), so that its gradient has each input's pattern.

    Parameters
    ----------
    A, B : scipy sparse matrices of the same shape

    Returns
    -------
    scipy sparse matrix
        The sum, stored on the union of the patterns.

    Raises
    ------
    InputError
        When the shapes differ or a format is not supported.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import srcad
    >>> A = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> B = sp.csr_array(np.array([[0.0, 1.0], [0.0, 2.0]]))
    >>> C = srcad.sparse.add(A, B)
    >>> print(C.toarray(), C.nnz)
    [[1. 1.]
     [0. 4.]] 3
    """
    return _rt.add(A, B, 1.0)


def subtract(A, B):
    """``A - B`` for two sparse matrices, on the union of their stored entries (none dropped,
    explicit zeros kept), so that its gradient has each input's pattern.

    Parameters
    ----------
    A, B : scipy sparse matrices of the same shape

    Returns
    -------
    scipy sparse matrix
        The difference, stored on the union of the patterns.

    Raises
    ------
    InputError
        When the shapes differ or a format is not supported.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import srcad
    >>> A = sp.csr_array(np.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> B = sp.csr_array(np.array([[0.0, 1.0], [0.0, 2.0]]))
    >>> C = srcad.sparse.subtract(A, B)
    >>> print(C.toarray(), C.nnz)
    [[ 1. -1.]
     [ 0.  0.]] 3
    """
    return _rt.add(A, B, -1.0)


def reduce_max(A, axis=None):
    """The largest stored entry of A (axis=None), of each row (axis=1) or of each column (axis=0).

    Only stored entries count (an implicit zero is not a candidate); an empty row or column gives
    -inf and receives no gradient; the gradient is split evenly among tied entries.

    Parameters
    ----------
    A : scipy sparse matrix or array (CSR, CSC or COO)
    axis : {None, 0, 1}, default None

    Returns
    -------
    float or ndarray
        A scalar for axis=None, else one entry per row (axis=1) or column (axis=0).

    Raises
    ------
    InputError
        For another axis or an unsupported format.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import srcad
    >>> A = sp.csr_array((np.array([-1.0, 3.0, 2.0]), np.array([0, 1, 0]), np.array([0, 2, 2, 3])), shape=(3, 2))
    >>> print(srcad.sparse.reduce_max(A, axis=1))
    [  3. -inf   2.]
    """
    return _rt.reduce(A, axis, "max")


def reduce_min(A, axis=None):
    """The smallest stored entry of A (axis=None), of each row (axis=1) or of each column (axis=0).

    Only stored entries count (an implicit zero is not a candidate); an empty row or column gives
    +inf and receives no gradient; the gradient is split evenly among tied entries.

    Parameters
    ----------
    A : scipy sparse matrix or array (CSR, CSC or COO)
    axis : {None, 0, 1}, default None

    Returns
    -------
    float or ndarray
        A scalar for axis=None, else one entry per row (axis=1) or column (axis=0).

    Raises
    ------
    InputError
        For another axis or an unsupported format.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import srcad
    >>> A = sp.csr_array((np.array([-1.0, 3.0, 2.0]), np.array([0, 1, 0]), np.array([0, 2, 2, 3])), shape=(3, 2))
    >>> print(srcad.sparse.reduce_min(A, axis=1))
    [-1. inf  2.]
    """
    return _rt.reduce(A, axis, "min")


def segment_sum(data, segment_ids, num_segments):
    """``out[s] = sum of data[k] over k with segment_ids[k] == s`` (0 for an empty segment).

    Over the first axis of dense data, segment_ids in any order; differentiable w.r.t. data
    (an empty segment gives no gradient).

    Parameters
    ----------
    data : ndarray
    segment_ids : ndarray of int
        One segment per row of data, in 0..num_segments-1 (negative ids count from the end).
    num_segments : int

    Returns
    -------
    ndarray
        Of shape ``(num_segments,) + data.shape[1:]``.

    Raises
    ------
    InputError
        When a segment id is out of range (also an IndexError) or the lengths differ.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> data = np.array([1.0, 5.0, 2.0, 4.0])
    >>> print(srcad.sparse.segment_sum(data, np.array([0, 2, 0, 2]), 3))
    [3. 0. 9.]
    """
    return _rt.segment(data, segment_ids, num_segments, "sum")


def segment_max(data, segment_ids, num_segments):
    """``out[s] = max of data[k] over k with segment_ids[k] == s`` (-inf for an empty segment).

    Over the first axis of dense data, segment_ids in any order; differentiable w.r.t. data
    (an empty segment gives no gradient; ties split the gradient evenly).

    Parameters
    ----------
    data : ndarray
    segment_ids : ndarray of int
        One segment per row of data, in 0..num_segments-1 (negative ids count from the end).
    num_segments : int

    Returns
    -------
    ndarray
        Of shape ``(num_segments,) + data.shape[1:]``.

    Raises
    ------
    InputError
        When a segment id is out of range (also an IndexError) or the lengths differ.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> data = np.array([1.0, 5.0, 2.0, 4.0])
    >>> print(srcad.sparse.segment_max(data, np.array([0, 2, 0, 2]), 3))
    [  2. -inf   5.]
    """
    return _rt.segment(data, segment_ids, num_segments, "max")


def segment_min(data, segment_ids, num_segments):
    """``out[s] = min of data[k] over k with segment_ids[k] == s`` (+inf for an empty segment).

    Over the first axis of dense data, segment_ids in any order; differentiable w.r.t. data
    (an empty segment gives no gradient; ties split the gradient evenly).

    Parameters
    ----------
    data : ndarray
    segment_ids : ndarray of int
        One segment per row of data, in 0..num_segments-1 (negative ids count from the end).
    num_segments : int

    Returns
    -------
    ndarray
        Of shape ``(num_segments,) + data.shape[1:]``.

    Raises
    ------
    InputError
        When a segment id is out of range (also an IndexError) or the lengths differ.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> data = np.array([1.0, 5.0, 2.0, 4.0])
    >>> print(srcad.sparse.segment_min(data, np.array([0, 2, 0, 2]), 3))
    [ 1. inf  4.]
    """
    return _rt.segment(data, segment_ids, num_segments, "min")


def accumulate(acc, g):
    """Add the gradient g into acc in place and return acc.

    For training loops that sum gradients over batches: dense arrays, `srcad.RowSparse` gradients
    (only their rows are touched), scipy sparse gradients with acc's stored pattern, or tuples,
    lists and dicts of these. The same bits for any thread count.

    Parameters
    ----------
    acc : ndarray, scipy sparse matrix, or a pytree of them
        The accumulator, changed in place.
    g : ndarray, RowSparse, scipy sparse matrix, or a pytree of them
        A gradient shaped like acc (a sparse one with acc's pattern).

    Returns
    -------
    object
        acc itself.

    Raises
    ------
    InputError
        When g does not fit acc (shape, pattern, structure, or RowSparse rows out of range).

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> acc = np.zeros((3, 2))
    >>> g = srcad.RowSparse(np.array([0, 2, 0]), np.ones((3, 2)), (3, 2))
    >>> srcad.accumulate(acc, g) is acc
    True
    >>> print(acc)
    [[2. 2.]
     [0. 0.]
     [1. 1.]]
    """
    from ..errors import InputError
    try:
        return _rt.accumulate(acc, g)
    except InputError as exc:
        where = getattr(exc, "srcad_index", None)
        if where is None:
            raise
        bad, n, count, total = where
        raise InputError(f"srcad.accumulate(acc, g): g is a srcad.RowSparse whose indices hold {bad}, outside "
                         f"-{n}..{n - 1} for an accumulator of {n} rows ({count} of its {total} indices). "
                         f"Accumulate into an array of the gradient's shape, or build the RowSparse with "
                         f"indices inside it (acc is unchanged, but for the leaves before this one "
                         f"of a tuple, list or dict).") from None

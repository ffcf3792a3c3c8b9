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
(srcad/runtime/sparse_methods.py): abs(A), A.max()/A.min() (axis None/0/1; implicit zeros take part
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
from ..runtime import sparse_ops as _ops

__all__ = ["matmul", "add", "subtract", "reduce_max", "reduce_min", "segment_sum", "segment_max", "segment_min",
           "accumulate"]


def matmul(A, X):
    """A @ X through srcad's compiled kernel (a dense ndarray; never np.matrix)."""
    return _ops.sparse_matmul(A, X)


def add(A, B):
    """A + B for two sparse matrices, on the union of their stored entries (none dropped)."""
    from ..runtime import sparse_struct
    return sparse_struct.add(A, B, 1.0)


def subtract(A, B):
    """A - B for two sparse matrices, on the union of their stored entries (none dropped)."""
    from ..runtime import sparse_struct
    return sparse_struct.add(A, B, -1.0)


def reduce_max(A, axis=None):
    """The largest stored entry of A (axis=None), of each row (axis=1) or of each column (axis=0)."""
    return _ops.reduce(A, axis, "max")


def reduce_min(A, axis=None):
    """The smallest stored entry of A (axis=None), of each row (axis=1) or of each column (axis=0)."""
    return _ops.reduce(A, axis, "min")


def segment_sum(data, segment_ids, num_segments):
    """out[s] = sum of data[k] over k with segment_ids[k] == s (0 for an empty segment)."""
    return _ops.segment(data, segment_ids, num_segments, "sum")


def segment_max(data, segment_ids, num_segments):
    """out[s] = max of data[k] over k with segment_ids[k] == s (-inf for an empty segment)."""
    return _ops.segment(data, segment_ids, num_segments, "max")


def segment_min(data, segment_ids, num_segments):
    """out[s] = min of data[k] over k with segment_ids[k] == s (+inf for an empty segment)."""
    return _ops.segment(data, segment_ids, num_segments, "min")


def accumulate(acc, g):
    """Add the gradient g into acc in place and return acc: dense arrays, srcad.RowSparse, scipy
    sparse gradients with acc's pattern (or tuples/lists of these). The same bits for any
    thread count."""
    from ..errors import InputError
    try:
        return _ops.accumulate(acc, g)
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

"""Dependency rows: a boolean CSR matrix (rows = the entries of a traced value in C order,
columns = the input's entries) and the few operations the tracer's rules are built from.

Every matrix here is canonical (sorted column indices, no duplicates, every stored value True),
so an identical object means an identical set and unions can merge row by row. Row numbers are
given 1-based as "positions": 0 stands for an entry that depends on nothing (a constant, a
zero written by the tangent code), so NumPy's own functions moving positions around (with zeros
for what they fill in) say which rows the result takes.
"""
import numpy as np
import scipy.sparse as sp


def _idx(total):
    """The index dtype of a matrix with this many stored entries or columns (int32 when it fits:
    half the memory traffic, and scipy keeps it without checking the contents)."""
    return np.int32 if total < 2**31 - 1 else np.int64


def identity(n):
    """The seed: input entry k depends on input entry k."""
    return make(np.arange(n + 1, dtype=_idx(n)), np.arange(n, dtype=_idx(n)), n, n)


def empty(nrows, n):
    """nrows entries that depend on nothing."""
    return make(np.zeros(nrows + 1, _idx(n)), np.zeros(0, _idx(n)), nrows, n)


def make(indptr, indices, nrows, n):
    dt = _idx(max(len(indices), n))
    return sp.csr_array((np.ones(len(indices), dtype=bool), indices.astype(dt, copy=False),
                         indptr.astype(dt, copy=False)), shape=(nrows, n))


def positions(shape):
    """The 1-based row number of every entry of a value of this shape, laid out in that shape."""
    size = int(np.prod(shape, dtype=np.int64))
    return np.arange(1, size + 1, dtype=np.int64).reshape(shape)


def take(M, pos):
    """The rows pos - 1 of M (pos 0: an empty row), in pos's C order, as a new canonical matrix."""
    pos = np.asarray(pos, dtype=np.int64).reshape(-1)
    nrows = M.shape[0]
    if len(pos) == nrows and (nrows == 0 or (pos[0] == 1 and pos[-1] == nrows
                                              and np.array_equal(pos, np.arange(1, nrows + 1)))):
        return M
    if not len(pos):
        return empty(0, M.shape[1])
    lo, hi = pos.min(), pos.max()
    if lo < 0 or hi > nrows:
        raise IndexError("a dependency row outside the traced value")
    if lo == 0:         # rows with no dependency: M with one empty row appended, read as row nrows
        if not M.nnz:
            return empty(len(pos), M.shape[1])
        M = make(np.append(M.indptr, M.indptr[-1]), M.indices, nrows + 1, M.shape[1])
        pos = np.where(pos == 0, nrows + 1, pos)
    out = M[pos - 1]                # (scipy's row gather: one pass in C++, rows stay sorted)
    return out if out.indices.dtype == M.indices.dtype else make(out.indptr, out.indices, *out.shape)


def union(mats):
    """Row-by-row union of matrices of one shape (the same object counted once)."""
    seen, out = set(), []
    for M in mats:
        if id(M) not in seen and M.nnz:
            seen.add(id(M))
            out.append(M)
    if not out:
        return mats[0]
    total = out[0]
    for M in out[1:]:
        total = total + M       # (canonical operands: scipy merges them row by row, canonical, bool OR)
    return total


def canonical(M):
    """M (a boolean product or stack of canonical matrices: unique column indices, no False
    stored) with its column indices sorted within each row."""
    if M.dtype != bool:
        raise TypeError("dependency rows must be boolean")
    M.has_sorted_indices = False        # (scipy's flag may be stale after a product: sort for sure)
    M.sort_indices()
    return M


def grouped(M, groups, ngroups):
    """Row g of the result: the union of the rows r of M with groups[r] == g (a reduction)."""
    groups = np.asarray(groups, dtype=np.int64).reshape(-1)
    G = sp.csr_array((np.ones(len(groups), dtype=bool), (groups, np.arange(len(groups)))),
                     shape=(ngroups, M.shape[0]))
    return canonical(G @ M)


def prefix(M, lines, length):
    """Running unions along the last of (lines, length) rows: row (i, j) of the result is the union
    of rows (i, 0..j) of M (the pattern of a cumulative sum), by doubling (log2(length) unions)."""
    pos = positions((lines, length))
    out = M
    step = 1
    while step < length:
        shifted = np.zeros_like(pos)
        shifted[:, step:] = pos[:, :-step]
        out = union([out, take(out, shifted)])
        step *= 2
    return out

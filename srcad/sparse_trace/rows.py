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


def identity(n):
    """The seed: input entry k depends on input entry k."""
    return make(np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64), n, n)


def empty(nrows, n):
    """nrows entries that depend on nothing."""
    return make(np.zeros(nrows + 1, np.int64), np.zeros(0, np.int64), nrows, n)


def make(indptr, indices, nrows, n):
    return sp.csr_array((np.ones(len(indices), dtype=bool), indices, indptr), shape=(nrows, n))


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
    if len(pos) and pos.min() < 0 or len(pos) and pos.max() > nrows:
        raise IndexError("a dependency row outside the traced value")
    counts = np.diff(M.indptr).astype(np.int64)
    counts = np.concatenate([[0], counts])          # position 0: the empty row
    starts = np.concatenate([[0], M.indptr[:-1].astype(np.int64)])
    c = counts[pos]
    indptr = np.zeros(len(pos) + 1, np.int64)
    np.cumsum(c, out=indptr[1:])
    total = int(indptr[-1])
    if total == 0:
        return empty(len(pos), M.shape[1])
    src = np.arange(total, dtype=np.int64) + np.repeat(starts[pos] - indptr[:-1], c)
    return make(indptr, M.indices[src].astype(np.int64, copy=False), len(pos), M.shape[1])


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

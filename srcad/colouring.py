"""Column colouring of a sparse Jacobian's pattern (srcad/sparsity.py): columns that share a row
get different colours, so one forward sweep per colour recovers every entry. The greedy colouring in
column order, computed in vectorised rounds (see color_columns)."""
import numpy as np
import scipy.sparse as sp


def color_columns(rows, cols, m, n):
    """Greedy colouring in column order: columns that share a row get different colours (each
    column the smallest colour none of its earlier neighbours has). The neighbours come from the
    pattern's column-intersection graph P^T P (one sparse product). Returns colours (n,).

    A column's colour depends only on its earlier neighbours' colours, so every column whose
    earlier neighbours are all coloured can be coloured at once (the same colours as one column
    after another): rounds of such columns, vectorised, while they are many, then the rest one by
    one in column order."""
    pattern = _pattern_matrix(np.asarray(rows, np.int64), np.asarray(cols, np.int64), m, n)
    pattern = _drop_repeated_rows(pattern)              # (they add no edge)
    graph = pattern.T.tocsr() @ pattern                  # symmetric: j, k share a row
    row_of = np.repeat(np.arange(n, dtype=graph.indices.dtype), np.diff(graph.indptr))
    earlier = _part_of(graph, row_of, graph.indices < row_of, n)
    later = _part_of(graph, row_of, graph.indices > row_of, n)
    color = np.full(n, -1, dtype=np.int64)
    waiting = np.diff(earlier.indptr).astype(np.int64)     # earlier neighbours not coloured yet
    ready = np.flatnonzero(waiting == 0)
    while ready.size >= _ROUND_MIN:
        color[ready] = _smallest_free(earlier, ready, color)
        waiting[ready] = -1
        reached = _neighbours(later, ready)
        if reached.size:
            waiting -= np.bincount(reached, minlength=n)
            ready = reached[waiting[reached] == 0]
            if ready.size > n // 8:                     # (a mask is cheaper than a sort then)
                mark = np.zeros(n, bool)
                mark[ready] = True
                ready = np.flatnonzero(mark)
            else:
                ready = _distinct(ready)
        else:
            ready = reached
    rest = np.flatnonzero(color < 0)
    if rest.size:
        ptr, idx, col = earlier.indptr.tolist(), earlier.indices.tolist(), color.tolist()
        for k in rest.tolist():
            taken = {col[j] for j in idx[ptr[k]:ptr[k + 1]]}
            c = 0
            while c in taken:
                c += 1
            col[k] = c
        color = np.asarray(col, dtype=np.int64)
    return color


def _pattern_matrix(rows, cols, m, n):
    """The pattern as a boolean CSR (m, n); built directly from the (row, column) pairs when they
    come sorted and distinct, as detection gives them."""
    key = rows * n + cols
    if len(key) and not (key[1:] > key[:-1]).all():
        P = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(m, n))
        P.sum_duplicates()
        return P
    dt = np.int32 if max(len(cols), n) < 2**31 - 1 else np.int64
    indptr = np.zeros(m + 1, dt)
    np.cumsum(np.bincount(rows, minlength=m), out=indptr[1:])
    return sp.csr_array((np.ones(len(cols), dtype=bool), cols.astype(dt), indptr), shape=(m, n))


def _drop_repeated_rows(P):
    """P without the rows that repeat the row before them (a vector output's components often
    read the same inputs), found in one pass over the stored entries."""
    lens = np.diff(P.indptr).astype(np.int64)
    if P.shape[0] < 2 or not P.nnz:
        return P
    row_of = np.repeat(np.arange(P.shape[0], dtype=np.int64), lens)
    same_len = np.concatenate([[False], lens[1:] == lens[:-1]]) & (lens > 0)
    cand = same_len[row_of]
    at = np.flatnonzero(cand)
    differs = np.zeros(P.shape[0], bool)
    differs[row_of[at][P.indices[at] != P.indices[at - lens[row_of[at]]]]] = True
    repeated = same_len & ~differs
    return P[np.flatnonzero(~repeated)] if repeated.any() else P


def _part_of(graph, row_of, keep, n):
    """The entries `keep` of a CSR graph, as a CSR graph (row order is kept: no sort)."""
    indptr = np.zeros(n + 1, graph.indptr.dtype)
    np.cumsum(np.bincount(row_of[keep], minlength=n), out=indptr[1:])
    return sp.csr_array((np.ones(int(indptr[-1]), bool), graph.indices[keep], indptr), shape=(n, n))


_ROUND_MIN = 32     # below this many columns ready at once, colour the rest one by one
_TABLE_MAX = 1 << 24     # entries of a (columns x colours) table of the colours taken, else a sort


def _neighbours(graph, vertices):
    """The column indices of the given rows of a CSR graph, concatenated (with repeats)."""
    return graph[vertices].indices


def _distinct(a):
    """The distinct values of an integer array, sorted (by a sort: np.unique hashes, slower here)."""
    a = np.sort(a)
    if a.size > 1:
        a = a[np.concatenate([[True], a[1:] != a[:-1]])]
    return a


def _smallest_free(earlier, vertices, color):
    """For each vertex, the smallest colour none of its (coloured) earlier neighbours has."""
    sub = earlier[vertices]
    owner = np.repeat(np.arange(len(vertices), dtype=np.int64), np.diff(sub.indptr))
    used = color[sub.indices]
    base = int(used.max(initial=0)) + 2
    if len(vertices) * base <= _TABLE_MAX:              # few colours: a table, its first gap per row
        table = np.zeros((len(vertices), base), bool)
        table[owner, used] = True
        return np.argmin(table, axis=1)
    pairs = _distinct(owner * base + used)              # sorted (vertex, colour), each once
    who, c = pairs // base, pairs % base
    first = np.searchsorted(who, np.arange(len(vertices)))
    rank = np.arange(len(pairs)) - first[who]          # place among that vertex's colours
    free = np.bincount(who, minlength=len(vertices))    # no gap: the count of colours used
    gap = c != rank                                     # the first gap is the smallest free colour
    if gap.any():
        gw, gr = who[gap], rank[gap]
        np.minimum.at(free, gw, gr)
    return free

"""Jacobian sparsity: index sets propagated through the generated tangent code, column colouring,
and the compressed Jacobian with one forward sweep per colour.

Detection runs the same generated forward-mode code with a tangent whose entries are `Deps`
objects (the set of input entries a value depends on) in NumPy object arrays: the tangent code
only adds tangents and scales them by primal values, so `+` becomes a union and scaling keeps
the set. The pattern is structural and, where the code branches, that of the branch taken at
the given point (a superset of the numerically nonzero entries).
"""
import numpy as np
import scipy.sparse as sp


class Deps:
    """The input entries a tangent entry depends on; + is union, scaling keeps the set."""
    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s

    def __add__(self, other):
        if isinstance(other, Deps):
            return Deps(self.s | other.s)
        return self

    __radd__ = __add__
    __sub__ = __add__
    __rsub__ = __add__

    def __mul__(self, other):
        return Deps(self.s | other.s) if isinstance(other, Deps) else self

    __rmul__ = __mul__
    __truediv__ = __mul__
    __rtruediv__ = __mul__
    __pow__ = __mul__

    def __neg__(self):
        return self

    __pos__ = __neg__

    def __float__(self):
        raise TypeError("a sparsity tracer was converted to a float; this function's Jacobian "
                        "sparsity cannot be detected by index-set propagation")


def detect(jvp_call, x):
    """(rows, cols) of the Jacobian's structural nonzeros, from one sweep of the tangent code."""
    n = int(np.size(x))
    seed = np.empty(np.shape(x), dtype=object)
    flat = seed.reshape(-1)
    for k in range(n):
        flat[k] = Deps(frozenset((k,)))
    y, y_dot = jvp_call(seed)
    out = np.asarray(y_dot, dtype=object).reshape(-1) if np.ndim(y_dot) else np.array([y_dot], dtype=object)
    m = int(np.size(y))
    if out.size != m:
        out = np.broadcast_to(out, (m,)) if out.size == 1 else out
    rows, cols = [], []
    for i, d in enumerate(out):
        if isinstance(d, Deps):
            for k in sorted(d.s):
                rows.append(i)
                cols.append(k)
    return y, np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), m, n


def color_columns(rows, cols, m, n):
    """Greedy colouring: columns that share a row get different colours. Returns colours (n,)."""
    pattern = sp.csr_array((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(m, n))
    by_col = pattern.tocsc()
    color = np.full(n, -1, dtype=np.int64)
    for k in range(n):
        rows_k = by_col.indices[by_col.indptr[k]:by_col.indptr[k + 1]]
        taken = set()
        for r in rows_k:
            neigh = pattern.indices[pattern.indptr[r]:pattern.indptr[r + 1]]
            taken.update(color[neigh][color[neigh] >= 0].tolist())
        c = 0
        while c in taken:
            c += 1
        color[k] = c
    return color


def sparse_jacobian(jvp_call, x):
    """The Jacobian as a csr_array (y.size, x.size): pattern, colouring, one sweep per colour."""
    y, rows, cols, m, n = detect(jvp_call, x)
    color = color_columns(rows, cols, m, n) if n else np.zeros(0, dtype=np.int64)
    ncolors = int(color.max()) + 1 if n else 0
    values = np.zeros(len(rows), dtype=np.float64)
    col_color = color[cols]
    shape = np.shape(x)
    for c in range(ncolors):
        v = (color == c).astype(np.float64).reshape(shape)
        _, y_dot = jvp_call(v)
        compressed = np.broadcast_to(np.asarray(y_dot, dtype=np.float64), np.shape(y)).reshape(-1)
        hit = col_color == c
        values[hit] = compressed[rows[hit]]
    J = sp.csr_array((values, (rows, cols)), shape=(m, n))
    J.sum_duplicates()
    return J, ncolors

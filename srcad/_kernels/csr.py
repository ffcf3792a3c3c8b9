"""Products with a CSR matrix A: A @ X (its long rows through X in column panels when X outgrows
the caches), the transposed index (A's CSC view), A.T @ G through it, and sddmm (the gradient of
A @ X with respect to A's stored entries)."""
import numpy as np

from .. import _kernels as K  # the package: its builds (K._scatter, K._spmm, K._reduce) and tunables are
#                                read at each call, so SRCAD_KERNELS' choice or a test's swap reaches every wrapper
from . import _check, _pool, _run, _threads
from .args import _floats, _ints, _pattern, _rows


def csr_matmul(indptr, indices, data, X, n_rows, plan=None):
    """Y = A @ X for A in CSR (n_rows rows) and dense X (n_cols,) or (n_cols, k). `plan`, from
    csr_panel_plan for this pattern, takes A's long rows through X in column panels (the same
    bits, fewer reads of X from memory)."""
    indptr, indices = _pattern(indptr, indices, n_rows)
    data, X = _floats(data, X)
    if data.shape != indices.shape:
        raise ValueError(f"data {data.shape} and indices {indices.shape} differ in length")
    x, k = _rows(X, X.shape[0] if X.ndim else -1, "X")
    Y = _pool.empty((n_rows,) + X.shape[1:], X.dtype)
    if plan is not None and k > 1 and len(plan.heavy) == n_rows:
        nt = _threads(len(data) * k)
        bounds = plan.bounds(nt)
        _check(K._spmm.csr_matmul_panels(indptr, indices, data, x, Y.reshape(-1), X.shape[0], k,
                                         plan.heavy, plan.rows, plan.split, bounds, nt), "csr_matmul_panels")
        return Y
    _run(K._spmm.csr_matmul, indptr, indices, data, x, Y.reshape(-1), X.shape[0], k, work=len(data) * k)
    return Y


class PanelPlan:
    """Which rows of a CSR pattern csr_matmul takes in column panels, and where each one's
    entries of each panel start: heavy (a mark per row), rows (the marked rows), split (for the
    r-th, split[r * (P + 1) + t] is the position of its first entry in panel t, split[r * (P + 1)
    + P] its end), cum (the cumulated lengths of those rows, to share them among threads)."""
    __slots__ = ("heavy", "rows", "split", "cum", "_bounds")

    def __init__(self, heavy, rows, split, cum):
        self.heavy, self.rows, self.split, self.cum = heavy, rows, split, cum
        self._bounds = {}

    def bounds(self, n_tasks):
        """Task c takes rows bounds[c]:bounds[c + 1]: about equal numbers of entries."""
        b = self._bounds.get(n_tasks)
        if b is None:
            total = self.cum[-1] if len(self.cum) else 0
            b = np.searchsorted(self.cum, [total * c // n_tasks for c in range(1, n_tasks)], side="right")
            b = np.concatenate(([0], b, [len(self.rows)])).astype(np.int64)
            self._bounds[n_tasks] = b
        return b


def csr_panel_plan(indptr, indices, n_cols, row_bytes, min_len=None, panel_bytes=None,
                   min_x=None):
    """A PanelPlan for A @ X with X of n_cols rows of row_bytes each, or None when panels would
    not pay: X smaller than min_x bytes, no row of min_len entries or more, one panel, or fewer
    than 4 entries per (row, panel) on average (defaults: PANEL_MIN_ROW, PANEL_BYTES,
    PANEL_MIN_X). Any plan gives the bits of the plain kernels; it only changes the order in
    which rows are visited. Built once per pattern (srcad/runtime/sparse/products.py caches it)."""
    min_len = K.PANEL_MIN_ROW if min_len is None else min_len
    panel_bytes = K.PANEL_BYTES if panel_bytes is None else panel_bytes
    min_x = K.PANEL_MIN_X if min_x is None else min_x
    indptr, indices = _pattern(indptr, indices)
    if n_cols * row_bytes < min_x:
        return None
    lens = np.diff(indptr).astype(np.int64)
    rows = np.flatnonzero(lens >= min_len).astype(np.int64)
    per_panel = max(1, panel_bytes // row_bytes)
    n_panels = -(-n_cols // per_panel)
    lens_h = lens[rows]
    total = int(lens_h.sum())
    if n_panels < 2 or total < 4 * len(rows) * n_panels or len(rows) == 0:
        return None
    starts = indptr[rows].astype(np.int64)
    first = np.cumsum(lens_h) - lens_h
    pos = np.arange(total, dtype=np.int64) + np.repeat(starts - first, lens_h)
    panel = np.clip(indices[pos] // per_panel, 0, n_panels - 1)
    counts = np.bincount(np.repeat(np.arange(len(rows)) * n_panels, lens_h) + panel,
                         minlength=len(rows) * n_panels).reshape(len(rows), n_panels)
    split = np.empty((len(rows), n_panels + 1), dtype=np.int64)
    split[:, 0] = starts
    np.cumsum(counts, axis=1, out=split[:, 1:])
    split[:, 1:] += starts[:, None]
    heavy = np.zeros(len(indptr) - 1, dtype=np.uint8)
    heavy[rows] = 1
    return PanelPlan(heavy, rows, split.reshape(-1), np.cumsum(lens_h))


def csr_transpose_index(indptr, indices, n_cols):
    """(t_indptr, t_rows, t_pos): the CSC view of a CSR pattern, entries of a column in row
    order, t_pos their positions in data."""
    indptr, indices = _pattern(indptr, indices)
    t_indptr = np.zeros(n_cols + 1, dtype=indptr.dtype)
    t_rows = np.empty(len(indices), dtype=indptr.dtype)
    t_pos = np.empty(len(indices), dtype=indptr.dtype)
    _run(K._spmm.csr_transpose_index, indptr, indices, t_indptr, t_rows, t_pos)
    if t_indptr[-1] != len(indices):  # entries past indptr[-1] are not part of A
        t_rows, t_pos = t_rows[:t_indptr[-1]].copy(), t_pos[:t_indptr[-1]].copy()
    return t_indptr, t_rows, t_pos


def csr_matmul_t(t_indptr, t_rows, t_pos, data, G, n_cols):
    """Z = A.T @ G through A's transposed index, G (n_rows,) or (n_rows, k)."""
    t_indptr, t_rows, t_pos = _ints(t_indptr, t_rows, t_pos)
    if t_rows.shape != t_pos.shape:
        raise ValueError("t_rows and t_pos differ in length")
    if len(t_indptr) != n_cols + 1:
        raise ValueError(f"t_indptr must have n_cols + 1 = {n_cols + 1} entries")
    data, G = _floats(data, G)
    g, k = _rows(G, G.shape[0] if G.ndim else -1, "G")
    Z = _pool.empty((n_cols,) + G.shape[1:], G.dtype)
    _run(K._spmm.csr_matmul_t, t_indptr, t_rows, t_pos, data, g, Z.reshape(-1), G.shape[0], k,
         work=len(t_rows) * k)
    return Z


def sddmm(indptr, indices, G, X, plan=None):
    """vals[p] = G[i] . X[j] for every stored entry p = (i, j): d(A @ X)/d(A.data) applied to G.
    `plan`, csr_panel_plan's for this pattern and X, takes the long rows through X in panels."""
    indptr, indices = _pattern(indptr, indices)
    G, X = _floats(G, X)
    if G.ndim != X.ndim or G.shape[1:] != X.shape[1:]:
        raise ValueError(f"G {G.shape} and X {X.shape} need the same number of columns")
    g, k = _rows(G, len(indptr) - 1, "G")
    x, _ = _rows(X, X.shape[0] if X.ndim else -1, "X")
    # the kernel writes the entries of the rows, indptr[0]:indptr[-1]: the whole array when those
    # run from 0 to its end
    covers = len(indices) == 0 or (indptr[0] == 0 and indptr[-1] == len(indices))
    vals = np.empty(len(indices), dtype=G.dtype) if covers else np.zeros(len(indices), dtype=G.dtype)
    if plan is not None and len(plan.heavy) == len(indptr) - 1:
        nt = _threads(len(indices) * k)
        _check(K._spmm.sddmm_panels(indptr, indices, g, x, vals, X.shape[0], k, plan.heavy, plan.rows,
                                    plan.split, plan.bounds(nt), nt), "sddmm_panels")
        return vals
    _run(K._spmm.sddmm, indptr, indices, g, x, vals, X.shape[0], k, work=len(indices) * k)
    return vals


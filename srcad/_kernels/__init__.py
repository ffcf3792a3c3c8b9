"""srcad's compiled kernels behind plain-numpy functions.

Each function takes numpy arrays (or anything np.asarray accepts), converts them to
C-contiguous arrays of one float dtype (float32 or float64) and one index dtype (int32 or
int64), and calls a Cython kernel with the thread count set here. No kernel uses atomics: every
output element is summed by one thread in a fixed order, so results are bit-identical for any
thread count. Integer indices may be negative and wrap as in numpy.
"""
import math
import os

from . import _malloc

# srcad changes nothing process-wide unless asked to (srcad.tune_memory(), or SRCAD_TUNE_MEMORY=1
# in the environment, which also does what only the environment can: idle OpenMP threads sleep
# instead of spinning, OMP_WAIT_POLICY=PASSIVE, read when the OpenMP runtime loads just below).
if _malloc.requested():
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _malloc.tune()

import numpy as np  # noqa: E402



def _compiled(name):
    """One of the Cython extension modules; a clear error where they were never built."""
    import importlib
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise ImportError(
            f"srcad's compiled kernels ({name}) are missing from {os.path.dirname(__file__)}: this is srcad's "
            f"source tree, not a built srcad. Install it (pip install .), or build the kernels in place "
            f"(python setup.py build_ext --inplace), or run Python from another directory to use an "
            f"installed srcad.") from None


def _optional(name):
    """A compiled module that a build older than it lacks (None then: rebuild to get it)."""
    import importlib.util
    return _compiled(name) if importlib.util.find_spec(f"{__name__}.{name}") is not None else None


# what the CPU runs and the OpenMP limit (_cpu.pyx); None in a build older than it
_cpu = _optional("_cpu")


def _pick_isa():
    """The build of the kernels this process runs: "avx2" where the CPU and OS run AVX2 and srcad
    was built with that variant (x86-64, the default build), else "baseline". SRCAD_KERNELS=
    baseline or avx2 asks for one (avx2 on a machine without it is an error, not a crash)."""
    want = os.environ.get("SRCAD_KERNELS", "auto").strip().lower() or "auto"
    if want not in ("auto", "baseline", "avx2"):
        raise ValueError(f"SRCAD_KERNELS={want!r}: expected auto, baseline or avx2")
    if want == "baseline":
        return "baseline"
    import importlib.util
    has = _cpu is not None and _cpu.has_avx2()
    built = importlib.util.find_spec(f"{__name__}._spmm_avx2") is not None
    if want == "avx2" and not (has and built):
        raise ImportError(f"SRCAD_KERNELS=avx2, but {'this CPU or OS does not run AVX2' if not has else 'srcad was built without its AVX2 kernels (SRCAD_NATIVE=1 or SRCAD_KERNEL_VARIANTS=0, or not x86-64)'}; "
                          f"unset SRCAD_KERNELS to let srcad choose")
    return "avx2" if has and built else "baseline"


# isa: which build of the kernels runs (the results have the same bits in each).
isa = _pick_isa()
_suffix = "" if isa == "baseline" else f"_{isa}"
_reduce, _scatter, _spmm = (_compiled(f"_reduce{_suffix}"), _compiled(f"_scatter{_suffix}"),
                            _compiled(f"_spmm{_suffix}"))
from . import _pool  # noqa: E402
from ._pool import unshared  # noqa: E402,F401  (is an array free of other arrays' memory)

__all__ = [
    "set_num_threads", "get_num_threads",
    "gather_rows", "gather_matvec", "scatter_add_rows", "scatter_add_rows_into", "scatter_add_outer_into", "add_into",
    "outer",
    "csr_matmul", "csr_panel_plan", "csr_transpose_index", "csr_matmul_t", "sddmm",
    "csr_row_reduce", "csr_row_reduce_vjp", "csr_col_reduce", "csr_col_reduce_vjp",
    "segment_reduce", "segment_reduce_vjp",
]


def _default_num_threads():
    """SRCAD_NUM_THREADS, else OMP_NUM_THREADS (its first level), else the CPUs this process may
    run on: the OpenMP convention."""
    for name in ("SRCAD_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(name, "").split(",")[0].strip()
        if raw:
            try:
                return max(1, int(raw))
            except ValueError:
                raise ValueError(f"{name}={os.environ[name]!r}: expected a positive integer") from None
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_num_threads = _default_num_threads()
_explicit = False           # set by set_num_threads
# The OpenMP runtime's thread limit when srcad loaded: a later change is omp_set_num_threads, which
# threadpoolctl's threadpool_limits calls on the OpenMP library srcad's kernels load (libgomp).
_omp_at_import = _cpu.omp_max_threads() if _cpu is not None else None
# fork safety: GNU OpenMP keeps its worker threads in a pool that a child made by fork() does not
# have (only the forking thread survives); a parallel region in the child waits for them forever.
# After a kernel ran in parallel, a forked child runs the kernels on one thread (no parallel region).
_fork = {"parallel_ran": False, "single": False}


def _after_fork_in_child():
    global _num_threads, _explicit
    if _fork["parallel_ran"]:
        _fork["single"] = True
        _num_threads, _explicit = 1, True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def set_num_threads(n):
    """Set the number of threads the kernels use (an int >= 1); None goes back to the default. In a
    process forked after srcad ran a kernel in parallel the kernels stay on one thread (OpenMP's
    threads did not survive the fork), with a warning when more are asked for."""
    global _num_threads, _explicit
    if _fork["single"]:
        if n is not None and n > 1:
            import warnings
            warnings.warn(f"srcad.set_num_threads({n}) in a process forked after srcad's kernels ran in parallel: "
                          f"the kernels stay on one thread here (the OpenMP runtime's threads did not survive the "
                          f"fork, and a parallel region would wait for them forever). Start worker processes "
                          f"with the 'spawn' or 'forkserver' method to use more.", RuntimeWarning, stacklevel=2)
        return
    if n is None:
        _num_threads, _explicit = _default_num_threads(), False
        return
    if int(n) != n or n < 1:
        raise ValueError(f"number of threads must be an integer >= 1, got {n!r}")
    _num_threads, _explicit = int(n), True


def get_num_threads():
    """The number of threads the kernels use (default: env SRCAD_NUM_THREADS, else OMP_NUM_THREADS,
    else the CPUs this process may use; at most the OpenMP limit threadpoolctl's threadpool_limits
    sets, unless set_num_threads chose a number)."""
    if not _explicit and _cpu is not None:
        omp = _cpu.omp_max_threads()
        if omp != _omp_at_import:
            return max(1, min(_num_threads, omp))
    return _num_threads


# ----------------------------------------------------------------------------- dispatch

_FAILURES = {1: (IndexError, "index out of range"),
             2: (ValueError, "row/column pointer is not monotone within the stored entries")}


# Below this many multiply-adds (or entries read) a kernel runs on the calling thread alone:
# waking a second thread costs microseconds on an idle machine and up to a scheduler time slice
# on a busy one, more than such a kernel's whole work. (The bits are the same either way.)
SERIAL_WORK = 1 << 16


def _threads(work=None):
    """The thread count for a kernel call of `work` units (None: the configured count)."""
    n = 1 if work is not None and work < SERIAL_WORK else get_num_threads()
    if n > 1:
        _fork["parallel_ran"] = True
    return n


def _run(kernel, *args, work=None, index=None):
    """Call a kernel (specialised by numpy on the arrays' dtypes) with the thread count (one
    thread below SERIAL_WORK units of work); raise on a nonzero status. `index`, (indices, n,
    what): an index out of range is the caller's input, a srcad.InputError naming it (`what`)."""
    status = kernel(*args, _threads(work))
    if status == 1 and index is not None:
        raise index_error(*index)
    _check(status, kernel.__name__)


from ..errors import InputError as _InputError  # noqa: E402


class IndexInputError(_InputError, IndexError):
    """An index out of range in an argument: a srcad.InputError naming it, and an IndexError (what
    the kernels raised before it was named)."""


def index_error(idx, n, what, unit="rows"):
    """srcad.InputError: `what` (e.g. "srcad.sparse.segment_sum: segment_ids") holds an index
    outside -n..n-1 (a negative one counts from the end, as in numpy). The error carries
    `srcad_index` = (first bad index, n) for a caller that names the argument better."""
    idx = np.asarray(idx).reshape(-1)
    bad = idx[(idx < -n) | (idx >= n)]
    shown = int(bad[0]) if len(bad) else "an index"
    err = IndexInputError(f"{what} holds {shown}, outside -{n}..{n - 1} for {n} {unit} (a negative index counts "
                     f"from the end, as in numpy); {len(bad)} of its {len(idx)} entries are out of range")
    err.srcad_index = (shown, n, len(bad), len(idx))
    return err


def _check(status, name):
    if status:
        exc, what = _FAILURES[status]
        raise exc(f"srcad._kernels.{name}: {what}")


def _floats(*arrays):
    """The arrays, C-contiguous, in their common float dtype (float32 or float64)."""
    arrays = [np.asarray(a) for a in arrays]
    dtype = np.result_type(*arrays, np.float32)
    if dtype not in (np.float32, np.float64):
        if dtype.kind != "f":
            from ..errors import InputError
            raise InputError(f"srcad's compiled kernels take arrays of real numbers, not {dtype}; "
                             f"convert the operand with np.asarray(x, dtype=float) (a complex "
                             f"value: pass its real and imaginary parts separately)")
        dtype = np.dtype(np.float64)
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def _ints(*arrays):
    """The arrays, C-contiguous, in one index dtype: int32 if every one fits it, else int64."""
    arrays = [np.asarray(a) for a in arrays]
    for a in arrays:
        if a.dtype.kind not in "iu":
            from ..errors import InputError
            raise InputError(f"srcad's compiled kernels take integer indices, not {a.dtype}; "
                             f"convert them with np.asarray(idx, dtype=np.int64)")
    dtype = np.int32 if np.result_type(*arrays, np.int32) == np.int32 else np.int64
    return [np.ascontiguousarray(a, dtype=dtype) for a in arrays]


def _rows(a, n, what):
    """a as a flat buffer of n rows of equal width, and that width (1 for a vector)."""
    if a.ndim not in (1, 2) or a.shape[0] != n:
        raise ValueError(f"{what} must have shape ({n},) or ({n}, k), got {a.shape}")
    return a.reshape(-1), (a.shape[1] if a.ndim == 2 else 1)


def _op_is_max(op, allowed=("max", "min")):
    if op not in allowed:
        raise ValueError(f"op must be one of {allowed}, got {op!r}")
    return op == "max"


def _pattern(indptr, indices, n_rows=None):
    """indptr and indices in one index dtype, checked for shape."""
    indptr, indices = _ints(indptr, indices)
    if indptr.ndim != 1 or indices.ndim != 1 or len(indptr) < 1:
        raise ValueError("indptr and indices must be 1-D, indptr non-empty")
    if n_rows is not None and len(indptr) != n_rows + 1:
        raise ValueError(f"indptr must have n_rows + 1 = {n_rows + 1} entries, has {len(indptr)}")
    return indptr, indices


# ----------------------------------------------------------------------------- rows

def gather_rows(E, idx):
    """E[idx] for a dense E (n, ...) and integer idx, copying rows in parallel."""
    E = np.asarray(E)
    (idx,) = _ints(idx)
    if E.ndim == 0:
        raise ValueError("gather_rows needs an array with at least one axis")
    if E.dtype.hasobject:
        return E[idx]
    E = np.ascontiguousarray(E)
    out = _pool.empty(idx.shape + E.shape[1:], E.dtype)
    width = E.itemsize * math.prod(E.shape[1:])
    _run(_scatter.gather_rows, E.reshape(-1).view(np.uint8), idx.reshape(-1),
         out.reshape(-1).view(np.uint8), E.shape[0], width)
    return out


def gather_matvec(E, idx, w):
    """E[idx] @ w for a 2-D float E and a vector w, without forming E[idx]; each dot product is
    summed in double (float32 inputs give the float32 rounding of that sum)."""
    E, w = _floats(E, w)
    (idx,) = _ints(idx)
    if E.ndim != 2 or w.ndim != 1 or w.shape[0] != E.shape[1]:
        raise ValueError(f"gather_matvec takes a 2-D E and a vector of its row length, got "
                         f"{E.shape} and {w.shape}")
    out = _pool.empty(idx.shape, E.dtype)
    _run(_scatter.gather_matvec, E.reshape(-1), idx.reshape(-1), w, out.reshape(-1), E.shape[0])
    return out


def _scatter_into(out, idx, values, what="the row indices"):
    """out[idx[k]] += values[k] in place, out being C-contiguous; returns out."""
    if values.shape[:idx.ndim] != idx.shape or values.shape[idx.ndim:] != out.shape[1:]:
        raise ValueError(f"values of shape {values.shape} do not match indices of shape "
                         f"{idx.shape} into rows of shape {out.shape[1:]}")
    (values,) = _floats(values.astype(out.dtype, copy=False))
    _run(_scatter.scatter_add_owned, values.reshape(-1), idx.reshape(-1), out.reshape(-1),
         out.shape[0], math.prod(out.shape[1:]), index=(idx, out.shape[0], what))
    return out


def _into_bounds(acc, idx, what):
    """Raise (before acc is touched) unless every index fits acc's rows: an update in place is
    all or nothing."""
    n = np.shape(acc)[0] if np.ndim(acc) else 0
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise index_error(idx, n, what)


def scatter_add_outer_into(acc, idx, coef, vec, what="the row indices"):
    """acc[idx[k]] += coef[k] * vec in place, in the order of k, without forming the outer
    product (its bits: each product rounded, then added); returns acc."""
    (idx,) = _ints(idx)
    _into_bounds(acc, idx, what)
    if not (isinstance(acc, np.ndarray) and acc.ndim == 2 and acc.flags.c_contiguous
            and acc.flags.writeable and acc.dtype in (np.float32, np.float64)
            and np.result_type(coef, vec) == acc.dtype):
        return scatter_add_rows_into(acc, idx, outer(coef, vec), what)
    coef, vec = _floats(coef, vec)
    if coef.shape != idx.shape or vec.shape != acc.shape[1:]:
        raise ValueError(f"{coef.shape} coefficients, a {vec.shape} vector and {idx.shape} indices "
                         f"do not scatter into rows of shape {acc.shape[1:]}")
    _run(_scatter.scatter_add_outer_owned, coef, vec, idx.reshape(-1), acc.reshape(-1), acc.shape[0],
         index=(idx, acc.shape[0], what))
    return acc


def outer(a, b):
    """np.multiply.outer(a, b) for 1-D float arrays, rows written in parallel (the same bits)."""
    a, b = _floats(a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("outer takes two 1-D arrays")
    out = _pool.empty((len(a), len(b)), a.dtype)
    _run(_scatter.outer, a, b, out.reshape(-1))
    return out


def scatter_add_rows(values, idx, n_rows, what="the row indices"):
    """out (n_rows, ...) with out[idx[k]] += values[k], summed in the order of k."""
    (values,), (idx,) = _floats(values), _ints(idx)
    out = np.zeros((n_rows,) + values.shape[idx.ndim:], dtype=values.dtype)
    return _scatter_into(out, idx, values, what)


def scatter_add_rows_into(acc, idx, values, what="the row indices"):
    """acc[idx[k]] += values[k] in place, in the order of k; returns acc."""
    (idx,) = _ints(idx)
    _into_bounds(acc, idx, what)
    if not (isinstance(acc, np.ndarray) and acc.ndim >= 1 and acc.flags.c_contiguous
            and acc.flags.writeable and acc.dtype in (np.float32, np.float64)):
        values = np.asarray(values)
        if isinstance(acc, np.ndarray) and acc.dtype.kind == "f":
            values = values.astype(acc.dtype, copy=False)  # as the kernel: cast, then add
        np.add.at(acc, idx, values)  # the same order, sequentially
        return acc
    return _scatter_into(acc, idx, np.asarray(values), what)


def add_into(acc, g):
    """acc += g in place (dense, same shape), in parallel blocks; returns acc."""
    g = np.asarray(g)
    if (isinstance(acc, np.ndarray) and acc.shape == g.shape and acc.flags.c_contiguous
            and acc.flags.writeable and acc.dtype in (np.float32, np.float64)):
        (g,) = _floats(g.astype(acc.dtype, copy=False))
        _run(_scatter.add_into, acc.reshape(-1), g.reshape(-1))
    else:
        acc += g
    return acc


# ----------------------------------------------------------------------------- CSR products

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
        _check(_spmm.csr_matmul_panels(indptr, indices, data, x, Y.reshape(-1), X.shape[0], k,
                                       plan.heavy, plan.rows, plan.split, bounds, nt), "csr_matmul_panels")
        return Y
    _run(_spmm.csr_matmul, indptr, indices, data, x, Y.reshape(-1), X.shape[0], k, work=len(data) * k)
    return Y


# A's long rows go through X in panels of about PANEL_BYTES (a core's L2 cache) when X is at
# least PANEL_MIN_X bytes (a smaller X stays in the caches anyway).
PANEL_BYTES = 1 << 20
PANEL_MIN_X = 8 << 20
PANEL_MIN_ROW = 128


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
    min_len = PANEL_MIN_ROW if min_len is None else min_len
    panel_bytes = PANEL_BYTES if panel_bytes is None else panel_bytes
    min_x = PANEL_MIN_X if min_x is None else min_x
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
    _run(_spmm.csr_transpose_index, indptr, indices, t_indptr, t_rows, t_pos)
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
    _run(_spmm.csr_matmul_t, t_indptr, t_rows, t_pos, data, g, Z.reshape(-1), G.shape[0], k,
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
        _check(_spmm.sddmm_panels(indptr, indices, g, x, vals, X.shape[0], k, plan.heavy, plan.rows,
                                  plan.split, plan.bounds(nt), nt), "sddmm_panels")
        return vals
    _run(_spmm.sddmm, indptr, indices, g, x, vals, X.shape[0], k, work=len(indices) * k)
    return vals


# ----------------------------------------------------------------------------- reductions

def _group_reduce(ptr, pos, data, n, op, locate=False):
    """Max/min of each of n groups of the 1-D data (positions pos[ptr[b]:ptr[b+1]], or
    ptr[b]:ptr[b+1] themselves when pos is None); -inf/+inf for an empty group. With `locate`
    (contiguous groups only), also the position of each group's extreme where exactly one entry
    attains it, else -1, for the groups of two or more entries: (vals, at)."""
    use_pos = pos is not None
    if locate and use_pos:
        raise ValueError("locate needs contiguous groups (pos None)")
    ptr, pos = _ints(ptr, pos if use_pos else np.empty(0, np.int32))
    (data,) = _floats(data)
    if len(ptr) != n + 1 or data.ndim != 1:
        raise ValueError(f"need {n + 1} group pointers and 1-D data")
    vals = np.empty(n, dtype=data.dtype)
    at = np.empty(n if locate else 0, dtype=np.int64)
    _run(_reduce.group_extreme, ptr, pos, use_pos, data, _op_is_max(op), vals, at)
    return (vals, at) if locate else vals


def _group_reduce_vjp(ptr, pos, data, vals, g, at=None):
    """g[b] / (entries of group b tying vals[b]) at those entries, 0 elsewhere; `at`, the
    positions from _group_reduce(..., locate=True), spares the search (contiguous groups)."""
    use_pos = pos is not None
    ptr, pos = _ints(ptr, pos if use_pos else np.empty(0, np.int32))
    data, vals, g = _floats(data, vals, g)
    if not len(ptr) - 1 == len(vals) == len(g):
        raise ValueError("vals and g need one entry per group")
    # when the groups cover every entry (CSR rows, columns through the transposed index, the whole
    # array), the kernel writes each one and gdata needs no zeroing first
    covers = len(ptr) > 0 and ptr[0] == 0 and ptr[-1] == (len(pos) if use_pos else len(data))
    gdata = np.empty(len(data), dtype=data.dtype) if covers else np.zeros(len(data), dtype=data.dtype)
    if at is not None and covers and not use_pos:
        at = np.ascontiguousarray(at, dtype=np.int64)
        _run(_reduce.group_extreme_vjp_at, ptr, data, vals, at, g, gdata)
    else:
        _run(_reduce.group_extreme_vjp, ptr, pos, use_pos, data, vals, g, gdata)
    return gdata


def csr_row_reduce(indptr, data, n_rows, op, locate=False):
    """Max/min of each row's stored entries; an empty row gives -inf/+inf. With `locate`,
    (vals, at): for each row i of two or more entries, at[i] is the position of its extreme when
    one entry attains it, else -1 (a row of one entry needs none: at[i] is left unset)."""
    return _group_reduce(indptr, None, data, n_rows, op, locate)


def csr_row_reduce_vjp(indptr, data, vals, g, at=None):
    """gdata[p] = g[i] / ties[i] where data[p] == vals[i] for p in row i (ties: how many entries
    of row i equal vals[i]), else 0. `at` from csr_row_reduce(..., locate=True) spares the
    search for each row's extreme."""
    return _group_reduce_vjp(indptr, None, data, vals, g, at)


def csr_col_reduce(t_indptr, t_pos, data, n_cols, op):
    """csr_row_reduce over columns, through the transposed index of csr_transpose_index."""
    return _group_reduce(t_indptr, t_pos, data, n_cols, op)


def csr_col_reduce_vjp(t_indptr, t_pos, data, vals, g):
    """csr_row_reduce_vjp over columns, through the transposed index."""
    return _group_reduce_vjp(t_indptr, t_pos, data, vals, g)


def segment_reduce(data, segment_ids, num_segments, op):
    """(out, counts): sum/max/min of the rows of data by segment id, in row order; empty
    segments give 0/-inf/+inf. counts: rows per segment for "sum", else tied rows per element."""
    (data,), (ids,) = _floats(data), _ints(segment_ids)
    if ids.ndim != 1:
        raise ValueError("segment_ids must be 1-D")
    flat, d = _rows(data, len(ids), "data")
    out_shape = (num_segments,) + data.shape[1:]
    if op == "sum":
        out = np.zeros(out_shape, dtype=data.dtype)
        counts = np.zeros(num_segments, dtype=np.int64)
        _run(_scatter.scatter_add, flat, ids, out.reshape(-1), counts, num_segments, d,
             index=(ids, num_segments, f"srcad.sparse.segment_{op}: segment_ids", "segments (num_segments)"))
        return out, counts
    out = np.empty(out_shape, dtype=data.dtype)
    counts = np.empty(out_shape, dtype=np.int64)
    _run(_reduce.segment_extreme, flat, ids, _op_is_max(op), out.reshape(-1),
         counts.reshape(-1), num_segments, d, index=(ids, num_segments, f"srcad.sparse.segment_{op}: segment_ids", "segments (num_segments)"))
    return out, counts


def segment_reduce_vjp(data, segment_ids, out, counts, g, op):
    """Gradient of segment_reduce w.r.t. data: g[ids] for "sum"; for max/min
    g[s] / counts[s] where data equals out[s], else 0."""
    if op == "sum":
        (g,) = _floats(g)
        return gather_rows(g, segment_ids)
    _op_is_max(op)  # validates op
    data, out, g = _floats(data, out, g)
    (ids,) = _ints(segment_ids)
    flat, d = _rows(data, len(ids), "data")
    if out.shape != g.shape or out.shape[1:] != data.shape[1:] or np.shape(counts) != out.shape:
        raise ValueError("out, counts and g need the shape of segment_reduce's output")
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    gdata = np.empty(data.shape, dtype=data.dtype)
    _run(_reduce.segment_extreme_vjp, flat, ids, out.reshape(-1), counts.reshape(-1),
         g.reshape(-1), gdata.reshape(-1), len(out), d)
    return gdata


# ----------------------------------------------------------------------------- fingerprints

def fingerprint(a):
    """A 64-bit fingerprint of a C-contiguous array's bytes (with its dtype and shape mixed in by
    the caller's key): equal content gives equal fingerprints, any change a different one but
    with chance 2**-64. One pass over the bytes."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    raw = a.reshape(-1).view(np.uint8)
    if raw.shape[0] % 4:
        raw = np.concatenate([raw, np.zeros(4 - raw.shape[0] % 4, np.uint8)])
    # one thread: a core reads at memory speed here (about 16 GB/s), and waking a second thread
    # costs more than the pass on a busy machine
    return _reduce.fingerprint(raw.view(np.uint32), 1)

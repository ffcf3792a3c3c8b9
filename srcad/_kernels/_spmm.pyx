# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""CSR products: A @ X by rows, A.T @ G by columns of a transposed index, and the sampled
dense-dense product that is their gradient with respect to A's stored values.

Dense operands are flat C-contiguous buffers with k values per row (k = 1 for vectors).
Outputs come from the caller; a kernel writes every output entry. Each kernel returns a
status: 0 ok, 1 a column/row index out of range, 2 an invalid row pointer.
"""
import numpy as np
from cython.parallel cimport parallel, prange
from libc.stdint cimport int64_t

from ._types cimport real_t, index_t
from ._prefetch cimport SRCAD_PREFETCH, PREFETCH_AHEAD, prefetch_bytes


cdef inline void _prefetch_row(const real_t* row, Py_ssize_t k) noexcept nogil:
    prefetch_bytes(row, k * <Py_ssize_t>sizeof(real_t))


cdef inline int _span(const index_t* ptr, Py_ssize_t i, Py_ssize_t nnz,
                      Py_ssize_t* lo, Py_ssize_t* hi) noexcept nogil:
    """Row i's range of positions, checked against nnz; 2 when the row pointer is invalid."""
    lo[0] = ptr[i]
    hi[0] = ptr[i + 1]
    if lo[0] < 0 or hi[0] < lo[0] or hi[0] > nnz:
        return 2
    return 0


def csr_transpose_index(const index_t[::1] indptr, const index_t[::1] indices,
                        index_t[::1] t_indptr, index_t[::1] t_rows, index_t[::1] t_pos,
                        int nt):
    """Column-major index of a CSR pattern (a stable counting sort by column); t_indptr
    arrives zeroed with n_cols + 1 entries. Sequential: it is built once per pattern."""
    cdef int err
    nxt = np.empty(t_indptr.shape[0], dtype=np.int64)
    cdef int64_t[::1] nx = nxt
    with nogil:
        err = _transpose(&indptr[0], indptr.shape[0] - 1, &indices[0], indices.shape[0],
                         &t_indptr[0], t_indptr.shape[0] - 1, &t_rows[0], &t_pos[0], &nx[0])
    return err


cdef inline int _transpose(const index_t* indptr, Py_ssize_t n_rows, const index_t* indices,
                           Py_ssize_t nnz, index_t* t_indptr, Py_ssize_t n_cols,
                           index_t* t_rows, index_t* t_pos, int64_t* nxt) noexcept nogil:
    cdef Py_ssize_t i, p, j, lo, hi
    for i in range(n_rows):
        if _span(indptr, i, nnz, &lo, &hi):
            return 2
        for p in range(lo, hi):
            j = indices[p]
            if j < 0 or j >= n_cols:
                return 1
            t_indptr[j + 1] += 1
    for j in range(n_cols):
        t_indptr[j + 1] += t_indptr[j]
        nxt[j] = t_indptr[j]
    for i in range(n_rows):
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            t_rows[nxt[j]] = i
            t_pos[nxt[j]] = p
            nxt[j] += 1
    return 0


def csr_matmul(const index_t[::1] indptr, const index_t[::1] indices, const real_t[::1] data,
               const real_t[::1] X, real_t[::1] Y, Py_ssize_t n_cols, Py_ssize_t k, int nt):
    """Y (n_rows, k) = A @ X (n_cols, k), one row of A per task; every row of Y is written."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, i
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* ip = &indptr[0]
    cdef const index_t* ix = &indices[0]
    cdef const real_t* a = &data[0]
    cdef const real_t* x = &X[0]
    cdef real_t* y = &Y[0]
    if k == 0:
        return 0
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for i in range(n_rows):
                _spmm_row(ip, ix, a, data.shape[0], x, n_cols, y, i, k, errp)
    else:
        for i in prange(n_rows, nogil=True, schedule='dynamic', chunksize=32, num_threads=nt):
            _spmm_row(ip, ix, a, data.shape[0], x, n_cols, y, i, k, errp)
    return err


cdef inline void _spmm_row(const index_t* indptr, const index_t* indices, const real_t* data,
                           Py_ssize_t nnz, const real_t* X, Py_ssize_t n_cols, real_t* Y,
                           Py_ssize_t i, Py_ssize_t k, int* err) noexcept nogil:
    cdef Py_ssize_t lo, hi
    if _span(indptr, i, nnz, &lo, &hi):
        err[0] = 2
        return
    _weighted_rows(indices, <const index_t*>NULL, nnz, data, nnz, X, n_cols, Y + i * k, lo, hi, k, err)


cdef inline void _weighted_rows(const index_t* rows, const index_t* pos, Py_ssize_t n_entries,
                                const real_t* data, Py_ssize_t nnz, const real_t* X,
                                Py_ssize_t n_x, real_t* y, Py_ssize_t lo, Py_ssize_t hi,
                                Py_ssize_t k, int* err) noexcept nogil:
    """y[:k] = sum over q in [lo, hi), in order, of data[p] * X row rows[q], where p = pos[q]
    (or q when pos is NULL); y is written, never read. The common widths get a fixed-size
    accumulator that the compiler keeps in registers."""
    cdef Py_ssize_t q, p, j
    cdef real_t s
    if k == 1:
        s = 0
        for q in range(lo, hi):
            j = rows[q]
            p = q if pos == NULL else pos[q]
            if j < 0 or j >= n_x or p < 0 or p >= nnz:
                err[0] = 1
                return
            if q + PREFETCH_AHEAD < n_entries:
                SRCAD_PREFETCH(X + <Py_ssize_t>rows[q + PREFETCH_AHEAD])
                if pos != NULL:
                    SRCAD_PREFETCH(data + <Py_ssize_t>pos[q + PREFETCH_AHEAD])
            s = s + data[p] * X[j]
        y[0] = s
    elif k == 32:
        _weighted_rows_k(rows, pos, n_entries, data, nnz, X, n_x, y, lo, hi, 32, err)
    elif k == 64:
        _weighted_rows_k(rows, pos, n_entries, data, nnz, X, n_x, y, lo, hi, 64, err)
    elif k == 16:
        _weighted_rows_k(rows, pos, n_entries, data, nnz, X, n_x, y, lo, hi, 16, err)
    elif k == 8:
        _weighted_rows_k(rows, pos, n_entries, data, nnz, X, n_x, y, lo, hi, 8, err)
    else:
        _weighted_rows_k(rows, pos, n_entries, data, nnz, X, n_x, y, lo, hi, k, err)


cdef inline void _weighted_rows_k(const index_t* rows, const index_t* pos, Py_ssize_t n_entries,
                                  const real_t* data, Py_ssize_t nnz, const real_t* X,
                                  Py_ssize_t n_x, real_t* y, Py_ssize_t lo, Py_ssize_t hi,
                                  Py_ssize_t k, int* err, bint resume=False) noexcept nogil:
    """_weighted_rows for k > 1; with `resume`, the sums start from y's values instead of 0
    (a row summed in consecutive ranges of its entries gets the bits of one pass over all)."""
    cdef Py_ssize_t q, p, j, c, c0, w
    cdef real_t v
    cdef real_t acc[64]
    cdef const real_t* x
    for c0 in range(0, k, 64):
        w = min(64, k - c0)
        for c in range(w):
            acc[c] = y[c0 + c] if resume else 0
        for q in range(lo, hi):
            j = rows[q]
            p = q if pos == NULL else pos[q]
            if j < 0 or j >= n_x or p < 0 or p >= nnz:
                err[0] = 1
                return
            if c0 == 0 and q + PREFETCH_AHEAD < n_entries:  # past the row's end too
                _prefetch_row(X + <Py_ssize_t>rows[q + PREFETCH_AHEAD] * k, k)
                if pos != NULL:
                    SRCAD_PREFETCH(data + <Py_ssize_t>pos[q + PREFETCH_AHEAD])
            v = data[p]
            x = X + j * k + c0
            for c in range(w):
                acc[c] = acc[c] + v * x[c]
        for c in range(w):
            y[c0 + c] = acc[c]


cdef inline void _resume_rows(const index_t* indices, const real_t* data, Py_ssize_t nnz,
                              const real_t* X, Py_ssize_t n_cols, real_t* y, Py_ssize_t lo,
                              Py_ssize_t hi, Py_ssize_t k, bint resume, int* err) noexcept nogil:
    """y[:k] (= or +=, in entry order) the weighted X rows of entries lo:hi, widths fixed for
    the compiler as in _weighted_rows; prefetching stays within lo:hi (the panel's X rows)."""
    if k == 32:
        _weighted_rows_k(indices, <const index_t*>NULL, hi, data, nnz, X, n_cols, y, lo, hi, 32, err, resume)
    elif k == 64:
        _weighted_rows_k(indices, <const index_t*>NULL, hi, data, nnz, X, n_cols, y, lo, hi, 64, err, resume)
    elif k == 16:
        _weighted_rows_k(indices, <const index_t*>NULL, hi, data, nnz, X, n_cols, y, lo, hi, 16, err, resume)
    else:
        _weighted_rows_k(indices, <const index_t*>NULL, hi, data, nnz, X, n_cols, y, lo, hi, k, err, resume)


def csr_matmul_panels(const index_t[::1] indptr, const index_t[::1] indices,
                      const real_t[::1] data, const real_t[::1] X, real_t[::1] Y,
                      Py_ssize_t n_cols, Py_ssize_t k, const unsigned char[::1] heavy,
                      const int64_t[::1] rows, const int64_t[::1] split,
                      const int64_t[::1] bounds, int nt):
    """csr_matmul with the long rows of a skewed A taken in column panels, so that a panel of
    X is read from memory once and then served from the cache to every long row that has
    entries in it (a long row's entries, read in random order of their columns, would
    otherwise fetch most X rows from memory once per entry).

    heavy[i] marks the rows listed in `rows` (distinct); for the r-th listed row,
    split[r * (P + 1) + t] .. split[r * (P + 1) + t + 1] are the positions of its entries in
    panel t (the plan of sparse_ops: monotone, from the row's start to its end). Unmarked rows
    go one task each, as in csr_matmul. The listed rows go in len(bounds) - 1 tasks, task c
    taking rows bounds[c]:bounds[c + 1] through every panel in order; a row's sum runs over
    its entries in stored order whatever the panels, so the bits are csr_matmul's. k > 1."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, i, c, r, t, lo, hi, row, base, start, end
    cdef Py_ssize_t n_listed = rows.shape[0], n_tasks = bounds.shape[0] - 1
    cdef Py_ssize_t P = split.shape[0] // n_listed - 1 if n_listed else 0
    cdef Py_ssize_t nnz = data.shape[0]
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* ip = &indptr[0]
    cdef const index_t* ix = &indices[0]
    cdef const real_t* a = &data[0] if nnz else NULL
    cdef const real_t* x = &X[0] if X.shape[0] else NULL
    cdef real_t* y = &Y[0] if Y.shape[0] else NULL
    cdef const unsigned char* hv = &heavy[0] if n_rows else NULL
    cdef const int64_t* rw = &rows[0] if n_listed else NULL
    cdef const int64_t* sp = &split[0] if n_listed else NULL
    cdef const int64_t* bd = &bounds[0]
    if k <= 1:
        raise ValueError("csr_matmul_panels: k < 2 (a matrix-vector product needs no panels)")
    _check_plan(n_rows, heavy, rows, split, bounds, P)
    # one parallel region: the long rows' tasks first, then the other rows one by one, so a
    # thread that finishes its task early takes more of the short rows (no barrier between)
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for c in range(n_tasks):
                for t in range(P):
                    if errp[0]:
                        break
                    for r in range(bd[c], bd[c + 1]):
                        row = rw[r]
                        base = r * (P + 1) + t
                        lo = sp[base]
                        hi = sp[base + 1]
                        start = ip[row]     # (assigned here, not through a pointer: private to the thread)
                        end = ip[row + 1]
                        if (start < 0 or end < start or end > nnz or lo < start or hi < lo or hi > end
                                or (t == 0 and lo != start) or (t == P - 1 and hi != end)):
                            errp[0] = 2
                            break
                        _resume_rows(ix, a, nnz, x, n_cols, y + row * k, lo, hi, k, t > 0, errp)
            for i in range(n_rows):
                if not hv[i]:
                    _spmm_row(ip, ix, a, nnz, x, n_cols, y, i, k, errp)
    else:
        with nogil, parallel(num_threads=nt):
            for c in prange(n_tasks, schedule='dynamic', chunksize=1):
                for t in range(P):
                    if errp[0]:
                        break
                    for r in range(bd[c], bd[c + 1]):
                        row = rw[r]
                        base = r * (P + 1) + t
                        lo = sp[base]
                        hi = sp[base + 1]
                        start = ip[row]     # (assigned here, not through a pointer: private to the thread)
                        end = ip[row + 1]
                        if (start < 0 or end < start or end > nnz or lo < start or hi < lo or hi > end
                                or (t == 0 and lo != start) or (t == P - 1 and hi != end)):
                            errp[0] = 2
                            break
                        _resume_rows(ix, a, nnz, x, n_cols, y + row * k, lo, hi, k, t > 0, errp)
            for i in prange(n_rows, schedule='dynamic', chunksize=32):
                if not hv[i]:
                    _spmm_row(ip, ix, a, nnz, x, n_cols, y, i, k, errp)
    return err


def csr_matmul_t(const index_t[::1] t_indptr, const index_t[::1] t_rows,
                 const index_t[::1] t_pos, const real_t[::1] data, const real_t[::1] G,
                 real_t[::1] Z, Py_ssize_t n_rows, Py_ssize_t k, int nt):
    """Z (n_cols, k) = A.T @ G (n_rows, k), one column of A per task, its entries in row
    order; every row of Z is written."""
    cdef Py_ssize_t n_cols = t_indptr.shape[0] - 1, j
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* tp = &t_indptr[0]
    cdef const index_t* tr = &t_rows[0]
    cdef const index_t* tq = &t_pos[0]
    cdef const real_t* a = &data[0]
    cdef const real_t* g = &G[0]
    cdef real_t* z = &Z[0]
    if k == 0:
        return 0
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for j in range(n_cols):
                _spmm_t_col(tp, tr, tq, t_rows.shape[0], a, data.shape[0], g, n_rows, z, j, k, errp)
    else:
        for j in prange(n_cols, nogil=True, schedule='dynamic', chunksize=32, num_threads=nt):
            _spmm_t_col(tp, tr, tq, t_rows.shape[0], a, data.shape[0], g, n_rows, z, j, k, errp)
    return err


cdef inline void _spmm_t_col(const index_t* t_indptr, const index_t* t_rows,
                             const index_t* t_pos, Py_ssize_t nt_entries, const real_t* data,
                             Py_ssize_t nnz, const real_t* G, Py_ssize_t n_rows, real_t* Z,
                             Py_ssize_t j, Py_ssize_t k, int* err) noexcept nogil:
    cdef Py_ssize_t lo, hi
    if _span(t_indptr, j, nt_entries, &lo, &hi):
        err[0] = 2
        return
    _weighted_rows(t_rows, t_pos, nt_entries, data, nnz, G, n_rows, Z + j * k, lo, hi, k, err)


def sddmm(const index_t[::1] indptr, const index_t[::1] indices, const real_t[::1] G,
          const real_t[::1] X, real_t[::1] vals, Py_ssize_t n_cols, Py_ssize_t k, int nt):
    """vals[p] = G row i . X row j for every stored p = (i, j); rows of k values."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, i
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* ip = &indptr[0]
    cdef const index_t* ix = &indices[0]
    cdef const real_t* g = &G[0]
    cdef const real_t* x = &X[0]
    cdef real_t* out = &vals[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for i in range(n_rows):
                _sddmm_row(ip, ix, vals.shape[0], g, x, n_cols, out, i, k, errp)
    else:
        for i in prange(n_rows, nogil=True, schedule='dynamic', chunksize=32, num_threads=nt):
            _sddmm_row(ip, ix, vals.shape[0], g, x, n_cols, out, i, k, errp)
    return err


cdef inline void _sddmm_row(const index_t* indptr, const index_t* indices, Py_ssize_t nnz,
                            const real_t* G, const real_t* X, Py_ssize_t n_cols, real_t* vals,
                            Py_ssize_t i, Py_ssize_t k, int* err) noexcept nogil:
    cdef Py_ssize_t lo, hi
    if _span(indptr, i, nnz, &lo, &hi):
        err[0] = 2
        return
    _sddmm_range(indices, nnz, G + i * k, X, n_cols, vals, lo, hi, k, err)


cdef inline void _sddmm_range(const index_t* indices, Py_ssize_t ahead_end, const real_t* g,
                              const real_t* X, Py_ssize_t n_cols, real_t* vals, Py_ssize_t lo,
                              Py_ssize_t hi, Py_ssize_t k, int* err) noexcept nogil:
    """vals[p] = g . X row indices[p] for p in lo:hi (prefetching up to ahead_end)."""
    cdef Py_ssize_t p, j
    for p in range(lo, hi):
        j = indices[p]
        if j < 0 or j >= n_cols:
            err[0] = 1
            return
        if p + PREFETCH_AHEAD < ahead_end:
            _prefetch_row(X + <Py_ssize_t>indices[p + PREFETCH_AHEAD] * k, k)
        if k == 32:
            vals[p] = _dot(g, X + j * 32, 32)
        elif k == 64:
            vals[p] = _dot(g, X + j * 64, 64)
        elif k == 16:
            vals[p] = _dot(g, X + j * 16, 16)
        else:
            vals[p] = _dot(g, X + j * k, k)


cdef inline real_t _dot(const real_t* g, const real_t* x, Py_ssize_t k) noexcept nogil:
    """g[:k] . x[:k], the products added in column order."""
    cdef real_t r = 0
    cdef Py_ssize_t c
    for c in range(k):
        r = r + g[c] * x[c]
    return r


def sddmm_panels(const index_t[::1] indptr, const index_t[::1] indices, const real_t[::1] G,
                 const real_t[::1] X, real_t[::1] vals, Py_ssize_t n_cols, Py_ssize_t k,
                 const unsigned char[::1] heavy, const int64_t[::1] rows,
                 const int64_t[::1] split, const int64_t[::1] bounds, int nt):
    """sddmm with the long rows taken in column panels of X, as csr_matmul_panels (the same
    plan); each entry's product is the same whatever the order, so the bits are sddmm's."""
    cdef Py_ssize_t n_rows = indptr.shape[0] - 1, i, c, r, t, lo, hi, row, base, start, end
    cdef Py_ssize_t n_listed = rows.shape[0], n_tasks = bounds.shape[0] - 1
    cdef Py_ssize_t P = split.shape[0] // n_listed - 1 if n_listed else 0
    cdef Py_ssize_t nnz = vals.shape[0]
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* ip = &indptr[0]
    cdef const index_t* ix = &indices[0] if indices.shape[0] else NULL
    cdef const real_t* g = &G[0] if G.shape[0] else NULL
    cdef const real_t* x = &X[0] if X.shape[0] else NULL
    cdef real_t* out = &vals[0] if nnz else NULL
    cdef const unsigned char* hv = &heavy[0] if n_rows else NULL
    cdef const int64_t* rw = &rows[0] if n_listed else NULL
    cdef const int64_t* sp = &split[0] if n_listed else NULL
    cdef const int64_t* bd = &bounds[0]
    _check_plan(n_rows, heavy, rows, split, bounds, P)
    if indices.shape[0] != nnz:
        raise ValueError("sddmm_panels: vals needs one entry per stored entry")
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for c in range(n_tasks):
                for t in range(P):
                    if errp[0]:
                        break
                    for r in range(bd[c], bd[c + 1]):
                        row = rw[r]
                        base = r * (P + 1) + t
                        lo = sp[base]
                        hi = sp[base + 1]
                        start = ip[row]     # (assigned here, not through a pointer: private to the thread)
                        end = ip[row + 1]
                        if (start < 0 or end < start or end > nnz or lo < start or hi < lo or hi > end
                                or (t == 0 and lo != start) or (t == P - 1 and hi != end)):
                            errp[0] = 2
                            break
                        _sddmm_range(ix, hi, g + row * k, x, n_cols, out, lo, hi, k, errp)
            for i in range(n_rows):
                if not hv[i]:
                    _sddmm_row(ip, ix, nnz, g, x, n_cols, out, i, k, errp)
    else:
        with nogil, parallel(num_threads=nt):     # as csr_matmul_panels
            for c in prange(n_tasks, schedule='dynamic', chunksize=1):
                for t in range(P):
                    if errp[0]:
                        break
                    for r in range(bd[c], bd[c + 1]):
                        row = rw[r]
                        base = r * (P + 1) + t
                        lo = sp[base]
                        hi = sp[base + 1]
                        start = ip[row]     # (assigned here, not through a pointer: private to the thread)
                        end = ip[row + 1]
                        if (start < 0 or end < start or end > nnz or lo < start or hi < lo or hi > end
                                or (t == 0 and lo != start) or (t == P - 1 and hi != end)):
                            errp[0] = 2
                            break
                        _sddmm_range(ix, hi, g + row * k, x, n_cols, out, lo, hi, k, errp)
            for i in prange(n_rows, schedule='dynamic', chunksize=32):
                if not hv[i]:
                    _sddmm_row(ip, ix, nnz, g, x, n_cols, out, i, k, errp)
    return err


cdef _check_plan(Py_ssize_t n_rows, const unsigned char[::1] heavy, const int64_t[::1] rows,
                 const int64_t[::1] split, const int64_t[::1] bounds, Py_ssize_t P):
    """Raise unless a panel plan fits a pattern of n_rows rows (the positions in it are checked
    by the kernels as they go)."""
    cdef Py_ssize_t n_listed = rows.shape[0], n_tasks = bounds.shape[0] - 1, c, r, marked = 0
    if heavy.shape[0] != n_rows or split.shape[0] != n_listed * (P + 1) or (n_listed and P < 1):
        raise ValueError("panel plan: it does not fit A")
    if n_tasks < 0 or bounds[0] != 0 or bounds[n_tasks] != n_listed:
        raise ValueError("panel plan: task bounds must run from 0 to the listed rows")
    for c in range(n_tasks):
        if bounds[c + 1] < bounds[c]:
            raise ValueError("panel plan: task bounds must not decrease")
    for r in range(n_listed):
        if rows[r] < 0 or rows[r] >= n_rows or not heavy[rows[r]] or (r and rows[r] <= rows[r - 1]):
            raise ValueError("panel plan: the listed rows must be the marked ones, in increasing order")
    with nogil:
        for r in range(n_rows):
            marked += heavy[r] != 0
    if marked != n_listed:
        raise ValueError("panel plan: every marked row must be listed (it would not be written)")

# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Row gather, scatter-add and dense accumulation.

Every kernel takes its outputs from the caller, works on flat C-contiguous buffers, ends with
the thread count `nt`, and returns a status (0 ok, 1 index out of range). A scatter gives each
output row one owning thread, which adds that row's contributions in their original order, so
the bits do not depend on the thread count.
"""
import numpy as np
from cython.parallel cimport prange
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

from ._types cimport real_t, index_t
from ._sort cimport bucket_sort
from ._prefetch cimport PREFETCH_AHEAD, prefetch_bytes, prefetch_bytes_w


def gather_rows(const uint8_t[::1] src, const index_t[::1] idx, uint8_t[::1] out,
                Py_ssize_t n, Py_ssize_t width, int nt):
    """out row k = src row idx[k]; rows are `width` bytes, src has n rows."""
    cdef Py_ssize_t m = idx.shape[0], k
    cdef int err = 0
    cdef int* errp = &err
    cdef const uint8_t* s = &src[0]
    cdef uint8_t* o = &out[0]
    cdef const index_t* ix = &idx[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for k in range(m):
                _copy_row(s, ix, o, k, m, n, width, errp)
    else:
        for k in prange(m, nogil=True, schedule='static', num_threads=nt):
            _copy_row(s, ix, o, k, m, n, width, errp)
    return err


def gather_matvec(const real_t[::1] src, const index_t[::1] idx, const real_t[::1] vec,
                  real_t[::1] out, Py_ssize_t n, int nt):
    """out[k] = src row idx[k] . vec without forming the gathered rows; src has n rows of
    len(vec) values. Each dot product is summed in double, in 4 lanes over the columns
    (c mod 4), combined as (l0 + l1) + (l2 + l3): the bits do not depend on the thread count."""
    cdef Py_ssize_t m = idx.shape[0], d = vec.shape[0], k
    cdef int err = 0
    cdef int* errp = &err
    if m == 0:
        return 0
    if m * d < 65536:
        nt = 1
    cdef const real_t* s = &src[0] if src.shape[0] else NULL
    cdef const real_t* v = &vec[0] if d else NULL
    cdef const index_t* ix = &idx[0]
    cdef real_t* o = &out[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for k in range(m):
                o[k] = _dot_row(s, ix, v, k, m, n, d, errp)
    else:
        for k in prange(m, nogil=True, schedule='static', num_threads=nt):
            o[k] = _dot_row(s, ix, v, k, m, n, d, errp)
    return err


cdef inline real_t _dot_row(const real_t* src, const index_t* idx, const real_t* vec, Py_ssize_t k,
                            Py_ssize_t m, Py_ssize_t n, Py_ssize_t d, int* err) noexcept nogil:
    cdef Py_ssize_t j = idx[k], ahead, c
    cdef double l0 = 0, l1 = 0, l2 = 0, l3 = 0
    cdef const real_t* x
    if k + PREFETCH_AHEAD < m:
        ahead = idx[k + PREFETCH_AHEAD]
        if 0 <= ahead < n:
            prefetch_bytes(src + ahead * d, d * sizeof(real_t))
    if j < 0:
        j = j + n
    if j < 0 or j >= n:
        err[0] = 1
        return 0
    x = src + j * d
    c = 0
    while c + 4 <= d:
        l0 = l0 + <double>x[c] * vec[c]
        l1 = l1 + <double>x[c + 1] * vec[c + 1]
        l2 = l2 + <double>x[c + 2] * vec[c + 2]
        l3 = l3 + <double>x[c + 3] * vec[c + 3]
        c = c + 4
    if c < d:
        l0 = l0 + <double>x[c] * vec[c]
    if c + 1 < d:
        l1 = l1 + <double>x[c + 1] * vec[c + 1]
    if c + 2 < d:
        l2 = l2 + <double>x[c + 2] * vec[c + 2]
    return <real_t>((l0 + l1) + (l2 + l3))


cdef inline void _copy_row(const uint8_t* src, const index_t* idx, uint8_t* out, Py_ssize_t k,
                           Py_ssize_t m, Py_ssize_t n, Py_ssize_t width,
                           int* err) noexcept nogil:
    cdef Py_ssize_t j = idx[k], ahead
    if k + PREFETCH_AHEAD < m:
        ahead = idx[k + PREFETCH_AHEAD]
        if 0 <= ahead < n:
            prefetch_bytes(src + ahead * width, width)
    if j < 0:
        j = j + n
    if j < 0 or j >= n:
        err[0] = 1
        return
    memcpy(out + k * width, src + j * width, width)


def scatter_add(const real_t[::1] values, const index_t[::1] idx, real_t[::1] out,
                int64_t[::1] counts, Py_ssize_t n, Py_ssize_t d, int nt):
    """out row idx[k] += values row k (n rows of d values), in the order of k; counts, if it
    has n entries, receives the number of contributions to each row."""
    cdef Py_ssize_t m = idx.shape[0], b
    ptr_a = np.zeros(n + 1, dtype=np.int64)
    perm_a = np.empty(m, dtype=np.int64)
    nxt_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] ptr = ptr_a, perm = perm_a, nxt = nxt_a
    cdef int err
    with nogil:
        err = bucket_sort(&idx[0], m, n, &ptr[0], &perm[0], &nxt[0])
    if err:
        return err
    if counts.shape[0] == n:
        for b in range(n):
            counts[b] = ptr[b + 1] - ptr[b]
    if d == 0:
        return 0
    cdef const real_t* v = &values[0]
    cdef real_t* o = &out[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for b in range(n):
                _sum_rows(&ptr[0], &perm[0], m, v, o, b, d)
    else:
        for b in prange(n, nogil=True, schedule='dynamic', chunksize=64, num_threads=nt):
            _sum_rows(&ptr[0], &perm[0], m, v, o, b, d)
    return 0


cdef inline void _sum_rows(const int64_t* ptr, const int64_t* perm, Py_ssize_t m,
                           const real_t* values, real_t* out, Py_ssize_t b,
                           Py_ssize_t d) noexcept nogil:
    cdef int64_t q
    cdef Py_ssize_t c
    cdef real_t* o = out + b * d
    cdef const real_t* x
    for q in range(ptr[b], ptr[b + 1]):
        if q + PREFETCH_AHEAD < m:  # past this row's contributions too
            prefetch_bytes(values + perm[q + PREFETCH_AHEAD] * d, d * <Py_ssize_t>sizeof(real_t))
        x = values + perm[q] * d
        for c in range(d):
            o[c] = o[c] + x[c]


def scatter_add_owned(const real_t[::1] values, const index_t[::1] idx, real_t[::1] out,
                      Py_ssize_t n, Py_ssize_t d, int nt):
    """out row idx[k] += values row k (out has n rows of d values) in place, in the order of k.
    Each thread owns the rows that hash to it and walks the whole of idx, adding the
    contributions to its own rows: no sort, no scratch of n entries, no atomics; every row still
    sums in the order of k, so the bits do not depend on the thread count."""
    cdef Py_ssize_t m = idx.shape[0], t
    cdef int err = 0
    cdef int* errp = &err
    if m == 0 or d == 0:
        return _check_indices(&idx[0] if m else NULL, m, n)
    if m * d < 65536:
        nt = 1                 # too little work to share
    cdef const real_t* v = &values[0]
    cdef const index_t* ix = &idx[0]
    cdef real_t* o = &out[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for t in range(nt):
                _scatter_owned(v, NULL, NULL, ix, o, m, n, d, t, nt, errp)
    else:
        for t in prange(nt, nogil=True, schedule='static', chunksize=1, num_threads=nt):
            _scatter_owned(v, NULL, NULL, ix, o, m, n, d, t, nt, errp)
    return err


cdef inline int _check_indices(const index_t* idx, Py_ssize_t m, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(m):
        if idx[k] < -n or idx[k] >= n:
            return 1
    return 0


cdef inline Py_ssize_t _owner(Py_ssize_t r, int nt) noexcept nogil:
    """The thread owning row r: a multiplicative hash of r scaled to [0, nt) (no division)."""
    cdef uint32_t h = <uint32_t>(<uint64_t>r * 2654435761u)
    return <Py_ssize_t>((<uint64_t>h * <uint64_t>nt) >> 32)


cdef enum:
    OWNED_CHUNK = 2048         # entries whose owned subset a thread lists before adding them


cdef inline void _scatter_owned(const real_t* values, const real_t* coef, const real_t* vec,
                                const index_t* idx, real_t* out, Py_ssize_t m, Py_ssize_t n,
                                Py_ssize_t d, Py_ssize_t t, int nt, int* err) noexcept nogil:
    """Thread t's share of a scatter: out row idx[k] += values row k, or coef[k] * vec when vec
    is given (each product rounded, then added), for the rows t owns, in the order of k. The
    entries go by in chunks: a branch-free pass lists the chunk's entries that t owns, then
    those are added in order, the rows a few entries ahead prefetched."""
    cdef Py_ssize_t mine[OWNED_CHUNK]
    cdef Py_ssize_t start, stop, k, r, c, q, count
    cdef real_t s
    cdef real_t* o
    cdef const real_t* x
    start = 0
    while start < m:
        stop = min(start + OWNED_CHUNK, m)
        count = 0
        for k in range(start, stop):
            r = idx[k]
            if r < -n or r >= n:
                err[0] = 1
                return
            mine[count] = k
            count = count + (nt == 1 or _owner(r + n if r < 0 else r, nt) == t)
        for q in range(count):
            if q + PREFETCH_AHEAD < count:
                r = idx[mine[q + PREFETCH_AHEAD]]
                prefetch_bytes_w(out + (r + n if r < 0 else r) * d, d * <Py_ssize_t>sizeof(real_t))
            k = mine[q]
            r = idx[k]
            o = out + (r + n if r < 0 else r) * d
            if vec == NULL:
                x = values + k * d
                for c in range(d):
                    o[c] = o[c] + x[c]
            else:
                s = coef[k]
                for c in range(d):
                    o[c] = o[c] + s * vec[c]
        start = stop


def scatter_add_outer_owned(const real_t[::1] coef, const real_t[::1] vec,
                            const index_t[::1] idx, real_t[::1] out, Py_ssize_t n, int nt):
    """out row idx[k] += coef[k] * vec in place (out has n rows of len(vec) values), in the order
    of k, rows owned as in scatter_add_owned: the bits of adding the formed outer product."""
    cdef Py_ssize_t m = idx.shape[0], d = vec.shape[0], t
    cdef int err = 0
    cdef int* errp = &err
    if m == 0 or d == 0:
        return _check_indices(&idx[0] if m else NULL, m, n)
    if m * d < 65536:
        nt = 1
    cdef const real_t* cf = &coef[0]
    cdef const real_t* v = &vec[0]
    cdef const index_t* ix = &idx[0]
    cdef real_t* o = &out[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for t in range(nt):
                _scatter_owned(NULL, cf, v, ix, o, m, n, d, t, nt, errp)
    else:
        for t in prange(nt, nogil=True, schedule='static', chunksize=1, num_threads=nt):
            _scatter_owned(NULL, cf, v, ix, o, m, n, d, t, nt, errp)
    return err


def outer(const real_t[::1] a, const real_t[::1] b, real_t[::1] out, int nt):
    """out (len(a), len(b)) = a[i] * b[j], rows over threads (one product per entry: the bits
    of np.multiply.outer)."""
    cdef Py_ssize_t m = a.shape[0], d = b.shape[0], i
    if m == 0 or d == 0:
        return 0
    if m * d < 65536:
        nt = 1
    cdef const real_t* pa = &a[0]
    cdef const real_t* pb = &b[0]
    cdef real_t* o = &out[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for i in range(m):
                _scale_row(o + i * d, pb, pa[i], d)
    else:
        for i in prange(m, nogil=True, schedule='static', num_threads=nt):
            _scale_row(o + i * d, pb, pa[i], d)
    return 0


cdef inline void _scale_row(real_t* o, const real_t* b, real_t s, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t c
    for c in range(d):
        o[c] = s * b[c]


cdef enum:
    BLOCK = 8192


def add_into(real_t[::1] acc, const real_t[::1] g, int nt):
    """acc += g elementwise, in blocks over threads."""
    cdef Py_ssize_t n = acc.shape[0], nblocks = (n + BLOCK - 1) // BLOCK, blk
    cdef real_t* a = &acc[0]
    cdef const real_t* x = &g[0]
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for blk in range(nblocks):
                _add_block(a, x, blk * BLOCK, min(n, (blk + 1) * BLOCK))
    else:
        for blk in prange(nblocks, nogil=True, schedule='static', num_threads=nt):
            _add_block(a, x, blk * BLOCK, min(n, (blk + 1) * BLOCK))
    return 0


cdef inline void _add_block(real_t* a, const real_t* x, Py_ssize_t lo,
                            Py_ssize_t hi) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(lo, hi):
        a[i] = a[i] + x[i]

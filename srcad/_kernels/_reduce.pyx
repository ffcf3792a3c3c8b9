# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Max/min over groups of entries (CSR rows, CSR columns through a transposed index, segments
of dense rows) and their gradients, ties counted so the gradient splits evenly among them.

A group b is positions q in ptr[b]:ptr[b + 1]; it reads data row pos[q] (or q itself when
use_pos is false), each row d values wide, and owns output row b. Status: 0 ok, 1 an index out
of range, 2 an invalid group pointer. NaN propagates: a group holding one reduces to NaN.
"""
import numpy as np
from cython.parallel cimport prange
from libc.math cimport INFINITY
from libc.stdint cimport int64_t

from ._types cimport real_t, index_t, key_t
from ._sort cimport bucket_sort


cdef inline void _extreme_group(const index_t* ptr, const index_t* pos, bint use_pos,
                                Py_ssize_t n_pos, const real_t* data, Py_ssize_t n_data,
                                Py_ssize_t d, bint is_max, real_t* out, int64_t* counts,
                                Py_ssize_t b, int* err) noexcept nogil:
    cdef Py_ssize_t lo = ptr[b], hi = ptr[b + 1], q, r, c
    cdef real_t v
    cdef real_t* o = out + b * d
    cdef int64_t* n = counts + b * d
    cdef const real_t* x
    for c in range(d):
        o[c] = -INFINITY if is_max else INFINITY
        n[c] = 0
    if lo < 0 or hi < lo or hi > n_pos:
        err[0] = 2
        return
    for q in range(lo, hi):
        r = pos[q] if use_pos else q
        if r < 0 or r >= n_data:
            err[0] = 1
            return
        x = data + r * d
        for c in range(d):
            v = x[c]
            if v == o[c]:
                n[c] += 1
            elif (v > o[c]) if is_max else (v < o[c]):
                o[c] = v
                n[c] = 1
            elif v != v:
                o[c] = v
                n[c] = 1


cdef inline void _extreme_group_vjp(const index_t* ptr, const index_t* pos, bint use_pos,
                                    Py_ssize_t n_pos, const real_t* data, Py_ssize_t n_data,
                                    Py_ssize_t d, const real_t* vals, const int64_t* counts,
                                    const real_t* g, real_t* gdata, Py_ssize_t b,
                                    int* err) noexcept nogil:
    cdef Py_ssize_t lo = ptr[b], hi = ptr[b + 1], q, r, c
    if lo < 0 or hi < lo or hi > n_pos:
        err[0] = 2
        return
    for q in range(lo, hi):
        r = pos[q] if use_pos else q
        if r < 0 or r >= n_data:
            err[0] = 1
            return
        for c in range(d):
            if data[r * d + c] == vals[b * d + c]:
                gdata[r * d + c] = g[b * d + c] / counts[b * d + c]
            else:
                gdata[r * d + c] = 0


def group_extreme(const index_t[::1] ptr, const index_t[::1] pos, bint use_pos,
                  const real_t[::1] data, bint is_max, real_t[::1] vals, int64_t[::1] counts,
                  int nt):
    """vals[b], counts[b] = max (or min) of group b of a 1-D data and how many entries tie."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, b
    cdef Py_ssize_t n_pos = pos.shape[0] if use_pos else data.shape[0]
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* pp = &ptr[0]
    cdef const index_t* ps = &pos[0]
    cdef const real_t* x = &data[0]
    cdef real_t* o = &vals[0]
    cdef int64_t* cn = &counts[0]
    for b in prange(n, nogil=True, schedule='dynamic', chunksize=64, num_threads=nt):
        _extreme_group(pp, ps, use_pos, n_pos, x, data.shape[0], 1, is_max, o, cn, b, errp)
    return err


def group_extreme_vjp(const index_t[::1] ptr, const index_t[::1] pos, bint use_pos,
                      const real_t[::1] data, const real_t[::1] vals,
                      const int64_t[::1] counts, const real_t[::1] g, real_t[::1] gdata,
                      int nt):
    """gdata[p] = g[b] / counts[b] where data[p] == vals[b] for p in group b, else 0: every entry
    of a group is written, so gdata need not arrive zeroed."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, b
    cdef Py_ssize_t n_pos = pos.shape[0] if use_pos else data.shape[0]
    cdef int err = 0
    cdef int* errp = &err
    cdef const index_t* pp = &ptr[0]
    cdef const index_t* ps = &pos[0]
    cdef const real_t* x = &data[0]
    cdef const real_t* v = &vals[0]
    cdef const int64_t* cn = &counts[0]
    cdef const real_t* gp = &g[0]
    cdef real_t* out = &gdata[0]
    for b in prange(n, nogil=True, schedule='dynamic', chunksize=64, num_threads=nt):
        _extreme_group_vjp(pp, ps, use_pos, n_pos, x, data.shape[0], 1, v, cn, gp, out, b,
                           errp)
    return err


def segment_extreme(const real_t[::1] data, const key_t[::1] ids, bint is_max,
                    real_t[::1] out, int64_t[::1] counts, Py_ssize_t n, Py_ssize_t d, int nt):
    """out row s, counts row s = elementwise max (or min) over the data rows (d wide) whose
    id is s, and the number of rows attaining it; empty segments give -inf (+inf) and 0."""
    cdef Py_ssize_t m = ids.shape[0], b
    ptr_a = np.zeros(n + 1, dtype=np.int64)
    perm_a = np.empty(m, dtype=np.int64)
    nxt_a = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] ptr = ptr_a, perm = perm_a, nxt = nxt_a
    cdef int err = 0
    cdef int* errp = &err
    with nogil:
        err = bucket_sort(&ids[0], m, n, &ptr[0], &perm[0], &nxt[0])
    if err or d == 0:
        return err
    cdef const int64_t* pp = &ptr[0]
    cdef const int64_t* ps = &perm[0]
    cdef const real_t* x = &data[0]
    cdef real_t* o = &out[0]
    cdef int64_t* cn = &counts[0]
    for b in prange(n, nogil=True, schedule='dynamic', chunksize=64, num_threads=nt):
        _extreme_group(pp, ps, True, m, x, m, d, is_max, o, cn, b, errp)
    return err


def segment_extreme_vjp(const real_t[::1] data, const key_t[::1] ids,
                        const real_t[::1] out, const int64_t[::1] counts,
                        const real_t[::1] g, real_t[::1] gdata, Py_ssize_t n, Py_ssize_t d,
                        int nt):
    """gdata row r = g row s / counts row s where data row r equals out row s (s = ids[r]),
    elementwise, else 0; rows are d wide, n segments."""
    cdef Py_ssize_t m = ids.shape[0], r
    cdef int err = 0
    cdef int* errp = &err
    cdef const key_t* ip = &ids[0]
    cdef const real_t* x = &data[0]
    cdef const real_t* v = &out[0]
    cdef const int64_t* cn = &counts[0]
    cdef const real_t* gp = &g[0]
    cdef real_t* gd = &gdata[0]
    if d == 0:
        return 0
    for r in prange(m, nogil=True, schedule='static', num_threads=nt):
        _segment_row_vjp(ip, x, v, cn, gp, gd, r, n, d, errp)
    return err


cdef inline void _segment_row_vjp(const key_t* ids, const real_t* data, const real_t* out,
                                  const int64_t* counts, const real_t* g, real_t* gdata,
                                  Py_ssize_t r, Py_ssize_t n, Py_ssize_t d,
                                  int* err) noexcept nogil:
    cdef Py_ssize_t s = ids[r], c
    if s < 0:
        s = s + n
    if s < 0 or s >= n:
        err[0] = 1
        return
    for c in range(d):
        if data[r * d + c] == out[s * d + c]:
            gdata[r * d + c] = g[s * d + c] / counts[s * d + c]
        else:
            gdata[r * d + c] = 0

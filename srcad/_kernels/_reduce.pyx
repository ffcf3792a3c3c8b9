# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Max/min over groups of entries (CSR rows, CSR columns through a transposed index, segments
of dense rows) and their gradients, ties counted so the gradient splits evenly among them.

A group b is positions q in ptr[b]:ptr[b + 1]; it reads data row pos[q] (or q itself when
use_pos is false), each row d values wide, and owns output row b. Status: 0 ok, 1 an index out
of range, 2 an invalid group pointer. NaN propagates: a group holding one reduces to NaN.
"""
import numpy as np
from cython.parallel cimport prange
from libc.math cimport INFINITY, NAN
from libc.stdint cimport int64_t
from libc.string cimport memset

from ._types cimport real_t, index_t, key_t
from ._sort cimport bucket_sort
from ._simd cimport *
from ._prefetch cimport SRCAD_PREFETCH

cdef extern from *:
    """
    #define SRCAD_PREFETCH_L1(addr) __builtin_prefetch((const void *)(addr), 0, 3)
    """
    void SRCAD_PREFETCH_L1(const void* addr) noexcept nogil


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


cdef inline bint _beats(real_t v, real_t o, bint is_max) noexcept nogil:
    return v > o if is_max else v < o


cdef inline int _group_extreme_at(const index_t* ptr, const index_t* pos, Py_ssize_t n_pos,
                                  const real_t* data, Py_ssize_t n_data, bint is_max,
                                  real_t* out, Py_ssize_t b) noexcept nogil:
    """out[b] = the largest (smallest) of the entries pos[ptr[b]:ptr[b + 1]] of data, NaN if one
    is NaN, -inf (+inf) if none; a status. Called with a constant is_max."""
    cdef Py_ssize_t lo = ptr[b], hi = ptr[b + 1], q, r
    cdef real_t v, o = -INFINITY if is_max else INFINITY
    if lo < 0 or hi < lo or hi > n_pos:
        return 2
    for q in range(lo, hi):
        r = pos[q]
        if r < 0 or r >= n_data:
            return 1
        v = data[r]
        if _beats(v, o, is_max) or v != v:
            o = v
    out[b] = o
    return 0


cdef enum:
    BLOCK = 256   # groups per task of the contiguous kernels
    AHEAD = 64    # groups between a row and the one whose head _block_extreme prefetches


cdef inline int _block_extreme(const index_t* ptr, Py_ssize_t b0, Py_ssize_t b1,
                               const real_t* data, Py_ssize_t nnz, bint is_max,
                               real_t* out, int64_t* at, Py_ssize_t n) noexcept nogil:
    """out[b] for the contiguous groups b0:b1 (ptr[b]:ptr[b + 1]; nnz > 0). Most groups of a
    skewed pattern hold one entry: a first, branch-free pass settles every group of at most one
    and lists the longer ones, which a second pass reduces. With `at` (else NULL), at[b] is
    written for each group of two or more entries: the position of its extreme when exactly one
    entry attains it, else -1 (ties, a NaN); the gradient then needs no search (a group of one
    entry needs no position, and its at[b] is not written). Returns a status."""
    cdef Py_ssize_t longer[BLOCK]
    cdef Py_ssize_t b, j, k = 0, lo, hi
    cdef real_t empty = -INFINITY if is_max else INFINITY, v
    for b in range(b0, b1):
        lo = ptr[b]
        hi = ptr[b + 1]
        if lo < 0 or hi < lo or hi > nnz:
            return 2
        if b + AHEAD < n:   # the head of the row AHEAD on, into L1 (see above)
            SRCAD_PREFETCH_L1(data + ptr[b + AHEAD])
        v = data[lo if lo < nnz else 0]
        out[b] = v if hi > lo else empty
        longer[k] = b
        k = k + (hi - lo > 1)
    for j in range(k):
        b = longer[j]
        lo = ptr[b]
        out[b] = _row_extreme(data + lo, ptr[b + 1] - lo, nnz - lo, is_max,
                              at + b if at != NULL else NULL)
        if at != NULL and at[b] >= 0:
            at[b] = lo + at[b]
    return 0


cdef inline real_t _row_extreme(const real_t* x, Py_ssize_t n, Py_ssize_t room, bint is_max,
                                int64_t* at) noexcept nogil:
    """max (min) of the row x[:n] (room: the entries readable from x), NaN if one is NaN; with
    `at` (else NULL), at[0] = the position of the one entry attaining it, or -1 (see _locate).
    A row of at most `span` entries is read as one masked window of the vector kernels
    (srcad/_kernels/_simd.pxd) when the window fits in `room`, a longer one by their loop; the
    rest (a short row at the very end, a float row too long for 32-bit lane positions) entry
    by entry."""
    cdef Py_ssize_t span = 4 * (32 // sizeof(real_t))
    cdef real_t m
    if n <= span and room >= span:
        if real_t is double:
            return srcad_short_extreme_d(x, n, is_max, at)
        else:
            return srcad_short_extreme_f(x, n, is_max, at)
    if n > span and n < (<Py_ssize_t>1 << 30):
        if real_t is double:
            m = srcad_run_extreme_d(x, n, is_max)
            if at != NULL:
                at[0] = srcad_locate_d(x, n, m)
        else:
            m = srcad_run_extreme_f(x, n, is_max)
            if at != NULL:
                at[0] = srcad_locate_f(x, n, m)
        return m
    m = _scalar_extreme(x, n, is_max)
    if at != NULL:
        at[0] = _locate(x, n, m)
    return m


cdef inline int64_t _locate(const real_t* x, Py_ssize_t n, real_t m) noexcept nogil:
    """The position q of the one entry x[q] == m, or -1 when none or several are: the count of
    equal entries and the sum of their positions (_row_extreme's fallback for srcad_locate)."""
    cdef Py_ssize_t q
    cdef int64_t ties = 0, where = 0
    for q in range(n):
        ties = ties + (x[q] == m)
        where = where + (q if x[q] == m else 0)
    return where if ties == 1 else -1


cdef inline int _block_extreme_vjp(const index_t* ptr, Py_ssize_t b0, Py_ssize_t b1,
                                   const real_t* data, Py_ssize_t nnz, const real_t* vals,
                                   const real_t* g, real_t* gdata) noexcept nogil:
    """gdata over the contiguous groups b0:b1 (nnz > 0), in _block_extreme's two passes: a group
    of one entry gets g[b] where it equals vals[b] (g[b] / 1: the same bits), 0 where not (NaN)."""
    cdef Py_ssize_t longer[BLOCK]
    cdef Py_ssize_t b, j, k = 0, lo, hi, q, n, ties
    cdef real_t sink, m, share
    cdef real_t* at
    cdef const real_t* x
    for b in range(b0, b1):
        lo = ptr[b]
        hi = ptr[b + 1]
        if lo < 0 or hi < lo or hi > nnz:
            return 2
        at = gdata + lo if hi - lo == 1 else &sink    # no store for an empty or a longer group
        at[0] = g[b] if data[lo if lo < nnz else 0] == vals[b] else 0
        longer[k] = b
        k = k + (hi - lo > 1)
    for j in range(k):
        b = longer[j]
        x = data + ptr[b]
        at = gdata + ptr[b]
        n = ptr[b + 1] - ptr[b]
        m = vals[b]
        share = g[b]
        ties = 0
        for q in range(n):   # one branch-free pass, as if the extreme were unique (g[b] / 1) ...
            ties = ties + (x[q] == m)
            at[q] = share if x[q] == m else 0
        if ties != 1:        # ... and again where it ties (or is NaN: ties == 0)
            _share_ties(x, at, n, m, g[b])
    return 0


cdef inline void _share_ties(const real_t* x, real_t* out, Py_ssize_t n, real_t m,
                             real_t g) noexcept nogil:
    """out[q] = g / ties where x[q] == m (ties: how many are), else 0, for q < n."""
    cdef Py_ssize_t q, ties = 0
    cdef real_t share
    for q in range(n):
        ties = ties + (x[q] == m)
    share = g / ties if ties else 0
    for q in range(n):
        out[q] = share if x[q] == m else 0


cdef real_t _scalar_extreme(const real_t* x, Py_ssize_t n, bint is_max) noexcept nogil:
    """max (min) of x[:n] entry by entry: NaN at the first NaN, -inf (+inf) if n == 0."""
    cdef real_t o = -INFINITY if is_max else INFINITY
    cdef Py_ssize_t q
    for q in range(n):
        if x[q] != x[q]:
            return NAN
        if _beats(x[q], o, is_max):
            o = x[q]
    return o


cdef inline int _group_extreme_vjp_at(const index_t* ptr, const index_t* pos, Py_ssize_t n_pos,
                                     const real_t* data, Py_ssize_t n_data, const real_t* vals,
                                     const real_t* g, real_t* gdata, Py_ssize_t b) noexcept nogil:
    """g[b] / ties at the entries pos[ptr[b]:ptr[b + 1]] equal to vals[b] (the ties counted in
    a first pass), 0 at the others; a status."""
    cdef Py_ssize_t lo = ptr[b], hi = ptr[b + 1], q, r, ties = 0
    cdef real_t m = vals[b], share
    if lo < 0 or hi < lo or hi > n_pos:
        return 2
    for q in range(lo, hi):
        r = pos[q]
        if r < 0 or r >= n_data:
            return 1
        ties = ties + (data[r] == m)
    share = g[b] / ties if ties else 0
    for q in range(lo, hi):
        r = pos[q]
        gdata[r] = share if data[r] == m else 0
    return 0


def group_extreme(const index_t[::1] ptr, const index_t[::1] pos, bint use_pos,
                  const real_t[::1] data, bint is_max, real_t[::1] vals, int64_t[::1] at,
                  int nt):
    """vals[b] = max (or min) of group b of a 1-D data; -inf (+inf) for an empty group. For
    contiguous groups (not use_pos) and an `at` of one entry per group, at[b] = the position of
    the one entry attaining vals[b], or -1, for each group of two or more entries (see
    _block_extreme); an empty `at` is not filled."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, b, nnz = data.shape[0]
    cdef Py_ssize_t n_pos = pos.shape[0] if use_pos else nnz
    cdef int err = 0, e
    cdef int* errp = &err
    cdef const index_t* pp = &ptr[0]
    cdef const index_t* ps = &pos[0]
    cdef const real_t* x = &data[0] if nnz else NULL
    cdef real_t* o = &vals[0] if n else NULL
    cdef int64_t* ap = &at[0] if at.shape[0] and not use_pos else NULL
    if ap != NULL and at.shape[0] != n:
        raise ValueError("at needs one entry per group")
    if not use_pos and nnz == 0:
        vals[:] = -INFINITY if is_max else INFINITY
        if ap != NULL:
            at[:] = -1
        return 0 if ptr[0] == 0 and ptr[n] == 0 else 2
    if not use_pos:
        if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
            with nogil:
                b = 0
                while b < n:
                    if is_max:
                        e = _block_extreme(pp, b, min(b + BLOCK, n), x, nnz, True, o, ap, n)
                    else:
                        e = _block_extreme(pp, b, min(b + BLOCK, n), x, nnz, False, o, ap, n)
                    if e:
                        errp[0] = e
                    b = b + BLOCK
        else:
            for b in prange(0, n, BLOCK, nogil=True, schedule='dynamic', num_threads=nt):
                if is_max:
                    e = _block_extreme(pp, b, min(b + BLOCK, n), x, nnz, True, o, ap, n)
                else:
                    e = _block_extreme(pp, b, min(b + BLOCK, n), x, nnz, False, o, ap, n)
                if e:
                    errp[0] = e
        return err
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for b in range(n):
                if is_max:
                    e = _group_extreme_at(pp, ps, n_pos, x, nnz, True, o, b)
                else:
                    e = _group_extreme_at(pp, ps, n_pos, x, nnz, False, o, b)
                if e:
                    errp[0] = e
    else:
        for b in prange(n, nogil=True, schedule='dynamic', chunksize=256, num_threads=nt):
            if is_max:
                e = _group_extreme_at(pp, ps, n_pos, x, nnz, True, o, b)
            else:
                e = _group_extreme_at(pp, ps, n_pos, x, nnz, False, o, b)
            if e:
                errp[0] = e
    return err


def group_extreme_vjp(const index_t[::1] ptr, const index_t[::1] pos, bint use_pos,
                      const real_t[::1] data, const real_t[::1] vals, const real_t[::1] g,
                      real_t[::1] gdata, int nt):
    """gdata[p] = g[b] / ties where data[p] == vals[b] for p in group b, else 0: every entry
    of a group is written, so gdata need not arrive zeroed."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, b, nnz = data.shape[0]
    cdef Py_ssize_t n_pos = pos.shape[0] if use_pos else nnz
    cdef int err = 0, e
    cdef int* errp = &err
    cdef const index_t* pp = &ptr[0]
    cdef const index_t* ps = &pos[0]
    cdef const real_t* x = &data[0] if nnz else NULL
    cdef const real_t* v = &vals[0] if n else NULL
    cdef const real_t* gp = &g[0] if n else NULL
    cdef real_t* out = &gdata[0] if gdata.shape[0] else NULL
    if nnz == 0:
        return 0 if use_pos or (ptr[0] == 0 and ptr[n] == 0) else 2
    if not use_pos:
        if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
            with nogil:
                b = 0
                while b < n:
                    e = _block_extreme_vjp(pp, b, min(b + BLOCK, n), x, nnz, v, gp, out)
                    if e:
                        errp[0] = e
                    b = b + BLOCK
        else:
            for b in prange(0, n, BLOCK, nogil=True, schedule='dynamic', num_threads=nt):
                e = _block_extreme_vjp(pp, b, min(b + BLOCK, n), x, nnz, v, gp, out)
                if e:
                    errp[0] = e
        return err
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for b in range(n):
                e = _group_extreme_vjp_at(pp, ps, n_pos, x, nnz, v, gp, out, b)
                if e:
                    errp[0] = e
    else:
        for b in prange(n, nogil=True, schedule='dynamic', chunksize=256, num_threads=nt):
            e = _group_extreme_vjp_at(pp, ps, n_pos, x, nnz, v, gp, out, b)
            if e:
                errp[0] = e
    return err


cdef inline int _block_extreme_vjp_at(const index_t* ptr, Py_ssize_t b0, Py_ssize_t b1,
                                      const real_t* data, Py_ssize_t nnz, const real_t* vals,
                                      const int64_t* at, const real_t* g,
                                      real_t* gdata, Py_ssize_t n) noexcept nogil:
    """_block_extreme_vjp given the positions at[b] of _block_extreme (read for the groups of
    two or more entries only): the block's entries are zeroed in one sweep and g[b] (g[b] / 1:
    the same bits) goes to position at[b]; a group with no position (ties, a NaN) is settled as
    _block_extreme_vjp settles it. Returns a status."""
    cdef Py_ssize_t b, lo, hi
    cdef int64_t p
    cdef real_t share
    for b in range(b0, b1):
        lo = ptr[b]
        hi = ptr[b + 1]
        if lo < 0 or hi < lo or hi > nnz:
            return 2
    memset(gdata + ptr[b0], 0, (ptr[b1] - ptr[b0]) * sizeof(real_t))
    for b in range(b0, b1):
        lo = ptr[b]
        hi = ptr[b + 1]
        if b + AHEAD < n:   # as in _block_extreme
            SRCAD_PREFETCH_L1(data + ptr[b + AHEAD])
        # a group of one entry needs no position: g[b] where it equals vals[b], 0 where not (NaN)
        p = lo if hi - lo == 1 else (at[b] if hi - lo > 1 else -1)
        share = g[b] if hi - lo > 1 or data[lo if lo < nnz else 0] == vals[b] else 0
        if p >= 0:
            if p < lo or p >= hi:
                return 1
            gdata[p] = share
        elif hi - lo > 1:
            _share_ties(data + lo, gdata + lo, hi - lo, vals[b], g[b])
    return 0


def group_extreme_vjp_at(const index_t[::1] ptr, const real_t[::1] data,
                         const real_t[::1] vals, const int64_t[::1] at, const real_t[::1] g,
                         real_t[::1] gdata, int nt):
    """group_extreme_vjp for contiguous groups covering data, given the positions `at` of
    group_extreme: the same values, with no search where a group's extreme is unique."""
    cdef Py_ssize_t n = ptr.shape[0] - 1, b, nnz = data.shape[0]
    cdef int err = 0, e
    cdef int* errp = &err
    cdef const index_t* pp = &ptr[0]
    cdef const real_t* x = &data[0] if nnz else NULL
    cdef const real_t* v = &vals[0] if n else NULL
    cdef const int64_t* ap = &at[0] if n else NULL
    cdef const real_t* gp = &g[0] if n else NULL
    cdef real_t* out = &gdata[0] if gdata.shape[0] else NULL
    if at.shape[0] != n or vals.shape[0] != n or g.shape[0] != n or gdata.shape[0] != nnz:
        raise ValueError("vals, at and g need one entry per group, gdata one per entry")
    if nnz == 0:
        return 0 if ptr[0] == 0 and ptr[n] == 0 else 2
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            b = 0
            while b < n:
                e = _block_extreme_vjp_at(pp, b, min(b + BLOCK, n), x, nnz, v, ap, gp, out, n)
                if e:
                    errp[0] = e
                b = b + BLOCK
    else:
        for b in prange(0, n, BLOCK, nogil=True, schedule='dynamic', num_threads=nt):
            e = _block_extreme_vjp_at(pp, b, min(b + BLOCK, n), x, nnz, v, ap, gp, out, n)
            if e:
                errp[0] = e
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
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for b in range(n):
                _extreme_group(pp, ps, True, m, x, m, d, is_max, o, cn, b, errp)
    else:
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
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for r in range(m):
                _segment_row_vjp(ip, x, v, cn, gp, gd, r, n, d, errp)
    else:
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


# ---- fingerprints of index arrays ------------------------------------------------------------------
from libc.stdint cimport uint32_t, uint64_t

cdef enum:
    FP_BLOCK = 1 << 16         # words a task hashes (256 KiB)


cdef inline uint64_t _fp_words(const uint32_t* w, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Two sums over the 4-byte words of w[lo:hi]: of a mix (MurmurHash3's 32-bit finaliser) of
    each word xored with a key of its position, and of that mix times an odd weight of the
    position. Plain 32-bit arithmetic the compiler vectorises."""
    cdef uint32_t s1 = 0, s2 = 0, x, i
    cdef uint32_t a = <uint32_t>lo, b = <uint32_t>(hi - lo)
    cdef const uint32_t* p = w + lo
    for i in range(b):
        x = p[i] ^ ((a + i) * <uint32_t>0x9E3779B9u)
        x ^= x >> 16
        x *= <uint32_t>0x85EBCA6Bu
        x ^= x >> 13
        x *= <uint32_t>0xC2B2AE35u
        x ^= x >> 16
        s1 += x
        s2 += x * (2 * (a + i) + 1)
    return (<uint64_t>s1 << 32) | s2


def fingerprint(const uint32_t[::1] words, int nt):
    """A 64-bit fingerprint of the 4-byte words of an array: any change of content, order or
    length changes it but with chance about 2**-64 (not a defence against a chosen collision).
    Blocks are hashed in parallel and their sums added, so the value does not depend on the
    thread count; one thread never enters a parallel region."""
    cdef Py_ssize_t n = words.shape[0], blocks = (n + FP_BLOCK - 1) // FP_BLOCK, b
    cdef uint64_t h = 0, hi = 0, lo = 0, part_b
    cdef const uint32_t* p = &words[0] if n else NULL
    if n == 0:
        return 0
    if nt <= 1 or blocks == 1:
        h = _fp_words(p, 0, n)
    else:
        part = np.zeros(blocks, np.uint64)
        _fp_blocks(p, n, blocks, part, nt)
        for b in range(blocks):
            part_b = part[b]
            hi += part_b >> 32
            lo += part_b & <uint64_t>0xFFFFFFFF
        h = ((hi & <uint64_t>0xFFFFFFFF) << 32) | (lo & <uint64_t>0xFFFFFFFF)
    return h


cdef void _fp_blocks(const uint32_t* p, Py_ssize_t n, Py_ssize_t blocks, uint64_t[::1] part, int nt) noexcept:
    cdef Py_ssize_t b
    if nt == 1:          # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for b in range(blocks):
                part[b] = _fp_words(p, b * FP_BLOCK, min(n, (b + 1) * FP_BLOCK))
    else:
        for b in prange(blocks, nogil=True, schedule='static', num_threads=nt):
            part[b] = _fp_words(p, b * FP_BLOCK, min(n, (b + 1) * FP_BLOCK))


# ---- running sums (np.cumsum) ------------------------------------------------------------------------

cdef inline void _running_sum(const real_t* x, real_t* out, Py_ssize_t n, bint reverse) noexcept nogil:
    """out = np.cumsum(x) for one row of n values (reverse: np.cumsum(x[::-1])[::-1]): the first value
    copied, then each sum one addition, in numpy's order, so the bits are numpy's."""
    cdef Py_ssize_t j
    cdef real_t s
    if n == 0:
        return
    if reverse:
        s = x[n - 1]
        out[n - 1] = s
        for j in range(n - 2, -1, -1):
            s = s + x[j]
            out[j] = s
    else:
        s = x[0]
        out[0] = s
        for j in range(1, n):
            s = s + x[j]
            out[j] = s


def running_sums(const real_t[::1] x, real_t[::1] out, Py_ssize_t n, bint reverse, int nt):
    """np.cumsum along each row of n values of a C-contiguous (rows, n) array, given flat (reverse:
    summed from each row's end). numpy's own loop keeps the running sum in memory (a store and a
    load per value); here it stays in a register. Rows in parallel, each summed by one thread: the
    same bits for any thread count."""
    cdef Py_ssize_t rows = x.shape[0] // n if n > 0 else 0, r
    cdef const real_t* xp = &x[0] if x.shape[0] > 0 else NULL
    cdef real_t* op = &out[0] if out.shape[0] > 0 else NULL
    if rows == 0:
        return 0
    if nt == 1 or rows == 1:     # one thread: no OpenMP region at all (safe after fork)
        with nogil:
            for r in range(rows):
                _running_sum(xp + r * n, op + r * n, n, reverse)
    else:
        for r in prange(rows, nogil=True, schedule='static', num_threads=nt):
            _running_sum(xp + r * n, op + r * n, n, reverse)
    return 0

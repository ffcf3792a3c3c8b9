# A stable counting sort of row/segment keys, shared (inlined) by the kernels that give every
# output row one owning thread. Keys may be negative (numpy's wraparound, key + n).
from libc.stdint cimport int64_t
from ._types cimport index_t


cdef inline int bucket_sort(const index_t* keys, Py_ssize_t m, Py_ssize_t n,
                            int64_t* ptr, int64_t* perm, int64_t* nxt) noexcept nogil:
    """Fill ptr (n + 1, zeroed by the caller) and perm (m) so that bucket b is
    perm[ptr[b]:ptr[b + 1]], the positions k with key b in increasing order; nxt is n of
    scratch. Returns 1 if a key is out of range, else 0."""
    cdef Py_ssize_t k, b
    for k in range(m):
        b = keys[k]
        if b < 0:
            b = b + n
        if b < 0 or b >= n:
            return 1
        ptr[b + 1] += 1
    for b in range(n):
        ptr[b + 1] += ptr[b]
        nxt[b] = ptr[b]
    for k in range(m):
        b = keys[k]
        if b < 0:
            b = b + n
        perm[nxt[b]] = k
        nxt[b] += 1
    return 0

# Software prefetch for kernels that read dense rows in a data-dependent order (one row per
# stored entry or index). Fetching the row needed PREFETCH_AHEAD entries ahead overlaps the
# cache misses that bound these kernels.

cdef extern from *:
    """
    #define SRCAD_PREFETCH(addr) __builtin_prefetch((const void *)(addr), 0, 1)
    #define SRCAD_PREFETCH_W(addr) __builtin_prefetch((const void *)(addr), 1, 1)
    """
    void SRCAD_PREFETCH(const void* addr) noexcept nogil
    void SRCAD_PREFETCH_W(const void* addr) noexcept nogil

cdef enum:
    PREFETCH_AHEAD = 12
    CACHE_LINE = 64


cdef inline void prefetch_bytes(const void* start, Py_ssize_t nbytes) noexcept nogil:
    """Prefetch the cache lines of nbytes from start (at most 8 lines: a row's head)."""
    cdef const char* b = <const char*>start
    cdef const char* end = b + min(nbytes, 8 * CACHE_LINE)
    while b < end:
        SRCAD_PREFETCH(b)
        b += CACHE_LINE


cdef inline void prefetch_bytes_w(void* start, Py_ssize_t nbytes) noexcept nogil:
    """prefetch_bytes for lines about to be written."""
    cdef char* b = <char*>start
    cdef char* end = b + min(nbytes, 8 * CACHE_LINE)
    while b < end:
        SRCAD_PREFETCH_W(b)
        b += CACHE_LINE

"""Output buffers for the kernels, reused once the caller drops them.

A kernel's large output (a 200,000 x 32 product is 51 MB) is above glibc's largest mmap
threshold (32 MiB, see _malloc.py), so numpy's allocation is a fresh mmap: the kernel then
faults in and zeroes every page, which measured 7-9 ms of a 35 ms sparse product here, and the
block is unmapped again when the array dies. Here such an output is carved from a block that
goes back to a small pool when the last array viewing it dies, and the next output of about
the same size reuses its pages warm. Outputs below the threshold come from numpy directly (glibc
already reuses those).

The pool keeps at most SRCAD_POOL_BYTES of idle blocks (default: 1 GiB or an eighth of the
machine's memory, whichever is smaller; 0 turns the pool off); the oldest idle block goes first.
"""
import os
import sys
import threading

import numpy as np

MIN_BYTES = 32 * 2**20          # below this glibc's heap already reuses freed blocks
_GRAIN = 2 * 2**20              # block sizes are whole huge pages


def _default_limit():
    env = os.environ.get("SRCAD_POOL_BYTES", "").strip()
    if env:
        return max(0, int(env))
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 8 * 2**30
    return min(2**30, ram // 8)


_limit = _default_limit()
_idle = []                      # idle blocks (1-D uint8 arrays), oldest first
_lock = threading.RLock()       # reentrant: a block can come back (a __del__) while the lock is held


class _Lease:
    """The base object of a pooled output: returns its block to the pool when the last array
    that views it dies."""
    __slots__ = ("block", "__array_interface__")

    def __init__(self, block, shape, dtype):
        self.block = block
        self.__array_interface__ = {"shape": tuple(shape), "typestr": dtype.str, "version": 3,
                                    "data": (block.ctypes.data, False)}

    def __del__(self):
        if _give_back is not None:      # not during interpreter teardown
            _give_back(self.block)


def empty(shape, dtype):
    """An uninitialised C-contiguous array: from the pool when it is large, else np.empty."""
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    if nbytes < MIN_BYTES or _limit == 0 or dtype.hasobject:
        return np.empty(shape, dtype)
    return np.asarray(_Lease(_take(nbytes), shape, dtype))


def unshared(a):
    """Whether a is not a view of another array's memory: a owns it (base None), or a is the one
    array on a pooled block. (Views *of* a show in a's reference count, as for any array.)"""
    base = a.base
    return base is None or (type(base) is _Lease and sys.getrefcount(base) <= 3)


def _take(nbytes):
    size = -(-nbytes // _GRAIN) * _GRAIN
    with _lock:
        best = None
        for k, block in enumerate(_idle):    # the smallest idle block that fits, wasting < 25%
            if size <= block.nbytes <= size + size // 4 and (best is None or block.nbytes < _idle[best].nbytes):
                best = k
        if best is not None:
            return _idle.pop(best)
    return np.empty(size, np.uint8)


def _give_back(block):
    with _lock:
        if block.nbytes > _limit:
            return
        _idle.append(block)
        total = sum(b.nbytes for b in _idle)
        while total > _limit:
            total -= _idle.pop(0).nbytes


def idle_bytes():
    """Bytes of idle blocks the pool holds."""
    with _lock:
        return sum(b.nbytes for b in _idle)


def clear():
    """Hand every idle block back to the allocator."""
    with _lock:
        _idle.clear()


def _after_fork_in_child():
    """A fork while another thread held the lock would leave it held forever in the child."""
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

"""fusecheck: what the fused loops of fuse.py need at run time: which math functions may be fused
(NumPy's array loop gives the C library's bits on this machine), the size thresholds, and the
Cython text of the module-level checks (the arrays' shape and layout, in-place safety, the thread
count) that the generated code calls before a fused loop."""
import math

import numpy as np


def _agrees(name):
    """Whether NumPy's float64 array loop of name gives the C library's results (math.* calls it) on
    this machine: NumPy builds with AVX-512 use their own exp/log, whose last bits can differ."""
    xs = np.linspace(0.01, 40.0, 301)
    mf = getattr(math, name)
    return bool(np.array_equal(getattr(np, name)(xs), np.array([mf(float(v)) for v in xs])))


FUSE_LIBM = {k: v for k, v in {"exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "sqrt": "sqrt"}.items()
             if _agrees(k)}
FUSE_PARALLEL = 1 << 16      # arrays above this many numbers: prange over SRCAD_FUSE_THREADS threads
FUSE_MIN = 1 << 15           # arrays below this many numbers: the NumPy lines (in cache, a loop saves little and its set-up costs)
_CHECK = "_srcad_fusable"
_NP = "_srcad_np"
_FLAT = "_srcad_flat"
_SHAPE = "_srcad_shape"
_THREADS = "_srcad_threads"
_NDARRAY = "_srcad_ndarray"
_APART = "_srcad_in_place_ok"
RESERVED = (_CHECK, _NP, _FLAT, _SHAPE, _THREADS, _NDARRAY, _APART, "_srcad_size", "_srcad_os", "openmp")

CHECK_TEXT = f'''

import numpy as {_NP}
import os as _srcad_os
from cython.parallel cimport prange
cimport openmp

cdef type {_NDARRAY} = {_NP}.ndarray

# the threads of a fused loop above {FUSE_PARALLEL} numbers: SRCAD_FUSE_THREADS (0: OpenMP's count,
# OMP_NUM_THREADS or the cores); 1 when unset (on a machine whose cores are busy, OpenMP's waiting
# threads cost more than they give)
cdef int {_THREADS} = int(_srcad_os.environ.get("SRCAD_FUSE_THREADS", "1").strip() or "1")
if {_THREADS} <= 0:
    {_THREADS} = openmp.omp_get_max_threads()


def {_CHECK}(Py_ssize_t known, tuple needs, *values):
    """The shape every array among values shares (each a C-contiguous float64 ndarray, ndim >= 1,
    of at least {FUSE_MIN} numbers; the first `known` values must be arrays, the others may be
    Python or NumPy float64 numbers, read as that number at every place), or None. needs: per
    statement, the values of which one at least must be an array (else NumPy gives a number)."""
    shape = None
    arr = []
    for j, a in enumerate(values):
        if type(a) is {_NP}.ndarray:
            if a.dtype.char != "d" or not a.flags.c_contiguous or a.ndim == 0 or a.size < {FUSE_MIN}:
                return None
            if shape is None:
                shape = a.shape
            elif a.shape != shape:
                return None
            arr.append(True)
        elif j >= known and (type(a) is float or type(a) is {_NP}.float64):
            arr.append(False)
        else:
            return None
    for need in needs:
        if not any(arr[j] for j in need):
            return None
    return shape


def {_APART}(t, others):
    """Whether the array t may be written in place by a fused loop: writable, and no other operand
    an array in its memory (the loop reads each number just before it writes that number; another
    view of the memory could be read after a write NumPy makes later)."""
    if not t.flags.writeable:
        return False
    for a in others:
        if type(a) is {_NP}.ndarray and {_NP}.may_share_memory(a, t):
            return False
    return True


def {_FLAT}(v, shape):
    """v's numbers as one row: an array's own (C order), or a number repeated (stride 0)."""
    if type(v) is {_NP}.ndarray:
        return v.reshape(-1)
    return {_NP}.broadcast_to({_NP}.float64(v), (_srcad_size(shape),))


cdef Py_ssize_t _srcad_size(tuple shape):
    cdef Py_ssize_t n = 1
    for d in shape:
        n *= d
    return n
'''

"""srcad's own matrix products on one BLAS thread when they are small for threads.

Why: OpenBLAS (the BLAS in numpy's and scipy's wheels) splits a product of more than about 2.6e5
multiply-adds among its threads (a matrix-vector product above about 9,000), and those threads
wait for each other after every block of the contraction. Where the machine has more runnable
threads than cores, the thread not running makes the others wait up to a scheduler time slice at
each of those points. Measured on 2 cores at load 6-7: (8 x 10^4) @ (10^4 x 100), the adjoint of a
distance matrix's product, 1.3-10 ms on one thread and 166-470 ms on two; a 128 x 16,392 matrix-
vector product 0.8 ms against 20 ms; a stack of 100 products (64 x 1,000) @ (1,000 x 64) 82 ms
against 8.2 s. On an idle machine the second thread saves at most half of what one thread takes.

So srcad runs a product on one BLAS thread when each BLAS call in it does fewer than
BLAS_SERIAL_WORK multiply-adds or writes fewer than BLAS_SERIAL_OUT numbers (a long contraction to a
small result: many waits, little work between them), and leaves BLAS's thread count alone otherwise.
The thread count is OpenBLAS's, set and restored through its C API by ctypes: it is process-wide,
so a BLAS call another Python thread makes meanwhile may also run on one thread (slower, never
different). Where no OpenBLAS with its own threads is loaded (MKL, Accelerate, an OpenMP build of
OpenBLAS, a platform without /proc/self/maps) nothing changes. One thread or several give the same
bits in OpenBLAS's products (threads split the rows and columns, not the sums).

Tunables (read through srcad._kernels when a product runs): BLAS_SERIAL_WORK, BLAS_SERIAL_OUT;
BLAS_SERIAL_WORK = 0 turns the mechanism off.
"""
import ctypes
import os

import numpy as np

from .. import _kernels as K  # the package: its tunables are read at each call

# OpenBLAS's own thresholds: below this many multiply-adds a matrix-vector product runs on one
# thread anyway (and a product whose operands' sizes multiply to less does fewer), and below
# GEMM_MIN_WORK a matrix product does
MIN_WORK = 9216
GEMM_MIN_WORK = 262144
_BLAS_TYPES = frozenset("fdFD")
# the (get, set) pair of symbols an OpenBLAS exports, by how it was built
_SYMBOLS = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_", "scipy_openblas_get_parallel64_"),
            ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads", "scipy_openblas_get_parallel"),
            ("openblas_get_num_threads64_", "openblas_set_num_threads64_", "openblas_get_parallel64_"),
            ("openblas_get_num_threads", "openblas_set_num_threads", "openblas_get_parallel"))
_state = {"found": False, "get": None, "set": None}


def _loaded_openblas():
    """Paths of the OpenBLAS libraries mapped into this process (Linux); numpy's first."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "openblas" in line.lower() and "/" in line}
    except (OSError, IndexError):
        return []
    paths = sorted(p for p in paths if os.path.basename(p).lower().startswith(("libopenblas", "libscipy_openblas")))
    # numpy's wheel keeps its BLAS in numpy.libs; else a system OpenBLAS before scipy's wheel's own
    return sorted(paths, key=lambda p: ("numpy" not in os.path.basename(os.path.dirname(p)),
                                        "scipy_openblas" in os.path.basename(p)))


def _controls():
    """(get, set) of numpy's OpenBLAS thread count, or (None, None): found once per process."""
    if not _state["found"]:
        _state["found"] = True
        for path in _loaded_openblas()[:1]:
            try:
                lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | getattr(os, "RTLD_LAZY", 0))
            except OSError:
                continue
            for get_name, set_name, par_name in _SYMBOLS:
                get, set_, par = (getattr(lib, n, None) for n in (get_name, set_name, par_name))
                if get is None or set_ is None or par is None:
                    continue
                get.restype, get.argtypes = ctypes.c_int, []
                par.restype, par.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                if par() == 1:                  # pthreads (0: sequential build; 2: OpenMP's threads)
                    _state["get"], _state["set"] = get, set_
                break
    return _state["get"], _state["set"]


def serial(work, out, floor=MIN_WORK):
    """Should a BLAS call of `work` multiply-adds writing `out` numbers run on one thread? (Below
    `floor` BLAS does so itself: nothing to set.)"""
    return K.BLAS_SERIAL_WORK > 0 and floor <= work and (work < K.BLAS_SERIAL_WORK or out < K.BLAS_SERIAL_OUT)


def one_thread(fn, *args):
    """fn(*args) with numpy's OpenBLAS on one thread (its count restored after)."""
    get, set_ = _controls()
    if get is None:
        return fn(*args)
    before = get()
    if before <= 1:
        return fn(*args)
    set_(1)
    try:
        return fn(*args)
    finally:
        set_(before)


def matmul(x, y):
    """x @ y (numpy arrays of at least one axis each), on one BLAS thread when each matrix product
    in it is small for threads (see the module's note)."""
    if x.dtype.char not in _BLAS_TYPES or y.dtype.char not in _BLAS_TYPES or x.ndim == 0 or y.ndim == 0:
        return x @ y
    k = x.shape[-1]
    m = x.shape[-2] if x.ndim > 1 else 1
    n = y.shape[-1] if y.ndim > 1 else 1
    if serial(m * n * k, m * n, MIN_WORK if m == 1 or n == 1 else GEMM_MIN_WORK):
        return one_thread(np.matmul, x, y)
    return x @ y


def call(fn, work, out, *args):
    """fn(*args), a BLAS product of `work` multiply-adds writing `out` numbers per BLAS call, on one
    BLAS thread when that is small for threads."""
    if serial(work, out):
        return one_thread(fn, *args)
    return fn(*args)


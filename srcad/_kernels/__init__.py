"""srcad's compiled kernels behind plain-numpy functions.

Each function takes numpy arrays (or anything np.asarray accepts), converts them to
C-contiguous arrays of one float dtype (float32 or float64) and one index dtype (int32 or
int64), and calls a Cython kernel with the thread count set here. No kernel uses atomics: every
output element is summed by one thread in a fixed order, so results are bit-identical for any
thread count. Integer indices may be negative and wrap as in numpy.
"""
import os

from . import _malloc

# srcad changes nothing process-wide unless asked to (srcad.tune_memory(), or SRCAD_TUNE_MEMORY=1
# in the environment, which also does what only the environment can: idle OpenMP threads sleep
# instead of spinning, OMP_WAIT_POLICY=PASSIVE, read when the OpenMP runtime loads just below).
if _malloc.requested():
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _malloc.tune()

import numpy as np  # noqa: E402,F401  (numpy loads after the tuning above)


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
    "segment_reduce", "segment_reduce_vjp", "running_sums",
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

from .args import IndexInputError, index_error  # noqa: E402,F401  (an index out of range in an argument)

_FAILURES = {1: (IndexError, "index out of range"),
             2: (ValueError, "row/column pointer is not monotone within the stored entries")}


# Tunables, read through this package when a wrapper runs (setting srcad._kernels.PANEL_BYTES reaches
# csr_panel_plan). A's long rows go through X in panels of about PANEL_BYTES (a core's L2 cache)
# when X is at least PANEL_MIN_X bytes (a smaller X stays in the caches anyway).
PANEL_BYTES = 1 << 20
PANEL_MIN_X = 8 << 20
PANEL_MIN_ROW = 128

# Below this many multiply-adds (or entries read) a kernel runs on the calling thread alone:
# waking a second thread costs microseconds on an idle machine and up to a scheduler time slice
# on a busy one, more than such a kernel's whole work. (The bits are the same either way.)
SERIAL_WORK = 1 << 16
# numpy's BLAS runs srcad's matrix products on one thread below this many multiply-adds per BLAS
# call, or when a call writes fewer than BLAS_SERIAL_OUT numbers (blas.py says why; 0: off)
BLAS_SERIAL_WORK = 1 << 25
BLAS_SERIAL_OUT = 1 << 16


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


def _check(status, name):
    if status:
        exc, what = _FAILURES[status]
        raise exc(f"srcad._kernels.{name}: {what}")


# ----------------------------------------------------------------------------- the wrappers
# (each reads the builds above and the tunables through this package when it runs)

from .rows import (add_into, gather_matvec, gather_rows, outer, scatter_add_outer_into,  # noqa: E402
                   scatter_add_rows, scatter_add_rows_into)
from .csr import (PanelPlan, csr_matmul, csr_matmul_t, csr_panel_plan, csr_transpose_index,  # noqa: E402,F401
                  sddmm)
from . import blas  # noqa: E402,F401  (srcad's products on one BLAS thread when small for threads)
from .reductions import (csr_col_reduce, csr_col_reduce_vjp, csr_row_reduce, csr_row_reduce_vjp,  # noqa: E402
                         fingerprint, running_sums, segment_reduce, segment_reduce_vjp)

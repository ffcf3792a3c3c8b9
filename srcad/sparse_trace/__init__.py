"""Jacobian sparsity by tracing: the generated tangent code run once with a tangent whose entries
are the sets of input entries they depend on, held as one boolean sparse matrix per array
(vectorised: a NumPy/SciPy operation per tangent operation, not a Python object per entry).
srcad/sparsity.py uses it first and falls back to its exact per-entry sweep (`Deps` in object
arrays) when the code does anything the tracer has no rule for.

  rows.py       dependency rows: canonical boolean CSR matrices, moved by 1-based positions
                (0: no dependency), unions, grouped unions (reductions), running unions (cumsum)
  tracer.py     Trace (a tangent of dependency rows), its ufunc rules, TraceUnsupported
  functions.py  the NumPy functions' rules: moves on positions, reductions, contractions
"""
import numpy as np

from . import rows as _rows
from .tracer import Trace, TraceUnsupported, broadcast
from .functions import trace_array

__all__ = ["Trace", "TraceUnsupported", "trace_array", "trace_pattern"]


def trace_pattern(jvp_call, x):
    """(y, rows, cols, m, n): the Jacobian's structural nonzeros (row-major, columns sorted within
    a row) from one sweep v -> (y, tangent) of the tangent code with a Trace as v."""
    n = int(np.size(x))
    y, y_dot = jvp_call(Trace(np.shape(x), _rows.identity(n)))
    m = int(np.size(y))
    if isinstance(y_dot, Trace):
        M = broadcast(y_dot, np.shape(y)).rows
    elif isinstance(y_dot, (float, int, np.generic)) or isinstance(y_dot, np.ndarray) and not y_dot.dtype.hasobject:
        M = _rows.empty(m, n)        # a tangent that no input entry reaches
    else:
        raise TraceUnsupported(f"the tangent code returned a {type(y_dot).__name__}, not a traced tangent")
    counts = np.diff(M.indptr)
    rows = np.repeat(np.arange(m, dtype=np.int64), counts)
    return y, rows, np.asarray(M.indices, dtype=np.int64), m, n

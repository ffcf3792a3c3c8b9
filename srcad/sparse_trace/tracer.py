"""Trace: a tangent whose every entry is the set of input entries it depends on, held for the
whole array at once as one boolean CSR matrix (srcad/sparse_trace/rows.py), pushed through the
generated tangent code in place of a float tangent.

Tangent code is linear in its tangents: it adds them, scales them by primal values, and moves,
gathers, reduces and contracts them. Each operation has a structural rule (the entries of the
result depend on the union of the entries of the operands it reads), and the rules ignore the
primal values (a factor that happens to be 0 keeps its dependency), so the pattern is a
superset of the numerically nonzero one at the point traced. Deny by default: a ufunc or NumPy
function without a rule here, a conversion to a plain array or a number, a comparison, a write
through `out=`, all raise TraceUnsupported, and detection falls back to the exact index-set sweep
(srcad.sparsity.Deps) -- nothing unknown is ever taken as identity or constant.
"""
import numbers

import numpy as np
import scipy.sparse as sp

from . import rows as R


class TraceUnsupported(TypeError):
    """An operation the sparsity tracer has no rule for (detection then uses srcad.sparsity.Deps)."""


# ufuncs the tangent code applies to tangents, each entry of the result depending on the entries
# of every traced operand it is computed from (after broadcasting): sums, differences, scalings
_ELEMENTWISE = frozenset({np.add, np.subtract, np.multiply, np.true_divide, np.divide, np.negative,
                          np.positive, np.conjugate})

_HANDLERS = {}          # NumPy function -> rule (srcad/sparse_trace/functions.py fills it)

_FLOAT = np.dtype(np.float64)


class Trace:
    """The dependency sets of a tangent of shape `shape` (see the module docstring): row k of
    `rows` (a canonical boolean csr_array, one row per entry in C order, one column per input
    entry) marks the input entries that entry k depends on. A Trace is never changed in place
    except by `__setitem__` on a value the tangent code owns (a fresh copy, srcad.runtime.set_at)."""

    __slots__ = ("shape", "rows")
    __array_priority__ = 60.0
    __hash__ = None             # unhashable, as an ndarray is

    def __init__(self, shape, rows):
        self.shape = tuple(int(d) for d in shape)
        self.rows = rows
        if rows.shape[0] != int(np.prod(self.shape, dtype=np.int64)):
            raise ValueError("a trace's rows do not match its shape")

    # -- what it looks like --------------------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return self.rows.shape[0]

    @property
    def dtype(self):
        return _FLOAT

    @property
    def T(self):
        return np.transpose(self)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d traced tangent")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced tangent")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self):
        return f"Trace(shape={self.shape}, nnz={self.rows.nnz})"

    # -- what it refuses: values, truth, comparisons -----------------------------------------------
    def __array__(self, *args, **kwargs):
        raise TraceUnsupported("a traced tangent was converted to a plain array")

    def _refuse(self, *args, **kwargs):
        raise TraceUnsupported("a traced tangent was used as a number, a truth value or in a comparison")

    __float__ = __int__ = __index__ = __bool__ = __complex__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    item = tolist = _refuse

    # -- moving entries: the rules act on positions (srcad/sparse_trace/rows.py) -----------------
    def moved(self, pos):
        """The trace whose entries are this one's at the 1-based positions pos (0: no dependency)."""
        pos = np.asarray(pos)
        if pos.dtype.kind not in "iu":
            raise TraceUnsupported("positions moved into a non-integer array")
        return Trace(pos.shape, R.take(self.rows, pos))

    def __getitem__(self, idx):
        if _has_trace(idx):
            raise TraceUnsupported("a traced tangent used as an index")
        return self.moved(R.positions(self.shape)[idx])

    def __setitem__(self, idx, value):
        """self[idx] = value: the entries written take value's dependencies (none for a plain
        value: a constant), the others keep theirs; NumPy's assignment decides which entry is written
        and by what (broadcasting, repeated indices)."""
        if _has_trace(idx):
            raise TraceUnsupported("a traced tangent used as an index")
        pos = R.positions(self.shape)
        if isinstance(value, Trace):
            pos[idx] = R.positions(value.shape) + self.size      # rows of value, stacked below self's
            stacked = R.canonical(_vstack(self.rows, value.rows))
            self.rows = R.take(stacked, pos)
        elif _is_number_or_array(value):
            pos[idx] = 0
            self.rows = R.take(self.rows, pos)
        else:
            raise TraceUnsupported(f"a {type(value).__name__} written into a traced tangent")

    # -- methods tangent code calls ------------------------------------------------------------------
    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return np.reshape(self, shape, order=order)

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    flatten = ravel

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) or axes == (None,) else axes
        return np.transpose(self, axes or None)

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def swapaxes(self, a, b):
        return np.swapaxes(self, a, b)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def cumsum(self, axis=None, dtype=None, out=None):
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def dot(self, other):
        return np.dot(self, other)

    def astype(self, dtype, *args, **kwargs):
        if np.dtype(dtype).kind not in "fc":
            raise TraceUnsupported(f"a traced tangent cast to {np.dtype(dtype)}")
        return Trace(self.shape, self.rows)

    def copy(self, order="C"):
        return Trace(self.shape, self.rows)

    def zeros_of_kind(self, shape):
        """A zero tangent of the given shape, as a trace (no entry depends on anything)."""
        return Trace(shape, R.empty(int(np.prod(shape, dtype=np.int64)), self.rows.shape[1]))

    # -- arithmetic: through the ufuncs --------------------------------------------------------------
    def __add__(self, o): return np.add(self, o)
    def __radd__(self, o): return np.add(o, self)
    def __sub__(self, o): return np.subtract(self, o)
    def __rsub__(self, o): return np.subtract(o, self)
    def __mul__(self, o): return np.multiply(self, o)
    def __rmul__(self, o): return np.multiply(o, self)
    def __truediv__(self, o): return np.true_divide(self, o)
    def __rtruediv__(self, o): return np.true_divide(o, self)
    def __neg__(self): return np.negative(self)
    def __pos__(self): return np.positive(self)
    def __matmul__(self, o): return np.matmul(self, o)
    def __rmatmul__(self, o): return np.matmul(o, self)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__" and not kwargs:
            return _HANDLERS[np.matmul](*inputs)
        if method == "outer" and ufunc in _ELEMENTWISE and len(inputs) == 2 and not kwargs:
            a, b = inputs           # (np.multiply.outer: every pair of entries)
            na, nb = np.ndim(a), np.ndim(b)
            return elementwise([_expand(a, np.shape(a) + (1,) * nb), _expand(b, (1,) * na + np.shape(b))])
        if method != "__call__" or ufunc not in _ELEMENTWISE:
            raise TraceUnsupported(f"np.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
                                   + " has no sparsity-tracing rule")
        if set(kwargs) - {"dtype", "casting"} or kwargs.get("dtype") not in (None, float, np.float64, _FLOAT):
            raise TraceUnsupported(f"np.{ufunc.__name__} with {sorted(kwargs)} has no sparsity-tracing rule")
        return elementwise(inputs)

    def __array_function__(self, func, types, args, kwargs):
        handler = _HANDLERS.get(func)
        if handler is None:
            raise TraceUnsupported(f"np.{func.__name__} has no sparsity-tracing rule")
        return handler(*args, **kwargs)


def elementwise(inputs):
    """Each entry of the broadcast result depends on the matching (broadcast) entries of every traced
    input; plain inputs (primal values, constants) add no dependency."""
    for x in inputs:
        if not isinstance(x, Trace) and not _is_number_or_array(x):
            raise TraceUnsupported(f"a {type(x).__name__} in arithmetic with a traced tangent")
    shape = np.broadcast_shapes(*[x.shape if isinstance(x, Trace) else np.shape(x) for x in inputs])
    traced = [broadcast(x, shape).rows for x in inputs if isinstance(x, Trace)]
    return Trace(shape, R.union(traced))


def _expand(x, shape):
    """x reshaped to shape (size-1 axes added); a plain x by a free stand-in (only its shape is read)."""
    if isinstance(x, Trace):
        return np.reshape(x, shape)
    if not _is_number_or_array(x):
        raise TraceUnsupported(f"a {type(x).__name__} in arithmetic with a traced tangent")
    return np.broadcast_to(np.float64(0.0), shape)


def broadcast(t, shape):
    """t broadcast to shape (NumPy's rules)."""
    shape = tuple(shape)
    if t.shape == shape:
        return t
    return t.moved(np.broadcast_to(R.positions(t.shape), shape))


def _vstack(a, b):
    return sp.vstack([a, b], format="csr")


def _has_trace(idx):
    if isinstance(idx, Trace):
        return True
    return isinstance(idx, tuple) and any(isinstance(i, Trace) for i in idx)


def _is_number_or_array(x):
    return isinstance(x, (np.ndarray, np.generic, numbers.Number)) and not (
        isinstance(x, np.ndarray) and x.dtype.hasobject)

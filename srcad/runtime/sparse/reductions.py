"""Reductions of a sparse matrix and their derivatives: sums (scipy's own result types), max/min
over the stored entries (`srcad.sparse.reduce_max/min`), and segment reductions of rows."""
import weakref

import numpy as np
import scipy.sparse as sp

from ... import _kernels as K
from ...errors import InputError
from .. import pattern_cache as _pc
from .derivative import _cot, _own, _values_at
from .pattern import (_Groups, _buf, _entry_coords, _float_dtype, _is_zero, _require_format, check_pattern,
                      col_groups, merged, row_groups, unmerged)

__all__ = ["sparse_sum_vjp", "sum_jvp", "reduce", "reduce_vjp", "reduce_jvp", "segment", "segment_vjp", "segment_jvp"]


# ---- sums -------------------------------------------------------------------------------------
def _axis(axis, where="srcad: a sparse reduction"):
    """axis None, 0 or 1 (a tuple of both: None), checked: a clear error for anything else."""
    if axis is None:
        return None
    ok = (lambda a: isinstance(a, (int, np.integer)) and not isinstance(a, bool) and -2 <= a < 2)
    if isinstance(axis, tuple) and 1 <= len(axis) <= 2 and all(ok(a) for a in axis):
        if len({a % 2 for a in axis}) == 2:
            return None
        if len(axis) == 1:
            return axis[0] % 2
    elif ok(axis):
        return axis % 2
    raise InputError(f"{where}: axis={axis!r} is not an axis of a 2-D sparse matrix; use axis=None "
                     f"(every stored entry), axis=0 (one value per column) or axis=1 (one per row)")


def sparse_sum_vjp(g, A, axis=None):
    """Cotangent of A from that of A.sum(axis): one value per stored entry: g, g[row] or g[col]."""
    if _is_zero(g):
        return g
    axis = _axis(axis)
    dtype = np.result_type(_float_dtype(A.dtype), np.asarray(g).dtype)
    if axis is None:
        return _cot(A, np.full(A.data.shape, np.asarray(g).reshape(-1)[0], dtype))
    g = np.asarray(g).reshape(-1)
    rows, cols = _entry_coords(A)
    return _cot(A, np.take(g, cols if axis == 0 else rows).astype(dtype, copy=False))


def sum_jvp(x_dot, axis=None, keepdims=False):
    """Tangent of sum(x, axis): scipy's own sum for a sparse tangent (its result type), np.sum else."""
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x_dot):     # as scipy's x.sum(axis), without letting scipy canonicalise x_dot
        axis = _axis(axis)
        if axis is None:
            return np.sum(x_dot.data)
        rows, cols = _entry_coords(x_dot)
        n = x_dot.shape[1 - axis]
        out = np.bincount(cols if axis == 0 else rows, weights=x_dot.data, minlength=n).astype(
            _float_dtype(x_dot.dtype), copy=False)
        if isinstance(x_dot, sp.spmatrix):
            return np.matrix(out.reshape((1, n) if axis == 0 else (n, 1)))
        return out
    return np.sum(x_dot, axis=axis, keepdims=keepdims)


# ---- max/min over stored entries -----------------------------------------------------------------
_TIES = {}   # id(a result) -> (weakref to it, what its vjp needs: segment tie counts, positions)


def _remember(ans, counts):
    key = id(ans)
    try:
        ref = weakref.ref(ans, lambda _, key=key: _TIES.pop(key, None))
    except TypeError:
        return
    _TIES[key] = (ref, counts)


def _recall(ans):
    hit = _TIES.get(id(ans))
    if hit is not None and hit[0]() is ans:
        return hit[1]
    return None


def _reduce_groups(A, axis):
    axis = _axis(axis)
    if axis is None:
        nnz = len(A.data)
        return _Groups(np.array([0, nnz], np.int64), None, None, 1)
    return row_groups(A) if axis == 1 else col_groups(A)


def _group_reduce(grp, data, op):
    if grp.pos is None:
        return K.csr_row_reduce(grp.ptr, data, grp.n, op)
    return K.csr_col_reduce(grp.ptr, grp.pos, data, grp.n, op)


def reduce(A, axis, op, locate=False):
    """Max (op="max") or min of A's stored entries: a scalar (axis None), or a dense 1-D array with
    one entry per row (axis=1) or column (axis=0); an empty row/column gives -inf/+inf.
    `locate` (the generated code's forward sweep): where the groups are A's contiguous rows, keep
    the position of each one's extreme for reduce_vjp, which then needs no search."""
    where = f"srcad.sparse.reduce_{op}"
    _require_format(A, where)
    _axis(axis, where)
    check_pattern(A)
    A = merged(A)             # duplicates are one entry, their sum (as scipy's A.max)
    grp = _reduce_groups(A, axis)
    if locate and grp.pos is None and _axis(axis) is not None:
        vals, at = K.csr_row_reduce(grp.ptr, A.data, grp.n, op, locate=True)
        _remember(vals, _Located((at, _buf(A.data), op)))
        return vals
    vals = _group_reduce(grp, A.data, op)
    return vals[0] if _axis(axis) is None else vals


class _Located(tuple):
    """What reduce(..., locate=True) keeps for its result: (positions, A.data's buffer, op)."""


def reduce_vjp(g, A, ans, axis, op):
    """Cotangent of A from that of reduce(A, axis, op): g shared evenly among tied entries."""
    if _is_zero(g):
        return g
    A0, A = A, merged(A)
    grp = _reduce_groups(A, axis)
    vals = np.asarray(ans).reshape(-1)
    g = np.broadcast_to(np.asarray(g, dtype=_float_dtype(np.asarray(g).dtype)), (grp.n,))
    if grp.pos is None:
        kept = _recall(ans)
        at = None
        if (isinstance(kept, _Located) and kept[1] == _buf(A.data) and kept[2] == op
                and len(kept[0]) == grp.n):
            at = kept[0]
        gdata = K.csr_row_reduce_vjp(grp.ptr, A.data, vals, g, at)
    else:
        gdata = K.csr_col_reduce_vjp(grp.ptr, grp.pos, A.data, vals, g)
    return _cot(A0, _own(unmerged(gdata, A0)))


def reduce_jvp(A_dot, A, ans, axis, op):
    """Tangent of reduce(A, axis, op): the mean of the tied entries' tangents (0 for an empty group)."""
    if _is_zero(A_dot):
        return A_dot
    grp = _reduce_groups(A, axis)
    w = reduce_vjp(np.ones(grp.n), A, ans, axis, op).data * _values_at(A_dot, A)
    ax = _axis(axis)
    if ax is None:
        return np.sum(w)
    rows, cols = _entry_coords(A)
    return np.bincount(rows if ax == 1 else cols, weights=w, minlength=grp.n).astype(w.dtype, copy=False)


# ---- segment reductions ------------------------------------------------------------------------
def segment(data, segment_ids, num_segments, op):
    """sum/max/min of the rows of data by segment id; an empty segment gives 0/-inf/+inf."""
    out, counts = K.segment_reduce(data, segment_ids, int(num_segments), op)
    if op != "sum":
        _remember(out, counts)
    return out


def segment_vjp(g, data, segment_ids, ans, op):
    """Cotangent of data from that of segment(data, segment_ids, n, op)."""
    if _is_zero(g):
        return g
    g = np.broadcast_to(np.asarray(g), np.shape(ans))
    if op == "sum":
        return K.segment_reduce_vjp(data, segment_ids, None, None, g, "sum").reshape(np.shape(data))
    counts = _recall(ans)
    if not isinstance(counts, np.ndarray):
        _, counts = K.segment_reduce(data, segment_ids, len(ans), op)
    return K.segment_reduce_vjp(data, segment_ids, ans, counts, g, op)


def segment_jvp(data_dot, data, segment_ids, ans, op):
    """Tangent of segment(data, segment_ids, n, op): sums of tangents, or means over tied rows."""
    if _is_zero(data_dot):
        return data_dot
    data_dot = np.broadcast_to(np.asarray(data_dot), np.shape(data))
    if op != "sum":
        w = segment_vjp(np.ones(np.shape(ans)), data, segment_ids, ans, op)
        data_dot = w * data_dot
    return K.segment_reduce(data_dot, segment_ids, len(ans), "sum")[0]


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), __all__)

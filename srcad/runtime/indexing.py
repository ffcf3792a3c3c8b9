"""Subscripts: reads (`x[idx]`, row gathers through the parallel kernel, namedtuple fields),
writes (`y[idx] = v`), and their adjoints and tangents; repeated indices add up."""
import sys

import numpy as np
import scipy.sparse as sp

from .. import _kernels
from ..errors import SrcadError
from . import shapes
from .accumulate import _SOLE, _sole, add, zeros_like
from .products import matmul, matmul_vjp_x
from .rowsparse import RowSparse
from .sparse.structure import index_jvp as sparse_index_jvp
from .sparse.structure import index_vjp as sparse_index_vjp
from .values import _KERNEL_FLOATS, _float_dtype, _is_map, _is_namedtuple, _is_seq, _is_zero, _plain, _zeros_of_kind


def _is_row_gather(x, idx):
    return (isinstance(x, np.ndarray) and x.ndim >= 2 and isinstance(idx, np.ndarray)
            and idx.ndim == 1 and np.issubdtype(idx.dtype, np.integer))



def _is_basic(idx):
    parts = idx if isinstance(idx, tuple) else (idx,)
    return all(isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts)



def getitem(x, idx):
    """x[idx]; a gather of many rows of a C-contiguous array by an integer array runs as a
    parallel row copy (the same values as numpy's fancy indexing)."""
    if (type(idx) is np.ndarray and type(x) is np.ndarray and idx.ndim == 1 and x.ndim >= 2
            and idx.size >= 1024 and idx.dtype.kind in "iu" and x.flags.c_contiguous
            and not x.dtype.hasobject):
        return _kernels.gather_rows(x, idx)
    return x[idx]



def index_vjp(g, x, idx):
    """Cotangent of x from that of x[idx]: repeated indices add up; a row gather stays RowSparse."""
    tg = type(g)
    if type(x) is np.ndarray and x.dtype is _F64 and \
            (tg is np.ndarray and g.dtype is _F64 or (tg is float or tg is np.float64) and g != 0):
        kind = _index_kind(idx, x)      # plain float64 arrays, the common case first
        if kind is not None:
            return _written(x, idx, g, kind)
    if _is_zero(g):
        return g
    if sp.issparse(x):
        return sparse_index_vjp(g, x, idx)
    if _is_map(x):
        return {idx: g}
    if _is_seq(x):
        out = [0.0] * len(x)
        if isinstance(idx, slice):
            for k, gk in zip(range(*idx.indices(len(x))), g):
                out[k] = gk
        else:
            out[idx] = g
        return out
    if _is_row_gather(x, idx):
        idx = np.where(idx < 0, idx + x.shape[0], idx)
        return RowSparse(idx, np.broadcast_to(g, (len(idx),) + x.shape[1:]), x.shape)
    out = _zeros_of_kind(g, np.shape(x), np.result_type(_float_dtype(x), getattr(g, "dtype", np.float64)))
    if _is_basic(idx):
        out[idx] = g        # ints and slices never repeat an entry
    else:
        np.add.at(out, idx, g)
    return out



def index_jvp(x_dot, x, idx):
    """Tangent of x[idx]."""
    if type(x_dot) is np.ndarray and type(x) is np.ndarray and x_dot.shape == x.shape and \
            (type(idx) is int or type(idx) is slice):
        # the common case first: a tangent of x's own shape, read at an int or a slice (no copy;
        # a view is made read-only, as the broadcast view below is)
        out = x_dot[idx]
        if type(out) is np.ndarray:
            out.flags.writeable = False
        return out
    if _is_zero(x_dot):
        return x_dot
    if sp.issparse(x):
        return sparse_index_jvp(x_dot, x, idx)
    if _is_map(x_dot) and idx not in x_dot:    # a dict's tangent holds only the keys something reached
        return zeros_like(x[idx])
    if _is_seq(x_dot) or _is_map(x_dot):
        return x_dot[idx]
    return np.broadcast_to(x_dot, np.shape(x))[idx]



def index_matmul_vjp(g, y, E, idx):
    """index_vjp(matmul_vjp_x(g, x, y), E, idx) with x = E[idx], fused: the cotangent of a row
    gather that fed x @ y with a vector y stays factored (row k is g[k] * y) until it is read.
    matmul_vjp_x reads only x's shape, so x is not kept: the fallback gathers it again."""
    if (_is_row_gather(E, idx) and type(g) is np.ndarray and type(y) is np.ndarray and g.ndim == 1
            and y.ndim == 1 and E.ndim == 2 and g.shape == idx.shape and y.shape == E.shape[1:]):
        return RowSparse.outer(np.where(idx < 0, idx + E.shape[0], idx), g, y, E.shape)
    return index_vjp(matmul_vjp_x(g, getitem(E, idx), y), E, idx)



def getitem_matmul(x, idx, y):
    """matmul(getitem(x, idx), y), fused: a gather of many rows of a 2-D float array times a
    vector runs as one parallel kernel that never forms the gathered rows."""
    if (type(x) is np.ndarray and type(y) is np.ndarray and type(idx) is np.ndarray
            and x.ndim == 2 and y.ndim == 1 and idx.ndim == 1 and idx.dtype.kind in "iu"
            and idx.size >= 1024 and x.dtype == y.dtype and x.dtype in _KERNEL_FLOATS
            and y.shape[0] == x.shape[1] and x.flags.c_contiguous):
        return _kernels.gather_matvec(x, idx, y)
    return matmul(getitem(x, idx), y)



def _field_index(x, name, where):
    if _is_namedtuple(x) and name in type(x)._fields:
        return type(x)._fields.index(name)
    raise SrcadError(f"{where}: srcad cannot differentiate `.{name}` of a {type(x).__name__}: the attributes it "
                     f"differentiates are the fields of a namedtuple and those of arrays it has rules for. "
                     f"Hold the values in a namedtuple, a dict or a list (a pytree), or pass them as arguments.")



def field_vjp(g, x, name, where=""):
    """Cotangent of a namedtuple x from that of its field x.<name> (read at `where` in the user's code)."""
    k = _field_index(x, name, where)
    return g if _is_zero(g) else index_vjp(g, x, k)



def field_jvp(x_dot, x, name, where=""):
    """Tangent of the field x.<name> of a namedtuple x."""
    k = _field_index(x, name, where)
    return x_dot if _is_zero(x_dot) else x_dot[k]



def index_bar(y_bar, idx):
    """The part of y's cotangent that a write `y[idx] = v` sends to v."""
    if _is_zero(y_bar):
        return y_bar
    if _is_map(y_bar):
        return y_bar.get(idx, 0.0)
    if isinstance(y_bar, RowSparse):
        y_bar = y_bar.todense()
    part = y_bar[idx]
    won = landed(np.shape(y_bar), idx)
    if won is not None:
        part = part * won
    return part


def _fancy(idx):
    """Does idx hold an integer array or list (which may name one entry twice)?"""
    parts = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(p, (list, np.ndarray)) and np.asarray(p).dtype.kind in "iuO" for p in parts)


def landed(shape, idx):
    """For a write `y[idx] = v` into y of this shape: a bool array of y[idx]'s shape, True where
    that write lands, False where a later position of the same write names the same entry and
    overwrites it (None: every position lands). NumPy itself is asked, by the same assignment
    of position numbers, so its rule (the last one stays) holds whatever the index's form."""
    if not _fancy(idx):
        return None
    probe = np.full(shape, -1, dtype=np.intp)
    n = probe[idx].shape
    order = np.arange(int(np.prod(n)), dtype=np.intp).reshape(n)
    probe[idx] = order
    won = probe[idx] == order
    return None if won.all() else won



def zero_at(y_bar, idx):
    """y's cotangent with the entries overwritten by `y[idx] = v` cleared (in place when only the
    caller's variable holds it, else in a copy)."""
    refs = sys.getrefcount(y_bar)
    if _is_zero(y_bar):
        return y_bar
    if _is_map(y_bar):
        return {**y_bar, idx: 0.0}
    if _is_seq(y_bar):
        out = list(y_bar)
        if isinstance(idx, slice):
            for k in range(*idx.indices(len(out))):
                out[k] = 0.0
        else:
            out[idx] = 0.0
        return out
    out = y_bar if _sole(y_bar, refs) else (np.array(y_bar, copy=True) if _plain(y_bar) else y_bar.copy())
    out[idx] = 0
    return out



_F64 = np.dtype(np.float64)
_BASIC, _ADVANCED, _DISTINCT = 0, 1, 2      # what an index is, for add_at's plain-array path
_DISTINCT_MIN = 64      # below this many gathered entries, np.add.at costs what proving distinctness does


def _index_kind(idx, x):
    """For x[idx] with x a plain array: _BASIC (ints and slices: no entry twice), _DISTINCT (one
    advanced part, provably naming no entry twice: a boolean mask, or an integer array, large
    enough to be worth the check, strictly monotone on one side of zero), _ADVANCED (integer
    arrays that may repeat), or None (any other index: lists, a bare integer array gathering rows
    (a RowSparse cotangent), scalars of other types; the general path)."""
    t = type(idx)
    if t is tuple:
        kind = _BASIC
        for p in idx:
            tp = type(p)
            if tp is int or tp is slice:
                continue
            if tp is np.ndarray:
                k = p.dtype.kind
                if k == "b" and kind == _BASIC:
                    kind = _DISTINCT
                elif k == "i" or k == "u" or k == "b":      # a second advanced part: its pairs may repeat
                    kind = _ADVANCED if kind != _BASIC or p.size < _DISTINCT_MIN or not _distinct(p) else _DISTINCT
                else:
                    return None
            elif not (p is None or p is Ellipsis or isinstance(p, np.integer)):
                return None
        return kind
    if t is int or t is slice or isinstance(idx, np.integer):
        return _BASIC
    if t is np.ndarray and (idx.dtype.kind == "b" or idx.dtype.kind in "iu" and x.ndim == 1):
        return _DISTINCT if _distinct(idx) else _ADVANCED
    return None


def _distinct(p):
    """Does the index array p name each entry of its axis at most once? True only when proven:
    a boolean mask, or integers strictly increasing (or decreasing) all >= 0 or all < 0 (those
    two ranges map one to one onto the axis). Small arrays are not checked (False)."""
    if p.dtype.kind == "b":
        return True
    if p.size < _DISTINCT_MIN:
        return False
    q = p.ravel()
    step = q[1:] > q[:-1]
    if not step.all():
        step = q[1:] < q[:-1]
        if not step.all():
            return False
    lo, hi = (q[0], q[-1]) if q[0] <= q[-1] else (q[-1], q[0])
    return bool(lo >= 0 or hi < 0)


def _written(x, idx, g, kind):
    """The float64 cotangent of x from g, that of x[idx]: zeros with g written at idx (added up
    by np.add.at where idx may name an entry twice)."""
    out = np.zeros(x.shape)
    if kind == _ADVANCED:
        np.add.at(out, idx, g)
    else:
        out[idx] = g
    return out


def add_at(x_bar, x, idx, g):
    """x_bar + (the cotangent of x from that of x[idx]), without materialising the latter:
    in place when only the caller's variable holds x_bar."""
    refs = sys.getrefcount(x_bar)
    tg = type(g)
    if type(x) is np.ndarray and x.dtype is _F64 and \
            (tg is np.ndarray and g.dtype is _F64 or (tg is float or tg is np.float64) and g != 0):
        # plain float64 arrays (the common case first): a fresh zero array with g written, or g
        # added into the x_bar this call owns; np.add.at where an entry may be named twice
        kind = _index_kind(idx, x)
        if kind is not None:
            tb = type(x_bar)
            if tb is np.ndarray:
                if x_bar.dtype is _F64 and refs <= _SOLE and x_bar.shape == x.shape and \
                        (x_bar.base is None or _sole(x_bar, refs)) and x_bar.flags.writeable:
                    if kind == _ADVANCED:
                        np.add.at(x_bar, idx, g)
                    else:
                        x_bar[idx] += g
                    return x_bar
            elif x_bar is None or (tb is float or tb is np.float64 or tb is int) and x_bar == 0:
                return _written(x, idx, g, kind)
    if type(idx) is int and type(x_bar) is np.ndarray and type(x) is np.ndarray and \
            (tg is float or (tg is np.float64 or tg is np.ndarray) and g.dtype == x_bar.dtype) and \
            x_bar.shape == x.shape and x_bar.dtype.kind == "f" and _sole(x_bar, refs):
        x_bar[idx] += g     # one entry or row of an array this call owns (the common case first)
        return x_bar
    if _is_zero(g):
        return x_bar
    if _is_zero(x_bar) or not _sole(x_bar, refs) or _is_seq(x) or _is_map(x) or \
            _is_row_gather(x, idx) or np.result_type(x_bar, g) != x_bar.dtype or x_bar.shape != np.shape(x):
        return add(x_bar, index_vjp(g, x, idx))
    if _is_basic(idx):
        x_bar[idx] += g
    else:
        np.add.at(x_bar, idx, g)
    return x_bar



def set_at(y_dot, y, idx, v_dot):
    """The tangent of y after `y[idx] = v`: a copy of y_dot (zeros materialised) with v_dot written."""
    if _is_zero(y_dot):
        out = zeros_like(y)
    elif _is_seq(y_dot):
        out = list(y_dot)
    elif _is_map(y_dot):
        out = dict(y_dot)
    else:   # a writable copy of y_dot in y's shape (np.broadcast_to/astype: also for a batch of tangents)
        dtype = object if y_dot.dtype == object else _float_dtype(y)
        shape = np.shape(y)
        out = y_dot.astype(dtype) if y_dot.shape == shape else np.broadcast_to(y_dot, shape).astype(dtype)
    if isinstance(out, np.ndarray) and not _is_zero(v_dot) and not _plain(v_dot) and not _is_seq(v_dot):
        if hasattr(v_dot, "shape"):     # a batch of tangents: y's tangent takes that kind
            out = _zeros_of_kind(v_dot, np.shape(y), out.dtype) + out
        else:                           # an index-set tracer (srcad.sparsity)
            out = out.astype(object)
    elif isinstance(out, np.ndarray) and getattr(v_dot, "dtype", None) == object:
        out = out.astype(object)
    if _is_seq(out) or _is_map(out):
        out[idx] = v_dot
    else:
        out[idx] = 0.0 if _is_zero(v_dot) else v_dot
    return out


# ---- row gathers ---------------------------------------------------------------------------------
def take(x, indices, axis=None):
    """np.take(x, indices, axis); a row gather (axis=0) of a dense array through the parallel kernel."""
    if (axis == 0 and isinstance(x, np.ndarray) and x.ndim >= 1 and isinstance(indices, np.ndarray)
            and indices.dtype.kind in "iu" and not x.dtype.hasobject):
        return _kernels.gather_rows(x, indices)
    return np.take(x, indices, axis=axis)


def take_vjp(g, x, indices, axis=None, mode="raise"):
    """Cotangent of x from that of np.take(x, indices, axis, mode=mode): a row gather gives a RowSparse."""
    if _is_zero(g):
        return g
    indices = shapes.take_indices(x, indices, axis, mode)
    if axis is None:
        return np.reshape(index_vjp(np.ravel(g), np.ravel(x), np.ravel(indices)), np.shape(x))
    if axis % np.ndim(x) == 0:
        idx = np.asarray(indices)
        if idx.ndim == 1:
            return index_vjp(g, x, idx)
        g = np.asarray(g).reshape((-1,) + np.shape(x)[1:])
        return index_vjp(g, x, idx.reshape(-1))
    moved = np.moveaxis(np.asarray(g), axis, 0) if np.ndim(indices) == 1 else None
    if moved is None:
        return shapes.take_vjp(g, x, indices, axis)
    out = np.zeros(np.shape(x), np.result_type(_float_dtype(x), moved.dtype))
    np.add.at(np.moveaxis(out, axis, 0), np.asarray(indices), moved)
    return out


# ---- a write whose source overlaps its target ------------------------------------------------------
def refuse_overlapping_write(y, idx, v, construct, filename, line, col, hint):
    """Raise UnsupportedSyntaxError before `y[idx] = v` runs when v is a view sharing y's memory
    and NumPy would not copy it first (it then copies element by element, and a later element
    reads one the same write already changed: `v[::2] = v[0:3]`). srcad differentiates the write
    as if v were copied first, which is what NumPy does when it detects the overlap
    (`v[1:4] = v[0:3]`); which of the two NumPy does depends on the layout only, so it is asked
    here on an array of position numbers laid out as y and v are."""
    if not (type(y) is np.ndarray and type(v) is np.ndarray and np.may_share_memory(y, v)):
        return
    from ..errors import UnsupportedSyntaxError
    size = y.itemsize
    bounds = getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or np.byte_bounds
    (ylo, yhi), (vlo, vhi) = bounds(y), bounds(v)
    lo, hi = min(ylo, vlo), max(yhi, vhi)
    oy, ov = y.__array_interface__["data"][0] - lo, v.__array_interface__["data"][0] - lo
    if v.itemsize != size or oy % size or ov % size or any(s % size for s in y.strides + v.strides):
        raise UnsupportedSyntaxError(construct, filename, line, col, hint=hint)
    ids = np.arange(-(-(hi - lo) // size), dtype=np.int64)
    as_strided = np.lib.stride_tricks.as_strided
    py = as_strided(ids[oy // size:], y.shape, tuple(s // size * 8 for s in y.strides))
    pv = as_strided(ids[ov // size:], v.shape, tuple(s // size * 8 for s in v.strides))
    copied = np.broadcast_to(pv.copy(), np.shape(py[idx]))
    py[idx] = pv
    if not np.array_equal(py[idx], copied):
        raise UnsupportedSyntaxError(construct, filename, line, col, hint=hint)

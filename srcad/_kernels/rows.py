"""Rows of dense arrays: gathered (E[idx], E[idx] @ w), summed into rows (scatter-add into a new
array or one in place, an outer product scattered without forming it), outer products and
in-place sums; each written in parallel with the bits of the sequential numpy operation."""
import math

import numpy as np

from .. import _kernels as K  # the package: its builds (K._scatter, K._spmm, K._reduce) and tunables are
#                                read at each call, so SRCAD_KERNELS' choice or a test's swap reaches every wrapper
from . import _pool, _run
from .args import _floats, _ints, index_error


def gather_rows(E, idx):
    """E[idx] for a dense E (n, ...) and integer idx, copying rows in parallel."""
    E = np.asarray(E)
    (idx,) = _ints(idx)
    if E.ndim == 0:
        raise ValueError("gather_rows needs an array with at least one axis")
    if E.dtype.hasobject:
        return E[idx]
    E = np.ascontiguousarray(E)
    out = _pool.empty(idx.shape + E.shape[1:], E.dtype)
    width = E.itemsize * math.prod(E.shape[1:])
    _run(K._scatter.gather_rows, E.reshape(-1).view(np.uint8), idx.reshape(-1),
         out.reshape(-1).view(np.uint8), E.shape[0], width)
    return out


def gather_matvec(E, idx, w):
    """E[idx] @ w for a 2-D float E and a vector w, without forming E[idx]; each dot product is
    summed in double (float32 inputs give the float32 rounding of that sum)."""
    E, w = _floats(E, w)
    (idx,) = _ints(idx)
    if E.ndim != 2 or w.ndim != 1 or w.shape[0] != E.shape[1]:
        raise ValueError(f"gather_matvec takes a 2-D E and a vector of its row length, got "
                         f"{E.shape} and {w.shape}")
    out = _pool.empty(idx.shape, E.dtype)
    _run(K._scatter.gather_matvec, E.reshape(-1), idx.reshape(-1), w, out.reshape(-1), E.shape[0])
    return out


def _scatter_into(out, idx, values, what="the row indices"):
    """out[idx[k]] += values[k] in place, out being C-contiguous; returns out."""
    if values.shape[:idx.ndim] != idx.shape or values.shape[idx.ndim:] != out.shape[1:]:
        raise ValueError(f"values of shape {values.shape} do not match indices of shape "
                         f"{idx.shape} into rows of shape {out.shape[1:]}")
    (values,) = _floats(values.astype(out.dtype, copy=False))
    _run(K._scatter.scatter_add_owned, values.reshape(-1), idx.reshape(-1), out.reshape(-1),
         out.shape[0], math.prod(out.shape[1:]), index=(idx, out.shape[0], what))
    return out


def _into_bounds(acc, idx, what):
    """Raise (before acc is touched) unless every index fits acc's rows: an update in place is
    all or nothing."""
    n = np.shape(acc)[0] if np.ndim(acc) else 0
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise index_error(idx, n, what)


def scatter_add_outer_into(acc, idx, coef, vec, what="the row indices"):
    """acc[idx[k]] += coef[k] * vec in place, in the order of k, without forming the outer
    product (its bits: each product rounded, then added); returns acc."""
    (idx,) = _ints(idx)
    _into_bounds(acc, idx, what)
    if not (isinstance(acc, np.ndarray) and acc.ndim == 2 and acc.flags.c_contiguous
            and acc.flags.writeable and acc.dtype in (np.float32, np.float64)
            and np.result_type(coef, vec) == acc.dtype):
        return scatter_add_rows_into(acc, idx, outer(coef, vec), what)
    coef, vec = _floats(coef, vec)
    if coef.shape != idx.shape or vec.shape != acc.shape[1:]:
        raise ValueError(f"{coef.shape} coefficients, a {vec.shape} vector and {idx.shape} indices "
                         f"do not scatter into rows of shape {acc.shape[1:]}")
    _run(K._scatter.scatter_add_outer_owned, coef, vec, idx.reshape(-1), acc.reshape(-1), acc.shape[0],
         index=(idx, acc.shape[0], what))
    return acc


def outer(a, b):
    """np.multiply.outer(a, b) for 1-D float arrays, rows written in parallel (the same bits)."""
    a, b = _floats(a, b)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("outer takes two 1-D arrays")
    out = _pool.empty((len(a), len(b)), a.dtype)
    _run(K._scatter.outer, a, b, out.reshape(-1))
    return out


def scatter_add_rows(values, idx, n_rows, what="the row indices"):
    """out (n_rows, ...) with out[idx[k]] += values[k], summed in the order of k."""
    (values,), (idx,) = _floats(values), _ints(idx)
    out = np.zeros((n_rows,) + values.shape[idx.ndim:], dtype=values.dtype)
    return _scatter_into(out, idx, values, what)


def scatter_add_rows_into(acc, idx, values, what="the row indices"):
    """acc[idx[k]] += values[k] in place, in the order of k; returns acc."""
    (idx,) = _ints(idx)
    _into_bounds(acc, idx, what)
    if not (isinstance(acc, np.ndarray) and acc.ndim >= 1 and acc.flags.c_contiguous
            and acc.flags.writeable and acc.dtype in (np.float32, np.float64)):
        values = np.asarray(values)
        if isinstance(acc, np.ndarray) and acc.dtype.kind == "f":
            values = values.astype(acc.dtype, copy=False)  # as the kernel: cast, then add
        np.add.at(acc, idx, values)  # the same order, sequentially
        return acc
    return _scatter_into(acc, idx, np.asarray(values), what)


def add_into(acc, g):
    """acc += g in place (dense, same shape), in parallel blocks; returns acc."""
    g = np.asarray(g)
    if (isinstance(acc, np.ndarray) and acc.shape == g.shape and acc.flags.c_contiguous
            and acc.flags.writeable and acc.dtype in (np.float32, np.float64)):
        (g,) = _floats(g.astype(acc.dtype, copy=False))
        _run(K._scatter.add_into, acc.reshape(-1), g.reshape(-1))
    else:
        acc += g
    return acc


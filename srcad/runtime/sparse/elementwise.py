"""Elementwise operations of a sparse matrix and their derivatives: `x.multiply(y)` with a dense or a
sparse y, the quotient's tangent, and `x.power(n)`. A result keeps x's stored pattern (a dense
operand) or the structural intersection of the two patterns (two sparse operands)."""
import numpy as np
import scipy.sparse as sp

from .. import pattern_cache as _pc
from .construction import _BUILT_RAW, _canonical_now
from .derivative import _at, _cot, _dense_at, _like, _own, _values_at
from .pattern import (_build, _canonical, _check, _entry_coords, _float_dtype, _fmt, _is_zero, _keys, _kind,
                      merged, unmerged)

__all__ = ["multiply", "multiply_vjp_x", "multiply_vjp_y", "quotient_jvp_y", "multiply_ss", "multiply_ss_vjp_x",
           "multiply_ss_vjp_y", "power", "power_vjp", "power_vjp_n", "power_vjp_jvp", "power_jvp", "power_jvp_n"]


# ---- elementwise product with a dense operand ---------------------------------------------------
def multiply(x, y):
    """x.multiply(y): for a sparse x and a dense (or scalar) y, a matrix of x's class with x's stored
    pattern in x's order (scipy returns COO here; the values are the same)."""
    if _is_zero(x):           # a zero tangent of x
        return x
    if sp.issparse(x) and sp.issparse(y):
        return multiply_ss(x, y)
    if not sp.issparse(x) or _fmt(x) is None:
        return x.multiply(y)
    if x.format == "coo":     # scipy sums a COO's duplicate entries here (a CSR/CSC's it keeps)
        x = merged(x)
    return _like(x, x.data * _dense_at(y, x), fresh=not _canonical(x))


def multiply_vjp_x(g, x, y):
    """Cotangent of the sparse x in x.multiply(y)."""
    if _is_zero(g):
        return g
    if sp.issparse(y):
        return multiply_ss_vjp_x(g, x, y)
    return _cot(x, _values_at(g, x) * _dense_at(y, x))


def multiply_vjp_y(g, x, y):
    """Cotangent of the dense y in x.multiply(y): x's entries times g, summed to y's shape."""
    if _is_zero(g) or _is_zero(x):
        return 0.0
    if sp.issparse(y):
        return multiply_ss_vjp_y(g, x, y)
    w = _values_at(g, x) * x.data
    y_arr = np.asarray(y)
    dtype = np.result_type(_float_dtype(y_arr.dtype), w.dtype)
    if y_arr.ndim == 0:
        s = np.sum(w, dtype=dtype)
        return float(s) if not isinstance(y, (np.ndarray, np.generic)) else s
    rows, cols = _entry_coords(x)
    shape2 = (1,) * (2 - y_arr.ndim) + y_arr.shape
    r = rows.astype(np.int64) if shape2[0] > 1 else 0
    c = cols.astype(np.int64) if shape2[1] > 1 else 0
    flat = np.bincount(np.broadcast_to(r * shape2[1] + c, w.shape), weights=w, minlength=shape2[0] * shape2[1])
    return flat.astype(dtype, copy=False).reshape(y_arr.shape)


def quotient_jvp_y(d, q, y):
    """-d * q / y: the tangent piece of q = x / y along y's tangent d. For a sparse q (x sparse, y
    dense), entry by entry in q's stored pattern and order, as the piece along x's tangent is
    (scipy's `*` would merge the duplicate entries of q, a COO, and `rt.add` would then give each
    duplicate the merged value; for np.matrix-style classes `*` is a matrix product)."""
    if sp.issparse(q) and not sp.issparse(d) and not sp.issparse(y) and _fmt(q) is not None:
        return _like(q, -q.data * _dense_at(np.asarray(d) / np.asarray(y), q), fresh=True)
    return -d * q / y


# ---- elementwise product of two sparse matrices ------------------------------------------------------
def _intersect(x, y):
    """(merged x, merged y, positions ia in x's and ib in y's merged entries of the common
    coordinates, rows, cols) in row-major order."""
    if x.shape != y.shape:
        raise ValueError(f"A.multiply(B): shapes {x.shape} and {y.shape} differ")
    xm, ym = merged(x, sort=True), merged(y, sort=True)
    n = x.shape[1]
    kx, ky = _keys(*_entry_coords(xm), n), _keys(*_entry_coords(ym), n)
    common, ia, ib = np.intersect1d(kx, ky, assume_unique=True, return_indices=True)
    return xm, ym, ia, ib, common // n, common % n


def multiply_ss(x, y):
    """x.multiply(y) for two sparse matrices: scipy's class (CSR, or CSC for a CSC x) and values,
    on the structural intersection of the two patterns (duplicates summed first, as scipy)."""
    _check(x, "A.multiply(B)")
    _check(y, "A.multiply(B)")
    xm, ym, ia, ib, rows, cols = _intersect(x, y)
    data = xm.data[ia] * ym.data[ib]
    out = _build("csr", _kind(x), rows, cols, data, x.shape)
    return out.asformat("csc") if x.format == "csc" else out


def _multiply_ss_vjp(g, x, y, mine):
    xm, ym, ia, ib, rows, cols = _intersect(x, y)
    fmt = "csc" if x.format == "csc" else "csr"
    if fmt == "csc":           # the result's entries come column by column
        order = np.lexsort((rows, cols))
        ia, ib, rows, cols = ia[order], ib[order], rows[order], cols[order]
    gv = _at(g, rows, cols, len(rows))
    if mine == "x":
        out = np.zeros(len(xm.data), np.result_type(gv, _float_dtype(x.dtype)))
        out[ia] = gv * ym.data[ib]
        return _cot(x, _own(unmerged(out, x, sort=True)))
    out = np.zeros(len(ym.data), np.result_type(gv, _float_dtype(y.dtype)))
    out[ib] = gv * xm.data[ia]
    return _cot(y, _own(unmerged(out, y, sort=True)))


def multiply_ss_vjp_x(g, x, y):
    """Cotangent of x in x.multiply(y), both sparse."""
    return g if _is_zero(g) else _multiply_ss_vjp(g, x, y, "x")


def multiply_ss_vjp_y(g, x, y):
    """Cotangent of y in x.multiply(y), both sparse."""
    return 0.0 if _is_zero(g) else _multiply_ss_vjp(g, x, y, "y")


# ---- A.power(p) -------------------------------------------------------------------------------------
def power(x, n, dtype=None):
    """x.power(n) as scipy runs it, side effect included for a matrix built inside the function
    (`construct`): scipy sums x's duplicate entries (and sorts them) in place first, and the code
    may read x again after. The result comes from _merged_power; the derivative helpers then see
    x as scipy left it. An argument's pattern is left as it was passed (its derivative is
    one per entry passed)."""
    out = _merged_power(x, n, dtype)
    rec = _BUILT_RAW.get(id(x))
    if rec is not None and rec[0]() is x and not _canonical_now(x):
        x.sum_duplicates()      # a matrix built in the function; an argument is left as it was passed
    return out


def _merged_power(x, n, dtype=None):
    """x.power(n) as scipy computes it (duplicates summed, the entries sorted), without scipy's side
    effect of canonicalising x in place."""
    if not sp.issparse(x):
        return x.power(n, dtype=dtype) if dtype is not None else x.power(n)
    _check(x, "A.power(n)")
    xm = merged(x, sort=True)
    data = xm.data ** n
    if dtype is not None:
        data = data.astype(dtype)
    return _like(xm, data, fresh=True)


def power_vjp(g, x, n, ans):
    """Cotangent of x in x.power(n): n x^(n-1) times the merged entry's cotangent."""
    if _is_zero(g):
        return g
    xm = merged(x, sort=True)
    gv = _values_at(g, ans) if sp.issparse(ans) else g
    return _cot(x, _own(unmerged(gv * n * xm.data ** (n - 1), x, sort=True)))


def power_vjp_n(g, x, n, ans):
    """Cotangent of the exponent n in x.power(n): sum of g x^n log x over the stored entries."""
    if _is_zero(g):
        return 0.0
    xm = merged(x, sort=True)
    gv = _values_at(g, ans)
    logs = np.log(np.where(xm.data == 0, 1.0, xm.data))
    return float(np.sum(gv * ans.data * logs)) if not isinstance(n, np.ndarray) else np.sum(gv * ans.data * logs)


def power_vjp_jvp(g, x, n, ans, x_dot):
    """Tangent of power_vjp(g, x, n, ans) along a tangent x_dot of x (a Hessian of A.power(n))."""
    if _is_zero(g) or _is_zero(x_dot):
        return 0.0
    xm = merged(x, sort=True)
    t = _like(x, _values_at(x_dot, x))
    tm = merged(t, sort=True) if t.format != "coo" or xm is not x else t
    tv = _values_at(tm, xm) if xm is not x else t.data
    gv = _values_at(g, ans) if sp.issparse(ans) else g
    return _cot(x, _own(unmerged(gv * n * (n - 1) * xm.data ** (n - 2) * tv, x, sort=True)))


def power_jvp(x_dot, x, n, ans):
    """Tangent of x.power(n): n x^(n-1) times the merged tangent, on the result's pattern."""
    if _is_zero(x_dot):
        return x_dot
    xm = merged(x, sort=True)
    t = _like(x, _values_at(x_dot, x))
    tm = merged(t, sort=True) if t.format != "coo" or xm is not x else t
    tv = _values_at(tm, xm) if xm is not x else t.data
    return _like(ans, n * xm.data ** (n - 1) * tv)


def power_jvp_n(n_dot, x, n, ans):
    """Tangent of x.power(n) along a tangent n_dot of the exponent: x^n log x n_dot on the result's
    pattern (an entry whose merged value is 0 has x^n = 0 there, for n > 0)."""
    if _is_zero(n_dot):
        return n_dot
    xm = merged(x, sort=True)
    logs = np.log(np.where(xm.data == 0, 1.0, xm.data))
    return _like(ans, np.asarray(ans.data) * logs * n_dot)


# each helper fingerprints a pattern's index arrays once per call (pattern_cache.py)
_pc.scope_module(globals(), ["multiply", "multiply_vjp_x", "multiply_vjp_y", "multiply_ss", "multiply_ss_vjp_x",
                             "multiply_ss_vjp_y", "_merged_power", "power_vjp", "power_vjp_n", "power_vjp_jvp",
                             "power_jvp", "power_jvp_n"])

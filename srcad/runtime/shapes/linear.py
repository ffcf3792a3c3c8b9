"""The linear shape operations of a derivative that may be the zero 0.0 (`lin`), and np.add.at /
np.subtract.at, written as y[...] = add_at_value(y, idx, v) (frontend/inplace.py)."""
import numpy as np
import scipy.sparse as sp

from ...errors import MissingRuleError
from ..broadcasting import unbroadcast
from ..values import _is_zero


def _missing(what):
    return MissingRuleError(what)


# ---- linear shape operations of a derivative that may be the zero 0.0 ----------------------------------
def lin(op, d, *args):
    """op(d, *args) for a NumPy shape operation op that is linear in d (np.swapaxes,
    np.flip, np.tril, np.moveaxis, np.take, ...); the zero derivative 0.0 (a cotangent nothing
    reached, say on a branch not taken) stays 0.0: op of it would fail for want of axes, and
    is zero anyway. Rules whose templates pass a derivative straight into such an op go through
    here, so no shape rule meets a bare 0.0. Only for ops whose other arguments are discrete (axes,
    counts, indices, shapes): lin's own rule carries no derivative through them."""
    if _is_zero(d):
        return 0.0
    if sp.issparse(d) and op is np.trace:       # scipy's trace takes the offset only (2-D: the axes swap it)
        offset, axis1, axis2 = (tuple(args) + (0, 0, 1)[len(args):])[:3]
        return d.trace(offset if axis1 % 2 == 0 and axis2 % 2 == 1 else -offset)
    if sp.issparse(d) and hasattr(d, getattr(op, "__name__", "")):   # a sparse tangent: scipy's own method
        return getattr(d, op.__name__)(*args)                          # (np.trace(A) fails on one)
    return op(d, *args)


# ---- np.add.at / np.subtract.at: written as y[...] = add_at_value(y, idx, v) (frontend/inplace.py) ----------
def add_at_value(y, idx, v, op="add"):
    """A copy of y with v added (op='subtract': subtracted) at idx, repeated indices accumulated."""
    out = np.array(y, copy=True)
    (np.subtract if op == "subtract" else np.add).at(out, idx, v)
    return out


def add_at_vjp_v(g, idx, v, op="add"):
    """Cotangent of v in add_at_value(y, idx, v, op): g read at idx (each repeat its own), to v's shape."""
    if _is_zero(g):
        return g
    part = unbroadcast(np.asarray(g)[idx], v)
    return -part if op == "subtract" else part


def add_at_jvp_v(d, like, idx, op="add"):
    """The tangent of add_at_value from the tangent d of v: zeros shaped like the result, d added at idx."""
    if _is_zero(d):
        return d
    return add_at_value(np.zeros(np.shape(like), dtype=np.result_type(d, float)), idx, d, op)

"""What srcad's composed functions call (srcad/composition.py): the plain Python function that
computes `srcad.jacobian(f)` sweeps f's tangent code once per unit direction and stacks the
columns; these helpers make the directions and stack (and unstack) the columns."""
import numbers

import numpy as np

from ..errors import SrcadError
from .products import matmul
from .values import _is_zero


def _plain_value(v, what):
    if not (isinstance(v, (np.ndarray, np.generic)) or isinstance(v, numbers.Real) and not isinstance(v, bool)):
        raise SrcadError(f"srcad.jacobian differentiated again (composed) needs {what} to be an array or a number, "
                         f"not {type(v).__name__}: differentiate a function of (and returning) one array")


def unit_direction(x, j):
    """The j-th unit direction of x's space: 1.0 for a number, else an array of x's shape."""
    _plain_value(x, "the argument")
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        return 1.0
    e = np.zeros(np.shape(x))
    e.reshape(-1)[j] = 1.0
    return e


def stack_columns(columns, x):
    """The Jacobian y.shape + x.shape from its columns, the tangents along x's unit directions
    in order (linear in the columns)."""
    if not columns:
        raise ValueError("srcad.jacobian of a function of an empty array: there is no column to stack")
    for c in columns:
        _plain_value(c, "the output")
    shape = next((np.shape(c) for c in columns if not _is_zero(c)), np.shape(columns[0]))
    cols = [np.broadcast_to(np.asarray(c, dtype=float) if _is_zero(c) else np.asarray(c), shape)
            for c in columns]
    J = np.stack(cols, axis=-1)
    return J.reshape(shape + np.shape(x))


def unstack_columns(g, columns, x):
    """The cotangents of stack_columns' columns: g (y.shape + x.shape) cut back into columns,
    each of its column's shape and kind (a number stays a number)."""
    if _is_zero(g):
        return [0.0] * len(columns)
    g = np.asarray(g)
    yshape = g.shape[:g.ndim - np.ndim(x)]
    flat = g.reshape(yshape + (len(columns),))
    out = []
    for j, c in enumerate(columns):
        piece = flat[..., j]
        out.append(float(piece) if np.ndim(c) == 0 and not isinstance(c, np.ndarray) else piece.copy())
    return out


def matmul_or_zero(a, b):
    """a @ b, where a cotangent that is still the symbolic zero (0.0) gives that zero: the adjoint
    of a matmul adjoint (reverse over reverse) meets cotangents that nothing reached yet."""
    if _is_zero(a):
        return a
    if _is_zero(b):
        return b
    return matmul(a, b)

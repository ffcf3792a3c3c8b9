"""Batched tangents: many seed directions pushed through the generated tangent code at once.

`Batched` wraps an array of shape (B,) + S that stands for B tangents of shape S. It implements
NumPy's dispatch protocols (ufuncs, the array functions that tangent code uses, indexing, `@`)
by mapping the logical axes of S one place to the right, so the same generated code that
carries one tangent carries B of them with no Python loop over directions. Anything it does not
implement raises, and callers fall back to one sweep per direction; callers also check the
batched result against one ordinary sweep along a random combination of the directions.
"""
import numbers

import numpy as np

from .errors import SrcadError

# what a sweep with Batched tangents raises where the batch does not implement an operation (its own
# TypeError, NumPy's shape and index errors, a missing method, a runtime helper refusing the type):
# callers then fall back to one sweep per direction
UNBATCHABLE = (TypeError, ValueError, LookupError, AttributeError, ArithmeticError, NotImplementedError,
               SrcadError)


_NDIM0 = {float, int, np.float64}


def _fast(ufunc, reflected=False):
    """An operator of Batched: the ufunc on the data when the other operand needs no lift (a scalar,
    an array of no more axes, a batch of as many), without NumPy's dispatch; else through it."""
    def op(self, o):
        t = type(o)
        if type(self) is Batched and (t in _NDIM0 or t is np.ndarray and o.ndim < self.data.ndim
                                      or t is Batched and o.data.ndim == self.data.ndim):
            d = o.data if t is Batched else o
            return Batched(ufunc(d, self.data) if reflected else ufunc(self.data, d))
        return ufunc(o, self) if reflected else ufunc(self, o)
    return op


class Batched:
    """B tangents of one shape S, held as one array of shape (B,) + S (see the module docstring)."""

    __slots__ = ("data",)
    __array_priority__ = 50.0

    def __init__(self, data):
        self.data = data

    # -- what the logical tangent looks like ---------------------------------------------------
    @property
    def shape(self):
        return self.data.shape[1:]

    @property
    def ndim(self):
        return self.data.ndim - 1

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=int))

    @property
    def dtype(self):
        return self.data.dtype

    T = property(lambda self: Batched(np.transpose(self.data, (0,) + tuple(range(self.ndim, 0, -1)))))

    def __len__(self):
        return self.shape[0]

    def __array__(self, *args, **kwargs):
        raise TypeError("a batch of tangents cannot be converted to one array")

    # -- indexing and methods ------------------------------------------------------------------
    def __getitem__(self, idx):
        t = idx if type(idx) is tuple else (idx,)
        if t and type(t[-1]) is np.ndarray and t[-1].ndim == 1 and t[-1].dtype.kind in "iu" and all(type(s) is slice
                and s == slice(None) for s in t[:-1]):      # a gather along one axis: np.take (fancy indexing ~10x slower)
            return Batched(np.take(self.data, t[-1], axis=len(t)))
        return Batched(self.data[(slice(None),) + t])

    def __setitem__(self, idx, value):
        idx = idx if isinstance(idx, tuple) else (idx,)
        self.data[(slice(None),) + idx] = value.data if isinstance(value, Batched) else value

    def sum(self, axis=None, keepdims=False, **kw):
        return np.sum(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape, **kw):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return np.reshape(self, shape)

    def astype(self, dtype, **kw):
        return Batched(self.data.astype(dtype))

    def copy(self):
        return Batched(self.data.copy())

    # -- arithmetic: the ufunc on the data where the operand needs no lift, else through NumPy --
    __add__, __radd__ = _fast(np.add), _fast(np.add, True)
    __sub__, __rsub__ = _fast(np.subtract), _fast(np.subtract, True)
    __mul__, __rmul__ = _fast(np.multiply), _fast(np.multiply, True)
    __truediv__, __rtruediv__ = _fast(np.true_divide), _fast(np.true_divide, True)
    def __neg__(self): return Batched(-self.data) if type(self) is Batched else np.negative(self)
    def __pos__(self): return self
    __matmul__, __rmatmul__ = (lambda self, o: np.matmul(self, o)), (lambda self, o: np.matmul(o, self))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        if ufunc is np.matmul:
            return _matmul(*inputs)
        if len(inputs) == 2:        # the common case first: a binary ufunc with one batch
            a, b = inputs
            if type(a) is Batched and type(b) is not Batched:
                if (b.ndim if type(b) is np.ndarray else np.ndim(b)) <= a.data.ndim - 1:
                    return Batched(ufunc(a.data, b, **kwargs))
            elif type(b) is Batched and type(a) is not Batched:
                if (a.ndim if type(a) is np.ndarray else np.ndim(a)) <= b.data.ndim - 1:
                    return Batched(ufunc(a, b.data, **kwargs))
        elif len(inputs) == 1:
            return Batched(ufunc(self.data, **kwargs))
        nd = max(np.ndim(x) if not isinstance(x, Batched) else x.ndim for x in inputs)
        args = [_lift(x, nd) if isinstance(x, Batched) else x for x in inputs]
        return Batched(ufunc(*args, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        handler = _HANDLERS.get(func)
        if handler is None:
            raise TypeError(f"{func.__name__} is not implemented for a batch of tangents")
        return handler(*args, **kwargs)


def _lift(b, nd):
    """The batch's data with axes inserted after the batch axis so that it has nd logical axes."""
    extra = nd - b.ndim
    return b.data.reshape((b.data.shape[0],) + (1,) * extra + b.shape) if extra > 0 else b.data


def _batch_size(items):
    return next((x.data.shape[0] for x in items if isinstance(x, Batched)), None)


def _full(x, B):
    """Data of shape (B,) + shape for a batch or a plain (direction-independent) value."""
    if isinstance(x, Batched):
        return x.data
    x = np.asarray(x)
    return np.broadcast_to(x, (B,) + x.shape)


def _ax(axis, nd):
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, tuple):
        return tuple(a % nd + 1 for a in axis)
    return axis % nd + 1


_HANDLERS = {}


def _on(*funcs):
    def deco(h):
        for f in funcs:
            _HANDLERS[f] = h
        return h
    return deco


# what the batch's logical shape answers (a Deferred's too, without computing it)
_HANDLERS[np.shape] = lambda x: x.shape
_HANDLERS[np.ndim] = lambda x: x.ndim
_HANDLERS[np.size] = lambda x, axis=None: x.size if axis is None else x.shape[axis]


def _make_reduce(np_func):
    def h(x, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None:
            raise TypeError("out= is not supported for a batch of tangents")
        return Batched(np_func(x.data, axis=_ax(axis, x.ndim), keepdims=keepdims))
    return h


_HANDLERS[np.sum] = _make_reduce(np.sum)
_HANDLERS[np.mean] = _make_reduce(np.mean)


@_on(np.cumsum)
def _cumsum(x, axis=None, **kw):
    if axis is None:
        return Batched(np.cumsum(x.data.reshape(x.data.shape[0], x.size), axis=1))
    return Batched(np.cumsum(x.data, axis=_ax(axis, x.ndim)))


@_on(np.diff)
def _diff(x, n=1, axis=-1, **kw):
    return Batched(np.diff(x.data, n=n, axis=_ax(axis, x.ndim)))


@_on(np.reshape)
def _reshape(x, shape, *a, **kw):
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if -1 in shape:     # resolved from the logical size (a batch of no directions has no size to divide)
        known = int(np.prod([d for d in shape if d != -1], dtype=int))
        shape = tuple(x.size // known if d == -1 and known else d for d in shape)
    return Batched(np.reshape(x.data, (x.data.shape[0],) + shape))


@_on(np.ravel)
def _ravel(x, *a, **kw):
    return Batched(x.data.reshape(x.data.shape[0], x.size))   # (a size, not -1: B may be 0)


@_on(np.transpose)
def _transpose(x, axes=None):
    axes = tuple(range(x.ndim - 1, -1, -1)) if axes is None else axes
    return Batched(np.transpose(x.data, (0,) + tuple(a % x.ndim + 1 for a in axes)))


@_on(np.swapaxes)
def _swapaxes(x, a, b):
    return Batched(np.swapaxes(x.data, _ax(a, x.ndim), _ax(b, x.ndim)))


@_on(np.broadcast_to)
def _broadcast_to(x, shape, **kw):
    shape = tuple(shape)
    if shape == x.shape:        # (index_jvp's broadcast of a tangent of its primal's shape)
        return x
    return Batched(np.broadcast_to(_lift(x, len(shape)), (x.data.shape[0],) + shape))


@_on(np.squeeze)
def _squeeze(x, axis=None):
    axes = range(x.ndim) if axis is None else [a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,))]
    return np.reshape(x, tuple(d for i, d in enumerate(x.shape) if not (i in axes and d == 1)))


@_on(np.expand_dims)
def _expand_dims(x, axis):
    axes = axis if isinstance(axis, tuple) else (axis,)
    nd = x.ndim + len(axes)
    axes = sorted(a % nd for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return np.reshape(x, tuple(shape))


@_on(np.split)
def _split(x, indices_or_sections, axis=0):
    return [Batched(p) for p in np.split(x.data, indices_or_sections, axis=_ax(axis, x.ndim))]


@_on(np.concatenate)
def _concatenate(arrays, axis=0, **kw):
    B = _batch_size(arrays)
    nd = max(np.ndim(a) for a in arrays)
    return Batched(np.concatenate([_full(a, B) for a in arrays], axis=_ax(axis, nd)))


@_on(np.stack)
def _stack(arrays, axis=0, **kw):
    B = _batch_size(arrays)
    nd = max(np.ndim(a) for a in arrays) + 1
    return Batched(np.stack([_full(a, B) for a in arrays], axis=axis % nd + 1))


@_on(np.vstack)
def _vstack(tup, **kw):
    return _concatenate([a if np.ndim(a) >= 2 else np.reshape(a, (1, -1)) for a in tup], axis=0)


@_on(np.hstack)
def _hstack(tup, **kw):
    return _concatenate(list(tup), axis=0 if np.ndim(tup[0]) == 1 else 1)


@_on(np.where)
def _where(cond, x, y):
    nd = max(np.ndim(cond), np.ndim(x), np.ndim(y))
    xs = [_lift(v, nd) if isinstance(v, Batched) else v for v in (x, y)]
    return Batched(np.where(cond, *xs))


@_on(np.take)
def _take(x, idx, axis=None, **kw):
    if axis is None:
        return Batched(np.take(x.data.reshape(x.data.shape[0], x.size), idx, axis=1))
    return Batched(np.take(x.data, idx, axis=_ax(axis, x.ndim)))


@_on(np.trace)
def _trace(x, *a, **kw):
    return Batched(np.trace(x.data, axis1=1, axis2=2))


@_on(np.outer)
def _outer(x, y):
    B = _batch_size((x, y))
    xf, yf = _full(x, B).reshape(B, np.size(x)), _full(y, B).reshape(B, np.size(y))
    return Batched(xf[:, :, None] * yf[:, None, :])


_HANDLERS[np.copy] = lambda x, *a, **kw: x.copy()


@_on(np.matmul, np.dot)
def _matmul(x, y, *a, **kw):
    xb, yb = isinstance(x, Batched), isinstance(y, Batched)
    if xb and yb:
        raise TypeError("a product of two batches of tangents does not occur in tangent code")
    if (x.ndim if xb else np.ndim(x)) == 0 or (y.ndim if yb else np.ndim(y)) == 0:
        return np.multiply(x, y)
    if xb:                                 # (B, ..., n) @ (n, m) or (n,): matmul broadcasts over B
        d = x.data
        if type(y) is np.ndarray and d.ndim >= 4 and y.ndim >= 3 and d.shape[1:-2] == y.shape[:-2]:
            # a stack of matrices y: the directions folded into the rows, one product per matrix
            # of y instead of B (NumPy runs a stacked product matrix by matrix; for a single small
            # y its stacked loop is faster than one BLAS call on the folded rows)
            rows = np.moveaxis(d, 0, -3).reshape(y.shape[:-2] + (-1, d.shape[-1]))
            out = (rows @ y).reshape(y.shape[:-2] + (d.shape[0], d.shape[-2], y.shape[-1]))
            return Batched(np.moveaxis(out, -3, 0))
        return Batched(np.matmul(d, y))
    if y.ndim == 1:                        # x @ y_b for each direction b: y_b @ x^T
        return Batched(y.data @ (x if np.ndim(x) == 1 else np.swapaxes(x, -1, -2)))
    return Batched(np.matmul(x, y.data))


@_on(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross products along the last axis (the default axes; others fall back to one sweep per
    direction): both operands as (B,) + shape, broadcast against each other."""
    if axis is not None or (axisa, axisb, axisc) != (-1, -1, -1):
        raise TypeError("np.cross with explicit axes is not implemented for a batch of tangents")
    B = _batch_size((a, b))
    nd = max(a.ndim if isinstance(a, Batched) else np.ndim(a), b.ndim if isinstance(b, Batched) else np.ndim(b))
    af = _lift(a, nd) if isinstance(a, Batched) else np.asarray(a)
    bf = _lift(b, nd) if isinstance(b, Batched) else np.asarray(b)
    if not isinstance(a, Batched):
        af = np.broadcast_to(af, (1,) * (nd - af.ndim) + af.shape)[None]
    if not isinstance(b, Batched):
        bf = np.broadcast_to(bf, (1,) * (nd - bf.ndim) + bf.shape)[None]
    return Batched(np.cross(af, bf))


@_on(np.linalg.solve)
def _solve(a, b):
    if isinstance(a, Batched):
        raise TypeError("the matrix of a solve cannot be a batch of tangents")
    if b.ndim == 1:
        return Batched(np.linalg.solve(a, b.data.T).T)
    return Batched(np.linalg.solve(a, b.data))


def unwrap(t, B, shape):
    """A tangent that came out of the generated code as an array (B,) + shape."""
    if isinstance(t, Batched):
        return np.broadcast_to(t.data, (B,) + tuple(shape))
    return np.broadcast_to(np.asarray(t, dtype=float), (B,) + tuple(shape))


def batch_size_nested(parts):
    """The batch size of the first Batched in a (nested) list or tuple of tangents, or None."""
    for p in parts:
        if isinstance(p, Batched):
            return p.data.shape[0]
        if isinstance(p, (list, tuple)):
            B = batch_size_nested(p)
            if B is not None:
                return B
    return None


_ZEROS = (float, int, np.float64, np.float32, np.float16)   # the types a symbolic zero tangent has


def batched_array(parts, B, dtype, shape):
    """The tangent of np.array(nested list) of the given shape when some items are batches: one
    Batched of data (B,) + shape, zeros where an item's tangent is zero, each batch's data and each
    plain (direction-independent) item written in its place, as np.array stacks the items. An
    item whose shape is not its place's raises ValueError (the caller's fallback)."""
    out = np.zeros((B,) + tuple(shape), dtype)

    def fill(p, idx):
        if type(p) is Batched or isinstance(p, Batched):
            if p.data.shape != (B,) + out.shape[1 + len(idx):]:
                raise ValueError("an item of a batched np.array tangent does not have its place's shape")
            out[(slice(None),) + idx] = p.data
        elif isinstance(p, (list, tuple)):
            if len(idx) >= len(shape) or len(p) != shape[len(idx)]:
                raise ValueError("a batched np.array tangent's list does not have the array's shape")
            for i, q in enumerate(p):
                fill(q, idx + (i,))
        elif p is not None and not (type(p) in _ZEROS and p == 0):   # (a symbolic zero: any shape)
            if np.shape(p) != out.shape[1 + len(idx):]:
                raise ValueError("an item of a batched np.array tangent does not have its place's shape")
            out[(slice(None),) + idx] = p
    fill(parts, ())
    return Batched(out)

"""RowSparse: the gradient of a row gather `E[idx]`, kept as (indices, values) until densified."""
import numpy as np

from .. import _kernels
from .values import _is_zero


class RowSparse:
    """An array that is zero except for rows `indices`, which hold `values`: the gradient of a row
    gather ``E[idx]`` (``srcad.grad(f, row_sparse=True)``), kept without densifying.

    `indices` may repeat a row: repeated rows add up when densified. It works with NumPy
    (``np.asarray``, ``+`` with an array, ``* scalar``), `srcad.accumulate` and ``.todense()``.

    Parameters
    ----------
    indices : array_like of int
        The rows, in any order, repeats allowed.
    values : array_like
        Of shape ``(len(indices),) + shape[1:]``.
    shape : tuple of int
        The shape of the dense array it stands for.

    Raises
    ------
    ValueError
        When values' shape does not fit indices and shape.

    Examples
    --------
    >>> import numpy as np
    >>> import srcad
    >>> def loss(E, idx):
    ...     return np.sum(E[idx] ** 2)
    >>> E = np.arange(8.0).reshape(4, 2)
    >>> g = srcad.grad(loss, row_sparse=True)(E, np.array([3, 1, 3]))
    >>> type(g).__name__, g.indices, g.shape
    ('RowSparse', array([3, 1, 3]), (4, 2))
    >>> print(g.todense())
    [[ 0.  0.]
     [ 4.  6.]
     [ 0.  0.]
     [24. 28.]]
    """

    __array_priority__ = 20.0

    def __init__(self, indices: "np.typing.ArrayLike", values: "np.typing.ArrayLike", shape: "tuple[int, ...]") -> None:
        self.indices = np.asarray(indices)
        self.values = np.asarray(values)
        self.shape = tuple(shape)
        if self.values.shape != (len(self.indices),) + self.shape[1:]:
            raise ValueError(f"RowSparse values of shape {self.values.shape} do not fit "
                             f"{len(self.indices)} rows of a {self.shape} array")

    @classmethod
    def outer(cls, indices, coef, vec, shape):
        """The RowSparse whose row k is coef[k] * vec (the cotangent of a gather E[idx] that fed
        `E[idx] @ vec`), kept factored: `.values` forms it when first read, srcad.accumulate adds
        it without forming it (the same bits either way)."""
        self = cls.__new__(cls)
        self.indices, self.shape = np.asarray(indices), tuple(shape)
        self.factors = (coef, vec)
        self._values = None
        if coef.shape != self.indices.shape or (len(self.shape), vec.shape) != (2, self.shape[1:]):
            raise ValueError("RowSparse.outer needs one coefficient per index and a row vector")
        return self

    factors = None        # (coef, vec) while the values are kept as their outer product

    @property
    def values(self):
        if self.factors is not None:
            coef, vec = self.factors
            self._values, self.factors = _kernels.outer(coef, vec), None
        return self._values

    @values.setter
    def values(self, v):
        self._values, self.factors = v, None

    @property
    def dtype(self):
        if self.factors is not None:
            return np.result_type(*self.factors)
        return self.values.dtype

    @property
    def ndim(self):
        return len(self.shape)

    def todense(self):
        """The dense array, repeated rows summed (deterministically, in the compiled kernel)."""
        return _kernels.scatter_add_rows(self.values, self.indices, self.shape[0],
                                         f"a RowSparse of shape {self.shape}: its indices")

    def __array__(self, dtype=None, copy=None):
        dense = self.todense()
        return dense if dtype is None else dense.astype(dtype, copy=False)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [x.todense() if isinstance(x, RowSparse) else x for x in inputs]
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __add__(self, other):
        if _is_zero(other):
            return self
        return add_rowsparse(self, other)

    __radd__ = __add__

    def __neg__(self):
        return RowSparse(self.indices, -self.values, self.shape)

    def __mul__(self, other):
        if np.ndim(other) == 0:
            return RowSparse(self.indices, self.values * other, self.shape)
        return self.todense() * other

    __rmul__ = __mul__

    def __getitem__(self, idx):
        return self.todense()[idx]

    def __repr__(self):
        return f"RowSparse(shape={self.shape}, rows={len(self.indices)}, dtype={self.dtype})"


def add_rowsparse(a, b):
    """a + b where one of them is a RowSparse and the other a RowSparse or a dense array: two
    RowSparse keep their rows side by side; a dense one receives the rows (in a copy)."""
    if isinstance(a, RowSparse) and isinstance(b, RowSparse):
        return RowSparse(np.concatenate([a.indices, b.indices]), np.concatenate([a.values, b.values]), a.shape)
    rs, dense = (a, b) if isinstance(a, RowSparse) else (b, a)
    acc = np.array(dense, dtype=np.result_type(dense, rs.values), copy=True)
    return _kernels.scatter_add_rows_into(acc, rs.indices, rs.values)

"""Where the kinds pass knows every operand dense, a call whose primal template serves sparse
operands only runs as the user wrote it (`abs(y)`, `x.max()`), and the gradient is unchanged;
with a sparse operand (or nothing known) it still goes through srcad's helper."""
import numpy as np
import scipy.sparse as sp

import srcad
from fdcheck import assert_grad_close


def f(x, y):
    return np.max(x) + abs(y).sum() + x.max() * x.min() + np.sum(x / y) + np.sum(np.outer(x, y) @ y)


def test_dense_operands_run_as_written():
    x, y = np.array([0.3, -1.2, 2.5]), np.array([1.5, -0.7, 0.9])
    text = srcad.emit(f, wrt=(0, 1), args=(x, y))
    assert "abs(y)" in text and "x.max()" in text and "x.min()" in text and "@ y" in text
    assert "rt.sparse." not in text.split("# adjoint sweep")[0]
    g = srcad.grad(f, wrt=(0, 1))(x, y)
    for k in (0, 1):
        assert_grad_close(f, (x, y), g[k], wrt=k)


def g(A):
    return abs(A).sum() + A.max()


def test_sparse_operand_keeps_the_helper():
    A = sp.csr_array(np.array([[1.5, 0.0, -2.0], [0.0, -0.5, 3.0]]))
    assert "rt.sparse.abs_" in srcad.emit(g, args=(A,))
    assert_grad_close(g, (A,), srcad.grad(g)(A))
    assert "rt.sparse.abs_" in srcad.emit(g)        # nothing known: the helper decides at run time

"""hessian and hvp run f inside their sweeps only: the scalar-output check is the checked seed of
the adjoint sweep (rt.seed), not a separate call of f (a call counter), and the numbers are the
analytic ones; a vector output is still the named error."""
import numpy as np
import pytest

import srcad
from srcad.errors import NonScalarOutputError

CALLS = [0]


def counted(x):
    CALLS[0] += 1
    return np.sum(x ** 3) + x[0] * x[1]


def counted_vector(x):
    CALLS[0] += 1
    return x ** 3


X = np.array([1.5, -0.5, 2.0])
H = np.diag(6 * X) + np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


def test_hvp_calls_f_once():
    hvp = srcad.hvp(counted)
    hvp(X, np.ones(3))        # compiles
    CALLS[0] = 0
    v = np.array([0.5, 1.0, -2.0])
    np.testing.assert_allclose(hvp(X, v), H @ v, rtol=1e-12)
    assert CALLS[0] == 1


def test_hessian_calls():
    hess = srcad.hessian(counted)
    hess(X)
    CALLS[0] = 0
    np.testing.assert_allclose(hess(X), H, rtol=1e-12)
    # one batched sweep over all directions, and the one ordinary sweep that checks it
    assert CALLS[0] == 2


@pytest.mark.parametrize("op", [srcad.hessian, lambda f: (lambda x: srcad.hvp(f)(x, np.ones(3)))])
def test_vector_output_still_refused(op):
    with pytest.raises(NonScalarOutputError, match="needs counted_vector to return a scalar"):
        op(counted_vector)(X)

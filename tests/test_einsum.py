"""np.einsum in reverse mode, forward mode and Hessians, against central finite differences."""
import numpy as np
import pytest

import srcad
import einsum_cases as ec
from fdcheck import assert_grad_close, numerical_grad
from test_jacobian_hessian import fd_hessian

rng = np.random.default_rng(0)
A, B, x = rng.normal(size=(3, 4)), rng.normal(size=(4, 5)), rng.normal(size=4)
CASES = [(ec.f1, (A, B)), (ec.f2, (A, x)), (ec.f3, (A, B)), (ec.f4, (A,))]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_einsum_grad_and_jvp(f, args):
    for k in range(len(args)):
        assert_grad_close(f, args, srcad.grad(f, wrt=k)(*args), wrt=k)
    v = [rng.normal(size=a.shape) for a in args]
    _, y_dot = srcad.jvp(f, args, v)
    want = sum(numerical_grad(f, args, k) @ v[k].ravel() for k in range(len(args)))
    np.testing.assert_allclose(y_dot, want, rtol=1e-6, atol=1e-8)


def test_einsum_hessian():
    H = srcad.hessian(ec.f5)(x, A)
    np.testing.assert_allclose(H, fd_hessian(ec.f5, (x, A)), rtol=1e-5, atol=1e-5)


def test_einsum_with_ellipsis_is_differentiated():
    from fdcheck import assert_grad_close
    assert_grad_close(ec.with_ellipsis, (A,), srcad.grad(ec.with_ellipsis)(A))
    assert_grad_close(ec.with_ellipsis, (A,), srcad.jacobian(ec.with_ellipsis, mode="forward")(A))

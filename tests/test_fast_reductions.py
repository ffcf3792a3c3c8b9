"""np.cumsum through srcad's kernel (rt.cumsum, rt.cumsum_vjp): numpy's bits on any number of
threads, and derivatives that agree with finite differences and an analytic Hessian; a whole large
array's max/min cotangent against the analytic one."""
import numpy as np
import pytest

import srcad
import srcad._kernels as K
from srcad import runtime as rt

from fdcheck import assert_grad_close


@pytest.fixture
def threads():
    yield
    srcad.set_num_threads(None)


def _cases():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 700))
    x[0, 0], x[1, 0], x[2, 5], x[3, 9] = -0.0, np.nan, np.inf, 1e30
    return [x, x.astype(np.float32), x[:, ::2], x.T, rng.normal(size=2000)]


@pytest.mark.parametrize("n", [1, 2])
def test_same_bits_as_numpy(threads, n):
    srcad.set_num_threads(n)
    for x in _cases():
        for axis in (None, -1, x.ndim - 1):
            want = np.cumsum(x, axis=axis)
            got = rt.cumsum(x, axis)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes(), (x.dtype, x.shape, axis)
            back = np.flip(np.cumsum(np.flip(x.ravel() if axis is None else x, -1), -1), -1)
            assert rt.cumsum_vjp(x, x, axis).tobytes() == back.reshape(x.shape if axis is None else back.shape).tobytes()


def test_kernel_rows_same_bits_on_one_and_two_threads(threads):
    x = np.random.default_rng(1).normal(size=(64, 2048))
    srcad.set_num_threads(1)
    one = K.running_sums(x, True)
    srcad.set_num_threads(2)
    assert K._threads(x.size) == 2
    assert K.running_sums(x, True).tobytes() == one.tobytes()


def test_other_axes_and_arguments_go_to_numpy():
    x = np.arange(3000.0).reshape(3, 1000)
    assert rt.cumsum(x, 0).tobytes() == np.cumsum(x, 0).tobytes()
    assert rt.cumsum(x, None, np.float32).dtype == np.float32
    assert rt.cumsum([1, 2, 3]).tolist() == [1, 3, 6]


def test_gradient_and_hessian_through_the_kernel():
    rng = np.random.default_rng(2)
    x = rng.normal(size=600)

    def f(x):
        return np.sum(np.sin(np.cumsum(x)) * x)
    assert_grad_close(f, (x,), srcad.grad(f)(x))

    def rows(a):
        return np.sum(np.cos(a.cumsum(axis=1)))
    a = rng.normal(size=(2, 600)) * 0.1
    assert_grad_close(rows, (a,), srcad.grad(rows)(a))

    def q(x):                      # 1/2 |L x|^2 with L the lower-triangular ones: H = L^T L
        c = np.cumsum(x)
        return 0.5 * np.sum(c * c)
    v = rng.normal(size=600)
    g, hv = srcad.jvp(srcad.grad(q), (x,), (v,))
    L = np.tril(np.ones((600, 600)))
    np.testing.assert_allclose(g, L.T @ (L @ x), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(hv, L.T @ (L @ v), rtol=1e-10, atol=1e-9)


def test_whole_array_extreme_cotangent():
    rng = np.random.default_rng(3)
    x = rng.normal(size=10_000)
    x[[7, 4000, 9999]] = x.max() + 1.0           # three tied maxima share the cotangent
    got = srcad.grad(lambda x: 3.0 * np.max(x))(x)
    want = np.zeros_like(x)
    want[[7, 4000, 9999]] = 1.0
    np.testing.assert_array_equal(got, want)
    got = srcad.grad(lambda x: -np.min(x) * 2.0)(x)
    want = np.zeros_like(x)
    want[np.argmin(x)] = -2.0
    np.testing.assert_array_equal(got, want)

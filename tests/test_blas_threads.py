"""srcad's matrix products (srcad/_kernels/blas.py): small for threads, they run on one OpenBLAS
thread, BLAS's count is restored after, the bits are those of numpy's product on any number of
threads, and the derivatives through them agree with finite differences."""
import numpy as np
import pytest

import srcad
import srcad._kernels as K
from srcad._kernels import blas
from srcad.runtime import products

from fdcheck import assert_grad_close


@pytest.fixture
def two_blas_threads():
    get, set_ = blas._controls()
    if get is None:
        pytest.skip("no pthreads OpenBLAS loaded: srcad leaves BLAS alone (nothing to check)")
    before = get()
    set_(2)
    yield get
    set_(before)


def test_one_thread_inside_and_restored_after(two_blas_threads):
    seen = blas.one_thread(lambda: two_blas_threads())
    assert seen == 1
    assert two_blas_threads() == 2


def test_restored_after_an_exception(two_blas_threads):
    def boom():
        raise ValueError("inside")
    with pytest.raises(ValueError):
        blas.one_thread(boom)
    assert two_blas_threads() == 2


def test_which_products_run_on_one_thread(monkeypatch):
    assert not blas.serial(100, 10)                    # BLAS runs one thread itself
    assert not blas.serial(200_000, 10_000, blas.GEMM_MIN_WORK)
    assert blas.serial(8 * 10_000 * 100, 800)          # a long contraction to a small result
    assert blas.serial(1_000_000, 100_000)             # little work
    assert not blas.serial(1000 * 1000 * 1000, 10**6)  # a big product keeps BLAS's threads
    monkeypatch.setattr(K, "BLAS_SERIAL_WORK", 0)
    assert not blas.serial(8 * 10_000 * 100, 800)      # 0: off


@pytest.mark.parametrize("shape_x, shape_y", [((3000, 8), (3000, 100)),    # x.T @ y: (8, 3000) @ (3000, 100)
                                              ((4, 300, 40), (4, 300, 40)),  # a stack of transposed products
                                              ((400, 150), (400,))])        # a matrix-vector product
def test_same_bits_as_numpy_on_two_threads(two_blas_threads, shape_x, shape_y):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=shape_x), rng.normal(size=shape_y)
    xt = np.swapaxes(x, -1, -2)
    assert blas.serial(xt.shape[-2] * xt.shape[-1] * (y.shape[-1] if y.ndim > 1 else 1), 1)
    assert products.matmul(xt, y).tobytes() == (xt @ y).tobytes()
    assert two_blas_threads() == 2


def test_gradients_through_one_thread_products():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(40, 30)), rng.normal(size=(30, 20))
    w, v = rng.normal(size=(120, 90)) * 0.1, rng.normal(size=90)

    def f(x, y):
        return np.sum(np.sin(x @ y))

    def h(x, v):
        return np.sum(x.T @ np.sin(x @ v))
    assert 120 * 90 >= blas.MIN_WORK                   # w @ v and w.T @ u: matrix-vector products
    for wrt in (0, 1):
        assert_grad_close(f, (x, y), srcad.grad(f, wrt=wrt)(x, y), wrt=wrt)
    assert_grad_close(h, (w, v), srcad.grad(h, wrt=1)(w, v), wrt=1)

    def stacked(a, b):
        return np.sum((a @ b) ** 2)
    a, b = rng.normal(size=(1, 40, 70)), rng.normal(size=(1, 70, 100))
    assert 40 * 70 * 100 >= blas.GEMM_MIN_WORK
    assert_grad_close(stacked, (a, b), srcad.grad(stacked, wrt=0)(a, b), wrt=0, atol=1e-4)

"""threadpoolctl reaches srcad's kernels: threadpool_limits sets the OpenMP limit of the library
the kernels load, and the kernels use at most that many threads while it holds; a number set with
srcad.set_num_threads wins. The results have the same bits either way."""
import numpy as np
import pytest
import scipy.sparse as sp

import srcad
import srcad._kernels as K

threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture
def default_threads():
    srcad.set_num_threads(None)
    yield
    srcad.set_num_threads(None)


def test_threadpoolctl_sees_the_kernels_openmp():
    info = threadpoolctl.threadpool_info()
    assert any(i["user_api"] == "openmp" for i in info), info


def test_threadpool_limits_reaches_the_kernels(default_threads):
    before = srcad.get_num_threads()
    A = sp.random_array((400, 300), density=0.2, format="csr", rng=np.random.default_rng(0))
    X = np.random.default_rng(1).normal(size=(300, 16))
    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert srcad.get_num_threads() == 1
        assert K._threads(10**9) == 1
        one = K.csr_matmul(A.indptr, A.indices, A.data, X, A.shape[0])
    assert srcad.get_num_threads() == before
    many = K.csr_matmul(A.indptr, A.indices, A.data, X, A.shape[0])
    assert one.tobytes() == many.tobytes()
    np.testing.assert_allclose(one, A @ X, rtol=1e-12)
    with threadpoolctl.threadpool_limits(limits=1):
        srcad.set_num_threads(2)                 # an explicit number wins
        assert srcad.get_num_threads() == 2
